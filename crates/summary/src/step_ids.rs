//! The steps a kernel table counts: its rows' distinct `Step Id`s, which need not be the steps
//! `step_trace_time.csv` lists (each file is divided by its own count).

use std::collections::BTreeSet;

/// The distinct `Step Id`s of a kernel table's rows, counted as the rows come: the first
/// [`StepIds::MAX`] are kept, and past them each run of rows of another step counts once
/// (exact when rows come grouped by step, as torch_npu writes them).
#[derive(Debug, Clone, Default)]
pub struct StepIds {
    kept: BTreeSet<u64>,
    beyond: usize,
    /// The step of the row before (rows come grouped by step: one set lookup per step).
    last: Option<Option<u64>>,
}

impl StepIds {
    /// Distinct `Step Id`s kept per table.
    pub const MAX: usize = 4096;

    /// Counts the step of one row (`None`: no `Step Id` column, or no number in it).
    #[inline]
    pub fn see(&mut self, step: Option<u64>) {
        if self.last == Some(step) {
            return;
        }
        self.last = Some(step);
        if let Some(step) = step {
            self.insert(step);
        }
    }

    fn insert(&mut self, step: u64) {
        if self.kept.contains(&step) {
            return;
        }
        if self.kept.len() < Self::MAX {
            self.kept.insert(step);
        } else {
            self.beyond += 1;
        }
    }

    /// Adds the steps of the rows that follow (a later segment of the same file: a step that
    /// runs across the boundary counts once).
    pub fn absorb(&mut self, next: StepIds) {
        for step in next.kept {
            self.insert(step);
        }
        self.beyond += next.beyond;
        self.last = next.last.or(self.last);
    }

    /// The steps counted (0 when no row had a `Step Id`).
    pub fn count(&self) -> usize {
        self.kept.len() + self.beyond
    }
}

/// A row's `Step Id` field read as a number, parsed once per run of equal fields (rows come
/// grouped by step).
#[derive(Debug, Clone, Default)]
pub struct StepField {
    bytes: Vec<u8>,
    value: Option<u64>,
}

impl StepField {
    /// The step of a row whose `Step Id` field is `bytes` (`None`: no number in it).
    #[inline]
    pub fn read(&mut self, bytes: &[u8]) -> Option<u64> {
        if bytes != self.bytes.as_slice() {
            self.bytes.clear();
            self.bytes.extend_from_slice(bytes);
            self.value = crate::columns::text(bytes).parse().ok();
        }
        self.value
    }
}

/// The steps a kernel table's sums are divided by: its own count of steps when it has one
/// (`kernel_details.csv` and `step_trace_time.csv` may disagree: each is divided by its own),
/// else `trace_steps`; at least 1.
pub fn kernel_divisor(kernel_steps: Option<usize>, trace_steps: usize) -> usize {
    match kernel_steps {
        Some(n) if n > 0 => n,
        _ => trace_steps.max(1),
    }
}

/// The note for a kernel table that counts other steps than `step_trace_time.csv` (`None`
/// when they agree, or when either count is unknown).
pub fn disagreement(kernel_steps: usize, trace_steps: usize) -> Option<String> {
    (kernel_steps > 0 && trace_steps > 0 && kernel_steps != trace_steps).then(|| {
        format!(
            "{} holds {kernel_steps} step(s), {} {trace_steps}: kernel figures are per step of \
             the kernel table, the time split per step of step_trace_time",
            crate::run::KERNEL_DETAILS,
            crate::run::STEP_TRACE
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{StepIds, disagreement, kernel_divisor};

    fn counted(segments: &[&[Option<u64>]]) -> usize {
        let mut all = StepIds::default();
        for rows in segments {
            let mut ids = StepIds::default();
            rows.iter().for_each(|&step| ids.see(step));
            all.absorb(ids);
        }
        all.count()
    }

    #[test]
    fn kernel_sums_are_divided_by_their_own_steps_else_step_traces_and_never_by_zero() {
        assert_eq!(kernel_divisor(Some(2), 3), 2);
        assert_eq!(kernel_divisor(Some(0), 3), 3);
        assert_eq!(kernel_divisor(None, 3), 3);
        assert_eq!(kernel_divisor(None, 0), 1);
        assert_eq!(kernel_divisor(Some(0), 0), 1);
    }

    #[test]
    fn distinct_steps_are_counted_once_across_rows_and_segments() {
        assert_eq!(counted(&[&[None, None]]), 0);
        assert_eq!(counted(&[&[Some(3), Some(3), Some(4), Some(3)]]), 2);
        assert_eq!(counted(&[&[Some(3), Some(4)], &[Some(4), Some(5)]]), 3);
    }

    #[test]
    fn steps_past_the_kept_set_are_counted_by_their_runs_of_rows() {
        let mut ids = StepIds::default();
        let steps = StepIds::MAX as u64 + 7;
        for step in 0..steps {
            ids.see(Some(step));
            ids.see(Some(step));
        }
        ids.see(Some(0)); // kept: not counted again
        assert_eq!(ids.count(), steps as usize);
    }

    #[test]
    fn a_disagreement_is_noted_only_when_both_counts_are_known_and_differ() {
        assert_eq!(disagreement(0, 5), None);
        assert_eq!(disagreement(5, 0), None);
        assert_eq!(disagreement(5, 5), None);
        assert_eq!(
            disagreement(7, 5).as_deref(),
            Some(
                "kernel_details.csv holds 7 step(s), step_trace_time.csv 5: kernel figures are \
                 per step of the kernel table, the time split per step of step_trace_time"
            )
        );
    }
}
