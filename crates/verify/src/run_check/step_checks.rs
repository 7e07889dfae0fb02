//! Step coverage against the schedule, and compilation inside the window.

use std::collections::BTreeSet;
use std::path::Path;

use super::{Ctx, describe_schedule, disp};
use crate::finding::{Code, Evidence, Finding};
use crate::report::StepsSummary;
use crate::step_outliers::first_step_outlier;
use npuprof_runs::profiler_info::RecordedSchedule;
use npuprof_scan::kernel_csv::{KernelScan, StepTraceRow};
use npuprof_schedule::{RECORDED_STEPS_LIMIT, Schedule};

fn fmt_steps(steps: &[u64]) -> String {
    const SHOW: usize = 12;
    let shown: Vec<String> = steps.iter().take(SHOW).map(u64::to_string).collect();
    if steps.len() > SHOW {
        format!("{} … ({} in all)", shown.join(", "), steps.len())
    } else {
        shown.join(", ")
    }
}

/// The cycles (0-based, ascending) of `schedule` that the Step Ids `seen` belong to.
pub(super) fn cycles_of(schedule: &Schedule, seen: &[u64]) -> Vec<u64> {
    let cycles: BTreeSet<u64> = seen.iter().filter_map(|&s| schedule.cycle_of(s)).collect();
    cycles.into_iter().collect()
}

/// The Step Ids one run directory must hold. torch_npu writes one run directory per cycle
/// (`_profiler_action_controller.py`: saving a cycle finalizes its directory, the next cycle
/// gets a new one), so: the steps of the cycles its Step Ids belong to; with none of them,
/// the only cycle of `repeat = 1`, else unknown (`None`; also for a window over the limit).
pub(super) fn expected_steps(schedule: &Schedule, cycles: &[u64]) -> Option<Vec<u64>> {
    let cycles: Vec<u64> = match cycles {
        [] if schedule.repeat == 1 => vec![0],
        [] => return None,
        some => some.to_vec(),
    };
    if (cycles.len() as u64).saturating_mul(schedule.active) > RECORDED_STEPS_LIMIT {
        return None;
    }
    Some(
        cycles
            .iter()
            .filter_map(|&k| schedule.cycle_steps(k))
            .flatten()
            .collect(),
    )
}

/// `collect`'s check that the run recorded the window it asked for: the schedule profiler_info
/// records and the steps the run holds (kernel_details.csv's Step Ids, else step_trace_time.csv's)
/// against the requested schedule's. A shorter, shifted or other window is an error, never "ok":
/// the profiler that ran is not the one patched.
pub(super) fn requested_window(
    ctx: &mut Ctx<'_>,
    requested: &Schedule,
    recorded: Option<RecordedSchedule>,
    steps: &StepsSummary,
    dir: &Path,
) {
    let seen: &[u64] = if steps.kernel_details.is_empty() {
        &steps.step_trace_time
    } else {
        &steps.kernel_details
    };
    let cycles = cycles_of(requested, seen);
    let wanted = expected_steps(requested, &cycles);
    let recorded_args = recorded.and_then(RecordedSchedule::args);
    // skip_first_wait is left out: writers before torch_npu 2.7.1.post11 do not record it (its
    // effect shows in the steps).
    let same_arguments = |r: &Schedule| {
        (r.wait, r.warmup, r.active, r.repeat, r.skip_first)
            == (
                requested.wait,
                requested.warmup,
                requested.active,
                requested.repeat,
                requested.skip_first,
            )
    };
    let other_schedule = recorded_args.filter(|r| !same_arguments(r));
    let other_steps = wanted
        .as_ref()
        .filter(|w| !seen.is_empty() && w.as_slice() != seen);
    if other_schedule.is_none() && other_steps.is_none() {
        return;
    }
    let mut what = Vec::new();
    if let Some(wanted) = other_steps {
        what.push(format!(
            "it recorded step(s) {} where steps {} were asked for",
            fmt_steps(seen),
            fmt_steps(wanted)
        ));
    }
    if let Some(r) = other_schedule {
        what.push(format!(
            "its profiler_info records schedule {} where {} was patched in",
            describe_schedule(&r),
            describe_schedule(requested)
        ));
    }
    ctx.push(Finding::new(
        Code::WindowNotRequested,
        format!(
            "not the window asked for: {}; the profiler that ran is not the one npuprof patched",
            what.join(", and ")
        ),
        Evidence::path(disp(dir)),
        Code::WindowNotRequested.info().next_action,
    ));
}

