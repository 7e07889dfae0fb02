//! The summary of one run directory (one phase × rank).

use std::path::{Path, PathBuf};

pub use npuprof_runs::profiler_info::{ParallelGroups, RecordedEnv};
use npuprof_runs::profiler_info::{ProfilerInfo, rank_from_file_name};
use serde::Serialize;

use crate::columns::SkippedRow;
use crate::comm::{Communication, read_communication};
use crate::db_export::{self, DbFiles};
use crate::error::SummaryError;
use crate::kernels::{KernelGroup, KernelTotals, ShapeGroup, TypeGroup, aggregate_with};
use crate::matrix::{COMMUNICATION_MATRIX, CommMatrix, read_matrix};
use crate::memory::{Memory, read_memory};
use crate::pipe::PipeShares;
use crate::recorded::{Recorded, Source};
use crate::steps::{Step, StepStats, TimeSplit, read_steps};
use crate::timeline::{Timeline, representative};

/// The summary of one `*_ascend_pt` run directory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// `prefill`, `decode` (the directory name under `prof/`), when known.
    pub phase: Option<String>,
    /// The rank, from `profiler_info*.json` (`rank_id`, else the file name), when known.
    pub rank: Option<u32>,
    /// The run directory, relative to the summarised path (`/`-separated; `.` for itself).
    pub dir: String,
    /// Each recorded step of `step_trace_time.csv`, in file order.
    pub steps: Vec<Step>,
    /// Mean, median and extremes of the step totals.
    pub step_stats: Option<StepStats>,
    /// Where the summed step time went.
    pub time_split: Option<TimeSplit>,
    /// Communication not hidden by computation, as a share of the step time.
    pub comm_share: Option<f64>,
    /// Totals of `kernel_details.csv`.
    pub kernels: Option<KernelTotals>,
    /// Kernels grouped by exact name, longest total first (the first `top` of them).
    pub top_kernels: Vec<KernelGroup>,
    /// Kernels grouped by `Type`, longest total first (the first `top` of them).
    pub by_type: Vec<TypeGroup>,
    /// Kernels grouped by exact name and `Input Shapes`, longest total first (the first `top`
    /// of them); empty without the column.
    pub by_shape: Vec<ShapeGroup>,
    /// One representative step on the device: computing, communication and free lanes.
    pub timeline: Option<Timeline>,
    /// Why there is no timeline, when there is none.
    #[serde(skip)]
    pub timeline_missing: Option<String>,
    /// Device memory (`memory_record.csv`, `operator_memory.csv`, `npu_module_mem.csv`), when
    /// any of them was recorded (`profile_memory=True`).
    pub memory: Option<Memory>,
    /// `communication_matrix.json`: who sent what to whom, when recorded.
    pub matrix: Option<CommMatrix>,
    /// Time-weighted pipe ratios of the run, when kernel_details has pipe metrics.
    pub pipe: Option<PipeShares>,
    /// Communication and waiting, from `communication.json` (multi-card runs).
    pub communication: Option<Communication>,
    /// Rows left out for their number of fields (file relative to the summarised path).
    pub skipped_rows: Vec<SkippedRow>,
    /// How the run was recorded (from `profiler_info*.json`), when it says.
    pub recorded: Option<Recorded>,
    /// The export the numbers were read from; `None` when neither steps nor kernels were.
    pub source: Option<Source>,
    /// What could not be summarised and why (missing optional files, db export…).
    pub notes: Vec<String>,
    /// Where the rank sits in the run (profiler_metadata.json's `distributed_args` and
    /// `parallel_group_info`), when recorded.
    pub parallel: Option<ParallelGroups>,
    /// The run directory as a path (for commands to run next).
    #[serde(skip)]
    pub path: PathBuf,
}

/// The `Type` torch_npu writes when it records none (Level0).
pub const NO_TYPE: &str = "N/A";

/// The directory of a run that holds the text export.
pub const OUTPUT_DIR: &str = "ASCEND_PROFILER_OUTPUT";
/// The step split, in [`OUTPUT_DIR`].
pub const STEP_TRACE: &str = "step_trace_time.csv";
/// The device kernels, in [`OUTPUT_DIR`].
pub const KERNEL_DETAILS: &str = "kernel_details.csv";
/// Communication and waiting (multi-card runs), in [`OUTPUT_DIR`].
pub const COMMUNICATION: &str = "communication.json";

/// The size of the run's `kernel_details.csv` (0 when there is none): what summarising it
/// costs, to schedule the largest runs first.
pub(crate) fn kernel_details_bytes(dir: &Path) -> u64 {
    std::fs::metadata(dir.join(OUTPUT_DIR).join(KERNEL_DETAILS)).map_or(0, |m| m.len())
}

