//! The result of a scan: the stable JSON schema of `npuprof route --json`.
//!
//! Every path is relative to the scanned root and uses `/` separators; every line is 1-based.
//! Lists are sorted (evidence by path, then line, then kind) so the output is deterministic.

use npuprof_repository::engine::EngineDefinition;
use serde::Serialize;

/// Version of the JSON schema below; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything `route` found in a repository, and the decision.
#[derive(Debug, Clone, Serialize)]
pub struct RouteReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The scanned directory, as given.
    pub root: String,
    /// The decision.
    pub route: Route,
    /// `"A"` (use the repository's own profiler: `framework`, `framework-other`) or `"B"` (inject one).
    pub path: &'static str,
    /// One sentence saying why.
    pub reason: String,
    /// What to do next.
    pub next: Next,
    /// The repository definition that applies: its id, the file it was read from and why.
    pub definition: DefinitionUsed,
    /// The serving engine whose checkout or installed package the root is, when a definition
    /// recognises it (then it decides the route and the next step).
    pub engine: Option<crate::engine::EngineRoute>,
    /// The recipes-style wrapper, when one was found (set for `framework`).
    pub wrapper: Option<Wrapper>,
    /// Built-in profiling mechanisms found, with the knobs that drive them.
    pub mechanisms: Vec<Mechanism>,
    /// Live evidence, sorted by path, then line.
    pub evidence: Vec<Evidence>,
    /// How the live call sites reach the profiler, one call per link, in discovery order.
    pub call_chain: Vec<ChainLink>,
    /// Profiler code that exists but is not live (defined, never called).
    pub dead_paths: Vec<DeadPath>,
    /// Run configurations (`models/*/config/*.yaml`, and any YAML with a top-level `model_config`).
    pub configs: Vec<RunConfig>,
    /// Python scripts that look like entry points (`if __name__ == "__main__"`), most likely first.
    pub entry_candidates: Vec<String>,
    /// Files that could not be read or parsed, and other things worth knowing; the scan went on.
    pub warnings: Vec<Warning>,
    /// Files left out on purpose (too large).
    pub skipped: Vec<Skipped>,
    /// Counts of what was looked at.
    pub stats: Stats,
}

/// The three routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Route {
    /// A cann-recipes style built-in profiler wired into the loop, which `npuprof patch` can set.
    Framework,
    /// Another loop-wired mechanism (vLLM, SGLang, MindSpeed, dynamic_profile, a profile loop with step()).
    FrameworkOther,
    /// No usable mechanism: inject a profiler (`npuprof inject`).
    Inject,
}

impl Route {
    /// The name used in JSON and in the human summary.
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Framework => "framework",
            Route::FrameworkOther => "framework-other",
            Route::Inject => "inject",
        }
    }
}

/// The next step.
#[derive(Debug, Clone, Serialize)]
pub struct Next {
    /// The command to run, when there is one (e.g. `npuprof patch ... --dry-run`), shell-quoted.
    pub command: Option<String>,
    /// The same command word by word, when it is one program's argv (`null` for a shell
    /// statement such as `export VAR="$PWD/prof"`, or a command with a placeholder to fill in).
    pub argv: Option<Vec<String>>,
    /// What it does, or what to do by hand.
    pub note: String,
}

impl Next {
    /// The next step `argv`, shown shell-quoted.
    pub(crate) fn run(argv: Vec<String>, note: String) -> Self {
        Self {
            command: Some(npuprof_repository::shell::join(&argv)),
            argv: Some(argv),
            note,
        }
    }

    /// A next step that is not one program's argv (or nothing to run: `command` `None`).
    pub(crate) fn text(command: Option<String>, note: String) -> Self {
        Self {
            command,
            argv: None,
            note,
        }
    }
}

/// A source location with the trimmed text of its line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Evidence {
    /// File, relative to the root.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// What this line shows.
    pub kind: EvidenceKind,
    /// The source line, trimmed.
    pub text: String,
}

