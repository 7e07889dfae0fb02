//! `npuprof verify`: judge what a profiling run produced.
//!
//! Output: the human report (a phase × rank table, then the findings, errors first, each with
//! its evidence and next action) is the command's data and goes to stdout; a progress bar goes
//! to stderr only when stderr is a terminal. With `--json` the report goes to stdout.
//! Exit 0 when no finding is an error, 1 when one is, 2 when nothing could be verified (missing
//! path, no run directory below it, `--model` without a result directory, a report `--merge`
//! cannot read).
//!
//! `--merge A.json B.json ...` joins the `--json` reports of several nodes into the whole-run
//! verdict (every rank exactly once per phase, every phase covered, consistent steps).

use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;

use anstyle::{AnsiColor, Style};
use npuprof_verify::merge::{self, MergedReport};
use npuprof_verify::report::RunSummary;
use npuprof_verify::{Code, Finding, Options, Progress, Severity, VerifyReport};

use crate::args::PhaseArg;

use crate::exit::Exit;
use crate::output::print_json;

/// Arguments of `npuprof verify`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// A recipes result directory (`models/M/res/<date>/<case>/`), a phase directory, a
    /// `*_ascend_pt` run directory, or any parent of run directories.
    #[arg(conflicts_with_all = ["model", "config", "merge"])]
    pub path: Option<PathBuf>,
    /// The repository and run config whose newest result to verify (named as the launcher
    /// names it: `res/<YYYYMMDD>/<model_name>_<yaml stem>`).
    #[command(flatten)]
    pub target: crate::args::TargetArgs,
    /// Phases a result directory must contain.
    #[arg(long, value_enum, default_value = "both")]
    pub phase: PhaseArg,
    /// Override the schedule's decode `active` when computing the recorded steps.
    // `--expect-active` is its older name, kept as a hidden alias.
    #[arg(long, alias = "expect-active", value_name = "N")]
    pub decode_active: Option<u64>,
    /// Ranks of the whole run, all required per phase (default: the log_<rank>.log files
    /// require their ranks; parallel_group_info only names the run's size, a subset is normal).
    /// At most 65536.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(npuprof_verify::MAX_RANKS)))]
    pub ranks: Option<u32>,
    /// The job's captured stdout, where torch_npu prints `Task [X] run failed.` (repeatable;
    /// cann-recipes' `log_<rank>.log` in a result directory is read without it).
    #[arg(long = "log", value_name = "FILE", conflicts_with = "merge")]
    pub logs: Vec<PathBuf>,
    /// Join the `--json` reports of several nodes into the whole-run verdict.
    #[arg(long, value_name = "REPORT", num_args = 1.., conflicts_with = "model")]
    pub merge: Vec<PathBuf>,
    /// Judge the output as this serving engine's (e.g. `vllm-ascend`): no schedule, one run
    /// directory per rank per start/stop pair [default: when run directories are named by a
    /// definition's rank suffix and have no schedule].
    #[arg(long, value_name = "ID", value_parser = crate::args::engine_id, conflicts_with = "merge")]
    pub engine: Option<String>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A progress bar on stderr, drawn only when stderr is a terminal.
struct Bar(indicatif::ProgressBar);

impl Progress for Bar {
    fn start(&self, total_bytes: u64) {
        self.0.set_length(total_bytes);
    }
    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }
}

fn progress_bar() -> Bar {
    if !std::io::stderr().is_terminal() {
        return Bar(indicatif::ProgressBar::hidden());
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "verifying {bar:30} {bytes}/{total_bytes} {bytes_per_sec} {eta}",
    ) {
        bar.set_style(style);
    }
    Bar(bar)
}

/// Runs verify without printing (for `collect`). A progress bar appears on a terminal.
pub fn execute(args: &Args) -> anyhow::Result<VerifyReport> {
    let path = args.target.profile(args.path.as_deref())?;
    let opts = Options {
        path,
        phases: args.phase.into(),
        expect_active: args.decode_active,
        world_size: args.ranks,
        logs: args.logs.clone(),
        serving: npuprof_workflow::engine::verify_serving(
            args.engine
                .as_deref()
                .and_then(npuprof_repository::engine::EngineDefinition::by_id),
        ),
        // A window asked for is collect's to know; verify judges by what profiler_info records
        // (and --decode-active).
        requested: Vec::new(),
    };
    let bar = progress_bar();
    let report = npuprof_verify::verify(&opts, &bar);
    bar.0.finish_and_clear();
    Ok(report?)
}

