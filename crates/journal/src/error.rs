//! The journal's errors: every refusal says what was found and what to do.

use std::io;
use std::path::PathBuf;

/// Everything that can stop a journaled change, a revert or an inspection.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// A filesystem operation failed.
    #[error("cannot {action} `{}`: {source}", path.display())]
    Io {
        /// What was being done (`read`, `replace`, ...).
        action: &'static str,
        /// The path acted on.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The journal file is unreadable, corrupt or breaks a rule.
    #[error("refusing to use the journal `{}`; inspect or remove it by hand: {reason}", path.display())]
    BadJournal {
        /// The journal file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A path would leave the repository or touch npuprof's own directory.
    #[error("{0}")]
    Confinement(String),
    /// Another npuprof process holds the repository's lock.
    #[error(
        "another npuprof is working here (pid {pid}); wait for it to finish, then run this again"
    )]
    Locked {
        /// The holder's process id (`unknown` when it could not be read).
        pid: String,
    },
    /// Saved originals exist but the journal that names them is gone.
    #[error(
        "`{}` holds {count} saved original(s) but no journal.json: the journal was deleted while files \
         may still be patched. npuprof will not record patched bytes as originals. Put journal.json \
         back, or compare your files with the saved originals by hand and then remove `{}`",
        dir.display(),
        dir.parent().map(|p| p.display().to_string()).unwrap_or_default()
    )]
    OrphanedOriginals {
        /// The `originals/` directory.
        dir: PathBuf,
        /// How many saved originals it holds.
        count: usize,
    },
    /// A file npuprof wrote was changed by someone else since.
    #[error(
        "`{}` was edited since npuprof last wrote it; refusing to overwrite that edit. Keep a copy of \
         your version, run `npuprof revert --force` (restores the original), then run this again",
        path.display()
    )]
    EditedSince {
        /// Repository-relative path.
        path: PathBuf,
    },
    /// The staged change does not fit what is on disk.
    #[error("{0}")]
    Refused(String),
    /// The journal changed between `begin` and `commit` (only possible without the lock).
    #[error(
        "the journal changed while this command ran (another npuprof?); nothing was changed, run it again"
    )]
    Raced,
    /// A preview transaction cannot be committed.
    #[error("internal: a preview transaction cannot be committed")]
    Preview,
    /// The commit failed and every change was undone.
    #[error("{source}; nothing was changed (all changes rolled back)")]
    RolledBack {
        /// What failed.
        source: Box<JournalError>,
    },
    /// The commit failed and undoing it failed too: the journal and the saved originals are
    /// kept (they name every file's original), so `npuprof revert` can finish.
    #[error(
        "{source}; ROLLBACK FAILED too ({rollback}); the journal and the saved originals were kept: \
         once the cause is fixed (free disk space, permissions), run `npuprof revert` to restore \
         every file (`npuprof status` lists them)"
    )]
    RollbackFailed {
        /// What failed.
        source: Box<JournalError>,
        /// What went wrong while undoing.
        rollback: String,
    },
    /// Revert stopped at one entry.
    #[error(
        "revert stopped at `{}`: {source}; changes listed before it were undone; fix the cause and run \
         `npuprof revert` again (it resumes)",
        path.display()
    )]
    RevertStopped {
        /// The entry's path.
        path: PathBuf,
        /// Why.
        source: Box<JournalError>,
    },
}

/// The journal's result type.
pub type Result<T, E = JournalError> = std::result::Result<T, E>;

/// Builds the `map_err` closure for an IO error on `path`.
pub(crate) fn io_err(
    action: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(io::Error) -> JournalError {
    let path = path.into();
    move |source| JournalError::Io {
        action,
        path,
        source,
    }
}

impl npuprof_severity::Classify for JournalError {
    /// `None` for the errors that wrap a cause: the cause decides.
    fn classify(&self) -> Option<npuprof_severity::Classified> {
        use npuprof_severity::{Classified, ErrorCode};
        let refused = Classified::new(ErrorCode::Refused);
        Some(match self {
            JournalError::Io { .. }
            | JournalError::RolledBack { .. }
            | JournalError::RevertStopped { .. } => return None,
            JournalError::BadJournal { .. } => Classified::hinted(
                ErrorCode::InvalidInput,
                "the journal under .npuprof/ is damaged; the message says what to inspect",
            ),
            JournalError::Locked { .. } => Classified::hinted(
                ErrorCode::Refused,
                "another npuprof is changing this repository; wait for it to finish, then run again",
            ),
            JournalError::EditedSince { .. } => Classified::hinted(
                ErrorCode::Refused,
                "keep a copy of your edit; `npuprof revert --force` restores the original",
            ),
            JournalError::Confinement(_)
            | JournalError::OrphanedOriginals { .. }
            | JournalError::Refused(_) => refused,
            JournalError::Raced => {
                Classified::hinted(ErrorCode::Failed, "nothing was changed; run it again")
            }
            JournalError::RollbackFailed { .. } => Classified::hinted(
                ErrorCode::Io,
                "run `npuprof revert` to restore the originals",
            ),
            JournalError::Preview => Classified::new(ErrorCode::Internal),
        })
    }
}

#[cfg(test)]
mod tests {
    use npuprof_severity::{Classify as _, ErrorCode};

    use super::JournalError;

    #[test]
    fn a_held_lock_is_a_refusal_and_a_wrapped_cause_decides_itself() {
        let locked = JournalError::Locked {
            pid: "7".to_owned(),
        }
        .classify()
        .expect("coded");
        assert_eq!(locked.code, ErrorCode::Refused);
        assert!(locked.hint.is_some_and(|h| h.contains("another npuprof")));
        let io = JournalError::Io {
            action: "read",
            path: "a.py".into(),
            source: std::io::ErrorKind::NotFound.into(),
        };
        assert_eq!(io.classify(), None);
        assert_eq!(
            JournalError::Preview.classify().map(|c| c.code),
            Some(ErrorCode::Internal)
        );
    }
}
