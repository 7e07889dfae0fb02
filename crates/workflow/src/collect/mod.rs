//! `collect`: route → target → patch → run → verify → (relocate → run → verify) → revert, as one
//! workflow. Every change goes through the journal and is reverted at the end (unless
//! `keep_patch`), also on failure, timeout and interrupt; the repository's bytes, not the
//! journal, decide whether it was restored. The run itself is a [`Launcher`]'s business, and
//! what happens along the way is told to an [`Observer`]: the workflow prints nothing.

mod capture;
mod diagnose;
mod group;
mod launch;
mod outputs;
mod report;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use npuprof_journal::{self as journal, JournalError, Keepsake, RevertOutcome};
use npuprof_patch::target::PatchRequest;
use npuprof_repository::Target;
use npuprof_route::Route;
use npuprof_schedule::{Phase, PhaseSelection};
use npuprof_verify::VerifyReport;
use npuprof_verify::finding::Code;

pub use capture::{Capture, HEAD_LINES, MAX_LINE, Readers, StreamCapture, TAIL_LINES};
pub use diagnose::{ErrorKind, LaunchError};
pub use group::{
    Escaped, Straggler, end as end_group, end_escaped, escaped, members as group_members,
};
pub use launch::{Interrupt, Launch, Launcher, Output, POLL, ProcessLauncher, RunReport};
pub use report::{CollectReport, Outcome, Restored, StopCode};

use crate::WorkflowError;
use crate::patch::{Mode, PatchReport};

/// What to collect: a patch's request, and the launch on top.
#[derive(Debug, Clone)]
pub struct CollectRequest<'a> {
    /// What to resolve and which window to set (as `npuprof patch` would).
    pub patch: crate::patch::Request<'a>,
    /// Leave the patch (and any relocation) in place at the end.
    pub keep_patch: bool,
    /// After the timing run, a second run with a short structure window
    /// ([`STRUCTURE_STEPS`] decode steps, `with_modules=True`, `record_shapes=True`) for
    /// `npuprof breakdown`'s exact module tree; the timing run keeps the guide's settings.
    pub breakdown: bool,
    /// Stop each launch after this long.
    pub timeout: Option<Duration>,
    /// The launch command, run from the repository; `None` runs the target's own.
    pub launch: Option<Vec<String>>,
    /// npuprof's state directory outside the repository (`$XDG_STATE_HOME/npuprof`): each
    /// collect keeps its copy of the originals (removed at the end) and its launch logs (kept)
    /// in a new private directory below it.
    pub state_dir: PathBuf,
}

/// The journal's name of collect's own changes (the structure window's run config copy).
const COMMAND: &str = "collect";

/// `<stem>_npuprof_structure.<ext>` beside `path` (a run config).
fn structure_yaml(path: &str) -> String {
    match path.rsplit_once('.') {
        Some((stem, ext)) if !ext.contains('/') => format!("{stem}_npuprof_structure.{ext}"),
        _ => format!("{path}_npuprof_structure"),
    }
}

/// The decode steps of the structure window (`collect --breakdown`): short, since the Python
/// tracer slows every traced call.
pub const STRUCTURE_STEPS: u64 = 2;

