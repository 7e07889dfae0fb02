//! Writing a path-B harness: the entry and output paths confined to the repository, the harness
//! rendered by `npuprof_patch::inject`, and created through one journaled transaction
//! (`npuprof revert` removes it).

use std::path::{Component, Path, PathBuf};

use npuprof_journal::Transaction;
use npuprof_patch::diff::unified_diff;
use npuprof_patch::inject::{
    HarnessOptions, HarnessPhases, InjectError, WindowPlan, Wiring, new_file_diff, render_harness,
    run_argv,
};
use serde::Serialize;

use npuprof_paths::slash;
use npuprof_repository::shell;

use crate::WorkflowError;
use crate::patch::Mode;

/// What to inject.
#[derive(Debug, Clone)]
pub struct InjectRequest<'a> {
    /// The repository, as given.
    pub repo: &'a Path,
    /// The entry script: repository-relative, or a path inside the repository.
    pub entry: &'a Path,
    /// Where to write the harness; `None` is `<entry stem>_profiled.py` next to the entry.
    pub out: Option<&'a Path>,
    /// The phases the harness profiles.
    pub phase: HarnessPhases,
    /// Decode steps to record.
    pub decode_steps: u32,
    /// Add the structure window (`with_modules=True`, short, after the timing windows).
    pub structure: bool,
    /// Dry run or write.
    pub mode: Mode,
}

