//! A repository's layout, from its definition: where models, run configs and results live, how
//! the root is recognised and how a run is launched. Every path npuprof builds in a repository
//! comes from here (a tidy test keeps layout literals out of the code).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::definition::LauncherKind;

/// The working directory of each launcher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LauncherCwd {
    /// When the shared engine runs the model.
    pub shared: String,
    /// When the model's own entry runs it.
    pub model: String,
}

/// The arguments naming an online run's config, by PD role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnlineArgs {
    /// A prefill node.
    pub prefill: Vec<String>,
    /// A decode node.
    pub decode: Vec<String>,
}

/// How a run is launched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LauncherLayout {
    /// The launch script, relative to the repository.
    pub script: String,
    /// The working directory of each launcher (`{model_dir}` is filled in).
    pub cwd: LauncherCwd,
    /// The command (`{script}`: the script from the working directory; `{model}`).
    pub argv: Vec<String>,
    /// What names an offline run's config (`{yaml}`).
    pub offline: Vec<String>,
    /// What names an online run's config (`{yaml}`).
    pub online: OnlineArgs,
    /// Environment variables the launch sets (`{model}` is filled in).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// Where things are in a repository of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    /// Directories that together mark a repository root of this kind.
    pub root_markers: Vec<String>,
    /// The directory holding the model directories.
    pub models: String,
    /// A model's run-config directory, relative to the model's directory.
    pub configs: String,
    /// A model's own Python entry, relative to the model's directory.
    pub model_entry: String,
    /// The results directory under a result base.
    pub results: String,
    /// A run's result directory name (`{model_name}`, `{stem}`).
    pub case: String,
    /// A PD node's results prefix (`{role}`).
    pub role_dir: String,
    /// The output directory relocate moves (`{model_dir}`).
    pub output: String,
    /// The launcher.
    pub launcher: LauncherLayout,
}

/// A run config's place in a scanned tree: `<prefix>/<models>/<model>/<configs>/<yaml>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigPlace<'a> {
    /// The repository holding it, relative to the scanned root (empty for the root itself).
    pub prefix: &'a str,
    /// The model directory.
    pub model: &'a str,
    /// The path under the model's run-config directory (what `--yaml` takes).
    pub yaml: &'a str,
}

/// `a/b` joined, `.` standing for the root.
fn join(a: &str, b: &str) -> String {
    match (a, b) {
        (".", _) | ("", _) => b.to_owned(),
        (_, ".") | (_, "") => a.to_owned(),
        _ => format!("{a}/{b}"),
    }
}

/// Whether `name` is one path component: not empty, no `/`, not `.` or `..`.
pub(crate) fn is_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('/') && name != "." && name != ".."
}

/// Refuses a path template (`key`'s `value`) that could name a place outside the repository:
/// empty, absolute, or with a `..` component. Placeholders (`{model_dir}`) are filled in with
/// names that are checked where they come from.
pub(crate) fn check_relative(key: &str, value: &str) -> Result<(), (String, String)> {
    if value.is_empty() || value.starts_with('/') || value.split('/').any(|c| c == "..") {
        return Err((
            key.to_owned(),
            format!("`{value}` must be a non-empty relative path without `..`"),
        ));
    }
    Ok(())
}

impl Layout {
    /// Checks the layout; the error names the key.
    pub(crate) fn validate(&self) -> Result<(), (String, String)> {
        let bad = |key: &str, why: &str| Err((format!("layout.{key}"), why.to_owned()));
        if self.root_markers.is_empty() {
            return bad("root_markers", "names no marker");
        }
        // A marker is a directory's name: `/` or `..` would make the definition claim every
        // repository (and run its launcher there).
        if let Some(marker) = self.root_markers.iter().find(|m| !is_name(m)) {
            return bad(
                "root_markers",
                &format!("`{marker}` is not a directory name (no `/`, `.` or `..`)"),
            );
        }
        for (key, value) in [
            ("layout.models", &self.models),
            ("layout.configs", &self.configs),
            ("layout.model_entry", &self.model_entry),
            ("layout.results", &self.results),
            ("layout.launcher.script", &self.launcher.script),
            ("layout.launcher.cwd.shared", &self.launcher.cwd.shared),
            ("layout.launcher.cwd.model", &self.launcher.cwd.model),
            ("layout.case", &self.case),
            ("layout.output", &self.output),
        ] {
            check_relative(key, value)?;
        }
        if !self.role_dir.is_empty() {
            check_relative("layout.role_dir", &self.role_dir)?;
        }
        if !self.case.contains("{stem}") {
            return bad("case", "must contain {stem}");
        }
        if !self.output.contains("{model_dir}") {
            return bad("output", "must contain {model_dir}");
        }
        let env_name = |k: &str| {
            k.bytes().next().is_some_and(|b| !b.is_ascii_digit())
                && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        };
        if let Some(bad_name) = self.launcher.env.keys().find(|k| !env_name(k)) {
            return Err((
                format!("layout.launcher.env.{bad_name}"),
                "is not an environment variable name".to_owned(),
            ));
        }
        let names_yaml = |args: &[String]| args.iter().any(|a| a.contains("{yaml}"));
        if !names_yaml(&self.launcher.offline) {
            return bad("launcher.offline", "must name {yaml}");
        }
        if !names_yaml(&self.launcher.online.prefill) || !names_yaml(&self.launcher.online.decode) {
            return bad("launcher.online", "must name {yaml} for each role");
        }
        Ok(())
    }

