//! Serving-engine definitions as data (`definitions/vllm-ascend.yaml`, kind `serving-engine`,
//! held by the [`Catalog`] with every other definition, extra files from
//! `NPUPROF_DEFINITIONS` included): how a checkout or an installed package is recognised, which
//! profiler config style a version takes and how its source shows it, the level and AI Core
//! metrics it hard-codes, how its serve command line names the model, the address and the
//! parallel sizes, the HTTP endpoints that drive a capture and where the output lands.
//!
//! [`detect`] reads a checkout or a site-packages directory and returns what the source proves,
//! each fact with its line; [`EngineDefinition::settings`] turns a style (or the detected
//! [`VersionFacts`]) into the [`ServeSettings`] the collect loop starts a server with.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::catalog::{Catalog, Kind};

/// Largest profiler source file read (larger ones are left out with a note).
const MAX_SOURCE_BYTES: u64 = 4 << 20;

/// How a version of the engine is told to profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfigStyle {
    /// Environment variables read by the worker (older versions).
    Env,
    /// The `--profiler-config` argument of the serve command (newer versions).
    ProfilerConfig,
}

impl ConfigStyle {
    /// Its name in reports and in the definition.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Env => "env",
            Self::ProfilerConfig => "profiler-config",
        }
    }
}

/// Who turns the raw data into the text export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParseMode {
    /// The worker parses before `/stop_profile` returns.
    InEngine,
    /// The workers are daemon processes: torch_npu leaves raw data, `analyse()` must run offline.
    RawOnly,
    /// The worker parses in the background: `/stop_profile` returns before the output exists.
    Async,
}

impl ParseMode {
    /// Its name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InEngine => "in-engine",
            Self::RawOnly => "raw-only",
            Self::Async => "async",
        }
    }
}

/// How a directory holds the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstallKind {
    /// A source checkout (its build script names the platform plugin).
    Checkout,
    /// An installed package (site-packages, with its dist-info).
    Installed,
    /// The package directory alone (neither marker found).
    PackageOnly,
}

impl InstallKind {
    /// Its name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Checkout => "checkout",
            Self::Installed => "installed",
            Self::PackageOnly => "package-only",
        }
    }
}

/// Recognising the engine in a directory.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Detect {
    /// The package directory, relative to the scanned root.
    pub package_dir: String,
    /// Files that must exist in the package directory.
    pub package_files: Vec<String>,
    /// A checkout's marker: a file and a text it contains.
    pub checkout: TextMarker,
    /// An installed package's marker: the start of its dist-info directory's name.
    pub dist_info_prefix: String,
}

/// A text expected in a file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextMarker {
    /// The file, relative to the scanned root.
    pub file: String,
    /// The text.
    pub text: String,
}

/// The keys of `--profiler-config` that npuprof sets.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfilerConfigKeys {
    /// The key choosing the profiler, and the value that picks torch.
    pub profiler: (String, String),
    /// The output directory's key.
    pub dir: String,
    /// The key that really switches call stacks.
    pub stack: String,
}

/// One config style: how the source shows it and what to set.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StyleDef {
    /// Which style.
    pub style: ConfigStyle,
    /// A text in a profiler file that proves this style.
    pub evidence: String,
    /// Env style: the variable naming the output directory.
    pub dir_env: Option<String>,
    /// Env style: the variable switching stacks.
    pub stack_env: Option<String>,
    /// Env style: the values written for on and off.
    pub env_true: Option<String>,
    /// Env style: the value written for off.
    pub env_false: Option<String>,
    /// Profiler-config style: the serve command's flag.
    pub flag: Option<String>,
    /// Profiler-config style: its keys.
    pub keys: Option<ProfilerConfigKeys>,
    /// Whether stacks are on when the user sets nothing.
    pub stack_default: bool,
}

impl StyleDef {
    /// The name of the setting that switches stacks in this style.
    pub fn stack_key(&self) -> &str {
        match self.style {
            ConfigStyle::Env => self.stack_env.as_deref().unwrap_or_default(),
            ConfigStyle::ProfilerConfig => self.keys.as_ref().map_or("", |k| k.stack.as_str()),
        }
    }

    /// The name of the setting that names the output directory.
    pub fn dir_key(&self) -> &str {
        match self.style {
            ConfigStyle::Env => self.dir_env.as_deref().unwrap_or_default(),
            ConfigStyle::ProfilerConfig => self.keys.as_ref().map_or("", |k| k.dir.as_str()),
        }
    }
}

/// A known AI Core metrics value.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsDef {
    /// The `AiCMetrics` member.
    pub value: String,
    /// Whether it collects pipe utilisation.
    pub pipe_metrics: bool,
    /// What to say when it does not.
    pub note: Option<String>,
    /// What a profile with these metrics cannot show.
    pub cannot_show: String,
}

/// A known profiler level.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LevelDef {
    /// The `ProfilerLevel` member.
    pub value: String,
    /// What a profile at this level cannot show.
    pub cannot_show: String,
}