/// What a line of evidence shows. Declared in the order of the names, so that evidence sorts
/// by name within a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// A launch flag of a built-in profiler (`--profile…`).
    CliFlag,
    /// A `torch_npu.profiler.dynamic_profile` call.
    DynamicProfile,
    /// A profiler environment variable (read in Python or set in a script).
    EnvVar,
    /// A `_ExperimentalConfig(...)` call.
    ExperimentalConfig,
    /// `import vllm` / `sglang`: their built-in profiler is available.
    FrameworkImport,
    /// A live call site of the wrapper (`set_status`/`step` outside it).
    LiveSite,
    /// `step()` of a torch_npu profiler inside a loop.
    LoopStep,
    /// A construction of the wrapper class outside it.
    Manager,
    /// Another `torch_npu.profiler` API call.
    ProfilerApi,
    /// A `torch_npu.profiler.profile(...)` call.
    ProfileCall,
    /// `start_profile`/`stop_profile` calls.
    ProfileControl,
    /// A built-in profiler's config option.
    ProfilerConfig,
    /// An import of `torch_npu.profiler`.
    ProfilerImport,
    /// A `schedule(...)` call.
    Schedule,
    /// The profiler switch read in code.
    Switch,
    /// A `tensorboard_trace_handler(...)` call.
    TraceHandler,
    /// The wrapper class.
    Wrapper,
    /// The factory the wrapper builds its profilers with.
    WrapperFactory,
    /// The profiler switch in a run config.
    YamlSwitch,
}

impl EvidenceKind {
    /// Its name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CliFlag => "cli_flag",
            Self::DynamicProfile => "dynamic_profile",
            Self::EnvVar => "env_var",
            Self::ExperimentalConfig => "experimental_config",
            Self::FrameworkImport => "framework_import",
            Self::LiveSite => "live_site",
            Self::LoopStep => "loop_step",
            Self::Manager => "manager",
            Self::ProfilerApi => "profiler_api",
            Self::ProfileCall => "profile_call",
            Self::ProfileControl => "profile_control",
            Self::ProfilerConfig => "profiler_config",
            Self::ProfilerImport => "profiler_import",
            Self::Schedule => "schedule",
            Self::Switch => "switch",
            Self::TraceHandler => "trace_handler",
            Self::Wrapper => "wrapper",
            Self::WrapperFactory => "wrapper_factory",
            Self::YamlSwitch => "yaml_switch",
        }
    }
}

/// The recipes-style wrapper (`executor/utils/profiler_context.py`).
#[derive(Debug, Clone, Serialize)]
pub struct Wrapper {
    /// The file holding it.
    pub path: String,
    /// The manager class (e.g. `ProfilerManager`).
    pub class: String,
    /// Line of `class ...`.
    pub class_line: usize,
    /// The factory function creating the torch_npu profiler (e.g. `create_profiler`), if separate.
    pub factory: Option<String>,
    /// Line of the factory's `def`.
    pub factory_line: Option<usize>,
}

/// A built-in profiling mechanism and how to drive it.
#[derive(Debug, Clone, Serialize)]
pub struct Mechanism {
    /// Stable identifier.
    pub id: MechanismId,
    /// What it is, in a few words.
    pub description: &'static str,
    /// What to set to use it (env vars, flags, config keys, code parameters).
    pub knobs: Vec<String>,
    /// Files where it was found, sorted.
    pub paths: Vec<String>,
}

/// A built-in profiling mechanism. Declared in the order of the identifiers, so that reports
/// list them by identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MechanismId {
    /// MindSpeed's `--profile` switch.
    MindspeedProfile,
    /// The cann-recipes style ProfilerManager wired into the engine's forward.
    RecipesProfilerManager,
    /// SGLang's built-in torch profiler.
    SglangTorchProfiler,
    /// torch_npu's `dynamic_profile`.
    TorchNpuDynamicProfile,
    /// A `torch_npu.profiler.profile` stepped inside a loop.
    TorchNpuProfileLoop,
    /// vLLM's (and vLLM-Ascend's) built-in torch profiler.
    VllmTorchProfiler,
}

