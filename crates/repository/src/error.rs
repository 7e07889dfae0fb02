//! Why a target could not be resolved.

use std::path::PathBuf;

/// Why a target could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The model directory does not exist.
    #[error("no model `{model}` under models/ in `{repo}`{hint}")]
    UnknownModel {
        /// The repository.
        repo: PathBuf,
        /// The model asked for.
        model: String,
        /// `; did you mean …` or the list of models.
        hint: String,
    },
    /// The run config does not exist.
    #[error("no run config `{path}`{hint}")]
    UnknownConfig {
        /// The path tried, relative to the repository.
        path: String,
        /// `; did you mean …` or the model's configs.
        hint: String,
    },
    /// The run config lies outside `models/<m>/config/`: not one `infer.sh --yaml` runs.
    #[error(
        "`{path}` is outside models/{model}/config/, so infer.sh --yaml does not run it{launchers}; npuprof resolves, plans and patches only run configs under config/{why}"
    )]
    OutsideConfig {
        /// The config, relative to the repository (normalised).
        path: String,
        /// The model.
        model: String,
        /// ` (its own launcher: …)` when scripts sit beside it, else empty.
        launchers: String,
        /// `; …: decode never runs` when its budget buys no decode, else empty.
        why: String,
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
}
