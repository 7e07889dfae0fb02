//! npuprof-relocate: point a model's output directory (the resolved target's result directory,
//! else the repository definition's output directory: `models/<model>/res` in
//! cann-recipes-infer) at a local directory (the fix for output filesystems where torch_npu's
//! parsers fail), revertibly, through the journal.
//!
//! [`relocate`] examines both locations (filesystem, owner, free space, symlinks, a real
//! lock-and-rename probe that leaves nothing behind), refuses targets that cannot hold the output
//! (`/`, inside the repository, an ancestor of `res`, a non-empty directory), and — unless it is a
//! dry run or the target is unsafe — moves `res` aside and puts a symlink in its place in one
//! journaled transaction under the repository lock. `npuprof revert` undoes it; the target
//! directory (outside the repository) is kept.

mod error;
pub mod preflight;
pub mod reparse;
mod target;

use std::fs;
use std::path::{Component, Path, PathBuf};

use npuprof_journal::{RepoLock, Transaction};
use serde::Serialize;

pub use error::RelocateError;
use error::io_err;
pub use preflight::LocationReport;
pub use reparse::Reparse;

/// What to relocate, and where.
#[derive(Debug, Clone)]
pub struct RelocateRequest {
    /// The repository.
    pub repo: PathBuf,
    /// The model directory (under the layout's models directory).
    pub model: String,
    /// The output directory to move, relative to the repository: the resolved target's result
    /// directory when a run config is known; `None`: the repository definition's output
    /// directory of `model`.
    pub output: Option<String>,
    /// The local directory to hold the output; relative to the working directory;
    /// `None`: `$TMPDIR/npuprof-res/<model>` (or a fresh sibling when that one is in use).
    pub to: Option<PathBuf>,
    /// Report what would be done and change nothing.
    pub dry_run: bool,
}

/// What `models/<model>/res` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayoutKind {
    /// It does not exist.
    Missing,
    /// A real directory.
    Directory,
    /// A symlink.
    Symlink,
}

/// What `models/<model>/res` is now.
#[derive(Debug, Clone, Serialize)]
pub struct Layout {
    /// Missing, a directory or a symlink.
    pub kind: LayoutKind,
    /// Number of entries, for a directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entries: Option<usize>,
    /// Where it points, for a symlink.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symlink_target: Option<PathBuf>,
}

/// The kinds of change relocate makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Create the target (outside the journal: kept by revert).
    CreateDir,
    /// Move the current `res` aside.
    MoveAside,
    /// Put a symlink to the target in place of `res`.
    Symlink,
    /// Point `res`, npuprof's symlink from an earlier relocation, at the new target instead
    /// (revert still puts the first original back).
    Relink,
}

impl ActionKind {
    /// How the action reads in human output.
    pub fn describe(self) -> &'static str {
        match self {
            ActionKind::CreateDir => "create dir",
            ActionKind::MoveAside => "move aside",
            ActionKind::Symlink => "symlink",
            ActionKind::Relink => "relink",
        }
    }
}

/// One change relocate makes (or would make, in a dry run).
#[derive(Debug, Clone, Serialize)]
pub struct PlannedAction {
    /// What is done.
    pub action: ActionKind,
    /// The path acted on.
    pub path: PathBuf,
    /// The destination (`move_aside`) or link target (`symlink`, `relink`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<PathBuf>,
}

/// The report of a relocation.
#[derive(Debug, Clone, Serialize)]
pub struct RelocateReport {
    /// The model.
    pub model: String,
    /// The canonical repository.
    pub repo: PathBuf,
    /// The output directory, relative to the repository (`models/<model>/res`).
    pub res: PathBuf,
    /// What the output directory is now (before any change).
    pub layout: Layout,
    /// Pre-flight of the current output location.
    pub current: LocationReport,
    /// Pre-flight of the target directory.
    pub target: LocationReport,
    /// The changes, in order.
    pub actions: Vec<PlannedAction>,
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Whether the changes were made (false in a dry run, or when already relocated).
    pub applied: bool,
    /// Whether `res` already pointed at the target (nothing to do).
    pub already_relocated: bool,
    /// How to confirm the diagnosis on an existing failed run, when one exists.
    pub reparse: Option<Reparse>,
    /// How to undo, shell-quoted: `revert_argv` as one line.
    pub revert_command: String,
    /// How to undo, word by word.
    pub revert_argv: Vec<String>,
}

