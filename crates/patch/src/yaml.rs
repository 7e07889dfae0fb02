//! The YAML side of path A: switch the profiler on and set the token budget in a run config, at
//! the key paths its target names, with byte-range edits located by tree-sitter-yaml in the
//! top-level blocks that hold them (`npuprof_repository::yaml_blocks`: a file of any length, never
//! parsed whole). The file is never re-serialised: comments, alignment, blank lines and spelling
//! (`True`) stay as they are. After editing, old and new are parsed with yaml_serde and must differ
//! in exactly the intended keys.

use npuprof_repository::yaml_blocks::{self, Block};
use npuprof_syntax::{first_error, named_children, text};
use tree_sitter::{Node, Tree};
use yaml_serde::{Mapping, Value};

use crate::edit::{Edit, Edits};
use crate::error::PatchError;
use crate::syntax::syntax_error;
use crate::text::{indentation, line_end, newline};

/// The largest token budget npuprof writes (far beyond any model's context): a larger one is
/// refused, whoever asks.
pub const MAX_TOKEN_BUDGET: u64 = 100_000_000;

/// What to do with the token budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxNewTokens {
    /// Leave it as it is.
    Keep,
    /// Raise it to this value when it is lower (or missing).
    AtLeast(u64),
    /// Set it to exactly this value.
    Exactly(u64),
}

/// What the run config should say after the patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YamlOptions<'k> {
    /// The switch's key path (`section.key`), set to true.
    pub switch: &'k [String],
    /// The token budget's key path (`section.key`).
    pub budget: &'k [String],
    /// The budget policy.
    pub max_new_tokens: MaxNewTokens,
}

/// A `section.key` path as its two parts.
fn two_levels(path: &[String]) -> Result<(&str, &str), PatchError> {
    match path {
        [section, key] => Ok((section, key)),
        _ => Err(PatchError::Refused(format!(
            "npuprof edits `section.key` paths only, not `{}`",
            path.join(".")
        ))),
    }
}

/// The edits for one run config, with a one-line description of each change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlPatch {
    /// The edits, sorted and disjoint.
    pub edits: Edits,
    /// What each change does.
    pub changes: Vec<String>,
}

/// A run config cut into its top-level blocks (a line scan), each parsed with tree-sitter-yaml
/// only when needed: tree-sitter-yaml counts rows in 16 bits, so a file is never parsed whole.
struct Document<'s> {
    source: &'s str,
    blocks: Vec<Block>,
}

impl<'s> Document<'s> {
    /// Cuts `source` into blocks; a top level that is no block mapping is refused (after a
    /// YAML syntax error, which is named first).
    fn read(source: &'s str) -> Result<Self, PatchError> {
        yaml_blocks::check_depth(source).map_err(|e| PatchError::Refused(e.to_string()))?;
        match yaml_blocks::blocks(source) {
            Ok(blocks) if !blocks.is_empty() => Ok(Document { source, blocks }),
            Ok(_) => {
                parse_value(source)?;
                Err(PatchError::Refused(
                    "the config's top level is not a block mapping (`key: value` lines)".to_owned(),
                ))
            }
            Err(e) => {
                parse_value(source)?;
                Err(PatchError::Refused(e.to_string()))
            }
        }
    }

    /// The parsed block of top-level `key`; a syntax error in it, or a block too long for
    /// tree-sitter-yaml, is refused.
    fn section(&self, key: &str) -> Result<Option<Tree>, PatchError> {
        let Some(block) = yaml_blocks::find(&self.blocks, key) else {
            return Ok(None);
        };
        let tree = self.parse(block)?;
        if let Some(error) = first_error(tree.root_node()) {
            return Err(syntax_error(self.source, error, "YAML"));
        }
        Ok(Some(tree))
    }

    fn parse(&self, block: &Block) -> Result<Tree, PatchError> {
        yaml_blocks::parse(self.source, block).map_err(|e| PatchError::Refused(e.to_string()))
    }

