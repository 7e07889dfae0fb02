//! The rules: each turns what was read from the file into findings.

use npuprof_schedule::Action;
use npuprof_syntax::{callee, descendants_in_scope, kwarg, positional, text};
use tree_sitter::Node;

use npuprof_patch::Edit;

use crate::fix::closing_fix;
use crate::profile::{
    ExperimentalArg, FileContext, Flavor, ProfileCall, ScheduleArg, enum_argument, is_true,
};
use crate::python::{has_splat, kwarg_node, last_segment};
use crate::registry::Code;
use crate::steps::Counter;
use crate::window::Window;

/// A finding before it is given its file path and position.
pub(crate) struct Raw<'t> {
    pub(crate) node: Node<'t>,
    pub(crate) code: Code,
    pub(crate) message: String,
    pub(crate) fix: String,
    /// The mechanical fix's edits, if there is one.
    pub(crate) edits: Vec<Edit>,
}

fn raw<'t>(
    node: Node<'t>,
    code: Code,
    message: impl Into<String>,
    fix: impl Into<String>,
) -> Raw<'t> {
    Raw {
        node,
        code,
        message: message.into(),
        fix: fix.into(),
        edits: Vec::new(),
    }
}

const STANDARD_CONFIG: &str = "experimental_config=torch_npu.profiler._ExperimentalConfig(profiler_level=torch_npu.profiler.ProfilerLevel.Level1, aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization)";

/// NPL001–NPL005, NPL012, NPL030–NPL032: the configuration of one `profile(...)` call.
pub(crate) fn check_configuration<'t>(
    ctx: &FileContext<'t, '_>,
    call: &ProfileCall<'t>,
    out: &mut Vec<Raw<'t>>,
) {
    let source = ctx.source;
    let at = call
        .node
        .child_by_field_name("function")
        .unwrap_or(call.node);
    match call.flavor {
        Flavor::Torch => out.push(raw(
            at,
            Code::TorchProfilerOnNpu,
            "`torch.profiler.profile` does not collect Ascend NPU kernels: no kernel_details, no AI Core pipeline metrics",
            format!("use `torch_npu.profiler.profile(...)` with `activities=[ProfilerActivity.NPU, ProfilerActivity.CPU]` and `{STANDARD_CONFIG}`"),
        )),
        Flavor::TorchNpu => match call.experimental {
            ExperimentalArg::Absent if !call.opaque => out.push(raw(
                at,
                Code::MissingExperimentalConfig,
                "`profile(...)` without an `experimental_config` runs at Level0 with no AI Core metrics: kernel_details will lack the pipeline columns",
                format!("pass `{STANDARD_CONFIG}`"),
            )),
            ExperimentalArg::Call(config) => {
                if let Some((node, level)) = enum_argument(ctx, config, "profiler_level") {
                    match level.as_str() {
                        "Level0" => out.push(raw(
                            node,
                            Code::ProfilerLevel0,
                            "`ProfilerLevel.Level0` collects no AI Core metrics: kernel_details will lack the pipeline columns",
                            "use `profiler_level=torch_npu.profiler.ProfilerLevel.Level1`",
                        )),
                        "Level_none" => out.push(raw(
                            node,
                            Code::ProfilerLevel0,
                            "`ProfilerLevel.Level_none` collects no NPU (CANN) data: no kernel_details at all",
                            "use `profiler_level=torch_npu.profiler.ProfilerLevel.Level1`",
                        )),
                        "Level2" => out.push(raw(
                            node,
                            Code::ProfilerLevel2,
                            "`ProfilerLevel.Level2` is high-volume: larger traces and longer parsing",
                            "use `ProfilerLevel.Level1` unless Level2 data is needed, and keep the window short",
                        )),
                        _ => {}
                    }
                } else if !has_splat(config)
                    && positional(config).is_empty()
                {
                    out.push(raw(
                        config,
                        Code::ProfilerLevel0,
                        "`_ExperimentalConfig()` without `profiler_level` defaults to Level0: no AI Core metrics in kernel_details",
                        "add `profiler_level=torch_npu.profiler.ProfilerLevel.Level1`",
                    ));
                }
                // torch_npu replaces AiCoreNone by PipeUtilization at Level1/Level2, and Level0
                // (or no level) is already NPL002: AiCoreNone matters when the level is unknown.
                let level_known = enum_argument(ctx, config, "profiler_level").is_some_and(
                    |(_, level)| matches!(level.as_str(), "Level0" | "Level1" | "Level2" | "Level_none"),
                );
                let level_given = kwarg(config, "profiler_level", source).is_some();
                if let Some((node, metrics)) = enum_argument(ctx, config, "aic_metrics")
                    && metrics == "AiCoreNone"
                    && level_given
                    && !level_known
                {
                    out.push(raw(
                        node,
                        Code::AicMetricsNone,
                        "`AiCMetrics.AiCoreNone` with a profiler level npuprof cannot resolve: at Level0 no AI Core metrics are collected and kernel_details lacks the pipeline columns (torch_npu uses PipeUtilization instead only at Level1/Level2)",
                        "use `aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization` with `profiler_level=torch_npu.profiler.ProfilerLevel.Level1`",
                    ));
                }
            }
            _ => {}
        },
    }
    // Results exported or read in-process (`prof.export_chrome_trace(...)`, `key_averages()`)
    // are a deliberate alternative to a trace handler.
    if !call.has_trace_handler && !call.opaque && !ctx.exports_results {
        out.push(raw(
            at,
            Code::MissingOnTraceReady,
            "`profile(...)` without `on_trace_ready`: the collected data is neither saved nor parsed",
            "pass `on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(<output dir>)`",
        ));
    }
    if let ScheduleArg::Known {
        call: schedule,
        repeat: Some(repeat),
        ..
    } = &call.schedule
        && *repeat <= 0
    {
        let node = kwarg_node(*schedule, "repeat", source).unwrap_or(*schedule);
        out.push(raw(
            node,
            Code::UnboundedRepeat,
            "`repeat=0` (the default) repeats the schedule cycle until the profiler stops: the last cycle is usually cut short and the window cannot be closed by count",
            "set `repeat=1` (or the number of cycles wanted)",
        ));
    }
    for (name, code, what) in [
        (
            "with_stack",
            Code::WithStack,
            "`with_stack=True` records Python call stacks for every op: high-volume (large trace_view.json, slow parsing)",
        ),
        (
            "profile_memory",
            Code::ProfileMemory,
            "`profile_memory=True` records every allocation: high-volume (large output, slow parsing)",
        ),
    ] {
        if is_true(call.node, name, source) {
            let node = kwarg_node(call.node, name, source).unwrap_or(call.node);
            out.push(raw(
                node,
                code,
                what,
                format!("set `{name}=False` unless this data is needed, and keep the window short"),
            ));
        }
    }
}

