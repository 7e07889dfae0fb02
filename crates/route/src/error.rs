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
