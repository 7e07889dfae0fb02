//! What a launch wrote, told apart from what was there before it: the run directories
//! (`*_ascend_pt`) and rank logs (`log_<rank>.log`) under the target's results directory are
//! listed before the launch and again after it. A run directory is new when it was not there
//! before; a rank log (the launcher overwrites it on every run) when it was not there or its
//! size or modification time changed. A second run of one config on one day writes into the
//! same result directory, so the directory's own time says nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use npuprof_repository::Target;

/// How deep the results directory is searched (`<date>/<case>/<role>_node<i>/prof/<phase>/<run>`
/// is six levels).
const MAX_DEPTH: usize = 8;

/// The run directories and rank logs under a results directory at one moment.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    runs: BTreeSet<PathBuf>,
    logs: BTreeMap<PathBuf, (u64, Option<SystemTime>)>,
}

/// What one launch wrote into its result directory.
#[derive(Debug, Clone, Default)]
pub struct Written {
    /// The result directory (real path) holding the new runs or logs, when there is one.
    pub result_dir: Option<PathBuf>,
    /// The new run directories (real paths), sorted.
    pub runs: Vec<PathBuf>,
    /// The new or rewritten rank logs (real paths), sorted.
    pub logs: Vec<PathBuf>,
}

/// Lists the results directory of `target` (nothing when it does not exist yet).
pub fn list(target: &Target) -> Listing {
    let mut listing = Listing::default();
    walk(&target.repo.join(&target.results.res_dir), 0, &mut listing);
    listing
}

/// What the launch wrote since `before` was listed: the newest result directory of the target
/// and the runs and logs in it that are new.
pub fn written(target: &Target, before: &Listing) -> Written {
    let Some(dir) = target.results.newest(&target.repo) else {
        return Written::default();
    };
    let mut now = Listing::default();
    walk(&dir, 0, &mut now);
    let real = |path: &Path| path.canonicalize().ok();
    let runs: Vec<PathBuf> = now
        .runs
        .iter()
        .filter(|run| !before.runs.contains(*run))
        .filter_map(|run| real(run))
        .collect();
    let logs: Vec<PathBuf> = now
        .logs
        .iter()
        .filter(|(log, stamp)| before.logs.get(*log) != Some(stamp))
        .filter_map(|(log, _)| real(log))
        .collect();
    if runs.is_empty() && logs.is_empty() {
        return Written::default();
    }
    Written {
        result_dir: real(&dir),
        runs,
        logs,
    }
}

fn walk(dir: &Path, depth: usize, listing: &mut Listing) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if kind.is_dir() {
            if name.ends_with("_ascend_pt") {
                listing.runs.insert(path);
            } else {
                walk(&path, depth + 1, listing);
            }
        } else if kind.is_file() && is_rank_log(&name) {
            let stamp = entry
                .metadata()
                .map(|m| (m.len(), m.modified().ok()))
                .unwrap_or_default();
            listing.logs.insert(path, stamp);
        }
    }
}

/// `log_<rank>.log`.
fn is_rank_log(name: &str) -> bool {
    name.strip_prefix("log_")
        .and_then(|rest| rest.strip_suffix(".log"))
        .is_some_and(|rank| !rank.is_empty() && rank.bytes().all(|b| b.is_ascii_digit()))
}
