//! The torch_npu profiler schedule, simulated with the same arithmetic as
//! `torch_npu.profiler.schedule` (reference: torch-npu-output.md §7 and §8).

use serde::Serialize;

/// The profiler action for one step number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Action {
    /// Not profiling.
    None,
    /// Profiling, data discarded.
    Warmup,
    /// Recording.
    Record,
    /// Recording the last step of a cycle; leaving this state saves and parses the cycle.
    RecordAndSave,
}

impl Action {
    /// The name torch_npu prints (`NONE`, `WARMUP`, `RECORD`, `RECORD_AND_SAVE`).
    pub fn name(self) -> &'static str {
        match self {
            Action::None => "NONE",
            Action::Warmup => "WARMUP",
            Action::Record => "RECORD",
            Action::RecordAndSave => "RECORD_AND_SAVE",
        }
    }

    /// Whether the step is recorded (its number becomes a `Step Id`).
    pub fn is_recorded(self) -> bool {
        matches!(self, Action::Record | Action::RecordAndSave)
    }
}

/// A `torch_npu.profiler.schedule(...)`, with torch_npu's clamping already applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Schedule {
    /// Steps skipped at the start of each cycle.
    pub wait: u64,
    /// Warm-up steps per cycle (profiled, discarded).
    pub warmup: u64,
    /// Recorded steps per cycle (at least 1).
    pub active: u64,
    /// Number of cycles; 0 means cycle forever.
    pub repeat: u64,
    /// Steps skipped once, before the first cycle.
    pub skip_first: u64,
    /// torch_npu 26.1+: when non-zero, the first cycle starts without its `wait` steps.
    pub skip_first_wait: u64,
}

impl Schedule {
    /// Builds a schedule from raw arguments, clamping like torch_npu: `active < 1` becomes 1,
    /// any other negative value becomes 0.
    pub fn clamped(
        wait: i64,
        warmup: i64,
        active: i64,
        repeat: i64,
        skip_first: i64,
        skip_first_wait: i64,
    ) -> Self {
        let nonneg = |v: i64| u64::try_from(v).unwrap_or(0);
        Self {
            wait: nonneg(wait),
            warmup: nonneg(warmup),
            active: nonneg(active).max(1),
            repeat: nonneg(repeat),
            skip_first: nonneg(skip_first),
            skip_first_wait: nonneg(skip_first_wait),
        }
    }

    /// Steps in one cycle: `wait + warmup + active`.
    pub fn cycle(&self) -> u64 {
        self.wait
            .saturating_add(self.warmup)
            .saturating_add(self.active)
    }

    /// The action for step number `step` (the profiler starts at 0; each `step()` adds 1).
    pub fn action(&self, step: u64) -> Action {
        if step < self.skip_first {
            return Action::None;
        }
        let mut s = step - self.skip_first;
        if self.skip_first_wait != 0 {
            s = s.saturating_add(self.wait);
        }
        let cycle = self.cycle();
        if self.repeat > 0 && s / cycle >= self.repeat {
            return Action::None;
        }
        let m = s % cycle;
        if m < self.wait {
            Action::None
        } else if m < self.wait + self.warmup {
            Action::Warmup
        } else if m < cycle - 1 {
            Action::Record
        } else {
            Action::RecordAndSave
        }
    }

    /// The `step()` calls after which the last cycle is saved: `skip_first + repeat·cycle`
    /// (minus the skipped first `wait` with `skip_first_wait`); `None` when `repeat = 0`
    /// (the window never closes by itself).
    pub fn closing_step_calls(&self) -> Option<u64> {
        if self.repeat == 0 {
            return None;
        }
        let skipped_wait = if self.skip_first_wait != 0 {
            self.wait
        } else {
            0
        };
        Some(
            self.skip_first
                .saturating_add(self.repeat.saturating_mul(self.cycle()))
                - skipped_wait,
        )
    }

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
        match stop_state {
            Action::None => {}
            Action::Warmup => warnings.push(STOP_IN_WARMUP.to_owned()),
            Action::Record => warnings.push(STOP_IN_RECORD.to_owned()),
            Action::RecordAndSave => warnings.push(STOP_IN_RECORD_AND_SAVE.to_owned()),
        }
        let closes_cleanly = warnings.is_empty() && saved_cycles > 0;
        Run {
            calls,
            stop_state,
            recorded_steps,
            saved_cycles,
            closes_cleanly,
            warnings,
        }
    }
}

