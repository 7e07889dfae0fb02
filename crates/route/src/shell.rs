//! Shell scripts: assignments of the profiler environment variables the serving engines read
//! (from their definitions).

use npuprof_repository::engine::EngineDefinition;

/// The serving engines' variables naming their profiler's directory, with the engine (from
/// their definitions, every style).
pub(crate) fn engine_env_vars() -> impl Iterator<Item = (&'static str, &'static EngineDefinition)> {
    EngineDefinition::all().iter().flat_map(|d| {
        d.styles
            .iter()
            .filter_map(move |s| s.dir_env.as_deref().map(|v| (v, d)))
    })
}

/// Whether `name` is a variable that switches on a framework's built-in torch profiler.
pub(crate) fn profiler_env_var(name: &str) -> Option<&'static str> {
    engine_env_vars().map(|(v, _)| v).find(|v| *v == name)
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