    /// Whether `dir` holds every root marker.
    pub fn is_root(&self, dir: &Path) -> bool {
        self.root_markers.iter().all(|m| dir.join(m).is_dir())
    }

    /// A model's directory, relative to the repository.
    pub fn model_dir(&self, model: &str) -> String {
        format!("{}/{model}", self.models)
    }

    /// A model's run-config directory, relative to the repository.
    pub fn config_dir(&self, model: &str) -> String {
        format!("{}/{}", self.model_dir(model), self.configs)
    }

    /// A run config's path, relative to the repository.
    pub fn config_path(&self, model: &str, yaml: &str) -> String {
        format!("{}/{yaml}", self.config_dir(model))
    }

    /// A model's own entry, relative to the repository.
    pub fn model_entry_path(&self, model: &str) -> String {
        format!("{}/{}", self.model_dir(model), self.model_entry)
    }

    /// Whether `line` (of a launcher script) names some model's own entry.
    pub fn names_model_entry(&self, line: &str) -> bool {
        line.contains(&format!("{}/", self.models))
            && line.contains(&format!("/{}", self.model_entry))
    }

    /// The output directory relocate moves for `model`, relative to the repository.
    pub fn output_dir(&self, model: &str) -> String {
        self.output.replace("{model_dir}", &self.model_dir(model))
    }