    /// The first `Some` of `find` over the top-level blocks in file order, each parsed in turn
    /// (for the file's conventions; a block tree-sitter-yaml cannot parse is passed over).
    fn first<T>(&self, find: impl Fn(Node<'_>) -> Option<T>) -> Option<T> {
        self.blocks
            .iter()
            .filter_map(|b| self.parse(b).ok())
            .find_map(|tree| find(tree.root_node()))
    }

    /// The top-level keys, for messages.
    fn keys(&self) -> String {
        let keys: Vec<&str> = self
            .blocks
            .iter()
            .filter_map(|b| b.key.as_deref())
            .collect();
        keys.join(", ")
    }

    /// Where a new top-level entry goes: after the last block's last line with content.
    fn end(&self) -> usize {
        self.blocks.last().map_or(0, |b| b.bytes.end)
    }
}

/// The pair of top-level `key` in its block's tree.
fn top_pair<'t>(source: &str, tree: &'t Tree, key: &str) -> Option<Node<'t>> {
    find_pair(source, top_mapping(tree.root_node())?, key)
}

fn parse_value(source: &str) -> Result<Value, PatchError> {
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    yaml_blocks::check_depth(source).map_err(|e| PatchError::Refused(e.to_string()))?;
    yaml_serde::from_str(source).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        PatchError::Syntax {
            language: "YAML",
            line,
            column,
            detail: e.to_string(),
        }
    })
}

/// Computes the edits that switch the profiler on and set `max_new_tokens`.
pub fn patch_run_config(source: &str, options: &YamlOptions<'_>) -> Result<YamlPatch, PatchError> {
    let (section, switch_key) = two_levels(options.switch)?;
    let (budget_section, budget_key) = two_levels(options.budget)?;
    let doc = Document::read(source)?;
    let model_tree = doc.section(section)?;
    let budget_tree = if budget_section == section {
        None
    } else {
        doc.section(budget_section)?
    };
    let old_value = parse_value(source)?;
    let nl = newline(source);
    let mut edits = Vec::new();
    let mut changes = Vec::new();
    let mut expected = old_value.clone();

    {
        let Some(model) = model_tree
            .as_ref()
            .and_then(|t| top_pair(source, t, section))
        else {
            return Err(PatchError::NotFound {
                what: format!("{section} (the profiler switch lives in {section}.{switch_key})"),
                found: format!(
                    "top-level keys {}; this config belongs to another pipeline",
                    doc.keys()
                ),
            });
        };
        let mapping = pair_mapping(model).ok_or_else(|| {
            PatchError::Refused(format!(
                "{section} is not a block mapping; npuprof edits `key: value` blocks only"
            ))
        })?;
        let spelling = boolean_spelling(source, &doc, find_pair(source, mapping, switch_key));
        match find_pair(source, mapping, switch_key) {
            Some(pair) => {
                let value = pair.child_by_field_name("value").ok_or_else(|| {
                    PatchError::Refused(format!("{section}.{switch_key} has no value"))
                })?;
                if value_of(&old_value, section, switch_key) != Some(&Value::Bool(true)) {
                    changes.push(format!(
                        "{section}.{switch_key}: {} → {spelling}",
                        text(value, source)
                    ));
                    edits.push(replace_scalar(source, value, spelling));
                }
            }
            None => {
                changes.push(format!("{section}.{switch_key}: added ({spelling})"));
                edits.push(insert_pair(source, mapping, switch_key, spelling, nl));
            }
        }
        set_value(&mut expected, section, switch_key, Value::Bool(true));
    }

    // The budget as the engine's loader (PyYAML) reads it: `040` is 32, so raising "at least
    // 14" leaves it alone; a value it reads no count from is refused unless a budget is given.
    let current = match npuprof_repository::config::budget(source, &old_value, options.budget) {
        Ok(current) => current,
        Err(_) if matches!(options.max_new_tokens, MaxNewTokens::Exactly(_)) => None,
        Err(e) => return Err(PatchError::Refused(e.to_string())),
    };
    let target = match options.max_new_tokens {
        MaxNewTokens::Keep => None,
        MaxNewTokens::AtLeast(min) => (current.is_none_or(|c| c < min)).then_some(min),
        MaxNewTokens::Exactly(n) => (current != Some(n)).then_some(n),
    };
    if let Some(target) = target {
        if target > MAX_TOKEN_BUDGET {
            return Err(PatchError::Refused(format!(
                "{budget_section}.{budget_key} {target} is more than npuprof writes \
                 ({MAX_TOKEN_BUDGET} tokens)"
            )));
        }
        let new = target.to_string();
        let budget_tree = budget_tree.as_ref().or(model_tree.as_ref());
        match budget_tree.and_then(|t| top_pair(source, t, budget_section)) {
            Some(scheduler) => {
                let mapping = pair_mapping(scheduler).ok_or_else(|| {
                    PatchError::Refused(format!("{budget_section} is not a block mapping; npuprof edits `key: value` blocks only"))
                })?;
                match find_pair(source, mapping, budget_key)
                    .and_then(|p| p.child_by_field_name("value"))
                {
                    Some(value) => {
                        changes.push(format!(
                            "{budget_section}.{budget_key}: {} → {new}",
                            text(value, source)
                        ));
                        edits.push(replace_scalar(source, value, &new));
                    }
                    None => {
                        changes.push(format!("{budget_section}.{budget_key}: added ({new})"));
                        edits.push(insert_pair(source, mapping, budget_key, &new, nl));
                    }
                }
            }
            None => {
                changes.push(format!("{budget_section}: added with {budget_key} {new}"));
                let child_indent = doc.first(nested_indent).unwrap_or_else(|| "  ".to_owned());
                let at = content_end(source, doc.end());
                insert_after(
                    &mut edits,
                    at,
                    format!("{nl}{nl}{budget_section}:{nl}{child_indent}{budget_key}: {new}"),
                );
            }
        }
        set_value(
            &mut expected,
            budget_section,
            budget_key,
            Value::Number(target.into()),
        );
    }

    let edits = Edits::new(source, edits)?;
    let patched = edits.apply(source);
    let not_parsing =
        |e: PatchError| PatchError::Internal(format!("the patched YAML does not parse: {e}"));
    let new_doc = Document::read(&patched).map_err(not_parsing)?;
    for key in [section, budget_section] {
        new_doc.section(key).map_err(not_parsing)?;
    }
    let new_value = parse_value(&patched)
        .map_err(|e| PatchError::Internal(format!("the patched YAML does not parse: {e}")))?;
    if new_value != expected {
        return Err(PatchError::Internal(
            "the patched YAML differs from the original in more than the intended keys".to_owned(),
        ));
    }
    Ok(YamlPatch { edits, changes })
}

