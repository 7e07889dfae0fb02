//! The verify report: one summary per run directory and the findings.

use serde::{Deserialize, Serialize};

use crate::finding::{Finding, Severity};
use npuprof_runs::discover::TargetKind;

/// The version of the JSON schema of [`VerifyReport`] (and of the merged report).
pub const SCHEMA_VERSION: u32 = 1;

/// The whole result of `verify`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `true` when no finding is an error.
    pub ok: bool,
    /// What was verified.
    pub target: TargetSummary,
    /// One entry per run directory, sorted by phase, rank and path.
    pub runs: Vec<RunSummary>,
    /// Findings, errors first, then warnings, then info.
    pub findings: Vec<Finding>,
}

impl VerifyReport {
    /// Number of findings of a severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }
}

/// The verified path.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetSummary {
    /// `result-dir`, `phase-dir`, `run-dir` or `tree`.
    pub kind: TargetKind,
    /// The path as given (or as chosen by `--model`).
    pub path: String,
    /// Phases expected (result directories: from `--phase`), else the phases found.
    pub phases: Vec<String>,
    /// Ranks expected per phase, when known: `--ranks`, else `parallel_group_info`
    /// of profiler_metadata.json, else one more than the highest `log_<rank>.log`.
    pub expected_ranks: Option<u32>,
    /// Whether every one of `expected_ranks` must be here (`--ranks`, or rank logs name them);
    /// otherwise a subset is normal (one node of a multi-node run).
    #[serde(default)]
    pub whole_run: bool,
}

/// One run directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSummary {
    /// `prefill`, `decode`, another phase directory name, or null.
    pub phase: Option<String>,
    /// Rank from profiler_info (`rank_id` or the file name), else profiler_metadata, or null.
    pub rank: Option<u32>,
    /// `parallel_group_info` from profiler_metadata.json, or null.
    #[serde(default)]
    pub world_size: Option<u32>,
    /// The run directory.
    pub dir: String,
    /// `torch_npu_version` from profiler_info.
    pub torch_npu_version: Option<String>,
    /// `cann_version` from profiler_info.
    pub cann_version: Option<String>,
    /// `_profiler_level` (`Level0`, `Level1`, `Level2`, `Level_none`).
    pub level: Option<String>,
    /// `_aic_metrics`.
    pub aic_metrics: Option<String>,
    /// `_export_type` as a list.
    pub export_type: Option<Vec<String>>,
    /// The recorded schedule (`wait=.. warmup=.. active=.. repeat=.. skip_first=..`), `"none"` for `{}`.
    pub schedule: Option<String>,
    /// Step coverage.
    pub steps: StepsSummary,
    /// What `ASCEND_PROFILER_OUTPUT/` holds.
    pub artifacts: Artifacts,
}

/// Expected and observed steps.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StepsSummary {
    /// Step numbers the schedule records (with `--decode-active`), null when unknown or unbounded.
    pub expected: Option<Vec<u64>>,
    /// Distinct `Step Id` values in kernel_details.csv.
    pub kernel_details: Vec<u64>,
    /// Distinct `Step` values in step_trace_time.csv.
    pub step_trace_time: Vec<u64>,
    /// Step ids of the profiler database's `STEP_TIME` (a db export without kernel_details.csv).
    #[serde(default)]
    pub db: Vec<u64>,
}

/// The artifacts of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Artifacts {
    /// `ASCEND_PROFILER_OUTPUT/` exists.
    pub output_dir: bool,
    /// File names in `ASCEND_PROFILER_OUTPUT/`, sorted.
    pub files: Vec<String>,
    /// `trace_view.json`, when present.
    pub trace_view: Option<TraceSummary>,
    /// `kernel_details.csv`, when present.
    pub kernel_details: Option<KernelSummary>,
    /// Data rows of `step_trace_time.csv`, when present.
    pub step_trace_time_rows: Option<u64>,
    /// Parser log files under `logs/`.
    pub logs: Vec<String>,
}

/// trace_view.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TraceSummary {
    /// File size.
    pub bytes: u64,
    /// `complete`, `empty`, `not-an-array`, `unterminated`, `cut-mid-event`,
    /// `trailing-comma-close`, `malformed`.
    pub state: String,
    /// Complete top-level events.
    pub events: u64,
    /// Byte offset just past the last complete event.
    pub last_event_end: u64,
    /// `process_name` metadata names (e.g. `Python`, `CANN`, `Ascend Hardware`).
    pub processes: Vec<String>,
}

/// kernel_details.csv.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelSummary {
    /// File size.
    pub bytes: u64,
    /// Header columns.
    pub columns: usize,
    /// `full` (Task ID/Stream ID present) or `minimal` (Level0 header).
    pub header: String,
    /// Data rows.
    pub rows: u64,
    /// Rows with an empty `Step Id`.
    pub empty_step_id_rows: u64,
    /// Columns empty in every row.
    pub all_empty_columns: Vec<String>,
}
