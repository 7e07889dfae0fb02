//! Test helpers: parse a snippet and pick the node a test is about.

use tree_sitter::{Node, Tree};

/// Parses a snippet (tree-sitter always gives a tree for these).
pub(crate) fn tree(source: &str) -> Tree {
    crate::parse(source).expect("a tree")
}

/// The expression of the first statement (`f(a)` in `f(a)\n`).
pub(crate) fn first_expression(tree: &Tree) -> Node<'_> {
    tree.root_node()
        .named_child(0)
        .and_then(|statement| statement.named_child(0))
        .expect("an expression statement")
}

/// The first call in document order.
pub(crate) fn first_call(tree: &Tree) -> Node<'_> {
    crate::descendants_in_scope(tree.root_node())
        .into_iter()
        .find(|n| n.kind() == "call")
        .expect("a call")
}
