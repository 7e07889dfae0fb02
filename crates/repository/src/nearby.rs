//! What lies near a path that names nothing usable, for the hint of its error: the
//! repositories below a directory that hold a model, the run configs in a directory given as
//! one. Bounded walks; unreadable entries are skipped.

use std::path::{Path, PathBuf};

/// Directories looked at for a missing model's repository (a bound on the walk).
pub const NEARBY_LIMIT: usize = 4096;

/// The children and grandchildren of `dir` (hidden ones skipped, at most [`NEARBY_LIMIT`]
/// looked at) that hold `model` where their definition's layout puts models, as paths
/// relative to `dir`, in sorted order.
pub fn repositories_holding(dir: &Path, model: &str) -> Vec<String> {
    let mut candidates = Vec::new();
    for child in subdirectories(dir) {
        if candidates.len() >= NEARBY_LIMIT {
            break;
        }
        let grandchildren = subdirectories(&child);
        candidates.push(child);
        candidates.extend(grandchildren);
    }
    candidates
        .into_iter()
        .take(NEARBY_LIMIT)
        .filter(|candidate| {
            crate::definitions_for(candidate)
                .is_ok_and(|d| candidate.join(d.layout.model_dir(model)).is_dir())
        })
        .filter_map(|candidate| {
            candidate
                .strip_prefix(dir)
                .ok()
                .map(|rel| rel.display().to_string())
        })
        .collect()
}

/// [`repositories_holding`] `model`, from the process's current directory (none when it cannot
/// be read).
pub fn near_current_dir(model: &str) -> Vec<String> {
    std::env::current_dir().map_or_else(|_| Vec::new(), |cwd| repositories_holding(&cwd, model))
}

/// The names of the YAML files directly in `dir`, sorted (at most [`NEARBY_LIMIT`]).
pub fn yaml_files_in(dir: &Path) -> Vec<String> {
    let mut yamls: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|e| e == "yaml"))
        .filter_map(|path| path.file_name()?.to_str().map(str::to_owned))
        .take(NEARBY_LIMIT)
        .collect();
    yamls.sort();
    yamls
}

/// The visible subdirectories of `dir` (at most [`NEARBY_LIMIT`]), sorted.
fn subdirectories(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .map(|entry| entry.path())
        .take(NEARBY_LIMIT)
        .collect();
    dirs.sort();
    dirs
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::{repositories_holding, yaml_files_in};

    #[test]
    fn repositories_two_levels_down_that_hold_the_model_are_found() {
        let dir = tempfile::tempdir().expect("temp dir");
        for repo in ["a", "b/inner", ".hidden", "c/d/too-deep"] {
            fs::create_dir_all(dir.path().join(repo).join("models/m")).expect("dirs");
        }
        fs::create_dir_all(dir.path().join("e/models/other")).expect("dirs");
        assert_eq!(repositories_holding(dir.path(), "m"), ["a", "b/inner"]);
        assert!(repositories_holding(dir.path(), "none").is_empty());
    }

    #[test]
    fn only_yaml_files_directly_in_the_directory_are_listed() {
        let dir = tempfile::tempdir().expect("temp dir");
        for file in ["z.yaml", "a.yaml", "notes.txt", "sub/deep.yaml"] {
            let path = dir.path().join(file);
            fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            fs::write(path, "a: 1\n").expect("file");
        }
        fs::create_dir_all(dir.path().join("dir.yaml")).expect("a directory named .yaml");
        assert_eq!(yaml_files_in(dir.path()), ["a.yaml", "z.yaml"]);
    }
}