/// Level and metrics of one version.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LevelMetrics {
    /// The `ProfilerLevel` member.
    pub level: String,
    /// The `AiCMetrics` member.
    pub metrics: String,
}

/// The HTTP endpoints of the server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Http {
    /// 200 once the engine is up.
    pub health: String,
    /// Starts profiling on every worker.
    pub start: String,
    /// Stops profiling on every worker.
    pub stop: String,
    /// OpenAI-compatible completions.
    pub completions: String,
    /// OpenAI-compatible chat completions.
    pub chat: String,
    /// The request field that, set to `true`, makes an answer run to `max_tokens` whatever the
    /// model emits (a sampling extension of the OpenAI API).
    pub ignore_eos_field: String,
}

/// Where the output lands.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultsDef {
    /// The end of each rank's run directory name (`<worker_name>_<ts><suffix>`).
    pub run_dir_suffix: String,
    /// The end of the API process's own trace file's name.
    pub frontend_trace_suffix: String,
    /// The profiler-config key that stops the API process's trace.
    pub frontend_off_key: String,
}

/// How the serve command line is read: the word after which the model argument comes and the
/// options (every spelling) that name the served model, the address and the parallel sizes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandDef {
    /// The subcommand followed by the model (`serve MODEL`).
    pub subcommand: String,
    /// The options naming the model requests use.
    pub model_name: Vec<String>,
    /// The options naming the address it binds.
    pub host: Vec<String>,
    /// The options naming its port.
    pub port: Vec<String>,
    /// The port when none is given.
    pub default_port: u16,
    /// The options naming the tensor-parallel size.
    pub tensor_parallel: Vec<String>,
    /// The options naming the pipeline-parallel size.
    pub pipeline_parallel: Vec<String>,
}

impl CommandDef {
    /// Every option it reads, with the fact each names.
    pub fn options(&self) -> impl Iterator<Item = (CommandOption, &str)> {
        [
            (CommandOption::ModelName, &self.model_name),
            (CommandOption::Host, &self.host),
            (CommandOption::Port, &self.port),
            (CommandOption::TensorParallel, &self.tensor_parallel),
            (CommandOption::PipelineParallel, &self.pipeline_parallel),
        ]
        .into_iter()
        .flat_map(|(what, names)| names.iter().map(move |n| (what, n.as_str())))
    }

    /// The fact the option `name` gives, when it is one the command reads.
    pub fn option(&self, name: &str) -> Option<CommandOption> {
        self.options()
            .find(|(_, n)| *n == name)
            .map(|(what, _)| what)
    }
}

/// What an option of the serve command gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandOption {
    /// The served model's name.
    ModelName,
    /// The address it binds.
    Host,
    /// Its port.
    Port,
    /// The tensor-parallel size.
    TensorParallel,
    /// The pipeline-parallel size.
    PipelineParallel,
}

/// Who parses.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParseDef {
    /// The largest tensor-parallel size whose worker parses in the engine process.
    pub in_engine_max_tp: u32,
}

/// A serving engine's definition.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineDefinition {
    /// Stable identifier (`--engine` value).
    pub id: String,
    /// What kind of definition it is (`serving-engine`).
    pub kind: Kind,
    /// One line saying what it is.
    pub summary: String,
    /// How a directory is recognised.
    pub detect: Detect,
    /// Files that build the worker's profiler, newest layout first.
    pub profiler_files: Vec<String>,
    /// The config styles.
    pub styles: Vec<StyleDef>,
    /// The text before the hard-coded level's name.
    pub level_prefix: String,
    /// The text before the hard-coded metrics' name.
    pub metrics_prefix: String,
    /// Known levels.
    pub levels: Vec<LevelDef>,
    /// Known metrics values.
    pub metrics: Vec<MetricsDef>,
    /// Level and metrics of each style's newest version (when no source was read).
    pub style_defaults: BTreeMap<ConfigStyle, LevelMetrics>,
    /// The torch_npu arguments the stack key may reach.
    pub stack_arguments: Vec<String>,
    /// A text showing that the worker parses asynchronously.
    pub async_parse_evidence: String,
    /// A text showing that run directories are named by the rank suffix.
    pub worker_name_evidence: String,
    /// The rank suffix's shape, for messages.
    pub worker_name_shape: String,
    /// The endpoints.
    pub http: Http,
    /// The output layout.
    pub results: ResultsDef,
    /// Who parses.
    pub parse: ParseDef,
    /// How an offline run starts and stops profiling, for messages.
    pub offline_control: String,
    /// The collect command route suggests, before the serve command.
    pub collect_command: Vec<String>,
    /// The serve command (`MODEL` a placeholder).
    pub serve_command: Vec<String>,
    /// How the serve command line is read.
    pub command: CommandDef,
}

