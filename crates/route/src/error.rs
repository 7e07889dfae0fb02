//! Why a scan could not run at all (problems with single files are warnings instead).

use std::path::PathBuf;

/// A scan that could not start.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    /// The path does not exist.
    #[error("{}: no such file or directory", .0.display())]
    NotFound(PathBuf),
    /// The path is not a directory.
    #[error("{}: not a directory (route scans a repository directory)", .0.display())]
    NotADirectory(PathBuf),
    /// The path exists but cannot be inspected.
    #[error("{}: cannot be read: {source}", .path.display())]
    Unreadable {
        /// The path given.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A repository definition file cannot be used.
    #[error(transparent)]
    Definitions(#[from] npuprof_repository::DefinitionError),
}

/// The hint for a repository path that does not exist or is not a directory.
const REPO_HINT: &str =
    "give the repository's root directory (e.g. `npuprof route .` from inside it)";

impl npuprof_severity::Classify for RouteError {
    fn classify(&self) -> Option<npuprof_severity::Classified> {
        use npuprof_severity::{Classified, ErrorCode};
        Some(match self {
            RouteError::NotFound(_) => Classified::hinted(ErrorCode::NotFound, REPO_HINT),
            RouteError::NotADirectory(_) => Classified::hinted(ErrorCode::InvalidInput, REPO_HINT),
            RouteError::Unreadable { .. } => Classified::new(ErrorCode::Io),
            RouteError::Definitions(_) => Classified::new(ErrorCode::InvalidInput),
        })
    }
}
