//! Parsing with tree-sitter (Python or YAML) and describing syntax errors as `PatchError`s, on
//! top of `npuprof-syntax`.

use npuprof_syntax::{all_children, first_error, parse_with};
use tree_sitter::{Language, Node, Tree};

use crate::error::PatchError;

/// Parses `text` with `language`.
pub(crate) fn parse(text: &str, language: &Language) -> Result<Tree, PatchError> {
    parse_with(text, language).map_err(|e| PatchError::Internal(e.to_string()))
}

/// Parses `text` and refuses it when it has a syntax error.
pub(crate) fn parse_valid(
    text: &str,
    language: &Language,
    name: &'static str,
) -> Result<Tree, PatchError> {
    let tree = parse(text, language)?;
    if let Some(error) = first_error(tree.root_node()) {
        return Err(syntax_error(text, error, name));
    }
    Ok(tree)
}

/// Describes a syntax error node. tree-sitter's ERROR nodes can span much more than the
/// mistake, so the innermost ERROR is taken and its end reported (where parsing failed); a
/// MISSING node is reported at its position.
pub(crate) fn syntax_error(text: &str, node: Node<'_>, language: &'static str) -> PatchError {
    let mut node = node;
    while let Some(inner) = all_children(node).into_iter().find_map(first_error) {
        node = inner;
    }
    let (at, point) = if node.is_missing() {
        (node.start_byte(), node.start_position())
    } else {
        (node.end_byte(), node.end_position())
    };
    let start = crate::text::line_start(text, at);
    let detail = format!(
        "near `{}`",
        text[start..crate::text::line_end(text, at)].trim()
    );
    PatchError::Syntax {
        language,
        line: point.row + 1,
        column: point.column + 1,
        detail,
    }
}
