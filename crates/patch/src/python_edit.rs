//! Edits of Python source that keep its layout: keyword arguments appended in the call's own
//! style, a no-op method added to a class in the style of its siblings.

use npuprof_syntax::{all_children, children, named_children, text};
use tree_sitter::Node;

use crate::edit::Edit;
use crate::text::{indentation, line_end};

/// Inserts `new` keyword arguments after the call's last argument, in its layout (one per line
/// when the arguments are, after a trailing comma and its comment when there is one).
pub(crate) fn append_arguments(
    source: &str,
    call: Node<'_>,
    new: &[String],
    nl: &str,
) -> Option<Edit> {
    let list = call
        .child_by_field_name("arguments")
        .filter(|a| a.kind() == "argument_list")?;
    let all = all_children(list);
    let args = children(list);
    let Some(last) = args.last() else {
        return Some(Edit::insert(list.start_byte() + 1, new.join(", ")));
    };
    let trailing_comma = all
        .iter()
        .skip_while(|n| n.id() != last.id())
        .skip(1)
        .find(|n| n.kind() == ",");
    let one_per_line = last.start_position().row > list.start_position().row;
    Some(if one_per_line {
        let indent = indentation(source, last.start_byte());
        let lines: String = new.iter().map(|a| format!("{nl}{indent}{a},")).collect();
        match trailing_comma {
            Some(comma) => Edit::insert(line_end(source, comma.end_byte()), lines),
            None => {
                let lines = lines.strip_suffix(',').unwrap_or(&lines);
                Edit::insert(last.end_byte(), format!(",{lines}"))
            }
        }
    } else {
        Edit::insert(last.end_byte(), format!(", {}", new.join(", ")))
    })
}

/// The top-level class `name`.
pub(crate) fn top_level_class<'t>(root: Node<'t>, source: &str, name: &str) -> Option<Node<'t>> {
    named_children(root)
        .into_iter()
        .map(definition_of)
        .find(|n| n.kind() == "class_definition" && definition_name(source, *n) == Some(name))
}

/// Adds a no-op method `name` to `class`, mirroring a one-line sibling (`stop`, `step`) — its
/// decorators, parameters and body — else `@staticmethod def name(): pass`.
pub(crate) fn add_noop_method(source: &str, class: Node<'_>, name: &str, nl: &str) -> Option<Edit> {
    let body = class.child_by_field_name("body")?;
    let members: Vec<Node<'_>> = named_children(body)
        .into_iter()
        .filter(|n| n.kind() != "comment")
        .collect();
    let last = members.last()?;
    let member_indent = indentation(source, members[0].start_byte()).to_owned();
    let unit = indent_unit(source, class);
    let model = ["stop", "step"].into_iter().find_map(|m| {
        members
            .iter()
            .find(|n| definition_name(source, definition_of(**n)) == Some(m))
            .copied()
    });
    let (decorators, params, body_text) = match model {
        Some(model) => method_shape(source, model),
        None => (
            vec!["@staticmethod".to_owned()],
            "()".to_owned(),
            "pass".to_owned(),
        ),
    };
    let blank_lines = blank_lines_between_members(source, &members);
    let mut text = nl.repeat(1 + blank_lines);
    for decorator in decorators {
        text.push_str(&format!("{member_indent}{decorator}{nl}"));
    }
    text.push_str(&format!(
        "{member_indent}def {name}{params}:{nl}{member_indent}{unit}{body_text}"
    ));
    Some(Edit::insert(last.end_byte(), text))
}

/// Decorators, parameter list and one-line body of a method, to mirror its style.
fn method_shape(source: &str, member: Node<'_>) -> (Vec<String>, String, String) {
    let (decorators, def) = match member.kind() {
        "decorated_definition" => (
            named_children(member)
                .into_iter()
                .filter(|n| n.kind() == "decorator")
                .map(|d| text(d, source).to_owned())
                .collect(),
            definition_of(member),
        ),
        _ => (Vec::new(), member),
    };
    let params = def
        .child_by_field_name("parameters")
        .map_or("()", |p| text(p, source))
        .to_owned();
    let body = def
        .child_by_field_name("body")
        .map(named_children)
        .and_then(|stmts| match stmts.as_slice() {
            [only] if !text(*only, source).contains('\n') => Some(text(*only, source).to_owned()),
            _ => None,
        })
        .unwrap_or_else(|| "pass".to_owned());
    (decorators, params, body)
}

