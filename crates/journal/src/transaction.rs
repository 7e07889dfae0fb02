//! Staging changes and committing them all-or-nothing.
//!
//! Crash ordering of [`Transaction::commit`], under the repository lock: (1) the journal
//! describing the finished state is written atomically — each rewritten file's entry keeps the
//! sha256 of what is on disk now as `previous_sha256`; (2) the true originals are saved under
//! `.npuprof/originals/`; (3) files are changed, each by one atomic rename (or in place under an
//! intent record, for a file with several hard links). A kill between any two steps leaves every
//! file at its original, at npuprof's previous bytes or at its new bytes, all of which the journal
//! names, so re-running the command (or `npuprof revert`) finishes the job.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::confined::{Kind, Meta, Repo};
use crate::error::{JournalError, Result, io_err};
use crate::lock::RepoLock;
use crate::model::{self, Change, Entry, Journal};
use crate::{failpoint, paths, recover, time};

/// Records in a journaled file change that npuprof rewrites it from `old_sha` to `new_sha`;
/// returns the file's original sha256 (`None` for a file npuprof created).
fn record_rewrite(change: &mut Change, old_sha: String, new_sha: String) -> Option<String> {
    match change {
        Change::Modified {
            original_sha256,
            patched_sha256,
            previous_sha256,
            ..
        } => {
            *previous_sha256 = Some(old_sha);
            *patched_sha256 = new_sha;
            Some(original_sha256.clone())
        }
        Change::Created {
            patched_sha256,
            previous_sha256,
            ..
        } => {
            *previous_sha256 = Some(old_sha);
            *patched_sha256 = new_sha;
            None
        }
        Change::CreatedDir | Change::Renamed { .. } | Change::Symlink { .. } => None,
    }
}

/// The index of the journaled symlink at `rel` when the link there now (`current`) is as
/// npuprof left it: at its target, or at its previous target (a retarget interrupted).
fn own_symlink(journal: &Journal, rel: &Path, current: &Path) -> Option<usize> {
    journal.entries.iter().position(|e| {
        e.path == rel
            && matches!(&e.change, Change::Symlink { target, previous_target }
                if target == current || previous_target.as_deref() == Some(current))
    })
}

/// Permission bits for files npuprof creates.
const CREATED_MODE: u32 = 0o644;

/// A set of staged changes to one repository, applied all-or-nothing by [`Transaction::commit`].
#[derive(Debug)]
pub struct Transaction {
    /// `None` for a preview, which can read and stage but never commit.
    lock: Option<RepoLock>,
    fs: Repo,
    command: String,
    journal: Journal,
    journal_raw: Option<Vec<u8>>,
    staged: Vec<Staged>,
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
        original_sha256: Option<String>,
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
    /// Points npuprof's own symlink `rel` (now at `old`) at `target`.
    Relink {
        rel: PathBuf,
        target: PathBuf,
        old: PathBuf,
    },
}

/// A done step, with what undoes it (no `Debug`: it holds whole files).
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
    RelinkBack {
        rel: PathBuf,
        target: PathBuf,
    },
}

impl Undo {
    /// The path this step changed (for a move, where the item was).
    fn path(&self) -> &Path {
        match self {
            Undo::Restore { rel, .. }
            | Undo::Remove { rel }
            | Undo::RemoveDir { rel }
            | Undo::RenameBack { from: rel, .. }
            | Undo::RelinkBack { rel, .. } => rel,
        }
    }

    /// Undoes this step (after the `rollback` failpoint); the error names the path.
    fn undo(&self, fs: &Repo) -> Result<(), String> {
        let path = self.path();
        let io = |what: &str, err: std::io::Error| {
            format!("cannot {what} `{}`: {err}", fs.display(path).display())
        };
        failpoint::step("rollback", path).map_err(|err| io("undo the change to", err))?;
        match self {
            Undo::Restore {
                rel,
                old,
                mode,
                owner,
            } => recover::write_file(fs, rel, old, *mode, *owner, None).map_err(|e| e.to_string()),
            Undo::Remove { rel } => fs.unlink(rel).map_err(|e| io("remove", e)),
            Undo::RemoveDir { rel } => fs.rmdir(rel).map_err(|e| io("remove", e)),
            Undo::RenameBack { from, to } => fs.rename(to, from).map_err(|e| io("move back", e)),
            Undo::RelinkBack { rel, target } => fs
                .replace_symlink(rel, target)
                .map_err(|e| io("point back", e)),
        }
    }

