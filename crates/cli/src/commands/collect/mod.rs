//! `npuprof collect`: route → patch → run → verify → (relocate → run → verify) → revert, in one
//! command. Every change goes through the journal and is reverted at the end (unless
//! `--keep-patch`), also on failure, timeout and Ctrl-C/SIGTERM.

mod launch;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::bail;
use npuprof_journal::{self as journal, RevertOutcome};
use npuprof_patch::target::TokenBudget;
use npuprof_route::{Route, RouteReport};
use npuprof_target::Target;
use npuprof_verify::VerifyReport;
use npuprof_verify::finding::Code;
use serde::Serialize;

use super::{patch, plan, relocate};
use crate::args::{PhaseArg, TargetArgs, WindowArgs};
use crate::exit::Exit;
use crate::output;
use launch::{Interrupt, RunReport};

/// Arguments of `npuprof collect`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The repository and run config.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The window.
    #[command(flatten)]
    pub window: WindowArgs,
    /// Leave the patch (and any relocation) in place at the end; undo later with `npuprof revert`.
    #[arg(long)]
    pub keep_patch: bool,
    /// Stop the launch command after this many seconds (each run).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Print one JSON document (route, patch, runs, verify, relocate, revert) on stdout.
    #[arg(long)]
    pub json: bool,
    /// The launch command, run from the repository [default: the target's own launch command].
    #[arg(last = true, value_name = "LAUNCH COMMAND")]
    pub launch: Vec<String>,
}

/// How collect ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The profile verified clean (exit 0).
    Clean,
    /// It ran, and verify found errors (exit 1).
    VerifyErrors,
    /// The workflow could not run, or the repository could not be restored (exit 2).
    #[default]
    Failed,
}

impl Outcome {
    /// The exit code.
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Clean => 0,
            Outcome::VerifyErrors => 1,
            Outcome::Failed => 2,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Outcome::Clean => "clean",
            Outcome::VerifyErrors => "verify errors",
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

/// The `--json` document.
#[derive(Debug, Default, Serialize)]
pub struct CollectReport {
    /// How collect ended (`clean` exit 0, `verify_errors` exit 1, `failed` exit 2).
    pub outcome: Outcome,
    /// The exit code.
    pub exit_code: u8,
    /// Why collect stopped early, when it did.
    pub error: Option<String>,
    /// The canonical repository.
    pub repo: String,
    /// The model.
    pub model: String,
    /// The profiling family.
    pub family: Option<npuprof_target::Family>,
    /// The run config, relative to the repository.
    pub config: String,
    /// `npuprof route`'s report.
    pub route: Option<RouteReport>,
    /// `npuprof patch`'s report (diffs, plan, warnings).
    pub patch: Option<patch::Report>,
    /// Every launch, in order (a second one after a relocation).
    pub runs: Vec<RunReport>,
    /// `npuprof verify`'s report for each run that produced a result directory.
    pub verify: Vec<VerifyReport>,
    /// The relocation, when verify diagnosed the bad-output-filesystem case.
    pub relocate: Option<relocate::RelocateReport>,
    /// What became of the repository.
    pub revert: Restored,
}

/// Runs `npuprof collect`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let report = execute(&args)?;
    if args.json {
        output::print_json(&report)?;
    }
    print_summary(&report, args.json);
    print_profile_summary(&report, args.json);
    Ok(match report.exit_code {
        0 => Exit::Ok,
        1 => Exit::Findings,
        _ => Exit::Error,
    })
}

