//! `npuprof plan --engine ID`: plan a capture of a live server (a window of requests between
//! start and stop profile), by the engine's definition and, with `--repo`, the version there.
//!
//! Output: the plan on stdout (text, or `--json`); exit 0, or 2 on bad input.

use std::fmt::Write as _;
use std::io::Write as _;

use anyhow::Context as _;
use npuprof_repository::engine::{EngineDefinition, ParseMode, detect_with};
use npuprof_workflow::serve_plan::{ServeLoad, ServePlan, plan_serve};

use super::plan::Args;
use crate::exit::Exit;
use crate::output::print_json;

/// Plans and prints.
pub fn run(engine: &str, args: &Args) -> anyhow::Result<Exit> {
    let plan = execute(engine, args)?;
    if args.json {
        print_json(&plan)?;
    } else {
        crate::output::stdout().write_all(human(&plan).as_bytes())?;
    }
    Ok(Exit::Ok)
}

/// Computes the plan without printing.
pub fn execute(engine: &str, args: &Args) -> anyhow::Result<ServePlan> {
    npuprof_repository::Catalog::global().map_err(npuprof_repository::TargetError::from)?;
    let definition = EngineDefinition::by_id(engine)
        .with_context(|| format!("no serving-engine definition `{engine}`"))?;
    let (facts, found) = match &args.target.repo {
        Some(repo) => {
            let detected = detect_with(definition, repo).with_context(|| {
                format!(
                    "{}: no {} package here (a checkout or a site-packages directory holding {}/)",
                    repo.display(),
                    definition.id,
                    definition.detect.package_dir
                )
            })?;
            if let Some(mismatch) = detected.host_mismatch(definition) {
                anyhow::bail!("{}: {mismatch}", repo.display());
            }
            let facts = detected.facts(definition).with_context(|| {
                format!(
                    "{}: npuprof cannot tell which profiler config style this version takes: {}",
                    repo.display(),
                    detected.notes.join("; ")
                )
            })?;
            let mut found: Vec<String> = detected
                .exclusive_modes
                .iter()
                .filter_map(|f| {
                    definition
                        .exclusive_modes
                        .iter()
                        .find(|m| m.name == f.value)
                })
                .map(|m| m.note.clone())
                .collect();
            if let (Some(pd), Some(proxy)) = (&definition.pd, &detected.pd_proxy) {
                found.push(format!("PD disaggregation ({proxy}): {}", pd.note));
            }
            (facts, found)
        }
        None => {
            let newest = definition
                .styles
                .last()
                .context("the definition has no style")?;
            (definition.style_facts(newest.style), Vec::new())
        }
    };
    let from_source = args.target.repo.is_some();
    let window = &args.window;
    let window_asked = window.phase.is_some() || window.decode_active.is_some();
    let asked = args.warmup.unwrap_or(i64::from(
        npuprof_workflow::serve_plan::load_defaults::WARMUP,
    ));
    let warmup = u64::try_from(asked)
        .map_err(|_| anyhow::anyhow!("--warmup must be 0 or more requests, not {asked}"))?;
    let s = &args.serve;
    let load = ServeLoad {
        requests: s.requests,
        prompt_len: s.prompt_len,
        output_len: s.output_len,
        concurrency: s.concurrency,
        warmup,
        tp: s.tp,
        with_stack: s.with_stack,
        kernels_per_step: s.kernels_per_step,
        phases: window.phases(),
        steps: window_asked.then(|| window.decode_active()),
    };
    let mut plan = plan_serve(definition, &facts, from_source, load)?;
    plan.warnings.extend(found);
    Ok(plan)
}

/// Bytes in a short human unit.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    #[allow(clippy::cast_precision_loss, reason = "a size for display")]
    let mut value = bytes as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    if unit == "B" {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {unit}")
    }
}

/// The human plan.
pub fn human(p: &ServePlan) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "engine:   {} ({} style{})",
        p.engine,
        p.config_style.as_str(),
        if p.from_source {
            ", read from --repo"
        } else {
            ", newest version assumed"
        }
    );
    let _ = writeln!(s, "window:   {}", p.window);
    let _ = writeln!(s, "records:  {}", p.records);
    let it = &p.iterations;
    let _ = writeln!(
        s,
        "steps:    ≈{} decode iterations (ceil({}/{})·{}) + {} prefills ({} prompt tokens): at most {} engine iterations, {:.0}% decode",
        it.decode,
        p.requests,
        p.concurrency,
        p.output_len,
        it.prefills,
        it.prompt_tokens,
        it.at_most,
        it.decode_share * 100.0
    );
    let _ = writeln!(s, "decode:   {}", p.decode_dominated);
    if let Some(w) = &p.stage_window {
        let _ = writeln!(
            s,
            "asked:    {} forward step(s){}, {} run(s) per rank: {}",
            w.steps,
            if w.by_stage { " per stage" } else { "" },
            w.runs_per_rank,
            w.body
        );
    }
    let o = &p.output;
    let _ = writeln!(
        s,
        "output:   ≈{} per rank × {} rank(s) = {}",
        size(o.bytes_per_rank),
        o.ranks,
        size(o.bytes_per_rank.saturating_mul(u64::from(o.ranks)))
    );
    let _ = writeln!(s, "          model: {}", o.model);
    let _ = writeln!(
        s,
        "profiler: {} + {} (hard-coded by this version; stacks {})",
        p.level,
        p.aic_metrics,
        if p.with_stack { "on" } else { "off" }
    );
    for c in &p.cannot_show {
        let _ = writeln!(s, "          cannot show: {c}");
    }
    let parse = match p.parse {
        ParseMode::InEngine => "the worker parses before the stop returns",
        ParseMode::RawOnly => "raw data only (daemon workers): analyse() offline per run directory",
        ParseMode::Async => "asynchronous: the output appears after the stop returns",
    };
    let _ = writeln!(s, "parse:    {parse}");
    if let Some(pd) = &p.pd {
        let _ = writeln!(s, "PD:       {pd}");
    }
    for w in &p.warnings {
        let _ = writeln!(s, "warning:  {w}");
    }
    s
}
