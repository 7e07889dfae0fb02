//! Why a target could not be resolved.

use std::path::PathBuf;

/// Why a target could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The model directory does not exist.
    #[error("no model `{model}` under {models}/ in `{repo}`{hint}")]
    UnknownModel {
        /// The repository.
        repo: PathBuf,
        /// The directory holding the models, relative to the repository.
        models: String,
        /// The model asked for.
        model: String,
        /// `; did you mean …` or the list of models.
        hint: String,
        /// The directories near the current one that hold the model ([`crate::nearby`]).
        nearby: Box<[String]>,
    },
    /// The model has no run-config directory (and is not profiled by hand).
    #[error("no model `{model}` with a {configs}/ directory under {models}/ in `{repo}`")]
    NoConfigs {
        /// The repository.
        repo: PathBuf,
        /// The model asked for.
        model: String,
        /// The directory holding the models, relative to the repository.
        models: String,
        /// The run-config directory's name under a model.
        configs: String,
        /// The directories near the current one that hold the model ([`crate::nearby`]).
        nearby: Box<[String]>,
    },
    /// The run config does not exist.
    #[error("no run config `{path}`{hint}")]
    UnknownConfig {
        /// The path tried, relative to the repository.
        path: String,
        /// `; did you mean …` or the model's configs.
        hint: String,
    },
    /// The run config lies outside the model's run-config directory: not one the launcher's
    /// `--yaml` runs.
    #[error(
        "`{path}` is outside {}/, so {} --yaml does not run it{launchers}; npuprof resolves, plans and patches only run configs under {}/{why}",
        .places.config_dir, .places.launcher, .places.configs
    )]
    OutsideConfig {
        /// The config, relative to the repository (normalised).
        path: String,
        /// Where the layout keeps run configs and what launches them.
        places: Box<ConfigPlaces>,
        /// ` (its own launcher: …)` when scripts sit beside it, else empty.
        launchers: String,
        /// `; …: decode never runs` when its budget buys no decode, else empty.
        why: String,
    },
    /// The repository or run config the command line named cannot be opened.
    #[error("cannot open the {what} `{}`: {source}", .path.display())]
    Open {
        /// `repository` or `run config`.
        what: &'static str,
        /// The path as given.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The run config the command line named is a directory.
    #[error("the run config `{}` is a directory, not a YAML file", .config.display())]
    ConfigIsADirectory {
        /// The path as given.
        config: PathBuf,
        /// The YAML files directly in it, sorted (at most a screenful).
        yamls: Vec<String>,
        /// Where the layout keeps run configs (`models/<model>/config`).
        config_dir: String,
    },
    /// The run config the command line named is outside the repository.
    #[error("the run config `{}` is outside the repository `{}`", .config.display(), .repo.display())]
    ConfigOutsideRepository {
        /// The run config (absolute).
        config: PathBuf,
        /// The repository.
        repo: PathBuf,
    },
    /// The run config the command line named is not where the layout keeps run configs.
    #[error("the run config `{}` is not under {models}/<model>/{configs}/ (use --model and --yaml)", .config.display())]
    ConfigNotInLayout {
        /// The run config, relative to the repository.
        config: PathBuf,
        /// The directory holding the models.
        models: String,
        /// The run-config directory's name under a model.
        configs: String,
    },
    /// A file could not be read.
    #[error("cannot read `{path}`: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The run config is not valid YAML.
    #[error("the run config is not valid YAML: {0}")]
    Yaml(String),
    /// The token budget is written so that the engine reads no count from it (see
    /// [`crate::config::budget`]).
    #[error("{0}")]
    Budget(crate::config::BudgetError),
    /// A Python file has a syntax error.
    #[error("`{path}` has a syntax error at line {line}")]
    PythonSyntax {
        /// The file, relative to the repository.
        path: String,
        /// 1-based line.
        line: usize,
    },
    /// The profiler code has a shape npuprof cannot use.
    #[error("{0}")]
    Shape(String),
    /// A repository definition file cannot be used.
    #[error(transparent)]
    Definitions(#[from] crate::catalog::DefinitionError),
}

impl npuprof_severity::Classify for TargetError {
    /// A model or run config that is not there is not found (a missing model's hint names the
    /// repositories nearby that hold it); a run config that is a directory, not YAML or Python
    /// with a syntax error is invalid input (a directory's hint names its YAML files); the other
    /// target errors are decided by their causes.
    fn classify(&self) -> Option<npuprof_severity::Classified> {
        use npuprof_severity::{Classified, ErrorCode};
        match self {
            TargetError::UnknownModel {
                models,
                model,
                nearby,
                ..
            }
            | TargetError::NoConfigs {
                models,
                model,
                nearby,
                ..
            } => Some(Classified::hinted(
                ErrorCode::NotFound,
                missing_model_hint(&format!("{models}/{model}"), nearby),
            )),
            TargetError::UnknownConfig { .. } => Some(Classified::new(ErrorCode::NotFound)),
            TargetError::Open { source, .. } => Some(Classified::of_io(source)),
            TargetError::ConfigIsADirectory {
                yamls, config_dir, ..
            } => Some(Classified::hinted(
                ErrorCode::InvalidInput,
                if yamls.is_empty() {
                    format!("give one YAML file under {config_dir}/")
                } else {
                    format!("give one YAML file in it: {}", yamls.join(", "))
                },
            )),
            TargetError::ConfigOutsideRepository { .. }
            | TargetError::ConfigNotInLayout { .. }
            | TargetError::Definitions(_)
            | TargetError::Yaml(_)
            | TargetError::Budget(_)
            | TargetError::PythonSyntax { .. } => Some(Classified::new(ErrorCode::InvalidInput)),
            _ => None,
        }
    }
}

/// The hint for a model directory (`models/<model>`) that is not in the repository: `--repo`,
/// with the directories nearby that hold it.
fn missing_model_hint(model_dir: &str, nearby: &[String]) -> String {
    if nearby.is_empty() {
        format!(
            "pass --repo DIR, the repository that holds {model_dir} (no directory up to two \
             levels below the current one holds it)"
        )
    } else {
        let list: Vec<String> = nearby.iter().map(|dir| format!("--repo {dir}")).collect();
        format!(
            "pass --repo DIR, the repository that holds {model_dir}; nearby: {}",
            list.join(", ")
        )
    }
}

/// Where a repository's layout keeps a model's run configs, and what launches them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigPlaces {
    /// The model's run-config directory, relative to the repository.
    pub config_dir: String,
    /// The launch script's file name.
    pub launcher: String,
    /// The run-config directory's name under a model.
    pub configs: String,
}