/// What `inject` rendered (and, in write mode, wrote): `inject --json`.
#[derive(Debug, Serialize)]
pub struct InjectReport {
    /// The repository, as given.
    pub repo: String,
    /// The entry script, repository-relative.
    pub entry: String,
    /// The harness, repository-relative.
    pub harness: String,
    /// The phases it profiles.
    pub phase: HarnessPhases,
    /// Decode steps recorded.
    pub decode_steps: u32,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Whether the harness is new or differs from the file there.
    pub changed: bool,
    /// How to run it (from the repository), shell-quoted: `run_argv` as one line.
    pub run: String,
    /// How to run it, word by word.
    pub run_argv: Vec<String>,
    /// How to undo the change, shell-quoted: `undo_argv` as one line.
    pub undo: String,
    /// How to undo the change, word by word.
    pub undo_argv: Vec<String>,
    /// Where its profiles land (each window in a sub-directory).
    pub save_path: String,
    /// The profilers it runs.
    pub windows: Vec<WindowPlan>,
    /// Where the structure window's profile lands (with `--breakdown`), beside `save_path`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structure_path: Option<String>,
    /// How each user-code function was filled in.
    pub wiring: Vec<Wiring>,
    /// How many of them are stubs to fill in.
    pub stubs: usize,
    /// The diff (dry run only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// A path of the request that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("--{role} `{}`: {reason}", given.display())]
pub struct PathError {
    /// Which path (`entry`, `out`).
    pub role: &'static str,
    /// The path as given.
    pub given: PathBuf,
    /// Why.
    pub reason: String,
    /// Whether it names nothing that exists.
    pub missing: bool,
}

impl PathError {
    fn new(role: &'static str, given: &Path, (reason, missing): (String, bool)) -> Self {
        Self {
            role,
            given: given.to_path_buf(),
            reason,
            missing,
        }
    }
}

/// The harness could not be rendered for the entry.
#[derive(Debug, thiserror::Error)]
#[error("entry `{entry}`")]
pub struct HarnessError {
    /// The entry, repository-relative.
    pub entry: String,
    /// Why.
    #[source]
    pub source: InjectError,
}

/// Renders the harness and, in [`Mode::Write`], creates it (unless it is already there).
pub fn inject(request: &InjectRequest<'_>) -> Result<InjectReport, WorkflowError> {
    if !request.repo.is_dir() {
        return Err(WorkflowError::NotADirectory(request.repo.to_path_buf()));
    }
    let canonical = request
        .repo
        .canonicalize()
        .map_err(|source| WorkflowError::Read {
            path: request.repo.to_path_buf(),
            source,
        })?;
    let repo = canonical.as_path();
    let entry_rel = repo_relative(repo, request.entry, true)
        .map_err(|why| PathError::new("entry", request.entry, why))?;
    let entry_path = repo.join(&entry_rel);
    let entry_source =
        std::fs::read_to_string(&entry_path).map_err(|source| WorkflowError::Read {
            path: entry_path.clone(),
            source,
        })?;
    let out_rel = match request.out {
        Some(out) => {
            repo_relative(repo, out, false).map_err(|why| PathError::new("out", out, why))?
        }
        None => default_harness_path(&entry_rel),
    };
    if out_rel == entry_rel {
        let why = ("it is the entry script itself".to_owned(), false);
        return Err(PathError::new("out", &out_rel, why).into());
    }
    let entry = slash(&entry_rel);
    let harness_path = slash(&out_rel);
    let entry_from_harness =
        npuprof_paths::relative_from(out_rel.parent().unwrap_or(Path::new("")), &entry_rel);
    let options = HarnessOptions {
        phase: request.phase,
        decode_steps: request.decode_steps,
        entry_rel: &entry_from_harness,
        entry_display: &entry,
        harness_display: &harness_path,
        structure: request.structure,
    };
    let harness = render_harness(&entry_source, &options).map_err(|source| HarnessError {
        entry: entry.clone(),
        source,
    })?;

    let dry_run = request.mode == Mode::DryRun;
    let mut tx = if dry_run {
        Transaction::preview(repo, "inject")?
    } else {
        Transaction::begin(repo, "inject")?
    };
    // Refuses before anything is shown or written when the target exists and is not ours.
    tx.create_file(&out_rel, harness.text.clone().into_bytes())?;
    let existing = std::fs::read(repo.join(&out_rel)).ok();
    let changed = existing.as_deref() != Some(harness.text.as_bytes());
    if !dry_run && changed {
        tx.commit()?;
    }
    let diff = dry_run.then(|| match &existing {
        None => new_file_diff(&harness_path, &harness.text),
        Some(old) => unified_diff(&harness_path, &String::from_utf8_lossy(old), &harness.text),
    });
    let save_dir = out_rel
        .parent()
        .map_or_else(|| PathBuf::from("npuprof_prof"), |p| p.join("npuprof_prof"));
    let run_argv = run_argv(&harness_path);
    let repo_given = request.repo.display().to_string();
    let undo_argv = npuprof_journal::revert_argv(request.repo);
    Ok(InjectReport {
        run: shell::join(&run_argv),
        run_argv,
        undo: shell::join(&undo_argv),
        undo_argv,
        repo: repo_given,
        entry,
        harness: harness_path,
        phase: request.phase,
        decode_steps: request.decode_steps,
        dry_run,
        changed,
        structure_path: harness.windows.iter().any(|w| w.with_modules).then(|| {
            slash(
                &save_dir
                    .parent()
                    .unwrap_or(Path::new(""))
                    .join(npuprof_patch::inject::STRUCTURE_DIR),
            )
        }),
        save_path: slash(&save_dir),
        stubs: harness.wiring.iter().filter(|w| !w.wired).count(),
        windows: harness.windows,
        wiring: harness.wiring,
        diff,
    })
}

/// `<dir>/<stem>_profiled.py` next to the entry.
fn default_harness_path(entry_rel: &Path) -> PathBuf {
    let stem = entry_rel
        .file_stem()
        .map_or_else(|| "entry".to_owned(), |s| s.to_string_lossy().into_owned());
    entry_rel.with_file_name(format!("{stem}_profiled.py"))
}

/// A path as a clean repository-relative path: relative paths are taken relative to the
/// repository (or, when `must_exist` and only that exists, to the current directory); absolute
/// paths must lie inside the repository.
fn repo_relative(repo: &Path, given: &Path, must_exist: bool) -> Result<PathBuf, (String, bool)> {
    let candidate = if given.is_absolute() {
        given.to_path_buf()
    } else if !must_exist || repo.join(given).exists() || !given.exists() {
        repo.join(given)
    } else {
        std::env::current_dir()
            .map_err(|e| (format!("cannot read the current directory: {e}"), false))?
            .join(given)
    };
    let parent = candidate.parent().unwrap_or(Path::new("/"));
    let name = candidate
        .file_name()
        .ok_or_else(|| ("the path names no file".to_owned(), false))?;
    let parent = parent.canonicalize().map_err(|e| {
        let reason = format!("the directory `{}` does not exist: {e}", parent.display());
        (reason, true)
    })?;
    let full = parent.join(name);
    if must_exist && !full.is_file() {
        let reason = format!("no such file in the repository `{}`", repo.display());
        return Err((reason, true));
    }
    let rel = full.strip_prefix(repo).map_err(|_| {
        let reason = format!("the path is outside the repository `{}`", repo.display());
        (reason, false)
    })?;
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) || rel.as_os_str().is_empty() {
        return Err(("not a file path inside the repository".to_owned(), false));
    }
    Ok(rel.to_path_buf())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::default_harness_path;

    #[test]
    fn harness_sits_next_to_the_entry() {
        assert_eq!(
            default_harness_path(Path::new("src/infer.py")),
            Path::new("src/infer_profiled.py")
        );
        assert_eq!(
            default_harness_path(Path::new("infer.py")),
            Path::new("infer_profiled.py")
        );
    }
}