/// Examines both locations and, unless `request.dry_run` or the target is unsafe, relocates.
pub fn relocate(request: &RelocateRequest) -> Result<RelocateReport, RelocateError> {
    check_model_name(&request.model)?;
    let repo = request
        .repo
        .canonicalize()
        .map_err(io_err("open the repository", &request.repo))?;
    let layout = &npuprof_repository::definitions_for(&repo)?.layout;
    let model_dir = repo.join(layout.model_dir(&request.model));
    if !model_dir.is_dir() {
        return Err(RelocateError::NoModel {
            model: request.model.clone(),
            dir: model_dir,
            repo,
        });
    }
    // One writer at a time, from the first look at `res` to the journaled change.
    let lock = if request.dry_run {
        None
    } else {
        Some(RepoLock::acquire(&repo)?)
    };
    let res_rel = PathBuf::from(
        request
            .output
            .clone()
            .unwrap_or_else(|| layout.output_dir(&request.model)),
    );
    let res_name = res_rel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| RelocateError::BadLayout(res_rel.clone()))?;
    let res = repo.join(&res_rel);
    let layout = layout_of(&res)?;
    let chosen = target::choose(&repo, &res, request)?;
    let mounts = read_mounts().map_err(io_err("read the mount table", "/proc/self/mountinfo"))?;
    // A kill mid-probe inside the repository is cleaned up by the next command, revert included.
    let note = match &lock {
        Some(lock) => lock.note_scratch(&preflight::examined_dir(&res))?,
        None => None,
    };
    let current = preflight::examine(&res, &mounts);
    drop(note);
    let target_report = preflight::examine(&chosen.given, &mounts);

    // `res` is npuprof's symlink from an earlier relocation: pointed at the new target, never
    // moved aside (which would journal a second symlink at the same path).
    let relink = layout.kind == LayoutKind::Symlink
        && Transaction::preview(&repo, "relocate")?.is_own_symlink(&res_rel);
    let move_aside = layout.kind != LayoutKind::Missing && !relink;
    let mut actions = Vec::new();
    let moved_rel = res_rel.with_file_name(format!(
        "{res_name}.npuprof-moved-{}",
        npuprof_journal::now_compact()
    ));
    let moved_rel = unique_path(&repo.join(&moved_rel))
        .strip_prefix(&repo)
        .map_or(moved_rel, Path::to_path_buf);
    if !chosen.already_relocated {
        if !chosen.resolved.is_dir() {
            actions.push(PlannedAction {
                action: ActionKind::CreateDir,
                path: chosen.resolved.clone(),
                to: None,
            });
        }
        if move_aside {
            actions.push(PlannedAction {
                action: ActionKind::MoveAside,
                path: res_rel.clone(),
                to: Some(moved_rel.clone()),
            });
        }
        actions.push(PlannedAction {
            action: if relink {
                ActionKind::Relink
            } else {
                ActionKind::Symlink
            },
            path: res_rel.clone(),
            to: Some(chosen.resolved.clone()),
        });
    }
    let apply = !request.dry_run && !chosen.already_relocated && !target_report.has_errors();
    if apply {
        // The journal is known good (and locked) before anything is made outside the
        // repository; what this relocation made there is removed again when it then fails.
        let mut tx = Transaction::begin(&repo, "relocate")?;
        let made = npuprof_journal::probe::create_dir_outside(&chosen.resolved)
            .map_err(io_err("create", &chosen.resolved))?;
        let changed = (|| {
            if move_aside {
                tx.rename(&res_rel, &moved_rel)?;
            }
            tx.symlink(&res_rel, &chosen.resolved)?;
            tx.commit()
        })();
        if let Err(err) = changed {
            npuprof_journal::probe::remove_made_dirs(&made);
            return Err(err.into());
        }
    }
    let raw_runs_root = match (&layout.symlink_target, apply) {
        (_, true) if move_aside => repo.join(&moved_rel),
        // The earlier target, where the runs before this relocation are.
        (Some(old), true) => res
            .parent()
            .map_or_else(|| old.clone(), |dir| dir.join(old)),
        _ => res,
    };
    let reparse = reparse::newest_raw_run(&raw_runs_root)
        .map(|raw| Reparse::new(&raw, &chosen.resolved, &request.model));
    let revert_argv = npuprof_journal::revert_argv(&repo);
    Ok(RelocateReport {
        model: request.model.clone(),
        revert_command: npuprof_repository::shell::join(&revert_argv),
        revert_argv,
        repo,
        res: res_rel,
        layout,
        current,
        target: target_report,
        actions,
        dry_run: request.dry_run,
        applied: apply,
        already_relocated: chosen.already_relocated,
        reparse,
    })
}