/// Inserts `text` at `at`, after what another edit already inserts there (the switch added to
/// the last section).
fn insert_after(edits: &mut Vec<Edit>, at: usize, text: String) {
    match edits.iter_mut().find(|e| e.range == (at..at)) {
        Some(edit) => edit.replacement.push_str(&text),
        None => edits.push(Edit::insert(at, text)),
    }
}

/// The document's top-level block mapping.
fn top_mapping(root: Node<'_>) -> Option<Node<'_>> {
    let document = named_children(root)
        .into_iter()
        .find(|n| n.kind() == "document")?;
    let node = named_children(document)
        .into_iter()
        .find(|n| n.kind() == "block_node")?;
    named_children(node)
        .into_iter()
        .find(|n| n.kind() == "block_mapping")
}

/// The block mapping a pair's value holds.
fn pair_mapping(pair: Node<'_>) -> Option<Node<'_>> {
    let value = pair.child_by_field_name("value")?;
    (value.kind() == "block_node").then(|| {
        named_children(value)
            .into_iter()
            .find(|n| n.kind() == "block_mapping")
    })?
}

fn key_text<'s>(source: &'s str, pair: Node<'_>) -> Option<&'s str> {
    let key = pair.child_by_field_name("key")?;
    Some(text(key, source).trim_matches(['"', '\'']))
}

fn find_pair<'t>(source: &str, mapping: Node<'t>, key: &str) -> Option<Node<'t>> {
    named_children(mapping)
        .into_iter()
        .find(|n| n.kind() == "block_mapping_pair" && key_text(source, *n) == Some(key))
}