impl MechanismId {
    /// Its identifier in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MindspeedProfile => "mindspeed-profile",
            Self::RecipesProfilerManager => "recipes-profiler-manager",
            Self::SglangTorchProfiler => "sglang-torch-profiler",
            Self::TorchNpuDynamicProfile => "torch-npu-dynamic-profile",
            Self::TorchNpuProfileLoop => "torch-npu-profile-loop",
            Self::VllmTorchProfiler => "vllm-torch-profiler",
        }
    }

    /// The mechanism of a serving engine's built-in profiler: its definition's `mechanism`.
    pub fn of_engine(definition: &EngineDefinition) -> Option<Self> {
        [Self::VllmTorchProfiler, Self::SglangTorchProfiler]
            .into_iter()
            .find(|m| m.as_str() == definition.mechanism)
    }
}

/// One end of a call-chain link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Site {
    /// File, relative to the root.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// Qualified name of the function or class (`Class.method`), or `<module>`.
    pub function: String,
}

/// A call from a live site towards the profiler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainLink {
    /// Where the call is.
    pub from: Site,
    /// The callee as written, without arguments (e.g. `self.profiler.set_status`).
    pub call: String,
    /// The definition it reaches in the repository, or `None` for torch_npu itself.
    pub to: Option<Site>,
}

/// Profiler code that is present but not live.
#[derive(Debug, Clone, Serialize)]
pub struct DeadPath {
    /// File, relative to the root.
    pub path: String,
    /// Line of the `def`.
    pub line: usize,
    /// Qualified name.
    pub function: String,
    /// Why it is not live.
    pub reason: String,
    /// The profiler API uses inside it.
    pub uses: Vec<Evidence>,
}

/// A run configuration and whether it can be profiled.
#[derive(Debug, Clone, Serialize)]
pub struct RunConfig {
    /// File, relative to the root.
    pub path: String,
    /// `<model>` when the file is `models/<model>/config/<file>`.
    pub model: Option<String>,
    /// `model_config.enable_profiler`, when present and a boolean.
    pub enable_profiler: Option<bool>,
    /// Line of `enable_profiler:`.
    pub enable_profiler_line: Option<usize>,
    /// `scheduler_config.max_new_tokens`.
    pub max_new_tokens: Option<u64>,
    /// Line of `max_new_tokens:`.
    pub max_new_tokens_line: Option<usize>,
    /// `model_config.next_n` (MTP speculative steps; absent means 0).
    pub next_n: Option<u64>,
    /// `parallel_config.world_size` (or a top-level `world_size`).
    pub world_size: Option<u64>,
    /// Whether each phase can be captured with this config.
    pub profilable: Profilable,
    /// How many decode forwards a request makes: `max_new_tokens − 1`, and with MTP at least
    /// `ceil((max_new_tokens − 1) / (next_n + 1))`.
    pub decode_forwards: Option<DecodeForwards>,
    /// Why the file could not be read, when it could not (then every value is `null`).
    pub error: Option<String>,
}

/// Whether prefill and decode can be profiled with a config.
#[derive(Debug, Clone, Serialize)]
pub struct Profilable {
    /// Prefill can be captured.
    pub prefill: bool,
    /// Decode can be captured.
    pub decode: bool,
    /// Why, in a few words.
    pub reason: String,
}

/// Range of decode forwards per request.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct DecodeForwards {
    /// Fewest (every MTP draft accepted).
    pub min: u64,
    /// Most (no MTP, or every draft rejected).
    pub max: u64,
}

/// Something that did not stop the scan.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Warning {
    /// File concerned, relative to the root (`.` for the root itself).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// A file not read on purpose.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Skipped {
    /// File, relative to the root.
    pub path: String,
    /// Why (e.g. `larger than 4 MiB (5000000 bytes)`).
    pub reason: String,
}

/// Counts of what the scan looked at.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stats {
    /// Files visited (after ignore rules), of any type.
    pub files: usize,
    /// Python files read.
    pub python_files: usize,
    /// Python files that passed the substring prefilter and were parsed.
    pub python_parsed: usize,
    /// YAML files read.
    pub yaml_files: usize,
    /// Shell scripts read.
    pub shell_files: usize,
}

/// The repository definition a route used.
#[derive(Debug, Clone, Serialize)]
pub struct DefinitionUsed {
    /// Its id.
    pub id: String,
    /// Where it was read from: `built in (<name>)` or a `NPUPROF_DEFINITIONS` file.
    pub source: String,
    /// Why it applies.
    pub why: String,
}