    /// `(repo, model)` when `path` lies under `<repo>/<models>/<model>/<results>/` (the last
    /// such place in it); the repository is `.` when the path starts at the models directory.
    pub fn repo_and_model(&self, path: &Path) -> Option<(PathBuf, String)> {
        let comps: Vec<Component<'_>> = path.components().collect();
        let models: Vec<Component<'_>> = Path::new(&self.models).components().collect();
        let results: Vec<Component<'_>> = Path::new(&self.results).components().collect();
        let span = models.len() + 1 + results.len();
        let at = (0..=comps.len().checked_sub(span)?).rev().find(|&i| {
            comps[i..].starts_with(&models) && comps[i + models.len() + 1..].starts_with(&results)
        })?;
        let repo: PathBuf = comps[..at].iter().collect();
        let repo = if repo.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            repo
        };
        let model = comps[at + models.len()].as_os_str().to_string_lossy();
        Some((repo, model.into_owned()))
    }

    /// The results directory under the model's directory.
    pub fn model_results(&self, model: &str) -> String {
        join(&self.model_dir(model), &self.results)
    }

    /// The results directory under a launch's working directory.
    pub fn working_dir_results(&self, cwd: &str) -> String {
        join(cwd, &self.results)
    }

    /// The case name of a run (`model_name`, the run config's file name without extension).
    pub fn case_name(&self, model_name: &str, yaml: &str) -> String {
        let base = yaml.rsplit('/').next().unwrap_or(yaml);
        let stem = base.rsplit_once('.').map_or(base, |(s, _)| s);
        self.case
            .replace("{model_name}", model_name)
            .replace("{stem}", stem)
    }

    /// The results prefix of a PD node of `role`.
    pub fn role_prefix(&self, role: &str) -> String {
        self.role_dir.replace("{role}", role)
    }

    /// The working directory of `launcher` for `model`, relative to the repository.
    pub fn launch_cwd(&self, launcher: LauncherKind, model: &str) -> String {
        let cwd = match launcher {
            LauncherKind::Shared => &self.launcher.cwd.shared,
            LauncherKind::Model => &self.launcher.cwd.model,
        };
        cwd.replace("{model_dir}", &self.model_dir(model))
    }

    /// The environment the launch of `model` sets.
    pub fn launch_env(&self, model: &str) -> BTreeMap<String, String> {
        self.launcher
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.replace("{model}", model)))
            .collect()
    }

    /// The launch command from `cwd`: the script reached from there, the model and the run
    /// config's arguments (`role`: an online run's PD role).
    pub fn launch_argv(
        &self,
        cwd: &str,
        model: &str,
        yaml: &str,
        role: Option<&str>,
    ) -> Vec<String> {
        let up = cwd
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .map(|_| "..")
            .collect::<Vec<_>>();
        let script = if up.is_empty() {
            self.launcher.script.clone()
        } else {
            format!("{}/{}", up.join("/"), self.launcher.script)
        };
        let named = match role {
            None => &self.launcher.offline,
            Some("prefill") => &self.launcher.online.prefill,
            Some(_) => &self.launcher.online.decode,
        };
        self.launcher
            .argv
            .iter()
            .chain(named)
            .map(|a| {
                a.replace("{script}", &script)
                    .replace("{model}", model)
                    .replace("{yaml}", yaml)
            })
            .collect()
    }

    /// The place of a run config path `rel` (`/`-separated, relative to a scanned root), when it
    /// lies in some repository's `<models>/<model>/<configs>/` (the last such match).
    pub fn place_of<'a>(&self, rel: &'a str) -> Option<ConfigPlace<'a>> {
        let models: Vec<&str> = self.models.split('/').collect();
        let configs: Vec<&str> = self.configs.split('/').collect();
        let parts: Vec<&str> = rel.split('/').collect();
        let mut found = None;
        let mut offset = 0;
        for i in 0..parts.len() {
            let rest = &parts[i..];
            let after_models = models.len();
            let after_configs = after_models + 1 + configs.len();
            if rest.len() > after_configs
                && rest[..after_models] == models[..]
                && !rest[after_models].is_empty()
                && rest[after_models + 1..after_configs] == configs[..]
            {
                let yaml_at = offset
                    + rest[..after_configs]
                        .iter()
                        .map(|p| p.len() + 1)
                        .sum::<usize>();
                let yaml = &rel[yaml_at..];
                if !yaml.is_empty() {
                    found = Some(ConfigPlace {
                        prefix: rel[..offset].trim_end_matches('/'),
                        model: rest[after_models],
                        yaml,
                    });
                }
            }
            offset += parts[i].len() + 1;
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::Definitions;
    use crate::resolve::Launch;

    #[test]
    fn the_launch_sets_the_definitions_environment() {
        let text = crate::catalog::BUILTIN[0]
            .1
            .replace("    env: {}", "    env: { ASCEND_LOG: \"{model} log\" }");
        assert_ne!(text, crate::catalog::BUILTIN[0].1);
        let layout = Definitions::parse(&text).unwrap().layout;
        let env = layout.launch_env("m");
        assert_eq!(
            env,
            BTreeMap::from([("ASCEND_LOG".to_owned(), "m log".to_owned())])
        );
        let launch = Launch {
            cwd: "models/m".to_owned(),
            argv: vec!["bash".to_owned(), "x.sh".to_owned()],
            env,
        };
        assert_eq!(
            launch.command_line(),
            "cd models/m && ASCEND_LOG='m log' bash x.sh"
        );
        let bad = text.replace("ASCEND_LOG", "1X");
        assert_eq!(
            Definitions::parse(&bad).unwrap_err().0,
            "layout.launcher.env.1X"
        );
    }

    #[test]
    fn a_result_path_names_its_repository_and_model_by_the_layout() {
        use std::path::{Path, PathBuf};
        let layout = &Definitions::builtin().layout;
        let p = Path::new("/r/models/qwen/res/20260101/qwen_dense/prof/decode");
        assert_eq!(
            layout.repo_and_model(p),
            Some((PathBuf::from("/r"), "qwen".to_owned()))
        );
        assert_eq!(layout.repo_and_model(Path::new("/tmp/x")), None);
        assert_eq!(
            layout.repo_and_model(Path::new("models/m/res/d")),
            Some((PathBuf::from("."), "m".to_owned()))
        );
        assert_eq!(
            layout.repo_and_model(Path::new("models/m/res")),
            Some((PathBuf::from("."), "m".to_owned()))
        );
        assert_eq!(layout.repo_and_model(Path::new("models/m")), None);
        let mut renamed = layout.clone();
        renamed.models = "src/recipes".to_owned();
        renamed.results = "out".to_owned();
        assert_eq!(
            renamed.repo_and_model(Path::new("/r/src/recipes/m/out/20260101/c")),
            Some((PathBuf::from("/r"), "m".to_owned()))
        );
        assert_eq!(renamed.repo_and_model(p), None, "not this layout's place");
    }

    #[test]
    fn a_config_path_is_split_at_the_last_models_config_pair() {
        let layout = &Definitions::builtin().layout;
        let place = layout
            .place_of("vendor/repo/models/m/config/sub/a.yaml")
            .expect("a place");
        assert_eq!(
            (place.prefix, place.model, place.yaml),
            ("vendor/repo", "m", "sub/a.yaml")
        );
        let root = layout.place_of("models/m/config/a.yaml").expect("a place");
        assert_eq!((root.prefix, root.model, root.yaml), ("", "m", "a.yaml"));
        assert!(layout.place_of("models/m/other/a.yaml").is_none());
        assert!(layout.place_of("models/m/config/").is_none());
    }

    #[test]
    fn the_script_is_reached_from_the_working_directory() {
        let layout = &Definitions::builtin().layout;
        assert_eq!(
            layout
                .launch_argv("models/m", "m", "a.yaml", None)
                .join(" "),
            "bash ../../executor/scripts/infer.sh --model m --yaml a.yaml"
        );
        assert_eq!(
            layout
                .launch_argv(".", "m", "d.yaml", Some("decode"))
                .join(" "),
            "bash executor/scripts/infer.sh --model m --mode online --pd-role decode --d-yaml-name d.yaml"
        );
    }
}
