//! Finding run directories under a path, and what kind of path it is.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::VerifyError;
use crate::probe::FileProblem;

/// How deep a plain directory tree is searched for run directories.
const MAX_WALK_DEPTH: usize = 8;

/// What the verified path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetKind {
    /// A recipes result directory (`log_*.log`, `prof/<phase>/` or `<phase>/prof/`).
    ResultDir,
    /// A phase directory (`prof/decode/`) holding run directories.
    PhaseDir,
    /// A single `*_ascend_pt` run directory.
    RunDir,
    /// Any other directory: run directories found below it.
    Tree,
}

/// One run directory found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRef {
    /// The run directory.
    pub dir: PathBuf,
    /// `prefill`, `decode` (or another phase directory name), when known.
    pub phase: Option<String>,
}

/// The discovered layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// What the path is.
    pub kind: TargetKind,
    /// The path as given.
    pub root: PathBuf,
    /// Phase directories present (result directories only), in name order.
    pub phases_present: Vec<String>,
    /// Run directories, sorted by path.
    pub runs: Vec<RunRef>,
    /// `log_<rank>.log` files of a result directory, sorted by rank.
    pub rank_logs: Vec<(u32, PathBuf)>,
    /// Directories below the path that exist but could not be listed (run directories may
    /// hide in them): reported as unreadable, never as missing.
    pub unreadable: Vec<(PathBuf, FileProblem)>,
    /// Whether phases are filed as `<phase>/prof/` (a model's own loop, e.g. glm_5_2) rather
    /// than the engine's `prof/<phase>/`.
    pub phase_first: bool,
}

impl Target {
    /// Where phase `phase` is (or should be) under a result directory.
    pub fn phase_dir(&self, phase: &str) -> PathBuf {
        if self.phase_first {
            self.root.join(phase).join("prof")
        } else {
            self.root.join("prof").join(phase)
        }
    }

    /// The directory holding every phase of a result directory (re-parse covers it whole).
    pub fn profile_dir(&self) -> PathBuf {
        if self.phase_first {
            self.root.clone()
        } else {
            self.root.join("prof")
        }
    }

    /// `phase_dir` relative to the result directory, for messages (`prof/decode/`).
    pub fn phase_path(&self, phase: &str) -> String {
        if self.phase_first {
            format!("{phase}/prof/")
        } else {
            format!("prof/{phase}/")
        }
    }
}

/// Whether `dir` looks like a torch_npu run directory.
pub fn is_run_dir(dir: &Path) -> bool {
    if dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with("_ascend_pt"))
    {
        return true;
    }
    if dir.join("ASCEND_PROFILER_OUTPUT").is_dir() {
        return true;
    }
    list_dir(dir).iter().any(|p| {
        p.is_file()
            && p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("profiler_info") && n.ends_with(".json"))
    })
}

fn list_dir(dir: &Path) -> Vec<PathBuf> {
    try_list_dir(dir).unwrap_or_default()
}

fn try_list_dir(dir: &Path) -> Result<Vec<PathBuf>, FileProblem> {
    let rd = std::fs::read_dir(dir).map_err(|e| FileProblem::from_io(&e))?;
    let mut out: Vec<PathBuf> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
    out.sort();
    Ok(out)
}

/// Lists `dir`, recording it in `unreadable` when it exists but cannot be listed.
fn list_or_record(dir: &Path, unreadable: &mut Vec<(PathBuf, FileProblem)>) -> Vec<PathBuf> {
    match try_list_dir(dir) {
        Ok(entries) => entries,
        Err(FileProblem::Missing) => Vec::new(),
        Err(problem) => {
            unreadable.push((dir.to_path_buf(), problem));
            Vec::new()
        }
    }
}

fn rank_log(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix("log_")?
        .strip_suffix(".log")?
        .parse()
        .ok()
}

fn phase_name(dir: &Path) -> Option<String> {
    dir.file_name().and_then(|n| n.to_str()).map(str::to_owned)
}

fn is_known_phase(name: &str) -> bool {
    npuprof_schedule::Phase::from_name(name).is_some()
}

