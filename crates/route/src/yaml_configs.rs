//! Run configurations: values read with yaml_serde, line numbers from the tree-sitter-yaml tree.

use tree_sitter::{Node, Parser};
use yaml_serde::Value;

use crate::report::{DecodeForwards, Evidence, Profilable, RunConfig};

/// A tree-sitter parser set up for YAML.
pub(crate) fn new_parser() -> Parser {
    let mut parser = Parser::new();
    // The grammar is compiled in; a version mismatch would be a build defect caught by every test.
    parser
        .set_language(&tree_sitter_yaml::LANGUAGE.into())
        .expect("tree-sitter-yaml is compatible with the tree-sitter runtime");
    parser
}

/// Whether `rel` (a `/`-separated path relative to the root) ends in
/// `models/<model>/config/<file>`; returns the model.
pub(crate) fn model_of(rel: &str) -> Option<&str> {
    split_config_path(rel).map(|(_, model)| model)
}

/// `(repository prefix, model)` of a `[<prefix>/]models/<model>/config/<file>` path; the prefix
/// is empty when the config sits in the scanned root's own `models/`.
pub(crate) fn split_config_path(rel: &str) -> Option<(&str, &str)> {
    let parts: Vec<&str> = rel.rsplitn(5, '/').collect();
    match parts.as_slice() {
        [_file, "config", model, "models"] => Some(("", model)),
        [_file, "config", model, "models", prefix] => Some((prefix, model)),
        _ => None,
    }
}

/// Whether a YAML file should be read as a run configuration: it sits in `models/*/config/`
/// or mentions `model_config` (checked again on the parsed value).
pub(crate) fn is_candidate(rel: &str, bytes: &[u8]) -> bool {
    model_of(rel).is_some() || memchr::memmem::find(bytes, b"model_config").is_some()
}

/// A run configuration read from one file, with the evidence line of its switch.
pub(crate) struct ConfigRead {
    /// The configuration.
    pub config: RunConfig,
    /// `enable_profiler:` as evidence, when present.
    pub switch: Option<Evidence>,
}

/// Reads one YAML file. Returns `None` for a YAML file outside `models/*/config/` that turns
/// out to have no top-level `model_config`.
pub(crate) fn read(parser: &mut Parser, rel: &str, src: &str) -> Option<ConfigRead> {
    let model = model_of(rel).map(str::to_owned);
    let value: Value = match yaml_serde::from_str(src) {
        Ok(value) => value,
        Err(err) => {
            let config = RunConfig {
                path: rel.to_owned(),
                model,
                enable_profiler: None,
                enable_profiler_line: None,
                max_new_tokens: None,
                max_new_tokens_line: None,
                next_n: None,
                world_size: None,
                profilable: Profilable {
                    prefill: false,
                    decode: false,
                    reason: "the YAML does not parse".to_owned(),
                },
                decode_forwards: None,
                error: Some(format!("invalid YAML: {err}")),
            };
            return Some(ConfigRead {
                config,
                switch: None,
            });
        }
    };
    let model_config = value.get("model_config");
    if model.is_none() && model_config.is_none() {
        return None;
    }
    let tree = parser.parse(src, None);
    let line_of = |path: &[&str]| {
        tree.as_ref()
            .and_then(|t| key_line(t.root_node(), src, path))
    };

    let switch_value = model_config.and_then(|m| m.get("enable_profiler"));
    let enable_profiler = switch_value.and_then(Value::as_bool);
    let enable_profiler_line = line_of(&["model_config", "enable_profiler"]);
    let max_new_tokens = value
        .get("scheduler_config")
        .and_then(|s| s.get("max_new_tokens"))
        .and_then(Value::as_u64);
    let next_n = model_config
        .and_then(|m| m.get("next_n"))
        .and_then(Value::as_u64);
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
        decode_budget(max_new_tokens, next_n)
    };
    let switch = enable_profiler_line.map(|line| Evidence {
        path: rel.to_owned(),
        line,
        kind: "yaml_switch",
        text: line_text(src, line),
    });
    let config = RunConfig {
        path: rel.to_owned(),
        model,
        enable_profiler,
        enable_profiler_line,
        max_new_tokens,
        max_new_tokens_line: line_of(&["scheduler_config", "max_new_tokens"]),
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

/// Prefill is always capturable once there is a switch; decode needs a second token.
fn decode_budget(
    max_new_tokens: Option<u64>,
    next_n: Option<u64>,
) -> (Profilable, Option<DecodeForwards>) {
    let Some(max_new_tokens) = max_new_tokens else {
        let reason = "no scheduler_config.max_new_tokens: the decode budget is unknown";
        return (
            Profilable {
                prefill: true,
                decode: false,
                reason: reason.to_owned(),
            },
            None,
        );
    };
    if max_new_tokens <= 1 {
        let reason = format!("max_new_tokens: {max_new_tokens}: prefill only, decode never runs");
        return (
            Profilable {
                prefill: true,
                decode: false,
                reason,
            },
            None,
        );
    }
    let max = max_new_tokens - 1;
    let per_forward = next_n.unwrap_or(0) + 1;
    let min = max.div_ceil(per_forward);
    let reason = if min == max {
        format!("{max} decode forwards per request")
    } else {
        format!(
            "{min} to {max} decode forwards per request (MTP next_n: {})",
            per_forward - 1
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

/// The 1-based line of the key at `path` (e.g. `["model_config", "enable_profiler"]`).
fn key_line(root: Node, src: &str, path: &[&str]) -> Option<usize> {
    let (first, rest) = path.split_first()?;
    let pair = find_pair(root, src, first)?;
    if rest.is_empty() {
        return Some(pair.start_position().row + 1);
    }
    key_line(pair.child_by_field_name("value")?, src, rest)
}

/// The first mapping pair with key `key` below `node`, not looking inside other pairs.
fn find_pair<'t>(node: Node<'t>, src: &str, key: &str) -> Option<Node<'t>> {
    let mut stack = vec![node];
    while let Some(node) = stack.pop() {
        if matches!(node.kind(), "block_mapping_pair" | "flow_pair") {
            let found = node
                .child_by_field_name("key")
                .and_then(|k| k.utf8_text(src.as_bytes()).ok())
                .is_some_and(|k| k.trim().trim_matches(|c| c == '"' || c == '\'') == key);
            if found {
                return Some(node);
            }
            continue;
        }
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    None
}