    /// Checks on disk that this step is undone: a restored file reads back as its old bytes,
    /// a removed item is gone, a moved item is back.
    fn check_undone(&self, fs: &Repo) -> Result<(), String> {
        let exists = |rel: &Path| fs.meta(rel).ok().flatten().is_some();
        let (rel, undone) = match self {
            Undo::Restore { rel, old, .. } => {
                (rel, fs.read_file(rel).ok().flatten().as_ref() == Some(old))
            }
            Undo::Remove { rel } | Undo::RemoveDir { rel } => (rel, !exists(rel)),
            Undo::RenameBack { from, to } => (from, exists(from) && !exists(to)),
            Undo::RelinkBack { rel, target } => {
                (rel, fs.read_link(rel).ok().as_ref() == Some(target))
            }
        };
        if undone {
            Ok(())
        } else {
            Err(format!(
                "`{}` is not back to what it was before",
                fs.display(rel).display()
            ))
        }
    }
}

/// The plan of a commit: the new journal, the actions, the originals to save.
struct Plan {
    journal: Journal,
    actions: Vec<Action>,
    originals: Vec<Vec<u8>>,
}

fn open_repo(repo: &Path) -> Result<Repo> {
    let canonical = repo
        .canonicalize()
        .map_err(io_err("open the repository", repo))?;
    if !canonical.is_dir() {
        return Err(JournalError::Refused(format!(
            "the repository `{}` is not a directory",
            canonical.display()
        )));
    }
    Repo::open(&canonical).map_err(io_err("open the repository", &canonical))
}

impl Transaction {
    /// Starts a transaction on `repo` for `command` (e.g. "patch"): takes the repository lock,
    /// finishes what a killed npuprof left (see [`crate::recover`]), then loads and validates the
    /// journal.
    pub fn begin(repo: &Path, command: &str) -> Result<Self> {
        let lock = RepoLock::acquire(repo)?;
        recover::recover(lock.repo())?;
        Self::start(open_repo(repo)?, command, Some(lock))
    }

    /// Starts a read-only transaction (for dry runs): no lock and no recovery; it reads and
    /// stages like [`Transaction::begin`] but [`Transaction::commit`] refuses.
    pub fn preview(repo: &Path, command: &str) -> Result<Self> {
        let fs = open_repo(repo)?;
        recover::check_orphans(&fs)?;
        Self::start(fs, command, None)
    }

