//! The journal's on-disk data model: `.npuprof/journal.json` plus the true original bytes of
//! every modified file in `.npuprof/originals/<sha256>`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::atomic;
use super::paths::{self, JOURNAL_DIR};

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
        /// Permission bits of the original file.
        mode: u32,
    },
    /// A new file was created by npuprof.
    Created {
        /// sha256 of the bytes npuprof last wrote.
        patched_sha256: String,
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
    /// A symlink was created at `path`.
    Symlink {
        /// What the link points at (may be outside the repository).
        target: PathBuf,
    },
}

impl Change {
    /// The `kind` tag, as written in JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            Change::Modified { .. } => "modified",
            Change::Created { .. } => "created",
            Change::CreatedDir => "created_dir",
            Change::Renamed { .. } => "renamed",
            Change::Symlink { .. } => "symlink",
        }
    }
}

/// The journal directory of `repo`.
pub fn journal_dir(repo: &Path) -> PathBuf {
    repo.join(JOURNAL_DIR)
}

/// The journal file of `repo`.
pub fn journal_file(repo: &Path) -> PathBuf {
    journal_dir(repo).join("journal.json")
}

/// Where the true original bytes with this sha256 are kept.
pub fn original_file(repo: &Path, sha256: &str) -> PathBuf {
    journal_dir(repo).join("originals").join(sha256)
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

/// Loads and validates the journal of `repo` (canonical); `None` when there is none.
pub fn load(repo: &Path) -> anyhow::Result<Option<Loaded>> {
    let file = journal_file(repo);
    let raw = match std::fs::read(&file) {
        Ok(raw) => raw,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("cannot read `{}`", file.display())),
    };
    let journal = parse(&raw).with_context(|| {
        format!(
            "refusing to use the journal `{}`; inspect or remove it by hand",
            file.display()
        )
    })?;
    validate(repo, &journal).with_context(|| {
        format!(
            "refusing to use the journal `{}`; inspect or remove it by hand",
            file.display()
        )
    })?;
    Ok(Some(Loaded { journal, raw }))
}

fn parse(raw: &[u8]) -> anyhow::Result<Journal> {
    let value: serde_json::Value =
        serde_json::from_slice(raw).context("it is not valid JSON (corrupt)")?;
    match value.get("version").and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(v) => bail!("unknown journal version {v} (this npuprof understands {VERSION})"),
        None => bail!("it has no numeric `version` field (corrupt)"),
    }
    serde_json::from_value(value).context("its entries do not match the journal format (corrupt)")
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Checks every entry: paths relative and confined to `repo`, hashes well-formed, originals
/// present, at most one file entry per path.
pub fn validate(repo: &Path, journal: &Journal) -> anyhow::Result<()> {
    let mut files = HashSet::new();
    for (index, entry) in journal.entries.iter().enumerate() {
        let at = || format!("entry {index} (`{}`)", entry.path.display());
        paths::resolve_entry(repo, &entry.path).with_context(at)?;
        match &entry.change {
            Change::Modified {
                original_sha256,
                patched_sha256,
                ..
            } => {
                if !is_sha256(original_sha256) || !is_sha256(patched_sha256) {
                    bail!("{}: malformed sha256", at());
                }
                let original = original_file(repo, original_sha256);
                if !original.is_file() {
                    bail!(
                        "{}: the saved original `{}` is missing",
                        at(),
                        original.display()
                    );
                }
            }
            Change::Created { patched_sha256, .. } if !is_sha256(patched_sha256) => {
                bail!("{}: malformed sha256", at());
            }
            Change::Renamed { to } => {
                paths::resolve_entry(repo, to).with_context(at)?;
            }
            Change::Created { .. } | Change::CreatedDir | Change::Symlink { .. } => {}
        }
        if matches!(
            entry.change,
            Change::Modified { .. } | Change::Created { .. }
        ) && !files.insert(entry.path.clone())
        {
            bail!("{}: the path is journaled twice", at());
        }
    }
    Ok(())
}

/// Serializes `journal` as it is stored (pretty JSON, trailing newline).
pub fn to_bytes(journal: &Journal) -> anyhow::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(journal)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Creates `.npuprof/` (ignored by git through its own `.gitignore`) and `originals/`.
/// Returns whether the journal directory was created now.
pub fn ensure_dir(repo: &Path) -> anyhow::Result<bool> {
    let dir = journal_dir(repo);
    let created = !dir.exists();
    let originals = dir.join("originals");
    std::fs::create_dir_all(&originals)
        .with_context(|| format!("cannot create `{}`", originals.display()))?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        atomic::write(&ignore, b"*\n", 0o644, None)
            .with_context(|| format!("cannot write `{}`", ignore.display()))?;
    }
    Ok(created)
}

/// Stores `bytes` as a saved original (content-addressed, atomic, flushed).
pub fn store_original(repo: &Path, bytes: &[u8]) -> anyhow::Result<String> {
    let sha = sha256_hex(bytes);
    let path = original_file(repo, &sha);
    let already = std::fs::read(&path).is_ok_and(|existing| existing == bytes);
    if !already {
        atomic::write(&path, bytes, 0o600, None)
            .with_context(|| format!("cannot save the original in `{}`", path.display()))?;
    }
    Ok(sha)
}

/// Reads a saved original and checks its hash.
pub fn read_original(repo: &Path, sha256: &str) -> anyhow::Result<Vec<u8>> {
    let path = original_file(repo, sha256);
    let bytes = std::fs::read(&path)
        .with_context(|| format!("cannot read the saved original `{}`", path.display()))?;
    if sha256_hex(&bytes) != sha256 {
        bail!(
            "the saved original `{}` is corrupt (its sha256 does not match)",
            path.display()
        );
    }
    Ok(bytes)
}
