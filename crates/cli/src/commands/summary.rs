//! `npuprof summary`: what a profile says, per phase × rank — step times and their split, the
//! top kernels by device time (by name and by type), what bounds them, communication and
//! waiting, the balance across ranks — and what to open next.
//!
//! Output: the terminal report (at most 100 columns, notes and warnings wrapped to a narrower
//! terminal; colour only on a terminal, never with
//! `NO_COLOR`) or `--json` on stdout; `--html FILE` also writes one self-contained page, with
//! advise's findings on the same runs.
//! Exit 0 when summarised, 1 when malformed rows were skipped (named on stderr too), 2 when
//! nothing could be (missing path, no run directory, a file without a required column).
//!
//! `--merge A.json B.json ...` joins the `--json` summaries of several nodes into the whole
//! run's rank view (the ranks compared within their parallel groups, the pipeline stages, the
//! ranks missing or reported twice); exit 1 when a rank is missing or reported twice.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use anstyle::{AnsiColor, Style};
use npuprof_summary::comm::wait_phrase;
use npuprof_summary::pipe::{Bound, Pipe};
use npuprof_summary::ranks::rank_label;
use npuprof_summary::timeline::Mark;
use npuprof_summary::units::{bytes, duration, fit, percent, wrap};
use npuprof_summary::warnings::{Warning, WarningCode};
use npuprof_summary::{Options, PhaseRanks, RunSummary, Summary};

use crate::args::DEFAULT_TOP;
use crate::exit::Exit;
use crate::output::{REPORT_WIDTH, print_json, report_width};

/// Arguments of `npuprof summary`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// A recipes result directory (`prof/<phase>/…`), a phase directory, a `*_ascend_pt` run
    /// directory, or any parent of run directories [default: `.`; with --model/--yaml: that
    /// run config's newest result directory].
    #[arg(conflicts_with_all = ["model", "config"])]
    pub path: Option<PathBuf>,
    /// The repository and run config whose newest result to summarise.
    #[command(flatten)]
    pub target: crate::args::TargetArgs,
    /// Only this rank.
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,
    /// Kernel groups to keep per run, by name and by type.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TOP)]
    pub top: usize,
    /// Join the `summary --json` documents of several nodes into the whole run's rank view.
    #[arg(
        long,
        value_name = "SUMMARY",
        num_args = 1..,
        conflicts_with_all = ["path", "model", "config", "rank", "html"]
    )]
    pub merge: Vec<PathBuf>,
    /// The phase and the forms of the report.
    #[command(flatten)]
    pub report: crate::args::ReportArgs,
}

/// Runs `npuprof summary`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    if !args.merge.is_empty() {
        return run_merge(&args);
    }
    let options = Options {
        phase: args.report.phase.clone(),
        rank: args.rank,
        top: Some(args.top),
    };
    let path = args.target.profile(args.path.as_deref())?;
    let summary = npuprof_summary::summarize(&path, &options)?;
    args.report
        .write_html(|| page_with_advice(&summary, &path, &options))?;
    if args.report.json {
        print_json(&summary)?;
    } else {
        crate::output::stdout().write_all(human(&summary).as_bytes())?;
    }
    Ok(if warn_skipped(&summary.warnings) {
        Exit::Findings
    } else {
        Exit::Ok
    })
}

