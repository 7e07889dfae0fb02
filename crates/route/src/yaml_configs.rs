//! Run configurations: values read with yaml_serde, line numbers from
//! `npuprof_repository::config::key_line` (the top-level block holding a key, parsed with
//! tree-sitter-yaml).

use std::path::Path;

use npuprof_repository::Catalog;
use npuprof_repository::config::key_line;
use npuprof_repository::layout::ConfigPlace;
use yaml_serde::Value;

use crate::report::{DecodeForwards, Evidence, EvidenceKind, Profilable, RunConfig};

/// The definitions a scan reads run configs with (checked by [`crate::scan`] before it walks).
fn catalog() -> &'static Catalog {
    Catalog::global().unwrap_or_else(|_| Catalog::builtin())
}

/// Whether `rel` (a `/`-separated path relative to the root) is a run config of some
/// repository's layout (`[<prefix>/]models/<model>/config/<file>` for cann-recipes-infer; the
/// file may sit in a sub-folder); returns the model.
pub(crate) fn model_of(rel: &str) -> Option<&str> {
    split_config_path(rel).map(|c| c.model)
}

/// The place of a run config path in a repository's layout (the last match in the first
/// definition that has one).
pub(crate) fn split_config_path(rel: &str) -> Option<ConfigPlace<'_>> {
    catalog().place_of(rel).map(|(place, _)| place)
}

/// Where the run configs of the repository at `root` live, as people read it
/// (`models/<model>/config/`).
pub(crate) fn configs_place(root: &Path) -> String {
    format!("{}/", catalog().for_repo(root).layout.config_dir("<model>"))
}

/// The file name of the launch script of the repository at `root`.
fn launcher_name(root: &Path) -> &'static str {
    let script = &catalog().for_repo(root).layout.launcher.script;
    script.rsplit('/').next().unwrap_or(script)
}

/// Whether a YAML file should be read as a run configuration: it sits in `models/*/config/`
/// or mentions `model_config` (checked again on the parsed value).
pub(crate) fn is_candidate(rel: &str, bytes: &[u8]) -> bool {
    let section = &npuprof_repository::Definitions::builtin()
        .markers
        .switch_section;
    model_of(rel).is_some() || memchr::memmem::find(bytes, section.as_bytes()).is_some()
}

/// A run configuration read from one file, with the evidence line of its switch.
pub(crate) struct ConfigRead {
    /// The configuration.
    pub config: RunConfig,
    /// `enable_profiler:` as evidence, when present.
    pub switch: Option<Evidence>,
}

/// A run config that could not be read or parsed: every value `null`, the reason in `error`.
pub(crate) fn unreadable(rel: &str, error: &str) -> RunConfig {
    RunConfig {
        path: rel.to_owned(),
        model: split_config_path(rel).map(|p| p.model.to_owned()),
        enable_profiler: None,
        enable_profiler_line: None,
        max_new_tokens: None,
        max_new_tokens_line: None,
        next_n: None,
        world_size: None,
        profilable: Profilable {
            prefill: false,
            decode: false,
            reason: "the file cannot be read".to_owned(),
        },
        decode_forwards: None,
        error: Some(error.to_owned()),
    }
}

