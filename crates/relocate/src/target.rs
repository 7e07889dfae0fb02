//! Choosing and checking the target directory.

use std::fs;
use std::path::{Path, PathBuf};

use crate::RelocateRequest;
use crate::error::{RelocateError, io_err};

/// The target, checked.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// As given (made absolute).
    pub given: PathBuf,
    /// With the symlinks of its existing part resolved (what the link points at).
    pub resolved: PathBuf,
    /// Whether `res` already points at it.
    pub already_relocated: bool,
}

/// Picks the target for `request` and refuses one that cannot hold the output: `/`, inside the
/// repository, an ancestor of `res`, a file, or a non-empty directory `res` does not already
/// point at. The default target moves to a fresh sibling when it is in use.
pub fn choose(repo: &Path, res: &Path, request: &RelocateRequest) -> Result<Chosen, RelocateError> {
    let given = match &request.to {
        Some(to) if to.is_absolute() => to.clone(),
        Some(to) => std::env::current_dir()
            .map_err(io_err("read the working directory", "."))?
            .join(to),
        None => std::env::temp_dir()
            .join("npuprof-res")
            .join(&request.model),
    };
    let chosen = check(repo, res, given.clone())?;
    match chosen {
        Err(reason) if request.to.is_none() && reason == Reason::NotEmpty => {
            let fresh = crate::unique_path(&given.with_file_name(format!(
                "{}-{}",
                request.model,
                npuprof_journal::now_compact()
            )));
            check(repo, res, fresh)?.map_err(|reason| reason.error(&given))
        }
        Err(reason) => Err(reason.error(&given)),
        Ok(chosen) => Ok(chosen),
    }
}

/// Why a target is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    Root,
    InsideRepository,
    AncestorOfRes,
    NotADirectory,
    NotEmpty,
}

impl Reason {
    fn error(self, target: &Path) -> RelocateError {
        let reason = match self {
            Reason::Root => "it is the filesystem root",
            Reason::InsideRepository => {
                "it is inside the repository (the output would be moved into the tree it is moved out of)"
            }
            Reason::AncestorOfRes => {
                "it contains the output directory itself (the symlink would point at its own parent: a cycle)"
            }
            Reason::NotADirectory => "it exists and is not a directory",
            Reason::NotEmpty => {
                "it is a non-empty directory; choose a new or empty one so this run's output is not mixed with other files"
            }
        };
        RelocateError::BadTarget {
            target: target.to_path_buf(),
            reason: reason.to_owned(),
        }
    }
}

fn check(repo: &Path, res: &Path, given: PathBuf) -> Result<Result<Chosen, Reason>, RelocateError> {
    let resolved = resolve(&given)?;
    if resolved.parent().is_none() {
        return Ok(Err(Reason::Root));
    }
    if resolved.starts_with(repo) {
        return Ok(Err(Reason::InsideRepository));
    }
    if res.starts_with(&resolved) {
        return Ok(Err(Reason::AncestorOfRes));
    }
    let already_relocated = fs::symlink_metadata(res).is_ok_and(|m| m.is_symlink())
        && res.canonicalize().ok() == resolved.canonicalize().ok()
        && resolved.is_dir();
    if !already_relocated && let Ok(meta) = fs::metadata(&resolved) {
        if !meta.is_dir() {
            return Ok(Err(Reason::NotADirectory));
        }
        let mut entries = fs::read_dir(&resolved).map_err(io_err("list", &resolved))?;
        if entries.next().is_some() {
            return Ok(Err(Reason::NotEmpty));
        }
    }
    Ok(Ok(Chosen {
        given,
        resolved,
        already_relocated,
    }))
}

/// `target` with what exists of it resolved, so the symlink never depends on the working
/// directory; `..` below the existing part is refused.
fn resolve(target: &Path) -> Result<PathBuf, RelocateError> {
    let mut existing = target;
    let mut tail = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_owned());
                existing = parent;
            }
            _ => break,
        }
    }
    if tail.iter().any(|t| t == "..") || target.ends_with("..") && !target.exists() {
        return Err(RelocateError::BadTarget {
            target: target.to_path_buf(),
            reason: "it contains `..` below its existing part".to_owned(),
        });
    }
    let mut resolved = existing
        .canonicalize()
        .map_err(io_err("resolve", existing))?;
    resolved.extend(tail.iter().rev());
    Ok(resolved)
}