/// NPL010, NPL011, NPL019: does the window's step count close the schedule?
pub(crate) fn check_step_budget<'t>(
    ctx: &FileContext<'t, '_>,
    call: &ProfileCall<'t>,
    window: &Window<'t>,
    out: &mut Vec<Raw<'t>>,
) {
    if !window.countable {
        return;
    }
    let counter = Counter::new(ctx, window.key.as_deref(), window.frame);
    let stepped = window
        .body
        .iter()
        .map(|s| counter.uses(*s))
        .any(|u| u.steps > 0 || u.escaped.is_some());
    if !stepped {
        return;
    }
    let at = window.anchor;
    let unresolved = |why: &str| {
        raw(
            at,
            Code::WindowUnresolved,
            format!(
                "could not resolve the schedule of this window ({why}): its step budget is not checked"
            ),
            "write the schedule's arguments as integers or constants lint can follow, or check the window with `npuprof plan`",
        )
    };
    let values = match &call.schedule {
        ScheduleArg::Absent => return,
        ScheduleArg::Opaque(why)
        | ScheduleArg::Known {
            values: Err(why), ..
        } => {
            out.push(unresolved(why));
            return;
        }
        ScheduleArg::Known {
            values: Ok(values), ..
        } => values,
    };
    let schedule = values.schedule;
    let Some(needed) = schedule.closing_step_calls() else {
        return;
    };
    let count = match counter.count(&window.body) {
        Ok(count) => count,
        Err(why) => {
            out.push(raw(
                at,
                Code::WindowUnresolved,
                format!("could not resolve the number of `step()` calls in this window ({why}); `schedule({schedule})` needs {needed} to close"),
                format!("make sure the window calls `step()` at least {} time(s) (one more than needed, the closing `step()`)", needed + 1),
            ));
            return;
        }
    };
    let steps = count.steps;
    let mut trail = values.trail.clone();
    trail.merge(&count.trail);
    let formula = format!(
        "skip_first + repeat·(wait + warmup + active) = {} + {}·({} + {} + {}){} = {needed}",
        schedule.skip_first,
        schedule.repeat,
        schedule.wait,
        schedule.warmup,
        schedule.active,
        if schedule.skip_first_wait != 0 {
            format!(
                " − wait (skip_first_wait={}, torch_npu 26.1+)",
                schedule.skip_first_wait
            )
        } else {
            String::new()
        },
    );
    let trail = trail.describe();
    if steps < needed {
        let run = schedule.run(steps);
        let warning = run
            .warnings
            .last()
            .map(|w| format!(", and torch_npu warns \"{w}\""))
            .unwrap_or_default();
        let consequence = match run.stop_state {
            Action::Record => format!("it stops in RECORD: incomplete data is parsed{warning}"),
            Action::RecordAndSave => {
                format!(
                    "it stops in RECORD_AND_SAVE: stop() saves the cycle, but its last step is the one open at stop(), with no forward in it{warning}"
                )
            }
            Action::Warmup => {
                format!("it stops in WARMUP: the run directory is deleted, no data{warning}")
            }
            Action::None if run.saved_cycles > 0 => format!(
                "it stops before cycle {} records anything: only {} of {} cycle(s) are saved (steps {}), and torch_npu prints no warning",
                run.saved_cycles + 1,
                run.saved_cycles,
                schedule.repeat,
                steps_list(&run.recorded_steps)
            ),
            Action::None => {
                "nothing is recorded before it stops (still in skip_first/wait): no data".to_owned()
            }
        };
        let fix = closing_fix(ctx, window, needed + 1 - steps);
        out.push(Raw {
            node: at,
            code: Code::WindowNotClosed,
            message: format!("the window calls `step()` {steps} time(s) but `schedule({schedule})` needs {needed} to close ({formula}); {consequence}{trail}"),
            fix: format!(
                "make the window call `step()` at least {} time(s) ({} more, including one closing `step()` after the loop), or shrink the schedule{}",
                needed + 1,
                needed + 1 - steps,
                match &fix {
                    Some(f) => format!("; `npuprof lint --fix` {}", f.description),
                    None if !count.trail.runtime.is_empty() => {
                        " (`--fix` leaves it to you: the count is decided at run time)".to_owned()
                    }
                    None => String::new(),
                }
            ),
            edits: fix.map(|f| f.edits).unwrap_or_default(),
        });
    } else if steps == needed {
        let fix = closing_fix(ctx, window, 1);
        out.push(Raw {
            node: at,
            code: Code::WindowClosesWithoutMargin,
            message: format!("the window closes on its last `step()` ({steps} calls = {formula}): no margin{trail}"),
            fix: format!(
                "add one closing `{}.step()` after the window's last `step()`{}",
                window.key.as_deref().unwrap_or("prof"),
                fix.as_ref().map(|f| format!("; `npuprof lint --fix` {}", f.description)).unwrap_or_default()
            ),
            edits: fix.map(|f| f.edits).unwrap_or_default(),
        });
    }
}

