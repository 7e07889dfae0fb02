//! The torch_npu schedule arithmetic (reference §8): clamping, the action at a step number,
//! and the number of `step()` calls a window needs to close.

/// What the profiler does at one step number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Not collecting (skip_first, wait, or past the last cycle).
    None,
    /// Warming up; stopping here deletes the run directory.
    Warmup,
    /// Recording; stopping here parses incomplete data.
    Record,
    /// The last recorded step of a cycle; leaving it saves and parses the cycle.
    RecordAndSave,
}

/// A schedule with known, clamped values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Schedule {
    pub(crate) wait: u64,
    pub(crate) warmup: u64,
    pub(crate) active: u64,
    pub(crate) repeat: u64,
    pub(crate) skip_first: u64,
}

impl Schedule {
    /// Builds a schedule from raw values, clamped as torch_npu does (active to ≥ 1, the rest to ≥ 0).
    pub(crate) fn clamped(
        wait: i64,
        warmup: i64,
        active: i64,
        repeat: i64,
        skip_first: i64,
    ) -> Self {
        let non_negative = |v: i64| u64::try_from(v).unwrap_or(0);
        Self {
            wait: non_negative(wait),
            warmup: non_negative(warmup),
            active: non_negative(active).max(1),
            repeat: non_negative(repeat),
            skip_first: non_negative(skip_first),
        }
    }

    /// `wait + warmup + active`.
    pub(crate) fn cycle(&self) -> u64 {
        self.wait + self.warmup + self.active
    }

    /// `skip_first + repeat·cycle`: the `step()` calls needed to close the last cycle, or
    /// `None` when `repeat` is 0 (cycles repeat until the profiler stops).
    pub(crate) fn closing_steps(&self) -> Option<u64> {
        (self.repeat > 0).then(|| self.skip_first + self.repeat * self.cycle())
    }

    /// The action at step number `step` (the profiler starts at 0; each `step()` adds 1).
    pub(crate) fn action(&self, step: u64) -> Action {
        if step < self.skip_first {
            return Action::None;
        }
        let s = step - self.skip_first;
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

    /// The arguments as written in Python.
    pub(crate) fn describe(&self) -> String {
        format!(
            "wait={}, warmup={}, active={}, repeat={}, skip_first={}",
            self.wait, self.warmup, self.active, self.repeat, self.skip_first
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_data_case_records_step_13() {
        let s = Schedule::clamped(0, 1, 1, 1, 12);
        assert_eq!(s.action(12), Action::Warmup);
        assert_eq!(s.action(13), Action::RecordAndSave);
        assert_eq!(s.action(14), Action::None);
        assert_eq!(s.closing_steps(), Some(14));
    }

    #[test]
    fn clamps_invalid_values() {
        let s = Schedule::clamped(-1, -2, 0, -3, -4);
        assert_eq!(
            s,
            Schedule {
                wait: 0,
                warmup: 0,
                active: 1,
                repeat: 0,
                skip_first: 0
            }
        );
        assert_eq!(s.closing_steps(), None);
    }
}
