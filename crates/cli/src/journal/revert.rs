//! Undoing the journal: every change, newest first, each file restored by one atomic rename.
//! Re-running after an interruption resumes: entries already original are skipped.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Serialize;

use super::atomic;
use super::inspect::{self, EntryStatus, State};
use super::model::{self, Change};

/// What `revert` did to one journaled change.
#[derive(Debug, Clone, Serialize)]
pub struct RevertAction {
    /// Repository-relative path.
    pub path: PathBuf,
    /// The journaled change kind.
    pub kind: &'static str,
    /// `restored`, `removed`, `moved_back`, `unlinked`, `already_original`,
    /// `kept_non_empty_dir` or `moved_item_missing`.
    pub action: &'static str,
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

/// Undoes every journaled change of `repo`; see [`RevertOutcome`].
pub fn revert(repo: &Path, force: bool) -> anyhow::Result<RevertOutcome> {
    let repo = repo
        .canonicalize()
        .with_context(|| format!("cannot open the repository `{}`", repo.display()))?;
    let Some(loaded) = model::load(&repo)? else {
        return Ok(RevertOutcome::NothingToRevert);
    };
    let journal = loaded.journal;
    let statuses = inspect::inspect(&repo, &journal);
    let conflicts: Vec<EntryStatus> = statuses
        .iter()
        .filter(|s| s.is_conflict())
        .cloned()
        .collect();
    if !conflicts.is_empty() && !force {
        return Ok(RevertOutcome::Refused { conflicts });
    }
    for status in &conflicts {
        if status.kind == "symlink" && fs::read_link(repo.join(&status.path)).is_err() {
            bail!(
                "refusing even with --force: `{}` is no longer the symlink npuprof created but a real \
                 file or directory; move it away by hand, then run `npuprof revert` again",
                status.path.display()
            );
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
                model::read_original(&repo, original_sha256)?,
            );
        }
    }
    let mut actions = Vec::new();
    for (entry, status) in journal.entries.iter().zip(&statuses).rev() {
        let abs = repo.join(&entry.path);
        let forced = status.is_conflict();
        let action = undo_one(&repo, &abs, &entry.change, status.state, &originals).with_context(|| {
            format!(
                "revert stopped at `{}`; changes listed before it were undone; fix the cause and \
                 run `npuprof revert` again (it resumes)",
                entry.path.display()
            )
        })?;
        actions.push(RevertAction {
            path: entry.path.clone(),
            kind: entry.change.kind(),
            action,
            forced,
        });
    }
    let dir = model::journal_dir(&repo);
    fs::remove_dir_all(&dir).with_context(|| {
        format!(
            "everything was restored, but `{}` could not be removed",
            dir.display()
        )
    })?;
    Ok(RevertOutcome::Reverted { actions })
}

fn undo_one(
    repo: &Path,
    abs: &Path,
    change: &Change,
    state: State,
    originals: &HashMap<String, Vec<u8>>,
) -> anyhow::Result<&'static str> {
    if state == State::Original {
        return Ok("already_original");
    }
    Ok(match change {
        Change::Modified {
            original_sha256,
            mode,
            ..
        } => {
            let bytes = originals
                .get(original_sha256)
                .context("internal: original not loaded")?;
            let owner = fs::symlink_metadata(abs)
                .ok()
                .filter(fs::Metadata::is_file)
                .map(|m| (m.uid(), m.gid()));
            atomic::write(abs, bytes, *mode, owner)
                .with_context(|| format!("cannot restore `{}`", abs.display()))?;
            "restored"
        }
        Change::Created { .. } => {
            fs::remove_file(abs).with_context(|| format!("cannot remove `{}`", abs.display()))?;
            atomic::sync_parent(abs);
            "removed"
        }
        Change::CreatedDir => match fs::remove_dir(abs) {
            Ok(()) => "removed",
            Err(_) if fs::read_dir(abs).is_ok_and(|mut d| d.next().is_some()) => {
                "kept_non_empty_dir"
            }
            Err(err) => {
                return Err(err).with_context(|| format!("cannot remove `{}`", abs.display()));
            }
        },
        Change::Renamed { to } => {
            let moved = repo.join(to);
            if fs::symlink_metadata(&moved).is_err() {
                return Ok(if fs::symlink_metadata(abs).is_ok() {
                    "already_original"
                } else {
                    "moved_item_missing"
                });
            }
            if fs::symlink_metadata(abs).is_ok() {
                bail!(
                    "cannot move `{}` back: `{}` exists",
                    moved.display(),
                    abs.display()
                );
            }
            fs::rename(&moved, abs).with_context(|| {
                format!(
                    "cannot move `{}` back to `{}`",
                    moved.display(),
                    abs.display()
                )
            })?;
            atomic::sync_parent(abs);
            "moved_back"
        }
        Change::Symlink { .. } => {
            fs::remove_file(abs)
                .with_context(|| format!("cannot remove the symlink `{}`", abs.display()))?;
            atomic::sync_parent(abs);
            "unlinked"
        }
    })
}
