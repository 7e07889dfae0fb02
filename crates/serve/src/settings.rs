//! What a serving engine's profiling is, as a value: how it is switched on, what it hard-codes,
//! its HTTP routes, who parses, and how its output is named. The loop takes these facts from
//! [`for_engine`] and never writes one of them itself.

use std::path::Path;

use serde::Serialize;

/// How the engine's profiler is switched on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfigStyle {
    /// Environment variables of the server process (vLLM-Ascend before January 2026).
    Env,
    /// A `--profiler-config` argument (vLLM-Ascend from January 2026, PR 5928).
    ProfilerConfig,
}

impl ConfigStyle {
    /// Every style, for the command line.
    pub const ALL: [ConfigStyle; 2] = [ConfigStyle::Env, ConfigStyle::ProfilerConfig];

    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            ConfigStyle::Env => "env",
            ConfigStyle::ProfilerConfig => "profiler-config",
        }
    }
}

/// Who turns the raw profiler data into `ASCEND_PROFILER_OUTPUT/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParseMode {
    /// The engine parses before the stop returns.
    InEngine,
    /// The engine leaves raw data only: every run directory needs the offline parse.
    RawOnly,
    /// The engine parses after the stop has returned.
    Async,
}

/// The serving engines collect knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// vLLM with the vLLM-Ascend plugin.
    VllmAscend,
}

impl Engine {
    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Engine::VllmAscend => "vllm-ascend",
        }
    }
}

/// An engine's profiling facts for one version (see `docs/serving.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServeSettings {
    /// How the profiler is switched on.
    pub config_style: ConfigStyle,
    /// Set for the server process ([`DIR`] / [`DIR_JSON`] stand for the profile directory).
    pub env: Vec<(String, String)>,
    /// Appended to the user's command (same placeholders).
    pub extra_args: Vec<String>,
    /// The profiler level the engine hard-codes.
    pub level: String,
    /// The AI Core metrics the engine hard-codes.
    pub aic_metrics: String,
    /// Said when those metrics give no pipe data, with how to get it.
    pub no_pipe_metrics_note: Option<String>,
    /// `GET`: 200 once the engine is up.
    pub health_path: String,
    /// `POST`: starts the profiler on every worker.
    pub start_path: String,
    /// `POST`: stops it.
    pub stop_path: String,
    /// `POST`: an OpenAI-style completion.
    pub completions_path: String,
    /// `POST`: an OpenAI-style chat completion.
    pub chat_path: String,
    /// Who parses (with one rank; several ranks run as daemon workers, which leave raw data).
    pub parses_in_engine: ParseMode,
    /// The suffix of a run directory.
    pub run_dir_suffix: String,
    /// What names the API process's own trace in the profile directory.
    pub frontend_trace_suffix: String,
}

/// Stands for the profile directory in [`ServeSettings::env`] and `extra_args`.
pub const DIR: &str = "{dir}";
/// Stands for the profile directory as the inside of a JSON string.
pub const DIR_JSON: &str = "{dir_json}";

impl ServeSettings {
    /// The environment for the server process, the profile directory filled in.
    pub fn env_for(&self, dir: &Path) -> Vec<(String, String)> {
        self.env
            .iter()
            .map(|(k, v)| (k.clone(), fill(v, dir)))
            .collect()
    }

    /// The arguments appended to the user's command, the profile directory filled in.
    pub fn args_for(&self, dir: &Path) -> Vec<String> {
        self.extra_args.iter().map(|a| fill(a, dir)).collect()
    }

    /// The names the settings set (environment variables) or pass (options), to refuse a
    /// command or environment that sets them already.
    pub fn switches(&self) -> Vec<&str> {
        let options = self
            .extra_args
            .iter()
            .filter(|a| a.starts_with("--"))
            .map(|a| a.split('=').next().unwrap_or(a));
        self.env
            .iter()
            .map(|(k, _)| k.as_str())
            .chain(options)
            .collect()
    }
}

fn fill(text: &str, dir: &Path) -> String {
    let raw = dir.to_string_lossy();
    let json = serde_json::to_string(raw.as_ref()).unwrap_or_default();
    let json = json.trim_matches('"');
    text.replace(DIR_JSON, json).replace(DIR, &raw)
}

/// The settings of `engine` in the newest version of `style`.
///
/// A mirror of the facts in `docs/serving.md` (read in vllm-project/vllm-ascend), kept here
/// until the repository definitions describe serving engines; the one place they are written.
pub fn for_engine(engine: Engine, style: ConfigStyle) -> ServeSettings {
    let Engine::VllmAscend = engine;
    let own = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let common = ServeSettings {
        config_style: style,
        env: Vec::new(),
        extra_args: Vec::new(),
        level: "Level1".to_owned(),
        aic_metrics: "PipeUtilization".to_owned(),
        no_pipe_metrics_note: None,
        health_path: "/health".to_owned(),
        start_path: "/start_profile".to_owned(),
        stop_path: "/stop_profile".to_owned(),
        completions_path: "/v1/completions".to_owned(),
        chat_path: "/v1/chat/completions".to_owned(),
        parses_in_engine: ParseMode::Async,
        run_dir_suffix: "_ascend_pt".to_owned(),
        frontend_trace_suffix: ".async_llm".to_owned(),
    };
    match style {
        // worker_v1.py before PR 5928: the stack is on unless the variable is `0`.
        ConfigStyle::Env => ServeSettings {
            env: own(&[
                ("VLLM_TORCH_PROFILER_DIR", DIR),
                ("VLLM_TORCH_PROFILER_WITH_STACK", "0"),
            ]),
            aic_metrics: "AiCoreNone".to_owned(),
            no_pipe_metrics_note: Some(
                "AiCoreNone at Level1 collects no pipe metrics (no aic_*_ratio columns in \
                 kernel_details.csv) on 2026 torch_npu builds, and this vLLM-Ascend version \
                 hard-codes it: for pipe metrics use vLLM-Ascend with PR 10778 (June 2026), \
                 which hard-codes PipeUtilization"
                    .to_owned(),
            ),
            parses_in_engine: ParseMode::InEngine,
            ..common
        },
        // torch_npu_profiler.py at 7371232a: PipeUtilization (PR 10778), async_mode=True; the
        // stack switch drives with_modules, on by default.
        ConfigStyle::ProfilerConfig => ServeSettings {
            extra_args: vec![
                "--profiler-config".to_owned(),
                format!(
                    r#"{{"profiler":"torch","torch_profiler_dir":"{DIR_JSON}","torch_profiler_with_stack":false}}"#
                ),
            ],
            ..common
        },
    }
}

