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
    /// The start request's JSON body (output directory, stack and shape switches, steps),
    /// the environment giving the defaults it overrides.
    Request,
}

impl ConfigStyle {
    /// Its name in reports and in the definition.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Env => "env",
            Self::ProfilerConfig => "profiler-config",
            Self::Request => "request",
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
    /// The directories (relative to the scanned root, `""` the root itself) the package may sit
    /// in: a checkout may keep it below the repository's root. Every other path of the
    /// definition is relative to the one the package is found in.
    #[serde(default = "root_only")]
    pub source_roots: Vec<String>,
    /// The modules user code imports to use the engine (route's import detection).
    #[serde(default)]
    pub import_modules: Vec<String>,
    /// The package the engine runs inside (a platform plugin's host), when it has one: found
    /// beside the engine's package, it must offer the switch of the style the engine reads.
    pub host_package: Option<String>,
}

fn root_only() -> Vec<String> {
    vec![String::new()]
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

/// The JSON fields of a start request that npuprof sets (the request style).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyKeys {
    /// The output directory's field.
    pub dir: String,
    /// The call-stack switch's field.
    pub stack: String,
    /// The shape-recording switch's field.
    pub shapes: String,
    /// The field asking the server to stop by itself after N forward steps.
    pub steps: String,
    /// The field asking for separate runs per stage (prefill, decode), N steps each.
    pub by_stage: String,
}

impl BodyKeys {
    fn fields(&self) -> [(&'static str, &str); 5] {
        [
            ("dir", &self.dir),
            ("stack", &self.stack),
            ("shapes", &self.shapes),
            ("steps", &self.steps),
            ("by_stage", &self.by_stage),
        ]
    }
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
    /// Request style: the variable switching shape recording (its default).
    pub shapes_env: Option<String>,
    /// Env style: the values written for on and off.
    pub env_true: Option<String>,
    /// Env style: the value written for off.
    pub env_false: Option<String>,
    /// Profiler-config style: the serve command's flag.
    pub flag: Option<String>,
    /// Profiler-config style: its keys.
    pub keys: Option<ProfilerConfigKeys>,
    /// Profiler-config style: files (relative to the directory holding the host package) of
    /// which the host must have one to offer the flag.
    #[serde(default)]
    pub host_files: Vec<String>,
    /// Request style: the start request's fields.
    pub body: Option<BodyKeys>,
    /// Whether stacks are on when the user sets nothing.
    pub stack_default: bool,
    /// Request style: whether shapes are recorded when the user sets nothing.
    pub shapes_default: Option<bool>,
}

impl StyleDef {
    /// The name of the setting that switches stacks in this style.
    pub fn stack_key(&self) -> &str {
        match self.style {
            ConfigStyle::Env => self.stack_env.as_deref().unwrap_or_default(),
            ConfigStyle::ProfilerConfig => self.keys.as_ref().map_or("", |k| k.stack.as_str()),
            ConfigStyle::Request => self.body.as_ref().map_or("", |b| b.stack.as_str()),
        }
    }

    /// The environment variable naming the output directory (env and request styles).
    pub fn dir_key_env(&self) -> &str {
        self.dir_env.as_deref().unwrap_or_default()
    }

