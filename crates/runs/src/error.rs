//! Errors that stop verify from running at all (exit code 2 in the CLI).

use std::path::PathBuf;

/// Why verify could not run.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The path does not exist.
    #[error("{0}: no such file or directory")]
    PathNotFound(PathBuf),
    /// The path exists but cannot be listed.
    #[error("{0}: cannot read the directory: {1}")]
    Unreadable(PathBuf, String),
    /// The path is a file.
    #[error("{0}: not a directory (give a result, phase or *_ascend_pt run directory)")]
    NotADirectory(PathBuf),
    /// Nothing that looks like a torch_npu run directory below the path.
    #[error(
        "{0}: no torch_npu run directory found (no *_ascend_pt directory, ASCEND_PROFILER_OUTPUT/ or profiler_info*.json below it)"
    )]
    NoRunDirectory(PathBuf),
    /// A captured log (`--log`) is not a regular file.
    #[error("--log {0}: no such regular file (give the file holding the job's stdout)")]
    LogNotAFile(PathBuf),
    /// A report given to `--merge` cannot be used.
    #[error("{0}: {1}")]
    BadReport(PathBuf, String),
}

impl npuprof_severity::Classify for VerifyError {
    fn classify(&self) -> Option<npuprof_severity::Classified> {
        use npuprof_severity::{Classified, ErrorCode};
        Some(match self {
            VerifyError::PathNotFound(_) | VerifyError::LogNotAFile(_) => {
                Classified::new(ErrorCode::NotFound)
            }
            VerifyError::NotADirectory(_) | VerifyError::NoRunDirectory(_) => Classified::hinted(
                ErrorCode::InvalidInput,
                "give a result directory (models/<model>/res/<date>/<case>/), a phase directory or a *_ascend_pt run directory",
            ),
            VerifyError::Unreadable(..) => Classified::new(ErrorCode::Io),
            VerifyError::BadReport(..) => Classified::hinted(
                ErrorCode::InvalidInput,
                "give the output of `npuprof verify --json` from each node",
            ),
        })
    }
}
