//! What the command line named: the repository (`--repo`, else the one holding the run config,
//! else the one holding the current directory) and a run config given as a path (`--config`),
//! as the model and file name the layout gives it.

use std::path::{Component, Path, PathBuf};

use crate::catalog::{definitions_for, find_root};
use crate::error::TargetError;

/// The repository a command works in: `repo` when given (made absolute), else the repository
/// holding `config` (when that file exists), else the one holding `cwd`, else `cwd` itself.
pub fn repository_root(
    repo: Option<&Path>,
    config: Option<&Path>,
    cwd: &Path,
) -> Result<PathBuf, TargetError> {
    if let Some(repo) = repo {
        return repo.canonicalize().map_err(|source| TargetError::Open {
            what: "repository",
            path: repo.to_path_buf(),
            source,
        });
    }
    let holding_config = match config.and_then(|config| cwd.join(config).canonicalize().ok()) {
        Some(config) => config.parent().map(find_root).transpose()?.flatten(),
        None => None,
    };
    let root = match holding_config {
        Some(root) => Some(root),
        None => find_root(cwd)?,
    };
    Ok(root.unwrap_or_else(|| cwd.to_path_buf()))
}

/// The model and file name of the run config at `config` (`<models>/<M>/<configs>/<FILE>` in the
/// layout of `repo`): the path is taken from `cwd` when it names a file there, else from the
/// repository.
pub fn split_config(
    repo: &Path,
    config: &Path,
    cwd: &Path,
) -> Result<(String, String), TargetError> {
    let from_cwd = cwd.join(config);
    let in_repo = repo.join(config);
    let path = if config.is_relative() && !from_cwd.exists() && in_repo.exists() {
        in_repo
    } else {
        from_cwd
    };
    let abs = path.canonicalize().map_err(|source| TargetError::Open {
        what: "run config",
        path: config.to_path_buf(),
        source,
    })?;
    let layout = &definitions_for(repo)?.layout;
    if abs.is_dir() {
        return Err(TargetError::ConfigIsADirectory {
            yamls: crate::nearby::yaml_files_in(&abs),
            config: config.to_path_buf(),
            config_dir: layout.config_dir("<model>"),
        });
    }
    let rel = abs
        .strip_prefix(repo)
        .map_err(|_| TargetError::ConfigOutsideRepository {
            config: abs.clone(),
            repo: repo.to_path_buf(),
        })?;
    let parts: Vec<&str> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => p.to_str(),
            _ => None,
        })
        .collect();
    match layout.place_of(&parts.join("/")) {
        Some(place) if place.prefix.is_empty() => {
            Ok((place.model.to_owned(), place.yaml.to_owned()))
        }
        // In a model's directory but outside its run configs (qwen3_5's `benchmark/`): named
        // relative to the config directory, so that resolving it says what `--model M --yaml
        // ../…` says (which launcher runs it, and why decode may never run there).
        _ if let Some((model, yaml)) = beside_configs(layout, &parts) => Ok((model, yaml)),
        _ => Err(TargetError::ConfigNotInLayout {
            config: rel.to_path_buf(),
            models: layout.models.clone(),
            configs: layout.configs.clone(),
        }),
    }
}

