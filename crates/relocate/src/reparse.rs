//! The offline re-parse that confirms the bad-disk diagnosis: copy a raw `*_ascend_pt` run to
//! local disk and run torch_npu's analyser on the copy.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use npuprof_runs::reparse::{ReparseDir, analyse_command};
use serde::Serialize;

use npuprof_repository::shell::quote as shell_quote;

/// How deep below `res/` raw run directories are searched
/// (`<date>/<run>/prof/<phase>/<worker>_ascend_pt` is 5).
const MAX_DEPTH: usize = 6;

/// Commands to re-parse an existing raw run on local disk.
#[derive(Debug, Clone, Serialize)]
pub struct Reparse {
    /// The newest raw run directory found.
    pub raw_run: PathBuf,
    /// How many raw run directories were found.
    pub raw_runs_found: usize,
    /// Where to copy it.
    pub copy_to: PathBuf,
    /// `mkdir -p ... && cp -r ...`.
    pub copy_command: String,
    /// `python3 -c "import torch_npu; torch_npu.profiler.profiler.analyse('<copy>')"`.
    pub analyse_command: String,
}

impl Reparse {
    /// The commands for `found` (newest raw run, count), copying next to `target`.
    pub fn new(found: &(PathBuf, usize), target: &Path, model: &str) -> Self {
        let (raw_run, count) = found;
        let name = raw_run.file_name().map(PathBuf::from).unwrap_or_default();
        let parent = target
            .parent()
            .unwrap_or(target)
            .join(format!("{model}-reparse"));
        let copy_to = parent.join(name);
        let copy_command = format!(
            "mkdir -p {} && cp -r {} {}",
            shell_quote(&parent.display().to_string()),
            shell_quote(&raw_run.display().to_string()),
            shell_quote(&copy_to.display().to_string())
        );
        Self {
            raw_run: raw_run.clone(),
            raw_runs_found: *count,
            analyse_command: analyse_command(&[ReparseDir::run(&copy_to)]),
            copy_to,
            copy_command,
        }
    }
}

/// The newest (by modification time) `*_ascend_pt` directory under `root`, and how many exist.
pub fn newest_raw_run(root: &Path) -> Option<(PathBuf, usize)> {
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if !file_type.is_dir() {
                continue;
            }
            if entry.file_name().to_string_lossy().ends_with("_ascend_pt") {
                let modified = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                found.push((modified, path));
            } else if depth + 1 < MAX_DEPTH {
                stack.push((path, depth + 1));
            }
        }
    }
    let count = found.len();
    found.into_iter().max().map(|(_, path)| (path, count))
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::Reparse;

    #[test]
    fn quoting_survives_awkward_paths() {
        let raw = (PathBuf::from("/data/run's/w_1_ascend_pt"), 1);
        let reparse = Reparse::new(&raw, Path::new("/tmp/x$y/res"), "m");
        assert_eq!(
            reparse.copy_to,
            Path::new("/tmp/x$y/m-reparse/w_1_ascend_pt")
        );
        assert_eq!(
            reparse.analyse_command,
            r#"python3 -c "import torch_npu; torch_npu.profiler.profiler.analyse('/tmp/x\$y/m-reparse/w_1_ascend_pt')""#
        );
    }
}
