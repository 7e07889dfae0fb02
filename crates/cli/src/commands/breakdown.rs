//! `npuprof breakdown`: a profile broken down to the model's structure, per phase × rank —
//! the `nn.Module` tree when the trace recorded module calls (exact: device time per module,
//! and a ledger of what no module owns), else the layers inferred from the kernel stream
//! (method and confidence stated).
//!
//! Output: the terminal report (a tree; `--depth N` limits it) or `--json` on stdout; `--html
//! FILE` also writes one self-contained page (an icicle of the tree, a strip of the layers, the
//! rank matrices). Exit 0
//! when broken down, 2 when nothing could be read (missing path, no run directory, a cut
//! trace, a kernel table without a required column).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anstyle::Style;
use npuprof_breakdown::compare::Waterfall;
use npuprof_breakdown::layers::{Direction, Layers, Region, RegionRole};
use npuprof_breakdown::matrix::Matrix;
use npuprof_breakdown::skill::{self, SpecError};
use npuprof_breakdown::structure::StructureBreakdown;
use npuprof_breakdown::{Breakdown, Confidence, Method, Options, RunBreakdown, SkillFiles};
use npuprof_summary::ranks::rank_label;
use npuprof_summary::units::{duration, fit, percent, signed, wrap};

use crate::exit::Exit;
use crate::failure::{ErrorCode, Failure};
use crate::output::{print_json, report_width};

/// Arguments of `npuprof breakdown`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// A recipes result directory (`prof/<phase>/…`), a phase directory, a `*_ascend_pt` run
    /// directory, or any parent of run directories [default: `.`; with --model/--yaml: that
    /// run config's newest result directory].
    #[arg(conflicts_with_all = ["model", "config"])]
    pub path: Option<PathBuf>,
    /// A second profile: print the waterfall of the per-step time from PATH (the base) to NEW,
    /// node by node (module trees cut at --depth, default 2).
    #[arg(value_name = "NEW", requires = "path", conflicts_with = "html")]
    pub new: Option<PathBuf>,
    /// The repository and run config whose newest result to break down.
    #[command(flatten)]
    pub target: crate::args::TargetArgs,
    /// Only this rank.
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,
    /// The cann-recipes-infer skill `model-infer-perf-breakdown`'s model structure
    /// (`structure_spec.json`): break every step of every run down into its component
    /// instances (windows: the inferred layers, in order against the structure's layers).
    #[arg(long, value_name = "FILE", conflicts_with = "new")]
    pub structure: Option<PathBuf>,
    /// The skill's cluster rules (`<network>_spec.json`): per component, the wall of each
    /// cluster of kernels, bubble and TOTAL as the skill computes them.
    #[arg(long, value_name = "FILE", requires = "structure")]
    pub rules: Option<PathBuf>,
    /// Module tree levels shown in the terminal report [default: all].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub depth: Option<u32>,
    /// The phase and the forms of the report (JSON: every level).
    #[command(flatten)]
    pub report: crate::args::ReportArgs,
}

/// Runs `npuprof breakdown`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let options = Options {
        phase: args.report.phase.clone(),
        rank: args.rank,
        skill: skill_files(args.structure.as_deref(), args.rules.as_deref())?,
    };
    if let (Some(base), Some(new)) = (&args.path, &args.new) {
        let depth = args.depth.map_or(2, |d| d as usize);
        let fall = npuprof_breakdown::compare::compare(base, new, &options, depth)?;
        if args.report.json {
            print_json(&fall)?;
        } else {
            crate::output::stdout().write_all(waterfall(&fall).as_bytes())?;
        }
        return Ok(Exit::Ok);
    }
    let path = args.target.profile(args.path.as_deref())?;
    let result = npuprof_breakdown::breakdown(&path, &options)?;
    args.report
        .write_html(|| npuprof_breakdown::html::render(&result))?;
    if args.report.json {
        print_json(&result)?;
    } else {
        let depth = args.depth.map_or(usize::MAX, |d| d as usize);
        crate::output::stdout().write_all(human(&result, depth).as_bytes())?;
    }
    Ok(Exit::Ok)
}

