//! The journal's on-disk data model: `.npuprof/journal.json` plus the true original bytes of
//! every modified file in `.npuprof/originals/<sha256>`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::confined::{Kind, Repo};
use crate::error::{JournalError, Result, io_err};
use crate::paths::{self, JOURNAL_DIR};

/// The journal format version this npuprof reads and writes.
pub const VERSION: u32 = 1;

/// The whole journal: every change npuprof made to the repository, in the order made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    /// Format version ([`VERSION`]).
    pub version: u32,
    /// Changes in the order they were applied; revert walks them backwards.
    pub entries: Vec<Entry>,
}

/// One change to one repository path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The repository-relative path changed (for a rename: where the moved item was).
    pub path: PathBuf,
    /// The npuprof command that last made this change (e.g. `patch`).
    pub command: String,
    /// When it was last made (RFC 3339, UTC).
    pub time: String,
    /// What was done.
    #[serde(flatten)]
    pub change: Change,
}

/// The kinds of change, tagged by `kind` in JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// An existing file was rewritten; its true original is in `originals/<original_sha256>`.
    Modified {
        /// sha256 of the bytes before npuprof first touched the file.
        original_sha256: String,
        /// sha256 of the bytes npuprof last wrote.
        patched_sha256: String,
        /// sha256 of the bytes npuprof wrote before (a write interrupted before its rename
        /// leaves them on disk: they are npuprof's, not an edit).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        previous_sha256: Option<String>,
        /// Permission bits of the original file.
        mode: u32,
    },
    /// A new file was created by npuprof.
    Created {
        /// sha256 of the bytes npuprof last wrote.
        patched_sha256: String,
        /// sha256 of the bytes npuprof wrote before (see [`Change::Modified`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        previous_sha256: Option<String>,
        /// Permission bits given to the file.
        mode: u32,
    },
    /// A directory was created by npuprof (to hold a created file).
    CreatedDir,
    /// The item at `path` was moved aside to `to` (never deleted).
    Renamed {
        /// Repository-relative path it was moved to.
        to: PathBuf,
    },
    /// A symlink was created at `path` (and maybe pointed elsewhere since: a second
    /// relocation retargets npuprof's own symlink instead of moving it aside).
    Symlink {
        /// What the link points at (may be outside the repository).
        target: PathBuf,
        /// What it pointed at before npuprof last retargeted it (a retarget interrupted before
        /// its rename leaves that link: npuprof's, not a change made since).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        previous_target: Option<PathBuf>,
    },
}

/// The kind of a journaled change, as written in JSON (`kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// An existing file was rewritten.
    Modified,
    /// A new file was created.
    Created,
    /// A new directory was created.
    CreatedDir,
    /// An item was moved aside.
    Renamed,
    /// A symlink was created.
    Symlink,
}

impl ChangeKind {
    /// The tag as written in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Modified => "modified",
            ChangeKind::Created => "created",
            ChangeKind::CreatedDir => "created_dir",
            ChangeKind::Renamed => "renamed",
            ChangeKind::Symlink => "symlink",
        }
    }
}

impl Change {
    /// The kind of this change.
    pub fn kind(&self) -> ChangeKind {
        match self {
            Change::Modified { .. } => ChangeKind::Modified,
            Change::Created { .. } => ChangeKind::Created,
            Change::CreatedDir => ChangeKind::CreatedDir,
            Change::Renamed { .. } => ChangeKind::Renamed,
            Change::Symlink { .. } => ChangeKind::Symlink,
        }
    }
}

/// `.npuprof/journal.json`, relative to the repository.
pub fn journal_file() -> PathBuf {
    Path::new(JOURNAL_DIR).join("journal.json")
}

/// `.npuprof/originals`, relative to the repository.
pub fn originals_dir() -> PathBuf {
    Path::new(JOURNAL_DIR).join("originals")
}

/// Where the true original bytes with this sha256 are kept, relative to the repository.
pub fn original_file(sha256: &str) -> PathBuf {
    originals_dir().join(sha256)
}

/// Lower-case hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// A journal read from disk together with its exact bytes.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The parsed, validated journal.
    pub journal: Journal,
    /// The file's bytes, to detect concurrent changes and to restore it on rollback.
    pub raw: Vec<u8>,
}

/// Whether npuprof's own state file `rel` (`journal.json`, `reverted.json`) exists. Anything
/// there but a regular file is refused, never taken for "none": npuprof never makes one, and
/// reading a symlinked or replaced journal as absent would record patched bytes as originals.
pub fn own_file_exists(repo: &Repo, rel: &Path) -> Result<bool> {
    match repo
        .meta(rel)
        .map_err(io_err("inspect", repo.display(rel)))?
    {
        None => Ok(false),
        Some(meta) if meta.kind == Kind::File => Ok(true),
        Some(meta) => Err(JournalError::BadJournal {
            path: repo.display(rel),
            reason: format!(
                "it is {} instead of a regular file (npuprof never makes one); move it out of \
                 `{JOURNAL_DIR}/` — if it points at or holds the real journal, put that file back in \
                 its place as a regular file — then run this again",
                meta.kind.describe()
            ),
        }),
    }
}

