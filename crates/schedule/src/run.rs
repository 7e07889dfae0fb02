//! A simulated run: start, `step()` a number of times, stop; and the warnings torch_npu prints.
//!
//! As torch_npu's `profile.stop()` does (every build from 2.1 to 2.14): it first closes the step
//! that is open (`ProfilerStep#<n>`), then runs the exit action of the current state, which in
//! RECORD and RECORD_AND_SAVE stops, finalizes and saves the trace (`on_trace_ready` parses it).
//! So the open step is recorded, and a stop in RECORD_AND_SAVE saves a complete cycle.

use serde::Serialize;

use crate::{Action, Schedule};

/// torch_npu's warning when stopped in WARMUP (the run directory is deleted).
pub const STOP_IN_WARMUP: &str = "Incorrect schedule: Stop profiler while current state is WARMUP which will result in empty parsed data.";
/// torch_npu's warning when stopped in RECORD (incomplete data is parsed).
pub const STOP_IN_RECORD: &str = "Incorrect schedule: Stop profiler while current state is RECORD which may result in incomplete parsed data.";
/// torch_npu's caution when stopped in RECORD_AND_SAVE (the cycle is saved and parsed).
pub const STOP_IN_RECORD_AND_SAVE: &str = "Stop profiler while current state is RECORD_AND_SAVE, perhaps the scheduling cycle has not yet completed.";
/// torch_npu's warning for a RECORD → NONE transition.
pub const TRANSITION_RECORD_NONE: &str = "Incorrect schedule: RECORD followed by NONE";
/// torch_npu's warning for a WARMUP → NONE transition.
pub const TRANSITION_WARMUP_NONE: &str = "Incorrect schedule: WARMUP followed by NONE";
/// torch_npu's warning for a RECORD → WARMUP transition.
pub const TRANSITION_RECORD_WARMUP: &str = "Incorrect schedule: RECORD followed by WARMUP";

/// The outcome of [`Schedule::run`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Run {
    /// Number of `step()` calls simulated.
    pub calls: u64,
    /// The state when `stop()` is called.
    pub stop_state: Action,
    /// Step numbers that were recorded (the `Step Id`s of the output), including the step open
    /// at `stop()` when the state is RECORD or RECORD_AND_SAVE.
    pub recorded_steps: Vec<u64>,
    /// Complete cycles saved (and parsed): by leaving RECORD_AND_SAVE, or by a stop in it. A
    /// stop in RECORD parses an incomplete cycle, not counted here.
    pub saved_cycles: u64,
    /// The step open at `stop()` that stop() closes and records (stop in RECORD or
    /// RECORD_AND_SAVE). In a loop that calls `step()` after each forward it holds no forward,
    /// so its `Step Id` has no kernels.
    pub stop_closes_step: Option<u64>,
    /// At least one cycle saved and no schedule warning.
    pub closes_cleanly: bool,
    /// The warnings torch_npu prints, in order.
    pub warnings: Vec<String>,
}

