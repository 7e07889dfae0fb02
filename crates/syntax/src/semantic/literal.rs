//! Literals as the interpreter reads them: plain strings and integers. Held once for every
//! reader (lint, inject, route, the repository) and the evaluators.

use tree_sitter::Node;

use crate::tree::{named_children, text};

/// The content of a plain string literal (not an f-string with interpolations, not an
/// implicit concatenation), escapes as written; `None` for anything else.
pub fn string_literal(node: Node<'_>, source: &str) -> Option<String> {
    if node.kind() != "string" {
        return None;
    }
    let mut out = String::new();
    for part in named_children(node) {
        match part.kind() {
            "string_content" => out.push_str(text(part, source)),
            "interpolation" => return None,
            _ => {}
        }
    }
    Some(out)
}

/// The text of a string literal with its interpolations left out (for reading the words of
/// a path; empty for anything that is not a string).
pub fn string_text(node: Node<'_>, source: &str) -> String {
    named_children(node)
        .into_iter()
        .filter(|n| n.kind() == "string_content")
        .map(|n| text(n, source))
        .collect()
}

/// The value of a decimal integer literal (`1_000` included); `None` for anything else.
pub fn int_literal(node: Node<'_>, source: &str) -> Option<i64> {
    if node.kind() != "integer" {
        return None;
    }
    text(node, source).replace('_', "").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::tree;

    fn values<T>(source: &str, read: impl Fn(Node<'_>, &str) -> T, kind: &str) -> Vec<T> {
        let parsed = tree(source);
        crate::descendants_in_scope(parsed.root_node())
            .into_iter()
            .filter(|n| n.kind() == kind)
            .map(|n| read(n, source))
            .collect()
    }

    #[test]
    fn plain_strings_are_read_and_interpolated_ones_are_not() {
        let source = "x = 'ab'\ny = \"\"\"cd\"\"\"\nz = f'{x}/e'\nw = ''\nv = r'\\n'\n";
        assert_eq!(
            values(source, string_literal, "string"),
            [
                Some("ab".to_owned()),
                Some("cd".to_owned()),
                None,
                Some(String::new()),
                Some("\\n".to_owned())
            ]
        );
        assert_eq!(values(source, string_text, "string")[2], "/e");
    }

    #[test]
    fn integers_with_underscores_and_not_others() {
        let source = "a = 1_000\nb = 0x10\nc = 7\n";
        assert_eq!(
            values(source, int_literal, "integer"),
            [Some(1000), None, Some(7)]
        );
    }
}
