//! Summaries and comparisons of torch_npu profiling runs: per phase × rank, the step times and
//! their split, the top kernels by device time (by name and by type), what bounds them (pipe
//! metrics), communication and waiting, the balance across ranks, and what to open next.
//!
//! Architecture invariant: this crate never writes and never prints. It reads the text export
//! (`step_trace_time.csv`, `kernel_details.csv`, `communication.json`, `profiler_info*.json`,
//! and for the views of the HTML page `communication_matrix.json` and the memory CSVs) in
//! streaming passes whose memory is bounded by the number of distinct kernel names (capped),
//! not by file size, one run directory per task on all cores, and returns plain data. Every
//! file is opened through verify's probe under torch_npu's size cap (`input`): a FIFO or a
//! huge file is named, never read;
//! [`html::render_summary`] renders it as one self-contained HTML page (a string). The CLI
//! prints and writes.

pub mod columns;
pub mod comm;
pub mod compare;
pub mod db_export;
pub mod error;
pub mod html;
mod input;
pub mod kernels;
pub mod matrix;
pub mod memory;
pub mod merge;
pub mod next_steps;
pub mod pipe;
pub mod ranks;
pub mod recorded;
pub mod run;
pub mod step_ids;
pub mod steps;
pub mod timeline;
pub mod units;
pub mod warnings;

use std::path::{Path, PathBuf};

use npuprof_runs::discover::{RunRef, discover};
use rayon::prelude::*;
use serde::Serialize;

pub use crate::compare::{Comparison, compare};
pub use crate::error::SummaryError;
pub use crate::next_steps::NextStep;
pub use crate::ranks::PhaseRanks;
pub use crate::run::RunSummary;

/// The version of the `--json` schema of `summary` and `compare`.
pub const SCHEMA_VERSION: u32 = 1;

/// What to summarise.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Only this phase (`prefill`, `decode`, …); all when `None`.
    pub phase: Option<String>,
    /// Only this rank; all when `None`.
    pub rank: Option<u32>,
    /// Keep the first N kernel groups per run (by name and by type); all when `None`.
    pub top: Option<usize>,
}

/// The summary of every selected run below a path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The summarised path, as given.
    pub path: PathBuf,
    /// One entry per run directory (phase × rank), by phase, then rank.
    pub runs: Vec<RunSummary>,
    /// Per phase: the ranks' step times, the slowest rank and the imbalance.
    pub ranks: Vec<PhaseRanks>,
    /// What to open next.
    pub next: Vec<NextStep>,
    /// What the ranks of a phase do not share ([`warnings::within`]).
    pub warnings: Vec<warnings::Warning>,
}

/// Summarises the run directories under `path`: a `*_ascend_pt` run directory, a phase
/// directory, a recipes result directory (`prof/<phase>/…`, also `<res>/<phase>/prof/…`) or
/// any parent of run directories.
pub fn summarize(path: &Path, options: &Options) -> Result<Summary, SummaryError> {
    let runs = each_run(path, options.phase.as_deref(), |dir, phase| {
        // The rank first (a small JSON file), so --rank reads only the selected run's CSVs.
        if options.rank.is_some() && run::read_rank(dir, &mut Vec::new()) != options.rank {
            return Ok(None);
        }
        run::summarize_run(dir, phase, path, options.top).map(Some)
    })?;
    assemble_selected(path, options, runs)
}

/// [`summarize`] of given run directories below `path`, each with the phase it records (a
/// serving collect's runs, labelled by the stage the engine recorded in each), those of
/// `options.phase` only when given: the runs of one stage are then compared with each other,
/// never with the other stage's runs of the same rank.
pub fn summarize_runs(
    path: &Path,
    runs: &[(PathBuf, Option<String>)],
    options: &Options,
) -> Result<Summary, SummaryError> {
    let selected: Vec<&(PathBuf, Option<String>)> = runs
        .iter()
        .filter(|(_, phase)| options.phase.is_none() || *phase == options.phase)
        .filter(|(dir, _)| {
            options.rank.is_none() || run::read_rank(dir, &mut Vec::new()) == options.rank
        })
        .collect();
    let runs = selected
        .par_iter()
        .map(|(dir, phase)| run::summarize_run(dir, phase.clone(), path, options.top))
        .collect::<Result<Vec<_>, _>>()?;
    assemble_selected(path, options, runs)
}

/// [`assemble`] of the runs `options` selected, an error naming the selection when none was.
fn assemble_selected(
    path: &Path,
    options: &Options,
    runs: Vec<RunSummary>,
) -> Result<Summary, SummaryError> {
    if runs.is_empty() {
        return Err(nothing_selected(
            path,
            options.phase.as_deref(),
            options.rank,
        ));
    }
    Ok(assemble(path, runs))
}

/// The summary of runs read: in phase, rank and directory order, with the rank view, what to
/// open next and the warnings.
fn assemble(path: &Path, mut runs: Vec<RunSummary>) -> Summary {
    runs.sort_by(|a, b| run_key(&a.phase, a.rank, &a.dir).cmp(&run_key(&b.phase, b.rank, &b.dir)));
    let ranks = ranks::phase_ranks(&runs);
    let next = next_steps::next_steps(path, &runs, &ranks);
    let mut summary = Summary {
        schema_version: SCHEMA_VERSION,
        path: path.to_path_buf(),
        runs,
        ranks,
        next,
        warnings: Vec::new(),
    };
    summary.warnings = warnings::within(&summary);
    summary
}

/// [`summarize`] of two paths at once (what `compare` reads), sharing the cores.
pub fn summarize_both(
    base: &Path,
    new: &Path,
    options: &Options,
) -> (Result<Summary, SummaryError>, Result<Summary, SummaryError>) {
    rayon::join(|| summarize(base, options), || summarize(new, options))
}

