//! Parsing with tree-sitter and locating syntax errors.

use tree_sitter::{Language, Node, Parser, Tree};

use crate::error::PatchError;

/// Parses `text` with `language`.
pub(crate) fn parse(text: &str, language: &Language) -> Result<Tree, PatchError> {
    let mut parser = Parser::new();
    parser
        .set_language(language)
        .map_err(|e| PatchError::Internal(format!("cannot load the tree-sitter grammar: {e}")))?;
    parser
        .parse(text, None)
        .ok_or_else(|| PatchError::Internal("tree-sitter returned no tree".to_owned()))
}

/// The first ERROR or MISSING node, in document order.
pub(crate) fn first_error(node: Node<'_>) -> Option<Node<'_>> {
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    if !node.has_error() {
        return None;
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    children.into_iter().find_map(first_error)
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
    while let Some(inner) = children(node).into_iter().find_map(first_error) {
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

/// The source text of `node`.
pub(crate) fn text<'a>(source: &'a str, node: Node<'_>) -> &'a str {
    &source[node.byte_range()]
}

/// The named children of `node`.
pub(crate) fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// All children of `node`, named or not.
pub(crate) fn children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}