/// What happens along the way, for the caller to show.
#[derive(Debug)]
pub enum Event<'a> {
    /// The files were patched.
    Patched(&'a PatchReport),
    /// The files were patched again for the structure window (`--breakdown`).
    StructurePatched(&'a PatchReport),
    /// A launch starts (`cwd` relative to the repository; empty for the repository itself).
    Launching {
        /// The command.
        argv: &'a [String],
        /// The environment the definition sets for it.
        env: &'a BTreeMap<String, String>,
        /// Its working directory, relative to the repository.
        cwd: &'a Path,
    },
    /// The launch failed (it exited non-zero, or its output or rank logs show errors); what
    /// it wrote is verified anyway.
    LaunchFailed(&'a RunReport),
    /// The launch left processes running in its group: they were stopped.
    Stragglers(&'a [Straggler]),
    /// The launch removed npuprof's journal; it was put back from the copy outside the
    /// repository.
    JournalReinstated(&'a Path),
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
    /// The repository is not restored and has no journal: the originals stay in this
    /// directory outside it.
    OriginalsKept(&'a Path),
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
    /// The launch wrote no new run directory (and showed no error).
    #[error(
        "the launch command ({ended}) wrote no new run directory under {res_dir}/<date>/{case}{}",
        logs_hint(.log)
    )]
    NoResult {
        /// How it ended (`exit code 0`).
        ended: String,
        /// The target's results directory.
        res_dir: String,
        /// The case directory name.
        case: String,
        /// Its whole output.
        log: Option<String>,
    },
    /// The launch failed: it exited non-zero (or was killed), or its output or rank logs show
    /// an error.
    #[error("the launch failed ({ended}): {what}{}", logs_hint(.log))]
    LaunchFailed {
        /// How it ended (`exit code 1`, `signal 9`).
        ended: String,
        /// The first error quoted (`ModuleNotFoundError: … (in log_0.log)`), or its last lines.
        what: String,
        /// Its whole output.
        log: Option<String>,
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

fn logs_hint(log: &Option<String>) -> String {
    log.as_ref()
        .map(|log| format!("; its whole output is in {log}"))
        .unwrap_or_default()
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
    let repo = request.patch.target.repo;
    // One npuprof at a time in this repository, for the whole workflow.
    let _lock = journal::RepoLock::acquire(repo)?;
    if journal::status(repo)?.is_some() {
        return Err(Stop::AlreadyChanged(repo.to_path_buf()).into());
    }
    let layout = &npuprof_repository::definitions_for(repo)
        .map_err(npuprof_repository::TargetError::from)?
        .layout;
    let mut run = Run {
        request,
        launcher,
        observer,
        interrupt,
        report: CollectReport {
            repo: repo.display().to_string(),
            config: layout.config_path(request.patch.target.model, request.patch.target.yaml),
            model: request.patch.target.model.to_owned(),
            ..CollectReport::default()
        },
        restore: None,
        private: None,
        keepsake: None,
    };
    let result = run.workflow();
    run.restore_repository();
    run.settle_keepsake();
    let mut report = run.report;
    if let (Some(timing), Some(structure)) = (
        report.timing_run().and_then(|r| r.result_dir.as_deref()),
        report.structure_run().and_then(|r| r.result_dir.as_deref()),
    ) {
        // The timing run's summary, once: the tracer's cost and the printed profile use it.
        let summary = npuprof_summary::summarize(Path::new(timing), &Default::default());
        let cost =
            npuprof_breakdown::tracer::tracer_cost_of(summary.as_ref().ok(), Path::new(structure));
        report.tracer_cost = Some(cost);
        report.timing_summary = Some(summary.map_err(|e| e.to_string()));
    }
    // The last verify is the run's; with a structure run, the timing run's is before it.
    let timing_and_structure = if report.structure.is_some() { 2 } else { 1 };
    let outcome = match &result {
        Err(err) => {
            report.error = Some(crate::error_text(err));
            report.error_code = Some(StopCode::of(err));
            Outcome::Failed
        }
        Ok(()) if matches!(report.revert, Restored::Refused | Restored::Failed) => Outcome::Failed,
        Ok(())
            if report
                .verify
                .iter()
                .rev()
                .take(timing_and_structure)
                .all(|v| v.ok)
                && !report.verify.is_empty() =>
        {
            Outcome::Clean
        }
        Ok(()) => Outcome::VerifyErrors,
    };
    report.outcome = outcome;
    report.exit_code = outcome.exit_code();
    Ok(report)
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
    /// This collect's own directory in the state directory (made before the first launch).
    private: Option<PathBuf>,
    /// The copy of the journal and originals outside the repository, while a launch may run.
    keepsake: Option<Keepsake>,
}

impl Run<'_, '_> {
    fn repo(&self) -> &Path {
        self.request.patch.target.repo
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
        let crate::patch::Patched {
            target,
            window: patch_request,
            report: patched,
        } = crate::patch::run(&self.request.patch, Mode::Write, |target, window| {
            self.report.family = Some(target.family);
            self.observer
                .settle(target, window)
                .map_err(|e| WorkflowError::from(Stop::Unsettled(e)))
        })?;
        self.restore = journal::RestoreCheck::capture(self.repo())?;
        self.observer.event(Event::Patched(&patched));
        self.report.patch = Some(patched);
        self.check_interrupt()?;

        let verdict = self.run_and_verify(&target, &patch_request)?;
        if !verdict
            .findings
            .iter()
            .any(|f| f.code == Code::OutputFilesystem)
        {
            return self.structure_run(&target, &patch_request);
        }
        self.observer.event(Event::Relocating);
        let relocated = npuprof_relocate::relocate(&npuprof_relocate::RelocateRequest {
            repo: target.repo.clone(),
            model: target.model.clone(),
            // The directory this run's results land in, as resolved.
            output: Some(target.results.res_dir.clone()),
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
        self.run_and_verify(&target, &patch_request)?;
        self.structure_run(&target, &patch_request)
    }

    /// With `--breakdown`: a copy of the run config (`<stem>_npuprof_structure.yaml`, so the
    /// run's results land in a result directory of their own) made through the journal, the
    /// target of that copy patched from the originals with the structure window, launched and
    /// verified.
    fn structure_run(
        &mut self,
        timing: &Target,
        window: &PatchRequest,
    ) -> Result<(), WorkflowError> {
        if !self.request.breakdown {
            return Ok(());
        }
        self.check_interrupt()?;
        let yaml = structure_yaml(self.request.patch.target.yaml);
        let copy = structure_yaml(&timing.config_path);
        let mut tx = journal::Transaction::begin(self.repo(), COMMAND)?;
        let config = Path::new(&timing.config_path);
        let original = match tx
            .originals(crate::patch::COMMAND)?
            .into_iter()
            .find(|(path, _)| path == config)
        {
            Some((_, bytes)) => bytes,
            None => tx.read(config)?,
        };
        tx.create_file(Path::new(&copy), original)?;
        tx.commit()?;
        self.restore = journal::RestoreCheck::capture(self.repo())?;
        let active = npuprof_schedule::Window::new(STRUCTURE_STEPS, window.window.skip_first())
            .map_err(|e| WorkflowError::from(Stop::Unsettled(e.to_string())))?;
        let request = crate::patch::Request {
            target: npuprof_repository::Request {
                yaml: &yaml,
                ..self.request.patch.target.clone()
            },
            window: PatchRequest {
                window: active,
                modules: true,
                ..*window
            },
        };
        let crate::patch::Patched {
            target,
            window,
            report,
        } = crate::patch::run(&request, Mode::Write, |_, _| Ok::<(), WorkflowError>(()))?;
        self.restore = journal::RestoreCheck::capture(self.repo())?;
        self.observer.event(Event::StructurePatched(&report));
        self.report.structure = Some(report);
        self.run_and_verify(&target, &window)?;
        Ok(())
    }

    /// The patch the coming launch runs with: the structure window's once it is made.
    fn latest_patch(&self) -> Option<&PatchReport> {
        self.report
            .structure
            .as_ref()
            .or(self.report.patch.as_ref())
    }

    /// The launch: the request's command from the repository, else the target's own from its
    /// directory; its whole output goes to `log`.
    fn launch_of(&self, target: &Target, log: PathBuf) -> Launch {
        let (cwd, argv, env) = match &self.request.launch {
            Some(argv) => (target.repo.clone(), argv.clone(), BTreeMap::new()),
            None => (
                target.repo.join(&target.launch.cwd),
                target.launch.argv.clone(),
                target.launch.env.clone(),
            ),
        };
        Launch {
            argv,
            cwd,
            env,
            timeout: self.request.timeout,
            log: Some(log),
        }
    }

    /// This collect's private directory, made on first use.
    fn private_dir(&mut self) -> Result<PathBuf, JournalError> {
        if let Some(dir) = &self.private {
            return Ok(dir.clone());
        }
        let dir = journal::new_private_dir(&self.request.state_dir.join("collect"))?;
        self.private = Some(dir.clone());
        Ok(dir)
    }

    /// Copies the journal and originals out of the repository for the coming launch
    /// (replacing the copy of an earlier launch: a relocation changed the journal since).
    fn keep_originals(&mut self, private: &Path) -> Result<(), WorkflowError> {
        if let Some(old) = self.keepsake.take() {
            old.discard()?;
        }
        let dir = private.join(format!("originals-{}", self.report.runs.len() + 1));
        self.keepsake = Keepsake::save(self.repo(), &dir)?;
        Ok(())
    }

    /// Puts the journal back from the copy when the launch removed it.
    fn reinstate_journal(&mut self) -> Result<(), WorkflowError> {
        let Some(keepsake) = &self.keepsake else {
            return Ok(());
        };
        if keepsake.reinstate(self.request.patch.target.repo)? {
            self.observer
                .event(Event::JournalReinstated(keepsake.dir()));
        }
        Ok(())
    }

    /// One launch and the verify of the runs it wrote (also pushed on the report).
    fn run_and_verify(
        &mut self,
        target: &Target,
        request: &PatchRequest,
    ) -> Result<VerifyReport, WorkflowError> {
        let private = self.private_dir()?;
        self.keep_originals(&private)?;
        let launch = self.launch_of(
            target,
            private.join(format!("launch-{}.log", self.report.runs.len() + 1)),
        );
        let before = outputs::list(target);
        self.observer.event(Event::Launching {
            argv: &launch.argv,
            env: &launch.env,
            cwd: launch.cwd.strip_prefix(&target.repo).unwrap_or(&launch.cwd),
        });
        let launched = self.launcher.launch(&launch, self.interrupt);
        self.reinstate_journal()?;
        let mut run = launched?;
        let written = outputs::written(target, &before);
        run.result_dir = written.result_dir.as_ref().map(|d| d.display().to_string());
        run.launch_errors = launch_errors(&run, &written);
        if !run.stragglers.is_empty() {
            self.observer.event(Event::Stragglers(&run.stragglers));
        }
        let failed = run.exit_code != Some(0) || !run.launch_errors.is_empty();
        if failed && !run.interrupted && !run.timed_out {
            self.observer.event(Event::LaunchFailed(&run));
        }
        let launch_failed = Stop::LaunchFailed {
            ended: run.ended(),
            what: failure_text(&run),
            log: run.output.log.clone(),
        };
        let (interrupted, timed_out, exit_code) = (run.interrupted, run.timed_out, run.exit_code);
        // The launch's own output, where torch_npu prints `Task [X] run failed.` when no
        // `log_<rank>.log` holds it: verify reads it as captured stdout.
        let captured: Vec<PathBuf> = run.output.log.iter().map(PathBuf::from).collect();
        let no_result = Stop::NoResult {
            ended: run.ended(),
            res_dir: target.results.res_dir.clone(),
            case: target.results.case.clone(),
            log: run.output.log.clone(),
        };
        self.report.runs.push(run);
        if interrupted {
            return Err(Stop::LaunchInterrupted.into());
        }
        if timed_out {
            let secs = launch.timeout.map_or(0, |t| t.as_secs());
            return Err(Stop::TimedOut(secs).into());
        }
        let Some(result_dir) = written.result_dir.filter(|_| !written.runs.is_empty()) else {
            return Err(if failed { launch_failed } else { no_result }.into());
        };
        let new_runs = written.runs;
        let verdict = npuprof_verify::verify_runs(
            &npuprof_verify::Options {
                path: result_dir,
                // The phases patched in ("both" is every phase the target has).
                phases: self.patched_phases().unwrap_or(request.phases),
                expect_active: None,
                world_size: None,
                logs: captured,
                serving: npuprof_verify::serving::Serving::Off,
                // The windows patched in: a run that recorded another one is an error.
                requested: self
                    .latest_patch()
                    .into_iter()
                    .flat_map(|p| &p.plan.phases)
                    .map(|phase| npuprof_verify::Requested {
                        phase: phase.phase,
                        schedule: phase.schedule(),
                    })
                    .collect(),
            },
            &npuprof_verify::NoProgress,
            &|dir| {
                dir.canonicalize()
                    .is_ok_and(|real| new_runs.binary_search(&real).is_ok())
            },
        )?;
        self.report.verify.push(verdict.clone());
        // A crash is a failed launch even when some ranks wrote a profile; errors in the
        // output of a run that exited 0 only when the profile does not verify.
        if exit_code != Some(0) || (failed && !verdict.ok) {
            return Err(launch_failed.into());
        }
        self.check_interrupt()?;
        Ok(verdict)
    }

    /// The phases the patch switched on, as a selection (`None` before a patch).
    fn patched_phases(&self) -> Option<PhaseSelection> {
        let planned: Vec<Phase> = self
            .report
            .patch
            .as_ref()?
            .plan
            .phases
            .iter()
            .map(|p| p.phase)
            .collect();
        match planned.as_slice() {
            [one] => Some(PhaseSelection::only(*one)),
            [] => None,
            _ => Some(PhaseSelection::Both),
        }
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
        if let Err(err) = self.reinstate_journal() {
            self.report
                .error
                .get_or_insert_with(|| crate::error_text(&err));
        }
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

    /// Removes the copy of the originals, unless the repository is left changed without a
    /// journal: then the copy is all there is, and it stays (named to the user).
    fn settle_keepsake(&mut self) {
        let Some(keepsake) = self.keepsake.take() else {
            return;
        };
        let restored = matches!(
            self.report.revert,
            Restored::Reverted | Restored::Kept | Restored::Nothing
        );
        let journaled = matches!(journal::status(self.repo()), Ok(Some(_)));
        if restored || journaled {
            let _ = keepsake.discard();
        } else {
            self.report.originals_kept = Some(keepsake.dir().display().to_string());
            self.observer.event(Event::OriginalsKept(keepsake.dir()));
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

/// The launch errors of a run: in its own output first, then in the rank logs it wrote
/// (each error line quoted once).
fn launch_errors(run: &RunReport, written: &outputs::Written) -> Vec<LaunchError> {
    let mut errors = diagnose::scan("output", &run.output.kept_lines());
    for log in &written.logs {
        let Some(lines) = diagnose::log_tail(log) else {
            continue;
        };
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let name = log.file_name().map(|n| n.to_string_lossy().into_owned());
        for found in diagnose::scan(name.as_deref().unwrap_or("log"), &lines) {
            if !errors.iter().any(|e| e.line == found.line) {
                errors.push(found);
            }
        }
    }
    errors
}

/// What a failed launch's error message quotes: its first launch error and where it was, else
/// its last lines.
fn failure_text(run: &RunReport) -> String {
    if let Some(first) = run.launch_errors.first() {
        return format!("{} (in {})", first.line, first.source);
    }
    let last: Vec<&str> = [&run.output.stderr, &run.output.stdout]
        .into_iter()
        .find(|s| !s.tail.is_empty())
        .map(|s| {
            let lines: Vec<&str> = s.tail.iter().map(String::as_str).collect();
            lines[lines.len().saturating_sub(3)..].to_vec()
        })
        .unwrap_or_default();
    if last.is_empty() {
        "it wrote no output and no profile".to_owned()
    } else {
        format!("its last output: {}", last.join(" | "))
    }
}
