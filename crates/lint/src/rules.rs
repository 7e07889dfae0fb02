//! The rules: each turns what was read from the file into findings.

use npuprof_schedule::Action;
use npuprof_syntax::{callee, descendants_in_scope, has_splat, kwarg, positional, text};
use tree_sitter::Node;

use npuprof_patch::Edit;

use crate::device;
use crate::fix::closing_fix;
use crate::profile::{
    ExperimentalArg, FileContext, Flavor, ProfileCall, ScheduleArg, enum_argument, is_true,
};
use crate::python::{kwarg_node, last_segment};
use crate::registry::Code;
use crate::steps::Counter;
use crate::torch_npu::versions;
use crate::warmup::{Before, Warmup, is_model_call, wanted_keys};
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
        // Code written for another device (a GPU branch, CUDA activities) is not NPU code.
        Flavor::Torch if device::off_npu(ctx, call.node) || device::lists_cuda(ctx, call.node) => {}
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
                // ≤2.7.1 replaces AiCoreNone by PipeUtilization at Level1/Level2, the 2026
                // builds do not; Level0 (or no level) is already NPL002.
                let level = enum_argument(ctx, config, "profiler_level").map(|(_, l)| l);
                let level_given = kwarg(config, "profiler_level", source).is_some();
                if let Some((node, metrics)) = enum_argument(ctx, config, "aic_metrics")
                    && metrics == "AiCoreNone"
                    && level_given
                {
                    let kept = versions(false);
                    let promoted = versions(true);
                    let message = match level.as_deref() {
                        Some("Level0" | "Level_none") => None,
                        Some(l @ ("Level1" | "Level2")) => Some(format!(
                            "`AiCMetrics.AiCoreNone` at {l} collects no AI Core pipe metrics on torch_npu {kept}: kernel_details lacks the pipeline columns (only {promoted} replace it by PipeUtilization)"
                        )),
                        _ => Some(format!(
                            "`AiCMetrics.AiCoreNone` with a profiler level npuprof cannot resolve: no AI Core pipe metrics at Level0, nor at Level1/Level2 on torch_npu {kept} (only {promoted} replace it by PipeUtilization there)"
                        )),
                    };
                    if let Some(message) = message {
                        out.push(raw(
                            node,
                            Code::AicMetricsNone,
                            message,
                            "use `aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization` with `profiler_level=torch_npu.profiler.ProfilerLevel.Level1`",
                        ));
                    }
                }
            }
            _ => {}
        },
    }
    // Results saved by `prof.export_chrome_trace(...)` are a deliberate alternative to a trace
    // handler; reading them in-process is not (real `profile` has no `key_averages`).
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
    if matches!(call.schedule, ScheduleArg::Absent) {
        return;
    }
    if !window.countable {
        check_attribute_never_stepped(ctx, window, out);
        return;
    }
    let counter = Counter::new(ctx, window.key.as_deref(), window.frame);
    let stepped = window
        .body
        .iter()
        .map(|s| counter.uses(*s))
        .any(|u| u.steps > 0 || u.escaped.is_some());
    if !stepped {
        check_never_stepped(ctx, call, window, out);
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
        let consequence = stop_consequence(schedule, steps);
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

/// What torch_npu does when the profiler stops after `steps` calls of `step()`.
fn stop_consequence(schedule: npuprof_schedule::Schedule, steps: u64) -> String {
    let run = schedule.run(steps);
    let warning = run
        .warnings
        .last()
        .map(|w| format!(", and torch_npu warns \"{w}\""))
        .unwrap_or_default();
    match run.stop_state {
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
    }
}

/// A scheduled window whose profiler is neither stepped nor handed on in the window (a
/// handed-on profiler is the counter's escape, NPL019): NPL010 "no `step()` reachable" — it is
/// never bound to a name, or the name that holds it is never stepped. A window with a loop is
/// left to NPL013, which names the loop.
fn check_never_stepped<'t>(
    ctx: &FileContext<'t, '_>,
    call: &ProfileCall<'t>,
    window: &Window<'t>,
    out: &mut Vec<Raw<'t>>,
) {
    let source = ctx.source;
    let has_loop = || {
        window
            .body
            .iter()
            .flat_map(|s| descendants_in_scope(*s))
            .any(|n| matches!(n.kind(), "for_statement" | "while_statement"))
    };
    if window.key.is_some() && has_loop() {
        return;
    }
    let why = match window.key.as_deref() {
        None => "the profiler is never bound to a name (`with profile(...):` without `as`, or a `profile(...)` that is not kept), so nothing can call its `step()`".to_owned(),
        Some(key) => format!("`{key}.step()` is never called, and `{key}` is not handed on"),
    };
    let other = window
        .body
        .iter()
        .flat_map(|s| descendants_in_scope(*s))
        .filter(|n| n.kind() == "call")
        .find_map(|n| {
            let name = callee(n, source)?;
            let object = name.strip_suffix(".step")?;
            (Some(object) != window.key.as_deref()).then(|| {
                format!(
                    " (`{name}()` on line {} steps another object)",
                    npuprof_syntax::line(n)
                )
            })
        })
        .unwrap_or_default();
    let (needs, consequence) = match &call.schedule {
        ScheduleArg::Known { values: Ok(v), .. } => match v.schedule.closing_step_calls() {
            Some(needed) => (
                format!("`schedule({})` needs {needed} to close", v.schedule),
                format!("; {}", stop_consequence(v.schedule, 0)),
            ),
            None => return,
        },
        _ => ("the schedule never advances".to_owned(), String::new()),
    };
    let target = window.key.as_deref().unwrap_or("prof");
    out.push(raw(
        window.anchor,
        Code::WindowNotClosed,
        format!("no `step()` reachable: {why}{other}; {needs}{consequence}"),
        match window.key {
            None => format!("bind the profiler (`with profile(...) as {target}:`) and call `{target}.step()` once per step, plus one closing `step()`"),
            Some(_) => format!("call `{target}.step()` once per step, plus one closing `step()`, or drop the `schedule`"),
        },
    ));
}