/// The skill's files, read and validated (exit 2 naming the file and the field).
fn skill_files(
    structure: Option<&Path>,
    rules: Option<&Path>,
) -> anyhow::Result<Option<Arc<SkillFiles>>> {
    let Some(structure_path) = structure else {
        return Ok(None);
    };
    let fail = |flag: &str, path: &Path, e: SpecError| {
        let code = if e.missing {
            ErrorCode::NotFound
        } else {
            ErrorCode::InvalidInput
        };
        Failure::new(code, format!("--{flag} {}: {e}", path.display())).with_hint(
            "the file must follow the schema of the cann-recipes-infer skill \
             model-infer-perf-breakdown (SKILL.md, references/cluster_dialogue.md)",
        )
    };
    let structure = skill::read_file(structure_path)
        .and_then(|text| skill::parse_structure(&text))
        .map_err(|e| fail("structure", structure_path, e))?;
    let rules = match rules {
        Some(path) => Some(
            skill::read_file(path)
                .and_then(|text| skill::parse_rules(&text))
                .map_err(|e| fail("rules", path, e))?,
        ),
        None => None,
    };
    Ok(Some(Arc::new(SkillFiles { structure, rules })))
}

fn bold() -> Style {
    Style::new().bold()
}

fn dim() -> Style {
    Style::new().dimmed()
}

/// The terminal report: per run, the module tree (to `depth` levels) and its ledger, or the
/// layers.
pub fn human(result: &Breakdown, depth: usize) -> String {
    let mut out = String::new();
    for run in &result.runs {
        let method = match run.method {
            Method::Modules => "nn.Module tree (exact)",
            Method::Layers => "layers inferred from the kernel stream",
            Method::None => "no structure found",
        };
        let _ = writeln!(
            out,
            "{}{} · {}{} ({})",
            bold().render(),
            run.phase.as_deref().unwrap_or("run"),
            rank_label(run.rank),
            bold().render_reset(),
            run.dir,
        );
        let covered = format!(
            "{} of {} kernel time covered ({} without communication)",
            percent(run.coverage),
            duration(run.kernel_us),
            percent(run.compute_coverage)
        );
        wrapped(&mut out, &format!("  {method}: "), &covered);
        if run.method == Method::Modules {
            modules(&mut out, run, depth);
        }
        if let Some(layers) = &run.layers {
            layer_report(&mut out, layers);
        }
        if let Some(by) = &run.structure {
            structure_report(&mut out, by);
        }
        for note in &run.notes {
            let _ = write!(out, "{}", dim().render());
            wrapped(&mut out, "  note: ", note);
            let _ = write!(out, "{}", dim().render_reset());
        }
        out.push('\n');
    }
    for matrix in &result.ranks {
        rank_matrix(&mut out, matrix, depth);
    }
    out
}

/// Rows of a waterfall shown in the terminal (largest change first; `--json` has all).
const WATERFALL_ROWS: usize = 15;

/// The waterfall of each run pair: base time, the largest changes, new time.
fn waterfall(fall: &Waterfall) -> String {
    let mut out = String::new();
    for pair in &fall.pairs {
        let ranks = if pair.rank == pair.new_rank {
            rank_label(pair.rank)
        } else {
            format!("{} → {}", rank_label(pair.rank), rank_label(pair.new_rank))
        };
        let _ = writeln!(
            out,
            "{}{} · {ranks}{}: {} → {} per step ({})",
            bold().render(),
            pair.phase.as_deref().unwrap_or("run"),
            bold().render_reset(),
            duration(pair.base_us),
            duration(pair.new_us),
            signed(pair.new_us - pair.base_us)
        );
        let name_width = report_width().saturating_sub(2 + 3 * 11).clamp(12, 60);
        let _ = writeln!(
            out,
            "  {:<name_width$} {:>10} {:>10} {:>10}",
            "node", "base", "new", "change"
        );
        for row in pair.rows.iter().take(WATERFALL_ROWS) {
            let _ = writeln!(
                out,
                "  {:<name_width$} {:>10} {:>10} {:>10}",
                fit(&row.node, name_width),
                row.base_us.map_or_else(|| "-".to_owned(), duration),
                row.new_us.map_or_else(|| "-".to_owned(), duration),
                signed(row.delta_us)
            );
        }
        if pair.rows.len() > WATERFALL_ROWS {
            let rest: f64 = pair.rows[WATERFALL_ROWS..].iter().map(|r| r.delta_us).sum();
            let _ = writeln!(
                out,
                "  {:<name_width$} {:>10} {:>10} {:>10}",
                format!("{} more", pair.rows.len() - WATERFALL_ROWS),
                "",
                "",
                signed(rest)
            );
        }
        out.push('\n');
    }
    for note in &fall.notes {
        wrapped(&mut out, "note: ", note);
    }
    out
}