/// The settings a collect loop starts and drives a server with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServeSettings {
    /// How the profiler is configured.
    pub config_style: ConfigStyle,
    /// Variables to set for the server.
    pub env: Vec<(String, String)>,
    /// Arguments to append to the user's command.
    pub extra_args: Vec<String>,
    /// The hard-coded `ProfilerLevel`.
    pub level: String,
    /// The hard-coded `AiCMetrics`.
    pub aic_metrics: String,
    /// Why these metrics show no pipe utilisation, and how to get it.
    pub no_pipe_metrics_note: Option<String>,
    /// Health endpoint.
    pub health_path: String,
    /// Start-profile endpoint.
    pub start_path: String,
    /// Stop-profile endpoint.
    pub stop_path: String,
    /// Completions endpoint.
    pub completions_path: String,
    /// Chat completions endpoint.
    pub chat_path: String,
    /// The request field that makes an answer run to `max_tokens`.
    pub ignore_eos_field: String,
    /// Who parses, for the given tensor-parallel size.
    pub parses_in_engine: ParseMode,
    /// The end of each rank's run directory name.
    pub run_dir_suffix: String,
    /// The end of the frontend trace's file name.
    pub frontend_trace_suffix: String,
}

/// What one version hard-codes and takes, as the source shows it (or a style's defaults).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionFacts {
    /// Its config style.
    pub style: ConfigStyle,
    /// Its `ProfilerLevel`.
    pub level: String,
    /// Its `AiCMetrics`.
    pub metrics: String,
    /// Whether the worker parses asynchronously.
    pub async_parse: bool,
    /// Whether the version reads the style's stack setting (older ones fix stacks in code).
    pub stack_setting_read: bool,
}

/// Why settings could not be built.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The profile directory is not UTF-8 (it goes into an environment value or an argument).
    #[error("the profile directory `{0}` is not valid UTF-8")]
    NonUtf8Dir(String),
}