/// Loads and validates the journal of the repository; `None` when there is none.
pub fn load(repo: &Repo) -> Result<Option<Loaded>> {
    let file = journal_file();
    if !own_file_exists(repo, &file)? {
        return Ok(None);
    }
    let raw = repo
        .read(&file)
        .map_err(io_err("read", repo.display(&file)))?;
    let journal = parse(&raw)
        .and_then(|journal| validate(repo, &journal).map(|()| journal))
        .map_err(|reason| JournalError::BadJournal {
            path: repo.display(&file),
            reason,
        })?;
    Ok(Some(Loaded { journal, raw }))
}

/// Parses journal bytes (a pending journal too) without checking it against the disk.
pub fn parse(raw: &[u8]) -> Result<Journal, String> {
    let value: serde_json::Value = serde_json::from_slice(raw)
        .map_err(|err| format!("it is not valid JSON (corrupt): {err}"))?;
    match value.get("version").and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(v) => {
            return Err(format!(
                "unknown journal version {v} (this npuprof understands {VERSION})"
            ));
        }
        None => return Err("it has no numeric `version` field (corrupt)".to_owned()),
    }
    serde_json::from_value(value)
        .map_err(|err| format!("its entries do not match the journal format (corrupt): {err}"))
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Checks every entry: paths relative and confined to the repository, hashes well-formed,
/// originals present, at most one entry per path and kind.
pub fn validate(repo: &Repo, journal: &Journal) -> Result<(), String> {
    let mut files = HashSet::new();
    let mut links = HashSet::new();
    for (index, entry) in journal.entries.iter().enumerate() {
        let at = || format!("entry {index} (`{}`)", entry.path.display());
        paths::resolve_entry(repo.path(), &entry.path).map_err(|err| format!("{}: {err}", at()))?;
        match &entry.change {
            Change::Modified {
                original_sha256,
                patched_sha256,
                ..
            } => {
                if !is_sha256(original_sha256) || !is_sha256(patched_sha256) {
                    return Err(format!("{}: malformed sha256", at()));
                }
                // Needed only while the file is not back to its original.
                let original = original_file(original_sha256);
                let at_original = repo
                    .read_file(&entry.path)
                    .ok()
                    .flatten()
                    .is_some_and(|bytes| sha256_hex(&bytes) == *original_sha256);
                if !at_original && !repo.exists(&original).unwrap_or(false) {
                    return Err(format!(
                        "{}: the saved original `{}` is missing",
                        at(),
                        repo.display(&original).display()
                    ));
                }
            }
            Change::Created { patched_sha256, .. } if !is_sha256(patched_sha256) => {
                return Err(format!("{}: malformed sha256", at()));
            }
            Change::Renamed { to } => {
                paths::resolve_entry(repo.path(), to).map_err(|err| format!("{}: {err}", at()))?;
            }
            Change::Symlink { .. } if !links.insert(entry.path.clone()) => {
                return Err(format!("{}: the symlink is journaled twice", at()));
            }
            Change::Created { .. } | Change::CreatedDir | Change::Symlink { .. } => {}
        }
        if matches!(
            entry.change,
            Change::Modified { .. } | Change::Created { .. }
        ) && !files.insert(entry.path.clone())
        {
            return Err(format!("{}: the path is journaled twice", at()));
        }
    }
    Ok(())
}

/// Serializes `journal` as it is stored (pretty JSON, trailing newline).
pub fn to_bytes(journal: &Journal) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(journal).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Creates `originals/` when missing (`.npuprof/` and its `.gitignore` come with the lock).
pub fn ensure_dir(repo: &Repo) -> Result<()> {
    let originals = originals_dir();
    if !repo
        .exists(&originals)
        .map_err(io_err("inspect", repo.display(&originals)))?
    {
        repo.mkdir(&originals, 0o755)
            .map_err(io_err("create", repo.display(&originals)))?;
    }
    Ok(())
}

/// Writes a file of npuprof's own directory atomically.
pub fn write_own(repo: &Repo, rel: &Path, bytes: &[u8]) -> Result<()> {
    repo.replace(rel, bytes, 0o644, None)
        .map_err(io_err("write", repo.display(rel)))
}

/// Stores `bytes` as a saved original (content-addressed, atomic, flushed).
pub fn store_original(repo: &Repo, bytes: &[u8]) -> Result<String> {
    let sha = sha256_hex(bytes);
    let path = original_file(&sha);
    let already = repo
        .read_file(&path)
        .ok()
        .flatten()
        .is_some_and(|existing| existing == bytes);
    if !already {
        repo.replace(&path, bytes, 0o600, None)
            .map_err(io_err("save the original in", repo.display(&path)))?;
    }
    Ok(sha)
}

/// Reads a saved original and checks its hash.
pub fn read_original(repo: &Repo, sha256: &str) -> Result<Vec<u8>> {
    let path = original_file(sha256);
    let bytes = repo
        .read(&path)
        .map_err(io_err("read the saved original", repo.display(&path)))?;
    if sha256_hex(&bytes) != sha256 {
        return Err(JournalError::Refused(format!(
            "the saved original `{}` is corrupt (its sha256 does not match)",
            repo.display(&path).display()
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::ChangeKind;

    #[test]
    fn each_kind_reads_as_its_json_tag() {
        use ChangeKind::{Created, CreatedDir, Modified, Renamed, Symlink};
        for kind in [Modified, Created, CreatedDir, Renamed, Symlink] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}
