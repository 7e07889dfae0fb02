//! `npuprof compare BASE NEW`: did a change help? The step-time delta per phase and the kernel
//! deltas (by type and by exact name: added, removed, slower, faster, count changes) ranked by
//! their effect on the step, with a one-line verdict per phase.
//!
//! Output: the terminal report (at most 100 columns) or `--json` on stdout; `--html FILE` also
//! writes one self-contained page. Exit 0 when compared, 1 when malformed rows were skipped,
//! 2 when either side cannot be read or the two share no phase.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use anstyle::{AnsiColor, Style};
use npuprof_summary::compare::{Change, KernelDelta, PhaseComparison};
use npuprof_summary::units::{duration, fit, signed, signed_percent};
use npuprof_summary::{Comparison, Options};

use crate::args::{DEFAULT_TOP, ReportArgs};
use crate::exit::Exit;
use crate::output::print_json;

/// Arguments of `npuprof compare`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The base run (result, phase or run directory, as for `summary`).
    pub base: PathBuf,
    /// The new run to judge against the base [default: `.`; with --model/--yaml: that run
    /// config's newest result directory].
    #[arg(conflicts_with_all = ["model", "config"])]
    pub new: Option<PathBuf>,
    /// The repository and run config whose newest result is the new run.
    #[command(flatten)]
    pub target: crate::args::TargetArgs,
    /// Kernel deltas listed per phase in the terminal, by type and by name.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TOP)]
    pub top: usize,
    /// The phase and the forms of the report.
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Runs `npuprof compare`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let options = Options {
        phase: args.report.phase.clone(),
        rank: None,
        top: None,
    };
    let new = args.target.profile(args.new.as_deref())?;
    // Each error names its path, which says which side it is.
    let (base, new) = npuprof_summary::summarize_both(&args.base, &new, &options);
    let (base, new) = (base?, new?);
    let comparison = npuprof_summary::compare(&base, &new);
    if comparison.phases.is_empty() {
        anyhow::bail!(
            "the two runs share no phase ({}); pass --phase or directories of the same phase",
            comparison.unmatched.join(", ")
        );
    }
    args.report
        .write_html(|| npuprof_summary::html::render_comparison(&comparison))?;
    if args.report.json {
        print_json(&comparison)?;
    } else {
        let text = human(&comparison, args.top);
        crate::output::stdout().write_all(text.as_bytes())?;
    }
    Ok(if super::summary::warn_skipped(&comparison.warnings) {
        Exit::Findings
    } else {
        Exit::Ok
    })
}

fn human(comparison: &Comparison, top: usize) -> String {
    let mut out = String::new();
    crate::commands::summary::warning_lines(&mut out, &comparison.warnings);
    for (index, phase) in comparison.phases.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        phase_block(&mut out, phase, top);
    }
    for line in &comparison.unmatched {
        let _ = writeln!(out, "note: {line}");
    }
    out
}

fn phase_block(out: &mut String, phase: &PhaseComparison, top: usize) {
    let bold = Style::new().bold();
    let _ = writeln!(
        out,
        "{}{}{}",
        bold.render(),
        phase.verdict,
        bold.render_reset()
    );
    if let Some(step) = &phase.step {
        let _ = writeln!(
            out,
            "  step         {} → {} ({})",
            duration(step.base_us),
            duration(step.new_us),
            signed(step.delta_us)
        );
    }
    let k = &phase.kernel_time;
    match &phase.kernel_time_note {
        Some(note) => {
            let _ = writeln!(out, "  kernel time  unknown: {note}");
        }
        None => {
            let _ = writeln!(
                out,
                "  kernel time  {} → {} per step ({})",
                duration(k.base_us),
                duration(k.new_us),
                signed(k.delta_us)
            );
        }
    }
    if let Some(line) = phase.noise_line() {
        let _ = writeln!(out, "  noise        {line}");
    }
    rank_lines(out, phase);
    delta_table(out, "by type", &phase.by_type, top);
    delta_table(out, "by name", &phase.by_name, top);
}

/// One line per rank compared (when there is more than one, or the ranks differ).
fn rank_lines(out: &mut String, phase: &PhaseComparison) {
    let shown =
        phase.per_rank.len() > 1 || phase.per_rank.iter().any(|r| r.base_rank != r.new_rank);
    if !shown {
        return;
    }
    let name = |r: Option<u32>| r.map_or_else(|| "-".to_owned(), |r| r.to_string());
    for rank in &phase.per_rank {
        let label = if rank.base_rank == rank.new_rank {
            format!("rank {}", name(rank.new_rank))
        } else {
            format!("rank {}→{}", name(rank.base_rank), name(rank.new_rank))
        };
        let time = rank.step.as_ref().unwrap_or(&rank.kernel_time);
        let mut line = format!(
            "  {label:<12} {} → {} ({})",
            duration(time.base_us),
            duration(time.new_us),
            signed(time.delta_us)
        );
        if rank.step.is_none() {
            line.push_str(" kernel time");
        }
        if let Some(d) = &rank.largest {
            let _ = write!(line, "; most: {} in ", signed(d.delta_us));
            let room = 100usize.saturating_sub(line.chars().count());
            line.push_str(&fit(&d.key, room));
        }
        let _ = writeln!(out, "{line}");
    }
}

/// Slower and faster in red and green; added and removed in the same colours, underlined,
/// and their key marked `+`/`-` (a kernel that appeared is not one that got slower).
fn change_style(change: Change) -> Style {
    match change {
        Change::Slower => AnsiColor::Red.on_default(),
        Change::Faster => AnsiColor::Green.on_default(),
        Change::Added => AnsiColor::Red.on_default().underline(),
        Change::Removed => AnsiColor::Green.on_default().underline(),
        Change::Unchanged => Style::new(),
    }
}

/// The mark before a key: `+ ` added, `- ` removed, none otherwise.
fn change_mark(change: Change) -> &'static str {
    match change {
        Change::Added => "+ ",
        Change::Removed => "- ",
        Change::Slower | Change::Faster | Change::Unchanged => "",
    }
}

fn delta_table(out: &mut String, title: &str, deltas: &[KernelDelta], top: usize) {
    if deltas.is_empty() {
        return;
    }
    let dim = Style::new().dimmed();
    let _ = writeln!(
        out,
        "  {}{title:<10} {:>11} {:>7} {:<9} {:>13}  key{}",
        dim.render(),
        "Δ/step",
        "effect",
        "change",
        "calls/step",
        dim.render_reset()
    );
    // 2 + 10 + 1 + 11 + 1 + 7 + 1 + 9 + 1 + 13 + 2 = 58; the key gets the rest of 100.
    for d in deltas.iter().take(top) {
        let style = change_style(d.change);
        let calls = if d.base_count == d.new_count {
            format!("{:.2}", d.new_count)
        } else {
            format!("{:.2}→{:.2}", d.base_count, d.new_count)
        };
        let _ = writeln!(
            out,
            "  {:<10} {:>11} {:>7} {}{:<9}{} {:>13}  {}{}",
            "",
            signed(d.delta_us),
            d.effect.map(signed_percent).unwrap_or_default(),
            style.render(),
            d.change.as_str(),
            style.render_reset(),
            calls,
            change_mark(d.change),
            fit(&d.key, 42 - change_mark(d.change).len())
        );
    }
    if deltas.len() > top {
        let _ = writeln!(
            out,
            "  {:<10} … {} more (see --json)",
            "",
            deltas.len() - top
        );
    }
}