/// A profiler kept in an attribute (`self.prof`) whose `step()` is called nowhere in the
/// file: NPL019, since another file may step it.
fn check_attribute_never_stepped<'t>(
    ctx: &FileContext<'t, '_>,
    window: &Window<'t>,
    out: &mut Vec<Raw<'t>>,
) {
    let Some(key) = window.key.as_deref() else {
        return;
    };
    let Some(attribute) = key.rsplit_once('.').map(|(_, a)| a) else {
        return;
    };
    // A call of `<...>.<attribute>.step()` in the code (a comment such as `# self.prof.step()`
    // steps nothing).
    let suffix = format!(".{attribute}.step");
    let stepped = npuprof_syntax::descendants(ctx.semantic.root())
        .into_iter()
        .filter(|n| n.kind() == "call")
        .filter_map(|n| callee(n, ctx.source))
        .any(|name| name.ends_with(&suffix));
    if stepped {
        return;
    }
    out.push(raw(
        window.anchor,
        Code::WindowUnresolved,
        format!("`{key}.step()` is never called in this file: the step may come from elsewhere (another file that reaches `{key}`), so the step budget is not checked"),
        format!("check that something calls `{key}.step()` once per step, or check the window with `npuprof plan`"),
    ));
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
    // An unbound profiler cannot be stepped at all: NPL010 says so instead.
    if matches!(call.schedule, ScheduleArg::Absent) || !window.countable || window.key.is_none() {
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
    let keys = wanted_keys(node, source);
    let Warmup::Cold(path) = Before::new(ctx).before(window.anchor, &keys) else {
        return;
    };
    let path = match path.as_slice() {
        [only] => format!("in {only} before the window"),
        [first, rest @ ..] => format!(
            "not in {first} before the window, nor in {}",
            rest.join(", nor in ")
        ),
        [] => String::new(),
    };
    out.push(raw(
        node,
        Code::NoWarmupBeforeWindow,
        format!("`{name}(...)` first runs inside the profiled window, with no warm-up call before it ({path}): compilation, JIT and first-call allocation land in the recorded steps"),
        format!("call `{name}(...)` once (a warm-up prefill and decode step) before the profiler starts"),
    ));
}
