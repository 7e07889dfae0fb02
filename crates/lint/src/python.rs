//! lint's helpers over the tree-sitter Python syntax tree, on top of `npuprof-syntax`: scopes,
//! splats and positions. Values of names are resolved in `resolve`.

use npuprof_syntax::{arguments, kwarg};
use tree_sitter::Node;

/// The last segment of a dotted name (`c` for `a.b.c`).
pub(crate) fn last_segment(dotted: &str) -> &str {
    dotted.rsplit('.').next().unwrap_or(dotted)
}

/// The keyword argument node (name and value) `name` of a call.
pub(crate) fn kwarg_node<'t>(call: Node<'t>, name: &str, source: &str) -> Option<Node<'t>> {
    let value = kwarg(call, name, source)?;
    value.parent()
}

/// Whether a call passes `*args` or `**kwargs` (its arguments cannot be known).
pub(crate) fn has_splat(call: Node<'_>) -> bool {
    arguments(call)
        .iter()
        .any(|a| matches!(a.kind(), "list_splat" | "dictionary_splat"))
}

/// The nearest enclosing function definition, or the module.
pub(crate) fn scope_of(node: Node<'_>) -> Node<'_> {
    let mut current = node.parent();
    while let Some(n) = current {
        if matches!(n.kind(), "function_definition" | "module") {
            return n;
        }
        current = n.parent();
    }
    node
}

/// 1-based line and 1-based character column of a node's start.
pub(crate) fn position(node: Node<'_>, source: &str) -> (usize, usize) {
    let point = node.start_position();
    let line_start = node.start_byte() - point.column;
    let column = source
        .get(line_start..node.start_byte())
        .map_or(point.column, |prefix| prefix.chars().count());
    (point.row + 1, column + 1)
}
