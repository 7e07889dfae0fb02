//! `collect`: route → target → patch → run → verify → (relocate → run → verify) → revert, as one
//! workflow. Every change goes through the journal and is reverted at the end (unless
//! `keep_patch`), also on failure, timeout and interrupt; the repository's bytes, not the
//! journal, decide whether it was restored. The run itself is a [`Launcher`]'s business, and
//! what happens along the way is told to an [`Observer`]: the workflow prints nothing.

mod launch;
mod report;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use npuprof_journal::{self as journal, JournalError, RevertOutcome};
use npuprof_patch::target::PatchRequest;
use npuprof_route::Route;
use npuprof_target::Target;
use npuprof_verify::VerifyReport;
use npuprof_verify::finding::Code;

pub use launch::{Interrupt, Launch, Launcher, Output, POLL, ProcessLauncher, RunReport};
pub use report::{CollectReport, Outcome, Restored};

use crate::WorkflowError;
use crate::patch::{Mode, PatchReport};

/// What to collect.
#[derive(Debug, Clone)]
pub struct CollectRequest<'a> {
    /// The repository, model, run config and run mode.
    pub target: npuprof_target::Request<'a>,
    /// The phases, the window and the token budget.
    pub patch: PatchRequest,
    /// Leave the patch (and any relocation) in place at the end.
    pub keep_patch: bool,
    /// Stop each launch after this long.
    pub timeout: Option<Duration>,
    /// The launch command, run from the repository; `None` runs the target's own.
    pub launch: Option<Vec<String>>,
}

