//! npuprof-journal: the one way npuprof changes a repository — a locked, journaled,
//! all-or-nothing transaction — and its exact, resumable revert.
//!
//! Layout on disk, at the repository root:
//! ```text
//! .npuprof/.gitignore          "*": the directory ignores itself for git
//! .npuprof/lock                flock'ed by the npuprof working here; holds its pid
//! .npuprof/journal.json        every change, in order (see `model`)
//! .npuprof/originals/<sha256>  the true original bytes of every modified file
//! .npuprof/writing.json        only during an in-place write (a hard-linked file)
//! .npuprof/reverted.json       only between a finished revert and its cleanup
//! ```
//! Every path in the journal is relative, has no `..`, and resolves inside the repository; a
//! journal that breaks any rule (or is not valid JSON, or has an unknown version) is refused.
//! Writes go through directory handles without following symlinks (`confined`), so a path
//! swapped for a symlink mid-command cannot redirect a write out of the repository.
//!
//! Guarantees, each backed by tests: one writer per repository ([`RepoLock`]); a kill at any
//! write step is finished by re-running the same command ([`failpoint`] proves it); a file edited
//! since npuprof wrote it is never silently overwritten; saved originals without a journal are
//! refused, never replaced by patched bytes. Unix only: directory handles (`openat`) and
//! `flock` are what make those guarantees.

#[cfg(not(unix))]
compile_error!("npuprof-journal needs Unix (openat, flock); on Windows, use WSL");

mod confined;
mod error;
pub mod failpoint;
mod inspect;
mod keepsake;
mod lock;
mod model;
mod paths;
pub mod probe;
pub mod recover;
mod restore_check;
mod revert;
mod time;
mod transaction;

use std::path::{Path, PathBuf};

pub use error::{JournalError, Result};
pub use inspect::{EntryStatus, State};
pub use keepsake::{Keepsake, create_private_file, new_private_dir, replace_file_unlinked};
pub use lock::RepoLock;
pub use model::ChangeKind;
pub use paths::JOURNAL_DIR;
pub use restore_check::RestoreCheck;
pub use revert::{RevertAction, RevertOutcome, UndoAction, revert, revert_argv};
pub use time::now_compact;
pub use transaction::{CommitReport, Transaction};

use confined::Repo;
use error::io_err;

/// The journal of `repo`, with the on-disk state of every entry; `None` when there is none.
/// Read-only: takes no lock and works whatever state a killed npuprof left.
pub fn status(repo: &Path) -> Result<Option<Vec<EntryStatus>>> {
    let canonical = repo
        .canonicalize()
        .map_err(io_err("open the repository", repo))?;
    let fs = Repo::open(&canonical).map_err(io_err("open the repository", &canonical))?;
    recover::check_orphans(&fs)?;
    Ok(model::load(&fs)?.map(|loaded| inspect::inspect(&fs, &loaded.journal)))
}

/// The repository root for `start`: the nearest ancestor (itself included) holding npuprof's
/// journal directory, like git finds `.git`; `start` itself (canonical) when none does.
pub fn find_root(start: &Path) -> Result<PathBuf> {
    let canonical = start
        .canonicalize()
        .map_err(io_err("open the repository", start))?;
    Ok(canonical
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(JOURNAL_DIR)).is_ok_and(|m| m.is_dir()))
        .unwrap_or(&canonical)
        .to_path_buf())
}
