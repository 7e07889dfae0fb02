//! `npuprof patch` (path A): set the profiling window where the model's resolved target says it
//! lives (its profiler calls, factory defaults or class constants) and in its run config.
//!
//! `--dry-run` prints a `git apply`-compatible diff on stdout and changes nothing (exit 1 when
//! there are changes, 0 when there is nothing to change). Otherwise every changed file is written
//! through one journaled transaction (all or none; `npuprof revert` undoes it) and a summary goes
//! to stderr (exit 0). `--json` prints the report on stdout instead of the diff/summary.
//! Refusals (syntax errors, missing definitions, a config that cannot be patched as asked, a
//! target outside the repository) exit 2 and change nothing.

use std::fmt::Write as _;
use std::io::Write as _;

use anstyle::{AnsiColor, Style};
use npuprof_patch::target::{PatchRequest, TokenBudget};
use npuprof_repository::Target;
use npuprof_workflow::patch::{Mode, PatchReport};

use super::plan::compact_steps;
use crate::args::{TargetArgs, WindowArgs};
use crate::exit::Exit;
use crate::output::{print_json, stdout_colored};

/// Arguments of `npuprof patch`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The repository and run config.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The window.
    #[command(flatten)]
    pub window: WindowArgs,
    /// `auto` raises the token budget to the plan's minimum when lower; N sets it.
    #[arg(long, default_value = "auto", value_parser = parse_budget)]
    pub max_new_tokens: TokenBudget,
    /// Print the diff and change nothing (exit 1 when there are changes).
    #[arg(long)]
    pub dry_run: bool,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

fn parse_budget(value: &str) -> Result<TokenBudget, String> {
    use npuprof_patch::yaml::MAX_TOKEN_BUDGET;
    if value == "auto" {
        return Ok(TokenBudget::Auto);
    }
    match value.parse::<u64>() {
        Ok(n) if (1..=MAX_TOKEN_BUDGET).contains(&n) => Ok(TokenBudget::Set(n)),
        _ => Err(format!(
            "expected `auto` or a number of tokens from 1 to {MAX_TOKEN_BUDGET}, got `{value}`"
        )),
    }
}

/// Patches the target of `args` through the workflow's pipeline (the target resolved once
/// inside the transaction; the window asked for there, on a terminal).
pub fn execute(args: &Args, mode: Mode) -> anyhow::Result<PatchReport> {
    let settle = |target: &Target, request: &mut PatchRequest| -> anyhow::Result<()> {
        // A dry run changes nothing, so nothing needs to be asked first.
        if args.dry_run {
            return Ok(());
        }
        let mut window = args.window;
        window.settle(target, args.json, request)
    };
    args.target.with_request(|target| {
        let request = args
            .window
            .pipeline_request(target.clone(), args.max_new_tokens)?;
        Ok(npuprof_workflow::patch::run(&request, mode, settle)?.report)
    })
}

/// Runs `npuprof patch`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let mode = if args.dry_run {
        Mode::DryRun
    } else {
        Mode::Write
    };
    let report = execute(&args, mode)?;
    if args.json {
        print_json(&report)?;
    } else {
        if args.dry_run {
            let mut out = crate::output::stdout();
            for file in &report.files {
                out.write_all(colored_diff(&file.diff, stdout_colored()).as_bytes())?;
            }
        }
        anstream::stderr()
            .lock()
            .write_all(summary(&report, args.dry_run).as_bytes())?;
    }
    Ok(if args.dry_run && report.changed {
        Exit::Findings
    } else {
        Exit::Ok
    })
}

fn colored_diff(diff: &str, color: bool) -> String {
    if !color {
        return diff.to_owned();
    }
    let style = |line: &str| match line {
        l if l.starts_with("diff --git") || l.starts_with("--- ") || l.starts_with("+++ ") => {
            Style::new().bold()
        }
        l if l.starts_with("@@") => Style::new().fg_color(Some(AnsiColor::Cyan.into())),
        l if l.starts_with('+') => Style::new().fg_color(Some(AnsiColor::Green.into())),
        l if l.starts_with('-') => Style::new().fg_color(Some(AnsiColor::Red.into())),
        _ => Style::new(),
    };
    diff.split_inclusive('\n')
        .map(|line| {
            let body = line.trim_end_matches(['\n', '\r']);
            let s = style(body);
            format!("{s}{body}{s:#}{}", &line[body.len()..])
        })
        .collect()
}

/// The human summary (stderr).
fn summary(report: &PatchReport, dry_run: bool) -> String {
    let mut out = String::new();
    for file in &report.files {
        if file.changes.is_empty() {
            let _ = writeln!(out, "{}: nothing to change", file.path);
        }
        for change in &file.changes {
            let _ = writeln!(out, "{}: {change}", file.path);
        }
    }
    for phase in &report.plan.phases {
        let _ = writeln!(
            out,
            "{}: records steps {}; step() calls needed: {}; closes cleanly: {}",
            phase.phase.name(),
            compact_steps(&phase.window_steps),
            phase
                .min_step_calls
                .map_or_else(|| "unbounded".to_owned(), |c| c.to_string()),
            if phase.closes_cleanly { "yes" } else { "no" },
        );
    }
    for warning in &report.warnings {
        let _ = writeln!(out, "npuprof: warning: {warning}");
    }
    for shared in &report.shared {
        const LISTED: usize = 6;
        let mut names = shared.models[..shared.models.len().min(LISTED)].join(", ");
        if shared.models.len() > LISTED {
            names.push_str(", …");
        }
        let _ = writeln!(
            out,
            "note: {} is run by {} other model(s) too ({names}): their runs record with this \
             window until `npuprof revert` restores it",
            shared.path,
            shared.models.len()
        );
    }
    let _ = match (dry_run, report.changed) {
        (_, false) => writeln!(
            out,
            "nothing to change: the repository already has this window"
        ),
        (true, true) => writeln!(
            out,
            "dry run: nothing written; run again without --dry-run to apply"
        ),
        (false, true) => writeln!(out, "patched; `npuprof revert` restores the originals"),
    };
    out
}