/// Summarises the run directory `dir`; `root` is the summarised path (for the relative `dir`).
pub fn summarize_run(
    dir: &Path,
    phase: Option<String>,
    root: &Path,
    top: Option<usize>,
) -> Result<RunSummary, SummaryError> {
    let output = dir.join(OUTPUT_DIR);
    let mut notes = Vec::new();
    let (rank, recorded) = read_info(dir, &mut notes);
    let parallel = read_parallel(dir, &mut notes);
    let db = DbFiles::find(&output);
    let mut skipped_rows = Vec::new();
    let mut from_db: Vec<&Path> = Vec::new();
    let steps_path = output.join(STEP_TRACE);
    let steps = if steps_path.is_file() {
        read_steps(&steps_path, &mut skipped_rows)?
    } else if let Some(analysis) = &db.analysis {
        from_db.push(analysis);
        db_export::steps(analysis)?
    } else {
        notes.push(format!(
            "no {OUTPUT_DIR}/{STEP_TRACE}: step times unknown (it needs NPU activity; run `npuprof verify` on this directory)"
        ));
        Vec::new()
    };
    let kernels_path = output.join(KERNEL_DETAILS);
    let drawn = representative(&steps);
    let mut table = if kernels_path.is_file() {
        Some(aggregate_with(&kernels_path, drawn.as_ref().map(|d| d.0))?)
    } else if let Some(profiler) = &db.profiler {
        from_db.push(profiler);
        Some(db_export::kernel_table_with(
            profiler,
            drawn.as_ref().map(|d| d.0),
        )?)
    } else {
        notes.push(format!(
            "no {OUTPUT_DIR}/{KERNEL_DETAILS}: kernel times unknown (run `npuprof verify` on this directory)"
        ));
        None
    };
    let comm_path = output.join(COMMUNICATION);
    let communication = if comm_path.is_file() {
        Some(read_communication(&comm_path)?)
    } else if let Some(analysis) = &db.analysis {
        let communication = db_export::communication(analysis)?;
        if communication.is_some() && !from_db.contains(&analysis.as_path()) {
            from_db.push(analysis);
        }
        communication
    } else {
        None
    };
    if communication
        .as_ref()
        .is_some_and(|c| c.transit_from_bandwidth)
    {
        notes.push(crate::comm::TRANSIT_NOTE.to_owned());
    }
    let source = Source::read_from(steps_path.is_file(), kernels_path.is_file(), &db);
    if !from_db.is_empty() {
        let names: Vec<String> = from_db
            .iter()
            .map(|p| npuprof_paths::relative(dir, p))
            .collect();
        notes.push(format!(
            "db export: read from {} (no text export)",
            names.join(" and ")
        ));
    }
    if table
        .as_ref()
        .is_some_and(|t| t.pipe.is_none() && t.totals.rows > 0)
    {
        // (Where the kernels were read from: a db export has no kernel_details.csv.)
        let kernels_from = if kernels_path.is_file() {
            "kernel_details.csv"
        } else {
            "the profiler database (TASK_PMU_INFO)"
        };
        notes.push(format!(
            "no pipeline metrics in {kernels_from}: record with aic_metrics=PipeUtilization (Level1 or Level2) to see what bounds each kernel"
        ));
    }
    if table
        .as_ref()
        .is_some_and(|t| !t.by_type.is_empty() && t.by_type.iter().all(|g| g.kind == NO_TYPE))
    {
        notes.push(format!(
            "every kernel's Type is {NO_TYPE} (Level0 records no operator types): the by-type table is one group; record with profiler_level Level1 to group kernels by type"
        ));
    }
    if let Some(note) = table
        .as_ref()
        .and_then(|t| crate::step_ids::disagreement(t.totals.steps, steps.len()))
    {
        notes.push(note);
    }
    let time_split = TimeSplit::of(&steps);
    let limit = top.unwrap_or(usize::MAX);
    let (timeline, timeline_missing) = match (&mut table, drawn) {
        _ if !kernels_path.is_file() && db.profiler.is_none() => (
            None,
            Some(format!(
                "no {KERNEL_DETAILS} (the timeline is drawn from its start times)"
            )),
        ),
        (_, None) => (
            None,
            Some(format!(
                "no numbered step in {STEP_TRACE} to choose one from"
            )),
        ),
        (Some(t), Some((step, why))) => {
            match std::mem::take(&mut t.intervals).timeline(step, why) {
                Some(timeline) => (Some(timeline), None),
                None => (
                    None,
                    Some(if kernels_path.is_file() {
                        format!("no {KERNEL_DETAILS} row with a start time in step {step}")
                    } else {
                        format!("no kernel of the profiler database in step {step}")
                    }),
                ),
            }
        }
        (None, Some(_)) => (None, None),
    };
    let (kernels, top_kernels, by_type, by_shape, pipe) = match table {
        Some(t) => (
            {
                skipped_rows.extend(t.skipped);
                Some(t.totals)
            },
            t.by_name.into_iter().take(limit).collect(),
            t.by_type.into_iter().take(limit).collect(),
            t.by_shape.into_iter().take(limit).collect(),
            t.pipe,
        ),
        None => (None, Vec::new(), Vec::new(), Vec::new(), None),
    };
    let memory = read_memory(&output, &mut skipped_rows);
    let matrix_path = output.join(COMMUNICATION_MATRIX);
    let matrix = if matrix_path.is_file() {
        match read_matrix(&matrix_path) {
            Ok(matrix) => Some(matrix),
            Err(e) => {
                notes.push(format!("{e}; communication matrix not shown"));
                None
            }
        }
    } else {
        None
    };
    Ok(RunSummary {
        phase,
        rank,
        dir: npuprof_paths::relative(root, dir),
        step_stats: StepStats::of(&steps),
        comm_share: time_split.as_ref().map(|s| s.communication_not_overlapped),
        time_split,
        steps,
        kernels,
        top_kernels,
        by_type,
        by_shape,
        timeline,
        timeline_missing,
        memory,
        matrix,
        pipe,
        communication,
        skipped_rows: skipped_rows
            .into_iter()
            .map(|row| row.relative_to(root))
            .collect(),
        recorded,
        source,
        notes,
        parallel,
        path: dir.to_path_buf(),
    })
}

