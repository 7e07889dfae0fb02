//! Staging changes and committing them all-or-nothing.
//!
//! Crash ordering of [`Transaction::commit`]: (1) true originals are saved under
//! `.npuprof/originals/`, (2) the journal describing the finished state is written atomically,
//! (3) files are changed, each by one atomic rename. A crash between any two steps leaves every
//! file either original or fully patched, and the journal already names it, so `npuprof revert`
//! (which accepts "already original" as done) can always recover.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use tempfile::NamedTempFile;

use super::model::{self, Change, Entry, Journal};
use super::paths;
use super::{atomic, time};

/// Permission bits for files npuprof creates.
const CREATED_MODE: u32 = 0o644;

/// A set of staged changes to one repository, applied all-or-nothing by [`Transaction::commit`].
#[derive(Debug)]
pub struct Transaction {
    repo: PathBuf,
    command: String,
    journal: Journal,
    journal_raw: Option<Vec<u8>>,
    staged: Vec<Staged>,
    /// Test-only fault injection: runs after every temp file is prepared, before any rename.
    #[cfg(test)]
    pub(crate) before_apply: Option<fn(&Path)>,
}

/// What a committed transaction changed.
#[derive(Debug, Default, serde::Serialize)]
pub struct CommitReport {
    /// Repository-relative paths that were written, created or moved.
    pub changed: Vec<PathBuf>,
}

#[derive(Debug)]
enum Staged {
    Write { rel: PathBuf, bytes: Vec<u8> },
    Create { rel: PathBuf, bytes: Vec<u8> },
    Rename { from: PathBuf, to: PathBuf },
    Symlink { rel: PathBuf, target: PathBuf },
}

/// One change, checked against the filesystem and ready to apply.
#[derive(Debug)]
enum Action {
    Write {
        rel: PathBuf,
        bytes: Vec<u8>,
        old: Option<Vec<u8>>,
        mode: u32,
        owner: Option<(u32, u32)>,
    },
    CreateDir {
        rel: PathBuf,
    },
    Rename {
        from: PathBuf,
        to: PathBuf,
    },
    Symlink {
        rel: PathBuf,
        target: PathBuf,
    },
}

/// A done step, with what undoes it.
#[derive(Debug)]
enum Undo {
    Restore {
        rel: PathBuf,
        old: Vec<u8>,
        mode: u32,
        owner: Option<(u32, u32)>,
    },
    Remove {
        rel: PathBuf,
    },
    RemoveDir {
        rel: PathBuf,
    },
    RenameBack {
        from: PathBuf,
        to: PathBuf,
    },
}

impl Transaction {
    /// Starts a transaction on `repo` for `command` (e.g. "patch"), loading and validating an existing journal.
    pub fn begin(repo: &Path, command: &str) -> anyhow::Result<Self> {
        let repo = repo
            .canonicalize()
            .with_context(|| format!("cannot open the repository `{}`", repo.display()))?;
        if !repo.is_dir() {
            bail!("the repository `{}` is not a directory", repo.display());
        }
        let loaded = model::load(&repo)?;
        let (journal, journal_raw) = match loaded {
            Some(loaded) => (loaded.journal, Some(loaded.raw)),
            None => (
                Journal {
                    version: model::VERSION,
                    entries: Vec::new(),
                },
                None,
            ),
        };
        Ok(Self {
            repo,
            command: command.to_owned(),
            journal,
            journal_raw,
            staged: Vec::new(),
            #[cfg(test)]
            before_apply: None,
        })
    }

    /// The current bytes of a repository file (follows the repo-confinement rules).
    pub fn read(&self, rel_path: &Path) -> anyhow::Result<Vec<u8>> {
        let resolved = paths::resolve_existing(&self.repo, rel_path)?;
        fs::read(&resolved.abs).with_context(|| format!("cannot read `{}`", resolved.abs.display()))
    }

    /// Stages new content for an existing file; its true original is kept in the journal.
    pub fn write_file(&mut self, rel_path: &Path, new_bytes: Vec<u8>) -> anyhow::Result<()> {
        let resolved = paths::resolve_existing(&self.repo, rel_path)?;
        if !resolved.abs.is_file() {
            bail!("`{}` is not a regular file", rel_path.display());
        }
        self.stage_bytes(resolved.rel, new_bytes, false);
        Ok(())
    }