#[cfg(test)]
mod tests {
    use npuprof_severity::{Classify, ErrorCode};

    use super::TargetError;

    fn hint(err: &TargetError) -> (ErrorCode, String) {
        let classified = err.classify().expect("a target error that knows its code");
        (
            classified.code,
            classified.hint.expect("a hint").into_owned(),
        )
    }

    #[test]
    fn a_missing_models_hint_names_the_repositories_nearby_that_hold_it() {
        let missing = |nearby: &[&str]| TargetError::NoConfigs {
            repo: "r".into(),
            model: "qwen".to_owned(),
            models: "zoo".to_owned(),
            configs: "config".to_owned(),
            nearby: nearby.iter().map(|dir| (*dir).to_owned()).collect(),
        };
        assert_eq!(
            hint(&missing(&["a", "b/c"])),
            (
                ErrorCode::NotFound,
                "pass --repo DIR, the repository that holds zoo/qwen; nearby: --repo a, --repo b/c"
                    .to_owned()
            )
        );
        let unknown = TargetError::UnknownModel {
            repo: "r".into(),
            models: "models".to_owned(),
            model: "qwen".to_owned(),
            hint: String::new(),
            nearby: Box::default(),
        };
        assert_eq!(
            hint(&unknown).1,
            "pass --repo DIR, the repository that holds models/qwen (no directory up to two \
             levels below the current one holds it)"
        );
    }

    #[test]
    fn a_run_config_that_is_a_directory_is_told_its_yaml_files() {
        let directory = |yamls: &[&str]| TargetError::ConfigIsADirectory {
            config: "models/m/config".into(),
            yamls: yamls.iter().map(|y| (*y).to_owned()).collect(),
            config_dir: "models/<model>/config".to_owned(),
        };
        assert_eq!(
            hint(&directory(&["a.yaml", "b.yaml"])),
            (
                ErrorCode::InvalidInput,
                "give one YAML file in it: a.yaml, b.yaml".to_owned()
            )
        );
        assert_eq!(
            hint(&directory(&[])).1,
            "give one YAML file under models/<model>/config/"
        );
    }
}
