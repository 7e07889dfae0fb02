//! torch_npu's schedule arithmetic (reference §8): which step numbers a schedule records.

/// A recorded `torch_npu.profiler.schedule(...)`, with torch_npu's clamping applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Steps with no profiling at the start of each cycle.
    pub wait: u64,
    /// Recorded steps per cycle (at least 1).
    pub active: u64,
    /// Warm-up steps per cycle.
    pub warmup: u64,
    /// Number of cycles; 0 = until the profiler stops.
    pub repeat: u64,
    /// Steps skipped once before the first cycle.
    pub skip_first: u64,
    /// 26.1+: when non-zero, the first cycle's wait is skipped too.
    pub skip_first_wait: u64,
}

impl Schedule {
    /// Builds a schedule, clamping like torch_npu (active to ≥ 1, the rest to ≥ 0).
    pub fn new(
        wait: i64,
        active: i64,
        warmup: i64,
        repeat: i64,
        skip_first: i64,
        skip_first_wait: i64,
    ) -> Self {
        let nonneg = |v: i64| u64::try_from(v).unwrap_or(0);
        Self {
            wait: nonneg(wait),
            active: nonneg(active).max(1),
            warmup: nonneg(warmup),
            repeat: nonneg(repeat),
            skip_first: nonneg(skip_first),
            skip_first_wait: nonneg(skip_first_wait),
        }
    }

    /// The same schedule with `active` replaced (`--expect-active`).
    pub fn with_active(self, active: u64) -> Self {
        Self {
            active: active.max(1),
            ..self
        }
    }

    /// Steps in one cycle.
    pub fn cycle(&self) -> u64 {
        self.wait + self.warmup + self.active
    }

    /// First recorded step of cycle `k`.
    fn first_recorded(&self, k: u64) -> u64 {
        let shift = if self.skip_first_wait != 0 {
            self.wait
        } else {
            0
        };
        (self.skip_first + k * self.cycle() + self.wait + self.warmup).saturating_sub(shift)
    }

    /// The recorded steps of every cycle, when `repeat` bounds them (`None` for `repeat=0`).
    pub fn recorded_steps(&self) -> Option<Vec<u64>> {
        if self.repeat == 0 {
            return None;
        }
        let mut steps = Vec::new();
        for k in 0..self.repeat.min(10_000) {
            let first = self.first_recorded(k);
            steps.extend(first..first + self.active);
        }
        Some(steps)
    }

    /// Whether step `s` is recorded by some cycle (any number of cycles).
    pub fn is_recorded(&self, s: u64) -> bool {
        let shift = if self.skip_first_wait != 0 {
            self.wait
        } else {
            0
        };
        if s < self.skip_first {
            return false;
        }
        let rel = s + shift - self.skip_first;
        let cycle = self.cycle();
        if self.repeat > 0 && rel / cycle >= self.repeat {
            return false;
        }
        rel % cycle >= self.wait + self.warmup
    }

    /// Human form, e.g. `wait=0 warmup=1 active=1 repeat=1 skip_first=12`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "wait={} warmup={} active={} repeat={} skip_first={}",
            self.wait, self.warmup, self.active, self.repeat, self.skip_first
        );
        if self.skip_first_wait != 0 {
            s.push_str(&format!(" skip_first_wait={}", self.skip_first_wait));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_sample_schedule_records_step_13() {
        let s = Schedule::new(0, 1, 1, 1, 12, 0);
        assert_eq!(s.recorded_steps(), Some(vec![13]));
        assert!(s.is_recorded(13));
        assert!(!s.is_recorded(12));
        assert!(!s.is_recorded(15));
    }

    #[test]
    fn recipes_decode_default() {
        let s = Schedule::new(0, 3, 0, 1, 3, 0);
        assert_eq!(s.recorded_steps(), Some(vec![3, 4, 5]));
    }

    #[test]
    fn repeated_cycles_and_clamping() {
        let s = Schedule::new(1, 2, 1, 2, 0, 0);
        assert_eq!(s.recorded_steps(), Some(vec![2, 3, 6, 7]));
        let c = Schedule::new(-1, 0, -2, 1, -3, 0);
        assert_eq!(c.recorded_steps(), Some(vec![0]));
        let unbounded = Schedule::new(0, 1, 0, 0, 0, 0);
        assert_eq!(unbounded.recorded_steps(), None);
        assert!(unbounded.is_recorded(1000));
        for s in [2u64, 3, 6, 7] {
            assert!(Schedule::new(1, 2, 1, 2, 0, 0).is_recorded(s));
        }
    }

    #[test]
    fn skip_first_wait_skips_the_first_wait() {
        let s = Schedule::new(2, 1, 0, 1, 5, 1);
        assert_eq!(s.recorded_steps(), Some(vec![5]));
        assert!(s.is_recorded(5));
    }
}
