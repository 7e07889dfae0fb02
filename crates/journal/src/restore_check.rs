//! Whether a repository is really back to what it was before npuprof: captured from the
//! journal while it exists, checked against the actual bytes later (after a revert, or after a
//! launched command that may have deleted `.npuprof/` itself).

use std::path::{Path, PathBuf};

use crate::confined::{Kind, Repo};
use crate::error::{Result, io_err};
use crate::model::{self, Change};

/// What one path must look like once everything is restored.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expected {
    /// A regular file with this sha256 (a modified file's original).
    File(String),
    /// Nothing (a created file or directory, a moved item's temporary place).
    Absent,
    /// Something (the moved item is back).
    Present,
    /// Anything but a symlink to this target.
    NotLinkTo(PathBuf),
}

/// The restored state of a repository, captured from its journal.
#[derive(Debug, Clone)]
pub struct RestoreCheck {
    repo: PathBuf,
    expected: Vec<(PathBuf, Expected)>,
}

impl RestoreCheck {
    /// Captures what the repository at `repo` must look like after a revert; `None` when it has
    /// no journal.
    pub fn capture(repo: &Path) -> Result<Option<Self>> {
        let canonical = repo
            .canonicalize()
            .map_err(io_err("open the repository", repo))?;
        let fs = Repo::open(&canonical).map_err(io_err("open the repository", &canonical))?;
        let Some(loaded) = model::load(&fs)? else {
            return Ok(None);
        };
        let mut expected = Vec::new();
        for entry in &loaded.journal.entries {
            let path = entry.path.clone();
            match &entry.change {
                Change::Modified {
                    original_sha256, ..
                } => expected.push((path, Expected::File(original_sha256.clone()))),
                Change::Created { .. } | Change::CreatedDir => {
                    expected.push((path, Expected::Absent));
                }
                Change::Renamed { to } => {
                    expected.push((to.clone(), Expected::Absent));
                    expected.push((path, Expected::Present));
                }
                Change::Symlink { target, .. } => {
                    expected.push((path, Expected::NotLinkTo(target.clone())));
                }
            }
        }
        Ok(Some(Self {
            repo: canonical,
            expected,
        }))
    }

    /// The repository-relative paths whose actual state on disk is not the restored one (empty
    /// when the repository is exactly as before npuprof).
    pub fn unrestored(&self) -> Vec<PathBuf> {
        let Ok(fs) = Repo::open(&self.repo) else {
            return self.expected.iter().map(|(p, _)| p.clone()).collect();
        };
        self.expected
            .iter()
            .filter(|(path, expected)| !holds(&fs, path, expected))
            .map(|(path, _)| path.clone())
            .collect()
    }
}

fn holds(fs: &Repo, path: &Path, expected: &Expected) -> bool {
    let meta = fs.meta(path).ok().flatten();
    match expected {
        Expected::File(sha) => {
            meta.is_some_and(|m| m.kind == Kind::File)
                && fs
                    .read(path)
                    .is_ok_and(|bytes| model::sha256_hex(&bytes) == *sha)
        }
        Expected::Absent => meta.is_none(),
        Expected::Present => meta.is_some(),
        Expected::NotLinkTo(target) => fs.read_link(path).ok().as_ref() != Some(target),
    }
}