/// The indentation of the first nested mapping's keys in a block's tree.
fn nested_indent(root: Node<'_>) -> Option<String> {
    named_children(top_mapping(root)?)
        .into_iter()
        .filter_map(pair_mapping)
        .find_map(|m| {
            named_children(m)
                .into_iter()
                .find(|n| n.kind() == "block_mapping_pair")
        })
        .map(pair_indent)
}

/// The indentation of a pair: spaces to its column (YAML indents block mappings with spaces
/// only, so this is also the text before a pair that starts its line).
fn pair_indent(pair: Node<'_>) -> String {
    " ".repeat(pair.start_position().column)
}

/// `key: value` as a new line after the mapping's last entry, at its siblings' indentation.
fn insert_pair(source: &str, mapping: Node<'_>, key: &str, value: &str, nl: &str) -> Edit {
    let pairs: Vec<Node<'_>> = named_children(mapping)
        .into_iter()
        .filter(|n| n.kind() == "block_mapping_pair")
        .collect();
    let indent = pairs.first().map_or_else(
        || indentation(source, mapping.start_byte()).to_owned(),
        |p| pair_indent(*p),
    );
    let last_end = pairs.last().map_or(mapping.end_byte(), |p| p.end_byte());
    Edit::insert(
        content_end(source, last_end),
        format!("{nl}{indent}{key}: {value}"),
    )
}

/// The end of the line holding the last non-blank character before `end` (tree-sitter-yaml
/// lets a block extend over trailing newlines).
fn content_end(source: &str, end: usize) -> usize {
    let trimmed = source[..end].trim_end().len();
    line_end(source, trimmed.saturating_sub(1).min(trimmed))
}

/// Replaces a scalar, keeping an inline comment's column when the padding allows it.
fn replace_scalar(source: &str, value: Node<'_>, new: &str) -> Edit {
    let end = value.end_byte();
    let rest = &source[end..line_end(source, end)];
    let padding = rest.len() - rest.trim_start_matches(' ').len();
    if padding > 0 && rest[padding..].starts_with('#') {
        let old_width = text(value, source).chars().count();
        let new_width = new.chars().count();
        let new_padding = (padding + old_width).saturating_sub(new_width).max(1);
        Edit::replace(
            value.start_byte()..end + padding,
            format!("{new}{}", " ".repeat(new_padding)),
        )
    } else {
        Edit::replace(value.byte_range(), new)
    }
}

/// How the file spells `true`: like the key's current value, else like the file's first boolean,
/// else `True` (the recipes convention).
fn boolean_spelling(source: &str, doc: &Document<'_>, pair: Option<Node<'_>>) -> &'static str {
    let current = pair
        .and_then(|p| p.child_by_field_name("value"))
        .filter(|v| is_boolean(source, *v))
        .map(|v| text(v, source).to_owned());
    let sample = current
        .or_else(|| doc.first(|root| Some(text(first_boolean(source, root)?, source).to_owned())));
    match sample.as_deref() {
        Some(s) if s.chars().all(|c| c.is_ascii_lowercase()) => "true",
        Some(s) if s.chars().all(|c| c.is_ascii_uppercase()) => "TRUE",
        _ => "True",
    }
}

fn is_boolean(source: &str, node: Node<'_>) -> bool {
    matches!(
        text(node, source).to_ascii_lowercase().as_str(),
        "true" | "false"
    )
}

fn first_boolean<'t>(source: &str, node: Node<'t>) -> Option<Node<'t>> {
    if node.kind() == "boolean_scalar" && is_boolean(source, node) {
        return Some(node);
    }
    named_children(node)
        .into_iter()
        .find_map(|n| first_boolean(source, n))
}

fn value_of<'v>(value: &'v Value, section: &str, key: &str) -> Option<&'v Value> {
    value.get(section)?.get(key)
}

fn set_value(root: &mut Value, section: &str, key: &str, new: Value) {
    let Some(top) = root.as_mapping_mut() else {
        return;
    };
    let entry = top
        .entry(Value::String(section.to_owned()))
        .or_insert_with(|| Value::Mapping(Mapping::new()));
    if let Some(mapping) = entry.as_mapping_mut() {
        mapping.insert(Value::String(key.to_owned()), new);
    }
}