/// Runs the workflow; errors before anything was changed are returned, later ones are
/// recorded in the report (and everything is reverted).
pub fn execute(args: &Args) -> anyhow::Result<CollectReport> {
    let repo = args.target.repo_root()?;
    let (model, yaml) = args.target.model_and_yaml(&repo)?;
    args.window.window()?;
    // One npuprof at a time in this repository, for the whole workflow.
    let _lock = journal::RepoLock::acquire(&repo)?;
    if journal::status(&repo)?.is_some() {
        bail!(
            "`{}` already has npuprof changes (see `npuprof status`); revert them first (`npuprof revert`) so that collect can restore the repository exactly",
            repo.display()
        );
    }
    let interrupt = Interrupt::install()?;
    let mut report = CollectReport {
        repo: repo.display().to_string(),
        config: format!("models/{model}/config/{yaml}"),
        model,
        revert: Restored::Nothing,
        ..CollectReport::default()
    };
    let mut restore = None;
    let result = workflow(args, &repo, &interrupt, &mut report, &mut restore);
    // A journal that cannot even be read still means "changed": try to revert (and report).
    let journaled = !matches!(journal::status(&repo), Ok(None));
    report.revert = if !journaled && restore.is_none() {
        Restored::Nothing
    } else if args.keep_patch {
        Restored::Kept
    } else {
        anstream::eprintln!("npuprof collect: reverting every change");
        match journal::revert(&repo, false) {
            Ok(RevertOutcome::Reverted { .. } | RevertOutcome::NothingToRevert) => {
                Restored::Reverted
            }
            Ok(RevertOutcome::Refused { conflicts }) => {
                let files: Vec<String> = conflicts
                    .iter()
                    .map(|c| c.path.display().to_string())
                    .collect();
                anstream::eprintln!(
                    "npuprof collect: NOT reverted: changed during the run: {}; inspect them, then run `npuprof revert --repo {}` (add --force to discard those edits)",
                    files.join(", "),
                    repo.display()
                );
                Restored::Refused
            }
            Err(err) => {
                anstream::eprintln!(
                    "npuprof collect: revert failed: {err:#}; run `npuprof revert --repo {}`",
                    repo.display()
                );
                Restored::Failed
            }
        }
    };
    // The bytes decide, not the journal: the launched command may have deleted `.npuprof/` or
    // rewritten files.
    if report.revert == Restored::Reverted || !journaled {
        let unrestored = restore
            .as_ref()
            .map(journal::RestoreCheck::unrestored)
            .unwrap_or_default();
        if !unrestored.is_empty() {
            let files: Vec<String> = unrestored.iter().map(|p| p.display().to_string()).collect();
            anstream::eprintln!(
                "npuprof collect: NOT restored: {} differ from the originals{}",
                files.join(", "),
                if journaled {
                    String::new()
                } else {
                    " and the journal is gone (the launched command removed .npuprof/?)".to_owned()
                }
            );
            report.revert = Restored::Failed;
        } else if !journaled {
            report.revert = Restored::Reverted;
        }
    }
    let outcome = match &result {
        Err(err) => {
            report.error = Some(format!("{err:#}"));
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

fn workflow(
    args: &Args,
    repo: &Path,
    interrupt: &Interrupt,
    report: &mut CollectReport,
    restore: &mut Option<journal::RestoreCheck>,
) -> anyhow::Result<()> {
    let route = super::route::execute(repo)?;
    let decision = route.route;
    report.route = Some(route);
    check_interrupt(interrupt)?;
    if decision != Route::Framework {
        bail!(
            "collect automates path A only, and route says `{}` (see `npuprof route {}`); for path B use `npuprof inject`",
            decision.as_str(),
            repo.display()
        );
    }
    let target = &args.target.resolve()?;
    report.family = Some(target.family);
    let mut window = args.window;
    if crate::ask::should_ask(&window, args.json) {
        crate::ask::ask_window(&mut window, target)?;
    }
    let patched = patch::execute_target(target, &window, TokenBudget::Auto, patch::Mode::Write)?;
    *restore = journal::RestoreCheck::capture(repo)?;
    for file in &patched.files {
        anstream::eprint!("{}", file.diff);
    }
    for warning in &patched.warnings {
        anstream::eprintln!("npuprof collect: warning: {warning}");
    }
    report.patch = Some(patched);
    check_interrupt(interrupt)?;

    let (cwd, argv) = launch_command(args, target);
    let verdict = run_and_verify(
        args,
        target,
        (&cwd, &argv, window.phase()),
        interrupt,
        report,
    )?;
    if !verdict
        .findings
        .iter()
        .any(|f| f.code == Code::OutputFilesystem)
    {
        return Ok(());
    }
    anstream::eprintln!(
        "npuprof collect: verify diagnosed the bad-output-filesystem case: relocating the output and running again"
    );
    let relocated = npuprof_relocate::relocate(&npuprof_relocate::RelocateRequest {
        repo: target.repo.clone(),
        model: target.model.clone(),
        to: None,
        dry_run: false,
    })?;
    *restore = journal::RestoreCheck::capture(repo)?;
    let applied = relocated.applied || relocated.already_relocated;
    let unsafe_target = relocated.target.has_errors();
    report.relocate = Some(relocated);
    if !applied || unsafe_target {
        bail!("could not relocate the output to a safe local directory (see the relocate report)");
    }
    check_interrupt(interrupt)?;
    run_and_verify(
        args,
        target,
        (&cwd, &argv, window.phase()),
        interrupt,
        report,
    )?;
    Ok(())
}

/// One launch + verify; returns the verify report (also pushed on `report`).
fn run_and_verify(
    args: &Args,
    target: &Target,
    (cwd, argv, phase): (&Path, &[String], PhaseArg),
    interrupt: &Interrupt,
    report: &mut CollectReport,
) -> anyhow::Result<VerifyReport> {
    // Result directories are named to the second; allow for a coarse clock on the filesystem.
    let started = SystemTime::now() - Duration::from_secs(2);
    anstream::eprintln!(
        "npuprof collect: running `{}` in {}",
        npuprof_target::shell::join(argv),
        cwd.strip_prefix(&target.repo)
            .ok()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| "the repository".to_owned(), |p| p.display().to_string())
    );
    let mut run = launch::run(argv, cwd, args.timeout.map(Duration::from_secs), interrupt)?;
    let result_dir = newest_result_dir(target, started);
    run.result_dir = result_dir.as_ref().map(|d| d.display().to_string());
    let (interrupted, timed_out, code) = (run.interrupted, run.timed_out, run.exit_code);
    report.runs.push(run);
    if interrupted {
        bail!("interrupted (Ctrl-C/SIGTERM): the launch was stopped");
    }
    if timed_out {
        bail!(
            "the launch command ran longer than --timeout {}s and was stopped",
            args.timeout.unwrap_or(0)
        );
    }
    let Some(result_dir) = result_dir else {
        bail!(
            "the launch command (exit code {}) produced no new result directory {}/<date>/{}",
            code.map_or_else(|| "none".to_owned(), |c| c.to_string()),
            target.results.res_dir,
            target.results.case
        );
    };
    if code != Some(0) {
        anstream::eprintln!(
            "npuprof collect: the launch command failed (exit code {code:?}); verifying what it wrote"
        );
    }
    let verdict = npuprof_verify::verify(
        &npuprof_verify::Options {
            path: result_dir,
            phases: phase.into(),
            expect_active: None,
            world_size: None,
        },
        &npuprof_verify::NoProgress,
    )?;
    report.verify.push(verdict.clone());
    check_interrupt(interrupt)?;
    Ok(verdict)
}

fn check_interrupt(interrupt: &Interrupt) -> anyhow::Result<()> {
    if interrupt.raised() {
        bail!("interrupted (Ctrl-C/SIGTERM)");
    }
    Ok(())
}

/// The working directory and argv of the launch: `--` given, from the repository; else the
/// target's own command from its directory.
fn launch_command(args: &Args, target: &Target) -> (PathBuf, Vec<String>) {
    if !args.launch.is_empty() {
        return (target.repo.clone(), args.launch.clone());
    }
    (
        target.repo.join(&target.launch.cwd),
        target.launch.argv.clone(),
    )
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

/// `path` relative to the current directory when it is below it.
fn relative(path: &str) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| {
            Path::new(path)
                .strip_prefix(cwd)
                .ok()
                .map(Path::to_path_buf)
        })
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| path.to_owned(), |p| p.display().to_string())
}