/// Reads one YAML file. Returns `None` for a YAML file outside `models/*/config/` that turns
/// out to have no top-level `model_config`.
pub(crate) fn read(root: &Path, rel: &str, src: &str) -> Option<ConfigRead> {
    let found = catalog().place_of(rel);
    let place = found.map(|(place, _)| place);
    let model = place.as_ref().map(|p| p.model.to_owned());
    let value: Value = match npuprof_repository::config::parse_yaml(src) {
        Ok(value) => value,
        Err(err) => {
            let mut config = unreadable(
                rel,
                &match err {
                    npuprof_repository::TargetError::Yaml(detail) => {
                        format!("invalid YAML: {detail}")
                    }
                    other => other.to_string(),
                },
            );
            config.model = model;
            config.profilable.reason = "the YAML does not parse".to_owned();
            return Some(ConfigRead {
                config,
                switch: None,
            });
        }
    };
    let model_config = value.get(
        npuprof_repository::Definitions::builtin()
            .markers
            .switch_section
            .as_str(),
    );
    if model.is_none() && model_config.is_none() {
        return None;
    }
    // A config under config/ whose model the definitions cannot resolve keeps the reason.
    let (view, view_error) = match found.map(|(p, definitions)| {
        npuprof_repository::config_view(
            definitions,
            &root.join(p.prefix),
            p.model,
            p.yaml,
            src,
            &value,
            None,
        )
    }) {
        Some(Ok(view)) => (Some(view), None),
        Some(Err(e)) => (None, Some(e.to_string())),
        None => (None, None),
    };
    let keys = view.as_ref().map_or_else(
        || &npuprof_repository::Definitions::builtin().shapes[0].config,
        |v| &v.shape.config,
    );
    let switch_value = npuprof_repository::config::lookup(&value, &keys.switch);
    let enable_profiler = switch_value.and_then(Value::as_bool);
    let enable_profiler_line = key_line(src, &keys.switch);
    // The budget as the engine's loader reads it; a value it reads no count from is said.
    let budget = npuprof_repository::config::budget(src, &value, &keys.budget);
    let max_new_tokens = budget.as_ref().ok().copied().flatten();
    let next_n = npuprof_repository::config::lookup(&value, &keys.next_n).and_then(Value::as_u64);
    let world_size = value
        .get("parallel_config")
        .and_then(|p| p.get("world_size"))
        .or_else(|| value.get("world_size"))
        .and_then(Value::as_u64);

    let (profilable, decode_forwards) = if model_config.is_none() {
        (
            no("no model_config: not an LLM run config, so no profiler switch"),
            None,
        )
    } else if switch_value.is_none() {
        (no("model_config has no enable_profiler switch"), None)
    } else if enable_profiler.is_none() {
        (
            no("model_config.enable_profiler is not True or False"),
            None,
        )
    } else {
        match (&view, &view_error) {
            (Some(view), _) => decode_budget(view),
            (None, Some(e)) => (no(e), None),
            (None, None) if budget.is_err() => (
                no(&budget
                    .as_ref()
                    .err()
                    .map(ToString::to_string)
                    .unwrap_or_default()),
                None,
            ),
            (None, None) if max_new_tokens.is_some_and(|n| n <= 1) => (
                no(&format!(
                    "not under {} (its own launcher runs it, not {} \
                     --yaml): {} {} makes it a prefill benchmark, decode never runs",
                    configs_place(root),
                    launcher_name(root),
                    npuprof_repository::config::dotted(&keys.budget),
                    max_new_tokens.unwrap_or(0)
                )),
                None,
            ),
            (None, None) => (
                no(&format!(
                    "not under {}: the model's budget rule is unknown",
                    configs_place(root)
                )),
                None,
            ),
        }
    };
    let budget_line = key_line(src, &keys.budget);
    let switch = enable_profiler_line.map(|line| Evidence {
        path: rel.to_owned(),
        line,
        kind: EvidenceKind::YamlSwitch,
        text: line_text(src, line),
    });
    let config = RunConfig {
        path: rel.to_owned(),
        model,
        enable_profiler,
        enable_profiler_line,
        max_new_tokens,
        max_new_tokens_line: budget_line,
        next_n,
        world_size,
        profilable,
        decode_forwards,
        error: None,
    };
    Some(ConfigRead { config, switch })
}

fn no(reason: &str) -> Profilable {
    Profilable {
        prefill: false,
        decode: false,
        reason: reason.to_owned(),
    }
}

/// What the run can capture, by the model's budget rule.
fn decode_budget(view: &npuprof_repository::ConfigView) -> (Profilable, Option<DecodeForwards>) {
    let never = |phase| view.never_recorded.iter().find(|n| n.phase == phase);
    if let Some(n) = never(npuprof_repository::python::Phase::Prefill) {
        return (no(&n.why), None);
    }
    if let Some(n) = never(npuprof_repository::python::Phase::Decode) {
        return (
            Profilable {
                prefill: true,
                decode: false,
                reason: n.why.clone(),
            },
            None,
        );
    }
    let tokens = view.config.effective_budget;
    let min = view.budget.guaranteed_forwards(tokens);
    let max = match view.budget.rule {
        npuprof_repository::BudgetRule::Tokens | npuprof_repository::BudgetRule::DataDependent => {
            tokens.saturating_sub(1)
        }
        _ => min,
    };
    let reason = if min == max {
        format!(
            "{max} decode forwards per request ({})",
            view.budget.describe()
        )
    } else {
        format!(
            "{min} to {max} decode forwards per request ({})",
            view.budget.describe()
        )
    };
    (
        Profilable {
            prefill: true,
            decode: true,
            reason,
        },
        Some(DecodeForwards { min, max }),
    )
}

/// The trimmed text of 1-based `line`.
fn line_text(src: &str, line: usize) -> String {
    src.lines()
        .nth(line - 1)
        .unwrap_or_default()
        .trim()
        .to_owned()
}