/// What happens along the way, for the caller to show.
#[derive(Debug)]
pub enum Event<'a> {
    /// The files were patched.
    Patched(&'a PatchReport),
    /// A launch starts (`cwd` relative to the repository; empty for the repository itself).
    Launching {
        /// The command.
        argv: &'a [String],
        /// Its working directory, relative to the repository.
        cwd: &'a Path,
    },
    /// The launch exited non-zero; what it wrote is verified anyway.
    LaunchFailed {
        /// Its exit code.
        exit_code: Option<i32>,
    },
    /// verify diagnosed the bad-output-filesystem case: the output is relocated and run again.
    Relocating,
    /// Every change is being reverted.
    Reverting,
    /// Not reverted: these files changed during the run.
    NotReverted(Vec<PathBuf>),
    /// The revert failed.
    RevertFailed(&'a JournalError),
    /// After the revert these files still differ from the originals.
    NotRestored {
        /// The files.
        files: &'a [PathBuf],
        /// Whether the journal is gone too (the launched command removed `.npuprof/`?).
        journal_gone: bool,
    },
}

/// The caller's side of the workflow.
pub trait Observer {
    /// Called once the target is resolved and before anything changes: may settle the window
    /// (ask the user); an error stops the workflow.
    fn settle(&mut self, _target: &Target, _request: &mut PatchRequest) -> Result<(), String> {
        Ok(())
    }

    /// Something happened.
    fn event(&mut self, event: Event<'_>);
}

/// Why `collect` stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum Stop {
    /// The repository already has npuprof changes.
    #[error(
        "`{}` already has npuprof changes (see `npuprof status`); revert them first (`npuprof revert`) so that collect can restore the repository exactly",
        .0.display()
    )]
    AlreadyChanged(PathBuf),
    /// The repository is not path A.
    #[error(
        "collect automates path A only, and route says `{route}` (see `npuprof route {}`); for path B use `npuprof inject`",
        repo.display()
    )]
    NotPathA {
        /// route's decision.
        route: &'static str,
        /// The repository.
        repo: PathBuf,
    },
    /// An interrupt arrived between steps.
    #[error("interrupted (Ctrl-C/SIGTERM)")]
    Interrupted,
    /// An interrupt stopped the launch.
    #[error("interrupted (Ctrl-C/SIGTERM): the launch was stopped")]
    LaunchInterrupted,
    /// The launch ran past the timeout.
    #[error("the launch command ran longer than --timeout {0}s and was stopped")]
    TimedOut(u64),
    /// The launch wrote no result directory.
    #[error(
        "the launch command (exit code {}) produced no new result directory {res_dir}/<date>/{case}",
        exit_code.map_or_else(|| "none".to_owned(), |c| c.to_string())
    )]
    NoResult {
        /// Its exit code.
        exit_code: Option<i32>,
        /// The target's results directory.
        res_dir: String,
        /// The case directory name.
        case: String,
    },
    /// The output could not be moved to a safe place.
    #[error("could not relocate the output to a safe local directory (see the relocate report)")]
    Unrelocatable,
    /// The launch command is empty.
    #[error("empty launch command")]
    EmptyLaunch,
    /// The launch command could not be started.
    #[error("cannot start `{command}`")]
    Start {
        /// The command.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// Waiting for the launch failed.
    #[error("cannot wait for the launch command")]
    Wait(#[source] std::io::Error),
    /// The caller's window could not be settled.
    #[error("{0}")]
    Unsettled(String),
}

/// Runs the workflow. Errors before anything was changed (another npuprof at work, npuprof
/// changes already present) are returned; later ones are recorded in the report, after
/// everything was reverted.
pub fn collect(
    request: &CollectRequest<'_>,
    launcher: &mut dyn Launcher,
    observer: &mut dyn Observer,
    interrupt: &Interrupt,
) -> Result<CollectReport, WorkflowError> {
    let repo = request.target.repo;
    // One npuprof at a time in this repository, for the whole workflow.
    let _lock = journal::RepoLock::acquire(repo)?;
    if journal::status(repo)?.is_some() {
        return Err(Stop::AlreadyChanged(repo.to_path_buf()).into());
    }
    let mut run = Run {
        request,
        launcher,
        observer,
        interrupt,
        report: CollectReport {
            repo: repo.display().to_string(),
            config: format!(
                "models/{}/config/{}",
                request.target.model, request.target.yaml
            ),
            model: request.target.model.to_owned(),
            ..CollectReport::default()
        },
        restore: None,
    };
    let result = run.workflow();
    run.restore_repository();
    let mut report = run.report;
    let outcome = match &result {
        Err(err) => {
            report.error = Some(chain(err));
            Outcome::Failed
        }
        Ok(()) if matches!(report.revert, Restored::Refused | Restored::Failed) => Outcome::Failed,
        Ok(()) if report.verify.last().is_some_and(|v| v.ok) => Outcome::Clean,
        Ok(()) => Outcome::VerifyErrors,
    };
    report.outcome = outcome;
    report.exit_code = outcome.exit_code();
    Ok(report)
}

/// An error with its causes, `: `-separated.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// One collect in progress.
struct Run<'r, 'a> {
    request: &'r CollectRequest<'a>,
    launcher: &'r mut dyn Launcher,
    observer: &'r mut dyn Observer,
    interrupt: &'r Interrupt,
    report: CollectReport,
    /// The repository's bytes right after the last change, to check the restoration against.
    restore: Option<journal::RestoreCheck>,
}

impl Run<'_, '_> {
    fn repo(&self) -> &Path {
        self.request.target.repo
    }

    fn workflow(&mut self) -> Result<(), WorkflowError> {
        let route = npuprof_route::scan(self.repo())?;
        let decision = route.route;
        self.report.route = Some(route);
        self.check_interrupt()?;
        if decision != Route::Framework {
            return Err(Stop::NotPathA {
                route: decision.as_str(),
                repo: self.repo().to_path_buf(),
            }
            .into());
        }
        let target = npuprof_target::resolve(&self.request.target)?;
        self.report.family = Some(target.family);
        let mut patch_request = self.request.patch;
        self.observer
            .settle(&target, &mut patch_request)
            .map_err(Stop::Unsettled)?;
        let patched = crate::patch::apply(&target, &patch_request, Mode::Write)?;
        self.restore = journal::RestoreCheck::capture(self.repo())?;
        self.observer.event(Event::Patched(&patched));
        self.report.patch = Some(patched);
        self.check_interrupt()?;

        let launch = self.launch_of(&target);
        let verdict = self.run_and_verify(&target, &launch, &patch_request)?;
        if !verdict
            .findings
            .iter()
            .any(|f| f.code == Code::OutputFilesystem)
        {
            return Ok(());
        }
        self.observer.event(Event::Relocating);
        let relocated = npuprof_relocate::relocate(&npuprof_relocate::RelocateRequest {
            repo: target.repo.clone(),
            model: target.model.clone(),
            to: None,
            dry_run: false,
        })?;
        self.restore = journal::RestoreCheck::capture(self.repo())?;
        let applied = relocated.applied || relocated.already_relocated;
        let unsafe_target = relocated.target.has_errors();
        self.report.relocate = Some(relocated);
        if !applied || unsafe_target {
            return Err(Stop::Unrelocatable.into());
        }
        self.check_interrupt()?;
        self.run_and_verify(&target, &launch, &patch_request)?;
        Ok(())
    }

    /// The launch: the request's command from the repository, else the target's own from its
    /// directory.
    fn launch_of(&self, target: &Target) -> Launch {
        let (cwd, argv) = match &self.request.launch {
            Some(argv) => (target.repo.clone(), argv.clone()),
            None => (
                target.repo.join(&target.launch.cwd),
                target.launch.argv.clone(),
            ),
        };
        Launch {
            argv,
            cwd,
            timeout: self.request.timeout,
        }
    }

    /// One launch and the verify of what it wrote (also pushed on the report).
    fn run_and_verify(
        &mut self,
        target: &Target,
        launch: &Launch,
        request: &PatchRequest,
    ) -> Result<VerifyReport, WorkflowError> {
        // Result directories are named to the second; allow for a coarse clock on the filesystem.
        let started = SystemTime::now() - Duration::from_secs(2);
        self.observer.event(Event::Launching {
            argv: &launch.argv,
            cwd: launch.cwd.strip_prefix(&target.repo).unwrap_or(&launch.cwd),
        });
        let mut run = self.launcher.launch(launch, self.interrupt)?;
        let result_dir = newest_result_dir(target, started);
        run.result_dir = result_dir.as_ref().map(|d| d.display().to_string());
        let (interrupted, timed_out, exit_code) = (run.interrupted, run.timed_out, run.exit_code);
        self.report.runs.push(run);
        if interrupted {
            return Err(Stop::LaunchInterrupted.into());
        }
        if timed_out {
            let secs = launch.timeout.map_or(0, |t| t.as_secs());
            return Err(Stop::TimedOut(secs).into());
        }
        let Some(result_dir) = result_dir else {
            return Err(Stop::NoResult {
                exit_code,
                res_dir: target.results.res_dir.clone(),
                case: target.results.case.clone(),
            }
            .into());
        };
        if exit_code != Some(0) {
            self.observer.event(Event::LaunchFailed { exit_code });
        }
        let verdict = npuprof_verify::verify(
            &npuprof_verify::Options {
                path: result_dir,
                phases: request.phases,
                expect_active: None,
                world_size: None,
                logs: Vec::new(),
            },
            &npuprof_verify::NoProgress,
        )?;
        self.report.verify.push(verdict.clone());
        self.check_interrupt()?;
        Ok(verdict)
    }

    fn check_interrupt(&self) -> Result<(), Stop> {
        if self.interrupt.raised() {
            return Err(Stop::Interrupted);
        }
        Ok(())
    }

    /// Reverts every change (unless `keep_patch`) and records what became of the repository:
    /// the bytes decide, not the journal, since the launched command may have deleted
    /// `.npuprof/` or rewritten files.
    fn restore_repository(&mut self) {
        // A journal that cannot even be read still means "changed": try to revert (and report).
        let journaled = !matches!(journal::status(self.repo()), Ok(None));
        let restore = self.restore.take();
        self.report.revert = match (journaled, self.request.keep_patch) {
            (false, _) if restore.is_none() => Restored::Nothing,
            (true, true) => Restored::Kept,
            (true, false) => self.revert(),
            // The journal is gone: only the bytes can say whether the files are as they were.
            (false, _) => Restored::Reverted,
        };
        let unrestored = match restore {
            Some(check) if self.report.revert == Restored::Reverted => check.unrestored(),
            _ => return,
        };
        if !unrestored.is_empty() {
            self.observer.event(Event::NotRestored {
                files: &unrestored,
                journal_gone: !journaled,
            });
            self.report.revert = Restored::Failed;
        }
    }

    fn revert(&mut self) -> Restored {
        self.observer.event(Event::Reverting);
        match journal::revert(self.repo(), false) {
            Ok(RevertOutcome::Reverted { .. } | RevertOutcome::NothingToRevert) => {
                Restored::Reverted
            }
            Ok(RevertOutcome::Refused { conflicts }) => {
                let files = conflicts.into_iter().map(|c| c.path).collect();
                self.observer.event(Event::NotReverted(files));
                Restored::Refused
            }
            Err(err) => {
                self.observer.event(Event::RevertFailed(&err));
                Restored::Failed
            }
        }
    }
}

/// The newest result directory of the target modified after `since`, as a real path.
fn newest_result_dir(target: &Target, since: SystemTime) -> Option<PathBuf> {
    let dir = target.results.newest(&target.repo)?;
    let modified = dir.metadata().and_then(|m| m.modified()).ok()?;
    if modified < since {
        return None;
    }
    dir.canonicalize().ok()
}
