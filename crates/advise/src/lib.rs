//! Advice on torch_npu profiling runs: what is wrong with a profile and what to do, per phase ×
//! rank. Each finding has a stable code ([`codes`]: one definition each, as data), the
//! evidence, the time at stake per step and the next action; findings of a phase are sorted by
//! time at stake. Prefill and decode are judged separately.
//!
//! Errors are summary's ([`SummaryError`]: the same files, read the same way). Reads through
//! `npuprof-summary` (run discovery, ranks, phases, the CSV reader and
//! step_trace_time.csv) with one streaming pass of its own over each `kernel_details.csv`
//! ([`profile`]) and a read of `communication.json` ([`links`]: its transfers' sizes, alignment
//! and bandwidth, judged per run and across a phase's ranks).
//!
//! Architecture invariant: this crate never writes and never prints; it returns plain data.

pub mod codes;
mod environment;
pub mod finding;
pub mod host;
pub mod html;
pub mod links;
pub mod profile;
mod rules;
mod sieve;
pub mod thresholds;
mod transfers;

use std::path::{Path, PathBuf};

use npuprof_summary::columns::SkippedRow;
use npuprof_summary::recorded::{Recorded, Source};
use npuprof_summary::run::{
    COMMUNICATION, EnvSource, KERNEL_DETAILS, OUTPUT_DIR, RecordedEnv, STEP_TRACE,
};
use npuprof_summary::step_ids::kernel_divisor;
use npuprof_summary::steps::{Step, read_steps};
use npuprof_summary::warnings::{self, RunFacts, Warning};
use npuprof_summary::{SummaryError, run_key};
use serde::Serialize;

pub use crate::codes::Code;
pub use crate::finding::{Evidence, Finding};

/// The version of the `--json` schema of `advise`.
pub const SCHEMA_VERSION: u32 = 1;

/// What to advise on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Only this phase (`prefill`, `decode`, …); all when `None`.
    pub phase: Option<String>,
    /// Only this rank; all when `None`.
    pub rank: Option<u32>,
    /// Evidence items kept per finding.
    pub top: usize,
}

/// One advised run directory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInfo {
    /// The phase, when known.
    pub phase: Option<String>,
    /// The rank, when known.
    pub rank: Option<u32>,
    /// The run directory, relative to the advised path (`.` for itself).
    pub dir: String,
    /// Steps the per-step figures are divided by (step_trace_time rows, else Step Ids).
    pub steps: usize,
    /// Mean step time (µs), from step_trace_time.csv.
    pub mean_step_us: Option<f64>,
    /// Rows left out for their number of fields (file relative to the advised path): the
    /// figures are those of the other rows.
    pub skipped_rows: Vec<SkippedRow>,
    /// How the run was recorded (from `profiler_info*.json`), when it says.
    pub recorded: Option<Recorded>,
    /// The export read; `None` when neither steps nor kernels were.
    pub source: Option<Source>,
    /// What could not be judged and why.
    pub notes: Vec<String>,
}

/// The advice on every selected run below a path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Advice {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The advised path, as given.
    pub path: PathBuf,
    /// One entry per run directory, by phase, then rank.
    pub runs: Vec<RunInfo>,
    /// Every finding: by phase, then by time at stake (largest first), then code and rank.
    pub findings: Vec<Finding>,
    /// Rows skipped while reading, and what the ranks of a phase do not share (summary's
    /// warnings), to read first.
    pub warnings: Vec<Warning>,
}

/// What the rules read of one run directory.
pub(crate) struct RunData {
    pub(crate) info: RunInfo,
    pub(crate) step_rows: Vec<Step>,
    pub(crate) kernels: Option<profile::KernelProfile>,
    pub(crate) comm: Option<links::Comm>,
    /// The environment torch_npu recorded, and where it was read.
    pub(crate) env: Option<(RecordedEnv, EnvSource)>,
    /// Where the rank sits in the run (profiler_metadata.json), when recorded.
    pub(crate) parallel: Option<npuprof_summary::run::ParallelGroups>,
    /// Whether the text export's trace_view.json is in the run directory.
    pub(crate) has_trace: bool,
}

