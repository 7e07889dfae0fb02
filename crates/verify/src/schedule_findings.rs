//! What torch_npu's schedule warnings mean for the runs a log belongs to.
//!
//! torch_npu's `profile.stop()` (every build 2.1–2.14) closes the open step, then runs the exit
//! action of the current state: WARMUP deletes the run directory; RECORD and RECORD_AND_SAVE
//! stop, finalize and save the trace and call `on_trace_ready`, so a stop in RECORD_AND_SAVE
//! saves a complete cycle (its warning is a caution), a stop in RECORD parses an incomplete one.
//! A profile without `schedule=` uses the default schedule, RECORD at every step, so it prints
//! the RECORD warning on every run; profiler_info records `{}` for it and for any callable
//! schedule, which only the `Step Id` column tells apart (the default schedule writes none).

use std::path::Path;

use crate::finding::{Code, Evidence, Finding, Severity};
use npuprof_runs::logs::{LogScan, Quoted, ScheduleWarning};
use npuprof_runs::profiler_info::RecordedSchedule;

/// What is known of the schedules of the runs a log belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleContext {
    /// Every run had no window: the default schedule (`{}` and no `Step Id` column) or no
    /// schedule (`null`). The RECORD stop warning is harmless.
    NoSchedule,
    /// At least one run had a callable schedule whose arguments are not recorded (`{}` with
    /// Step Ids): a stop inside its window loses data, which steps is unknown.
    Callable,
    /// At least one run recorded its schedule's arguments.
    Scheduled,
    /// Not known.
    Unknown,
}

/// One run's evidence about its schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleEvidence {
    /// The recorded schedule (`None`: unknown).
    pub schedule: Option<RecordedSchedule>,
    /// Whether kernel_details.csv has a `Step Id` column (`None`: no table was read).
    pub step_ids: Option<bool>,
}

impl ScheduleContext {
    /// From the runs' evidence: one run with arguments makes the log scheduled; one callable
    /// makes it callable; every run without a window makes it unscheduled.
    pub fn from_runs(runs: impl IntoIterator<Item = ScheduleEvidence>) -> Self {
        let mut any = false;
        let mut no_window = true;
        let mut callable = false;
        for run in runs {
            any = true;
            match (run.schedule, run.step_ids) {
                (Some(RecordedSchedule::Args(_)), _) => return Self::Scheduled,
                (Some(RecordedSchedule::Absent), _)
                | (Some(RecordedSchedule::Function), Some(false)) => {}
                (Some(RecordedSchedule::Function), Some(true)) => callable = true,
                (Some(RecordedSchedule::Function), None) | (None, _) => no_window = false,
            }
        }
        if callable {
            Self::Callable
        } else if any && no_window {
            Self::NoSchedule
        } else {
            Self::Unknown
        }
    }
}

/// The findings for the schedule warnings of one log (at `path`).
pub fn log_findings(scan: &LogScan, path: &Path, ctx: ScheduleContext) -> Vec<Finding> {
    scan.schedule_warnings
        .iter()
        .map(|w| warning_finding(w, path, ctx))
        .collect()
}

/// The finding for one schedule warning of the log at `path`.
pub fn warning_finding(w: &Quoted<ScheduleWarning>, path: &Path, ctx: ScheduleContext) -> Finding {
    let (severity, code, meaning, action) = match w.kind {
        ScheduleWarning::StopInWarmup => (
            Severity::Error,
            Code::ScheduleStopInWarmup,
            "the profiler stopped during WARMUP: torch_npu deletes that run directory, so there is no data",
            "give the phase enough steps: skip_first + wait + warmup + active + 1 step() calls (npuprof plan), then re-run",
        ),
        ScheduleWarning::StopInRecord => match ctx {
            ScheduleContext::NoSchedule => (
                Severity::Info,
                Code::ScheduleStopInRecord,
                "printed on every run without a schedule: harmless here (profiler_info records `{}` or null and kernel_details has no Step Id: torch_npu's default schedule records every step until stop())",
                "none",
            ),
            ScheduleContext::Callable => (
                Severity::Warning,
                Code::ScheduleStopInRecord,
                "a callable schedule (profiler_info records `{}` for any function, so its window is not known) stopped inside its window: the last cycle is parsed incomplete; the Step Ids in kernel_details say which steps were recorded, not which are missing",
                "let the schedule's window close before stop(): pass torch_npu.profiler.schedule(...) (recorded in profiler_info, checkable by npuprof plan/verify) or step() past its last recorded step, then re-run",
            ),
            ScheduleContext::Scheduled | ScheduleContext::Unknown => (
                Severity::Warning,
                Code::ScheduleStopInRecord,
                "the profiler stopped inside the recording window: the parsed data is incomplete",
                "make the run last past the window (skip_first + wait + warmup + active + 1 steps; npuprof plan), then re-run",
            ),
        },
        ScheduleWarning::StopInRecordAndSave => (
            Severity::Info,
            Code::ScheduleCycleIncomplete,
            "the profiler stopped in RECORD_AND_SAVE: torch_npu's stop() closes the open step and saves and parses the cycle, so nothing is lost; the cycle's last step is the one open at stop(), which holds no forward in a loop that calls step() after each forward",
            "none needed; for kernels in the cycle's last step, call prof.step() once more after the last recorded forward",
        ),
        ScheduleWarning::Transition => (
            Severity::Warning,
            Code::ScheduleTransition,
            "an invalid schedule transition: raw data is kept but not parsed",
            "fix the schedule so each cycle runs WARMUP → RECORD → RECORD_AND_SAVE (npuprof plan), then re-run",
        ),
    };
    Finding::new(
        code,
        format!("{meaning}: \"{}\"", w.text),
        Evidence::line(path.display().to_string(), w.line),
        action,
    )
    .with_severity(severity)
}

#[cfg(test)]
mod tests {
    use super::*;
    use npuprof_schedule::Schedule;

    fn run(schedule: Option<RecordedSchedule>, step_ids: Option<bool>) -> ScheduleEvidence {
        ScheduleEvidence { schedule, step_ids }
    }

    #[test]
    fn an_empty_schedule_with_step_ids_is_a_callable_schedule() {
        use RecordedSchedule::{Absent, Args, Function};
        let ctx = |runs: &[ScheduleEvidence]| ScheduleContext::from_runs(runs.iter().copied());
        assert_eq!(
            ctx(&[run(Some(Function), Some(false))]),
            ScheduleContext::NoSchedule
        );
        assert_eq!(ctx(&[run(Some(Absent), None)]), ScheduleContext::NoSchedule);
        assert_eq!(
            ctx(&[
                run(Some(Function), Some(false)),
                run(Some(Function), Some(true))
            ]),
            ScheduleContext::Callable
        );
        assert_eq!(ctx(&[run(Some(Function), None)]), ScheduleContext::Unknown);
        let args = Args(Schedule::clamped(0, 0, 1, 1, 0, 0));
        assert_eq!(
            ctx(&[run(Some(Function), Some(true)), run(Some(args), Some(true))]),
            ScheduleContext::Scheduled
        );
        assert_eq!(ctx(&[]), ScheduleContext::Unknown);
    }
}
