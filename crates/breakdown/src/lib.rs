//! Break a torch_npu profile down to the model's structure, per phase × rank.
//!
//! Two methods, each result stating which it used and how sure it is:
//! - **modules** (exact, [`modules`]): from `trace_view.json`'s `nn.Module` call events
//!   (recorded with `with_modules` or `with_stack`), each kernel linked by its launch flow to
//!   the operator that launched it and owned by the innermost module call holding the launch;
//!   a ledger lists every µs no module owns, with the reason.
//! - **layers** (inferred, [`layers`]): from `kernel_details.csv` alone, the kernel stream of
//!   each step cut into repeated layers by a layer-defining kernel class ([`classes`]).
//!
//! - **the skill's files** ([`skill`], [`structure`]): given the cann-recipes-infer skill's
//!   structure and cluster rules, each step's layers are split into the skill's component
//!   instances and clusters, with its wall, bubble and TOTAL.
//!
//! Discovery, phases and ranks are summary's (`npuprof_summary::each_run`), so breakdown sees
//! the runs summary sees. Errors are summary's ([`SummaryError`]).
//!
//! Architecture invariant: this crate never writes and never prints; memory is bounded by the
//! events it keeps (module calls, operators, flows, device tasks; kernel rows in layer mode),
//! never by the bytes of a file.

pub mod classes;
pub mod compare;
pub mod db;
pub mod html;
pub mod kernels;
pub mod layers;
pub mod matrix;
pub mod modules;
pub mod skill;
pub mod structure;
pub mod time;
pub mod trace;
pub mod tracer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use npuprof_summary::run::{KERNEL_DETAILS, OUTPUT_DIR};
use npuprof_summary::{SummaryError, run_key};
use serde::Serialize;

/// The hash maps of the breakdown, keyed by ids, threads, points and names read from a
/// profile: hashed with foldhash (seeded per process, as std's are) rather than SipHash, which
/// was a tenth of exact mode's time.
pub type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

pub use crate::layers::Layers;
pub use crate::modules::{Ledger, LedgerLine, Module, ModuleTree, Unattributed};

/// The version of the `--json` schema of `breakdown`.
pub const SCHEMA_VERSION: u32 = 1;

/// What to break down.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only this phase (`prefill`, `decode`, …); all when `None`.
    pub phase: Option<String>,
    /// Only this rank; all when `None`.
    pub rank: Option<u32>,
    /// The skill's files, to break every run down by them too.
    pub skill: Option<Arc<SkillFiles>>,
}

/// The cann-recipes-infer skill's files (`--structure`, `--rules`).
#[derive(Debug, Clone)]
pub struct SkillFiles {
    /// The model structure (`structure_spec.json`).
    pub structure: skill::Structure,
    /// The cluster rules (`<network>_spec.json`), when given.
    pub rules: Option<skill::Rules>,
}

/// How a run was broken down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// From the trace's `nn.Module` call events (exact).
    Modules,
    /// Inferred from the kernel stream of `kernel_details.csv`.
    Layers,
    /// Neither could be used (see the run's notes).
    None,
}

/// How far a result can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Recorded structure: module calls and launch flows.
    Exact,
    /// Inferred, and every check passed (a dominant period, layers of one length per kind).
    High,
    /// Inferred with a caveat (see the notes).
    Low,
    /// Nothing to break down by.
    None,
}

/// One broken-down run directory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunBreakdown {
    /// The phase, when known.
    pub phase: Option<String>,
    /// The rank, when known.
    pub rank: Option<u32>,
    /// The run directory, relative to the given path (`.` for itself).
    pub dir: String,
    /// How it was broken down.
    pub method: Method,
    /// How sure the result is.
    pub confidence: Confidence,
    /// Share of the run's kernel time owned by a module (modules) or a layer (layers).
    pub coverage: f64,
    /// The same of the kernel time outside communication (collectives have no launch flow and
    /// mostly lie outside layers).
    pub compute_coverage: f64,
    /// The run's kernel time (µs).
    pub kernel_us: f64,
    /// Exact mode's nodes, depth first (empty in layer mode).
    pub modules: Vec<Module>,
    /// Exact mode's ledger.
    pub ledger: Option<Ledger>,
    /// The layers inferred from `kernel_details.csv` (both modes, when it has an anchor).
    pub layers: Option<Layers>,
    /// The `ProfilerStep#N` numbers of the trace (exact mode).
    pub steps: Vec<u64>,
    /// The breakdown by the skill's files (with `--structure`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structure: Option<structure::StructureBreakdown>,
    /// What could not be done, and why.
    pub notes: Vec<String>,
}

/// The breakdown of every selected run below a path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Breakdown {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The path, as given.
    pub path: PathBuf,
    /// One entry per run directory, by phase, then rank.
    pub runs: Vec<RunBreakdown>,
    /// Per phase with two ranks or more: each node × rank and the slowest rank per node.
    pub ranks: Vec<matrix::Matrix>,
}

/// Breaks down the run directories under `path` (any path `npuprof summary` accepts).
pub fn breakdown(path: &Path, options: &Options) -> Result<Breakdown, SummaryError> {
    let mut runs = npuprof_summary::each_run(path, options.phase.as_deref(), |dir, phase| {
        read_run(dir, phase, path, options)
    })?;
    if runs.is_empty() {
        return Err(npuprof_summary::nothing_selected(
            path,
            options.phase.as_deref(),
            options.rank,
        ));
    }
    runs.sort_by(|a, b| run_key(&a.phase, a.rank, &a.dir).cmp(&run_key(&b.phase, b.rank, &b.dir)));
    Ok(Breakdown {
        schema_version: SCHEMA_VERSION,
        path: path.to_path_buf(),
        ranks: matrix::matrices(&runs),
        runs,
    })
}

