//! The clamped schedule and its arithmetic: the action at a step number, the recorded steps,
//! and the `step()` calls that close the last cycle.

use std::fmt;
use std::ops::Range;

use serde::Serialize;

use crate::Action;

/// How many cycles [`Schedule::recorded_steps`] lists at most (a `repeat` beyond it is cut off).
pub const RECORDED_CYCLES_LIMIT: u64 = 10_000;

/// How many step numbers [`Schedule::recorded_steps`] lists at most; a larger window (e.g. a
/// corrupt `active` in a profiler_info file) is reported as unbounded rather than allocated.
pub const RECORDED_STEPS_LIMIT: u64 = 1_000_000;

/// A `torch_npu.profiler.schedule(...)`, with torch_npu's clamping already applied.
///
/// `Display` writes the arguments as keyword arguments in Python, e.g.
/// `wait=0, warmup=1, active=1, repeat=1, skip_first=12` (`, skip_first_wait=N` is appended
/// when it is non-zero).
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
    /// torch_npu 2.7.1.post11 and 2.14.0: when non-zero, the first cycle starts without its `wait` steps.
    pub skip_first_wait: u64,
}

impl Schedule {
    /// Builds a schedule from raw arguments, clamping like torch_npu: `active < 1` becomes 1,
    /// a negative `wait`, `warmup`, `repeat` or `skip_first` becomes 0. torch_npu only checks
    /// that `skip_first_wait` is an integer and then tests it against 0, so a negative one counts
    /// as set: it is kept as its magnitude.
    ///
    /// The argument order is this struct's field order, not torch_npu's positional order
    /// (`wait, active, warmup, ...`).
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
            skip_first_wait: skip_first_wait.unsigned_abs(),
        }
    }

    /// The same schedule with `active` replaced (clamped to at least 1).
    pub fn with_active(self, active: u64) -> Self {
        Self {
            active: active.max(1),
            ..self
        }
    }

    /// Steps in one cycle: `wait + warmup + active`.
    pub fn cycle(&self) -> u64 {
        self.wait
            .saturating_add(self.warmup)
            .saturating_add(self.active)
    }

    /// The `wait` steps the first cycle skips (`skip_first_wait`), else 0.
    fn skipped_wait(&self) -> u64 {
        if self.skip_first_wait != 0 {
            self.wait
        } else {
            0
        }
    }

    /// The action for step number `step` (the profiler starts at 0; each `step()` adds 1).
    pub fn action(&self, step: u64) -> Action {
        if step < self.skip_first {
            return Action::None;
        }
        let s = (step - self.skip_first).saturating_add(self.skipped_wait());
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

    /// Whether step number `step` is recorded by some cycle (any number of cycles).
    pub fn is_recorded(&self, step: u64) -> bool {
        self.action(step).is_recorded()
    }

    /// The recorded step numbers of every cycle, in order, when `repeat` bounds them (at most
    /// the first [`RECORDED_CYCLES_LIMIT`] cycles); `None` for `repeat = 0` and for windows of
    /// more than [`RECORDED_STEPS_LIMIT`] steps.
    pub fn recorded_steps(&self) -> Option<Vec<u64>> {
        let cycles = self.repeat.min(RECORDED_CYCLES_LIMIT);
        if self.repeat == 0 || cycles.saturating_mul(self.active) > RECORDED_STEPS_LIMIT {
            return None;
        }
        let mut steps = Vec::new();
        for k in 0..cycles {
            let first = self.first_recorded(k);
            steps.extend(first..first.saturating_add(self.active));
        }
        Some(steps)
    }

    /// The step numbers cycle `k` (0-based) records, which are the `Step Id`s of that cycle's
    /// run directory (torch_npu writes one run directory per cycle); `None` past the last cycle.
    pub fn cycle_steps(&self, k: u64) -> Option<Range<u64>> {
        if self.repeat > 0 && k >= self.repeat {
            return None;
        }
        let first = self.first_recorded(k);
        Some(first..first.saturating_add(self.active))
    }

    /// The cycle (0-based) that records step number `step`, if any.
    pub fn cycle_of(&self, step: u64) -> Option<u64> {
        if !self.is_recorded(step) {
            return None;
        }
        let shifted = (step - self.skip_first).saturating_add(self.skipped_wait());
        Some(shifted / self.cycle())
    }

    /// The first recorded step of cycle `k` (0-based):
    /// `skip_first + k·cycle + wait + warmup` (minus the skipped first `wait`).
    fn first_recorded(&self, k: u64) -> u64 {
        self.skip_first
            .saturating_add(k.saturating_mul(self.cycle()))
            .saturating_add(self.wait)
            .saturating_add(self.warmup)
            .saturating_sub(self.skipped_wait())
    }

    /// The `step()` calls after which the last cycle is saved: `skip_first + repeat·cycle`
    /// (minus the skipped first `wait` with `skip_first_wait`); `None` when `repeat = 0`
    /// (the window never closes by itself).
    pub fn closing_step_calls(&self) -> Option<u64> {
        (self.repeat > 0).then(|| {
            self.skip_first
                .saturating_add(self.repeat.saturating_mul(self.cycle()))
                .saturating_sub(self.skipped_wait())
        })
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wait={}, warmup={}, active={}, repeat={}, skip_first={}",
            self.wait, self.warmup, self.active, self.repeat, self.skip_first
        )?;
        if self.skip_first_wait != 0 {
            write!(f, ", skip_first_wait={}", self.skip_first_wait)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn real_sample_records_step_13() {
        // skip_first 12, warmup 1, active 1 -> Step Id 13 (seen in real output).
        let s = Schedule::clamped(0, 1, 1, 1, 12, 0);
        assert_eq!(s.action(11), Action::None);
        assert_eq!(s.action(12), Action::Warmup);
        assert_eq!(s.action(13), Action::RecordAndSave);
        assert_eq!(s.action(14), Action::None);
        assert_eq!(s.closing_step_calls(), Some(14));
        assert_eq!(s.recorded_steps(), Some(vec![13]));
        assert!(s.is_recorded(13));
        assert!(!s.is_recorded(12));
        assert!(!s.is_recorded(15));
    }

    #[test]
    fn recipes_decode_default_records_steps_3_to_5() {
        let s = Schedule::clamped(0, 0, 3, 1, 3, 0);
        assert_eq!(s.recorded_steps(), Some(vec![3, 4, 5]));
        assert_eq!(s.closing_step_calls(), Some(6));
    }

    #[test]
    fn repeated_cycles() {
        let s = Schedule::clamped(1, 1, 2, 2, 0, 0);
        assert_eq!(s.cycle(), 4);
        assert_eq!(s.recorded_steps(), Some(vec![2, 3, 6, 7]));
        for step in 0..10 {
            assert_eq!(s.is_recorded(step), [2, 3, 6, 7].contains(&step), "{step}");
        }
        assert_eq!(s.closing_step_calls(), Some(8));
    }

    #[test]
    fn a_negative_skip_first_wait_counts_as_set() {
        // torch_npu tests `skip_first_wait != 0`, so -1 skips the first wait as 1 does.
        let negative = Schedule::clamped(2, 0, 1, 1, 1, -1);
        assert_eq!(negative.action(1), Action::RecordAndSave);
        assert_eq!(negative.recorded_steps(), Some(vec![1]));
    }

    #[test]
    fn cycles_are_numbered_and_each_has_its_steps() {
        let s = Schedule::clamped(1, 1, 2, 3, 2, 0);
        assert_eq!(s.cycle_steps(0), Some(4..6));
        assert_eq!(s.cycle_steps(2), Some(12..14));
        assert_eq!(s.cycle_steps(3), None);
        assert_eq!(s.cycle_of(5), Some(0));
        assert_eq!(s.cycle_of(9), Some(1));
        assert_eq!(s.cycle_of(8), Some(1));
        assert_eq!(s.cycle_of(7), None, "warmup");
        assert_eq!(s.cycle_of(16), None);
        let forever = Schedule::clamped(0, 0, 1, 0, 0, 0);
        assert_eq!(forever.cycle_steps(7), Some(7..8));
        assert_eq!(forever.cycle_of(7), Some(7));
    }

    #[test]
    fn clamping() {
        let s = Schedule::clamped(-1, -2, 0, -3, -4, -5);
        assert_eq!(
            s,
            Schedule {
                wait: 0,
                warmup: 0,
                active: 1,
                repeat: 0,
                skip_first: 0,
                skip_first_wait: 5
            }
        );
        assert_eq!(s.closing_step_calls(), None);
        let once = Schedule::clamped(-1, -2, 0, 1, -3, 0);
        assert_eq!(once.recorded_steps(), Some(vec![0]));
    }

    #[test]
    fn repeat_zero_is_unbounded() {
        let s = Schedule::clamped(0, 0, 1, 0, 0, 0);
        assert_eq!(s.recorded_steps(), None);
        assert_eq!(s.closing_step_calls(), None);
        assert!(s.is_recorded(1000));
    }

    #[test]
    fn skip_first_wait_skips_the_first_wait() {
        let s = Schedule::clamped(2, 0, 1, 1, 1, 1);
        assert_eq!(s.action(1), Action::RecordAndSave);
        assert_eq!(s.closing_step_calls(), Some(2));
        let t = Schedule::clamped(2, 0, 1, 1, 5, 1);
        assert_eq!(t.recorded_steps(), Some(vec![5]));
        assert!(t.is_recorded(5));
        assert!(!t.is_recorded(4));
    }

    #[test]
    fn with_active_replaces_active_and_clamps() {
        let s = Schedule::clamped(0, 1, 1, 1, 12, 0);
        assert_eq!(s.with_active(3).recorded_steps(), Some(vec![13, 14, 15]));
        assert_eq!(s.with_active(0).active, 1);
    }

    #[test]
    fn display_is_python_keyword_arguments() {
        let s = Schedule::clamped(0, 1, 1, 1, 12, 0);
        assert_eq!(
            s.to_string(),
            "wait=0, warmup=1, active=1, repeat=1, skip_first=12"
        );
        assert_eq!(
            Schedule::clamped(2, 0, 1, 1, 5, 1).to_string(),
            "wait=2, warmup=0, active=1, repeat=1, skip_first=5, skip_first_wait=1"
        );
    }

    #[test]
    fn recorded_steps_are_capped_at_the_cycle_limit() {
        let s = Schedule::clamped(0, 0, 1, i64::MAX, 0, 0);
        let steps = s.recorded_steps().expect("bounded repeat");
        assert_eq!(steps.len() as u64, RECORDED_CYCLES_LIMIT);
        assert_eq!(steps.last(), Some(&(RECORDED_CYCLES_LIMIT - 1)));
    }

    #[test]
    fn a_huge_window_is_unbounded_not_allocated() {
        let s = Schedule::clamped(0, 0, i64::MAX, 1, 0, 0);
        assert_eq!(s.recorded_steps(), None);
        let at_limit = Schedule::clamped(0, 0, 1000, 1000, 0, 0);
        assert_eq!(
            at_limit.recorded_steps().map(|steps| steps.len() as u64),
            Some(RECORDED_STEPS_LIMIT)
        );
    }

    proptest! {
        /// The closed form of `recorded_steps` agrees with the step-by-step simulation.
        #[test]
        fn recorded_steps_match_the_simulation(
            wait in 0i64..4, warmup in 0i64..4, active in 0i64..4,
            repeat in 1i64..4, skip_first in 0i64..6, skip_first_wait in 0i64..2,
        ) {
            let s = Schedule::clamped(wait, warmup, active, repeat, skip_first, skip_first_wait);
            let closing = s.closing_step_calls().expect("repeat > 0");
            let recorded = s.recorded_steps().expect("repeat > 0");
            prop_assert_eq!(&s.run(closing).recorded_steps, &recorded);
            let by_action: Vec<u64> = (0..closing + 3).filter(|&x| s.is_recorded(x)).collect();
            prop_assert_eq!(&by_action, &recorded);
            let by_cycle: Vec<u64> = (0..s.repeat).flat_map(|k| s.cycle_steps(k).expect("k < repeat")).collect();
            prop_assert_eq!(&by_cycle, &recorded);
            for step in by_action {
                let k = s.cycle_of(step).expect("recorded");
                prop_assert!(s.cycle_steps(k).expect("k < repeat").contains(&step));
            }
        }
    }
}