/// `3, 4, 5` (or `3–40` for a long run of consecutive steps).
fn steps_list(steps: &[u64]) -> String {
    match steps {
        [first, .., last] if steps.len() > 6 && last - first + 1 == steps.len() as u64 => {
            format!("{first}–{last}")
        }
        _ => steps
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// NPL013: loops inside a scheduled window that never step.
pub(crate) fn check_loops<'t>(
    ctx: &FileContext<'t, '_>,
    call: &ProfileCall<'t>,
    window: &Window<'t>,
    out: &mut Vec<Raw<'t>>,
) {
    if matches!(call.schedule, ScheduleArg::Absent) || !window.countable {
        return;
    }
    let key = window.key.as_deref();
    let counter = Counter::new(ctx, key, window.frame);
    let loops: Vec<Node<'t>> = window
        .body
        .iter()
        .flat_map(|s| descendants_in_scope(*s))
        .filter(|n| matches!(n.kind(), "for_statement" | "while_statement"))
        .collect();
    let steps_in = |n: Node<'t>| {
        let u = counter.uses(n);
        u.steps > 0 || u.escaped.is_some()
    };
    if loops.iter().any(|l| steps_in(*l))
        || window
            .body
            .iter()
            .any(|s| counter.uses(*s).escaped.is_some())
    {
        return;
    }
    // `step()` before and after the loop, enough to close the schedule: the whole loop is
    // recorded as one step on purpose.
    let needed = match &call.schedule {
        ScheduleArg::Known {
            values: Ok(values), ..
        } => values.schedule.closing_step_calls(),
        _ => None,
    };
    if let (Some(needed), Ok(count)) = (needed, counter.count(&window.body))
        && count.steps >= needed
    {
        return;
    }
    for l in &loops {
        let outermost = !loops.iter().any(|other| {
            other != l && other.start_byte() <= l.start_byte() && l.end_byte() <= other.end_byte()
        });
        if outermost {
            let target = key.unwrap_or("prof");
            out.push(raw(
                *l,
                Code::LoopWithoutStep,
                "this loop inside the profiled window never calls `step()` while a schedule is set: the schedule never advances, so the window never reaches RECORD or never closes",
                format!("call `{target}.step()` once per iteration (at the end of the loop body), and once more after the loop"),
            ));
        }
    }
}

