//! The one registry of lint rules (ruff's `codes.rs` habit): every rule's code, name, severity
//! and summary are written once, in [`rules!`] below. The [`Code`] enum, [`Code::ALL`], the
//! accessors and the rule table of `docs/lint-rules.md` ([`markdown_table`], written by
//! `cargo xtask codegen`) are all generated from it; a test fails when that page is stale.

use serde::Serialize;

/// How bad a finding is (the one definition, npuprof-severity's). Only [`Severity::Error`]
/// makes `npuprof lint` exit 1.
pub use npuprof_severity::Severity;

/// One row of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The rule.
    pub code: Code,
    /// The stable code, e.g. `NPL001`.
    pub id: &'static str,
    /// A short kebab-case name.
    pub name: &'static str,
    /// The severity of every finding of this rule.
    pub severity: Severity,
    /// One line of Markdown: what the rule finds.
    pub summary: &'static str,
    /// One line of Markdown: what the rule cannot see (where it stays silent).
    pub blind: &'static str,
}

macro_rules! rules {
    ($( $(#[$doc:meta])* $variant:ident = ($id:literal, $name:literal, $severity:ident, $summary:literal, $blind:literal); )*) => {
        /// A stable rule code. The numbers never change meaning once published.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $( $(#[$doc])* $variant, )*
        }

        /// Every rule, in table order.
        pub const RULES: &[Rule] = &[
            $( Rule {
                code: Code::$variant,
                id: $id,
                name: $name,
                severity: Severity::$severity,
                summary: $summary,
                blind: $blind,
            }, )*
        ];

        impl Code {
            /// Every code, in table order.
            pub const ALL: &[Code] = &[ $( Code::$variant, )* ];

            /// This code's row of the registry.
            pub fn rule(self) -> &'static Rule {
                // The variants and the rows are generated in the same order.
                &RULES[self as usize]
            }
        }
    };
}

