//! Undoing the journal: every change, newest first, each file restored by one atomic rename.
//!
//! Every step is idempotent, so a revert stopped anywhere is finished by running it again:
//! entries already original are skipped, and only when every file is verified back to its
//! original is the journal renamed to `reverted.json` (the commit point), after which the saved
//! originals and the journal directory are removed.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::confined::{Kind, Repo};
use crate::error::{JournalError, Result, io_err};
use crate::inspect::{self, EntryStatus, State};
use crate::lock::RepoLock;
use crate::model::{self, Change, ChangeKind};
use crate::recover;

/// What `revert` did to one journaled change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UndoAction {
    /// A modified file got its original bytes back.
    Restored,
    /// A created file or directory was removed.
    Removed,
    /// A moved item was moved back.
    MovedBack,
    /// A created symlink was removed.
    Unlinked,
    /// Nothing to do: already original.
    AlreadyOriginal,
    /// A created directory that now holds other files was kept.
    KeptNonEmptyDir,
    /// The moved item is gone from where npuprof put it.
    MovedItemMissing,
}

impl UndoAction {
    /// How the action reads in human output.
    pub fn describe(self) -> &'static str {
        match self {
            UndoAction::Restored => "restored",
            UndoAction::Removed => "removed",
            UndoAction::MovedBack => "moved back",
            UndoAction::Unlinked => "unlinked",
            UndoAction::AlreadyOriginal => "already original",
            UndoAction::KeptNonEmptyDir => "kept non empty dir",
            UndoAction::MovedItemMissing => "moved item missing",
        }
    }
}

/// What `revert` did to one journaled change.
#[derive(Debug, Clone, Serialize)]
pub struct RevertAction {
    /// Repository-relative path.
    pub path: PathBuf,
    /// The journaled change kind.
    pub kind: ChangeKind,
    /// What was done.
    pub action: UndoAction,
    /// Whether `--force` overrode a change made after npuprof's.
    pub forced: bool,
}

/// The result of [`revert`].
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RevertOutcome {
    /// There is no journal.
    NothingToRevert,
    /// Files changed after npuprof's change; nothing was touched (use `--force`).
    Refused {
        /// The entries that changed since npuprof's change.
        conflicts: Vec<EntryStatus>,
    },
    /// Everything was undone and the journal removed.
    Reverted {
        /// What was done, newest change first.
        actions: Vec<RevertAction>,
    },
}

/// Undoes every journaled change of `repo` (the root, see [`crate::find_root`]); see
/// [`RevertOutcome`]. `force` restores files changed since npuprof's change too.
pub fn revert(repo: &Path, force: bool) -> Result<RevertOutcome> {
    let canonical = repo
        .canonicalize()
        .map_err(io_err("open the repository", repo))?;
    if std::fs::symlink_metadata(canonical.join(crate::paths::JOURNAL_DIR)).is_err() {
        return Ok(RevertOutcome::NothingToRevert);
    }
    let lock = RepoLock::acquire(&canonical)?;
    let fs = lock.repo();
    recover::recover(fs)?;
    let Some(loaded) = model::load(fs)? else {
        return Ok(RevertOutcome::NothingToRevert);
    };
    let journal = loaded.journal;
    let statuses = inspect::inspect(fs, &journal);
    let conflicts: Vec<EntryStatus> = statuses
        .iter()
        .filter(|s| s.is_conflict())
        .cloned()
        .collect();
    if !conflicts.is_empty() && !force {
        return Ok(RevertOutcome::Refused { conflicts });
    }
    for status in &conflicts {
        if status.kind == ChangeKind::Symlink && fs.read_link(&status.path).is_err() {
            return Err(JournalError::Refused(format!(
                "refusing even with --force: `{}` is no longer the symlink npuprof created but a real \
                 file or directory; move it away by hand, then run `npuprof revert` again",
                status.path.display()
            )));
        }
    }
    // Load (and check) every needed original before touching anything.
    let mut originals = HashMap::new();
    for (entry, status) in journal.entries.iter().zip(&statuses) {
        if let Change::Modified {
            original_sha256, ..
        } = &entry.change
            && status.state != State::Original
            && !originals.contains_key(original_sha256)
        {
            originals.insert(
                original_sha256.clone(),
                model::read_original(fs, original_sha256)?,
            );
        }
    }
    // npuprof's own symlinks: one may stand where a moved item goes back (a journal from before
    // relocate retargeted its symlink moved the symlink aside and journaled the new one in the
    // old one's entry).
    let own_links: Vec<(&Path, &Path)> = journal
        .entries
        .iter()
        .filter_map(|e| match &e.change {
            Change::Symlink { target, .. } => Some((e.path.as_path(), target.as_path())),
            _ => None,
        })
        .collect();
    let mut actions = Vec::new();
    for (entry, status) in journal.entries.iter().zip(&statuses).rev() {
        let undo = Undo {
            originals: &originals,
            own_links: &own_links,
        };
        let action =
            undo_one(fs, &entry.path, &entry.change, status.state, &undo).map_err(|source| {
                JournalError::RevertStopped {
                    path: entry.path.clone(),
                    source: Box::new(source),
                }
            })?;
        actions.push(RevertAction {
            path: entry.path.clone(),
            kind: entry.change.kind(),
            action,
            forced: status.is_conflict(),
        });
    }
    verify_restored(fs, &journal)?;
    let (journal_file, reverted) = (model::journal_file(), recover::reverted_file());
    fs.rename(&journal_file, &reverted)
        .map_err(io_err("retire", fs.display(&journal_file)))?;
    recover::finish_revert_cleanup(fs)?;
    Ok(RevertOutcome::Reverted { actions })
}

