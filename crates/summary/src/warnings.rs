//! Warnings to read before the numbers: rows skipped while reading, and mismatches — what two
//! runs (or the ranks of one phase) do not share, named before any
//! delta or rank comparison, because the numbers would mislead otherwise — a Level0 run has no
//! pipe metrics, a different build may name kernels differently, one step per rank against
//! ten is a different window.
//!
//! A side that does not record an attribute (no `profiler_info`, an old build without
//! versions) is not judged on it: only values both sides record can differ.

use serde::Serialize;

use crate::Summary;
use crate::columns::SkippedRow;
use crate::recorded::{Recorded, Source};
use crate::run::RunSummary;

/// What differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WarningCode {
    /// Different `_profiler_level`.
    ProfilerLevel,
    /// Different `_aic_metrics`.
    AicMetrics,
    /// Numbers read from different exports (text, db).
    ExportType,
    /// Different torch_npu or CANN builds.
    Build,
    /// Different phases.
    Phases,
    /// Different ranks in a phase.
    RankSet,
    /// Different numbers of recorded steps per rank.
    StepCount,
    /// Rows of a CSV that could not be read were skipped.
    SkippedRows,
    /// A run's profiler_info could not be used (a FIFO, a link out of the run, not JSON): what
    /// it records is not compared.
    RunNote,
}

impl WarningCode {
    /// The code as written in reports and the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            WarningCode::ProfilerLevel => "profiler-level",
            WarningCode::AicMetrics => "aic-metrics",
            WarningCode::ExportType => "export-type",
            WarningCode::Build => "build",
            WarningCode::Phases => "phases",
            WarningCode::RankSet => "rank-set",
            WarningCode::StepCount => "step-count",
            WarningCode::SkippedRows => "skipped-rows",
            WarningCode::RunNote => "run-note",
        }
    }

    /// What differs, and what it does to the numbers.
    fn meaning(self) -> (&'static str, &'static str) {
        match self {
            WarningCode::ProfilerLevel => (
                "profiler levels differ",
                "kernel columns, pipe metrics and communication detail differ with the level",
            ),
            WarningCode::AicMetrics => (
                "aic metrics differ",
                "pipe ratios and bounds compare only under the same aic_metrics",
            ),
            WarningCode::ExportType => (
                "export types differ",
                "the text and db exports are read the same way, yet were recorded separately",
            ),
            WarningCode::Build => (
                "torch_npu/CANN builds differ",
                "kernel names, fusion and timing can change with the build",
            ),
            WarningCode::Phases => (
                "phases differ",
                "only phases present on both sides are compared",
            ),
            WarningCode::RankSet => (
                "rank sets differ",
                "per-step times are averaged over different ranks",
            ),
            WarningCode::StepCount => (
                "step counts differ",
                "per-step figures average different windows: warm-up and outliers weigh differently",
            ),
            WarningCode::SkippedRows => (
                "rows were skipped",
                "the totals leave out the rows that could not be read",
            ),
            WarningCode::RunNote => (
                "a run's profiler_info could not be used",
                "its build, level and metrics are not compared",
            ),
        }
    }
}

/// One mismatch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// What differs.
    pub code: WarningCode,
    /// The phase it concerns (`None`: the whole run, or a run without phases).
    pub phase: Option<String>,
    /// One line: what differs, the values on each side, and what it does to the numbers.
    pub message: String,
}

impl Warning {
    /// A warning of `code` whose values are `detail` (`base Level1, new Level0`).
    pub fn new(code: WarningCode, phase: Option<String>, detail: &str) -> Self {
        let (what, effect) = code.meaning();
        let within = phase
            .as_deref()
            .map_or_else(String::new, |p| format!(" in {p}"));
        Self {
            code,
            phase,
            message: format!("{what}{within}: {detail} ({effect})"),
        }
    }
}

/// What the warnings compare of one run (summary's and advise's runs alike).
#[derive(Debug, Clone, Copy)]
pub struct RunFacts<'a> {
    /// The phase.
    pub phase: &'a Option<String>,
    /// The rank.
    pub rank: Option<u32>,
    /// How it was recorded.
    pub recorded: Option<&'a Recorded>,
    /// The export read.
    pub source: Option<Source>,
    /// Recorded steps (step_trace_time rows; 0 when unknown).
    pub steps: usize,
}

impl<'a> From<&'a RunSummary> for RunFacts<'a> {
    fn from(run: &'a RunSummary) -> Self {
        Self {
            phase: &run.phase,
            rank: run.rank,
            recorded: run.recorded.as_ref(),
            source: run.source,
            steps: run.steps.len(),
        }
    }
}