rules! {
    /// NPL001: `torch_npu.profiler.profile(...)` without an `experimental_config`.
    MissingExperimentalConfig = ("NPL001", "missing-experimental-config", Warning,
        "`profile(...)` without `experimental_config` (default Level0: no pipeline metrics)",
        "a config built by a call lint cannot follow, or passed through `**kwargs`");
    /// NPL002: `profiler_level=ProfilerLevel.Level0` / `Level_none`.
    ProfilerLevel0 = ("NPL002", "profiler-level0", Warning,
        "`ProfilerLevel.Level0`/`Level_none`, or `_ExperimentalConfig()` without a level",
        "a level chosen at run time (`level2level[args.level]`, a config object)");
    /// NPL003: `aic_metrics=AiCMetrics.AiCoreNone` at Level1/Level2 or an unresolved level:
    /// information (the argument is written out, so it was chosen; the finding says what it
    /// costs), not a warning.
    AicMetricsNone = ("NPL003", "aic-metrics-none", Info,
        "`AiCMetrics.AiCoreNone` at Level1/Level2 (no pipe metrics on the 2026 builds) or an unresolved level",
        "which torch_npu build runs the code: the message names the builds that promote AiCoreNone and those that do not");
    /// NPL004: no `on_trace_ready`.
    MissingOnTraceReady = ("NPL004", "missing-on-trace-ready", Error,
        "no `on_trace_ready`: nothing is parsed or saved",
        "a handler added after construction; silent when the file exports its trace itself (`export_chrome_trace`; real `profile` has no `key_averages`)");
    /// NPL005: `torch.profiler.profile` instead of `torch_npu.profiler.profile`.
    TorchProfilerOnNpu = ("NPL005", "torch-profiler-on-npu", Warning,
        "`torch.profiler.profile` used instead of torch_npu's",
        "which device runs at run time: silent in branches written for another device (`else:` of an NPU test, `if not torch_npu_flag:`, CUDA activities)");
    /// NPL010: the schedule's window cannot close with the counted `step()` calls.
    WindowNotClosed = ("NPL010", "window-not-closed", Error,
        "fewer `step()` calls than `skip_first + repeat·(wait+warmup+active)`: stopped mid-cycle, cycles never recorded, or no `step()` reachable at all",
        "steps in other files, in helpers more than one call deep, in loops over data or under run-time conditions (NPL019 says which)");
    /// NPL011: the window closes on the very last `step()` call, with no margin.
    WindowClosesWithoutMargin = ("NPL011", "window-closes-without-margin", Info,
        "exactly that many: closes with no margin, add the closing `step()`",
        "the same as NPL010");
    /// NPL012: `repeat=0` (the default): the schedule cycles until the profiler stops.
    UnboundedRepeat = ("NPL012", "unbounded-repeat", Warning,
        "`repeat=0` or no `repeat`: the window never closes by count",
        "a `repeat` decided at run time");
    /// NPL013: a loop inside the profiled window never calls `step()` while a schedule is set.
    LoopWithoutStep = ("NPL013", "loop-without-step", Error,
        "a loop inside a scheduled profile that never calls `step()`",
        "loops in helpers the window calls; profilers kept in attributes");
    /// NPL019: the step count or the schedule of a window depends on something lint cannot resolve.
    WindowUnresolved = ("NPL019", "window-unresolved", Info,
        "the window's step count or schedule could not be resolved, or its `step()` may come from elsewhere: says what and why, instead of guessing",
        "what NPL021 cannot follow (that stays silent, not reported here)");
    /// NPL020: graph compilation inside the profiled window.
    CompileInWindow = ("NPL020", "compile-in-window", Warning,
        "`torch.compile` / torchair compilation inside the window",
        "compilation inside helpers the window calls");
    /// NPL021: the first model call is inside the profiled window, with no warm-up before it.
    NoWarmupBeforeWindow = ("NPL021", "no-warmup-before-window", Warning,
        "the first model call inside the window with no warm-up before it, in its function or on the way from its callers",
        "callers in other files (a function not called in its file is not judged), warm-ups in helpers more than one call deep, methods called through attributes of other objects");
    /// NPL030: `with_stack=True`.
    WithStack = ("NPL030", "with-stack", Info,
        "`with_stack=True`: high volume",
        "a value decided at run time");
    /// NPL031: `profile_memory=True`.
    ProfileMemory = ("NPL031", "profile-memory", Info,
        "`profile_memory=True`: high volume",
        "a value decided at run time");
    /// NPL032: `profiler_level=ProfilerLevel.Level2`.
    ProfilerLevel2 = ("NPL032", "profiler-level2", Info,
        "`ProfilerLevel.Level2`: high volume",
        "a level decided at run time");
    /// NPL900: the file has syntax errors; checks may be incomplete.
    SyntaxError = ("NPL900", "syntax-error", Warning,
        "the file has a syntax error",
        "nothing: the parser's first error");
}

impl Code {
    /// The stable code, e.g. `NPL001`.
    pub fn as_str(self) -> &'static str {
        self.rule().id
    }

    /// A short kebab-case name for the rule.
    pub fn name(self) -> &'static str {
        self.rule().name
    }

    /// The severity every finding of this code has.
    pub fn severity(self) -> Severity {
        self.rule().severity
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The rule table in Markdown, as `docs/lint-rules.md` shows it (one row per rule, `|`-separated).
pub fn markdown_table() -> String {
    let mut out =
        String::from("| code | name | severity | rule | cannot see |\n|---|---|---|---|---|\n");
    for rule in RULES {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            rule.id,
            rule.name,
            rule.severity.as_str(),
            rule.summary,
            rule.blind
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_and_the_enum_agree() {
        assert_eq!(RULES.len(), Code::ALL.len());
        for (rule, code) in RULES.iter().zip(Code::ALL) {
            assert_eq!(rule.code, *code);
            assert_eq!(code.rule(), rule);
        }
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len(), "codes are unique");
    }
}
