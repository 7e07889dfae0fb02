//! The parameters of a function definition, read once for every reader (lint's arguments at a
//! call, inject's required parameters, the repository's factory parameters).

use tree_sitter::Node;

use crate::tree::{children, text};

/// How a parameter receives its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A named parameter (`x`, `x: int`, `x=1`, `x: int = 1`).
    Named,
    /// `*args`.
    Args,
    /// `**kwargs`.
    Kwargs,
}

/// One parameter of a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param<'t, 's> {
    /// The function definition.
    pub def: Node<'t>,
    /// Its name.
    pub name: &'s str,
    /// How it receives its argument.
    pub kind: ParamKind,
    /// Its position among the parameters (`self` included), `None` for `*args`, `**kwargs`
    /// and the keyword-only parameters after them or after a bare `*`.
    pub index: Option<usize>,
    /// Its default value.
    pub default: Option<Node<'t>>,
    /// Its type annotation.
    pub annotation: Option<Node<'t>>,
}

/// The parameters of `def`, in order (comments and the bare `*` skipped).
pub fn parameters<'t, 's>(def: Node<'t>, source: &'s str) -> Vec<Param<'t, 's>> {
    let Some(list) = def.child_by_field_name("parameters") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut index = Some(0usize);
    for param in children(list) {
        let (ident, default) = match param.kind() {
            "identifier" => (Some(param), None),
            "typed_parameter" => (param.named_child(0), None),
            "default_parameter" | "typed_default_parameter" => (
                param.child_by_field_name("name"),
                param.child_by_field_name("value"),
            ),
            "list_splat_pattern" | "dictionary_splat_pattern" => (Some(param), None),
            "keyword_separator" => {
                index = None;
                continue;
            }
            _ => (None, None),
        };
        let Some(ident) = ident else {
            index = index.map(|i| i + 1);
            continue;
        };
        let (kind, ident) = match ident.kind() {
            "list_splat_pattern" => (ParamKind::Args, ident.named_child(0)),
            "dictionary_splat_pattern" => (ParamKind::Kwargs, ident.named_child(0)),
            _ => (ParamKind::Named, Some(ident)),
        };
        if kind != ParamKind::Named {
            index = None;
        }
        if let Some(ident) = ident.filter(|i| i.kind() == "identifier") {
            out.push(Param {
                def,
                name: text(ident, source),
                kind,
                index,
                default,
                annotation: param.child_by_field_name("type"),
            });
        }
        index = index.map(|i| i + 1);
    }
    out
}

/// The parameter `name` of `def`.
pub fn parameter<'t, 's>(def: Node<'t>, name: &str, source: &'s str) -> Option<Param<'t, 's>> {
    parameters(def, source).into_iter().find(|p| p.name == name)
}

/// The named parameter of `def` that receives a call's positional argument `index` (`self`
/// skipped for methods).
pub fn parameter_at<'s>(
    def: Node<'_>,
    method: bool,
    index: usize,
    source: &'s str,
) -> Option<&'s str> {
    let wanted = index + usize::from(method);
    parameters(def, source)
        .into_iter()
        .find(|p| p.kind == ParamKind::Named && p.index == Some(wanted))
        .map(|p| p.name)
}

/// The names of the parameters of `def` without a default (not `*args`/`**kwargs`).
pub fn required_parameters(def: Node<'_>, source: &str) -> Vec<String> {
    parameters(def, source)
        .into_iter()
        .filter(|p| p.kind == ParamKind::Named && p.default.is_none())
        .map(|p| p.name.to_owned())
        .collect()
}

/// The name of a function definition (`?` if it has none).
pub fn function_name<'s>(def: Node<'_>, source: &'s str) -> &'s str {
    def.child_by_field_name("name")
        .map_or("?", |n| text(n, source))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::tree;

    fn def_of(tree: &tree_sitter::Tree) -> Node<'_> {
        tree.root_node().named_child(0).expect("a def")
    }

    #[test]
    fn kinds_positions_and_defaults() {
        let source = "def f(self, a, b: int = 2, *rest, c, d=4, **more):\n    pass\n";
        let parsed = tree(source);
        let def = def_of(&parsed);
        let read: Vec<(&str, ParamKind, Option<usize>, bool)> = parameters(def, source)
            .into_iter()
            .map(|p| (p.name, p.kind, p.index, p.default.is_some()))
            .collect();
        assert_eq!(
            read,
            [
                ("self", ParamKind::Named, Some(0), false),
                ("a", ParamKind::Named, Some(1), false),
                ("b", ParamKind::Named, Some(2), true),
                ("rest", ParamKind::Args, None, false),
                ("c", ParamKind::Named, None, false),
                ("d", ParamKind::Named, None, true),
                ("more", ParamKind::Kwargs, None, false),
            ]
        );
        assert_eq!(parameter_at(def, true, 1, source), Some("b"));
        assert_eq!(parameter_at(def, false, 3, source), None);
        assert_eq!(required_parameters(def, source), ["self", "a", "c"]);
        let b = parameter(def, "b", source).expect("b");
        assert_eq!(b.annotation.map(|t| text(t, source)), Some("int"));
        assert_eq!(parameter(def, "a", source).expect("a").annotation, None);
    }

    #[test]
    fn a_bare_star_makes_the_rest_keyword_only_and_comments_do_not_count() {
        let source = "def g(a,  # the first\n      *, b=1):\n    pass\n";
        let parsed = tree(source);
        let def = def_of(&parsed);
        let b = parameter(def, "b", source).expect("b");
        assert_eq!(b.index, None);
        assert_eq!(parameter_at(def, false, 1, source), None);
        assert_eq!(parameter(def, "a", source).expect("a").index, Some(0));
        assert_eq!(function_name(def, source), "g");
    }
}
