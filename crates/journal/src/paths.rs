//! Repository confinement: every path the journal touches is a plain relative path that
//! resolves (through any symlinks) to a location inside the repository, outside `.npuprof/`.

use std::path::{Component, Path, PathBuf};

use crate::error::{JournalError, Result};

fn refuse(message: String) -> JournalError {
    JournalError::Confinement(message)
}

/// The journal's own directory, at the repository root.
pub const JOURNAL_DIR: &str = ".npuprof";

/// A repository path resolved against the canonical repository root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The path relative to the canonical repository root (parents resolved, no `.`/`..`).
    pub rel: PathBuf,
    /// `repo.join(rel)`.
    pub abs: PathBuf,
    /// Parent directories of `rel` that do not exist yet, outermost first (relative paths).
    pub missing_dirs: Vec<PathBuf>,
}

/// Checks that `rel` is a plain relative path: not empty, not absolute, no `..`, not inside
/// npuprof's journal directory.
pub fn check_relative(rel: &Path) -> Result<()> {
    let mut normal = rel
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .peekable();
    if normal.peek().is_none() {
        return Err(refuse(format!(
            "`{}` is not a file path inside the repository",
            rel.display()
        )));
    }
    for component in rel.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => {
                return Err(refuse(format!("`{}` contains `..`", rel.display())));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse(format!(
                    "`{}` is absolute; expected a path relative to the repository",
                    rel.display()
                )));
            }
        }
    }
    if normal
        .next()
        .is_some_and(|first| first.as_os_str() == JOURNAL_DIR)
    {
        return Err(refuse(format!(
            "`{}` is inside npuprof's own `{JOURNAL_DIR}/` directory",
            rel.display()
        )));
    }
    Ok(())
}

/// Resolves `rel` without following its last component: the deepest existing ancestor
/// directory is canonicalized and must lie inside `repo` (which must be canonical).
pub fn resolve_entry(repo: &Path, rel: &Path) -> Result<Resolved> {
    check_relative(rel)?;
    let clean: PathBuf = rel
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    let name = clean
        .file_name()
        .ok_or_else(|| refuse(format!("`{}` has no file name", rel.display())))?
        .to_owned();
    let parent = clean.parent().unwrap_or(Path::new(""));
    let mut existing = parent;
    let mut tail = Vec::new();
    while std::fs::metadata(repo.join(existing)).is_err() {
        let Some(up) = existing.parent() else { break };
        tail.push(
            existing
                .file_name()
                .ok_or_else(|| refuse(format!("`{}` has no file name", rel.display())))?
                .to_owned(),
        );
        existing = up;
    }
    tail.reverse();
    let existing_abs = repo.join(existing);
    let canonical = existing_abs.canonicalize().map_err(|err| {
        refuse(format!(
            "cannot resolve `{}`: {err}",
            existing_abs.display()
        ))
    })?;
    let inside = strip_repo(repo, rel, &canonical)?;
    if !canonical.is_dir() {
        return Err(refuse(format!(
            "`{}`: `{}` is not a directory",
            rel.display(),
            existing_abs.display()
        )));
    }
    let mut dir = inside.to_path_buf();
    let mut missing_dirs = Vec::new();
    for part in tail {
        dir.push(part);
        missing_dirs.push(dir.clone());
    }
    let resolved_rel = dir.join(name);
    check_relative(&resolved_rel).map_err(|err| {
        refuse(format!(
            "`{}` resolves to a refused location: {err}",
            rel.display()
        ))
    })?;
    Ok(Resolved {
        abs: repo.join(&resolved_rel),
        rel: resolved_rel,
        missing_dirs,
    })
}

/// `canonical` (the resolution of `rel`) relative to `repo`, or an error saying it escapes.
fn strip_repo<'a>(repo: &Path, rel: &Path, canonical: &'a Path) -> Result<&'a Path> {
    canonical.strip_prefix(repo).map_err(|_| {
        refuse(format!(
            "`{}` resolves to `{}`, outside the repository `{}`",
            rel.display(),
            canonical.display(),
            repo.display()
        ))
    })
}

/// Resolves an existing `rel`, following every symlink; the target must lie inside `repo`.
pub fn resolve_existing(repo: &Path, rel: &Path) -> Result<Resolved> {
    check_relative(rel)?;
    let abs = repo.join(rel);
    let canonical = abs
        .canonicalize()
        .map_err(|err| refuse(format!("cannot read `{}`: {err}", abs.display())))?;
    let inside = strip_repo(repo, rel, &canonical)?;
    check_relative(inside).map_err(|err| {
        refuse(format!(
            "`{}` resolves to a refused location: {err}",
            rel.display()
        ))
    })?;
    Ok(Resolved {
        rel: inside.to_path_buf(),
        abs: canonical,
        missing_dirs: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_checked() {
        assert!(check_relative(Path::new("a/b.py")).is_ok());
        assert!(check_relative(Path::new("./a")).is_ok());
        for bad in [
            "",
            ".",
            "/etc/passwd",
            "a/../b",
            "..",
            ".npuprof/journal.json",
        ] {
            assert!(check_relative(Path::new(bad)).is_err(), "{bad} accepted");
        }
    }
}
