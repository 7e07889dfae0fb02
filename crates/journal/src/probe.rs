//! A lock-and-rename probe of a directory: create a file, lock it exclusively, rename it,
//! remove it — the operations torch_npu's parsers depend on. What a killed probe leaves
//! (`.npuprof-probe-<pid>*`) is removed by the next probe of that directory, and, inside a
//! repository, by the next command when the directory was noted (`RepoLock::note_scratch`).

use std::fs;
use std::io;
use std::path::Path;

use serde::Serialize;

use crate::failpoint;

/// Prefix of the probe's files; the pid follows.
const PROBE_PREFIX: &str = ".npuprof-probe-";

/// The steps of the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeStep {
    /// Creating the probe file.
    Create,
    /// Locking it exclusively.
    Lock,
    /// Renaming it.
    Rename,
    /// Removing it.
    Remove,
}

impl ProbeStep {
    /// The step's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeStep::Create => "create",
            ProbeStep::Lock => "lock",
            ProbeStep::Rename => "rename",
            ProbeStep::Remove => "remove",
        }
    }
}

/// Why the probe failed.
#[derive(Debug)]
pub struct ProbeFailure {
    /// The step that failed.
    pub step: ProbeStep,
    /// Its error.
    pub error: io::Error,
}

/// Probes `dir` (which must exist): `Ok` when every step worked.
pub fn run(dir: &Path) -> Result<(), ProbeFailure> {
    remove_stale(dir);
    let fail = |step| move |error| ProbeFailure { step, error };
    let name = format!("{PROBE_PREFIX}{}", std::process::id());
    let first = dir.join(&name);
    let second = dir.join(format!("{name}.renamed"));
    failpoint::step("probe", &first).map_err(fail(ProbeStep::Create))?;
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&first)
        .map_err(fail(ProbeStep::Create))?;
    let result = match file.try_lock() {
        Err(err) => Err(ProbeFailure {
            step: ProbeStep::Lock,
            error: io::Error::other(err.to_string()),
        }),
        Ok(()) => failpoint::step("probe", &first)
            .and_then(|()| fs::rename(&first, &second))
            .map_err(fail(ProbeStep::Rename)),
    };
    drop(file);
    let removed = failpoint::step("probe", &second)
        .and_then(|()| fs::remove_file(&second).or_else(|_| fs::remove_file(&first)))
        .map_err(fail(ProbeStep::Remove));
    result.and(removed)
}

/// Removes the probe files in `dir` whose process no longer runs.
pub fn remove_stale(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PROBE_PREFIX) else {
            continue;
        };
        let pid = rest.split('.').next().and_then(|p| p.parse::<i32>().ok());
        let alive = pid
            .and_then(rustix::process::Pid::from_raw)
            .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok());
        if !alive {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Creates the directory `path` and its missing parents, outside any repository (a relocation
/// target: revert keeps it). Returns the directories it made, deepest first, for
/// [`remove_made_dirs`] when what they were made for then fails.
pub fn create_dir_outside(path: &Path) -> io::Result<Vec<std::path::PathBuf>> {
    let missing: Vec<std::path::PathBuf> = path
        .ancestors()
        .take_while(|dir| fs::symlink_metadata(dir).is_err())
        .map(Path::to_path_buf)
        .collect();
    failpoint::step("mkdir", path)?;
    if let Err(err) = fs::create_dir_all(path) {
        // A link that resolves to no directory (a loop, a dangling link) makes `create_dir_all`
        // say "File exists": say what it is instead.
        let link = path.ancestors().find(|p| {
            fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) && !p.is_dir()
        });
        return Err(match (err.kind(), link) {
            (io::ErrorKind::AlreadyExists, Some(link)) => io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "`{}` is a symbolic link that resolves to no directory (a loop, or a dangling link)",
                    link.display()
                ),
            ),
            _ => err,
        });
    }
    Ok(missing)
}

/// Removes the directories [`create_dir_outside`] made, deepest first, each only while empty
/// (nothing anyone wrote there is removed); best effort.
pub fn remove_made_dirs(dirs: &[std::path::PathBuf]) {
    for dir in dirs {
        let _ = fs::remove_dir(dir);
    }
}
