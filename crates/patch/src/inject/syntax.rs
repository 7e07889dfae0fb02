//! Small tree-sitter helpers for reading an entry script.

use tree_sitter::{Node, Parser, Tree};

/// Parses Python source.
pub(super) fn parse(source: &str) -> Option<Tree> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .ok()?;
    parser.parse(source, None)
}

/// The text of a node.
pub(super) fn text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or("")
}

/// The named children of a node, without comments.
pub(super) fn children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .filter(|n| n.kind() != "comment")
        .collect()
}

/// Every node under `root` in document order, not entering nested function/class bodies.
pub(super) fn descendants(root: Node<'_>) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        out.push(node);
        if node != root
            && matches!(
                node.kind(),
                "function_definition" | "class_definition" | "lambda"
            )
        {
            continue;
        }
        let mut kids = children(node);
        kids.reverse();
        stack.extend(kids);
    }
    out
}

/// `a` / `a.b.c` for identifiers and attribute chains.
pub(super) fn dotted(node: Node<'_>, source: &str) -> Option<String> {
    match node.kind() {
        "identifier" => Some(text(node, source).to_owned()),
        "attribute" => Some(format!(
            "{}.{}",
            dotted(node.child_by_field_name("object")?, source)?,
            text(node.child_by_field_name("attribute")?, source)
        )),
        _ => None,
    }
}

/// The arguments of a call (positional and keyword nodes).
pub(super) fn arguments(call: Node<'_>) -> Vec<Node<'_>> {
    call.child_by_field_name("arguments")
        .map(children)
        .unwrap_or_default()
}

/// The 1-based line of a node.
pub(super) fn line(node: Node<'_>) -> usize {
    node.start_position().row + 1
}

/// The names of a function's parameters that have no default (not `*args`/`**kwargs`).
pub(super) fn required_params(function: Node<'_>, source: &str) -> Vec<String> {
    let Some(params) = function.child_by_field_name("parameters") else {
        return Vec::new();
    };
    children(params)
        .into_iter()
        .filter_map(|p| match p.kind() {
            "identifier" => Some(text(p, source).to_owned()),
            "typed_parameter" => p
                .named_child(0)
                .filter(|n| n.kind() == "identifier")
                .map(|n| text(n, source).to_owned()),
            _ => None,
        })
        .collect()
}
