//! npuprof-route: scan a repository and decide how to profile it.
//!
//! - `framework` (path A): a cann-recipes style `ProfilerManager` wired into the engine, which
//!   `npuprof patch` can set;
//! - `framework-other` (path A, by hand): another loop-wired mechanism (vLLM, SGLang, MindSpeed,
//!   torch_npu `dynamic_profile`, a `torch_npu.profiler.profile` stepped in a loop), reported
//!   with its knobs;
//! - `inject` (path B): nothing usable; `npuprof inject` writes a harness.
//!
//! Python is read with tree-sitter (comments and strings never count), run configurations with
//! yaml_serde (values) and tree-sitter-yaml (lines). Files are walked in parallel with the
//! `ignore` crate and only parsed when a fast substring prefilter matches. The crate only reads.

mod blocks;
mod classify;
mod engine;
mod error;
mod mechanisms;
mod model;
mod next_step;
mod python;
mod report;
mod resolve;
mod shell;
mod walk;
mod yaml_configs;

use std::path::Path;

pub use crate::engine::EngineRoute;
pub use crate::error::RouteError;
pub use crate::model::{MODEL_SCHEMA_VERSION, ModelRoute, model_route};
pub use crate::report::{
    ChainLink, DeadPath, DecodeForwards, Evidence, Mechanism, Next, Profilable, Route, RouteReport,
    RunConfig, SCHEMA_VERSION, Site, Skipped, Stats, Warning, Wrapper,
};

/// How many entry-point candidates are reported.
const MAX_ENTRY_CANDIDATES: usize = 5;

/// Scans the repository at `root` and decides the route.
///
/// Problems with single files (unreadable, not UTF-8, invalid YAML, symlink loops, too large)
/// become warnings or skipped entries; only a `root` that is missing or not a directory (or an
/// unusable definition file) fails.
pub fn scan(root: &Path) -> Result<RouteReport, RouteError> {
    npuprof_repository::Catalog::global()?;
    let meta = std::fs::metadata(root).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            RouteError::NotFound(root.to_path_buf())
        } else {
            RouteError::Unreadable {
                path: root.to_path_buf(),
                source,
            }
        }
    })?;
    if !meta.is_dir() {
        return Err(RouteError::NotADirectory(root.to_path_buf()));
    }

    let mut collected = walk::walk(root);
    // Callers of profiler functions whose names escape the prefilter may sit in blocks left
    // out of a parse (parse those files in full), or in files not parsed at all (when the
    // function would otherwise be reported dead).
    let makers = classify::maker_names_outside_prefilter(&collected.python);
    if !makers.is_empty() {
        walk::reparse_mentioning(&mut collected.python, &makers);
    }
    let unreferenced = classify::unreferenced_names_outside_prefilter(&collected.python);
    if !unreferenced.is_empty() {
        let extra = walk::parse_mentioning(&collected.unparsed, &unreferenced);
        collected.stats.python_parsed += extra.len();
        collected.python.extend(extra);
        collected.python.sort_by(|a, b| a.path.cmp(&b.path));
    }

    let classified = classify::classify(&collected.python, &collected.shell);
    let mut evidence = classified.evidence;
    let mut configs = Vec::with_capacity(collected.configs.len());
    for read in collected.configs {
        evidence.extend(read.switch);
        configs.push(read.config);
    }
    evidence.sort();

    let mut entries = collected.entries;
    entries.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let entry_candidates: Vec<String> = entries
        .into_iter()
        .take(MAX_ENTRY_CANDIDATES)
        .map(|(path, _)| path)
        .collect();

    let mut warnings = collected.warnings;
    warnings.extend(classified.warnings);
    warnings.sort();

    // A serving engine's own checkout or package: its definition decides, and collect drives it.
    let engine = EngineRoute::find(root);
    let (route, reason, next) = match &engine {
        Some(e) => (Route::FrameworkOther, e.reason(), e.next()),
        None => {
            let next = next_step::next_step(
                root,
                classified.route,
                &configs,
                &classified.mechanisms,
                &entry_candidates,
                &collected.trees,
            );
            (classified.route, classified.reason, next)
        }
    };
    let (used, why) = npuprof_repository::Catalog::global()?.for_repo_why(root);
    Ok(RouteReport {
        definition: report::DefinitionUsed {
            id: used.id.clone(),
            source: used.source.clone(),
            why,
        },
        schema_version: SCHEMA_VERSION,
        root: root.display().to_string(),
        route,
        path: match route {
            Route::Inject => "B",
            Route::Framework | Route::FrameworkOther => "A",
        },
        reason,
        next,
        engine,
        wrapper: classified.wrapper,
        mechanisms: classified.mechanisms,
        evidence,
        call_chain: classified.call_chain,
        dead_paths: classified.dead_paths,
        configs,
        entry_candidates,
        warnings,
        skipped: collected.skipped,
        stats: collected.stats,
    })
}
