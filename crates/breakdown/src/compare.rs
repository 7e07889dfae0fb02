//! `breakdown BASE NEW`: where the per-step device time changed, node by node, as a waterfall
//! from the base run's time to the new run's.
//!
//! Runs are paired by phase and rank (a phase with one run on each side: those two, whatever
//! their ranks, as `compare` pairs them). Module runs are cut at a depth: a node at the cut counts
//! with its total, a node above it with its own (self) time, and what no module owns is one row
//! (`not attributed`), so the rows add up to each run's kernel time per step exactly (totals
//! over the recorded steps divided by the step count). Layer runs count each layer index with
//! its median kernel time and what lies outside the layers as one row (the step's kernel time
//! minus the layers'; medians, so approximate).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use npuprof_summary::SummaryError;
use serde::Serialize;

use crate::{Method, Options, RunBreakdown, breakdown};

/// The version of the `--json` schema of `breakdown BASE NEW`.
pub const WATERFALL_SCHEMA_VERSION: u32 = 1;

/// The row of what lies outside the modules or layers.
pub const REST: &str = "(not attributed)";

/// One row of a waterfall: a node's time per step in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The module path, `layer <index>`, or [`REST`].
    pub node: String,
    /// Base time per step (µs); `None` when the base run has no such node.
    pub base_us: Option<f64>,
    /// New time per step (µs); `None` when the new run has no such node.
    pub new_us: Option<f64>,
    /// New minus base (µs; a missing side counts 0).
    pub delta_us: f64,
}

/// One phase × rank present in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    /// The phase, when known.
    pub phase: Option<String>,
    /// The base run's rank, when known.
    pub rank: Option<u32>,
    /// The new run's rank (another when each side has one run of the phase).
    pub new_rank: Option<u32>,
    /// The method both runs were broken down by.
    pub method: Method,
    /// The base run's kernel time per step (µs): the sum of the rows' `base_us`.
    pub base_us: f64,
    /// The new run's (µs).
    pub new_us: f64,
    /// The rows, largest change first.
    pub rows: Vec<Row>,
}

/// The waterfalls of every run pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Waterfall {
    /// [`WATERFALL_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The base path, as given.
    pub base: PathBuf,
    /// The new path, as given.
    pub new: PathBuf,
    /// One per phase × rank broken down by one method in both.
    pub pairs: Vec<Pair>,
    /// Runs left unpaired, and why.
    pub notes: Vec<String>,
}

/// The rows of one run: node → time per step.
fn rows(run: &RunBreakdown, depth: usize) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    match run.method {
        Method::Modules => {
            let steps = run.steps.len().max(1) as f64;
            let mut owned = 0.0;
            for m in run.modules.iter().filter(|m| m.depth <= depth) {
                let us = if m.depth == depth {
                    m.total_us
                } else {
                    m.self_us
                };
                owned += us;
                *out.entry(m.path.clone()).or_insert(0.0) += us / steps;
            }
            out.insert(REST.to_owned(), (run.kernel_us - owned) / steps);
        }
        Method::Layers => {
            if let Some(layers) = &run.layers {
                let steps = layers.steps.max(1) as f64;
                let mut inside = 0.0;
                for it in &layers.items {
                    inside += it.kernel_us;
                    out.insert(format!("layer {}", it.index), it.kernel_us);
                }
                out.insert(REST.to_owned(), layers.kernel_us / steps - inside);
            }
        }
        Method::None => {}
    }
    out
}

/// The run of `others` that `run` (one of `ours`) is compared with: the same phase and rank,
/// else the only run of its phase when its phase has one run on both sides.
fn partner<'a>(
    ours: &[RunBreakdown],
    others: &'a [RunBreakdown],
    run: &RunBreakdown,
) -> Option<&'a RunBreakdown> {
    let same_phase = |list: &'a [RunBreakdown]| list.iter().filter(move |r| r.phase == run.phase);
    others
        .iter()
        .find(|o| o.phase == run.phase && o.rank == run.rank)
        .or_else(|| {
            let ours = ours.iter().filter(|r| r.phase == run.phase).count();
            let mut theirs = same_phase(others);
            match (ours, theirs.next(), theirs.next()) {
                (1, Some(only), None) => Some(only),
                _ => None,
            }
        })
}

/// Compares the breakdowns of `base` and `new`, module trees cut at `depth`.
pub fn compare(
    base: &Path,
    new: &Path,
    options: &Options,
    depth: usize,
) -> Result<Waterfall, SummaryError> {
    let before = breakdown(base, options)?;
    let after = breakdown(new, options)?;
    let depth = depth.max(1);
    let mut pairs = Vec::new();
    let mut notes = Vec::new();
    for b in &before.runs {
        let label = format!(
            "{} · {}",
            b.phase.as_deref().unwrap_or("run"),
            npuprof_summary::ranks::rank_label(b.rank)
        );
        let Some(a) = partner(&before.runs, &after.runs, b) else {
            notes.push(format!("{label}: only in the base"));
            continue;
        };
        if b.method != a.method || b.method == Method::None {
            notes.push(format!(
                "{label}: broken down by {:?} in the base and {:?} in the new run: not compared",
                b.method, a.method
            ));
            continue;
        }
        let (rb, ra) = (rows(b, depth), rows(a, depth));
        let mut nodes: Vec<&String> = rb.keys().chain(ra.keys()).collect();
        nodes.sort();
        nodes.dedup();
        let mut out: Vec<Row> = nodes
            .into_iter()
            .map(|node| {
                let (base_us, new_us) = (rb.get(node).copied(), ra.get(node).copied());
                Row {
                    node: node.clone(),
                    base_us,
                    new_us,
                    delta_us: new_us.unwrap_or(0.0) - base_us.unwrap_or(0.0),
                }
            })
            .collect();
        out.sort_by(|x, y| {
            y.delta_us
                .abs()
                .total_cmp(&x.delta_us.abs())
                .then(x.node.cmp(&y.node))
        });
        pairs.push(Pair {
            phase: b.phase.clone(),
            rank: b.rank,
            new_rank: a.rank,
            method: b.method,
            base_us: rb.values().sum(),
            new_us: ra.values().sum(),
            rows: out,
        });
    }
    for a in &after.runs {
        if partner(&after.runs, &before.runs, a).is_none() {
            notes.push(format!(
                "{} · {}: only in the new run",
                a.phase.as_deref().unwrap_or("run"),
                npuprof_summary::ranks::rank_label(a.rank)
            ));
        }
    }
    Ok(Waterfall {
        schema_version: WATERFALL_SCHEMA_VERSION,
        base: base.to_path_buf(),
        new: new.to_path_buf(),
        pairs,
        notes,
    })
}