impl EngineDefinition {
    /// The compiled-in vLLM-Ascend definition (the first compiled-in serving engine).
    pub fn vllm_ascend() -> &'static EngineDefinition {
        Catalog::builtin()
            .engines()
            .first()
            .unwrap_or_else(|| unreachable!("a serving engine is compiled in (tested)"))
    }

    /// Every serving-engine definition in use ([`Catalog::global`]: the `NPUPROF_DEFINITIONS`
    /// files first). When those files do not load, the compiled-in ones: the error is the
    /// caller's to report, through [`Catalog::global`], before it relies on them.
    pub fn all() -> &'static [EngineDefinition] {
        Catalog::global()
            .unwrap_or_else(|_| Catalog::builtin())
            .engines()
    }

    /// The definition in use whose id is `id`.
    pub fn by_id(id: &str) -> Option<&'static EngineDefinition> {
        Self::all().iter().find(|d| d.id == id)
    }

    /// Parses and validates one definition (what [`Catalog::load`] does with a
    /// `kind: serving-engine` file); the error is `(key, message)`.
    pub fn parse(text: &str) -> Result<Self, (String, String)> {
        let definition: EngineDefinition = yaml_serde::from_str(text)
            .map_err(|e| crate::catalog::split_serde_error(&e.to_string()))?;
        definition.validate()?;
        Ok(definition)
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let id = &self.id;
        let fail = |key: String, message: String| Err((key, message));
        let empty = [
            (
                "profiler_files",
                self.profiler_files.is_empty(),
                "names no profiler file",
            ),
            ("styles", self.styles.is_empty(), "has no config style"),
            (
                "stack_arguments",
                self.stack_arguments.is_empty(),
                "lacks stack arguments",
            ),
            (
                "collect_command",
                self.collect_command.is_empty(),
                "lacks a collect command",
            ),
            (
                "http.ignore_eos_field",
                self.http.ignore_eos_field.is_empty(),
                "names no request field",
            ),
        ];
        if let Some((key, _, what)) = empty.iter().find(|(_, empty, _)| *empty) {
            return fail((*key).to_owned(), format!("engine `{id}` {what}"));
        }
        for (i, style) in self.styles.iter().enumerate() {
            let key = |k: &str| format!("styles[{i}]{k}");
            let name = style.style.as_str();
            if self.styles[..i].iter().any(|s| s.style == style.style) {
                return fail(
                    key(".style"),
                    format!("engine `{id}` defines style `{name}` twice"),
                );
            }
            if style.evidence.is_empty() {
                return fail(
                    key(".evidence"),
                    format!("style `{name}` has no evidence text"),
                );
            }
            let complete = match style.style {
                ConfigStyle::Env => {
                    style.dir_env.is_some()
                        && style.stack_env.is_some()
                        && style.env_true.is_some()
                        && style.env_false.is_some()
                }
                ConfigStyle::ProfilerConfig => style.flag.is_some() && style.keys.is_some(),
            };
            if !complete {
                return fail(
                    key(""),
                    format!("style `{name}` lacks the settings it needs"),
                );
            }
            let defaults_key = format!("style_defaults.{name}");
            let Some(defaults) = self.style_defaults.get(&style.style) else {
                return fail(defaults_key, format!("style `{name}` has no defaults"));
            };
            if !self.levels.iter().any(|l| l.value == defaults.level) {
                return fail(
                    format!("{defaults_key}.level"),
                    format!(
                        "style `{name}`'s default level `{}` is not a known level",
                        defaults.level
                    ),
                );
            }
            if self.metrics_def(&defaults.metrics).is_none() {
                return fail(
                    format!("{defaults_key}.metrics"),
                    format!(
                        "style `{name}`'s default metrics `{}` are not a known metrics value",
                        defaults.metrics
                    ),
                );
            }
        }
        if let Some((i, m)) = self
            .metrics
            .iter()
            .enumerate()
            .find(|(_, m)| !m.pipe_metrics && m.note.is_none())
        {
            return fail(
                format!("metrics[{i}].note"),
                format!(
                    "metrics `{}` collect no pipe metrics but say nothing about it",
                    m.value
                ),
            );
        }
        let http = &self.http;
        for (key, path) in [
            ("health", &http.health),
            ("start", &http.start),
            ("stop", &http.stop),
            ("completions", &http.completions),
            ("chat", &http.chat),
        ] {
            if !path.starts_with('/') {
                return fail(
                    format!("http.{key}"),
                    format!("endpoint `{path}` does not start with `/`"),
                );
            }
        }
        let command = &self.command;
        let follows = self
            .serve_command
            .windows(2)
            .any(|w| w[0] == command.subcommand && w[1] == "MODEL");
        if !follows {
            return fail(
                "command.subcommand".to_owned(),
                format!(
                    "`{}` is not followed by MODEL in serve_command",
                    command.subcommand
                ),
            );
        }
        let lists = [
            ("model_name", &command.model_name),
            ("host", &command.host),
            ("port", &command.port),
            ("tensor_parallel", &command.tensor_parallel),
            ("pipeline_parallel", &command.pipeline_parallel),
        ];
        for (key, names) in lists {
            if names.is_empty() || names.iter().any(|n| !n.starts_with('-') || n.contains('=')) {
                return fail(
                    format!("command.{key}"),
                    "must list options, each starting with `-` and without `=`".to_owned(),
                );
            }
        }
        let options: Vec<&str> = command.options().map(|(_, n)| n).collect();
        if let Some(twice) = options
            .iter()
            .enumerate()
            .find(|(i, n)| options[..*i].contains(n))
            .map(|(_, n)| n)
        {
            return fail(
                "command".to_owned(),
                format!("option `{twice}` is listed twice"),
            );
        }
        Ok(())
    }

    /// The definition of `style`, when the engine has it.
    pub fn style(&self, style: ConfigStyle) -> Option<&StyleDef> {
        self.styles.iter().find(|s| s.style == style)
    }

    /// The known metrics value named `value`.
    pub fn metrics_def(&self, value: &str) -> Option<&MetricsDef> {
        self.metrics.iter().find(|m| m.value == value)
    }

    /// What a profile at `level` with `metrics` cannot show (known values only).
    pub fn cannot_show(&self, level: &str, metrics: &str) -> Vec<String> {
        let level = self
            .levels
            .iter()
            .find(|l| l.value == level)
            .map(|l| l.cannot_show.clone());
        let metrics = self.metrics_def(metrics).map(|m| m.cannot_show.clone());
        level.into_iter().chain(metrics).collect()
    }

    /// The facts of `style`'s newest version, when no source was read.
    pub fn style_facts(&self, style: ConfigStyle) -> VersionFacts {
        let defaults = self.style_defaults.get(&style);
        VersionFacts {
            style,
            level: defaults.map(|d| d.level.clone()).unwrap_or_default(),
            metrics: defaults.map(|d| d.metrics.clone()).unwrap_or_default(),
            async_parse: false,
            stack_setting_read: true,
        }
    }

    /// Who parses, for a tensor-parallel size `tp` and a version that parses asynchronously or not.
    pub fn parse_mode(&self, tp: u32, async_parse: bool) -> ParseMode {
        if tp > self.parse.in_engine_max_tp {
            ParseMode::RawOnly
        } else if async_parse {
            ParseMode::Async
        } else {
            ParseMode::InEngine
        }
    }

    /// What to say about metrics that collect no pipe utilisation (`None` when they do, or
    /// when the value is unknown).
    pub fn no_pipe_metrics_note(&self, metrics: &str) -> Option<String> {
        self.metrics_def(metrics)
            .filter(|m| !m.pipe_metrics)
            .and_then(|m| m.note.clone())
    }

    /// The settings for `style` (its newest version's level and metrics), writing to
    /// `profile_dir`, for tensor-parallel size `tp`, with call stacks or not.
    pub fn settings(
        &self,
        style: ConfigStyle,
        profile_dir: &Path,
        tp: u32,
        with_stack: bool,
    ) -> Result<ServeSettings, EngineError> {
        self.settings_for(&self.style_facts(style), profile_dir, tp, with_stack)
    }

    /// The settings for a version whose facts were read from its source.
    pub fn settings_for(
        &self,
        facts: &VersionFacts,
        profile_dir: &Path,
        tp: u32,
        with_stack: bool,
    ) -> Result<ServeSettings, EngineError> {
        let dir = profile_dir
            .to_str()
            .ok_or_else(|| EngineError::NonUtf8Dir(profile_dir.display().to_string()))?;
        let mut env = Vec::new();
        let mut extra_args = Vec::new();
        if let Some(style) = self.style(facts.style) {
            match facts.style {
                ConfigStyle::Env => {
                    let value = if with_stack {
                        &style.env_true
                    } else {
                        &style.env_false
                    };
                    env.push((style.dir_key().to_owned(), dir.to_owned()));
                    env.push((
                        style.stack_key().to_owned(),
                        value.clone().unwrap_or_default(),
                    ));
                }
                ConfigStyle::ProfilerConfig => {
                    let flag = style.flag.as_deref().unwrap_or_default();
                    if let Some(keys) = &style.keys {
                        extra_args.push(format!("{flag}.{}={}", keys.profiler.0, keys.profiler.1));
                        extra_args.push(format!("{flag}.{}={dir}", keys.dir));
                        extra_args.push(format!("{flag}.{}={with_stack}", keys.stack));
                    }
                }
            }
        }
        Ok(ServeSettings {
            config_style: facts.style,
            env,
            extra_args,
            level: facts.level.clone(),
            aic_metrics: facts.metrics.clone(),
            no_pipe_metrics_note: self.no_pipe_metrics_note(&facts.metrics),
            health_path: self.http.health.clone(),
            start_path: self.http.start.clone(),
            stop_path: self.http.stop.clone(),
            completions_path: self.http.completions.clone(),
            chat_path: self.http.chat.clone(),
            ignore_eos_field: self.http.ignore_eos_field.clone(),
            parses_in_engine: self.parse_mode(tp, facts.async_parse),
            run_dir_suffix: self.results.run_dir_suffix.clone(),
            frontend_trace_suffix: self.results.frontend_trace_suffix.clone(),
        })
    }
}

