//! What `collect` reports: its `--json` document and the closed sets in it.

use npuprof_relocate::RelocateReport;
use npuprof_route::RouteReport;
use npuprof_severity::ErrorCode;
use npuprof_verify::VerifyReport;
use serde::Serialize;

use super::Stop;
use super::launch::RunReport;
use crate::WorkflowError;
use crate::patch::PatchReport;

/// How collect ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The profile verified clean (exit 0).
    Clean,
    /// It ran, and verify found errors (exit 1).
    VerifyErrors,
    /// It ran and verified, but not all it asked for happened: a server's load had failed or
    /// unsent requests, or its window closed before the steps asked for (exit 1).
    Incomplete,
    /// The workflow could not run, or the repository could not be restored (exit 2).
    #[default]
    Failed,
}

impl Outcome {
    /// The exit code.
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Clean => 0,
            Outcome::VerifyErrors | Outcome::Incomplete => 1,
            Outcome::Failed => 2,
        }
    }

    /// Its name in the summary.
    pub fn describe(self) -> &'static str {
        match self {
            Outcome::Clean => "clean",
            Outcome::VerifyErrors => "verify errors",
            Outcome::Incomplete => "incomplete",
            Outcome::Failed => "failed",
        }
    }
}

/// What became of the repository at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Restored {
    /// Every change reverted, the bytes checked.
    Reverted,
    /// `--keep-patch`: the changes stay, `npuprof revert` undoes them.
    Kept,
    /// Files changed during the run: not reverted (run `npuprof revert`).
    Refused,
    /// The revert failed, or the bytes differ from the originals.
    Failed,
    /// Nothing was changed.
    #[default]
    Nothing,
}

/// The `collect --json` document.
#[derive(Debug, Default, Serialize)]
pub struct CollectReport {
    /// How collect ended (`clean` exit 0, `verify_errors` exit 1, `failed` exit 2).
    pub outcome: Outcome,
    /// The exit code.
    pub exit_code: u8,
    /// Why collect stopped early, when it did.
    pub error: Option<String>,
    /// What kind of stop `error` is, when collect stopped early.
    pub error_code: Option<StopCode>,
    /// The canonical repository.
    pub repo: String,
    /// The model.
    pub model: String,
    /// The profiling family.
    pub family: Option<npuprof_repository::Family>,
    /// The run config, relative to the repository.
    pub config: String,
    /// `npuprof route`'s report.
    pub route: Option<RouteReport>,
    /// `npuprof patch`'s report (diffs, plan, warnings).
    pub patch: Option<PatchReport>,
    /// Every launch, in order (a second one after a relocation).
    pub runs: Vec<RunReport>,
    /// `npuprof verify`'s report for each run that produced a result directory.
    pub verify: Vec<VerifyReport>,
    /// The relocation, when verify diagnosed the bad-output-filesystem case.
    pub relocate: Option<RelocateReport>,
    /// With `--breakdown`: the structure window's patch (the same target with a short decode
    /// window and `with_modules=True`), launched after the timing run; its launch and verify
    /// are the last of `runs` and `verify`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structure: Option<PatchReport>,
    /// With a structure run (`--breakdown`): what the Python tracer cost on this run, each run
    /// (phase × rank) of the structure window against the timing window's by median step
    /// ([`npuprof_breakdown::tracer::TracerCost`]); empty when the two windows' step times
    /// could not be paired.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracer_cost: Option<Vec<npuprof_breakdown::tracer::TracerCost>>,
    /// The timing run's summary (or why there is none), when the workflow made one (with a
    /// structure run, for [`CollectReport::tracer_cost`]): printed, not serialized (`npuprof
    /// summary` gives it).
    #[serde(skip)]
    pub timing_summary: Option<Result<npuprof_summary::Summary, String>>,
    /// What became of the repository.
    pub revert: Restored,
    /// Where the copy of the originals stays when the repository is left changed without a
    /// journal (the launch removed `.npuprof/` and it could not be put back).
    pub originals_kept: Option<String>,
}

impl CollectReport {
    /// The run the timing profile is from: the last, or the one before the structure run.
    pub fn timing_run(&self) -> Option<&RunReport> {
        let structure = usize::from(self.structure_run().is_some());
        self.runs.iter().rev().nth(structure)
    }

    /// The structure window's run (`--breakdown`), once it was launched.
    pub fn structure_run(&self) -> Option<&RunReport> {
        // The structure patch is made only after the timing run, so its run is the last.
        self.structure
            .as_ref()
            .and(self.runs.last())
            .filter(|_| self.runs.len() >= 2)
    }
}

/// Why collect stopped early: the closed set of `error_code` in its `--json` report: collect's
/// own stops, else the code the error document of `npuprof patch` (or any command) gives the
/// same error, so one error has one code whichever command met it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopCode {
    /// The launch failed: it exited non-zero or was killed, or its output or rank logs show an
    /// error (`launch_errors` of its run quote them).
    LaunchFailed,
    /// The launch exited 0 without an error and wrote no new run directory.
    NoResult,
    /// `--timeout` stopped the launch.
    TimedOut,
    /// Ctrl-C or a signal stopped collect.
    Interrupted,
    /// Any other error, by its code (`refused`: path B, changes already present, an unsafe
    /// relocation target, a patch npuprof cannot prove, nothing launched; `not_found`: a model
    /// or run config that is not there; `invalid_input`, `io`, `failed`, …).
    #[serde(untagged)]
    Error(ErrorCode),
}

impl StopCode {
    /// The code of the error that stopped collect.
    pub fn of(err: &WorkflowError) -> Self {
        match err {
            WorkflowError::Collect(stop) => match stop {
                Stop::LaunchFailed { .. } | Stop::Start { .. } | Stop::EmptyLaunch => {
                    Self::LaunchFailed
                }
                Stop::NoResult { .. } => Self::NoResult,
                Stop::TimedOut(_) => Self::TimedOut,
                Stop::Interrupted | Stop::LaunchInterrupted => Self::Interrupted,
                Stop::AlreadyChanged(_) | Stop::NotPathA { .. } | Stop::Unrelocatable => {
                    Self::Error(ErrorCode::Refused)
                }
                Stop::Wait(_) | Stop::Unsettled(_) => Self::Error(ErrorCode::Failed),
            },
            _ => Self::Error(err.code()),
        }
    }
}

#[cfg(test)]
mod tests {
    use npuprof_severity::ErrorCode;

    use super::StopCode;

    /// collect's own codes and the error document's serialise as the same flat strings, so the
    /// values `error_code` had stay as they were (`refused`, `failed`).
    #[test]
    fn stop_codes_serialise_as_flat_names() {
        let name = |code: StopCode| serde_json::to_value(code).expect("serialises");
        assert_eq!(name(StopCode::LaunchFailed), "launch_failed");
        assert_eq!(name(StopCode::NoResult), "no_result");
        assert_eq!(name(StopCode::Error(ErrorCode::Refused)), "refused");
        assert_eq!(name(StopCode::Error(ErrorCode::Failed)), "failed");
        assert_eq!(name(StopCode::Error(ErrorCode::NotFound)), "not_found");
    }
}