    /// The name of the setting that names the output directory.
    pub fn dir_key(&self) -> &str {
        match self.style {
            ConfigStyle::Env => self.dir_env.as_deref().unwrap_or_default(),
            ConfigStyle::ProfilerConfig => self.keys.as_ref().map_or("", |k| k.dir.as_str()),
            ConfigStyle::Request => self.body.as_ref().map_or("", |b| b.dir.as_str()),
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

/// What a version builds when its profiler files pass no experimental config: torch_npu's
/// defaults. A version whose files hold `evidence` builds its own.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentalConfigDef {
    /// The text that shows an experimental config is built.
    pub evidence: String,
    /// The `ProfilerLevel` without one.
    pub level: String,
    /// The `AiCMetrics` without one.
    pub metrics: String,
    /// Since when versions build one, for messages.
    pub since: String,
}

/// A mode of the engine that excludes the torch profiler.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExclusiveMode {
    /// Its name.
    pub name: String,
    /// Texts in a profiler file showing the version has it.
    pub evidence: Vec<String>,
    /// What to say.
    pub note: String,
}

/// Prefill/decode disaggregation: how a node's command shows it and what to do.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PdDef {
    /// Options of the serve command that make the server one node of a pair.
    pub options: Vec<String>,
    /// Values of those options that leave the server whole, one process group running prefill
    /// and decode (SGLang's `--disaggregation-mode null`, its default).
    #[serde(default)]
    pub whole: Vec<String>,
    /// Files of a checkout that front a pair (relative to the source root).
    #[serde(default)]
    pub proxy_files: Vec<String>,
    /// What to do.
    pub note: String,
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
    /// The end of the API process's own trace file's name (engines whose API process writes one).
    pub frontend_trace_suffix: Option<String>,
    /// The setting that stops the API process's trace.
    pub frontend_off_key: Option<String>,
    /// With runs per stage (the request style's `by_stage`), the order each rank writes them in.
    #[serde(default)]
    pub stage_order: Vec<npuprof_schedule::Phase>,
}

/// How the serve command line is read: the word after which the model argument comes and the
/// options (every spelling) that name the served model, the address and the parallel sizes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandDef {
    /// The subcommand (`serve`) or module (`-m pkg.launch`) after which the options come, and
    /// the model when no model option is listed (`serve MODEL`).
    pub subcommand: String,
    /// The options naming the model, when it is an option (`--model-path M`).
    #[serde(default)]
    pub model: Vec<String>,
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
            (CommandOption::Model, &self.model),
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
    /// The model (its path or hub name).
    Model,
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
    /// The largest tensor-parallel size whose worker parses in the engine process (`None`: every
    /// rank parses, whatever the size).
    #[serde(default)]
    pub in_engine_max_tp: Option<u32>,
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
    /// The id of route's mechanism for code that imports the engine (route checks it names one).
    pub mechanism: String,
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
    /// What versions that build no experimental config record (engines that had such versions).
    pub experimental_config: Option<ExperimentalConfigDef>,
    /// Modes that exclude the torch profiler.
    #[serde(default)]
    pub exclusive_modes: Vec<ExclusiveMode>,
    /// Known levels.
    pub levels: Vec<LevelDef>,
    /// Known metrics values.
    pub metrics: Vec<MetricsDef>,
    /// Level and metrics of each style's newest version (when no source was read).
    pub style_defaults: BTreeMap<ConfigStyle, LevelMetrics>,
    /// The torch_npu arguments the stack key may reach.
    pub stack_arguments: Vec<String>,
    /// A text showing that the worker parses asynchronously (engines that have such versions).
    pub async_parse_evidence: Option<String>,
    /// A text showing that run directories are named by the rank suffix.
    pub worker_name_evidence: Option<String>,
    /// The rank suffix's shape, for messages.
    pub worker_name_shape: Option<String>,
    /// A text showing that the start takes a prefix for the run directories' names.
    pub run_prefix_evidence: Option<String>,
    /// The endpoints.
    pub http: Http,
    /// The output layout.
    pub results: ResultsDef,
    /// Who parses.
    pub parse: ParseDef,
    /// How an offline run starts and stops profiling, for messages.
    pub offline_control: String,
    /// Prefill/decode disaggregation, when the engine has it.
    pub pd: Option<PdDef>,
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
    /// The end of the frontend trace's file name (engines whose API process writes one).
    pub frontend_trace_suffix: Option<String>,
    /// The start request's fields (the request style): the output directory, the stack and
    /// shape switches and the window go in its JSON body.
    pub start_body: Option<BodyKeys>,
    /// With runs per stage, the order each rank writes them in.
    pub stage_order: Vec<npuprof_schedule::Phase>,
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
                ConfigStyle::Request => {
                    style.dir_env.is_some()
                        && style.stack_env.is_some()
                        && style.shapes_env.is_some()
                        && style.env_true.is_some()
                        && style.env_false.is_some()
                        && style.body.is_some()
                        && style.shapes_default.is_some()
                }
            };
            if !complete {
                return fail(
                    key(""),
                    format!("style `{name}` lacks the settings it needs"),
                );
            }
            if let Some((field, _)) = style
                .body
                .iter()
                .flat_map(BodyKeys::fields)
                .find(|(_, v)| v.is_empty())
            {
                return fail(
                    key(&format!(".body.{field}")),
                    format!("style `{name}` names no request field for `{field}`"),
                );
            }
            if !style.host_files.is_empty() && self.detect.host_package.is_none() {
                return fail(
                    key(".host_files"),
                    format!("style `{name}` names host files but detect names no host_package"),
                );
            }
            if style.body.is_some() && self.results.stage_order.len() != 2 {
                return fail(
                    "results.stage_order".to_owned(),
                    format!(
                        "style `{name}` asks for runs per stage: give the order of its two stages"
                    ),
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
        self.validate_markers()?;
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
        // The model follows the subcommand, or one of the model options when it has them.
        let model_after: Vec<&str> = if command.model.is_empty() {
            vec![command.subcommand.as_str()]
        } else {
            command.model.iter().map(String::as_str).collect()
        };
        let follows = self
            .serve_command
            .windows(2)
            .any(|w| model_after.contains(&w[0].as_str()) && w[1] == "MODEL");
        let key = if command.model.is_empty() {
            "command.subcommand"
        } else {
            "command.model"
        };
        if !follows || !self.serve_command.contains(&command.subcommand) {
            return fail(
                key.to_owned(),
                format!(
                    "serve_command does not hold `{}` with MODEL after {}",
                    command.subcommand,
                    model_after.join(" or ")
                ),
            );
        }
        if !command.model.is_empty() && !valid_options(&command.model) {
            return fail(
                "command.model".to_owned(),
                "must list options, each starting with `-` and without `=`".to_owned(),
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
            if names.is_empty() || !valid_options(names) {
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

    /// Checks the texts and places the detection reads: source roots inside the scanned root,
    /// the experimental-config defaults known, exclusive modes and PD options non-empty.
    fn validate_markers(&self) -> Result<(), (String, String)> {
        let fail = |key: &str, message: String| Err((key.to_owned(), message));
        if let Some(root) = self
            .detect
            .source_roots
            .iter()
            .find(|r| r.starts_with('/') || r.split('/').any(|part| part == ".."))
        {
            return fail(
                "detect.source_roots",
                format!("`{root}` leaves the scanned root"),
            );
        }
        if self.detect.source_roots.is_empty() {
            return fail("detect.source_roots", "lists no directory".to_owned());
        }
        if let Some(ec) = &self.experimental_config {
            if ec.evidence.is_empty() {
                return fail("experimental_config.evidence", "is empty".to_owned());
            }
            if !self.levels.iter().any(|l| l.value == ec.level) {
                return fail(
                    "experimental_config.level",
                    format!("`{}` is not a known level", ec.level),
                );
            }
            if self.metrics_def(&ec.metrics).is_none() {
                return fail(
                    "experimental_config.metrics",
                    format!("`{}` are not a known metrics value", ec.metrics),
                );
            }
        }
        for (i, mode) in self.exclusive_modes.iter().enumerate() {
            if mode.evidence.is_empty() || mode.evidence.iter().any(String::is_empty) {
                return fail(
                    &format!("exclusive_modes[{i}].evidence"),
                    format!("mode `{}` needs non-empty evidence texts", mode.name),
                );
            }
        }
        let stages = &self.results.stage_order;
        if let Some((i, twice)) = stages
            .iter()
            .enumerate()
            .find(|(i, s)| stages[..*i].contains(s))
        {
            return fail(
                &format!("results.stage_order[{i}]"),
                format!("stage `{}` is listed twice", twice.name()),
            );
        }
        if let Some(pd) = &self.pd
            && (pd.options.is_empty()
                || !valid_options(&pd.options)
                || pd.whole.iter().any(String::is_empty))
        {
            return fail(
                "pd.options",
                "must list options, each starting with `-` and without `=`, and no empty \
                 `whole` value"
                    .to_owned(),
            );
        }
        let optional = [
            ("async_parse_evidence", &self.async_parse_evidence),
            ("worker_name_evidence", &self.worker_name_evidence),
            ("worker_name_shape", &self.worker_name_shape),
            ("run_prefix_evidence", &self.run_prefix_evidence),
            (
                "results.frontend_trace_suffix",
                &self.results.frontend_trace_suffix,
            ),
        ];
        if let Some((key, _)) = optional
            .iter()
            .find(|(_, v)| v.as_deref().is_some_and(str::is_empty))
        {
            return fail(key, "is empty: leave it out instead".to_owned());
        }
        if self.worker_name_evidence.is_some() != self.worker_name_shape.is_some() {
            return fail(
                "worker_name_shape",
                "worker_name_evidence and worker_name_shape go together".to_owned(),
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
        if self.parse.in_engine_max_tp.is_some_and(|max| tp > max) {
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
                ConfigStyle::Request => {
                    let off = style.env_false.clone().unwrap_or_default();
                    let stack = if with_stack {
                        style.env_true.clone().unwrap_or_default()
                    } else {
                        off.clone()
                    };
                    let names = [&style.dir_env, &style.stack_env, &style.shapes_env];
                    for (name, value) in names.into_iter().zip([dir.to_owned(), stack, off]) {
                        env.extend(name.clone().map(|n| (n, value)));
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
            start_body: self.style(facts.style).and_then(|s| s.body.clone()),
            stage_order: self.results.stage_order.clone(),
        })
    }
}

/// Whether every name is an option (`-x`, `--xy`) without a value.
fn valid_options(names: &[String]) -> bool {
    names
        .iter()
        .all(|n| n.starts_with('-') && !n.contains('=') && n.len() > 1)
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
    /// The directory holding the package, relative to the scanned root (`""`: the root).
    pub source_root: String,
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
    /// The line building an experimental config (engines that had versions without one).
    pub experimental_config: Option<SourceLine>,
    /// Whether the profiler files build no experimental config: torch_npu's defaults apply
    /// (the definition's `experimental_config` level and metrics).
    pub no_experimental_config: bool,
    /// The line showing that the start takes a prefix for the run directories' names.
    pub run_prefix: Option<SourceLine>,
    /// Modes this version has that exclude the torch profiler, each with its line.
    pub exclusive_modes: Vec<Found<String>>,
    /// The host package beside the engine's, when there is one: whether it offers the style's
    /// switch.
    pub host: Option<HostCheck>,
    /// A checkout's PD proxy, when it has one (the requests it does not forward).
    pub pd_proxy: Option<String>,
    /// What could not be decided, and why.
    pub notes: Vec<String>,
}

/// The host package found beside the engine's (an installed pair).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostCheck {
    /// The host package's directory, relative to the scanned root.
    pub package: String,
    /// The file showing it offers the style's switch (`None`: it does not).
    pub offers_style: Option<String>,
}

impl Detected {
    /// The version's facts, when its style is known (level and metrics from the style's
    /// defaults when the source does not name them, torch_npu's when it builds no experimental
    /// config).
    pub fn facts(&self, definition: &EngineDefinition) -> Option<VersionFacts> {
        let style = self.config_style.as_ref()?.value;
        let mut defaults = definition.style_facts(style);
        if let Some(ec) = definition
            .experimental_config
            .as_ref()
            .filter(|_| self.no_experimental_config)
        {
            defaults.level.clone_from(&ec.level);
            defaults.metrics.clone_from(&ec.metrics);
        }
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

    /// Why the version's switch cannot be used as found: the host package beside it does not
    /// offer the style the engine reads (an installed pair that disagrees).
    pub fn host_mismatch(&self, definition: &EngineDefinition) -> Option<String> {
        let host = self.host.as_ref().filter(|h| h.offers_style.is_none())?;
        let style = definition.style(self.config_style.as_ref()?.value)?;
        Some(format!(
            "{} reads {} ({}), but the {} package beside it ({}) does not offer it (none of {}): install the {} version that matches it, or the {} version that matches the installed {}",
            definition.id,
            style.flag.as_deref().unwrap_or(style.style.as_str()),
            self.config_style
                .as_ref()
                .map(|s| format!("{}:{}", s.evidence.path, s.evidence.line))
                .unwrap_or_default(),
            host.package.rsplit('/').next().unwrap_or_default(),
            host.package,
            style.host_files.join(", "),
            host.package.rsplit('/').next().unwrap_or_default(),
            definition.id,
            host.package.rsplit('/').next().unwrap_or_default(),
        ))
    }
}

/// The first engine whose package is under `root`, with what its source proves.
pub fn detect(root: &Path) -> Option<Detected> {
    EngineDefinition::all()
        .iter()
        .find_map(|definition| detect_with(definition, root))
}

/// `file` under the source root `prefix`, as reports show it.
fn under(prefix: &str, file: &str) -> String {
    if prefix.is_empty() {
        file.to_owned()
    } else {
        format!("{}/{file}", prefix.trim_end_matches('/'))
    }
}

/// What `root` holds of `definition`'s engine (`None` when its package directory is in none of
/// the definition's source roots).
pub fn detect_with(definition: &EngineDefinition, root: &Path) -> Option<Detected> {
    let d = &definition.detect;
    let (prefix, base) = d.source_roots.iter().find_map(|prefix| {
        let base = root.join(prefix);
        let package = base.join(&d.package_dir);
        d.package_files
            .iter()
            .all(|f| package.join(f).is_file())
            .then(|| (prefix.clone(), base))
    })?;
    let mut notes = Vec::new();
    let (install, marker) = install_kind(definition, &base, &prefix, &mut notes);
    let files: Vec<(String, String)> = definition
        .profiler_files
        .iter()
        .filter_map(|f| read_source(&base, f, &mut notes).map(|text| (under(&prefix, f), text)))
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
    let evidence = |text: &Option<String>| {
        text.as_ref()
            .and_then(|t| first_line(&files, |l| l.contains(t.as_str())))
    };
    let async_parse = evidence(&definition.async_parse_evidence);
    let worker_name = evidence(&definition.worker_name_evidence);
    let run_prefix = evidence(&definition.run_prefix_evidence);
    let experimental_config = definition
        .experimental_config
        .as_ref()
        .and_then(|ec| first_line(&files, |l| l.contains(&ec.evidence)));
    let no_experimental_config = match &definition.experimental_config {
        Some(ec) if experimental_config.is_none() && !files.is_empty() => {
            notes.push(format!(
                "no {} in the profiler files: this version (before {}) passes no experimental config, so torch_npu's defaults apply ({} + {}, no pipe metrics)",
                ec.evidence, ec.since, ec.level, ec.metrics
            ));
            true
        }
        _ => false,
    };
    let exclusive_modes: Vec<Found<String>> = definition
        .exclusive_modes
        .iter()
        .filter_map(|mode| {
            first_line(&files, |l| {
                mode.evidence.iter().any(|e| l.contains(e.as_str()))
            })
            .map(|evidence| Found {
                value: mode.name.clone(),
                evidence,
            })
        })
        .collect();
    let host = host_check(definition, style.as_ref(), &base, &prefix);
    let pd_proxy = definition.pd.as_ref().and_then(|pd| {
        pd.proxy_files
            .iter()
            .find(|f| base.join(f).is_file())
            .map(|f| under(&prefix, f))
    });
    let detected = Detected {
        id: definition.id.clone(),
        install,
        source_root: prefix,
        marker,
        config_style: style,
        level,
        aic_metrics: metrics,
        stack_argument,
        async_parse,
        worker_name,
        experimental_config,
        no_experimental_config,
        run_prefix,
        exclusive_modes,
        host,
        pd_proxy,
        notes,
    };
    let mismatch = detected.host_mismatch(definition);
    Some(Detected {
        notes: detected.notes.iter().cloned().chain(mismatch).collect(),
        ..detected
    })
}

/// The host package beside the engine's, when the style found needs it to offer its switch.
fn host_check(
    definition: &EngineDefinition,
    style: Option<&Found<ConfigStyle>>,
    base: &Path,
    prefix: &str,
) -> Option<HostCheck> {
    let host = definition.detect.host_package.as_ref()?;
    let style = definition.style(style?.value)?;
    if style.host_files.is_empty() || !base.join(host).is_dir() {
        return None;
    }
    Some(HostCheck {
        package: under(prefix, host),
        offers_style: style
            .host_files
            .iter()
            .find(|f| base.join(f).is_file())
            .map(|f| under(prefix, f)),
    })
}

fn install_kind(
    definition: &EngineDefinition,
    root: &Path,
    prefix: &str,
    notes: &mut Vec<String>,
) -> (InstallKind, Option<SourceLine>) {
    let d = &definition.detect;
    if let Some(text) = read_source(root, &d.checkout.file, notes) {
        let files = [(under(prefix, &d.checkout.file), text)];
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
                path: under(prefix, &name),
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

    const SGLANG_YAML: &str = crate::catalog::BUILTIN[2].1;

    fn sglang() -> &'static EngineDefinition {
        EngineDefinition::by_id("sglang").expect("compiled in")
    }

    /// A miniature SGLang scheduler profiler file: the request style's evidence, the stack
    /// argument, and (`experimental`) the experimental config of PR #24835.
    fn sglang_profiler(experimental: bool) -> String {
        let config = if experimental {
            "    experimental_config=torch_npu.profiler._ExperimentalConfig(\n\
             \x20       profiler_level=torch_npu.profiler.ProfilerLevel.Level1,\n\
             \x20       aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization),\n"
        } else {
            ""
        };
        format!(
            "def init(recv_req):\n    d = recv_req.output_dir\n\
             p = profile(\n    with_stack=with_stack if with_stack is not None else True,\n{config})\n"
        )
    }

    #[test]
    fn a_checkout_below_its_python_directory_with_the_experimental_config_is_level1_pipe() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            &[
                ("python/pyproject.toml", "[project]\nname = \"sglang\"\n"),
                ("python/sglang/__init__.py", ""),
                ("python/sglang/launch_server.py", ""),
                (
                    "python/sglang/srt/managers/scheduler_components/profiler_manager.py",
                    &sglang_profiler(true),
                ),
            ],
        );
        let found = detect(root).expect("detected");
        assert_eq!(found.id, "sglang");
        assert_eq!(
            (found.install, found.source_root.as_str()),
            (InstallKind::Checkout, "python")
        );
        assert_eq!(found.marker.as_ref().unwrap().path, "python/pyproject.toml");
        let style = found.config_style.as_ref().unwrap();
        assert_eq!(style.value, ConfigStyle::Request);
        assert!(style.evidence.path.starts_with("python/sglang/srt/"));
        assert_eq!(found.stack_argument.as_ref().unwrap().value, "with_stack");
        assert!(found.experimental_config.is_some() && !found.no_experimental_config);
        let facts = found.facts(sglang()).unwrap();
        assert_eq!(
            (facts.level.as_str(), facts.metrics.as_str()),
            ("Level1", "PipeUtilization")
        );
        assert_eq!(sglang().no_pipe_metrics_note(&facts.metrics), None);
    }

    /// Before PR #24835 the profiler file builds no experimental config: torch_npu's defaults,
    /// Level0 without pipe metrics, said in a note.
    #[test]
    fn an_installed_version_before_the_experimental_config_has_no_pipe_metrics() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            &[
                ("sglang-0.5.10.dist-info/METADATA", ""),
                ("sglang/__init__.py", ""),
                ("sglang/launch_server.py", ""),
                (
                    "sglang/srt/managers/scheduler_profiler_mixin.py",
                    &sglang_profiler(false),
                ),
            ],
        );
        let found = detect(root).expect("detected");
        assert_eq!(found.install, InstallKind::Installed);
        assert!(found.no_experimental_config, "{:?}", found.notes);
        assert!(
            found.notes.iter().any(|n| n.contains("PR #24835")),
            "{:?}",
            found.notes
        );
        let facts = found.facts(sglang()).unwrap();
        assert_eq!(
            (facts.level.as_str(), facts.metrics.as_str()),
            ("Level0", "AiCoreNone")
        );
        assert!(sglang().no_pipe_metrics_note(&facts.metrics).is_some());
    }

    #[test]
    fn the_request_style_sets_defaults_off_and_names_the_body_fields() {
        let d = sglang();
        let s = d
            .settings(ConfigStyle::Request, Path::new("out"), 4, false)
            .unwrap();
        assert_eq!(
            s.env,
            [
                ("SGLANG_TORCH_PROFILER_DIR", "out"),
                ("SGLANG_PROFILE_WITH_STACK", "0"),
                ("SGLANG_PROFILE_RECORD_SHAPES", "0"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
        assert!(s.extra_args.is_empty());
        let body = s.start_body.as_ref().unwrap();
        assert_eq!(
            (
                body.dir.as_str(),
                body.steps.as_str(),
                body.by_stage.as_str()
            ),
            ("output_dir", "num_steps", "profile_by_stage")
        );
        // Every scheduler parses, whatever the tensor-parallel size.
        assert_eq!(s.parses_in_engine, ParseMode::InEngine);
        assert_eq!(s.frontend_trace_suffix, None);
        assert_eq!(
            s.stage_order,
            [
                npuprof_schedule::Phase::Prefill,
                npuprof_schedule::Phase::Decode
            ]
        );
        assert_eq!(d.command.default_port, 30000);
    }

    #[test]
    fn hostile_engine_definitions_are_refused_naming_the_key() {
        let cases = [
            (
                "body:\n      dir: output_dir",
                "body:\n      dir: \"\"",
                "styles[0].body.dir",
            ),
            (
                "  stage_order: [prefill, decode]",
                "  stage_order: [prefill]",
                "results.stage_order",
            ),
            (
                "  stage_order: [prefill, decode]",
                "  stage_order: [decode, decode]",
                "results.stage_order[1]",
            ),
            (
                "  level: Level0\n",
                "  level: Level9\n",
                "experimental_config.level",
            ),
            (
                "source_roots: [\"\", python]",
                "source_roots: [\"..\"]",
                "detect.source_roots",
            ),
            (
                "options: [--disaggregation-mode]",
                "options: [disaggregation]",
                "pd.options",
            ),
            ("whole: [\"null\"]", "whole: [\"\"]", "pd.options"),
            (
                "model: [--model-path, --model]",
                "model: [--model-path=x]",
                "command.model",
            ),
            (
                "[python, -m, sglang.launch_server, --model-path, MODEL]",
                "[python, -m, sglang.launch_server, MODEL]",
                "command.model",
            ),
            ("    shapes_default: true\n", "", "styles[0]"),
        ];
        for (from, to, key) in cases {
            assert!(SGLANG_YAML.contains(from), "{from}");
            let (got, message) = refusal(&SGLANG_YAML.replace(from, to));
            assert_eq!(got, key, "{to}: {message}");
        }
        let typo = SGLANG_YAML.replace("shapes_env:", "shape_env:");
        assert!(refusal(&typo).1.contains("shape_env"));
    }

    /// An installed vllm-ascend whose worker reads the profiler config, beside a vLLM that does
    /// not offer it: the pair disagrees, and that is said (never the flag recommended).
    #[test]
    fn an_installed_pair_whose_host_lacks_the_flag_is_a_mismatch() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        package(root);
        write(
            root,
            &[
                ("vllm_ascend-0.18.0.dist-info/METADATA", ""),
                ("vllm/__init__.py", ""),
                (
                    "vllm_ascend/worker/worker.py",
                    "d = profiler_config.torch_profiler_dir\n\
                     if envs_ascend.MSMONITOR_USE_DAEMON:\n    dp.step()\n\
                     def profile(self, is_start=True, profile_prefix=None):\n",
                ),
            ],
        );
        let d = EngineDefinition::vllm_ascend();
        let found = detect(root).expect("detected");
        let host = found.host.as_ref().expect("vllm beside it");
        assert_eq!(
            (host.package.as_str(), host.offers_style.as_deref()),
            ("vllm", None)
        );
        let mismatch = found.host_mismatch(d).expect("a mismatch");
        assert!(mismatch.contains("--profiler-config"), "{mismatch}");
        assert!(found.notes.contains(&mismatch));
        assert_eq!(found.exclusive_modes.len(), 1);
        assert_eq!(found.exclusive_modes[0].evidence.line, 2);
        assert_eq!(found.run_prefix.as_ref().unwrap().line, 4);
        write(
            root,
            &[("vllm/config/profiler.py", "class ProfilerConfig: ...\n")],
        );
        let found = detect(root).expect("detected");
        assert_eq!(
            found.host.unwrap().offers_style.as_deref(),
            Some("vllm/config/profiler.py")
        );
    }

    #[test]
    fn a_checkout_with_the_pd_proxy_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        package(root);
        let proxy = "examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py";
        write(root, &[(proxy, "")]);
        assert_eq!(detect(root).unwrap().pd_proxy.as_deref(), Some(proxy));
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
                config.frontend_trace_suffix.as_deref().unwrap_or_default()
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