/// A line of the engine's source that proves a fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceLine {
    /// File, relative to the scanned root, `/`-separated.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// The line, trimmed.
    pub text: String,
}

/// A fact with the line that proves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found<T> {
    /// The fact.
    pub value: T,
    /// Where it is.
    pub evidence: SourceLine,
}

/// What the source of one checkout or installed package proves.
#[derive(Debug, Clone, Serialize)]
pub struct Detected {
    /// The definition's id.
    pub id: String,
    /// How the directory holds the engine.
    pub install: InstallKind,
    /// The marker that proves the install kind (`None` for the package alone).
    pub marker: Option<SourceLine>,
    /// The config style the version takes.
    pub config_style: Option<Found<ConfigStyle>>,
    /// The hard-coded `ProfilerLevel`.
    pub level: Option<Found<String>>,
    /// The hard-coded `AiCMetrics`.
    pub aic_metrics: Option<Found<String>>,
    /// The torch_npu argument the stack setting reaches (`with_modules`, `with_stack`).
    pub stack_argument: Option<Found<String>>,
    /// The line showing asynchronous parsing, when the version has it.
    pub async_parse: Option<SourceLine>,
    /// The line showing run directories named by rank suffix, when the version has it.
    pub worker_name: Option<SourceLine>,
    /// What could not be decided, and why.
    pub notes: Vec<String>,
}

impl Detected {
    /// The version's facts, when its style is known (level and metrics from the style's
    /// defaults when the source does not name them).
    pub fn facts(&self, definition: &EngineDefinition) -> Option<VersionFacts> {
        let style = self.config_style.as_ref()?.value;
        let defaults = definition.style_facts(style);
        Some(VersionFacts {
            style,
            level: self
                .level
                .as_ref()
                .map_or(defaults.level, |f| f.value.clone()),
            metrics: self
                .aic_metrics
                .as_ref()
                .map_or(defaults.metrics, |f| f.value.clone()),
            async_parse: self.async_parse.is_some(),
            stack_setting_read: self.stack_argument.is_some(),
        })
    }
}

/// The first engine whose package is under `root`, with what its source proves.
pub fn detect(root: &Path) -> Option<Detected> {
    EngineDefinition::all()
        .iter()
        .find_map(|definition| detect_with(definition, root))
}

