//! What each journaled change looks like on disk now (for `status` and `revert`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::confined::{Kind, Repo};
use crate::model::{self, Change, ChangeKind, Entry, Journal};

/// The on-disk state of one journaled change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Exactly as npuprof left it.
    Applied,
    /// npuprof's bytes from before a write that was interrupted: re-run the command.
    Interrupted,
    /// Already back to the original (an interrupted commit or revert).
    Original,
    /// Changed by something else since npuprof's change.
    Changed,
    /// Gone, and its original cannot be put back from what is on disk.
    Missing,
}

/// One journaled change and its state.
#[derive(Debug, Clone, Serialize)]
pub struct EntryStatus {
    /// Repository-relative path.
    pub path: PathBuf,
    /// What kind of change it was.
    pub kind: ChangeKind,
    /// Extra facts: the rename destination or the symlink target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The npuprof command that made the change.
    pub command: String,
    /// When (RFC 3339, UTC).
    pub time: String,
    /// State on disk now.
    pub state: State,
    /// Whether the path still matches the post-patch state (`state == applied`).
    pub matches_post_patch: bool,
}

impl State {
    /// How the state reads in human output.
    pub fn describe(self) -> &'static str {
        match self {
            State::Applied => "as npuprof left it",
            State::Interrupted => "INTERRUPTED write (re-run the command, or revert)",
            State::Original => "already original",
            State::Changed => "CHANGED since npuprof's change",
            State::Missing => "MISSING",
        }
    }
}

impl EntryStatus {
    /// Whether `revert` must refuse this entry without `--force`.
    pub fn is_conflict(&self) -> bool {
        match self.state {
            State::Changed => true,
            State::Missing => self.kind == ChangeKind::Modified,
            State::Applied | State::Interrupted | State::Original => false,
        }
    }
}

/// The state of every entry of `journal`, in journal order.
pub fn inspect(repo: &Repo, journal: &Journal) -> Vec<EntryStatus> {
    let mut statuses: Vec<EntryStatus> = Vec::with_capacity(journal.entries.len());
    for entry in &journal.entries {
        let mut status = status_of(repo, entry);
        if status.state == State::Changed
            && status.kind == ChangeKind::Symlink
            && never_moved_aside(journal, &statuses, &entry.path)
        {
            // Killed before the move that makes room for the symlink: the original is in place.
            status.state = State::Original;
            status.matches_post_patch = false;
        }
        statuses.push(status);
    }
    statuses
}

/// Whether an earlier entry moves `path` aside and that move has not happened yet.
fn never_moved_aside(journal: &Journal, earlier: &[EntryStatus], path: &Path) -> bool {
    journal.entries.iter().zip(earlier).any(|(entry, status)| {
        entry.path == path
            && matches!(entry.change, Change::Renamed { .. })
            && status.state == State::Original
    })
}

/// What is at a path: nothing, a regular file's sha256, or something else.
enum OnDisk {
    Nothing,
    File(String),
    Other,
}

fn on_disk(repo: &Repo, rel: &Path) -> OnDisk {
    match repo.meta(rel) {
        Ok(None) => OnDisk::Nothing,
        Ok(Some(meta)) if meta.kind == Kind::File => match repo.read(rel) {
            Ok(bytes) => OnDisk::File(model::sha256_hex(&bytes)),
            Err(_) => OnDisk::Other,
        },
        _ => OnDisk::Other,
    }
}

/// The state of a file npuprof wrote, from its sha256 on disk.
fn file_state(
    disk: &OnDisk,
    patched: &str,
    previous: Option<&str>,
    original: Option<&str>,
) -> State {
    match disk {
        OnDisk::File(sha) if sha == patched => State::Applied,
        OnDisk::File(sha) if Some(sha.as_str()) == original => State::Original,
        OnDisk::File(sha) if Some(sha.as_str()) == previous => State::Interrupted,
        OnDisk::Nothing if original.is_none() => State::Original,
        OnDisk::Nothing => State::Missing,
        OnDisk::File(_) | OnDisk::Other => State::Changed,
    }
}

fn status_of(repo: &Repo, entry: &Entry) -> EntryStatus {
    let exists = |p: &Path| repo.meta(p).ok().flatten().is_some();
    let (state, detail) = match &entry.change {
        Change::Modified {
            original_sha256,
            patched_sha256,
            previous_sha256,
            ..
        } => (
            file_state(
                &on_disk(repo, &entry.path),
                patched_sha256,
                previous_sha256.as_deref(),
                Some(original_sha256),
            ),
            None,
        ),
        Change::Created {
            patched_sha256,
            previous_sha256,
            ..
        } => (
            file_state(
                &on_disk(repo, &entry.path),
                patched_sha256,
                previous_sha256.as_deref(),
                None,
            ),
            None,
        ),
        Change::CreatedDir => {
            let state = match repo.meta(&entry.path) {
                Ok(None) => State::Original,
                Ok(Some(meta)) if meta.kind == Kind::Dir => State::Applied,
                _ => State::Changed,
            };
            (state, None)
        }
        Change::Renamed { to } => {
            let state = if exists(to) {
                State::Applied
            } else if exists(&entry.path) {
                State::Original
            } else {
                State::Missing
            };
            (state, Some(format!("moved to {}", to.display())))
        }
        Change::Symlink {
            target,
            previous_target,
        } => {
            let state = match repo.read_link(&entry.path) {
                Ok(current) if current == *target => State::Applied,
                Ok(current) if previous_target.as_ref() == Some(&current) => State::Interrupted,
                Ok(_) => State::Changed,
                Err(_) if exists(&entry.path) => State::Changed,
                Err(_) => State::Original,
            };
            (state, Some(format!("-> {}", target.display())))
        }
    };
    EntryStatus {
        path: entry.path.clone(),
        kind: entry.change.kind(),
        detail,
        command: entry.command.clone(),
        time: entry.time.clone(),
        state,
        matches_post_patch: state == State::Applied,
    }
}
