//! What each journaled change looks like on disk now (for `status` and `revert`).

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::model::{self, Change, Entry, Journal};

/// The on-disk state of one journaled change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Exactly as npuprof left it.
    Applied,
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
    /// `modified`, `created`, `created_dir`, `renamed` or `symlink`.
    pub kind: &'static str,
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
            State::Missing => self.kind == "modified",
            State::Applied | State::Original => false,
        }
    }
}

/// The state of every entry of `journal`, in journal order.
pub fn inspect(repo: &Path, journal: &Journal) -> Vec<EntryStatus> {
    journal
        .entries
        .iter()
        .map(|entry| status_of(repo, entry))
        .collect()
}

fn file_sha(path: &Path) -> Option<Result<String, ()>> {
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return Some(Err(()));
    }
    Some(
        fs::read(path)
            .map(|bytes| model::sha256_hex(&bytes))
            .map_err(|_| ()),
    )
}

fn status_of(repo: &Path, entry: &Entry) -> EntryStatus {
    let abs = repo.join(&entry.path);
    let exists = |p: &Path| fs::symlink_metadata(p).is_ok();
    let (state, detail) = match &entry.change {
        Change::Modified {
            original_sha256,
            patched_sha256,
            ..
        } => {
            let state = match file_sha(&abs) {
                None => State::Missing,
                Some(Ok(sha)) if sha == *patched_sha256 => State::Applied,
                Some(Ok(sha)) if sha == *original_sha256 => State::Original,
                Some(_) => State::Changed,
            };
            (state, None)
        }
        Change::Created { patched_sha256, .. } => {
            let state = match file_sha(&abs) {
                None => State::Original,
                Some(Ok(sha)) if sha == *patched_sha256 => State::Applied,
                Some(_) => State::Changed,
            };
            (state, None)
        }
        Change::CreatedDir => {
            let state = match fs::symlink_metadata(&abs) {
                Err(_) => State::Original,
                Ok(meta) if meta.is_dir() => State::Applied,
                Ok(_) => State::Changed,
            };
            (state, None)
        }
        Change::Renamed { to } => {
            let state = if exists(&repo.join(to)) {
                State::Applied
            } else if exists(&abs) {
                State::Original
            } else {
                State::Missing
            };
            (state, Some(format!("moved to {}", to.display())))
        }
        Change::Symlink { target } => {
            let state = match fs::read_link(&abs) {
                Ok(current) if current == *target => State::Applied,
                Ok(_) => State::Changed,
                Err(_) if exists(&abs) => State::Changed,
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
