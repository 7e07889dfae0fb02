//! Parsing source text and locating its first syntax error.

use tree_sitter::{Language, LanguageError, Node, Parser, Tree};

use crate::tree::all_children;

/// Why tree-sitter produced no tree.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The grammar could not be loaded (an ABI version mismatch).
    #[error("cannot load the tree-sitter grammar: {0}")]
    Grammar(#[from] LanguageError),
    /// The parser gave up without a tree.
    #[error("tree-sitter returned no tree")]
    NoTree,
}

/// Parses `source` with any tree-sitter `language`. Syntax errors do not fail the parse: they
/// are ERROR / MISSING nodes in the tree (see [`first_error`]).
pub fn parse_with(source: &str, language: &Language) -> Result<Tree, ParseError> {
    let mut parser = Parser::new();
    parser.set_language(language)?;
    parser.parse(source, None).ok_or(ParseError::NoTree)
}

/// Parses Python source. `None` only if tree-sitter gives up (it does not on ordinary input).
pub fn parse(source: &str) -> Option<Tree> {
    parse_with(source, &tree_sitter_python::LANGUAGE.into()).ok()
}

/// The first ERROR or MISSING node under `node` (itself included), in document order.
pub fn first_error(node: Node<'_>) -> Option<Node<'_>> {
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    if !node.has_error() {
        return None;
    }
    all_children(node).into_iter().find_map(first_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::named_children;

    #[test]
    fn parse_valid_python_has_no_error() {
        let tree = parse("x = 1\r\ndef f(a):\r\n    return a\r\n").expect("a tree");
        let root = tree.root_node();
        assert_eq!(root.kind(), "module");
        assert_eq!(root.named_child_count(), 2);
        assert!(first_error(root).is_none());
    }

    #[test]
    fn parse_with_reports_a_tree_for_any_grammar() {
        let tree = parse_with("pass\n", &tree_sitter_python::LANGUAGE.into()).expect("a tree");
        assert_eq!(
            tree.root_node().child(0).map(|n| n.kind()),
            Some("pass_statement")
        );
    }

    #[test]
    fn parse_error_messages_name_the_cause() {
        assert_eq!(
            ParseError::NoTree.to_string(),
            "tree-sitter returned no tree"
        );
        assert_eq!(
            ParseError::Grammar(LanguageError::NotParseable).to_string(),
            format!(
                "cannot load the tree-sitter grammar: {}",
                LanguageError::NotParseable
            )
        );
    }

    #[test]
    fn first_error_finds_the_first_error_in_document_order() {
        let source = "a = 1\r\nb = (\r\nc = 2\r\nd = ]\r\n";
        let tree = parse(source).expect("a tree");
        let root = tree.root_node();
        let error = first_error(root).expect("a syntax error");
        assert!(error.is_error());
        assert_eq!(
            (error.start_position().row, error.start_position().column),
            (1, 2)
        );
        assert_eq!(&source[error.byte_range()], "= (\r\nc");
        let last = *named_children(root).last().expect("a node");
        assert!(
            last.is_error() && last.start_position().row == 3,
            "a later error exists"
        );
    }

    #[test]
    fn first_error_finds_a_missing_node() {
        let source = "x = 1\r\ndef f(:\r\n    pass\r\n";
        let tree = parse(source).expect("a tree");
        let error = first_error(tree.root_node()).expect("a syntax error");
        assert!(error.is_missing());
        assert_eq!(error.kind(), ")");
        assert_eq!(
            (error.start_position().row, error.start_position().column),
            (1, 6)
        );
    }

    #[test]
    fn first_error_is_none_below_a_valid_node() {
        let tree = parse("ok = 1\nbad = (\n").expect("a tree");
        let first_statement = tree.root_node().named_child(0).expect("a statement");
        assert!(first_error(first_statement).is_none());
        assert!(first_error(tree.root_node()).is_some());
    }
}
