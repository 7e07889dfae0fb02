//! A run config read through a shape's key paths: the switch, the token budget, `next_n`, a
//! draft model, the world size and the `model_name` the launcher names results after.

use serde::Serialize;
use yaml_serde::Value;

use crate::definition::ConfigKeys;
use crate::error::TargetError;
use crate::pyyaml::{self, PyScalar};
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
    yaml_blocks::check_depth(text).map_err(|e| TargetError::Yaml(e.to_string()))?;
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
    read_value(text, &parse_yaml(text)?, keys)
}

/// The run config's values at `keys`, from its text and its parsed document (see
/// [`parse_yaml`]); a token budget the engine would read no count from is refused ([`budget`]).
pub fn read_value(text: &str, value: &Value, keys: &ConfigKeys) -> Result<RunConfig, TargetError> {
    let budget = budget(text, value, &keys.budget).map_err(TargetError::Budget)?;
    Ok(read_unchecked(value, keys, budget))
}

/// [`read_value`] with the budget already read.
fn read_unchecked(value: &Value, keys: &ConfigKeys, budget: Option<u64>) -> RunConfig {
    let parent = &keys.switch[..keys.switch.len().saturating_sub(1)];
    let has_switch_section = lookup(value, parent).is_some_and(Value::is_mapping);
    let switch = match lookup(value, &keys.switch) {
        None => Switch::Missing,
        Some(Value::Bool(b)) => Switch::Bool(*b),
        Some(other) => Switch::Other {
            truthy: python_truthy(other),
        },
    };
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

/// Why a run config's token budget gives the engine no count to run to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{key} is `{written}`, which the engine's YAML loader (PyYAML) reads as {reads}: {why}; write a plain integer, e.g. `{leaf}: 32`"
)]
pub struct BudgetError {
    /// The key path, dotted.
    pub key: String,
    /// The value as written (its first line, at most 60 characters).
    pub written: String,
    /// What PyYAML makes of it.
    pub reads: String,
    /// Why that is no budget.
    pub why: &'static str,
    /// The key's last part.
    pub leaf: String,
}

/// The token budget at `path` as the engine reads it: `Ok(None)` when the key is absent (the
/// engine's default applies), `Ok(Some(n))` for an integer of 0 or more in any notation PyYAML
/// reads as one (`040` is 32), else an error that says what PyYAML reads instead. The scalar is
/// read as written (tree-sitter), since npuprof's YAML library follows YAML 1.2; a budget
/// supplied by a merge key (`<<: *base`), whose scalar is elsewhere, is taken as that library
/// reads it when that is an integer without a leading zero or an underscore.
pub fn budget(text: &str, value: &Value, path: &[String]) -> Result<Option<u64>, BudgetError> {
    let Some(found) = lookup(value, path) else {
        return Ok(None);
    };
    let refuse = |written: String, reads: String, why: &'static str| BudgetError {
        key: dotted(path),
        written,
        reads,
        why,
        leaf: path.last().cloned().unwrap_or_default(),
    };
    let Some(raw) = raw_value(text, path) else {
        return match found {
            Value::Number(n) if n.as_u64().is_some() => Ok(n.as_u64()),
            other => Err(refuse(
                short(&yaml_serde::to_string(other).unwrap_or_default()),
                "something other than a plain integer".to_owned(),
                "npuprof cannot see the scalar as written (a merge key supplies it)",
            )),
        };
    };
    let scalar = match &raw {
        Raw::Plain(t) => pyyaml::resolve_plain(t),
        Raw::Quoted(_) => PyScalar::Str,
        Raw::Empty => PyScalar::Null,
        Raw::Other(_) => {
            return Err(refuse(
                short(raw.text()),
                "a list, a mapping, an alias or a tagged value".to_owned(),
                "the engine compares the decode step count with it, which fails (or is not what \
                 it looks like)",
            ));
        }
    };
    let why = match scalar {
        PyScalar::Int(Some(n)) if n >= 0 => {
            return u64::try_from(n).map(Some).map_err(|_| {
                refuse(
                    short(raw.text()),
                    scalar.to_string(),
                    "npuprof counts to 2^64 - 1",
                )
            });
        }
        PyScalar::Int(Some(_)) => "a negative budget is no count of tokens",
        PyScalar::Int(None) => "npuprof counts to 2^64 - 1",
        PyScalar::Float => {
            "the engine uses the budget as a count (KV-cache sizes, step comparisons), and npuprof cannot prove a float works there"
        }
        PyScalar::Bool(_) => "a bool is no count of tokens",
        PyScalar::Null | PyScalar::Str => {
            "the engine compares its decode step count with it, which raises a TypeError at the first decode step"
        }
    };
    Err(refuse(short(raw.text()), scalar.to_string(), why))
}

/// A value as written in the text.
enum Raw {
    /// A plain (unquoted) scalar, trimmed.
    Plain(String),
    /// A single- or double-quoted scalar.
    Quoted(String),
    /// No value (`key:` alone).
    Empty,
    /// A collection, an alias, a tagged value or a block scalar.
    Other(String),
}

impl Raw {
    fn text(&self) -> &str {
        match self {
            Raw::Plain(t) | Raw::Quoted(t) | Raw::Other(t) => t,
            Raw::Empty => "",
        }
    }
}

/// The first line of `s`, at most 60 characters.
fn short(s: &str) -> String {
    let line = s.trim().lines().next().unwrap_or("");
    let mut out: String = line.chars().take(60).collect();
    if out.len() < line.len() || s.trim().lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

/// The value at `path` as written (`None` when tree-sitter finds no such key: a merge key
/// supplies it, or the text cannot be parsed).
fn raw_value(text: &str, path: &[String]) -> Option<Raw> {
    with_pair(text, path, |pair| raw_of(text, pair))
}

/// The value of mapping pair `pair` as written.
fn raw_of(text: &str, pair: tree_sitter::Node<'_>) -> Raw {
    let Some(value) = pair.child_by_field_name("value") else {
        return Raw::Empty;
    };
    let written = npuprof_syntax::text(value, text).to_owned();
    let kids: Vec<_> = npuprof_syntax::all_children(value)
        .into_iter()
        .filter(|k| k.kind() != "anchor" && k.kind() != "comment")
        .collect();
    match (value.kind(), kids.as_slice()) {
        ("flow_node", [only]) if only.kind() == "plain_scalar" => {
            let scalar = npuprof_syntax::text(*only, text).trim();
            if scalar.contains('\n') {
                // A multi-line plain scalar folds into a string with spaces.
                Raw::Quoted(scalar.to_owned())
            } else {
                Raw::Plain(scalar.to_owned())
            }
        }
        ("flow_node", [only])
            if matches!(only.kind(), "double_quote_scalar" | "single_quote_scalar") =>
        {
            Raw::Quoted(written)
        }
        _ => Raw::Other(written),
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
    with_pair(text, path, |pair| pair.start_position().row + 1)
}

/// `f` of the mapping pair at `path` in YAML `text` (`None` when there is none): the top-level
/// block holding it is found by a line scan and parsed alone with tree-sitter-yaml.
fn with_pair<R>(
    text: &str,
    path: &[String],
    f: impl FnOnce(tree_sitter::Node<'_>) -> R,
) -> Option<R> {
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
    Some(f(node))
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
