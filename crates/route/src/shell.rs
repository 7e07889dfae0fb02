//! Shell scripts: assignments of the profiler environment variables that vLLM and SGLang read.

use npuprof_repository::engine::{ConfigStyle, EngineDefinition};

/// SGLang's variable (SGLang has no definition yet).
pub(crate) const SGLANG_PROFILER_DIR: &str = "SGLANG_TORCH_PROFILER_DIR";

/// The serving engines' variables that switch on their profiler (from their definitions).
pub(crate) fn engine_env_vars() -> impl Iterator<Item = &'static str> {
    EngineDefinition::all()
        .iter()
        .filter_map(|d| d.style(ConfigStyle::Env).and_then(|s| s.dir_env.as_deref()))
}

/// Whether `name` is a variable that switches on a framework's built-in torch profiler.
pub(crate) fn profiler_env_var(name: &str) -> Option<&'static str> {
    engine_env_vars()
        .chain([SGLANG_PROFILER_DIR])
        .find(|v| *v == name)
}

/// An assignment `NAME=...` (possibly after `export`) of a [`profiler_env_var`].
#[derive(Debug, Clone)]
pub(crate) struct EnvAssignment {
    /// The variable.
    pub name: &'static str,
    /// 1-based line.
    pub line: usize,
    /// Trimmed text of the line.
    pub text: String,
}

/// Finds the assignments in a shell script; comment lines do not count.
pub(crate) fn scan(src: &str) -> Vec<EnvAssignment> {
    let mut found = Vec::new();
    for (index, line) in src.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            continue;
        }
        // Words before a `#` comment: `export X=1`, `X=1 python run.py`, `env X=1 ...`.
        let code = trimmed.split(" #").next().unwrap_or_default();
        for word in code.split_whitespace() {
            let Some((name, _)) = word.split_once('=') else {
                continue;
            };
            if let Some(var) = profiler_env_var(name) {
                found.push(EnvAssignment {
                    name: var,
                    line: index + 1,
                    text: trimmed.to_owned(),
                });
            }
        }
    }
    found
}
