//! The human summary of a collect: outcome, route, window, each run with its verdict per phase ×
//! rank and the error findings with their next actions, what became of the repository; then
//! what the profile says and what to run next.

use std::fmt::Write as _;
use std::path::Path;

use npuprof_verify::{Severity, VerifyReport};
use npuprof_workflow::collect::{CollectReport, Restored, RunReport};

use crate::commands::plan::compact_steps;

/// Error findings listed in the human summary (all of them are in `--json`).
const MAX_LISTED_ERRORS: usize = 8;

/// The summary of the workflow.
pub fn render(report: &CollectReport) -> String {
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
                compact_steps(&phase.window_steps),
                phase.active,
                phase.skip_first
            );
        }
    }
    for (index, run) in report.runs.iter().enumerate() {
        write_run(&mut s, index, run);
        if report.structure.is_some() && index + 1 == report.runs.len() && index > 0 {
            let _ = writeln!(
                s,
                "    (the structure window: with_modules=True, for breakdown)"
            );
        }
        if let Some(verdict) = report.verify.get(index) {
            write_verdict(
                &mut s,
                verdict,
                index + 1 == report.verify.len(),
                run.result_dir.as_deref(),
            );
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

/// What the profile says (`npuprof summary` of the timing run's result directory, and with
/// `--breakdown` the module tree of the structure run's), then what to run next; empty when no
/// run wrote a result.
pub fn profile(report: &CollectReport) -> String {
    let Some(dir) = report.timing_run().and_then(|r| r.result_dir.as_deref()) else {
        return String::new();
    };
    // The workflow's summary of the timing run when it made one (with `--breakdown`).
    let made;
    let summary = match &report.timing_summary {
        Some(Ok(summary)) => Ok(summary),
        Some(Err(err)) => Err(err.clone()),
        None => {
            made = npuprof_summary::summarize(Path::new(dir), &npuprof_summary::Options::default());
            made.as_ref().map_err(ToString::to_string)
        }
    };
    let mut text = match summary {
        Ok(summary) => format!("\n{}", crate::commands::summary::human(summary)),
        Err(err) => format!("\nnpuprof collect: no summary of the profile: {err}\n"),
    };
    let shown = npuprof_repository::shell::quote(&relative(dir));
    let _ = writeln!(
        text,
        "next: npuprof summary {shown} --html summary.html   (the full report, one self-contained page)"
    );
    let _ = writeln!(
        text,
        "next: npuprof advise {shown}   (what is wrong and what to do)"
    );
    let _ = writeln!(
        text,
        "next: npuprof breakdown {shown}   (where in the model the time goes: modules or layers)"
    );
    if let Some(dir) = report.structure_run().and_then(|r| r.result_dir.as_deref()) {
        text.push_str(&structure(dir));
        text.push_str(&tracer_cost(
            report.tracer_cost.as_deref().unwrap_or_default(),
        ));
    }
    text
}

/// What the Python tracer cost on this run (the report's `tracer_cost`: each run's median step
/// in the structure window against the timing window's).
fn tracer_cost(costs: &[npuprof_breakdown::tracer::TracerCost]) -> String {
    if costs.is_empty() {
        return "\nthe Python tracer's cost: not measured (no step times in both windows)\n"
            .to_owned();
    }
    let mut text = String::from(
        "\nthe Python tracer's cost on this run (median step, structure window vs timing window):\n",
    );
    for cost in costs {
        let run = match (&cost.phase, cost.rank) {
            (Some(phase), Some(rank)) => format!("{phase} rank {rank}"),
            (Some(phase), None) => phase.clone(),
            (None, Some(rank)) => format!("rank {rank}"),
            (None, None) => "the run".to_owned(),
        };
        let _ = writeln!(
            text,
            "  {run}: {:.3} ms vs {:.3} ms ({:+.1} %; {} vs {} steps)",
            cost.structure_p50_us / 1000.0,
            cost.timing_p50_us / 1000.0,
            cost.added() * 100.0,
            cost.structure_steps,
            cost.timing_steps
        );
    }
    text
}

/// The module tree of the structure run (`--breakdown`), three levels deep.
fn structure(dir: &str) -> String {
    let shown = npuprof_repository::shell::quote(&relative(dir));
    let mut text = match npuprof_breakdown::breakdown(
        Path::new(dir),
        &npuprof_breakdown::Options::default(),
    ) {
        Ok(result) => format!(
            "\nstructure window (with_modules=True): {shown}\n{}",
            crate::commands::breakdown::human(&result, 3)
        ),
        Err(err) => format!("\nnpuprof collect: no breakdown of the structure window: {err}\n"),
    };
    let _ = writeln!(
        text,
        "next: npuprof breakdown {shown} --html breakdown.html   (the whole module tree)"
    );
    text
}

/// One launch: how it ended, the errors it showed (first: they say why), what it left running,
/// where its results and its whole output are.
fn write_run(s: &mut String, index: usize, run: &RunReport) {
    let _ = writeln!(
        s,
        "  run {}: {} after {:.1}s{}{}",
        index + 1,
        run.ended(),
        run.duration_secs,
        if run.timed_out { " (timed out)" } else { "" },
        if run.interrupted {
            " (interrupted)"
        } else {
            ""
        }
    );
    for error in &run.launch_errors {
        let _ = writeln!(s, "    launch error in {}: {}", error.source, error.line);
    }
    for straggler in &run.stragglers {
        let _ = writeln!(
            s,
            "    stopped pid {} left running: {}",
            straggler.pid, straggler.command
        );
    }
    if let Some(dir) = &run.result_dir {
        let _ = writeln!(s, "    results: {}", relative(dir));
    }
    if let Some(log) = &run.output.log {
        let _ = writeln!(s, "    output: {log}");
    }
}

/// One run's verdict: a line per phase × rank, then (for the last run) its error findings;
/// `result_dir` is named in the hint at the findings not listed.
pub fn write_verdict(s: &mut String, verdict: &VerifyReport, last: bool, result_dir: Option<&str>) {
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
            compact_steps(&summary.steps.kernel_details)
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
            result_dir.unwrap_or("<result dir>")
        );
    }
}

/// `path` relative to the current directory when it is below it.
pub fn relative(path: &str) -> String {
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