/// What the profile says (`npuprof summary` of the last run's result directory), then what to
/// run next; on stderr when stdout carries the JSON document.
fn print_profile_summary(report: &CollectReport, to_stderr: bool) {
    let Some(dir) = report.runs.last().and_then(|r| r.result_dir.as_deref()) else {
        return;
    };
    let mut text =
        match npuprof_summary::summarize(Path::new(dir), &npuprof_summary::Options::default()) {
            Ok(summary) => format!("\n{}", super::summary::human(&summary)),
            Err(err) => format!("\nnpuprof collect: no summary of the profile: {err}\n"),
        };
    let shown = npuprof_target::shell::quote(&relative(dir));
    text.push_str(&format!(
        "next: npuprof summary {shown} --html summary.html   (the full report, one self-contained page)\n"
    ));
    if to_stderr {
        anstream::eprint!("{text}");
    } else {
        anstream::print!("{text}");
    }
}

/// Error findings listed in the human summary (all of them are in `--json`).
const MAX_LISTED_ERRORS: usize = 8;

/// The final summary: on stdout, or on stderr when stdout carries the JSON document.
fn print_summary(report: &CollectReport, to_stderr: bool) {
    let text = summary(report);
    if to_stderr {
        anstream::eprint!("{text}");
    } else {
        anstream::print!("{text}");
    }
}