/// A phase's node × rank matrix, the slowest rank per node marked `*`.
fn rank_matrix(out: &mut String, matrix: &Matrix, depth: usize) {
    let _ = writeln!(
        out,
        "{}{} · ranks{}: time per node and rank, the slowest marked *",
        bold().render(),
        matrix.phase.as_deref().unwrap_or("run"),
        bold().render_reset()
    );
    let columns = matrix.ranks.len();
    let name_width = report_width()
        .saturating_sub(2 + 11 * columns + 11)
        .clamp(12, 44);
    let mut head = format!("  {:<name_width$}", "node");
    for rank in &matrix.ranks {
        let _ = write!(
            head,
            " {:>10}",
            rank.map_or_else(|| "?".to_owned(), |r| format!("rank {r}"))
        );
    }
    let _ = writeln!(out, "{head} {:>10}", "spread");
    for row in matrix.rows.iter().filter(|r| r.depth <= depth) {
        let name = row.node.rsplit('/').next().unwrap_or(&row.node);
        let name = format!("{}{name}", "  ".repeat(row.depth - 1));
        let mut line = format!("  {:<name_width$}", fit(&name, name_width));
        for (c, us) in row.us.iter().enumerate() {
            let mark = if matrix.ranks[c] == row.slowest_rank && row.spread_us > 0.0 {
                "*"
            } else {
                " "
            };
            let cell = us.map_or_else(|| "-".to_owned(), |us| format!("{}{mark}", duration(us)));
            let _ = write!(line, " {cell:>10}");
        }
        let _ = writeln!(out, "{line} {:>10}", duration(row.spread_us));
    }
    out.push('\n');
}

fn modules(out: &mut String, run: &RunBreakdown, depth: usize) {
    let width = report_width();
    let _ = writeln!(
        out,
        "  {:<44} {:>10} {:>6} {:>10} {:>10} {:>10}",
        "module", "total", "share", "self", "step med", "step p95"
    );
    let name_width = 44usize.min(width.saturating_sub(52));
    for m in run.modules.iter().filter(|m| m.depth <= depth) {
        let name = format!("{}{}", "  ".repeat(m.depth - 1), m.name);
        let _ = writeln!(
            out,
            "  {:<name_width$} {:>10} {:>6} {:>10} {:>10} {:>10}",
            fit(&name, name_width),
            duration(m.total_us),
            percent(m.share),
            duration(m.self_us),
            m.step_median_us.map_or_else(|| "-".to_owned(), duration),
            m.step_p95_us.map_or_else(|| "-".to_owned(), duration),
        );
    }
    if let Some(ledger) = &run.ledger {
        let total = ledger.total_ps.max(1) as f64;
        for line in &ledger.unattributed {
            let text = format!(
                "{} ({} kernels): {} ({})",
                line.reason.describe(),
                line.kernels,
                duration(line.us),
                percent(line.ps as f64 / total)
            );
            wrapped(out, "  not attributed: ", &text);
        }
        if ledger.not_kernel_tasks > 0 {
            let _ = writeln!(
                out,
                "  {}not kernel time, left out: {} wait/record/marker tasks, {}{}",
                dim().render(),
                ledger.not_kernel_tasks,
                duration(ledger.not_kernel_us),
                dim().render_reset()
            );
        }
    }
}

fn layer_report(out: &mut String, layers: &Layers) {
    let anchor = layers.anchor.as_ref().map_or_else(String::new, |a| {
        format!(
            ", anchor {} ({}), period {} kernels",
            a.class.as_str(),
            a.types.join(", "),
            a.period
        )
    });
    let head = format!(
        "{} per step in {} kind(s) over {} step(s){anchor}; {} of the kernel time",
        layers.count,
        layers.kinds.len(),
        layers.steps,
        percent(layers.coverage)
    );
    wrapped(
        out,
        &format!("  layers ({} confidence): ", confidence(layers.confidence)),
        &head,
    );
    let runs: Vec<String> = layers
        .runs
        .iter()
        .map(|r| {
            let direction = match r.direction {
                Direction::Forward => "forward",
                Direction::Backward => "backward",
            };
            format!(
                "{direction} ×{} (kind {}, #{})",
                r.layers, r.kind, r.occurrence
            )
        })
        .collect();
    wrapped(out, "  runs: ", &runs.join(" · "));
    let _ = writeln!(
        out,
        "  {:>4} {:>4} {:>6} {:>7} {:>10} {:>10} {:>10}  largest class",
        "#", "kind", "first", "kernels", "median", "p95", "kernel t"
    );
    for it in &layers.items {
        let largest = it.classes.first().map_or_else(String::new, |c| {
            format!("{} {}", c.class.as_str(), duration(c.us))
        });
        let mark = if layers.outliers.contains(&it.index) {
            " ← outlier"
        } else {
            ""
        };
        let line = format!(
            "  {:>4} {:>4} {:>6} {:>7} {:>10} {:>10} {:>10}  {}{mark}",
            it.index,
            it.kind,
            it.first_kernel,
            it.kernels,
            duration(it.median_us),
            duration(it.p95_us),
            duration(it.kernel_us),
            largest
        );
        let _ = writeln!(out, "{}", fit(&line, report_width()));
    }
    for region in &layers.regions {
        wrapped(out, "  outside: ", &region_text(region));
    }
    for note in &layers.notes {
        wrapped(out, "  layers: ", note);
    }
}