#[allow(clippy::too_many_arguments)]
pub(super) fn step_findings(
    ctx: &mut Ctx<'_>,
    schedule: Option<RecordedSchedule>,
    schedule_unknown: Option<&str>,
    steps: &StepsSummary,
    kernels: Option<&KernelScan>,
    kernel_path: &Path,
    step_rows: Option<&[StepTraceRow]>,
    step_trace_path: &Path,
) {
    let has_step_col = kernels.is_some_and(|k| k.has("Step Id"));
    match schedule {
        Some(RecordedSchedule::Args(s)) if has_step_col => {
            let seen: BTreeSet<u64> = steps.kernel_details.iter().copied().collect();
            if steps.expected.is_none() && seen.is_empty() && s.repeat != 1 {
                let first = s.cycle_steps(0).map(|r| fmt_steps(&r.collect::<Vec<_>>()));
                ctx.push(Finding::new(
                    Code::StepsMissing,
                    format!(
                        "no kernel in kernel_details.csv has a Step Id, so this run directory's cycle is unknown (schedule {}: one directory per cycle, e.g. cycle 0 records steps {})",
                        describe_schedule(&s),
                        first.unwrap_or_default()
                    ),
                    Evidence::path(disp(kernel_path)),
                    "make the run last at least skip_first + repeat*(wait+warmup+active) + 1 steps (npuprof plan shows the budget), then re-run",
                ));
            }
            if let Some(expected) = &steps.expected {
                let missing: Vec<u64> = expected
                    .iter()
                    .copied()
                    .filter(|x| !seen.contains(x))
                    .collect();
                if !missing.is_empty() {
                    ctx.push(Finding::new(
                        Code::StepsMissing,
                        format!(
                            "recorded step(s) {} (schedule {}) have no kernels in kernel_details.csv (Step Ids found: {})",
                            fmt_steps(&missing),
                            describe_schedule(&s),
                            if seen.is_empty() { "none".to_owned() } else { fmt_steps(&steps.kernel_details) }
                        ),
                        Evidence::path(disp(kernel_path)),
                        "make the run last at least skip_first + repeat*(wait+warmup+active) + 1 steps (npuprof plan shows the budget), then re-run",
                    ));
                }
            }
            let unexpected: Vec<u64> = steps
                .kernel_details
                .iter()
                .copied()
                .filter(|x| !s.is_recorded(*x))
                .collect();
            if !unexpected.is_empty() {
                ctx.push(Finding::new(
                    Code::StepsUnexpected,
                    format!(
                        "Step Id(s) {} are not recorded by the schedule {}",
                        fmt_steps(&unexpected),
                        describe_schedule(&s)
                    ),
                    Evidence::path(disp(kernel_path)),
                    "check --decode-active and that this run directory belongs to this configuration",
                ));
            }
            if let (Some(expected), Some(_)) = (&steps.expected, step_rows) {
                let have: BTreeSet<u64> = steps.step_trace_time.iter().copied().collect();
                let missing: Vec<u64> = expected
                    .iter()
                    .copied()
                    .filter(|x| !have.contains(x))
                    .collect();
                if !missing.is_empty() {
                    ctx.push(Finding::new(
                        Code::StepTraceMissingSteps,
                        format!(
                            "step_trace_time.csv has no row for recorded step(s) {}",
                            fmt_steps(&missing)
                        ),
                        Evidence::path(disp(step_trace_path)),
                        "check the TraceStepTimeParser in the logs; re-parse the run",
                    ));
                }
            }
        }
        Some(RecordedSchedule::Function) if has_step_col => {
            ctx.push(Finding::new(
                Code::ExpectationUnknown,
                format!(
                    "a callable schedule: profiler_info records `{{}}` for any function (torch.profiler.schedule, a lambda, a partial), so its window is not known; Step Ids found: {}; step coverage not checked",
                    if steps.kernel_details.is_empty() { "none".to_owned() } else { fmt_steps(&steps.kernel_details) }
                ),
                Evidence::path(disp(kernel_path)),
                "pass torch_npu.profiler.schedule(...) so its arguments are recorded, or pass --expect-active and compare the Step Ids with `npuprof plan`",
            ));
        }
        Some(_) => {}
        None => {
            if let Some(why) = schedule_unknown {
                ctx.push(Finding::new(
                    Code::ExpectationUnknown,
                    format!("schedule unknown: {why}; step coverage not checked (no schedule is assumed)"),
                    Evidence::path(disp(kernel_path)),
                    "pass --decode-active and compare the Step Ids with `npuprof plan` for the schedule you used",
                ));
            } else if kernels.is_some() {
                ctx.push(Finding::new(
                    Code::ExpectationUnknown,
                    "schedule unknown: step coverage not checked",
                    Evidence::path(disp(kernel_path)),
                    "keep profiler_info*.json with the run, or compare the Step Ids with `npuprof plan`",
                ));
            }
        }
    }
    // Compilation inside the window: the first step an outlier.
    let (durations, source): (Vec<(u64, f64)>, &Path) = match step_rows {
        Some(rows) if rows.iter().filter(|r| r.step.is_some()).count() >= 2 => (
            rows.iter()
                .filter_map(|r| Some((r.step?, r.duration_us?)))
                .collect(),
            step_trace_path,
        ),
        _ => (
            kernels
                .map(|k| k.steps.iter().map(|(s, a)| (*s, a.duration_us)).collect())
                .unwrap_or_default(),
            kernel_path,
        ),
    };
    if let Some(o) = first_step_outlier(durations) {
        ctx.push(Finding::new(
            Code::CompileInWindow,
            format!(
                "the first recorded step {} takes {:.0} µs, {:.1}× the median {:.0} µs of the other {} step(s): graph compilation or warm-up happened inside the window",
                o.step,
                o.duration_us,
                o.ratio(),
                o.median_us,
                o.others
            ),
            Evidence::path(disp(source)),
            "warm up (run a few forwards) before the profiling window, or raise skip_first, then re-run",
        ));
    }
}
