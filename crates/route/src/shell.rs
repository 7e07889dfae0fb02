//! Shell scripts: assignments of the profiler environment variables that vLLM and SGLang read.

/// Environment variables that switch on a framework's built-in torch profiler.
pub(crate) const PROFILER_ENV_VARS: [&str; 2] =
    ["VLLM_TORCH_PROFILER_DIR", "SGLANG_TORCH_PROFILER_DIR"];

/// An assignment `NAME=...` (possibly after `export`) of one of [`PROFILER_ENV_VARS`].
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
            if let Some(&var) = PROFILER_ENV_VARS.iter().find(|v| **v == name) {
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