/// How an attribute is read off a run (`None`: not recorded).
type Attribute = fn(&RunFacts<'_>) -> Option<String>;

/// The attributes compared, each with how to read it off a run.
fn attributes() -> [(WarningCode, Attribute); 5] {
    [
        (WarningCode::ProfilerLevel, |r| {
            r.recorded?.profiler_level.clone()
        }),
        (WarningCode::AicMetrics, |r| r.recorded?.aic_metrics.clone()),
        (WarningCode::ExportType, |r| {
            r.source.map(|s| s.as_str().to_owned())
        }),
        (WarningCode::Build, |r| r.recorded?.build()),
        (WarningCode::StepCount, |r| {
            (r.steps > 0).then(|| match r.steps {
                1 => "1 step".to_owned(),
                n => format!("{n} steps"),
            })
        }),
    ]
}

/// The distinct values of `get` over `runs` (sorted), those not recorded left out.
fn values(runs: &[RunFacts<'_>], get: Attribute) -> Vec<String> {
    let mut out: Vec<String> = runs.iter().filter_map(|r| get(r)).collect();
    out.sort();
    out.dedup();
    out
}

fn ranks(runs: &[RunFacts<'_>]) -> Vec<u32> {
    let mut out: Vec<u32> = runs.iter().filter_map(|r| r.rank).collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn list<T: ToString>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the two sides of one phase do not share: `base` and `new` are its runs on each side.
pub fn between_phase(
    phase: &Option<String>,
    base: &[&RunSummary],
    new: &[&RunSummary],
) -> Vec<Warning> {
    let base: Vec<RunFacts> = base.iter().map(|r| RunFacts::from(*r)).collect();
    let new: Vec<RunFacts> = new.iter().map(|r| RunFacts::from(*r)).collect();
    let (base, new) = (&base[..], &new[..]);
    let mut out = Vec::new();
    for (code, get) in attributes() {
        let (b, n) = (values(base, get), values(new, get));
        if !b.is_empty() && !n.is_empty() && b != n {
            let detail = format!("base {}, new {}", list(&b), list(&n));
            out.push(Warning::new(code, phase.clone(), &detail));
        }
    }
    let (b, n) = (ranks(base), ranks(new));
    if b != n && !b.is_empty() && !n.is_empty() {
        let detail = format!("base rank {}, new rank {}", list(&b), list(&n));
        out.push(Warning::new(WarningCode::RankSet, phase.clone(), &detail));
    }
    out.sort_by_key(|w| w.code);
    out
}

/// The warning for the rows skipped in one run (the first few listed); `None` when none was.
pub fn skipped(phase: &Option<String>, rank: Option<u32>, rows: &[SkippedRow]) -> Option<Warning> {
    const LISTED: usize = 3;
    if rows.is_empty() {
        return None;
    }
    let mut listed: Vec<String> = rows.iter().take(LISTED).map(ToString::to_string).collect();
    if rows.len() > LISTED {
        listed.push(format!("{} more", rows.len() - LISTED));
    }
    let rank = rank.map_or_else(|| "-".to_owned(), |r| r.to_string());
    let detail = format!("rank {rank}: {}", listed.join("; "));
    Some(Warning::new(
        WarningCode::SkippedRows,
        phase.clone(),
        &detail,
    ))
}

/// The rows skipped in each run of `summary`, then what the ranks of each phase do not share
/// (they are combined in the rank section and by `compare`).
pub fn within(summary: &Summary) -> Vec<Warning> {
    let mut out: Vec<Warning> = summary
        .runs
        .iter()
        .filter_map(|r| skipped(&r.phase, r.rank, &r.skipped_rows))
        .collect();
    let facts: Vec<RunFacts> = summary.runs.iter().map(RunFacts::from).collect();
    out.extend(mismatches(&facts));
    out
}

/// What the ranks of each phase of `runs` (grouped by phase, as summaries and advice hold
/// them) do not share.
pub fn mismatches(runs: &[RunFacts<'_>]) -> Vec<Warning> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < runs.len() {
        let phase = runs[start].phase;
        let group: Vec<RunFacts> = runs[start..]
            .iter()
            .take_while(|r| r.phase == phase)
            .copied()
            .collect();
        start += group.len();
        for (code, get) in attributes() {
            let found = values(&group, get);
            if found.len() > 1 {
                let detail = group
                    .iter()
                    .filter_map(|r| Some(format!("rank {} {}", r.rank?, get(r)?)))
                    .collect::<Vec<_>>()
                    .join(", ");
                out.push(Warning::new(code, phase.clone(), &detail));
            }
        }
    }
    out
}
