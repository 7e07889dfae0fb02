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
    /// A model or run config that is not there is not found; a run config that is not YAML or
    /// Python with a syntax error is invalid input; the other target errors are decided by
    /// their causes.
    fn classify(&self) -> Option<npuprof_severity::Classified> {
        use npuprof_severity::{Classified, ErrorCode};
        match self {
            TargetError::UnknownModel { .. } | TargetError::UnknownConfig { .. } => {
                Some(Classified::new(ErrorCode::NotFound))
            }
            TargetError::Open { source, .. } => Some(Classified::of_io(source)),
            TargetError::ConfigIsADirectory { .. }
            | TargetError::ConfigOutsideRepository { .. }
            | TargetError::ConfigNotInLayout { .. }
            | TargetError::Definitions(_)
            | TargetError::Yaml(_)
            | TargetError::PythonSyntax { .. } => Some(Classified::new(ErrorCode::InvalidInput)),
            _ => None,
        }
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