fn walk(
    dir: &Path,
    depth: usize,
    out: &mut Vec<RunRef>,
    unreadable: &mut Vec<(PathBuf, FileProblem)>,
) {
    if depth > MAX_WALK_DEPTH {
        return;
    }
    for child in list_or_record(dir, unreadable) {
        if !child.is_dir() || child.is_symlink() {
            continue;
        }
        if is_run_dir(&child) {
            let phase = dir
                .file_name()
                .and_then(|n| n.to_str())
                .filter(|n| is_known_phase(n))
                .map(str::to_owned);
            out.push(RunRef { dir: child, phase });
        } else {
            walk(&child, depth + 1, out, unreadable);
        }
    }
}

/// Discovers run directories under `path`.
pub fn discover(path: &Path) -> Result<Target, VerifyError> {
    if !path.exists() {
        return Err(VerifyError::PathNotFound(path.to_path_buf()));
    }
    if !path.is_dir() {
        return Err(VerifyError::NotADirectory(path.to_path_buf()));
    }
    if let Err(FileProblem::Unreadable { message, .. }) = try_list_dir(path) {
        return Err(VerifyError::Unreadable(path.to_path_buf(), message));
    }
    let root = path.to_path_buf();
    let mut unreadable = Vec::new();
    if is_run_dir(path) {
        let phase = path
            .parent()
            .and_then(phase_name)
            .filter(|n| is_known_phase(n));
        return Ok(Target {
            kind: TargetKind::RunDir,
            root: root.clone(),
            phases_present: Vec::new(),
            runs: vec![RunRef { dir: root, phase }],
            rank_logs: Vec::new(),
            unreadable,
            phase_first: false,
        });
    }
    let entries = list_dir(path);
    let mut rank_logs: Vec<(u32, PathBuf)> = entries
        .iter()
        .filter(|p| p.is_file())
        .filter_map(|p| rank_log(p).map(|r| (r, p.clone())))
        .collect();
    rank_logs.sort();
    let prof = path.join("prof");
    let phase_first: Vec<PathBuf> = ["prefill", "decode"]
        .into_iter()
        .map(|phase| path.join(phase))
        .filter(|dir| dir.join("prof").is_dir())
        .collect();
    if prof.is_dir() || !rank_logs.is_empty() || !phase_first.is_empty() {
        let mut phases_present = Vec::new();
        let mut runs = Vec::new();
        for phase_dir in &phase_first {
            let Some(name) = phase_name(phase_dir) else {
                continue;
            };
            let before = runs.len();
            walk(&phase_dir.join("prof"), 0, &mut runs, &mut unreadable);
            for run in &mut runs[before..] {
                run.phase = Some(name.clone());
            }
            phases_present.push(name);
        }
        let engine_layout = if phase_first.is_empty() {
            list_or_record(&prof, &mut unreadable)
        } else {
            Vec::new()
        };
        for phase_dir in engine_layout.into_iter().filter(|p| p.is_dir()) {
            let Some(name) = phase_name(&phase_dir) else {
                continue;
            };
            if is_run_dir(&phase_dir) {
                // A run directory written straight into prof/.
                runs.push(RunRef {
                    dir: phase_dir,
                    phase: None,
                });
                continue;
            }
            let before = runs.len();
            walk(&phase_dir, 0, &mut runs, &mut unreadable);
            for run in &mut runs[before..] {
                run.phase = Some(name.clone());
            }
            phases_present.push(name);
        }
        return Ok(Target {
            kind: TargetKind::ResultDir,
            root,
            phases_present,
            runs,
            rank_logs,
            unreadable,
            phase_first: !phase_first.is_empty(),
        });
    }
    let mut runs = Vec::new();
    walk(path, 0, &mut runs, &mut unreadable);
    let kind = if path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(is_known_phase)
        && runs.iter().all(|r| r.dir.parent() == Some(path))
    {
        TargetKind::PhaseDir
    } else {
        TargetKind::Tree
    };
    if runs.is_empty() && unreadable.is_empty() {
        return Err(VerifyError::NoRunDirectory(path.to_path_buf()));
    }
    Ok(Target {
        kind,
        root,
        phases_present: Vec::new(),
        runs,
        rank_logs,
        unreadable,
        phase_first: false,
    })
}