/// The outcome of [`Schedule::run`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Run {
    /// Number of `step()` calls simulated.
    pub calls: u64,
    /// The state when `stop()` is called.
    pub stop_state: Action,
    /// Step numbers that were recorded (the `Step Id`s of the output).
    pub recorded_steps: Vec<u64>,
    /// Cycles saved (and parsed) by a RECORD_AND_SAVE transition.
    pub saved_cycles: u64,
    /// At least one cycle saved and no schedule warning.
    pub closes_cleanly: bool,
    /// The warnings torch_npu prints, in order.
    pub warnings: Vec<String>,
}

/// torch_npu's warning when stopped in WARMUP (the run directory is deleted).
pub const STOP_IN_WARMUP: &str = "Incorrect schedule: Stop profiler while current state is WARMUP which will result in empty parsed data.";
/// torch_npu's warning when stopped in RECORD (incomplete data is parsed).
pub const STOP_IN_RECORD: &str = "Incorrect schedule: Stop profiler while current state is RECORD which may result in incomplete parsed data.";
/// torch_npu's warning when stopped in RECORD_AND_SAVE.
pub const STOP_IN_RECORD_AND_SAVE: &str = "Stop profiler while current state is RECORD_AND_SAVE, perhaps the scheduling cycle has not yet completed.";
/// torch_npu's warning for a RECORD → NONE transition.
pub const TRANSITION_RECORD_NONE: &str = "Incorrect schedule: RECORD followed by NONE";
/// torch_npu's warning for a WARMUP → NONE transition.
pub const TRANSITION_WARMUP_NONE: &str = "Incorrect schedule: WARMUP followed by NONE";
/// torch_npu's warning for a RECORD → WARMUP transition.
pub const TRANSITION_RECORD_WARMUP: &str = "Incorrect schedule: RECORD followed by WARMUP";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_data_step_id() {
        // skip_first 12, warmup 1, active 1 -> Step Id 13 (seen in real output).
        let s = Schedule::clamped(0, 1, 1, 1, 12, 0);
        let run = s.run(s.closing_step_calls().expect("finite"));
        assert_eq!(run.recorded_steps, vec![13]);
        assert!(run.closes_cleanly);
    }

    #[test]
    fn clamping() {
        let s = Schedule::clamped(-1, -2, 0, -3, -4, -5);
        assert_eq!(
            (
                s.wait,
                s.warmup,
                s.active,
                s.repeat,
                s.skip_first,
                s.skip_first_wait
            ),
            (0, 0, 1, 0, 0, 0)
        );
    }

    #[test]
    fn early_stop_warnings() {
        let s = Schedule::clamped(0, 2, 3, 1, 3, 0);
        assert_eq!(s.run(4).warnings, vec![STOP_IN_WARMUP]);
        assert_eq!(s.run(5).warnings, vec![STOP_IN_RECORD]);
        assert_eq!(s.run(7).warnings, vec![STOP_IN_RECORD_AND_SAVE]);
        assert!(s.run(8).closes_cleanly);
        assert_eq!(s.run(8).recorded_steps, vec![5, 6, 7]);
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
        assert_eq!(s.run(2).stop_state, Action::Record);
        assert_eq!(s.run(2).saved_cycles, 1);
        assert!(!s.run(2).closes_cleanly);
    }

    #[test]
    fn skip_first_wait_shortens_first_cycle() {
        let s = Schedule::clamped(2, 0, 1, 1, 1, 1);
        assert_eq!(s.action(1), Action::RecordAndSave);
        assert_eq!(s.closing_step_calls(), Some(2));
    }
}
