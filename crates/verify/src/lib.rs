//! npuprof-verify: judge what a torch_npu profiling run produced.
//!
//! Given a recipes result directory, a phase directory, a run directory or any parent of run
//! directories, [`verify`] derives the expected artifact set from each run's `profiler_info`,
//! streams the large files (trace_view.json with a purpose-built scanner, kernel_details.csv
//! with npuprof-scan's SIMD CSV splitter), reads the logs, and returns findings with evidence and a next action.
//! The run directories and their files are npuprof-runs' output model, the scanning is
//! npuprof-scan's; this crate holds the checks and the findings. It reads files and never writes
//! or prints. Unix only: it probes a path's file type (a FIFO or a device is never opened for
//! reading) and reads a file at offsets from several threads.

#[cfg(not(unix))]
compile_error!("npuprof-verify needs Unix (it probes FIFOs and devices); on Windows, use WSL");

pub mod finding;
pub mod log_findings;
pub mod merge;
pub mod report;
pub mod run_check;
pub mod schedule_findings;
pub mod serving;
pub mod step_outliers;

mod cross_run;

use std::path::PathBuf;

use npuprof_runs::{discover, mounts};
use rayon::prelude::*;

pub use crate::finding::{Code, Evidence, Finding, Severity};
pub use crate::report::{RunSummary, VerifyReport};
pub use npuprof_runs::error::VerifyError;

/// Which phases a result directory must contain (the one definition, from npuprof-schedule).
pub use npuprof_schedule::PhaseSelection;

/// Whether `selection` admits a run of `phase` (a run of unknown phase always is).
fn admits(selection: PhaseSelection, phase: Option<&str>) -> bool {
    phase.is_none_or(|p| selection.phases().iter().any(|ph| ph.name() == p))
}

/// What to verify and what to expect.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The path to verify.
    pub path: PathBuf,
    /// Expected phases.
    pub phases: PhaseSelection,
    /// Overrides the schedule's `active` when computing the recorded steps.
    pub expect_active: Option<u64>,
    /// Expected number of ranks per phase (`--ranks`), at most [`MAX_RANKS`].
    pub world_size: Option<u32>,
    /// The job's captured stdout (`--log FILE`, or the log `collect` captured), where torch_npu
    /// prints `Task [X] run failed.` and nowhere else.
    pub logs: Vec<PathBuf>,
    /// Whether the output is judged as a serving engine's ([`serving`]).
    pub serving: serving::Serving,
    /// The windows that were asked for (`collect`: the schedules it patched in), per phase: a
    /// run of that phase that recorded another window is an error (`window-not-requested`).
    pub requested: Vec<Requested>,
}

/// A window asked for: the schedule npuprof patched into a phase's profiler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requested {
    /// The phase.
    pub phase: npuprof_schedule::Phase,
    /// Its schedule.
    pub schedule: npuprof_schedule::Schedule,
}

/// The most ranks a run may have (`--ranks`, profiler_info, merged reports).
pub use npuprof_runs::MAX_RANKS;

/// Progress of the byte-heavy work; implemented by the CLI with a progress bar.
pub trait Progress: Sync {
    /// Total bytes of the large files to scan.
    fn start(&self, total_bytes: u64);
    /// `bytes` more were scanned.
    fn advance(&self, bytes: u64);
}

/// A [`Progress`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _total_bytes: u64) {}
    fn advance(&self, _bytes: u64) {}
}

/// Verifies the path in `opts`, judging filesystems by this process's mount table. Errors only
/// when nothing could be verified at all.
pub fn verify(opts: &Options, progress: &dyn Progress) -> Result<VerifyReport, VerifyError> {
    verify_with_mounts(opts, progress, mounts::MountTable::current().as_ref())
}

/// Bytes of the files a run's check streams (trace_view.json and kernel_details.csv).
fn large_file_bytes(dir: &std::path::Path) -> u64 {
    ["trace_view.json", "kernel_details.csv"]
        .map(|f| dir.join("ASCEND_PROFILER_OUTPUT").join(f))
        .iter()
        .filter_map(|p| p.metadata().ok().filter(|m| m.is_file()).map(|m| m.len()))
        .sum()
}

/// [`verify`] with the mount table given (`None`: unknown), for the bad-output-filesystem verdict.
pub fn verify_with_mounts(
    opts: &Options,
    progress: &dyn Progress,
    mount_table: Option<&mounts::MountTable>,
) -> Result<VerifyReport, VerifyError> {
    verify_selected(opts, progress, mount_table, &|_| true)
}

/// [`verify`] of only the run directories under the path that `keep` admits (given each run
/// directory's path as found under `opts.path`); the others are left out as if absent. collect
/// verifies the runs its launch wrote, not the older ones beside them.
pub fn verify_runs(
    opts: &Options,
    progress: &dyn Progress,
    keep: &dyn Fn(&std::path::Path) -> bool,
) -> Result<VerifyReport, VerifyError> {
    verify_selected(opts, progress, mounts::MountTable::current().as_ref(), keep)
}

fn verify_selected(
    opts: &Options,
    progress: &dyn Progress,
    mount_table: Option<&mounts::MountTable>,
    keep: &dyn Fn(&std::path::Path) -> bool,
) -> Result<VerifyReport, VerifyError> {
    if let Some(log) = opts.logs.iter().find(|log| !log.is_file()) {
        return Err(VerifyError::LogNotAFile(log.clone()));
    }
    let mut target = discover::discover(&opts.path)?;
    target
        .runs
        .retain(|r| admits(opts.phases, r.phase.as_deref()) && keep(&r.dir));
    let frontend = serving::split_frontend(&mut target, &opts.serving);
    let sizes: Vec<u64> = target
        .runs
        .iter()
        .map(|r| large_file_bytes(&r.dir))
        .collect();
    let total: u64 = sizes.iter().sum();
    progress.start(total);
    let world_size = opts
        .world_size
        .or_else(|| target.rank_logs.iter().map(|(r, _)| r + 1).max());
    let run_opts = Options {
        world_size,
        ..opts.clone()
    };
    // Largest runs first, one task each, so no core is left with a big run at the end.
    let mut order: Vec<usize> = (0..target.runs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(sizes[i]));
    let mut done: Vec<(usize, run_check::RunOutcome)> = order
        .par_iter()
        .with_max_len(1)
        .map(|&i| {
            (
                i,
                run_check::check_run(&target.runs[i], &run_opts, progress),
            )
        })
        .collect();
    done.sort_by_key(|(i, _)| *i);
    let outcomes = done.into_iter().map(|(_, outcome)| outcome).collect();
    let mut report = cross_run::assemble(&target, opts, mount_table, outcomes);
    serving::apply(
        &mut report,
        &target.runs,
        &opts.serving,
        &frontend,
        std::time::SystemTime::now(),
    );
    Ok(report)
}