    fn start(fs: Repo, command: &str, lock: Option<RepoLock>) -> Result<Self> {
        let (journal, journal_raw) = match model::load(&fs)? {
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
            lock,
            fs,
            command: command.to_owned(),
            journal,
            journal_raw,
            staged: Vec::new(),
        })
    }

    /// The current bytes of a repository file (follows the repo-confinement rules).
    pub fn read(&self, rel_path: &Path) -> Result<Vec<u8>> {
        let resolved = paths::resolve_existing(self.fs.path(), rel_path)?;
        self.fs
            .read(&resolved.rel)
            .map_err(io_err("read", resolved.abs))
    }

    /// The true originals (what `revert` restores) of the modified files whose last change was
    /// `command`'s (a file another command wrote since is left out) and that are not back to
    /// their original, by repository-relative path.
    pub fn originals(&self, command: &str) -> Result<Vec<(PathBuf, Vec<u8>)>> {
        let mut out = Vec::new();
        for entry in self.journal.entries.iter().filter(|e| e.command == command) {
            let Change::Modified {
                original_sha256, ..
            } = &entry.change
            else {
                continue;
            };
            let current = self
                .fs
                .read_file(&entry.path)
                .map_err(io_err("read", self.fs.display(&entry.path)))?;
            if current.is_some_and(|bytes| model::sha256_hex(&bytes) == *original_sha256) {
                continue;
            }
            out.push((
                entry.path.clone(),
                model::read_original(&self.fs, original_sha256)?,
            ));
        }
        Ok(out)
    }

    /// Stages new content for an existing file; its true original is kept in the journal.
    pub fn write_file(&mut self, rel_path: &Path, new_bytes: Vec<u8>) -> Result<()> {
        let resolved = paths::resolve_existing(self.fs.path(), rel_path)?;
        if !resolved.abs.is_file() {
            return Err(JournalError::Refused(format!(
                "`{}` is not a regular file",
                rel_path.display()
            )));
        }
        self.stage_bytes(resolved.rel, new_bytes, false);
        Ok(())
    }

    /// Stages a new file; refuses to overwrite a file npuprof did not create.
    pub fn create_file(&mut self, rel_path: &Path, bytes: Vec<u8>) -> Result<()> {
        let resolved = paths::resolve_entry(self.fs.path(), rel_path)?;
        if std::fs::symlink_metadata(&resolved.abs).is_ok()
            && !self.created_by_npuprof(&resolved.rel)
        {
            return Err(JournalError::Refused(format!(
                "refusing to create `{}`: it already exists and npuprof did not create it",
                rel_path.display()
            )));
        }
        self.stage_bytes(resolved.rel, bytes, true);
        Ok(())
    }

    /// Stages moving `from` aside to `to` (which must not exist); revert moves it back.
    pub fn rename(&mut self, from: &Path, to: &Path) -> Result<()> {
        let from = paths::resolve_entry(self.fs.path(), from)?;
        let to = paths::resolve_entry(self.fs.path(), to)?;
        if !to.missing_dirs.is_empty() {
            return Err(JournalError::Refused(format!(
                "cannot move `{}` to `{}`: its directory does not exist",
                from.rel.display(),
                to.rel.display()
            )));
        }
        self.staged.push(Staged::Rename {
            from: from.rel,
            to: to.rel,
        });
        Ok(())
    }

    /// Whether `rel_path` is a symlink npuprof created (and journaled), pointing where npuprof
    /// left it: [`Transaction::symlink`] then points it at a new target instead of refusing.
    pub fn is_own_symlink(&self, rel_path: &Path) -> bool {
        self.fs
            .read_link(rel_path)
            .is_ok_and(|current| own_symlink(&self.journal, rel_path, &current).is_some())
    }

    /// Stages creating a symlink at `rel_path` pointing at `target` (or pointing npuprof's own
    /// symlink there at `target`); revert removes it.
    pub fn symlink(&mut self, rel_path: &Path, target: &Path) -> Result<()> {
        let link = paths::resolve_entry(self.fs.path(), rel_path)?;
        if !link.missing_dirs.is_empty() {
            return Err(JournalError::Refused(format!(
                "cannot create the symlink `{}`: its directory does not exist",
                rel_path.display()
            )));
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
    pub fn commit(self) -> Result<CommitReport> {
        if self.lock.is_none() {
            return Err(JournalError::Preview);
        }
        let current = model::load(&self.fs)?;
        if current.as_ref().map(|l| &l.raw) != self.journal_raw.as_ref() {
            return Err(JournalError::Raced);
        }
        let plan = self.plan()?;
        if plan.actions.is_empty() {
            return Ok(CommitReport::default());
        }
        model::ensure_dir(&self.fs)?;
        model::write_own(
            &self.fs,
            &model::journal_file(),
            &model::to_bytes(&plan.journal),
        )?;
        let mut undo = Vec::new();
        let result = plan
            .originals
            .iter()
            .try_for_each(|bytes| model::store_original(&self.fs, bytes).map(drop))
            .and_then(|()| self.apply(&plan.actions, &mut undo));
        match result {
            Ok(changed) => Ok(CommitReport { changed }),
            Err(err) => match self.rollback(undo) {
                Ok(()) => Err(JournalError::RolledBack {
                    source: Box::new(err),
                }),
                Err(rollback) => Err(JournalError::RollbackFailed {
                    source: Box::new(err),
                    rollback,
                }),
            },
        }
    }

    fn meta(&self, rel: &Path) -> Result<Option<Meta>> {
        self.fs
            .meta(rel)
            .map_err(io_err("inspect", self.fs.display(rel)))
    }

    fn entry(&self, path: &Path, change: Change, now: &str) -> Entry {
        Entry {
            path: path.to_path_buf(),
            command: self.command.clone(),
            time: now.to_owned(),
            change,
        }
    }

    /// Checks the staged changes against the filesystem, in order, and builds the new journal.
    fn plan(&self) -> Result<Plan> {
        let now = time::now_rfc3339();
        let mut plan = Plan {
            journal: self.journal.clone(),
            actions: Vec::new(),
            originals: Vec::new(),
        };
        // Existence of paths as changed by earlier staged steps.
        let mut overlay: HashMap<PathBuf, bool> = HashMap::new();
        for staged in &self.staged {
            match staged {
                Staged::Write { rel, bytes } | Staged::Create { rel, bytes } => {
                    let create = matches!(staged, Staged::Create { .. });
                    self.plan_bytes(&mut plan, rel, bytes, create, &now)?;
                    overlay.insert(rel.clone(), true);
                }
                Staged::Rename { from, to } => {
                    let exists = |rel: &Path| -> Result<bool> {
                        Ok(match overlay.get(rel) {
                            Some(known) => *known,
                            None => self.meta(rel)?.is_some(),
                        })
                    };
                    if !exists(from)? {
                        return Err(JournalError::Refused(format!(
                            "cannot move `{}` aside: it does not exist",
                            from.display()
                        )));
                    }
                    if exists(to)? {
                        return Err(JournalError::Refused(format!(
                            "cannot move `{}` to `{}`: the destination exists",
                            from.display(),
                            to.display()
                        )));
                    }
                    overlay.insert(from.clone(), false);
                    overlay.insert(to.clone(), true);
                    self.plan_rename(&mut plan, from, to, &now)?;
                }
                Staged::Symlink { rel, target } => {
                    let exists = match overlay.get(rel) {
                        Some(known) => *known,
                        None => self.meta(rel)?.is_some(),
                    };
                    overlay.insert(rel.clone(), true);
                    self.plan_symlink(&mut plan, rel, target, exists, &now)?;
                }
            }
        }
        Ok(plan)
    }

    /// Plans the symlink `rel` -> `target`: a new one where nothing `exists`, or npuprof's own
    /// symlink there (as it left it) pointed at `target` instead — so that relocating again
    /// keeps one journaled symlink whose revert leaves the first original in place.
    fn plan_symlink(
        &self,
        plan: &mut Plan,
        rel: &Path,
        target: &Path,
        exists: bool,
        now: &str,
    ) -> Result<()> {
        let journaled = plan
            .journal
            .entries
            .iter()
            .position(|e| e.path == *rel && matches!(e.change, Change::Symlink { .. }));
        let change = |previous_target| Change::Symlink {
            target: target.to_path_buf(),
            previous_target,
        };
        if !exists {
            // A symlink journaled by an interrupted run is made again, not journaled twice.
            match journaled {
                Some(index) => plan.journal.entries[index].change = change(None),
                None => plan
                    .journal
                    .entries
                    .push(self.entry(rel, change(None), now)),
            }
            plan.actions.push(Action::Symlink {
                rel: rel.to_path_buf(),
                target: target.to_path_buf(),
            });
            return Ok(());
        }
        let current = self.fs.read_link(rel).ok();
        let ours = current.and_then(|current| {
            own_symlink(&plan.journal, rel, &current).map(|index| (index, current))
        });
        let Some((index, current)) = ours else {
            return Err(JournalError::Refused(format!(
                "cannot create the symlink `{}`: the path exists and is not the symlink npuprof made",
                rel.display()
            )));
        };
        let entry = &mut plan.journal.entries[index];
        entry.command.clone_from(&self.command);
        entry.time = now.to_owned();
        entry.change = change(Some(current.clone()));
        plan.actions.push(Action::Relink {
            rel: rel.to_path_buf(),
            target: target.to_path_buf(),
            old: current,
        });
        Ok(())
    }

    fn plan_rename(&self, plan: &mut Plan, from: &Path, to: &Path, now: &str) -> Result<()> {
        // A move journaled by an interrupted run (its destination never made) is reused.
        let mut reused = false;
        for entry in &mut plan.journal.entries {
            if entry.path == from
                && let Change::Renamed { to: old_to } = &mut entry.change
                && self.fs.meta(old_to).ok().flatten().is_none()
            {
                old_to.clone_from(&to.to_path_buf());
                reused = true;
            }
        }
        if !reused {
            let change = Change::Renamed {
                to: to.to_path_buf(),
            };
            plan.journal.entries.push(self.entry(from, change, now));
        }
        plan.actions.push(Action::Rename {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
        });
        Ok(())
    }

    fn plan_bytes(
        &self,
        plan: &mut Plan,
        rel: &Path,
        bytes: &[u8],
        create: bool,
        now: &str,
    ) -> Result<()> {
        let journaled = plan.journal.entries.iter().position(|e| {
            e.path == *rel && matches!(e.change, Change::Modified { .. } | Change::Created { .. })
        });
        let meta = self.meta(rel)?;
        let new_sha = model::sha256_hex(bytes);
        match meta {
            Some(meta) if meta.kind == Kind::File && (!create || journaled.is_some()) => {
                self.plan_rewrite(plan, rel, bytes, meta, journaled, now)?;
            }
            Some(_) if create => {
                return Err(JournalError::Refused(format!(
                    "refusing to create `{}`: it already exists and npuprof did not create it",
                    rel.display()
                )));
            }
            Some(_) => {
                return Err(JournalError::Refused(format!(
                    "`{}` is no longer a regular file",
                    rel.display()
                )));
            }
            None if !create => {
                return Err(JournalError::Refused(format!(
                    "`{}` no longer exists",
                    rel.display()
                )));
            }
            None if journaled.is_some_and(|i| {
                matches!(plan.journal.entries[i].change, Change::Modified { .. })
            }) =>
            {
                return Err(JournalError::Refused(format!(
                    "`{}` was patched by npuprof and has since been deleted; run `npuprof revert` first",
                    rel.display()
                )));
            }
            None => self.plan_create(plan, rel, bytes, journaled, now, new_sha)?,
        }
        Ok(())
    }

    /// Plans rewriting the existing file `rel` (journaled at `journaled`, if at all).
    fn plan_rewrite(
        &self,
        plan: &mut Plan,
        rel: &Path,
        bytes: &[u8],
        meta: Meta,
        journaled: Option<usize>,
        now: &str,
    ) -> Result<()> {
        let old = self
            .fs
            .read(rel)
            .map_err(io_err("read", self.fs.display(rel)))?;
        if old == *bytes {
            return Ok(());
        }
        let (old_sha, new_sha) = (model::sha256_hex(&old), model::sha256_hex(bytes));
        let original_sha256 = match journaled {
            Some(index) => {
                self.check_not_edited(&plan.journal.entries[index], &old_sha)?;
                let entry = &mut plan.journal.entries[index];
                entry.command.clone_from(&self.command);
                entry.time = now.to_owned();
                let original = record_rewrite(&mut entry.change, old_sha.clone(), new_sha);
                // The saved original is needed again once the file leaves it.
                if original.as_deref() == Some(old_sha.as_str()) {
                    plan.originals.push(old.clone());
                }
                original
            }
            None => {
                let change = Change::Modified {
                    original_sha256: old_sha.clone(),
                    patched_sha256: new_sha,
                    previous_sha256: None,
                    mode: meta.mode,
                };
                plan.journal.entries.push(self.entry(rel, change, now));
                plan.originals.push(old.clone());
                Some(old_sha)
            }
        };
        plan.actions.push(Action::Write {
            rel: rel.to_path_buf(),
            bytes: bytes.to_vec(),
            old: Some(old),
            mode: meta.mode,
            owner: Some(meta.owner),
            original_sha256,
        });
        Ok(())
    }

    fn plan_create(
        &self,
        plan: &mut Plan,
        rel: &Path,
        bytes: &[u8],
        journaled: Option<usize>,
        now: &str,
        new_sha: String,
    ) -> Result<()> {
        let resolved = paths::resolve_entry(self.fs.path(), rel)?;
        for dir in resolved.missing_dirs {
            let known = plan
                .journal
                .entries
                .iter()
                .any(|e| e.path == dir && e.change == Change::CreatedDir);
            if !known {
                plan.journal
                    .entries
                    .push(self.entry(&dir, Change::CreatedDir, now));
            }
            plan.actions.push(Action::CreateDir { rel: dir });
        }
        let change = Change::Created {
            patched_sha256: new_sha,
            previous_sha256: None,
            mode: CREATED_MODE,
        };
        match journaled {
            Some(index) => {
                // Created earlier by npuprof, since removed: create it again.
                let existing = &mut plan.journal.entries[index];
                existing.command.clone_from(&self.command);
                existing.time = now.to_owned();
                existing.change = change;
            }
            None => plan.journal.entries.push(self.entry(rel, change, now)),
        }
        plan.actions.push(Action::Write {
            rel: rel.to_path_buf(),
            bytes: bytes.to_vec(),
            old: None,
            mode: CREATED_MODE,
            owner: None,
            original_sha256: None,
        });
        Ok(())
    }

    /// Refuses to overwrite a file whose bytes are none of npuprof's (an edit made since).
    fn check_not_edited(&self, entry: &Entry, current_sha: &str) -> Result<()> {
        let ours = match &entry.change {
            Change::Modified {
                original_sha256,
                patched_sha256,
                previous_sha256,
                ..
            } => {
                current_sha == original_sha256
                    || current_sha == patched_sha256
                    || previous_sha256.as_deref() == Some(current_sha)
            }
            Change::Created {
                patched_sha256,
                previous_sha256,
                ..
            } => current_sha == patched_sha256 || previous_sha256.as_deref() == Some(current_sha),
            _ => true,
        };
        if ours {
            Ok(())
        } else {
            Err(JournalError::EditedSince {
                path: entry.path.clone(),
            })
        }
    }

    /// Applies `actions` in order, recording how to undo each.
    fn apply(&self, actions: &[Action], undo: &mut Vec<Undo>) -> Result<Vec<PathBuf>> {
        let fs = &self.fs;
        let mut changed = Vec::new();
        for action in actions {
            match action {
                Action::CreateDir { rel } => {
                    fs.mkdir(rel, 0o755)
                        .map_err(io_err("create", fs.display(rel)))?;
                    undo.push(Undo::RemoveDir { rel: rel.clone() });
                }
                Action::Write {
                    rel,
                    bytes,
                    old,
                    mode,
                    owner,
                    original_sha256,
                } => {
                    recover::write_file(fs, rel, bytes, *mode, *owner, original_sha256.as_deref())?;
                    undo.push(match old {
                        Some(old) => Undo::Restore {
                            rel: rel.clone(),
                            old: old.clone(),
                            mode: *mode,
                            owner: *owner,
                        },
                        None => Undo::Remove { rel: rel.clone() },
                    });
                    changed.push(rel.clone());
                }
                Action::Rename { from, to } => {
                    fs.rename(from, to)
                        .map_err(io_err("move aside", fs.display(from)))?;
                    undo.push(Undo::RenameBack {
                        from: from.clone(),
                        to: to.clone(),
                    });
                    changed.push(from.clone());
                }
                Action::Symlink { rel, target } => {
                    fs.symlink(rel, target)
                        .map_err(io_err("create the symlink", fs.display(rel)))?;
                    undo.push(Undo::Remove { rel: rel.clone() });
                    changed.push(rel.clone());
                }
                Action::Relink { rel, target, old } => {
                    fs.replace_symlink(rel, target)
                        .map_err(io_err("point the symlink", fs.display(rel)))?;
                    undo.push(Undo::RelinkBack {
                        rel: rel.clone(),
                        target: old.clone(),
                    });
                    changed.push(rel.clone());
                }
            }
        }
        Ok(changed)
    }

    /// Undoes the done steps in reverse order and, once every one is verified undone, puts the
    /// previous journal back. When any is not, the journal just written (which names every
    /// file's original, previous and new bytes) and the saved originals stay, so that
    /// `npuprof revert` can finish the job once the cause is fixed.
    fn rollback(&self, undo: Vec<Undo>) -> Result<(), String> {
        let fs = &self.fs;
        let mut failures = Vec::new();
        for step in undo.iter().rev() {
            if let Err(err) = step.undo(fs) {
                failures.push(err);
            }
        }
        if failures.is_empty() {
            // A path is checked against the earliest step that changed it: a symlink made where
            // an item was moved from is gone, but the item is back there.
            let mut checked = HashSet::new();
            failures.extend(
                undo.iter()
                    .filter(|step| checked.insert(step.path()))
                    .filter_map(|step| step.check_undone(fs).err()),
            );
        }
        if !failures.is_empty() {
            return Err(failures.join("; "));
        }
        let journal = model::journal_file();
        let journal_result = match &self.journal_raw {
            Some(raw) => model::write_own(fs, &journal, raw).map_err(|e| e.to_string()),
            None => self
                .forget_journal()
                .map_err(|e| format!("cannot remove the journal: {e}")),
        };
        journal_result?;
        // Every file is back: an in-place write's intent no longer applies.
        if fs.exists(&recover::intent_file()).unwrap_or(false) {
            let _ = fs.unlink(&recover::intent_file());
        }
        Ok(())
    }

    /// Removes a journal this transaction created: its saved originals first, so that a kill
    /// in between leaves a journal whose files are all original (never orphaned originals).
    fn forget_journal(&self) -> std::io::Result<()> {
        let originals = model::originals_dir();
        for name in self.fs.list(&originals).unwrap_or_default() {
            self.fs.unlink(&originals.join(name))?;
        }
        self.fs.unlink(&model::journal_file())
    }
}