impl RunData {
    /// The steps per-step figures are divided by (at least 1).
    pub(crate) fn steps(&self) -> f64 {
        self.info.steps.max(1) as f64
    }

    /// The steps the kernel table's sums are divided by (summary's [`kernel_divisor`]).
    pub(crate) fn kernel_steps(&self) -> f64 {
        kernel_divisor(self.kernels.as_ref().map(|k| k.steps), self.info.steps) as f64
    }

    /// step_trace_time's free time per step (0 without its rows).
    pub(crate) fn free_per_step(&self) -> f64 {
        self.step_rows.iter().map(|s| s.free_us).sum::<f64>() / self.steps()
    }

    /// `per_step_us` as a share of the mean step, when known.
    pub(crate) fn share(&self, per_step_us: f64) -> Option<f64> {
        self.info
            .mean_step_us
            .filter(|m| *m > 0.0)
            .map(|m| per_step_us / m)
    }
}

/// Advises on the run directories under `path` (any path `npuprof summary` accepts).
pub fn advise(path: &Path, options: &Options) -> Result<Advice, SummaryError> {
    let mut runs = npuprof_summary::each_run(path, options.phase.as_deref(), |dir, phase| {
        read_run(dir, phase, path, options.rank)
    })?;
    if runs.is_empty() {
        return Err(npuprof_summary::nothing_selected(
            path,
            options.phase.as_deref(),
            options.rank,
        ));
    }
    runs.sort_by(|a, b| {
        let (a, b) = (&a.info, &b.info);
        run_key(&a.phase, a.rank, &a.dir).cmp(&run_key(&b.phase, b.rank, &b.dir))
    });
    let mut findings = Vec::new();
    let mut start = 0;
    while start < runs.len() {
        let phase = &runs[start].info.phase;
        let end = start
            + runs[start..]
                .iter()
                .take_while(|r| &r.info.phase == phase)
                .count();
        transfers::note_unjudged(&mut runs[start..end]);
        // The straggler and stage rules' verdicts, once: slow-rank and stage-imbalance state
        // them, and the wait advice defers to them.
        let ranks = rules::PhaseRanks::of(&runs[start..end]);
        let mut phase_findings: Vec<Finding> = runs[start..end]
            .iter()
            .flat_map(|run| rules::run_findings(run, &ranks, options.top))
            .chain(rules::slow_rank(&runs[start..end], &ranks, options.top))
            .chain(transfers::slow_links(&runs[start..end], options.top))
            .collect();
        phase_findings.sort_by(|a, b| {
            b.at_stake_us
                .total_cmp(&a.at_stake_us)
                .then(a.code.cmp(&b.code))
                .then(a.rank.cmp(&b.rank))
                .then(a.dir.cmp(&b.dir))
        });
        findings.extend(phase_findings);
        start = end;
    }
    let facts: Vec<RunFacts> = runs
        .iter()
        .map(|r| RunFacts {
            phase: &r.info.phase,
            rank: r.info.rank,
            recorded: r.info.recorded.as_ref(),
            source: r.info.source,
            steps: r.step_rows.len(),
        })
        .collect();
    let warnings = runs
        .iter()
        .filter_map(|r| warnings::skipped(&r.info.phase, r.info.rank, &r.info.skipped_rows))
        .chain(warnings::mismatches(&facts))
        .collect();
    Ok(Advice {
        schema_version: SCHEMA_VERSION,
        path: path.to_path_buf(),
        runs: runs.into_iter().map(|r| r.info).collect(),
        findings,
        warnings,
    })
}

