//! lint's helpers over the tree-sitter Python syntax tree, on top of `npuprof-syntax`: dotted
//! names, keyword arguments and positions. Names and values are `npuprof_syntax::semantic`'s.

use npuprof_syntax::kwarg;
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

/// 1-based line and 1-based character column of a node's start.
pub(crate) fn position(node: Node<'_>, source: &str) -> (usize, usize) {
    let point = node.start_position();
    let line_start = node.start_byte() - point.column;
    let column = source
        .get(line_start..node.start_byte())
        .map_or(point.column, |prefix| prefix.chars().count());
    (point.row + 1, column + 1)
}
