//! A finding: what is wrong, the evidence, the time at stake and what to do.

use npuprof_severity::Severity;
use serde::Serialize;

use crate::codes::Code;

/// One piece of evidence: a kernel, a rank, a gap, a link.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// What it is (a kernel name, `rank 3`, a link type, …).
    pub label: String,
    /// More about it (its type and core, its busiest pipe, the kernels around a gap, …).
    pub detail: String,
    /// Its time per step (µs), when it has one.
    pub time_us: Option<f64>,
    /// `time_us` as a share of the step, when the step time is known.
    pub share: Option<f64>,
    /// Rows, calls or transfers, when counted.
    pub count: Option<u64>,
    /// The step it is in, when it is one step's.
    pub step: Option<u64>,
    /// Where it is on the `Start Time(us)` clock (a gap: to find it in trace_view.json).
    pub at_us: Option<f64>,
}

/// What is wrong with one phase × rank (or, for `slow-rank`, with one phase's ranks).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The stable code.
    pub code: Code,
    /// The code's severity.
    pub severity: Severity,
    /// The phase, when known.
    pub phase: Option<String>,
    /// The rank, when the finding is one rank's (`None` for `slow-rank` and unknown ranks).
    pub rank: Option<u32>,
    /// The run directory, relative to the advised path, when the finding is one run's.
    pub dir: Option<String>,
    /// One line: what was found, with its size.
    pub title: String,
    /// Estimated time at stake per step (µs): see the code's meaning.
    pub at_stake_us: f64,
    /// `at_stake_us` as a share of the mean step, when the step time is known.
    pub at_stake_share: Option<f64>,
    /// The evidence, largest first (at most `--top` items).
    pub evidence: Vec<Evidence>,
    /// What to do next.
    pub action: String,
}

impl Finding {
    /// A finding of `code` with its registry severity and action.
    pub(crate) fn new(code: Code, title: String, at_stake_us: f64) -> Self {
        let def = code.def();
        Self {
            code,
            severity: def.severity,
            phase: None,
            rank: None,
            dir: None,
            title,
            at_stake_us,
            at_stake_share: None,
            evidence: Vec::new(),
            action: def.action.to_owned(),
        }
    }
}