/// `read(run directory, phase)` for every run directory below `path` (of `phase` only, when
/// given), in parallel on all cores, the largest `kernel_details.csv` first; the results in
/// discovery order, those that are `None` left out. The error returned is the first in
/// discovery order, as if the runs were read in turn.
pub fn each_run<T, F>(path: &Path, phase: Option<&str>, read: F) -> Result<Vec<T>, SummaryError>
where
    T: Send,
    F: Fn(&Path, Option<String>) -> Result<Option<T>, SummaryError> + Sync,
{
    let target = discover(path)?;
    let selected: Vec<(PathBuf, Option<String>)> = target
        .runs
        .iter()
        .map(|run| (run.dir.clone(), phase_of(run, path)))
        .filter(|(_, p)| phase.is_none() || p.as_deref() == phase)
        .collect();
    // Largest runs first, one task each, so no core is left with a big run at the end.
    let mut order: Vec<(u64, usize)> = selected
        .iter()
        .enumerate()
        .map(|(i, (dir, _))| (run::kernel_details_bytes(dir), i))
        .collect();
    order.sort_by_key(|&(bytes, i)| (std::cmp::Reverse(bytes), i));
    let mut done: Vec<(usize, Result<Option<T>, SummaryError>)> = order
        .par_iter()
        .with_max_len(1)
        .map(|&(_, i)| {
            let (dir, phase) = &selected[i];
            (i, read(dir, phase.clone()))
        })
        .collect();
    done.sort_by_key(|(i, _)| *i);
    let mut out = Vec::with_capacity(done.len());
    for (_, result) in done {
        out.extend(result?);
    }
    Ok(out)
}

/// The error when `--phase`/`--rank` select no run directory under `path`: what was asked
/// for and what the profile has (the phases there are, or the selected phase's ranks).
pub fn nothing_selected(path: &Path, phase: Option<&str>, rank: Option<u32>) -> SummaryError {
    let runs: Vec<(PathBuf, Option<String>)> = discover(path)
        .map(|target| {
            target
                .runs
                .iter()
                .map(|run| (run.dir.clone(), phase_of(run, path)))
                .collect()
        })
        .unwrap_or_default();
    let selected: Vec<&PathBuf> = runs
        .iter()
        .filter(|(_, p)| phase.is_none() || p.as_deref() == phase)
        .map(|(dir, _)| dir)
        .collect();
    let (selection, available) = match (phase, rank) {
        (Some(phase), _) if selected.is_empty() => {
            let mut phases: Vec<Option<String>> = runs.into_iter().map(|(_, p)| p).collect();
            phases.sort_by(|a, b| phase_order(a).cmp(&phase_order(b)).then(a.cmp(b)));
            phases.dedup();
            let names: Vec<&str> = phases.iter().flatten().map(String::as_str).collect();
            (
                format!("no phase `{phase}`"),
                if names.is_empty() {
                    "no phase directories".to_owned()
                } else {
                    names.join(", ")
                },
            )
        }
        (phase, Some(rank)) => {
            let mut ranks: Vec<u32> = selected
                .iter()
                .filter_map(|dir| run::read_rank(dir, &mut Vec::new()))
                .collect();
            ranks.sort_unstable();
            ranks.dedup();
            let within = phase.map_or_else(String::new, |p| format!(" in phase {p}"));
            (
                format!("no rank {rank}{within}"),
                if ranks.is_empty() {
                    "no run directory with a readable rank".to_owned()
                } else {
                    let list: Vec<String> = ranks.iter().map(u32::to_string).collect();
                    format!("rank {}", list.join(", "))
                },
            )
        }
        _ => (
            "no run directory".to_owned(),
            "nothing to summarise".to_owned(),
        ),
    };
    SummaryError::NothingSelected {
        path: path.to_path_buf(),
        selection,
        available,
    }
}

/// The run's phase: from discovery, else the nearest `prefill`/`decode` directory between the
/// summarised path and the run (the `<res>/<phase>/prof/<run>` layout), else the path's name.
fn phase_of(run: &RunRef, root: &Path) -> Option<String> {
    if run.phase.is_some() {
        return run.phase.clone();
    }
    let is_phase = |name: &str| matches!(name, "mm_encode" | "prefill" | "decode");
    let inner = run
        .dir
        .strip_prefix(root)
        .ok()
        .and_then(|rel| rel.parent())
        .into_iter()
        .flat_map(Path::components)
        .filter_map(|c| c.as_os_str().to_str())
        .rfind(|name| is_phase(name));
    inner
        .or_else(|| {
            root.file_name()
                .and_then(|n| n.to_str())
                .filter(|n| is_phase(n))
        })
        .or_else(|| {
            let parent = root.parent()?;
            parent
                .file_name()
                .and_then(|n| n.to_str())
                .filter(|n| is_phase(n))
        })
        .map(str::to_owned)
}

/// The order reports list runs in: by phase ([`phase_order`]), then rank, then directory.
pub fn run_key<'a>(
    phase: &'a Option<String>,
    rank: Option<u32>,
    dir: &'a str,
) -> ((u8, Option<&'a str>), Option<u32>, &'a str) {
    (phase_order(phase), rank, dir)
}

/// mm_encode before prefill before decode before other phases before none.
pub fn phase_order(phase: &Option<String>) -> (u8, Option<&str>) {
    match phase.as_deref() {
        Some("mm_encode") => (0, None),
        Some("prefill") => (1, None),
        Some("decode") => (2, None),
        Some(other) => (3, Some(other)),
        None => (4, None),
    }
}