/// Runs `npuprof verify`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    if !args.merge.is_empty() {
        return run_merge(&args);
    }
    let report = execute(&args)?;
    if args.json {
        print_json(&report)?;
    } else {
        let mut out = crate::output::stdout();
        out.write_all(human(&report).as_bytes())?;
    }
    Ok(if report.ok { Exit::Ok } else { Exit::Findings })
}

/// `npuprof verify --merge`: read every report first (any unreadable one is an error), then
/// print the whole-run verdict.
fn run_merge(args: &Args) -> anyhow::Result<Exit> {
    let nodes = args
        .merge
        .iter()
        .map(|p| merge::read_report(p))
        .collect::<Result<Vec<_>, _>>()?;
    let merged = merge::merge(&nodes, args.ranks);
    if args.json {
        print_json(&merged)?;
    } else {
        let mut out = anstream::stdout().lock();
        out.write_all(human_merged(&merged).as_bytes())?;
    }
    Ok(if merged.ok { Exit::Ok } else { Exit::Findings })
}

/// The human whole-run verdict: nodes, per-phase coverage, findings.
fn human_merged(m: &MergedReport) -> String {
    let mut s = String::new();
    let source = serde_json::to_value(m.world_size_source)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "merge {} node report(s); world size {} (from {source})",
        m.nodes.len(),
        m.world_size
    );
    for n in &m.nodes {
        let _ = writeln!(
            s,
            "  {}: {} — ranks {} ({})",
            n.report,
            n.target,
            list_ranks(&n.ranks),
            if n.ok { "ok" } else { "FAILED" }
        );
    }
    let _ = writeln!(s);
    for p in &m.phases {
        let _ = writeln!(
            s,
            "  phase {}: {} of {} rank(s) present; missing: {}{}; duplicated: {}; step groups: {}",
            p.phase.as_deref().unwrap_or("-"),
            p.ranks_present.len(),
            m.world_size,
            list_ranks(&p.ranks_missing),
            match p.runs_of_unknown_rank {
                0 => String::new(),
                n => format!(" ({n} run(s) of unknown rank)"),
            },
            list_ranks(&p.ranks_duplicated),
            p.step_groups.len()
        );
    }
    let _ = writeln!(s);
    write_findings(&mut s, &m.findings);
    let count = |sev| m.findings.iter().filter(|f| f.severity == sev).count();
    let _ = writeln!(
        s,
        "{}: {} node(s), {} error(s), {} warning(s), {} info",
        if m.ok { "ok" } else { "FAILED" },
        m.nodes.len(),
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info)
    );
    s
}