/// `npuprof summary --merge`: every document read first (any unreadable one is an error),
/// then joined.
fn run_merge(args: &Args) -> anyhow::Result<Exit> {
    let nodes = args
        .merge
        .iter()
        .map(|p| npuprof_summary::merge::read_node(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut merged = npuprof_summary::merge::merge(&nodes);
    if let Some(phase) = &args.report.phase {
        merged.ranks.retain(|r| r.phase.as_ref() == Some(phase));
        merged.coverage.retain(|c| c.phase.as_ref() == Some(phase));
        anyhow::ensure!(
            !merged.ranks.is_empty(),
            "no document has the phase {phase:?}"
        );
    }
    if args.report.json {
        print_json(&merged)?;
    } else {
        crate::output::stdout().write_all(human_merged(&merged).as_bytes())?;
    }
    Ok(if merged.incomplete() {
        Exit::Findings
    } else {
        Exit::Ok
    })
}

/// Rank sentences printed per phase of a merge; the rest are in `--json`.
const MERGED_LINES: usize = 24;

/// The terminal report of a merge: the nodes, then per phase the coverage and the rank
/// sentences (stragglers first).
fn human_merged(merged: &npuprof_summary::merge::MergedSummary) -> String {
    use npuprof_summary::merge::{WorldSizeSource, rank_ranges};
    let mut out = String::new();
    let _ = writeln!(out, "merged {} node summaries", merged.nodes.len());
    for node in &merged.nodes {
        let _ = writeln!(
            out,
            "  {}: ranks {} ({})",
            node.report,
            rank_ranges(&node.ranks),
            node.path
        );
    }
    for (phase, coverage) in merged.ranks.iter().zip(&merged.coverage) {
        let name = phase.phase.as_deref().unwrap_or("(no phase)");
        let world = match coverage.world_size_source {
            WorldSizeSource::HighestRank => {
                format!(
                    " of at least {} (no document records the world size)",
                    coverage.world_size
                )
            }
            _ => format!(" of {}", coverage.world_size),
        };
        let _ = writeln!(
            out,
            "\n{}phase {name}{}: {} ranks{world} present ({})",
            bold().render(),
            bold().render_reset(),
            coverage.ranks_present.len(),
            rank_ranges(&coverage.ranks_present)
        );
        if !coverage.ranks_missing.is_empty() {
            let _ = writeln!(
                out,
                "    missing: ranks {} (no document reports them)",
                rank_ranges(&coverage.ranks_missing)
            );
        }
        if !coverage.ranks_duplicated.is_empty() {
            let _ = writeln!(
                out,
                "    reported twice: ranks {} (the first document's are compared)",
                rank_ranges(&coverage.ranks_duplicated)
            );
        }
        let mut sentences = npuprof_summary::ranks::rank_sentences(phase);
        // Stragglers and stages before the balanced groups.
        sentences.sort_by_key(|s| s.contains("no straggler"));
        let more = sentences.len().saturating_sub(MERGED_LINES);
        sentences.truncate(MERGED_LINES);
        for text in sentences {
            for (i, line) in wrap(&text, report_width() - 6).iter().enumerate() {
                let lead = if i == 0 { "    " } else { "      " };
                let _ = writeln!(out, "{lead}{line}");
            }
        }
        if more > 0 {
            let _ = writeln!(out, "    … {more} more groups (see --json)");
        }
    }
    out
}

/// The summary page with advise's findings and breakdown's tree or layers on the same runs (the
/// same phase and rank) before the ranks and runs; when either cannot read them, a note says why.
fn page_with_advice(summary: &Summary, path: &std::path::Path, options: &Options) -> String {
    let advice = npuprof_advise::advise(
        path,
        &npuprof_advise::Options {
            phase: options.phase.clone(),
            rank: options.rank,
            top: crate::args::DEFAULT_EVIDENCE,
        },
    );
    let breakdown = npuprof_breakdown::breakdown(
        path,
        &npuprof_breakdown::Options {
            phase: options.phase.clone(),
            rank: options.rank,
            skill: None,
        },
    );
    let marks = advice.as_ref().map(gap_marks).unwrap_or_default();
    npuprof_summary::html::render_summary_marked(summary, &marks, |out| {
        match &advice {
            Ok(advice) => npuprof_advise::html::sections(out, advice),
            Err(err) => {
                let _ = write!(
                    out,
                    "<p class=\"note\">no advice: {}</p>",
                    npuprof_summary::html::escape(&format!("{err:#}"))
                );
            }
        }
        // Where in the model the time goes (`npuprof breakdown`), on the same runs.
        match &breakdown {
            Ok(breakdown) => npuprof_breakdown::html::sections(out, breakdown),
            Err(err) => {
                let _ = write!(
                    out,
                    "<p class=\"note\">no breakdown: {}</p>",
                    npuprof_summary::html::escape(&format!("{err:#}"))
                );
            }
        }
    })
}

/// The spans advise's evidence places on the device timeline (the gaps it names), to mark on
/// each run's timeline strip.
fn gap_marks(advice: &npuprof_advise::Advice) -> Vec<Mark> {
    advice
        .findings
        .iter()
        .flat_map(|f| f.evidence.iter().map(move |e| (f, e)))
        .filter_map(|(finding, evidence)| {
            Some(Mark {
                dir: finding.dir.clone()?,
                start_us: evidence.at_us?,
                length_us: evidence.time_us?,
                label: format!(
                    "{}: {} ({}, {})",
                    finding.code.as_str(),
                    evidence.detail,
                    evidence.label,
                    duration(evidence.time_us?)
                ),
            })
        })
        .collect()
}

/// The `skipped-rows` warnings also on stderr (under `--json` too); whether there were any:
/// the command then exits 1, its figures those of the other rows.
pub(crate) fn warn_skipped(warnings: &[Warning]) -> bool {
    let mut any = false;
    for w in warnings
        .iter()
        .filter(|w| w.code == WarningCode::SkippedRows)
    {
        errln!("warning: {}", w.message);
        any = true;
    }
    any
}

/// Kernel groups listed per run in the terminal.
const TERMINAL_ROWS: usize = 10;

fn bold() -> Style {
    Style::new().bold()
}

fn dim() -> Style {
    Style::new().dimmed()
}

/// The width of the kernel table's core column: the longest short name (`MIX_AIC`, `MIX_AIV`).
const CORE_WIDTH: usize = 7;

/// The short name of an `Accelerator Core` (`AI_CORE`, `AI_VECTOR_CORE`, `MIX_AIC`, `MIX_AIV`,
/// `AI_CPU`, `HCCL`, …), at most [`CORE_WIDTH`] characters.
fn core(core: &str) -> String {
    match core {
        "AI_CORE" => "AIC".to_owned(),
        "AI_VECTOR_CORE" => "AIV".to_owned(),
        other => fit(other, CORE_WIDTH),
    }
}

/// The terminal report of a summary (also printed at the end of `collect`).
pub fn human(summary: &Summary) -> String {
    let mut out = String::new();
    warning_lines(&mut out, &summary.warnings);
    for run in &summary.runs {
        run_block(&mut out, run);
    }
    ranks_block(&mut out, &summary.ranks);
    let _ = writeln!(out, "{}open next{}", bold().render(), bold().render_reset());
    for step in &summary.next {
        let _ = writeln!(out, "  {}", step.action);
        let _ = writeln!(
            out,
            "    {}{}{}",
            dim().render(),
            step.what,
            dim().render_reset()
        );
    }
    out
}

/// The warnings, one line each (`warning[code]: message`), before anything they qualify.
pub(crate) fn warning_lines(out: &mut String, warnings: &[Warning]) {
    let style = AnsiColor::Yellow.on_default().bold();
    for w in warnings {
        let code = w.code.as_str();
        // `warning[code]: ` then the message, continued two columns in.
        let first = report_width().saturating_sub(code.len() + 11);
        let lines = wrap(&w.message, first.min(report_width() - 2));
        let (head, rest) = lines
            .split_first()
            .map_or(("", &[][..]), |(h, r)| (h.as_str(), r));
        let _ = writeln!(
            out,
            "{}warning[{code}]{}: {head}",
            style.render(),
            style.render_reset(),
        );
        for line in wrap(&rest.join(" "), report_width() - 2)
            .iter()
            .filter(|_| !rest.is_empty())
        {
            let _ = writeln!(out, "  {line}");
        }
    }
}

fn run_block(out: &mut String, run: &RunSummary) {
    let title = format!(
        "{} · {}",
        run.phase.as_deref().unwrap_or("run"),
        rank_label(run.rank)
    );
    let dir = fit(
        &run.dir,
        report_width().saturating_sub(title.chars().count() + 3),
    );
    let _ = writeln!(
        out,
        "{}{title}{}   {dir}",
        bold().render(),
        bold().render_reset()
    );
    if let Some(stats) = &run.step_stats {
        let _ = writeln!(
            out,
            "  steps   {} recorded: mean {}, p50 {}, max {}",
            stats.count,
            duration(stats.mean_us),
            duration(stats.p50_us),
            duration(stats.max_us)
        );
    }
    if let Some(split) = &run.time_split {
        let overlapped = split
            .overlapped
            .map(|o| format!(" (overlapped {})", percent(o)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  split   computing {}, communication not overlapped {}, free {}{overlapped}",
            percent(split.computing),
            percent(split.communication_not_overlapped),
            percent(split.free)
        );
    }
    if let Some(comm) = &run.communication {
        let _ = writeln!(
            out,
            "  comm    {} ops, {}; {}; transit {}",
            comm.ops,
            duration(comm.elapse_us),
            wait_phrase(comm.wait_us, comm.elapse_us),
            duration(comm.transit_us)
        );
    }
    if let Some(pipe) = &run.pipe {
        let shares: Vec<String> = Pipe::ALL
            .iter()
            .map(|p| format!("{} {}", p.as_str(), percent(pipe.ratios.get(*p))))
            .collect();
        let text = format!(
            "{} (over {} of kernel time)",
            shares.join(", "),
            percent(pipe.measured_share)
        );
        // Seven pipes: wrapped at spaces, continued under the text.
        for (i, line) in wrap(&text, report_width() - 10).iter().enumerate() {
            let lead = if i == 0 { "  pipes   " } else { "          " };
            let _ = writeln!(out, "{lead}{line}");
        }
    }
    kernel_table(out, run);
    type_table(out, run);
    memory_lines(out, run);
    for note in &run.notes {
        // Wrapped at spaces, continued under the text: never cut mid-sentence.
        for (i, line) in wrap(note, report_width() - 8).iter().enumerate() {
            let lead = if i == 0 { "  note: " } else { "        " };
            let _ = writeln!(out, "{lead}{line}");
        }
    }
    out.push('\n');
}

fn kernel_table(out: &mut String, run: &RunSummary) {
    let Some(totals) = &run.kernels else { return };
    let _ = writeln!(
        out,
        "  kernels {} rows, {} device time, {} names{}",
        totals.rows,
        duration(totals.total_us),
        totals.distinct_names,
        if totals.capped {
            " (capped: the rest as (other))"
        } else {
            ""
        }
    );
    if run.top_kernels.is_empty() {
        return;
    }
    // 2 + 10 + 1 + 6 + 1 + 6 + 1 + 6 + 1 + CORE_WIDTH + 1 + 16 + 1; the name gets the rest.
    let name_width = REPORT_WIDTH - 52 - CORE_WIDTH;
    let _ = writeln!(
        out,
        "  {}{:>10} {:>6} {:>6} {:<6} {:<CORE_WIDTH$} {:<16} name{}",
        dim().render(),
        "total",
        "share",
        "count",
        "bound",
        "core",
        "type",
        dim().render_reset()
    );
    for k in run.top_kernels.iter().take(TERMINAL_ROWS) {
        let _ = writeln!(
            out,
            "  {:>10} {:>6} {:>6} {:<6} {:<CORE_WIDTH$} {:<16} {}",
            duration(k.total_us),
            percent(k.share),
            k.count,
            k.bound.map_or("-", Bound::label),
            core(&k.core),
            fit(&k.kind, 16),
            fit(&k.name, name_width)
        );
    }
}

/// Holders named on the terminal's memory line.
const TERMINAL_HOLDERS: usize = 3;

/// The run's memory peak, its reserve and who holds it, wrapped under `memory`.
fn memory_lines(out: &mut String, run: &RunSummary) {
    let Some(memory) = &run.memory else { return };
    let Some(peak) = &memory.peak else {
        labelled(out, "memory", &memory.missing.join("; "));
        return;
    };
    let first = memory.curve.first().map_or(peak.at_us, |p| p.at_us);
    let mut text = format!(
        "peak {} allocated ({}) at +{} of the record",
        bytes(peak.allocated_bytes),
        memory.component.as_deref().unwrap_or("allocator"),
        duration(peak.at_us - first)
    );
    if let (Some(reserved), Some(headroom)) = (peak.reserved_bytes, memory.headroom_bytes) {
        let _ = write!(
            text,
            ", {} reserved ({} headroom)",
            bytes(reserved),
            bytes(headroom)
        );
    }
    if let Some(app) = memory.app_reserved_max_bytes {
        let _ = write!(text, "; process {} on the device", bytes(app));
    }
    if !memory.holders.is_empty() {
        let named: Vec<String> = memory
            .holders
            .iter()
            .take(TERMINAL_HOLDERS)
            .map(|h| format!("{} {}", h.name, bytes(h.size_bytes)))
            .collect();
        let _ = write!(
            text,
            "; held at the peak by {} operator allocations ({}), largest {}",
            memory.holders_alive,
            bytes(memory.held_bytes),
            named.join(", ")
        );
    }
    labelled(out, "memory", &text);
}

/// `text` under an 8-column `label`, wrapped at spaces and continued under the text.
fn labelled(out: &mut String, label: &str, text: &str) {
    for (i, line) in wrap(text, report_width() - 10).iter().enumerate() {
        let lead = if i == 0 { label } else { "" };
        let _ = writeln!(out, "  {lead:<8}{line}");
    }
}

fn type_table(out: &mut String, run: &RunSummary) {
    if run.by_type.is_empty() {
        return;
    }
    let _ = writeln!(out, "  {}by type{}", dim().render(), dim().render_reset());
    let rows: Vec<String> = run
        .by_type
        .iter()
        .take(TERMINAL_ROWS)
        .map(|t| {
            format!(
                "{:<22} {:>9} {:>6} {:>6}",
                fit(&t.kind, 22),
                duration(t.total_us),
                format!("×{}", t.count),
                percent(t.share)
            )
        })
        .collect();
    // Two columns of 48 characters.
    for pair in rows.chunks(2) {
        let left = format!("{:<48}", pair[0]);
        let right = pair.get(1).map_or("", String::as_str);
        let _ = writeln!(out, "  {}", format!("{left}{right}").trim_end());
    }
}

fn ranks_block(out: &mut String, ranks: &[PhaseRanks]) {
    let _ = writeln!(out, "{}ranks{}", bold().render(), bold().render_reset());
    for phase in ranks {
        let name = phase.phase.as_deref().unwrap_or("run");
        match (phase.slowest_rank, phase.imbalance_ratio) {
            (Some(rank), Some(ratio)) => {
                let _ = writeln!(
                    out,
                    "  {name}: slowest rank {rank}, imbalance {ratio:.3} (slowest/fastest mean step)"
                );
            }
            _ if phase.per_rank.is_empty() => {
                let _ = writeln!(out, "  {name}: no step times");
            }
            _ => {
                let _ = writeln!(out, "  {name}:");
            }
        }
        rank_lines(out, phase);
        straggler_line(out, phase);
    }
    out.push('\n');
}

/// Who makes the others wait, per group of ranks compared (summary's sentences): the
/// straggler and the rank that waits most, or that the ranks are within the threshold; and the
/// pipeline stages.
fn straggler_line(out: &mut String, phase: &PhaseRanks) {
    for text in npuprof_summary::ranks::rank_sentences(phase) {
        for (i, line) in wrap(&text, report_width() - 6).iter().enumerate() {
            let lead = if i == 0 { "    " } else { "      " };
            let _ = writeln!(out, "{lead}{line}");
        }
    }
}

/// The ranks' mean step times, several per line within [`report_width`], the slowest in red.
fn rank_lines(out: &mut String, phase: &PhaseRanks) {
    let red = AnsiColor::Red.on_default().bold();
    let mut used = 0;
    for r in &phase.per_rank {
        let label = r
            .rank
            .map_or_else(|| fit(&r.dir, 30), |n| format!("rank {n}"));
        let item = format!("{label} {}", duration(r.mean_step_us));
        let width = item.chars().count() + 2;
        if used > 0 && used + width > report_width() - 4 {
            out.push('\n');
            used = 0;
        }
        out.push_str(if used == 0 { "    " } else { "  " });
        // Red only past the anchor's 5 % threshold: a 1 % lead is not a slow rank.
        let slowest = phase.imbalanced && r.rank.is_some() && r.rank == phase.slowest_rank;
        if slowest {
            let _ = write!(out, "{}{item}{}", red.render(), red.render_reset());
        } else {
            out.push_str(&item);
        }
        used += width;
    }
    if used > 0 {
        out.push('\n');
    }
}