/// `(model, ../<path>)` for a file `<models>/<M>/<path>` of a model's directory that is not
/// under its `<configs>/`.
fn beside_configs(layout: &crate::layout::Layout, parts: &[&str]) -> Option<(String, String)> {
    let models: Vec<&str> = layout.models.split('/').collect();
    let rest = parts.strip_prefix(models.as_slice())?;
    let [model, inside @ ..] = rest else {
        return None;
    };
    if inside.is_empty() {
        return None;
    }
    let up = "../".repeat(layout.configs.split('/').count());
    Some(((*model).to_owned(), format!("{up}{}", inside.join("/"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recipes-style repository with one model's run configs; returns its (canonical) root.
    fn repository(dir: &Path) -> PathBuf {
        let config = dir.join("models/m/config");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::create_dir_all(dir.join("executor")).unwrap();
        std::fs::write(config.join("a.yaml"), "x: 1\n").unwrap();
        std::fs::write(config.join("b.yaml"), "x: 2\n").unwrap();
        std::fs::write(dir.join("notes.yaml"), "x: 3\n").unwrap();
        dir.canonicalize().unwrap()
    }

    #[test]
    fn a_config_path_is_read_from_the_current_directory_else_from_the_repository() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = repository(tmp.path());
        let want = ("m".to_owned(), "a.yaml".to_owned());
        let rel = Path::new("models/m/config/a.yaml");
        assert_eq!(split_config(&repo, rel, &repo).unwrap(), want);
        // From a directory that has no such path, the repository's is taken.
        let elsewhere = tempfile::tempdir().unwrap();
        assert_eq!(split_config(&repo, rel, elsewhere.path()).unwrap(), want);
        // From inside the config directory, the short path is the same file.
        let inside = repo.join("models/m/config");
        assert_eq!(
            split_config(&repo, Path::new("a.yaml"), &inside).unwrap(),
            want
        );
        assert_eq!(
            split_config(&repo, &repo.join(rel), elsewhere.path()).unwrap(),
            want
        );
    }

    #[test]
    fn a_config_that_is_no_run_config_is_refused_with_its_reason() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = repository(tmp.path());
        let missing = split_config(&repo, Path::new("models/m/config/c.yaml"), &repo).unwrap_err();
        assert!(
            matches!(&missing, TargetError::Open { what: "run config", source, .. }
                if source.kind() == std::io::ErrorKind::NotFound),
            "{missing:?}"
        );
        match split_config(&repo, Path::new("models/m/config"), &repo).unwrap_err() {
            TargetError::ConfigIsADirectory {
                yamls, config_dir, ..
            } => {
                assert_eq!(yamls, ["a.yaml", "b.yaml"]);
                assert_eq!(config_dir, "models/<model>/config");
            }
            other => panic!("{other:?}"),
        }
        let stray = split_config(&repo, Path::new("notes.yaml"), &repo).unwrap_err();
        assert!(
            matches!(&stray, TargetError::ConfigNotInLayout { config, .. } if config == Path::new("notes.yaml")),
            "{stray:?}"
        );
        // In a model's directory beside its configs (qwen3_5's benchmark YAML): named from the
        // config directory, so that resolving it refuses it with its own launcher and budget.
        std::fs::create_dir_all(repo.join("models/m/benchmark")).unwrap();
        std::fs::write(repo.join("models/m/benchmark/mmlu.yaml"), "x: 4\n").unwrap();
        std::fs::write(repo.join("models/m/top.yaml"), "x: 5\n").unwrap();
        for (path, yaml) in [
            ("models/m/benchmark/mmlu.yaml", "../benchmark/mmlu.yaml"),
            ("models/m/top.yaml", "../top.yaml"),
        ] {
            assert_eq!(
                split_config(&repo, Path::new(path), &repo).unwrap(),
                ("m".to_owned(), yaml.to_owned())
            );
        }
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("x.yaml"), "x: 1\n").unwrap();
        let outside = split_config(&repo, &other.path().join("x.yaml"), &repo).unwrap_err();
        assert!(
            matches!(outside, TargetError::ConfigOutsideRepository { .. }),
            "{outside:?}"
        );
    }

    #[test]
    fn the_repository_is_the_named_one_else_the_one_holding_the_config_else_the_current_one() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = repository(&tmp.path().join("recipes"));
        let plain = tmp.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        let plain = plain.canonicalize().unwrap();
        let config = repo.join("models/m/config/a.yaml");
        assert_eq!(repository_root(Some(&repo), None, &plain).unwrap(), repo);
        assert_eq!(repository_root(None, Some(&config), &plain).unwrap(), repo);
        assert_eq!(
            repository_root(None, None, &repo.join("models/m")).unwrap(),
            repo
        );
        // No repository above: the current directory, also for a config that does not exist.
        assert_eq!(
            repository_root(None, Some(Path::new("nope.yaml")), &plain).unwrap(),
            plain
        );
        let missing = repository_root(Some(&tmp.path().join("nope")), None, &plain).unwrap_err();
        assert!(
            matches!(
                missing,
                TargetError::Open {
                    what: "repository",
                    ..
                }
            ),
            "{missing:?}"
        );
    }
}