/// What `root` holds of `definition`'s engine (`None` when its package directory is not there).
pub fn detect_with(definition: &EngineDefinition, root: &Path) -> Option<Detected> {
    let d = &definition.detect;
    let package = root.join(&d.package_dir);
    if !d.package_files.iter().all(|f| package.join(f).is_file()) {
        return None;
    }
    let mut notes = Vec::new();
    let (install, marker) = install_kind(definition, root, &mut notes);
    let files: Vec<(String, String)> = definition
        .profiler_files
        .iter()
        .filter_map(|f| read_source(root, f, &mut notes).map(|text| (f.clone(), text)))
        .collect();
    if files.is_empty() {
        notes.push(format!(
            "none of the profiler files is there ({})",
            definition.profiler_files.join(", ")
        ));
    }

    let mut styles: Vec<Found<ConfigStyle>> = Vec::new();
    for style in &definition.styles {
        if let Some(evidence) = first_line(&files, |l| l.contains(&style.evidence)) {
            styles.push(Found {
                value: style.style,
                evidence,
            });
        }
    }
    let style = match styles.len() {
        0 => {
            notes.push("no profiler config style found in the profiler files".to_owned());
            None
        }
        1 => styles.pop(),
        _ => {
            let found: Vec<String> = styles
                .iter()
                .map(|s| {
                    format!(
                        "{} at {}:{}",
                        s.value.as_str(),
                        s.evidence.path,
                        s.evidence.line
                    )
                })
                .collect();
            notes.push(format!(
                "the source shows more than one config style ({}): npuprof cannot tell which this version reads",
                found.join(", ")
            ));
            None
        }
    };
    let level = named_after(&files, &definition.level_prefix);
    let metrics = named_after(&files, &definition.metrics_prefix);
    if let Some(m) = &metrics
        && definition.metrics_def(&m.value).is_none()
    {
        notes.push(format!(
            "AI Core metrics `{}` are not in the definition: npuprof does not know whether they collect pipe metrics",
            m.value
        ));
    }
    let stack_argument = style
        .as_ref()
        .and_then(|s| definition.style(s.value))
        .and_then(|s| stack_argument(&files, s.stack_key(), &definition.stack_arguments));
    if let (Some(s), None) = (&style, &stack_argument) {
        let key = definition.style(s.value).map_or("", StyleDef::stack_key);
        notes.push(format!(
            "this version does not read {key}: its call stacks are fixed in the source"
        ));
    }
    let async_parse = first_line(&files, |l| l.contains(&definition.async_parse_evidence));
    let worker_name = first_line(&files, |l| l.contains(&definition.worker_name_evidence));
    Some(Detected {
        id: definition.id.clone(),
        install,
        marker,
        config_style: style,
        level,
        aic_metrics: metrics,
        stack_argument,
        async_parse,
        worker_name,
        notes,
    })
}

fn install_kind(
    definition: &EngineDefinition,
    root: &Path,
    notes: &mut Vec<String>,
) -> (InstallKind, Option<SourceLine>) {
    let d = &definition.detect;
    if let Some(text) = read_source(root, &d.checkout.file, notes) {
        let files = [(d.checkout.file.clone(), text)];
        if let Some(line) = first_line(&files, |l| l.contains(&d.checkout.text)) {
            return (InstallKind::Checkout, Some(line));
        }
    }
    let mut dist: Vec<String> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(&d.dist_info_prefix) && n.ends_with(".dist-info"))
        .collect();
    dist.sort();
    match dist.into_iter().next() {
        Some(name) => (
            InstallKind::Installed,
            Some(SourceLine {
                path: name.clone(),
                line: 0,
                text: name,
            }),
        ),
        None => (InstallKind::PackageOnly, None),
    }
}

fn read_source(root: &Path, file: &str, notes: &mut Vec<String>) -> Option<String> {
    let path = root.join(file);
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.len() > MAX_SOURCE_BYTES {
        notes.push(format!(
            "{file}: larger than {MAX_SOURCE_BYTES} bytes, not read"
        ));
        return None;
    }
    match std::fs::read(&path) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => {
            notes.push(format!("{file}: {e}"));
            None
        }
    }
}

/// Lines of code (comment lines left out) with their 1-based numbers.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.starts_with('#'))
}

fn first_line(files: &[(String, String)], matches: impl Fn(&str) -> bool) -> Option<SourceLine> {
    files.iter().find_map(|(path, text)| {
        code_lines(text)
            .find(|(_, l)| matches(l))
            .map(|(line, l)| SourceLine {
                path: path.clone(),
                line,
                text: l.to_owned(),
            })
    })
}

/// The identifier written right after `prefix` on the first code line that has it.
fn named_after(files: &[(String, String)], prefix: &str) -> Option<Found<String>> {
    let evidence = first_line(files, |l| l.contains(prefix))?;
    let at = evidence.text.find(prefix)? + prefix.len();
    let value: String = evidence.text[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!value.is_empty()).then_some(Found { value, evidence })
}

