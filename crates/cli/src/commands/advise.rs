//! `npuprof advise`: what is wrong with a profile and what to do, per phase × rank — each
//! finding with its code, evidence, time at stake per step and next action, sorted by time at
//! stake within each phase.
//!
//! Output: the terminal report (at most 100 columns; colour only on a terminal) or `--json` on
//! stdout; `--html FILE` also writes one self-contained page (summary's style). Exit 0 when nothing needs action (information alone), 1 with a warning or an error or skipped malformed rows, 2 when
//! nothing could be read.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use anstyle::Style;
use npuprof_advise::{Advice, Finding, Options};
use npuprof_summary::units::{self, duration, fit, percent};

use crate::exit::Exit;
use crate::output::{print_json, report_width};

/// Arguments of `npuprof advise`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// A recipes result directory (`prof/<phase>/…`), a phase directory, a `*_ascend_pt` run
    /// directory, or any parent of run directories [default: `.`; with --model/--yaml: that
    /// run config's newest result directory].
    #[arg(conflicts_with_all = ["model", "config"])]
    pub path: Option<PathBuf>,
    /// The repository and run config whose newest result to advise on.
    #[command(flatten)]
    pub target: crate::args::TargetArgs,
    /// Only this rank.
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,
    /// Evidence items per finding (kernels, gaps, ranks).
    #[arg(long, value_name = "N", default_value_t = crate::args::DEFAULT_EVIDENCE)]
    pub top: usize,
    /// The phase and the forms of the report.
    #[command(flatten)]
    pub report: crate::args::ReportArgs,
}

/// Runs `npuprof advise`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let options = Options {
        phase: args.report.phase.clone(),
        rank: args.rank,
        top: args.top,
    };
    let path = args.target.profile(args.path.as_deref())?;
    let advice = npuprof_advise::advise(&path, &options)?;
    args.report
        .write_html(|| npuprof_advise::html::render_advice(&advice))?;
    if args.report.json {
        print_json(&advice)?;
    } else {
        crate::output::stdout().write_all(human(&advice).as_bytes())?;
    }
    let skipped = super::summary::warn_skipped(&advice.warnings);
    // Exit 1 for what needs action (a warning or an error); information alone is no finding.
    let actionable = advice
        .findings
        .iter()
        .any(|f| f.severity <= npuprof_severity::Severity::Warning);
    Ok(if actionable || skipped {
        Exit::Findings
    } else {
        Exit::Ok
    })
}

fn bold() -> Style {
    Style::new().bold()
}

fn dim() -> Style {
    Style::new().dimmed()
}

/// The terminal report of the advice.
pub fn human(advice: &Advice) -> String {
    let mut out = String::new();
    super::summary::warning_lines(&mut out, &advice.warnings);
    let mut phase: Option<Option<&str>> = None;
    let mut number = 0;
    for finding in &advice.findings {
        if phase != Some(finding.phase.as_deref()) {
            phase = Some(finding.phase.as_deref());
            number = 0;
            let name = finding.phase.as_deref().unwrap_or("run");
            let count = advice
                .findings
                .iter()
                .filter(|f| f.phase == finding.phase)
                .count();
            let _ = writeln!(
                out,
                "{}{name}{}: {count} finding(s), largest time at stake first",
                bold().render(),
                bold().render_reset()
            );
        }
        number += 1;
        finding_block(&mut out, number, finding);
    }
    if advice.findings.is_empty() {
        let _ = writeln!(
            out,
            "no findings in {} run(s): nothing past the thresholds",
            advice.runs.len()
        );
    }
    for run in &advice.runs {
        for note in &run.notes {
            let lead = format!(
                "note ({} · {}): ",
                run.phase.as_deref().unwrap_or("run"),
                npuprof_summary::ranks::rank_label(run.rank)
            );
            // Wrapped, never cut: a note is a sentence to read whole.
            let _ = write!(out, "{}", dim().render());
            wrap(&mut out, &lead, note);
            let _ = write!(out, "{}", dim().render_reset());
        }
    }
    out
}

fn finding_block(out: &mut String, number: usize, finding: &Finding) {
    let head = format!(
        "{number:>2}. {:<7} {}",
        finding.severity.as_str(),
        finding.code.as_str()
    );
    let _ = writeln!(out, "{}{head}{}", bold().render(), bold().render_reset());
    wrap(out, "    ", &finding.title);
    let share = finding
        .at_stake_share
        .map_or_else(String::new, |s| format!(" ({} of the step)", percent(s)));
    let whose = match (finding.rank, &finding.dir) {
        (Some(rank), _) => format!("rank {rank}"),
        (None, Some(dir)) => dir.clone(),
        (None, None) => "ranks of the phase".to_owned(),
    };
    let _ = writeln!(
        out,
        "    {}at stake {} per step{share} · {whose}{}",
        dim().render(),
        duration(finding.at_stake_us),
        dim().render_reset()
    );
    for item in &finding.evidence {
        let time = item.time_us.map_or_else(String::new, duration);
        let share = item.share.map_or_else(String::new, percent);
        let count = item.count.map_or_else(String::new, |c| format!("×{c}"));
        let step = item.step.map_or_else(String::new, |s| format!("step {s} "));
        let line = format!(
            "      {time:>10} {share:>6} {count:>7}  {step}{}",
            item.label
        );
        let _ = writeln!(out, "{}", fit(line.trim_end(), report_width()));
        if !item.detail.is_empty() {
            wrap(out, &" ".repeat(30), &item.detail);
        }
    }
    wrap(out, "    do: ", &finding.action);
}

/// `text` after `lead`, wrapped at spaces to [`report_width`], continuation lines indented as
/// `lead`.
fn wrap(out: &mut String, lead: &str, text: &str) {
    let indent = " ".repeat(lead.chars().count());
    let width = report_width().saturating_sub(indent.len());
    for (i, line) in units::wrap(text, width).iter().enumerate() {
        let _ = writeln!(out, "{}{line}", if i == 0 { lead } else { &indent });
    }
}