/// The breakdown by the skill's files: per component type, its clusters, bubble and TOTAL
/// (medians over the steps of each step's median and p95) and the outlier layers.
fn structure_report(out: &mut String, by: &StructureBreakdown) {
    let model = by
        .model_name
        .as_ref()
        .map_or_else(String::new, |m| format!(" for {m}"));
    let head = format!(
        "{} layers declared{model}, {} step(s) broken down; wall = union of a cluster's \
         kernels, bubble = TOTAL − union, TOTAL = span",
        by.layers_declared,
        by.steps.len()
    );
    wrapped(
        out,
        &format!(
            "  skill structure ({} confidence): ",
            confidence(by.confidence)
        ),
        &head,
    );
    let name_width = report_width().saturating_sub(4 + 2 * 11 + 2).clamp(12, 36);
    for t in &by.summary {
        let _ = writeln!(
            out,
            "  {}{} × {} per step{}",
            bold().render(),
            t.component,
            t.instances,
            bold().render_reset()
        );
        let _ = writeln!(
            out,
            "    {:<name_width$} {:>10} {:>10}  outliers (layer: steps)",
            "cluster", "median", "p95"
        );
        for row in &t.rows {
            let outliers: Vec<String> = row
                .outliers
                .iter()
                .map(|o| {
                    let pass = if o.pass > 0 {
                        format!("#{}", o.pass)
                    } else {
                        String::new()
                    };
                    format!("{}{pass}: {}", o.layer_idx, o.steps)
                })
                .collect();
            let line = format!(
                "    {:<name_width$} {:>10} {:>10}  {}",
                fit(&row.name, name_width),
                duration(row.median_us),
                duration(row.p95_us),
                outliers.join(", ")
            );
            let _ = writeln!(out, "{}", fit(line.trim_end(), report_width()));
        }
    }
    if let Some(worst) = by
        .steps
        .iter()
        .max_by(|a, b| a.outside_compute_share.total_cmp(&b.outside_compute_share))
    {
        let unmatched: usize = by
            .steps
            .iter()
            .flat_map(|s| &s.sections)
            .flat_map(|s| &s.unmatched)
            .map(|u| u.count)
            .sum();
        let step_name = worst
            .step
            .map_or_else(|| "the table".to_owned(), |s| format!("step {s}"));
        let text = format!(
            "at most {} of the compute kernels ({step_name}: {} of {} kernels); {unmatched} \
             kernel(s) inside a component that no cluster takes",
            percent(worst.outside_compute_share),
            worst.outside,
            worst.kernels,
        );
        wrapped(out, "  outside every component: ", &text);
    }
    for note in &by.notes {
        wrapped(out, "  structure: ", note);
    }
}

/// A confidence as the JSON spells it.
fn confidence(c: Confidence) -> &'static str {
    match c {
        Confidence::Exact => "exact",
        Confidence::High => "high",
        Confidence::Low => "low",
        Confidence::None => "no",
    }
}

fn region_text(region: &Region) -> String {
    let place = match (region.role, region.after_layer) {
        (RegionRole::Before, _) => "before the first layer".to_owned(),
        (RegionRole::After, _) => "after the last layer".to_owned(),
        (RegionRole::Between, Some(l)) => format!("after layer {l}"),
        (RegionRole::Between, None) => "between layers".to_owned(),
    };
    let classes: Vec<String> = region
        .classes
        .iter()
        .take(3)
        .map(|c| format!("{} {}", c.class.as_str(), duration(c.us)))
        .collect();
    let mut text = format!(
        "{place} (kernels {}–{}): {}, {}",
        region.first_kernel,
        region.first_kernel + region.kernels - 1,
        duration(region.us),
        classes.join(", ")
    );
    for wait in &region.waits {
        let _ = write!(
            text,
            "; pipeline wait {} {} at kernel {}",
            wait.kernel_type,
            duration(wait.us),
            wait.kernel
        );
    }
    text
}

/// `text` after `lead`, wrapped to [`report_width`], continuation lines indented as `lead`.
fn wrapped(out: &mut String, lead: &str, text: &str) {
    let indent = " ".repeat(lead.chars().count());
    let width = report_width().saturating_sub(indent.len());
    for (i, line) in wrap(text, width).iter().enumerate() {
        let _ = writeln!(out, "{}{line}", if i == 0 { lead } else { &indent });
    }
}
