//! The documented exit codes.

use std::process::ExitCode;

/// How a command ended; converts to the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: success, nothing to report.
    Ok,
    /// 1: the command ran and found problems (or, for a dry run, would change files).
    Findings,
    /// 2: the command could not do its job (bad arguments, unreadable input, refused edit).
    Error,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        match exit {
            Exit::Ok => ExitCode::SUCCESS,
            Exit::Findings => ExitCode::from(1),
            Exit::Error => ExitCode::from(2),
        }
    }
}