    /// Stages a new file; refuses to overwrite a file npuprof did not create.
    pub fn create_file(&mut self, rel_path: &Path, bytes: Vec<u8>) -> anyhow::Result<()> {
        let resolved = paths::resolve_entry(&self.repo, rel_path)?;
        if fs::symlink_metadata(&resolved.abs).is_ok() && !self.created_by_npuprof(&resolved.rel) {
            bail!(
                "refusing to create `{}`: it already exists and npuprof did not create it",
                rel_path.display()
            );
        }
        self.stage_bytes(resolved.rel, bytes, true);
        Ok(())
    }

    /// Stages moving `from` aside to `to` (which must not exist); revert moves it back.
    pub fn rename(&mut self, from: &Path, to: &Path) -> anyhow::Result<()> {
        let from = paths::resolve_entry(&self.repo, from)?;
        let to = paths::resolve_entry(&self.repo, to)?;
        if !to.missing_dirs.is_empty() {
            bail!(
                "cannot move `{}` to `{}`: its directory does not exist",
                from.rel.display(),
                to.rel.display()
            );
        }
        self.staged.push(Staged::Rename {
            from: from.rel,
            to: to.rel,
        });
        Ok(())
    }

    /// Stages creating a symlink at `rel_path` pointing at `target`; revert removes it.
    pub fn symlink(&mut self, rel_path: &Path, target: &Path) -> anyhow::Result<()> {
        let link = paths::resolve_entry(&self.repo, rel_path)?;
        if !link.missing_dirs.is_empty() {
            bail!(
                "cannot create the symlink `{}`: its directory does not exist",
                rel_path.display()
            );
        }
        self.staged.push(Staged::Symlink {
            rel: link.rel,
            target: target.to_path_buf(),
        });
        Ok(())
    }

    fn created_by_npuprof(&self, rel: &Path) -> bool {
        self.journal
            .entries
            .iter()
            .any(|e| e.path == rel && matches!(e.change, Change::Created { .. }))
    }

    fn stage_bytes(&mut self, rel: PathBuf, bytes: Vec<u8>, create: bool) {
        for staged in &mut self.staged {
            if let Staged::Write { rel: r, bytes: b } | Staged::Create { rel: r, bytes: b } = staged
                && *r == rel
            {
                *b = bytes;
                return;
            }
        }
        self.staged.push(if create {
            Staged::Create { rel, bytes }
        } else {
            Staged::Write { rel, bytes }
        });
    }

    /// Applies every staged change atomically and records them in the journal.
    pub fn commit(self) -> anyhow::Result<CommitReport> {
        let current = model::load(&self.repo)?;
        if current.as_ref().map(|l| &l.raw) != self.journal_raw.as_ref() {
            bail!(
                "the journal changed while this command ran (another npuprof?); nothing was changed, run it again"
            );
        }
        let mut journal = self.journal.clone();
        let (actions, originals) = self.plan(&mut journal)?;
        if actions.is_empty() {
            return Ok(CommitReport::default());
        }
        let created_dir = model::ensure_dir(&self.repo)?;
        for bytes in &originals {
            model::store_original(&self.repo, bytes)?;
        }
        let journal_path = model::journal_file(&self.repo);
        atomic::write(&journal_path, &model::to_bytes(&journal)?, 0o644, None)
            .with_context(|| format!("cannot write the journal `{}`", journal_path.display()))?;

        let mut undo = Vec::new();
        match self.apply(&actions, &mut undo) {
            Ok(changed) => Ok(CommitReport { changed }),
            Err(err) => {
                let rollback = self.rollback(undo, created_dir);
                match rollback {
                    Ok(()) => Err(err.context("nothing was changed (all changes rolled back)")),
                    Err(rollback_err) => Err(err.context(format!(
                        "ROLLBACK FAILED ({rollback_err:#}); run `npuprof revert` to restore the originals"
                    ))),
                }
            }
        }
    }