/// NPL020: graph compilation inside the window.
pub(crate) fn check_compile<'t>(
    ctx: &FileContext<'t, '_>,
    call: &ProfileCall<'t>,
    window: &Window<'t>,
    out: &mut Vec<Raw<'t>>,
) {
    if records_from_first_step(call) == Some(false) {
        return;
    }
    let source = ctx.source;
    let hit = window
        .body
        .iter()
        .flat_map(|s| descendants_in_scope(*s))
        .find(|n| match n.kind() {
            "call" => {
                let name = callee(*n, source).unwrap_or_default();
                let qualified = ctx.qualified_callee(*n).unwrap_or_default();
                qualified == "torch.compile"
                    || name == "torch.compile"
                    || last_segment(&name) == "get_npu_backend"
                    || name.starts_with("torchair.")
            }
            "identifier" => text(*n, source) == "npu_backend",
            _ => false,
        });
    if let Some(node) = hit {
        out.push(raw(
            node,
            Code::CompileInWindow,
            "graph compilation (`torch.compile` / torchair) inside the profiled window: compile time lands in the recorded steps",
            "compile and run one warm-up forward before the profiler starts",
        ));
    }
}

/// Whether the profiler records the window's first step: `Some(true)` without a schedule or
/// with `skip_first + wait + warmup = 0`, `Some(false)` when that sum is known to be positive
/// (the first steps are not recorded, so they act as the warm-up), `None` when unknown.
fn records_from_first_step(call: &ProfileCall<'_>) -> Option<bool> {
    match &call.schedule {
        ScheduleArg::Absent => Some(true),
        ScheduleArg::Known { values: Ok(v), .. } => {
            let s = v.schedule;
            let wait = if s.skip_first_wait != 0 { 0 } else { s.wait };
            Some(s.skip_first + wait + s.warmup == 0)
        }
        _ => None,
    }
}

/// Whether a callee looks like a model forward (`model(...)`, `self.model(...)`,
/// `model.generate(...)`, `run_decode_step(...)`).
fn is_model_call(callee: &str) -> bool {
    let segments: Vec<String> = callee.split('.').map(str::to_lowercase).collect();
    if segments
        .iter()
        .any(|s| s.contains("tokenizer") || s.contains("processor"))
    {
        return false;
    }
    let last = segments.last().map(String::as_str).unwrap_or("");
    if last.contains("model") {
        const CONSTRUCTORS: [&str; 9] = [
            "build", "load", "create", "make", "get", "init", "set", "save", "to",
        ];
        return !CONSTRUCTORS.iter().any(|p| last.starts_with(p));
    }
    const FORWARDS: [&str; 6] = [
        "forward",
        "generate",
        "prefill",
        "decode",
        "infer",
        "inference",
    ];
    FORWARDS.iter().any(|f| {
        last == *f
            || last.starts_with(&format!("{f}_"))
            || last.ends_with(&format!("_{f}"))
            || last.contains(&format!("_{f}_"))
    })
}

/// NPL021: the first model call in the window has no warm-up call before the window.
pub(crate) fn check_warmup<'t>(
    ctx: &FileContext<'t, '_>,
    call: &ProfileCall<'t>,
    window: &Window<'t>,
    out: &mut Vec<Raw<'t>>,
) {
    if records_from_first_step(call) != Some(true) {
        return;
    }
    let source = ctx.source;
    let first = window
        .body
        .iter()
        .flat_map(|s| descendants_in_scope(*s))
        .filter(|n| n.kind() == "call")
        .find_map(|n| {
            callee(n, source)
                .filter(|c| is_model_call(c))
                .map(|c| (n, c))
        });
    let Some((node, name)) = first else { return };
    let scope = ctx.resolver.scope_of(window.anchor);
    let warmed = descendants_in_scope(scope)
        .into_iter()
        .filter(|n| n.kind() == "call" && n.end_byte() <= window.anchor.start_byte())
        .filter_map(|n| callee(n, source))
        .any(|c| {
            c == name
                || last_segment(&c).to_lowercase().contains("warm")
                || (is_model_call(&c) && last_segment(&c) == last_segment(&name))
        });
    if !warmed {
        out.push(raw(
            node,
            Code::NoWarmupBeforeWindow,
            format!("`{name}(...)` first runs inside the profiled window, with no warm-up call before it: compilation, JIT and first-call allocation land in the recorded steps"),
            format!("call `{name}(...)` once (a warm-up prefill and decode step) before the profiler starts"),
        ));
    }
}