/// Where the rank of the run in `dir` sits in the whole run: profiler_metadata.json's
/// `distributed_args` and `parallel_group_info` (`None` without them); an unreadable file is
/// noted.
pub fn read_parallel(dir: &Path, notes: &mut Vec<String>) -> Option<ParallelGroups> {
    let metadata = dir.join("profiler_metadata.json");
    match crate::input::read(&metadata, crate::input::Input::SmallJson) {
        Ok(bytes) => ParallelGroups::parse(&String::from_utf8_lossy(&bytes)),
        Err(reason) if metadata.exists() => {
            notes.push(format!(
                "profiler_metadata.json: {reason}; parallel groups unknown"
            ));
            None
        }
        Err(_) => None,
    }
}

/// The rank from the run's `profiler_info*.json`; a note when it cannot be read.
pub fn read_rank(dir: &Path, notes: &mut Vec<String>) -> Option<u32> {
    read_info(dir, notes).0
}

/// Where a run's recorded environment was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvSource {
    /// profiler_metadata.json: written by the profiled process.
    Metadata,
    /// The profiler database's `META_DATA`: written by the process that parsed the run.
    Db,
}

/// The environment torch_npu recorded for the run in `dir` (profiler_metadata.json, else the
/// profiler database `db`), and where it was read; an unreadable file is noted.
pub fn read_env(
    dir: &Path,
    db: Option<&Path>,
    notes: &mut Vec<String>,
) -> Option<(RecordedEnv, EnvSource)> {
    let metadata = dir.join("profiler_metadata.json");
    match crate::input::read(&metadata, crate::input::Input::SmallJson) {
        Ok(bytes) => {
            // A db export's metadata holds no ENV_VARIABLES: its database does.
            if let Some(env) = RecordedEnv::from_metadata(&String::from_utf8_lossy(&bytes)) {
                return Some((env, EnvSource::Metadata));
            }
        }
        Err(reason) if metadata.exists() => {
            notes.push(format!(
                "profiler_metadata.json: {reason}; environment not judged"
            ));
            return None;
        }
        Err(_) => {}
    }
    match db_export::recorded_env(db?) {
        Ok(env) => env.map(|env| (env, EnvSource::Db)),
        Err(e) => {
            notes.push(format!("{e}; environment not judged"));
            None
        }
    }
}

/// The end of the note [`read_info`] writes when the run's profiler_info cannot be used: what
/// it records (build, level, metrics) is then unknown, so compare does not judge it.
pub const INFO_UNREAD: &str = "rank taken from its name";

/// The rank and the recording from the run's `profiler_info*.json` (the first by name); a
/// note when it cannot be read.
pub fn read_info(dir: &Path, notes: &mut Vec<String>) -> (Option<u32>, Option<Recorded>) {
    let mut infos: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("profiler_info") && n.ends_with(".json"))
                })
                .collect()
        })
        .unwrap_or_default();
    infos.sort();
    let Some(info) = infos.first() else {
        return (None, None);
    };
    let file_rank = rank_from_file_name(info);
    let shown = npuprof_paths::relative(dir, info);
    let parsed = crate::input::read(info, crate::input::Input::SmallJson)
        .map(|bytes| ProfilerInfo::parse(&String::from_utf8_lossy(&bytes), file_rank));
    match parsed {
        Ok(Ok(parsed)) => (parsed.rank, Some(Recorded::of(&parsed))),
        Ok(Err(_)) => {
            notes.push(format!("{shown} is not JSON: {INFO_UNREAD}"));
            (file_rank, None)
        }
        Err(reason) => {
            notes.push(format!("{shown}: {reason}; {INFO_UNREAD}"));
            (file_rank, None)
        }
    }
}