/// The torch_npu argument on the line that reads `key` (or the line before it, when the
/// expression is continued).
fn stack_argument(
    files: &[(String, String)],
    key: &str,
    arguments: &[String],
) -> Option<Found<String>> {
    for (path, text) in files {
        let lines: Vec<(usize, &str)> = code_lines(text).collect();
        for (i, (line, l)) in lines.iter().enumerate() {
            if !l.contains(key) {
                continue;
            }
            let candidates = [Some((*line, *l)), i.checked_sub(1).map(|j| lines[j])];
            for (at, candidate) in candidates.into_iter().flatten() {
                if let Some(arg) = arguments.iter().find(|a| candidate.contains(a.as_str())) {
                    return Some(Found {
                        value: arg.trim_end_matches('=').to_owned(),
                        evidence: SourceLine {
                            path: path.clone(),
                            line: at,
                            text: candidate.to_owned(),
                        },
                    });
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const VLLM_ASCEND_YAML: &str = crate::catalog::BUILTIN[1].1;

    fn write(root: &Path, files: &[(&str, &str)]) {
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    fn package(root: &Path) {
        write(
            root,
            &[
                ("vllm_ascend/__init__.py", ""),
                ("vllm_ascend/platform.py", ""),
            ],
        );
    }

    #[test]
    fn the_compiled_in_definition_is_valid() {
        let d = EngineDefinition::parse(VLLM_ASCEND_YAML).unwrap();
        assert_eq!(d.kind, Kind::ServingEngine);
        assert!(EngineDefinition::by_id(&d.id).is_some());
        assert!(EngineDefinition::by_id("no-such-engine").is_none());
    }

    /// The error of loading `text` as the file `fork.yaml` after the recipes definition:
    /// (key, message).
    fn refusal(text: &str) -> (String, String) {
        let e = Catalog::load([crate::catalog::BUILTIN[0], ("fork.yaml", text)]).unwrap_err();
        assert_eq!(e.file, "fork.yaml", "{e}");
        (e.key, e.message)
    }

    #[test]
    fn validation_rejects_broken_definitions_naming_the_file_and_the_key() {
        let twice = VLLM_ASCEND_YAML.replace("- style: profiler-config", "- style: env");
        let (key, message) = refusal(&twice);
        assert_eq!(key, "styles[1].style");
        assert!(message.contains("twice"), "{message}");
        let silent = VLLM_ASCEND_YAML.replace(
            "    pipe_metrics: false\n    note: >-",
            "    pipe_metrics: false\n    ignored: >-",
        );
        assert!(refusal(&silent).0.starts_with("metrics"));
        let endpoint = VLLM_ASCEND_YAML.replace("health: /health", "health: health");
        let (key, message) = refusal(&endpoint);
        assert_eq!(key, "http.health");
        assert!(message.contains("does not start"), "{message}");
        let unknown = VLLM_ASCEND_YAML.replace(
            "env: { level: Level1, metrics: AiCoreNone }",
            "env: { level: Level1, metrics: Nothing }",
        );
        let (key, message) = refusal(&unknown);
        assert_eq!(key, "style_defaults.env.metrics");
        assert!(message.contains("not a known metrics"), "{message}");
        let no_model = VLLM_ASCEND_YAML.replace("subcommand: serve", "subcommand: run");
        assert_eq!(refusal(&no_model).0, "command.subcommand");
        let bare = VLLM_ASCEND_YAML.replace("port: [--port]", "port: [port]");
        assert_eq!(refusal(&bare).0, "command.port");
        let shared = VLLM_ASCEND_YAML.replace("host: [--host]", "host: [--port]");
        let (key, message) = refusal(&shared);
        assert_eq!(key, "command");
        assert!(message.contains("`--port` is listed twice"), "{message}");
        let typo = VLLM_ASCEND_YAML.replace("  default_port:", "  default_prot:");
        let (key, message) = refusal(&typo);
        assert!(key.starts_with("command"), "{key}: {message}");
        assert!(message.contains("default_prot"), "{message}");
        let clash = refusal(&VLLM_ASCEND_YAML.replace("id: vllm-ascend", "id: cann-recipes-infer"));
        assert_eq!(clash.0, "id", "{}", clash.1);
    }

    #[test]
    fn an_env_era_checkout_shows_its_style_level_metrics_and_stack_argument() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        package(root);
        write(
            root,
            &[
                ("setup.py", "entry_points={\"vllm.platform_plugins\": []}\n"),
                (
                    "vllm_ascend/worker/worker_v1.py",
                    "# VLLM_TORCH_PROFILER_DIR in a comment does not count\n\
                     if envs.VLLM_TORCH_PROFILER_DIR:\n\
                     \x20   level=ProfilerLevel.Level1,\n\
                     \x20   aic_metrics=AiCMetrics.AiCoreNone,\n\
                     \x20   with_stack=envs.VLLM_TORCH_PROFILER_WITH_STACK,\n",
                ),
            ],
        );
        let found = detect(root).unwrap();
        assert_eq!(found.install, InstallKind::Checkout);
        assert_eq!(found.marker.as_ref().unwrap().path, "setup.py");
        let style = found.config_style.as_ref().unwrap();
        assert_eq!((style.value, style.evidence.line), (ConfigStyle::Env, 2));
        assert_eq!(found.level.as_ref().unwrap().value, "Level1");
        assert_eq!(found.aic_metrics.as_ref().unwrap().value, "AiCoreNone");
        let stack = found.stack_argument.as_ref().unwrap();
        assert_eq!(
            (stack.value.as_str(), stack.evidence.line),
            ("with_stack", 5)
        );
        assert!(found.async_parse.is_none() && found.worker_name.is_none());
        let facts = found.facts(EngineDefinition::vllm_ascend()).unwrap();
        assert_eq!(facts.metrics, "AiCoreNone");
    }

    #[test]
    fn an_installed_profiler_config_version_shows_async_parse_and_a_continued_stack_line() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        package(root);
        write(
            root,
            &[
                ("vllm_ascend-0.25.0.dist-info/METADATA", ""),
                (
                    "vllm_ascend/profiler/torch_npu_profiler.py",
                    "d = profiler_config.torch_profiler_dir\n\
                     m = AiCMetrics.PipeUtilization\n\
                     with_modules=bool(\n\
                     \x20   profiler_config.torch_profiler_with_stack),\n\
                     h = handler(d, worker_name=name, async_mode=True)\n",
                ),
            ],
        );
        let found = detect(root).unwrap();
        assert_eq!(found.install, InstallKind::Installed);
        assert_eq!(
            found.config_style.as_ref().unwrap().value,
            ConfigStyle::ProfilerConfig
        );
        assert!(found.level.is_none());
        let stack = found.stack_argument.as_ref().unwrap();
        assert_eq!(
            (stack.value.as_str(), stack.evidence.line),
            ("with_modules", 3)
        );
        assert_eq!(found.async_parse.as_ref().unwrap().line, 5);
        assert_eq!(found.worker_name.as_ref().unwrap().line, 5);
        let d = EngineDefinition::vllm_ascend();
        let facts = found.facts(d).unwrap();
        // The level is not in this file: the style's default fills it.
        assert_eq!(
            (
                facts.level.as_str(),
                facts.metrics.as_str(),
                facts.async_parse
            ),
            ("Level1", "PipeUtilization", true)
        );
    }

    #[test]
    fn a_version_with_stacks_fixed_in_code_does_not_read_the_stack_setting() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        package(root);
        write(
            root,
            &[(
                "vllm_ascend/worker/worker_v1.py",
                "if envs.VLLM_TORCH_PROFILER_DIR:\n    p = profile(with_stack=False)\n",
            )],
        );
        let found = detect(root).unwrap();
        assert!(found.stack_argument.is_none());
        assert!(
            found
                .notes
                .iter()
                .any(|n| n.contains("does not read VLLM_TORCH_PROFILER_WITH_STACK")),
            "{:?}",
            found.notes
        );
        assert!(
            !found
                .facts(EngineDefinition::vllm_ascend())
                .unwrap()
                .stack_setting_read
        );
    }

    #[test]
    fn two_styles_in_one_source_are_not_guessed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        package(root);
        write(
            root,
            &[(
                "vllm_ascend/worker/worker.py",
                "a = VLLM_TORCH_PROFILER_DIR\nb = profiler_config.torch_profiler_dir\n",
            )],
        );
        let found = detect(root).unwrap();
        assert_eq!(found.install, InstallKind::PackageOnly);
        assert!(found.config_style.is_none());
        assert!(
            found
                .notes
                .iter()
                .any(|n| n.contains("more than one config style")),
            "{:?}",
            found.notes
        );
        assert!(found.facts(EngineDefinition::vllm_ascend()).is_none());
    }

    #[test]
    fn a_directory_without_the_package_is_not_the_engine() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[("vllm_ascend/__init__.py", "")]);
        assert!(detect(dir.path()).is_none());
    }

    #[test]
    fn settings_follow_the_style_the_stack_switch_and_the_tp() {
        let d = EngineDefinition::vllm_ascend();
        let dir = Path::new("prof dir");
        let env = d.settings(ConfigStyle::Env, dir, 1, false).unwrap();
        assert_eq!(
            env.env,
            vec![
                ("VLLM_TORCH_PROFILER_DIR".to_owned(), "prof dir".to_owned()),
                ("VLLM_TORCH_PROFILER_WITH_STACK".to_owned(), "0".to_owned()),
            ]
        );
        assert!(env.extra_args.is_empty());
        assert_eq!(env.aic_metrics, "AiCoreNone");
        assert!(
            env.no_pipe_metrics_note
                .as_deref()
                .unwrap()
                .contains("no pipe metrics")
        );
        assert_eq!(env.parses_in_engine, ParseMode::InEngine);
        let config = d
            .settings(ConfigStyle::ProfilerConfig, dir, 4, true)
            .unwrap();
        assert!(config.env.is_empty());
        assert_eq!(
            config.extra_args,
            vec![
                "--profiler-config.profiler=torch",
                "--profiler-config.torch_profiler_dir=prof dir",
                "--profiler-config.torch_profiler_with_stack=true",
            ]
        );
        assert_eq!(config.aic_metrics, "PipeUtilization");
        assert_eq!(config.no_pipe_metrics_note, None);
        assert_eq!(config.parses_in_engine, ParseMode::RawOnly);
        assert_eq!(
            (
                config.health_path.as_str(),
                config.start_path.as_str(),
                config.stop_path.as_str()
            ),
            ("/health", "/start_profile", "/stop_profile")
        );
        assert_eq!(
            (
                config.run_dir_suffix.as_str(),
                config.frontend_trace_suffix.as_str()
            ),
            ("_ascend_pt", ".async_llm")
        );
        let facts = VersionFacts {
            async_parse: true,
            ..d.style_facts(ConfigStyle::ProfilerConfig)
        };
        assert_eq!(
            d.settings_for(&facts, dir, 1, false)
                .unwrap()
                .parses_in_engine,
            ParseMode::Async
        );
        assert_eq!(
            d.settings_for(&facts, dir, 2, false)
                .unwrap()
                .parses_in_engine,
            ParseMode::RawOnly
        );
    }
}