/// The command that undoes npuprof's changes to `repo`, word by word, for messages (show it with
/// `npuprof_repository::shell::join`); `--repo=<path>` for a path starting with `-`, which would
/// otherwise read as an option.
pub fn revert_argv(repo: &Path) -> Vec<String> {
    let repo = repo.display().to_string();
    let mut argv = vec!["npuprof".to_owned(), "revert".to_owned()];
    if repo.starts_with('-') {
        argv.push(format!("--repo={repo}"));
    } else {
        argv.extend(["--repo".to_owned(), repo]);
    }
    argv
}

/// Re-reads every modified file and checks it is byte-identical to its original.
fn verify_restored(fs: &Repo, journal: &model::Journal) -> Result<()> {
    for entry in &journal.entries {
        if let Change::Modified {
            original_sha256, ..
        } = &entry.change
        {
            let bytes = fs.read_file(&entry.path).ok().flatten();
            if bytes.is_none_or(|b| model::sha256_hex(&b) != *original_sha256) {
                return Err(JournalError::RevertStopped {
                    path: entry.path.clone(),
                    source: Box::new(JournalError::Refused(
                        "the file does not read back as its original".to_owned(),
                    )),
                });
            }
        }
    }
    Ok(())
}

/// Treats "already gone" as done, so that a re-run after a kill succeeds.
fn gone_ok(result: io::Result<()>) -> io::Result<bool> {
    match result {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err),
    }
}

/// What undoing one entry needs besides the entry.
struct Undo<'a> {
    /// The saved originals needed, by sha256.
    originals: &'a HashMap<String, Vec<u8>>,
    /// Every journaled symlink: (path, target).
    own_links: &'a [(&'a Path, &'a Path)],
}

fn undo_one(
    fs: &Repo,
    rel: &Path,
    change: &Change,
    state: State,
    undo: &Undo<'_>,
) -> Result<UndoAction> {
    if state == State::Original {
        return Ok(UndoAction::AlreadyOriginal);
    }
    let originals = undo.originals;
    Ok(match change {
        Change::Modified {
            original_sha256,
            mode,
            ..
        } => {
            let bytes = originals
                .get(original_sha256)
                .ok_or_else(|| JournalError::Refused("internal: original not loaded".to_owned()))?;
            let owner = fs
                .meta(rel)
                .ok()
                .flatten()
                .filter(|m| m.kind == Kind::File)
                .map(|m| m.owner);
            recover::write_file(fs, rel, bytes, *mode, owner, Some(original_sha256))?;
            UndoAction::Restored
        }
        Change::Created { .. } => {
            gone_ok(fs.unlink(rel)).map_err(io_err("remove", fs.display(rel)))?;
            UndoAction::Removed
        }
        Change::CreatedDir => match fs.rmdir(rel) {
            Ok(()) => UndoAction::Removed,
            Err(err) if err.kind() == io::ErrorKind::NotFound => UndoAction::AlreadyOriginal,
            Err(_) if fs.list(rel).is_ok_and(|names| !names.is_empty()) => {
                UndoAction::KeptNonEmptyDir
            }
            Err(err) => return Err(io_err("remove", fs.display(rel))(err)),
        },
        Change::Renamed { to } => undo_rename(fs, rel, to, undo.own_links)?,
        Change::Symlink { .. } => {
            gone_ok(fs.unlink(rel)).map_err(io_err("remove the symlink", fs.display(rel)))?;
            UndoAction::Unlinked
        }
    })
}

fn undo_rename(
    fs: &Repo,
    rel: &Path,
    to: &Path,
    own_links: &[(&Path, &Path)],
) -> Result<UndoAction> {
    let exists = |p: &Path| fs.meta(p).ok().flatten().is_some();
    if !exists(to) {
        return Ok(if exists(rel) {
            UndoAction::AlreadyOriginal
        } else {
            UndoAction::MovedItemMissing
        });
    }
    let own_link = fs
        .read_link(rel)
        .is_ok_and(|current| own_links.contains(&(rel, current.as_path())));
    if own_link {
        // npuprof's symlink, made after this move: it goes (its own entry then finds it gone).
        fs.unlink(rel)
            .map_err(io_err("remove the symlink", fs.display(rel)))?;
    }
    if exists(rel) {
        return Err(JournalError::Refused(format!(
            "cannot move `{}` back: `{}` exists",
            fs.display(to).display(),
            fs.display(rel).display()
        )));
    }
    fs.rename(to, rel)
        .map_err(io_err("move back", fs.display(to)))?;
    Ok(UndoAction::MovedBack)
}