/// `path` (absolute) when nothing is there, else the first free `path-2`, `path-3`, ...: two
/// relocations in the same second get different names.
pub(crate) fn unique_path(path: &Path) -> PathBuf {
    let suffixed = |n: u32| {
        let mut name = path.as_os_str().to_owned();
        name.push(format!("-{n}"));
        PathBuf::from(name)
    };
    std::iter::once(path.to_path_buf())
        .chain((2..).map(suffixed))
        .find(|candidate| fs::symlink_metadata(candidate).is_err())
        .unwrap_or_else(|| path.to_path_buf())
}

fn check_model_name(model: &str) -> Result<(), RelocateError> {
    let mut components = Path::new(model).components();
    match (components.next(), components.next()) {
        (Some(Component::Normal(_)), None) => Ok(()),
        _ => Err(RelocateError::BadModel(model.to_owned())),
    }
}

fn layout_of(res: &Path) -> Result<Layout, RelocateError> {
    let Ok(meta) = fs::symlink_metadata(res) else {
        return Ok(Layout {
            kind: LayoutKind::Missing,
            entries: None,
            symlink_target: None,
        });
    };
    if meta.is_symlink() {
        let target = fs::read_link(res).map_err(io_err("read the symlink", res))?;
        return Ok(Layout {
            kind: LayoutKind::Symlink,
            entries: None,
            symlink_target: Some(target),
        });
    }
    if meta.is_dir() {
        let entries = fs::read_dir(res).map_err(io_err("list", res))?.count();
        return Ok(Layout {
            kind: LayoutKind::Directory,
            entries: Some(entries),
            symlink_target: None,
        });
    }
    Err(RelocateError::BadLayout(res.to_path_buf()))
}

/// Environment variable naming a mountinfo file to read instead of `/proc/self/mountinfo`
/// (for tests that need a deterministic filesystem layout).
pub const MOUNTINFO_ENV: &str = "NPUPROF_MOUNTINFO";

/// This process's mount table (or the one [`MOUNTINFO_ENV`] names), in verify's reading: one
/// mount-table module judges filesystems for both.
fn read_mounts() -> std::io::Result<npuprof_runs::mounts::MountTable> {
    let path = std::env::var_os(MOUNTINFO_ENV)
        .map_or_else(|| PathBuf::from("/proc/self/mountinfo"), PathBuf::from);
    Ok(npuprof_runs::mounts::MountTable::parse(
        &fs::read_to_string(path)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_directory_is_the_resolved_one_else_the_layouts() {
        let repo = tempfile::tempdir().unwrap();
        let local = tempfile::tempdir().unwrap();
        fs::create_dir_all(repo.path().join("models/m/config")).unwrap();
        fs::create_dir_all(repo.path().join("models/m/elsewhere/20260101")).unwrap();
        let request = |output: Option<&str>| RelocateRequest {
            repo: repo.path().to_path_buf(),
            model: "m".to_owned(),
            output: output.map(str::to_owned),
            to: Some(local.path().join("target")),
            dry_run: true,
        };
        let resolved = relocate(&request(Some("models/m/elsewhere"))).unwrap();
        assert_eq!(resolved.res, Path::new("models/m/elsewhere"));
        let moved = resolved
            .actions
            .iter()
            .find(|a| a.action == ActionKind::MoveAside)
            .expect("the resolved directory is moved aside");
        assert!(
            moved.to.as_ref().is_some_and(|to| to
                .to_string_lossy()
                .contains("models/m/elsewhere.npuprof-moved-")),
            "{moved:?}"
        );
        let default = relocate(&request(None)).unwrap();
        assert_eq!(default.res, Path::new("models/m/res"));
        assert_eq!(default.layout.kind, LayoutKind::Missing);
    }

    #[test]
    fn a_taken_name_gets_the_first_free_counter() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("res.npuprof-moved-20261201T120000Z");
        assert_eq!(unique_path(&base), base);
        fs::create_dir(&base).unwrap();
        std::os::unix::fs::symlink(
            "nowhere",
            dir.path().join("res.npuprof-moved-20261201T120000Z-2"),
        )
        .unwrap();
        assert_eq!(
            unique_path(&base),
            dir.path().join("res.npuprof-moved-20261201T120000Z-3")
        );
    }
}
