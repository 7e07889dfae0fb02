//! The one way npuprof changes a repository: a journaled, all-or-nothing transaction.
//!
//! INTERFACE STUB — the journal owner replaces the bodies; the signatures are the contract
//! other commands (patch, inject, relocate, collect) program against.

use std::path::{Path, PathBuf};

/// A set of staged changes to one repository, applied all-or-nothing by [`Transaction::commit`].
#[derive(Debug)]
pub struct Transaction {
    repo: PathBuf,
}

/// What a committed transaction changed.
#[derive(Debug, Default, serde::Serialize)]
pub struct CommitReport {
    /// Repository-relative paths that were written, created or moved.
    pub changed: Vec<PathBuf>,
}

impl Transaction {
    /// Starts a transaction on `repo` for `command` (e.g. "patch"), loading and validating an existing journal.
    pub fn begin(repo: &Path, command: &str) -> anyhow::Result<Self> {
        let _ = command;
        Ok(Self { repo: repo.to_path_buf() })
    }

    /// The current bytes of a repository file (follows the repo-confinement rules).
    pub fn read(&self, rel_path: &Path) -> anyhow::Result<Vec<u8>> {
        Ok(std::fs::read(self.repo.join(rel_path))?)
    }

    /// Stages new content for an existing file; its true original is kept in the journal.
    pub fn write_file(&mut self, rel_path: &Path, new_bytes: Vec<u8>) -> anyhow::Result<()> {
        let _ = (rel_path, new_bytes);
        anyhow::bail!("journal: not implemented yet")
    }

    /// Stages a new file; refuses to overwrite a file npuprof did not create.
    pub fn create_file(&mut self, rel_path: &Path, bytes: Vec<u8>) -> anyhow::Result<()> {
        let _ = (rel_path, bytes);
        anyhow::bail!("journal: not implemented yet")
    }

    /// Applies every staged change atomically and records them in the journal.
    pub fn commit(self) -> anyhow::Result<CommitReport> {
        anyhow::bail!("journal: not implemented yet")
    }
}