/// What collect reads from the user's serving command: the served model, where it listens,
/// and how many ranks (run directories per stop) it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandFacts {
    /// The model name requests use (`--served-model-name`, else the model argument).
    pub model: Option<String>,
    /// The host it binds (`--host`; a wildcard address is reached on the loopback).
    pub host: String,
    /// The port (`--port`).
    pub port: u16,
    /// Tensor × pipeline parallel size (`--tensor-parallel-size`/`-tp`,
    /// `--pipeline-parallel-size`/`-pp`).
    pub ranks: usize,
}

/// Reads `argv` (`vllm serve MODEL [options]`) as `engine`'s command line does, with its
/// defaults (port 8000, one rank). An option's value that is not a number is refused.
pub fn read_command(engine: Engine, argv: &[String]) -> Result<CommandFacts, String> {
    let Engine::VllmAscend = engine;
    let mut facts = CommandFacts {
        model: None,
        host: "127.0.0.1".to_owned(),
        port: 8000,
        ranks: 1,
    };
    let (mut tp, mut pp) = (1usize, 1usize);
    let serve = argv.iter().position(|a| a == "serve");
    if let Some(model) = serve
        .and_then(|i| argv.get(i + 1))
        .filter(|a| !a.starts_with('-'))
    {
        facts.model = Some(model.clone());
    }
    let mut words = argv.iter().skip(serve.map_or(0, |i| i + 1));
    while let Some(word) = words.next() {
        let (name, inline) = match word.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (word.as_str(), None),
        };
        let known = [
            "--host",
            "--port",
            "--served-model-name",
            "--tensor-parallel-size",
            "-tp",
            "--pipeline-parallel-size",
            "-pp",
        ];
        if !known.contains(&name) {
            continue;
        }
        let Some(value) = inline.or_else(|| words.next().cloned()) else {
            return Err(format!("{name} has no value"));
        };
        let number = |what: &str| {
            value
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{what} {value:?} is not a positive number"))
        };
        match name {
            "--host" => {
                facts.host = match value.as_str() {
                    "0.0.0.0" | "" => "127.0.0.1".to_owned(),
                    "::" => "::1".to_owned(),
                    _ => value.clone(),
                }
            }
            "--port" => {
                facts.port = u16::try_from(number(name)?)
                    .map_err(|_| format!("--port {value} is out of range"))?;
            }
            "--served-model-name" => facts.model = Some(value.clone()),
            "--tensor-parallel-size" | "-tp" => tp = number(name)?,
            _ => pp = number(name)?,
        }
    }
    facts.ranks = tp.saturating_mul(pp);
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_directory_is_filled_in_raw_for_env_and_escaped_for_json() {
        let dir = Path::new("/p/a \"b\"\\c");
        let env = for_engine(Engine::VllmAscend, ConfigStyle::Env).env_for(dir);
        assert_eq!(
            env[0],
            (
                "VLLM_TORCH_PROFILER_DIR".to_owned(),
                dir.display().to_string()
            )
        );
        let args = for_engine(Engine::VllmAscend, ConfigStyle::ProfilerConfig).args_for(dir);
        let config: serde_json::Value = serde_json::from_str(&args[1]).expect("JSON");
        assert_eq!(config["torch_profiler_dir"], dir.display().to_string());
        assert_eq!(config["torch_profiler_with_stack"], false);
    }

    #[test]
    fn the_command_gives_model_address_and_ranks() {
        let argv: Vec<String> =
            "vllm serve Qwen/Q --port=8123 -tp 2 --pipeline-parallel-size 2 --host 0.0.0.0"
                .split(' ')
                .map(str::to_owned)
                .collect();
        let facts = read_command(Engine::VllmAscend, &argv).expect("reads");
        assert_eq!(facts.model.as_deref(), Some("Qwen/Q"));
        assert_eq!(
            (facts.host.as_str(), facts.port, facts.ranks),
            ("127.0.0.1", 8123, 4)
        );
        let bad: Vec<String> = ["vllm", "serve", "m", "-tp", "x"]
            .map(str::to_owned)
            .to_vec();
        assert!(read_command(Engine::VllmAscend, &bad).is_err());
    }

    #[test]
    fn switches_name_the_variables_and_options() {
        assert_eq!(
            for_engine(Engine::VllmAscend, ConfigStyle::Env).switches(),
            ["VLLM_TORCH_PROFILER_DIR", "VLLM_TORCH_PROFILER_WITH_STACK"]
        );
        assert_eq!(
            for_engine(Engine::VllmAscend, ConfigStyle::ProfilerConfig).switches(),
            ["--profiler-config"]
        );
    }
}