    /// Checks the staged changes against the filesystem, in order, and updates `journal`.
    /// Returns the actions and the original bytes to save.
    fn plan(&self, journal: &mut Journal) -> anyhow::Result<(Vec<Action>, Vec<Vec<u8>>)> {
        let now = time::now_rfc3339();
        let mut actions = Vec::new();
        let mut originals = Vec::new();
        // Existence of paths as changed by earlier staged steps.
        let mut overlay: HashMap<PathBuf, bool> = HashMap::new();
        let exists = |overlay: &HashMap<PathBuf, bool>, rel: &Path| {
            overlay
                .get(rel)
                .copied()
                .unwrap_or_else(|| fs::symlink_metadata(self.repo.join(rel)).is_ok())
        };
        let entry = |path: &Path, change: Change| Entry {
            path: path.to_path_buf(),
            command: self.command.clone(),
            time: now.clone(),
            change,
        };
        for staged in &self.staged {
            match staged {
                Staged::Write { rel, bytes } | Staged::Create { rel, bytes } => {
                    let create = matches!(staged, Staged::Create { .. });
                    let abs = self.repo.join(rel);
                    let meta = fs::symlink_metadata(&abs);
                    let new_sha = model::sha256_hex(bytes);
                    let journaled = journal.entries.iter().position(|e| {
                        e.path == *rel
                            && matches!(e.change, Change::Modified { .. } | Change::Created { .. })
                    });
                    match meta {
                        Ok(meta) if meta.is_file() && (!create || journaled.is_some()) => {
                            let old = fs::read(&abs)
                                .with_context(|| format!("cannot read `{}`", abs.display()))?;
                            if old == *bytes {
                                continue;
                            }
                            let mode = atomic::mode_of(&meta);
                            if let Some(index) = journaled {
                                let existing = &mut journal.entries[index];
                                existing.command.clone_from(&self.command);
                                existing.time.clone_from(&now);
                                if let Change::Modified { patched_sha256, .. }
                                | Change::Created { patched_sha256, .. } = &mut existing.change
                                {
                                    *patched_sha256 = new_sha;
                                }
                            } else {
                                let original_sha256 = model::sha256_hex(&old);
                                journal.entries.push(entry(
                                    rel,
                                    Change::Modified {
                                        original_sha256,
                                        patched_sha256: new_sha,
                                        mode,
                                    },
                                ));
                                originals.push(old.clone());
                            }
                            let owner = Some((meta.uid(), meta.gid()));
                            actions.push(Action::Write {
                                rel: rel.clone(),
                                bytes: bytes.clone(),
                                old: Some(old),
                                mode,
                                owner,
                            });
                        }
                        Ok(_) if create => bail!(
                            "refusing to create `{}`: it already exists and npuprof did not create it",
                            rel.display()
                        ),
                        Ok(_) => bail!("`{}` is no longer a regular file", rel.display()),
                        Err(_) if !create => bail!("`{}` no longer exists", rel.display()),
                        Err(_)
                            if journaled.is_some_and(|i| {
                                matches!(journal.entries[i].change, Change::Modified { .. })
                            }) =>
                        {
                            bail!(
                                "`{}` was patched by npuprof and has since been deleted; run `npuprof revert` first",
                                rel.display()
                            )
                        }
                        Err(_) => {
                            let resolved = paths::resolve_entry(&self.repo, rel)?;
                            for dir in resolved.missing_dirs {
                                journal.entries.push(entry(&dir, Change::CreatedDir));
                                actions.push(Action::CreateDir { rel: dir });
                            }
                            let change = Change::Created {
                                patched_sha256: new_sha,
                                mode: CREATED_MODE,
                            };
                            if let Some(index) = journaled {
                                // Created earlier by npuprof, since removed by hand: create it again.
                                let existing = &mut journal.entries[index];
                                existing.command.clone_from(&self.command);
                                existing.time.clone_from(&now);
                                existing.change = change;
                            } else {
                                journal.entries.push(entry(rel, change));
                            }
                            actions.push(Action::Write {
                                rel: rel.clone(),
                                bytes: bytes.clone(),
                                old: None,
                                mode: CREATED_MODE,
                                owner: None,
                            });
                        }
                    }
                    overlay.insert(rel.clone(), true);
                }
                Staged::Rename { from, to } => {
                    if !exists(&overlay, from) {
                        bail!("cannot move `{}` aside: it does not exist", from.display());
                    }
                    if exists(&overlay, to) {
                        bail!(
                            "cannot move `{}` to `{}`: the destination exists",
                            from.display(),
                            to.display()
                        );
                    }
                    overlay.insert(from.clone(), false);
                    overlay.insert(to.clone(), true);
                    journal
                        .entries
                        .push(entry(from, Change::Renamed { to: to.clone() }));
                    actions.push(Action::Rename {
                        from: from.clone(),
                        to: to.clone(),
                    });
                }
                Staged::Symlink { rel, target } => {
                    if exists(&overlay, rel) {
                        bail!(
                            "cannot create the symlink `{}`: the path exists",
                            rel.display()
                        );
                    }
                    overlay.insert(rel.clone(), true);
                    journal.entries.push(entry(
                        rel,
                        Change::Symlink {
                            target: target.clone(),
                        },
                    ));
                    actions.push(Action::Symlink {
                        rel: rel.clone(),
                        target: target.clone(),
                    });
                }
            }
        }
        Ok((actions, originals))
    }

