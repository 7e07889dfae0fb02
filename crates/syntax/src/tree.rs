//! Reading any node: its text, its children, the nodes of its scope and its line.

use tree_sitter::Node;

/// The source text of `node` (empty if its range is not in `source`).
pub fn text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or("")
}

/// The named children of `node`, comments included.
pub fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// The named children of `node`, without comments.
pub fn children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .filter(|n| n.kind() != "comment")
        .collect()
}

/// Every child of `node`, named or not (punctuation and keywords included).
pub fn all_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

/// Whether `node` starts a new scope (function, lambda or class definition).
pub fn is_definition(node: Node<'_>) -> bool {
    matches!(
        node.kind(),
        "function_definition" | "class_definition" | "lambda"
    )
}

/// `root` and every named node under it in document order, without comments and not
/// descending into nested function, lambda or class definitions (their bodies run elsewhere;
/// the definition node itself is listed).
pub fn descendants_in_scope(root: Node<'_>) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        out.push(node);
        if node != root && is_definition(node) {
            continue;
        }
        let mut kids = children(node);
        kids.reverse();
        stack.extend(kids);
    }
    out
}

/// Every named node below `node` (nested definitions entered, comments included), in
/// document order, without `node` itself.
pub fn descendants(node: Node<'_>) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        out.push(n);
        let mut kids = named_children(n);
        kids.reverse();
        stack.extend(kids);
    }
    out.remove(0);
    out
}

/// The nearest enclosing function definition, or the module (the node itself when it has
/// neither around it).
pub fn scope_of(node: Node<'_>) -> Node<'_> {
    let mut current = node.parent();
    while let Some(n) = current {
        if matches!(n.kind(), "function_definition" | "module") {
            return n;
        }
        current = n.parent();
    }
    node
}

/// The 1-based line `node` starts on.
pub fn line(node: Node<'_>) -> usize {
    node.start_position().row + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{first_call, first_expression, tree};

    fn kinds(nodes: &[Node<'_>]) -> Vec<String> {
        nodes.iter().map(|n| n.kind().to_owned()).collect()
    }

    #[test]
    fn text_is_the_node_source_and_empty_out_of_range() {
        let source = "x = 'é'\r\n";
        let parsed = tree(source);
        let assignment = first_expression(&parsed);
        assert_eq!(text(assignment, source), "x = 'é'");
        assert_eq!(text(assignment, "x"), "");
    }

    #[test]
    fn named_children_keep_comments_and_children_drop_them() {
        let source = "f(a,  # first\n  b=2)\n";
        let parsed = tree(source);
        let call = first_call(&parsed);
        let args = call.child_by_field_name("arguments").expect("arguments");
        assert_eq!(
            kinds(&named_children(args)),
            ["identifier", "comment", "keyword_argument"]
        );
        assert_eq!(kinds(&children(args)), ["identifier", "keyword_argument"]);
    }

    #[test]
    fn all_children_include_punctuation() {
        let source = "f(a, b)\n";
        let parsed = tree(source);
        let call = first_call(&parsed);
        let args = call.child_by_field_name("arguments").expect("arguments");
        let texts: Vec<&str> = all_children(args)
            .into_iter()
            .map(|n| text(n, source))
            .collect();
        assert_eq!(texts, ["(", "a", ",", "b", ")"]);
    }

    #[test]
    fn is_definition_matches_functions_classes_and_lambdas() {
        let source = "def f(): pass\nclass C: pass\ng = lambda: 0\nx = 1\n";
        let parsed = tree(source);
        let found: Vec<&str> = descendants_in_scope(parsed.root_node())
            .into_iter()
            .filter(|n| is_definition(*n))
            .map(|n| n.kind())
            .collect();
        assert_eq!(found, ["function_definition", "class_definition", "lambda"]);
    }

    #[test]
    fn descendants_in_scope_stop_at_nested_definitions() {
        let source = "def outer():\r\n    a = 1  # note\r\n    def inner():\r\n        b = 2\r\n    c = lambda: d\r\n";
        let parsed = tree(source);
        let outer = parsed.root_node().named_child(0).expect("outer");
        let all = descendants_in_scope(outer);
        assert_eq!(all.first(), Some(&outer));
        let identifiers: Vec<&str> = all
            .iter()
            .filter(|n| n.kind() == "identifier")
            .map(|n| text(*n, source))
            .collect();
        assert_eq!(identifiers, ["outer", "a", "c"]);
        assert!(all.iter().all(|n| n.kind() != "comment"));
        assert_eq!(
            all.iter().filter(|n| is_definition(**n)).count(),
            3,
            "outer itself, inner and the lambda are listed but not entered"
        );
    }

    #[test]
    fn line_is_one_based_with_crlf() {
        let source = "a = 1\r\n\r\nb = 2\r\n";
        let parsed = tree(source);
        let lines: Vec<usize> = children(parsed.root_node()).into_iter().map(line).collect();
        assert_eq!(lines, [1, 3]);
    }
}
