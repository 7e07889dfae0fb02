//! A run config read through a shape's key paths: the switch, the token budget, `next_n`, a
//! draft model, the world size and the `model_name` the launcher names results after.

use serde::Serialize;
use yaml_serde::Value;

use crate::definition::ConfigKeys;
use crate::error::TargetError;
use crate::yaml_blocks;

/// A YAML key path, printed `a.b.c`.
pub fn dotted(path: &[String]) -> String {
    path.join(".")
}

/// What the profiler switch says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Switch {
    /// The key is absent.
    Missing,
    /// A YAML boolean.
    Bool(bool),
    /// Something else; the engine reads it without bool coercion, so a non-empty string such as
    /// `"False"` switches the profiler on.
    Other {
        /// Whether Python would take it as true.
        truthy: bool,
    },
}

impl Switch {
    /// Whether the engine will profile.
    pub fn is_on(self) -> bool {
        matches!(self, Switch::Bool(true) | Switch::Other { truthy: true })
    }
}

/// A run config's values, read through the key paths of a shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunConfig {
    /// Whether the switch's parent mapping exists (`model_config` for LLM configs).
    pub has_switch_section: bool,
    /// The profiler switch.
    pub switch: Switch,
    /// The token budget as written.
    pub budget: Option<u64>,
    /// The budget the engine uses (the default when absent).
    pub effective_budget: u64,
    /// MTP speculative steps (0 when absent).
    pub next_n: u64,
    /// The draft model type, when the config names one other than `none`.
    pub draft_model: Option<String>,
    /// `parallel_config.world_size`, else the top-level `world_size`.
    pub world_size: Option<u64>,
    /// The name results are filed under: `model_config.model_name`, else the top-level
    /// `model_name`, else `None` (the launcher's Python prints that literally).
    pub model_name: String,
}

/// Parses YAML text into a value, with a BOM stripped and merge keys (`<<: *base`) applied.
pub fn parse_yaml(text: &str) -> Result<Value, TargetError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut value: Value =
        yaml_serde::from_str(text).map_err(|e| TargetError::Yaml(e.to_string()))?;
    value
        .apply_merge()
        .map_err(|e| TargetError::Yaml(e.to_string()))?;
    Ok(value)
}

/// The value at `path`.
pub fn lookup<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, key| v.get(key.as_str()))
}

/// Reads `text` with `keys`.
pub fn read(text: &str, keys: &ConfigKeys) -> Result<RunConfig, TargetError> {
    Ok(read_value(&parse_yaml(text)?, keys))
}

/// The run config's values at `keys`, from its parsed document (see [`parse_yaml`]).
pub fn read_value(value: &Value, keys: &ConfigKeys) -> RunConfig {
    let parent = &keys.switch[..keys.switch.len().saturating_sub(1)];
    let has_switch_section = lookup(value, parent).is_some_and(Value::is_mapping);
    let switch = match lookup(value, &keys.switch) {
        None => Switch::Missing,
        Some(Value::Bool(b)) => Switch::Bool(*b),
        Some(other) => Switch::Other {
            truthy: python_truthy(other),
        },
    };
    let budget = lookup(value, &keys.budget).and_then(Value::as_u64);
    let draft_model = keys
        .draft
        .as_ref()
        .and_then(|p| lookup(value, p))
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty() && !d.eq_ignore_ascii_case("none"))
        .map(str::to_owned);
    let world_size = value
        .get("parallel_config")
        .and_then(|p| p.get("world_size"))
        .or_else(|| value.get("world_size"))
        .and_then(Value::as_u64);
    RunConfig {
        has_switch_section,
        switch,
        budget,
        effective_budget: budget.unwrap_or(keys.budget_default),
        next_n: lookup(value, &keys.next_n)
            .and_then(Value::as_u64)
            .unwrap_or(0),
        draft_model,
        world_size,
        model_name: model_name(value),
    }
}

/// The launcher's `model_name`: `model_config.model_name`, else the top-level one, else `None`.
pub fn model_name(value: &Value) -> String {
    let from_section = value.get("model_config").and_then(|m| m.get("model_name"));
    match from_section.or_else(|| value.get("model_name")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => if *b { "True" } else { "False" }.to_owned(),
        _ => "None".to_owned(),
    }
}

/// Python's truth value of a YAML scalar read without coercion.
fn python_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Sequence(s) => !s.is_empty(),
        Value::Mapping(m) => !m.is_empty(),
        Value::Tagged(t) => python_truthy(&t.value),
    }
}

