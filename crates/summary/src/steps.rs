//! `step_trace_time.csv`: each recorded step's time and how it splits.
//!
//! The step total is `Computing + Communication(Not Overlapped) + Free` (msprof-analyze's step
//! time): computing and free time plus the communication that no computation hid.

use std::path::Path;

use serde::Serialize;

use crate::columns::{self, Header, SkippedRow};
use crate::error::SummaryError;

/// One row of `step_trace_time.csv`, in µs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// `Step` (the schedule's step number); `None` when empty (no schedule).
    pub step: Option<u64>,
    /// `computing_us + communication_not_overlapped_us + free_us`.
    pub total_us: f64,
    /// `Computing`: device time in computation kernels.
    pub computing_us: f64,
    /// `Communication(Not Overlapped)`: communication no computation hid.
    pub communication_not_overlapped_us: f64,
    /// `Overlapped`: communication hidden behind computation.
    pub overlapped_us: Option<f64>,
    /// `Communication`: all communication time.
    pub communication_us: Option<f64>,
    /// `Free`: device idle time (bubbles, host-bound gaps).
    pub free_us: f64,
    /// `Bubble` (pipeline parallelism).
    pub bubble_us: Option<f64>,
    /// `Preparing`: time before the step's first kernel.
    pub preparing_us: Option<f64>,
}

/// Mean, median and extremes of the step totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepStats {
    /// Number of steps.
    pub count: usize,
    /// Mean step total.
    pub mean_us: f64,
    /// Median step total (the lower middle value for an even count).
    pub p50_us: f64,
    /// Shortest step total.
    pub min_us: f64,
    /// Longest step total.
    pub max_us: f64,
}

/// A step of `total` µs, all of it computing (a test's step).
#[cfg(test)]
pub(crate) fn computing_step(step: Option<u64>, total: f64) -> Step {
    Step {
        step,
        total_us: total,
        computing_us: total,
        communication_not_overlapped_us: 0.0,
        overlapped_us: None,
        communication_us: None,
        free_us: 0.0,
        bubble_us: None,
        preparing_us: None,
    }
}

impl StepStats {
    /// The statistics of `steps`' totals; `None` for no steps.
    pub fn of(steps: &[Step]) -> Option<Self> {
        let mut totals: Vec<f64> = steps.iter().map(|s| s.total_us).collect();
        if totals.is_empty() {
            return None;
        }
        totals.sort_by(f64::total_cmp);
        let count = totals.len();
        Some(Self {
            count,
            mean_us: totals.iter().sum::<f64>() / count as f64,
            p50_us: totals[(count - 1) / 2],
            min_us: totals[0],
            max_us: totals[count - 1],
        })
    }
}

/// The shares of the summed step time: where the step went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimeSplit {
    /// Computing / total.
    pub computing: f64,
    /// Communication not overlapped / total.
    pub communication_not_overlapped: f64,
    /// Free / total.
    pub free: f64,
    /// Overlapped communication / total (hidden, so not part of the sum of the three above).
    pub overlapped: Option<f64>,
}

impl TimeSplit {
    /// The split of the summed step time of `steps`; `None` when there is no step time.
    pub fn of(steps: &[Step]) -> Option<Self> {
        let total: f64 = steps.iter().map(|s| s.total_us).sum();
        if steps.is_empty() || total <= 0.0 {
            return None;
        }
        let share = |f: fn(&Step) -> f64| steps.iter().map(f).sum::<f64>() / total;
        let overlapped = steps
            .iter()
            .map(|s| s.overlapped_us)
            .sum::<Option<f64>>()
            .map(|sum| sum / total);
        Some(Self {
            computing: share(|s| s.computing_us),
            communication_not_overlapped: share(|s| s.communication_not_overlapped_us),
            free: share(|s| s.free_us),
            overlapped,
        })
    }
}

struct StepColumns {
    step: Option<usize>,
    computing: usize,
    not_overlapped: usize,
    free: usize,
    overlapped: Option<usize>,
    communication: Option<usize>,
    bubble: Option<usize>,
    preparing: Option<usize>,
}

impl StepColumns {
    fn new(header: &Header, path: &Path) -> Result<Self, SummaryError> {
        Ok(Self {
            step: header.find(&["Step"]),
            computing: header.require(path, &["Computing"])?,
            not_overlapped: header.require(path, &["Communication(Not Overlapped)"])?,
            free: header.require(path, &["Free"])?,
            overlapped: header.find(&["Overlapped"]),
            communication: header.find(&["Communication"]),
            bubble: header.find(&["Bubble"]),
            preparing: header.find(&["Preparing"]),
        })
    }
}