    /// Applies `actions`: every file's temp is prepared (and flushed) first, then the renames.
    fn apply(&self, actions: &[Action], undo: &mut Vec<Undo>) -> anyhow::Result<Vec<PathBuf>> {
        let mut temps: Vec<Option<NamedTempFile>> = Vec::with_capacity(actions.len());
        for action in actions {
            temps.push(match action {
                Action::CreateDir { rel } => {
                    let abs = self.repo.join(rel);
                    fs::create_dir(&abs)
                        .with_context(|| format!("cannot create `{}`", abs.display()))?;
                    undo.push(Undo::RemoveDir { rel: rel.clone() });
                    None
                }
                Action::Write {
                    rel,
                    bytes,
                    mode,
                    owner,
                    ..
                } => {
                    let abs = self.repo.join(rel);
                    Some(
                        atomic::prepare(&abs, bytes, *mode, *owner).with_context(|| {
                            format!("cannot write a temp file next to `{}`", abs.display())
                        })?,
                    )
                }
                Action::Rename { .. } | Action::Symlink { .. } => None,
            });
        }
        #[cfg(test)]
        if let Some(hook) = self.before_apply {
            hook(&self.repo);
        }
        let mut changed = Vec::new();
        for (action, temp) in actions.iter().zip(temps) {
            match action {
                Action::CreateDir { .. } => {}
                Action::Write {
                    rel,
                    old,
                    mode,
                    owner,
                    ..
                } => {
                    let abs = self.repo.join(rel);
                    let temp = temp.context("internal: missing temp file")?;
                    temp.persist(&abs)
                        .map_err(|e| e.error)
                        .with_context(|| format!("cannot replace `{}`", abs.display()))?;
                    undo.push(match old {
                        Some(old) => Undo::Restore {
                            rel: rel.clone(),
                            old: old.clone(),
                            mode: *mode,
                            owner: *owner,
                        },
                        None => Undo::Remove { rel: rel.clone() },
                    });
                    atomic::sync_parent(&abs);
                    changed.push(rel.clone());
                }
                Action::Rename { from, to } => {
                    let (a, b) = (self.repo.join(from), self.repo.join(to));
                    fs::rename(&a, &b).with_context(|| {
                        format!("cannot move `{}` to `{}`", a.display(), b.display())
                    })?;
                    undo.push(Undo::RenameBack {
                        from: from.clone(),
                        to: to.clone(),
                    });
                    atomic::sync_parent(&b);
                    changed.push(from.clone());
                }
                Action::Symlink { rel, target } => {
                    let abs = self.repo.join(rel);
                    std::os::unix::fs::symlink(target, &abs).with_context(|| {
                        format!("cannot create the symlink `{}`", abs.display())
                    })?;
                    undo.push(Undo::Remove { rel: rel.clone() });
                    atomic::sync_parent(&abs);
                    changed.push(rel.clone());
                }
            }
        }
        Ok(changed)
    }

    /// Undoes the done steps in reverse order and puts the previous journal back.
    fn rollback(&self, undo: Vec<Undo>, created_journal_dir: bool) -> anyhow::Result<()> {
        let mut failures = Vec::new();
        for step in undo.into_iter().rev() {
            let result = match &step {
                Undo::Restore {
                    rel,
                    old,
                    mode,
                    owner,
                } => atomic::write(&self.repo.join(rel), old, *mode, *owner)
                    .map_err(anyhow::Error::from),
                Undo::Remove { rel } => {
                    fs::remove_file(self.repo.join(rel)).map_err(anyhow::Error::from)
                }
                Undo::RemoveDir { rel } => {
                    fs::remove_dir(self.repo.join(rel)).map_err(anyhow::Error::from)
                }
                Undo::RenameBack { from, to } => {
                    fs::rename(self.repo.join(to), self.repo.join(from))
                        .map_err(anyhow::Error::from)
                }
            };
            if let Err(err) = result {
                failures.push(format!("{step:?}: {err}"));
            }
        }
        let journal_path = model::journal_file(&self.repo);
        let journal_result = if created_journal_dir {
            fs::remove_dir_all(model::journal_dir(&self.repo))
        } else {
            match &self.journal_raw {
                Some(raw) => atomic::write(&journal_path, raw, 0o644, None),
                None => fs::remove_file(&journal_path),
            }
        };
        if let Err(err) = journal_result {
            failures.push(format!("restoring the journal: {err}"));
        }
        if failures.is_empty() {
            Ok(())
        } else {
            bail!("{}", failures.join("; "))
        }
    }
}