/// Exact mode's result on `run`.
fn exact(run: &mut RunBreakdown, trace: &trace::Trace) {
    let tree = modules::breakdown(trace);
    run.method = Method::Modules;
    run.confidence = Confidence::Exact;
    run.kernel_us = time::ps_to_us(tree.ledger.total_ps);
    run.coverage = if tree.ledger.total_ps == 0 {
        0.0
    } else {
        tree.ledger.owned_ps as f64 / tree.ledger.total_ps as f64
    };
    run.compute_coverage = tree.ledger.compute_coverage();
    run.modules = tree.modules;
    run.steps = tree.steps;
    run.ledger = Some(tree.ledger);
}

/// Breaks down one run directory; `None` when `rank` selects another.
fn read_run(
    dir: &Path,
    phase: Option<String>,
    root: &Path,
    options: &Options,
) -> Result<Option<RunBreakdown>, SummaryError> {
    let mut notes = Vec::new();
    let (run_rank, _) = npuprof_summary::run::read_info(dir, &mut notes);
    if options.rank.is_some() && run_rank != options.rank {
        return Ok(None);
    }
    let output = dir.join(OUTPUT_DIR);
    let mut run = RunBreakdown {
        phase,
        rank: run_rank,
        dir: npuprof_paths::relative(root, dir),
        method: Method::None,
        confidence: Confidence::None,
        coverage: 0.0,
        compute_coverage: 0.0,
        kernel_us: 0.0,
        modules: Vec::new(),
        ledger: None,
        layers: None,
        steps: Vec::new(),
        structure: None,
        notes,
    };
    let kernels_path = output.join(KERNEL_DETAILS);
    // Why layer mode had nothing: said only when the trace has no module calls either.
    let mut no_layers = None;
    let mut table_us = 0.0;
    if kernels_path.is_file() {
        let table = if options.skill.is_some() {
            kernels::read_detailed(&kernels_path)?
        } else {
            kernels::read(&kernels_path)?
        };
        table_us = time::ps_to_us(table.rows.iter().map(|r| r.dur_ps).sum());
        if !table.skipped.is_empty() {
            run.notes.push(format!(
                "{KERNEL_DETAILS}: {} row(s) with the wrong number of fields left out",
                table.skipped.len()
            ));
        }
        run.layers = layers::infer(&table);
        if let Some(files) = &options.skill {
            let mut by = structure::apply(&table, &files.structure, files.rules.as_ref());
            // The windows are layer mode's: never surer than its layers.
            let layers = run
                .layers
                .as_ref()
                .map_or(Confidence::None, |l| l.confidence);
            if layers == Confidence::Low && by.confidence == Confidence::High {
                by.confidence = Confidence::Low;
            }
            run.structure = Some(by);
        }
        if run.layers.is_none() && !table.rows.is_empty() {
            no_layers = Some(format!(
                "{KERNEL_DETAILS}: no layer-defining kernel class (attention core, MoE gate, \
                 norm) recurs with a dominant period: no layers inferred"
            ));
        }
    } else {
        no_layers = Some(format!(
            "no {OUTPUT_DIR}/{KERNEL_DETAILS}: layers not inferred"
        ));
        if options.skill.is_some() {
            run.notes.push(format!(
                "no {OUTPUT_DIR}/{KERNEL_DETAILS}: not broken down by the skill's structure"
            ));
        }
    }
    let trace_path = output.join(trace::TRACE_VIEW);
    if trace_path.is_file() {
        let trace = trace::read(&trace_path)?;
        if trace.unreadable > 0 {
            run.notes.push(format!(
                "{}: {} event(s) not readable as trace events, left out",
                trace::TRACE_VIEW,
                trace.unreadable
            ));
        }
        if trace.numeric_ts > 0 {
            run.notes.push(format!(
                "{}: {} timestamp(s) written as JSON numbers: exact only to an f64's 15 digits",
                trace::TRACE_VIEW,
                trace.numeric_ts
            ));
        }
        if modules::has_modules(&trace) {
            exact(&mut run, &trace);
            return Ok(Some(run));
        }
        run.notes.push(format!(
            "{}: no nn.Module events (record with with_modules=True for the exact tree)",
            trace::TRACE_VIEW
        ));
    }
    let profiler = npuprof_summary::db_export::DbFiles::find(&output).profiler;
    if !trace_path.is_file() && profiler.is_none() {
        // (A db export has no trace_view.json: its database is read instead.)
        run.notes
            .push(format!("no {OUTPUT_DIR}/{}", trace::TRACE_VIEW));
    }
    if let Some(profiler) = profiler {
        if db::has_module_calls(&profiler)? {
            exact(&mut run, &db::read(&profiler)?);
            run.notes.push(
                "db export: module calls, operators and tasks read from its database".to_owned(),
            );
            return Ok(Some(run));
        }
        if !kernels_path.is_file() {
            run.notes.push(
                "db export without nn.Module calls (record with with_modules=True); layers are \
                 inferred from the text export's kernel_details.csv only"
                    .to_owned(),
            );
        }
    }
    run.notes.extend(no_layers);
    run.kernel_us = table_us;
    if let Some(layers) = &run.layers {
        run.method = Method::Layers;
        run.confidence = layers.confidence;
        run.coverage = layers.coverage;
        run.compute_coverage = layers.compute_coverage;
        run.kernel_us = layers.kernel_us;
    }
    Ok(Some(run))
}