/// Reads every step of a `step_trace_time.csv`, in file order; a row with the wrong number of
/// fields is added to `skipped` and left out (see [`Header::keep`]).
pub fn read_steps(path: &Path, skipped: &mut Vec<SkippedRow>) -> Result<Vec<Step>, SummaryError> {
    let mut reader = columns::open(path, 0)?;
    let header = columns::read_header(&mut reader, path)?;
    let cols = StepColumns::new(&header, path)?;
    let mut steps = Vec::new();
    while let Some(record) = columns::next(&mut reader, path)? {
        if record.iter().all(|f| columns::text(f).is_empty()) {
            continue;
        }
        if !header.keep(path, &record, skipped)? {
            continue;
        }
        let optional = |index: Option<usize>| -> Result<Option<f64>, SummaryError> {
            let Some(i) = index else { return Ok(None) };
            let field = record.get(i).unwrap_or_default();
            // A time must be a finite number (`inf`, `1e309` are refused by their line, so
            // that no report prints "inf s" or "NaN %"); a slightly negative one is a
            // writer's rounding of a difference and is kept.
            match columns::number(field) {
                Ok(Some(v)) if !v.is_finite() => {
                    Err(columns::bad_number(path, &record, &header, i, field))
                }
                parsed => {
                    parsed.map_err(|()| columns::bad_number(path, &record, &header, i, field))
                }
            }
        };
        let required = |i: usize| -> Result<f64, SummaryError> {
            optional(Some(i))?.ok_or_else(|| {
                columns::bad_number(path, &record, &header, i, record.get(i).unwrap_or_default())
            })
        };
        let step = match cols
            .step
            .map(|i| columns::text(record.get(i).unwrap_or_default()))
        {
            None | Some("") => None,
            Some(t) => Some(t.parse::<u64>().map_err(|_| {
                let i = cols.step.unwrap_or_default();
                columns::bad_number(path, &record, &header, i, record.get(i).unwrap_or_default())
            })?),
        };
        let computing_us = required(cols.computing)?;
        let communication_not_overlapped_us = required(cols.not_overlapped)?;
        let free_us = required(cols.free)?;
        steps.push(Step {
            step,
            total_us: computing_us + communication_not_overlapped_us + free_us,
            computing_us,
            communication_not_overlapped_us,
            overlapped_us: optional(cols.overlapped)?,
            communication_us: optional(cols.communication)?,
            free_us,
            bubble_us: optional(cols.bubble)?,
            preparing_us: optional(cols.preparing)?,
        });
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps_of(csv: &str) -> Result<Vec<Step>, SummaryError> {
        let dir = tempfile::tempdir().map_err(|source| SummaryError::Io {
            path: "tempdir".into(),
            source,
        })?;
        let path = dir.path().join("step_trace_time.csv");
        std::fs::write(&path, csv).map_err(|source| SummaryError::Io {
            path: path.clone(),
            source,
        })?;
        read_steps(&path, &mut Vec::new())
    }

    #[test]
    fn device_id_column_and_crlf_are_accepted() {
        let steps = steps_of(
            "Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble\r\n0,13,10,20,5,25,30,60,0\r\n",
        );
        let steps = steps.unwrap_or_default();
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].step, Some(13));
        assert_eq!(steps[0].total_us, 60.0);
        assert_eq!(steps[0].overlapped_us, Some(5.0));
        assert_eq!(steps[0].preparing_us, None);
    }

    #[test]
    fn missing_required_column_is_named() {
        let err = steps_of("Step,Computing,Free\n1,2,3\n").map(|_| ());
        let message = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("`Communication(Not Overlapped)`"),
            "{message}"
        );
    }

    #[test]
    fn text_in_a_number_column_is_an_error_with_its_line() {
        let err = steps_of("Step,Computing,Communication(Not Overlapped),Free\n1,2,3,4\n2,x,3,4\n")
            .map(|_| ());
        let message = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("line 3: column `Computing`"), "{message}");
    }

    #[test]
    fn a_ragged_row_is_skipped_with_its_line() {
        for (csv, line) in [
            (
                "Step,Computing,Communication(Not Overlapped),Free\n1,2,3,4\n2,3,4",
                3,
            ),
            (
                "Step,Computing,Communication(Not Overlapped),Free\n1,2,3\n2,3,4,5\n",
                2,
            ),
        ] {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let path = dir.path().join("step_trace_time.csv");
            std::fs::write(&path, csv).unwrap_or_else(|e| panic!("{e}"));
            let mut skipped = Vec::new();
            let steps = read_steps(&path, &mut skipped).unwrap_or_else(|e| panic!("{e}"));
            let lines: Vec<u64> = skipped.iter().map(|r| r.line).collect();
            assert_eq!((steps.len(), lines), (1, vec![line]), "{csv:?}");
        }
    }

    #[test]
    fn stats_take_the_lower_median() {
        let step = |total: f64| computing_step(None, total);
        let stats = StepStats::of(&[step(4.0), step(1.0), step(3.0), step(2.0)]);
        let stats = stats.map(|s| (s.count, s.mean_us, s.p50_us, s.min_us, s.max_us));
        assert_eq!(stats, Some((4, 2.5, 2.0, 1.0, 4.0)));
        assert_eq!(StepStats::of(&[]), None);
    }
}