impl Schedule {
    /// What happens when the profiler is started, `step()` is called `calls` times, then stopped.
    pub fn run(&self, calls: u64) -> Run {
        let mut warnings = Vec::new();
        let mut recorded_steps = Vec::new();
        let mut saved_cycles = 0;
        let mut prev = self.action(0);
        // Past the last cycle every step is NONE: nothing more can happen, so stop simulating.
        let simulated = self
            .closing_step_calls()
            .map_or(calls, |closing| calls.min(closing.saturating_add(1)));
        for step in 0..simulated {
            if prev.is_recorded() {
                recorded_steps.push(step);
            }
            let next = self.action(step.saturating_add(1));
            match (prev, next) {
                (Action::RecordAndSave, _) => saved_cycles += 1,
                (Action::Record, Action::None) => warnings.push(TRANSITION_RECORD_NONE.to_owned()),
                (Action::Warmup, Action::None) => warnings.push(TRANSITION_WARMUP_NONE.to_owned()),
                (Action::Record, Action::Warmup) => {
                    warnings.push(TRANSITION_RECORD_WARMUP.to_owned())
                }
                _ => {}
            }
            prev = next;
        }
        let stop_state = prev;
        let stop_closes_step = stop_state.is_recorded().then_some(simulated);
        recorded_steps.extend(stop_closes_step);
        match stop_state {
            Action::None => {}
            Action::Warmup => warnings.push(STOP_IN_WARMUP.to_owned()),
            Action::Record => warnings.push(STOP_IN_RECORD.to_owned()),
            Action::RecordAndSave => {
                saved_cycles += 1;
                warnings.push(STOP_IN_RECORD_AND_SAVE.to_owned());
            }
        }
        let closes_cleanly = warnings.is_empty() && saved_cycles > 0;
        Run {
            calls,
            stop_state,
            recorded_steps,
            saved_cycles,
            stop_closes_step,
            closes_cleanly,
            warnings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_sample_run_records_step_13_and_closes() {
        // skip_first 12, warmup 1, active 1 -> Step Id 13 (seen in real output).
        let s = Schedule::clamped(0, 1, 1, 1, 12, 0);
        let run = s.run(s.closing_step_calls().expect("finite"));
        assert_eq!(run.recorded_steps, vec![13]);
        assert_eq!(run.saved_cycles, 1);
        assert!(run.closes_cleanly);
    }

    #[test]
    fn early_stop_warnings() {
        let s = Schedule::clamped(0, 2, 3, 1, 3, 0);
        assert_eq!(s.run(4).warnings, vec![STOP_IN_WARMUP]);
        assert_eq!(s.run(5).warnings, vec![STOP_IN_RECORD]);
        assert_eq!(s.run(7).warnings, vec![STOP_IN_RECORD_AND_SAVE]);
        assert!(s.run(8).closes_cleanly);
        assert_eq!(s.run(8).recorded_steps, vec![5, 6, 7]);
        assert_eq!(s.run(8).stop_closes_step, None);
    }

    #[test]
    fn stop_closes_and_records_the_open_step() {
        // torch_npu's stop(): the open ProfilerStep is closed, then RECORD / RECORD_AND_SAVE
        // stop, finalize and save the trace.
        let s = Schedule::clamped(0, 2, 3, 1, 3, 0);
        let in_record = s.run(5);
        assert_eq!(in_record.stop_state, Action::Record);
        assert_eq!(in_record.recorded_steps, vec![5]);
        assert_eq!(in_record.stop_closes_step, Some(5));
        assert_eq!(in_record.saved_cycles, 0, "an incomplete cycle");
        let in_save = s.run(7);
        assert_eq!(in_save.stop_state, Action::RecordAndSave);
        assert_eq!(in_save.recorded_steps, vec![5, 6, 7]);
        assert_eq!(in_save.stop_closes_step, Some(7));
        assert_eq!(in_save.saved_cycles, 1, "the cycle is saved and parsed");
        assert!(
            !in_save.closes_cleanly,
            "torch_npu still prints its caution"
        );
        assert_eq!(s.run(4).recorded_steps, Vec::<u64>::new());
        assert_eq!(s.run(4).stop_closes_step, None);
    }

    #[test]
    fn long_runs_after_the_window_are_cheap_and_exact() {
        let s = Schedule::clamped(0, 0, 2, 1, 1, 0);
        let run = s.run(u64::MAX);
        assert_eq!(
            (run.recorded_steps, run.saved_cycles, run.closes_cleanly),
            (vec![1, 2], 1, true)
        );
        assert_eq!(run.calls, u64::MAX);
    }

    #[test]
    fn repeat_zero_never_closes() {
        let s = Schedule::clamped(0, 0, 2, 0, 0, 0);
        assert_eq!(s.closing_step_calls(), None);
        let run = s.run(2);
        assert_eq!(run.stop_state, Action::Record);
        assert_eq!(run.saved_cycles, 1);
        assert_eq!(run.recorded_steps, vec![0, 1, 2]);
        assert_eq!(run.warnings, vec![STOP_IN_RECORD]);
        assert!(!run.closes_cleanly);
    }
}