/// The 1-based line of the key at `path` in YAML `text`: the top-level block holding it is found
/// by a line scan and parsed alone with tree-sitter-yaml (so the file may be of any length).
pub fn key_line(text: &str, path: &[String]) -> Option<usize> {
    let (first, _) = path.split_first()?;
    let blocks = yaml_blocks::blocks(text).ok()?;
    let block = yaml_blocks::find(&blocks, first)?;
    let tree = yaml_blocks::parse(text, block).ok()?;
    let mut node = tree.root_node();
    for (depth, key) in path.iter().enumerate() {
        if depth > 0 {
            node = node.child_by_field_name("value")?;
        }
        node = find_pair(node, text, key)?;
    }
    Some(node.start_position().row + 1)
}

/// The first mapping pair with key `key` below `node`, not looking inside other pairs.
fn find_pair<'t>(
    node: tree_sitter::Node<'t>,
    src: &str,
    key: &str,
) -> Option<tree_sitter::Node<'t>> {
    let mut stack = vec![node];
    while let Some(node) = stack.pop() {
        if matches!(node.kind(), "block_mapping_pair" | "flow_pair") {
            let found = node
                .child_by_field_name("key")
                .map(|k| npuprof_syntax::text(k, src))
                .is_some_and(|k| k.trim().trim_matches(['"', '\'']) == key);
            if found {
                return Some(node);
            }
            continue;
        }
        let mut kids = npuprof_syntax::all_children(node);
        kids.reverse();
        stack.extend(kids);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::Definitions;

    fn keys(id: &str) -> ConfigKeys {
        let d = Definitions::builtin();
        d.shapes.iter().find(|s| s.id == id).unwrap().config.clone()
    }

    #[test]
    fn a_quoted_false_is_truthy_like_python() {
        let c = read(
            "model_config:\n  enable_profiler: \"False\"\n",
            &keys("shared-engine"),
        )
        .unwrap();
        assert_eq!(c.switch, Switch::Other { truthy: true });
        assert!(c.switch.is_on());
    }

    #[test]
    fn merge_keys_are_applied_when_reading_next_n() {
        let text = "base: &b\n  next_n: 2\nmodel_config:\n  <<: *b\n  enable_profiler: False\n";
        let c = read(text, &keys("shared-engine")).unwrap();
        assert_eq!(c.next_n, 2);
        assert_eq!(c.switch, Switch::Bool(false));
    }

    #[test]
    fn a_bom_is_read_not_refused_as_a_second_document() {
        let text = "\u{feff}model_config:\n  next_n: 1\n  enable_profiler: True\n";
        let c = read(text, &keys("shared-engine")).unwrap();
        assert_eq!((c.next_n, c.switch), (1, Switch::Bool(true)));
        let path = ["model_config".to_owned(), "next_n".to_owned()];
        assert_eq!(key_line(text, &path), Some(2));
    }

    #[test]
    fn budget_defaults_and_model_name_fall_back_like_the_launcher() {
        let c = read(
            "model_name: GLM-x\nmodel_config:\n  enable_profiler: False\n",
            &keys("legacy-runner"),
        )
        .unwrap();
        assert_eq!((c.budget, c.effective_budget), (None, 32));
        assert_eq!(c.model_name, "GLM-x");
        let c = read("data_config: {}\n", &keys("legacy-runner")).unwrap();
        assert_eq!(c.model_name, "None");
        assert!(!c.has_switch_section);
    }

    #[test]
    fn a_draft_model_named_none_is_no_draft_model() {
        let k = keys("legacy-runner");
        let none = read("model_config:\n  draft_model_type: \"none\"\n", &k).unwrap();
        assert_eq!(none.draft_model, None);
        let dspark = read("model_config:\n  draft_model_type: dspark\n", &k).unwrap();
        assert_eq!(dspark.draft_model.as_deref(), Some("dspark"));
    }

    #[test]
    fn key_line_finds_keys_past_tree_sitter_yamls_row_limit() {
        let pad =
            |name: &str| -> String { (0..20_000).map(|i| format!("{name}_{i}: {i}\n")).collect() };
        let text = format!(
            "{}model_config:\n  enable_profiler: False\n{}scheduler_config: {{max_new_tokens: 8}}\n",
            pad("a"),
            pad("b")
        );
        let path = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            key_line(&text, &path("model_config.enable_profiler")),
            Some(20_002)
        );
        assert_eq!(
            key_line(&text, &path("scheduler_config.max_new_tokens")),
            Some(40_003)
        );
        assert_eq!(key_line(&text, &path("scheduler_config.block_size")), None);
    }
}
