//! Findings, severities and the stable table of rule codes.

use serde::Serialize;

/// How bad a finding is. Only [`Severity::Error`] makes `npuprof lint` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; the profile is still usable.
    Info,
    /// The profile will be produced but lacks something or is distorted.
    Warning,
    /// The profile will be missing or incomplete.
    Error,
}

impl Severity {
    /// The lowercase name used in output (`info`, `warning`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A stable rule code. The numbers never change meaning once published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    /// NPL001: `torch_npu.profiler.profile(...)` without an `experimental_config`.
    MissingExperimentalConfig,
    /// NPL002: `profiler_level=ProfilerLevel.Level0`.
    ProfilerLevel0,
    /// NPL003: `aic_metrics=AiCMetrics.AiCoreNone`.
    AicMetricsNone,
    /// NPL004: no `on_trace_ready`.
    MissingOnTraceReady,
    /// NPL005: `torch.profiler.profile` instead of `torch_npu.profiler.profile`.
    TorchProfilerOnNpu,
    /// NPL010: the schedule's window cannot close with the counted `step()` calls.
    WindowNotClosed,
    /// NPL011: the window closes on the very last `step()` call, with no margin.
    WindowClosesWithoutMargin,
    /// NPL012: `repeat=0` (the default): the schedule cycles until the profiler stops.
    UnboundedRepeat,
    /// NPL013: a loop inside the profiled window never calls `step()` while a schedule is set.
    LoopWithoutStep,
    /// NPL020: graph compilation inside the profiled window.
    CompileInWindow,
    /// NPL021: the first model call is inside the profiled window, with no warm-up before it.
    NoWarmupBeforeWindow,
    /// NPL030: `with_stack=True`.
    WithStack,
    /// NPL031: `profile_memory=True`.
    ProfileMemory,
    /// NPL032: `profiler_level=ProfilerLevel.Level2`.
    ProfilerLevel2,
    /// NPL900: the file has syntax errors; checks may be incomplete.
    SyntaxError,
}

impl Code {
    /// Every code, in table order.
    pub const ALL: [Code; 15] = [
        Code::MissingExperimentalConfig,
        Code::ProfilerLevel0,
        Code::AicMetricsNone,
        Code::MissingOnTraceReady,
        Code::TorchProfilerOnNpu,
        Code::WindowNotClosed,
        Code::WindowClosesWithoutMargin,
        Code::UnboundedRepeat,
        Code::LoopWithoutStep,
        Code::CompileInWindow,
        Code::NoWarmupBeforeWindow,
        Code::WithStack,
        Code::ProfileMemory,
        Code::ProfilerLevel2,
        Code::SyntaxError,
    ];

    /// The stable code, e.g. `NPL001`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::MissingExperimentalConfig => "NPL001",
            Code::ProfilerLevel0 => "NPL002",
            Code::AicMetricsNone => "NPL003",
            Code::MissingOnTraceReady => "NPL004",
            Code::TorchProfilerOnNpu => "NPL005",
            Code::WindowNotClosed => "NPL010",
            Code::WindowClosesWithoutMargin => "NPL011",
            Code::UnboundedRepeat => "NPL012",
            Code::LoopWithoutStep => "NPL013",
            Code::CompileInWindow => "NPL020",
            Code::NoWarmupBeforeWindow => "NPL021",
            Code::WithStack => "NPL030",
            Code::ProfileMemory => "NPL031",
            Code::ProfilerLevel2 => "NPL032",
            Code::SyntaxError => "NPL900",
        }
    }

    /// A short kebab-case name for the rule.
    pub fn name(self) -> &'static str {
        match self {
            Code::MissingExperimentalConfig => "missing-experimental-config",
            Code::ProfilerLevel0 => "profiler-level0",
            Code::AicMetricsNone => "aic-metrics-none",
            Code::MissingOnTraceReady => "missing-on-trace-ready",
            Code::TorchProfilerOnNpu => "torch-profiler-on-npu",
            Code::WindowNotClosed => "window-not-closed",
            Code::WindowClosesWithoutMargin => "window-closes-without-margin",
            Code::UnboundedRepeat => "unbounded-repeat",
            Code::LoopWithoutStep => "loop-without-step",
            Code::CompileInWindow => "compile-in-window",
            Code::NoWarmupBeforeWindow => "no-warmup-before-window",
            Code::WithStack => "with-stack",
            Code::ProfileMemory => "profile-memory",
            Code::ProfilerLevel2 => "profiler-level2",
            Code::SyntaxError => "syntax-error",
        }
    }

    /// The severity every finding of this code has.
    pub fn severity(self) -> Severity {
        match self {
            Code::MissingOnTraceReady | Code::WindowNotClosed | Code::LoopWithoutStep => {
                Severity::Error
            }
            Code::MissingExperimentalConfig
            | Code::ProfilerLevel0
            | Code::AicMetricsNone
            | Code::TorchProfilerOnNpu
            | Code::UnboundedRepeat
            | Code::CompileInWindow
            | Code::NoWarmupBeforeWindow
            | Code::SyntaxError => Severity::Warning,
            Code::WindowClosesWithoutMargin
            | Code::WithStack
            | Code::ProfileMemory
            | Code::ProfilerLevel2 => Severity::Info,
        }
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One problem found at one place in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The file, as given or as found under a given directory.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// The stable rule code.
    pub code: Code,
    /// The rule's severity.
    pub severity: Severity,
    /// What is wrong and what it does to the profile.
    pub message: String,
    /// What to change.
    pub fix: String,
}