/// Reads one run directory; `None` when `rank` selects another.
fn read_run(
    dir: &Path,
    phase: Option<String>,
    root: &Path,
    rank: Option<u32>,
) -> Result<Option<RunData>, SummaryError> {
    let mut notes = Vec::new();
    let (run_rank, recorded) = npuprof_summary::run::read_info(dir, &mut notes);
    if rank.is_some() && run_rank != rank {
        return Ok(None);
    }
    let parallel = npuprof_summary::run::read_parallel(dir, &mut notes);
    let output = dir.join(OUTPUT_DIR);
    let steps_path = output.join(STEP_TRACE);
    let db = npuprof_summary::db_export::DbFiles::find(&output);
    let mut skipped_rows = Vec::new();
    let step_rows = if steps_path.is_file() {
        read_steps(&steps_path, &mut skipped_rows)?
    } else if let Some(analysis) = &db.analysis {
        npuprof_summary::db_export::steps(analysis)?
    } else {
        notes.push(format!(
            "no {OUTPUT_DIR}/{STEP_TRACE}: idle and communication time not judged"
        ));
        Vec::new()
    };
    let kernels_path = output.join(KERNEL_DETAILS);
    let has_trace = output.join(host::TRACE_VIEW).is_file();
    let kernels = if kernels_path.is_file() {
        let mut kernels = profile::read_kernels(&kernels_path)?;
        let trace = output.join(host::TRACE_VIEW);
        if !kernels.gaps.is_empty() && trace.is_file() {
            let (during, note) = host::during_gaps(&trace, &kernels.gaps);
            for (gap, events) in kernels.gaps.iter_mut().zip(during) {
                gap.host = events;
            }
            notes.extend(note);
        }
        Some(kernels)
    } else if let Some(profiler) = &db.profiler {
        notes.push(
            "db export: kernels, steps and links read from its databases (no text export)"
                .to_owned(),
        );
        let mut kernels = profile::read_db_kernels(profiler)?;
        if !kernels.gaps.is_empty() {
            let (during, note) = host::during_gaps_db(profiler, &kernels.gaps);
            for (gap, events) in kernels.gaps.iter_mut().zip(during) {
                gap.host = events;
            }
            notes.extend(note);
        }
        Some(kernels)
    } else {
        notes.push(format!(
            "no {OUTPUT_DIR}/{KERNEL_DETAILS} (no NPU activity?): kernels not judged"
        ));
        None
    };
    let env = npuprof_summary::run::read_env(dir, db.profiler.as_deref(), &mut notes);
    let source = Source::read_from(steps_path.is_file(), kernels_path.is_file(), &db);
    let comm_path = output.join(COMMUNICATION);
    let comm = if comm_path.is_file() {
        Some(links::read_comm(&comm_path)?)
    } else if let Some(analysis) = &db.analysis {
        links::read_db_comm(analysis)?
    } else {
        None
    };
    if let Some(k) = &kernels {
        if k.rows > 0 && !k.has_metrics {
            notes.push(
                "no pipe metrics (record with aic_metrics=PipeUtilization): bound not judged"
                    .to_owned(),
            );
        }
        if k.rows > 0 && !k.ordered {
            notes
                .push("kernel rows not in start order: device-timeline gaps not listed".to_owned());
        }
    }
    let kernel_steps = kernels.as_ref().map_or(0, |k| k.steps);
    let steps = if step_rows.is_empty() {
        kernel_steps
    } else {
        notes.extend(npuprof_summary::step_ids::disagreement(
            kernel_steps,
            step_rows.len(),
        ));
        step_rows.len()
    };
    let mean_step_us = (!step_rows.is_empty())
        .then(|| step_rows.iter().map(|s| s.total_us).sum::<f64>() / step_rows.len() as f64);
    Ok(Some(RunData {
        info: RunInfo {
            phase,
            rank: run_rank,
            dir: npuprof_paths::relative(root, dir),
            steps,
            mean_step_us,
            recorded,
            source,
            skipped_rows: skipped_rows
                .into_iter()
                .chain(kernels.iter().flat_map(|k| k.skipped.iter().cloned()))
                .map(|row| row.relative_to(root))
                .collect(),
            notes,
        },
        step_rows,
        kernels,
        comm,
        env,
        parallel,
        has_trace,
    }))
}
