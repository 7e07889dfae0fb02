//! Relocate's errors.

use std::path::PathBuf;

/// Why `relocate` could not plan or make its change.
#[derive(Debug, thiserror::Error)]
pub enum RelocateError {
    /// The model name is not a plain directory name.
    #[error(
        "`{0}` is not a model directory name (expected a directory name, like `deepseek-mini`)"
    )]
    BadModel(String),
    /// `models/<model>` does not exist.
    #[error("`{}` is not a directory: no model `{model}` in `{}`", dir.display(), repo.display())]
    NoModel {
        /// The model.
        model: String,
        /// The missing directory.
        dir: PathBuf,
        /// The repository.
        repo: PathBuf,
    },
    /// The target cannot hold the output.
    #[error("refusing the target `{}`: {reason}", target.display())]
    BadTarget {
        /// The target.
        target: PathBuf,
        /// Why.
        reason: String,
    },
    /// `res` is something relocate cannot move.
    #[error("`{}` exists but is neither a directory nor a symlink", .0.display())]
    BadLayout(PathBuf),
    /// A filesystem operation failed.
    #[error("cannot {action} `{}`: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A repository definition file cannot be used.
    #[error(transparent)]
    Definitions(#[from] npuprof_repository::DefinitionError),
    /// The journaled change failed.
    #[error(transparent)]
    Journal(#[from] npuprof_journal::JournalError),
}

/// Builds the `map_err` closure for an IO error on `path`.
pub(crate) fn io_err(
    action: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(std::io::Error) -> RelocateError {
    let path = path.into();
    move |source| RelocateError::Io {
        action,
        path,
        source,
    }
}

impl npuprof_severity::Classify for RelocateError {
    /// The journal's errors are the journal's (the variant is transparent, so the chain of
    /// causes skips the journal error inside it); for the others their cause decides.
    fn classify(&self) -> Option<npuprof_severity::Classified> {
        match self {
            RelocateError::Journal(err) => err.classify(),
            _ => None,
        }
    }
}