/// Renders the summary: outcome, route, window, each run with its verdict per phase × rank and
/// the error findings with their next actions, then what became of the repository.
fn summary(report: &CollectReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "collect: {}", report.outcome.describe());
    if let Some(route) = &report.route {
        let _ = writeln!(s, "  route: {} (path {})", route.route.as_str(), route.path);
    }
    if let Some(patch) = &report.patch {
        for phase in &patch.plan.phases {
            let _ = writeln!(
                s,
                "  window: {} records steps {} (active {}, skip_first {})",
                phase.phase.name(),
                plan::compact_steps(&phase.window_steps),
                phase.active,
                phase.skip_first
            );
        }
    }
    for (index, run) in report.runs.iter().enumerate() {
        let ended = match (run.exit_code, run.signal) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            (None, None) => "unknown".to_owned(),
        };
        let _ = writeln!(
            s,
            "  run {}: {ended} after {:.1}s{}{}",
            index + 1,
            run.duration_secs,
            if run.timed_out { " (timed out)" } else { "" },
            if run.interrupted {
                " (interrupted)"
            } else {
                ""
            }
        );
        if let Some(dir) = &run.result_dir {
            let _ = writeln!(s, "    results: {}", relative(dir));
        }
        if let Some(verdict) = report.verify.get(index) {
            write_verdict(&mut s, verdict, index + 1 == report.verify.len(), run);
        }
    }
    if let Some(relocated) = &report.relocate {
        let target = relocated.target.path.display();
        let _ = writeln!(
            s,
            "  output relocated to {target} (kept after revert: the results stay there)"
        );
    }
    if let Some(error) = &report.error {
        let _ = writeln!(s, "  stopped: {error}");
    }
    let _ = writeln!(
        s,
        "  repository: {}",
        match report.revert {
            Restored::Reverted => "restored byte for byte".to_owned(),
            Restored::Kept => "patch kept (--keep-patch); undo with `npuprof revert`".to_owned(),
            Restored::Nothing => "unchanged".to_owned(),
            Restored::Refused => format!(
                "not reverted (files changed during the run): run `npuprof revert --repo {}`",
                report.repo
            ),
            Restored::Failed =>
                format!("NOT restored: run `npuprof revert --repo {}`", report.repo),
        }
    );
    s
}

/// One run's verdict: a line per phase × rank, then (for the last run) its error findings.
fn write_verdict(s: &mut String, verdict: &VerifyReport, last: bool, run: &RunReport) {
    use npuprof_verify::Severity;
    use std::fmt::Write as _;
    let _ = writeln!(
        s,
        "    verify: {} error(s), {} warning(s)",
        verdict.count(Severity::Error),
        verdict.count(Severity::Warning)
    );
    for summary in &verdict.runs {
        let errors = verdict
            .findings
            .iter()
            .filter(|f| {
                f.severity == Severity::Error && f.phase == summary.phase && f.rank == summary.rank
            })
            .count();
        let _ = writeln!(
            s,
            "      {} rank {}: {}, steps {}",
            summary.phase.as_deref().unwrap_or("-"),
            summary
                .rank
                .map_or_else(|| "?".to_owned(), |r| r.to_string()),
            if errors == 0 {
                "ok".to_owned()
            } else {
                format!("{errors} error(s)")
            },
            plan::compact_steps(&summary.steps.kernel_details)
        );
    }
    let errors: Vec<_> = verdict
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    if !last {
        let mut codes: Vec<&str> = errors.iter().map(|f| f.code.as_str()).collect();
        codes.sort_unstable();
        codes.dedup();
        if !codes.is_empty() {
            let _ = writeln!(s, "      codes: {}", codes.join(", "));
        }
        return;
    }
    for finding in errors.iter().take(MAX_LISTED_ERRORS) {
        let _ = writeln!(s, "      {}: {}", finding.code.as_str(), finding.message);
        let _ = writeln!(s, "        next: {}", finding.next_action);
    }
    if errors.len() > MAX_LISTED_ERRORS {
        let _ = writeln!(
            s,
            "      ... and {} more (all in --json, or `npuprof verify {}`)",
            errors.len() - MAX_LISTED_ERRORS,
            run.result_dir.as_deref().unwrap_or("<result dir>")
        );
    }
}