/// Blank lines between the last two members of a class body (1 when there is only one).
fn blank_lines_between_members(source: &str, members: &[Node<'_>]) -> usize {
    match members {
        [.., a, b] => {
            let gap = b
                .start_position()
                .row
                .saturating_sub(a.end_position().row + 1);
            let comments = source[a.end_byte()..b.start_byte()]
                .lines()
                .filter(|l| l.trim_start().starts_with('#'))
                .count();
            gap.saturating_sub(comments)
        }
        _ => 1,
    }
}

/// The name of a function or class definition.
fn definition_name<'s>(source: &'s str, def: Node<'_>) -> Option<&'s str> {
    matches!(def.kind(), "function_definition" | "class_definition")
        .then(|| def.child_by_field_name("name").map(|n| text(n, source)))
        .flatten()
}

fn definition_of(node: Node<'_>) -> Node<'_> {
    if node.kind() == "decorated_definition" {
        node.child_by_field_name("definition").unwrap_or(node)
    } else {
        node
    }
}

/// The indentation unit of a block: its first statement's indentation minus the header's.
fn indent_unit(source: &str, def: Node<'_>) -> String {
    let outer = indentation(source, def.start_byte());
    let inner = def
        .child_by_field_name("body")
        .and_then(|b| named_children(b).into_iter().next())
        .map_or("    ", |first| indentation(source, first.start_byte()));
    let unit = inner.strip_prefix(outer).filter(|u| !u.is_empty());
    // The member bodies are one unit deeper than the members.
    unit.unwrap_or("    ").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `source` with `b=2, c=3` appended to its first call's arguments.
    fn appended(source: &str) -> String {
        let tree = npuprof_syntax::parse(source).unwrap();
        let call = npuprof_syntax::descendants(tree.root_node())
            .into_iter()
            .find(|n| n.kind() == "call")
            .unwrap();
        let new = ["b=2".to_owned(), "c=3".to_owned()];
        let edit = append_arguments(source, call, &new, "\n").unwrap();
        crate::edit::Edits::new(source, vec![edit])
            .unwrap()
            .apply(source)
    }

    #[test]
    fn arguments_are_appended_in_the_calls_layout() {
        assert_eq!(appended("x = f()\n"), "x = f(b=2, c=3)\n");
        assert_eq!(appended("x = f(a=1)\n"), "x = f(a=1, b=2, c=3)\n");
        assert_eq!(
            appended("f(\n    a=1,\n    z=0\n)\n"),
            "f(\n    a=1,\n    z=0,\n    b=2,\n    c=3\n)\n"
        );
        assert_eq!(
            appended("f(\n    a=1,\n    z=0,  # last\n)\n"),
            "f(\n    a=1,\n    z=0,  # last\n    b=2,\n    c=3,\n)\n"
        );
    }

    #[test]
    fn the_top_level_class_is_found_by_its_name() {
        let source =
            "class Other:\n    pass\n\n\ndef Wanted():\n    pass\n\n\nclass Wanted:\n    pass\n";
        let tree = npuprof_syntax::parse(source).unwrap();
        let class = top_level_class(tree.root_node(), source, "Wanted").unwrap();
        assert_eq!(class.start_position().row, 8);
        assert!(top_level_class(tree.root_node(), source, "Missing").is_none());
    }
    #[test]
    fn a_noop_method_mirrors_the_blank_lines_and_falls_back_to_pass_for_a_long_body() {
        let source = "class Stub:\n    def start(self):\n        pass\n\n\n    def stop(self):\n        return (\n            None\n        )\n";
        let tree = npuprof_syntax::parse(source).unwrap();
        let class = top_level_class(tree.root_node(), source, "Stub").unwrap();
        let edit = add_noop_method(source, class, "step", "\n").unwrap();
        let patched = crate::edit::Edits::new(source, vec![edit])
            .unwrap()
            .apply(source);
        assert_eq!(
            patched,
            "class Stub:\n    def start(self):\n        pass\n\n\n    def stop(self):\n        return (\n            None\n        )\n\n\n    def step(self):\n        pass\n"
        );
    }
}