fn list_ranks(ranks: &[u32]) -> String {
    if ranks.is_empty() {
        return "-".to_owned();
    }
    ranks
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The run directory's own name (the last component of its path).
fn run_name(dir: &str) -> String {
    std::path::Path::new(dir).file_name().map_or_else(
        || dir.to_owned(),
        |name| name.to_string_lossy().into_owned(),
    )
}

fn opt<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

fn trace_cell(run: &RunSummary) -> String {
    match &run.artifacts.trace_view {
        Some(t) => format!("{} ({} ev)", t.state, t.events),
        None => "absent".to_owned(),
    }
}

fn kernel_cell(run: &RunSummary) -> String {
    match &run.artifacts.kernel_details {
        Some(k) => format!("{} {} cols, {} rows", k.header, k.columns, k.rows),
        None => "absent".to_owned(),
    }
}

fn list(steps: &[u64]) -> String {
    match steps {
        [] => "-".to_owned(),
        [one] => one.to_string(),
        [first, .., last] if steps.len() > 3 => format!("{first}..{last} ({})", steps.len()),
        _ => steps
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
    }
}

fn steps_cell(run: &RunSummary) -> String {
    let expected = run
        .steps
        .expected
        .as_deref()
        .map_or_else(|| "?".to_owned(), list);
    // A db export records its steps in the profiler database, not in kernel_details.csv.
    let recorded = if run.steps.kernel_details.is_empty() && !run.steps.db.is_empty() {
        format!("{} in db", list(&run.steps.db))
    } else {
        list(&run.steps.kernel_details)
    };
    format!("{recorded} (exp {expected})")
}

fn artifacts_cell(run: &RunSummary) -> String {
    if !run.artifacts.output_dir {
        return "no output dir".to_owned();
    }
    let csv = run
        .artifacts
        .files
        .iter()
        .filter(|f| f.ends_with(".csv"))
        .count();
    format!("{} files, {csv} csv", run.artifacts.files.len())
}

fn severity_style(severity: Severity) -> Style {
    match severity {
        Severity::Error => AnsiColor::Red.on_default().bold(),
        Severity::Warning => AnsiColor::Yellow.on_default().bold(),
        Severity::Info => AnsiColor::Cyan.on_default(),
    }
}

/// The human report.
fn human(report: &VerifyReport) -> String {
    let mut s = String::new();
    let t = &report.target;
    let kind = serde_json::to_value(t.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let present: std::collections::BTreeSet<u32> =
        report.runs.iter().filter_map(|r| r.rank).collect();
    let present: Vec<u32> = present.into_iter().collect();
    let _ = writeln!(
        s,
        "verify {} ({kind}; phases: {}; ranks: {} of {}{})",
        t.path,
        if t.phases.is_empty() {
            "-".to_owned()
        } else {
            t.phases.join(", ")
        },
        list_ranks(&present),
        t.expected_ranks
            .map_or_else(|| "?".to_owned(), |n| n.to_string()),
        if t.whole_run { ", all required" } else { "" }
    );
    if !report.runs.is_empty() {
        // Re-runs leave several run directories of one phase and rank: name each row's.
        let keys: Vec<(Option<&str>, Option<u32>)> = report
            .runs
            .iter()
            .map(|r| (r.phase.as_deref(), r.rank))
            .collect();
        let repeated = keys
            .iter()
            .enumerate()
            .any(|(i, key)| keys[..i].contains(key));
        let mut header = vec![
            "phase",
            "rank",
            "trace_view",
            "kernel_details",
            "steps",
            "artifacts",
            "level",
        ];
        if repeated {
            header.push("run");
        }
        let rows: Vec<Vec<String>> = report
            .runs
            .iter()
            .map(|r| {
                let mut row = vec![
                    r.phase.clone().unwrap_or_else(|| "-".to_owned()),
                    opt(r.rank),
                    trace_cell(r),
                    kernel_cell(r),
                    steps_cell(r),
                    artifacts_cell(r),
                    r.level.clone().unwrap_or_else(|| "?".to_owned()),
                ];
                if repeated {
                    row.push(run_name(&r.dir));
                }
                row
            })
            .collect();
        let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut l = String::from(" ");
            for (i, cell) in cells.iter().enumerate() {
                let pad = widths[i] - cell.chars().count();
                l.push(' ');
                l.push_str(cell);
                if i + 1 < cells.len() {
                    l.push_str(&" ".repeat(pad + 1));
                }
            }
            l
        };
        let _ = writeln!(s);
        let header: Vec<String> = header.into_iter().map(str::to_owned).collect();
        let _ = writeln!(s, "{}", line(&header));
        for row in &rows {
            let _ = writeln!(s, "{}", line(row));
        }
    }
    let _ = writeln!(s);
    write_findings(&mut s, &report.findings);
    let (e, w, i) = (
        report.count(Severity::Error),
        report.count(Severity::Warning),
        report.count(Severity::Info),
    );
    let unknown = report.findings.iter().any(|f| {
        matches!(
            f.code,
            Code::ExpectationUnknown | Code::ProfilerInfoMissing | Code::WorldSizeUnknown
        )
    });
    let verdict = match (report.ok, unknown) {
        (false, _) => "FAILED",
        (true, true) => "ok (some expectations unknown, not checked)",
        (true, false) => "ok",
    };
    let _ = writeln!(
        s,
        "{verdict}: {} run(s), {e} error(s), {w} warning(s), {i} info",
        report.runs.len()
    );
    s
}

/// Each finding: severity, code and place, message, evidence, next action.
fn write_findings(s: &mut String, findings: &[Finding]) {
    for f in findings {
        let style = severity_style(f.severity);
        let place = match (&f.phase, f.rank) {
            (Some(p), Some(r)) => format!(" [{p} rank {r}]"),
            (Some(p), None) => format!(" [{p}]"),
            (None, Some(r)) => format!(" [rank {r}]"),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            s,
            "{style}{}{style:#}[{}]{place}: {}",
            f.severity.as_str(),
            f.code.as_str(),
            f.message
        );
        let evidence = f.evidence.display();
        if !evidence.is_empty() {
            let _ = writeln!(s, "  --> {evidence}");
        }
        let _ = writeln!(s, "  = next: {}", f.next_action);
    }
}
