//! What binds each name in one scope (a function or the module): its parameters, assignments
//! (one element of a tuple unpacking included), imports, definitions, and the bindings whose
//! value cannot be read (loop variables, `+=`, `with … as`, `:=`). Nested definitions are
//! their own scopes.

use std::collections::HashMap;

use tree_sitter::Node;

use super::imports::import_bindings;
use super::params::{Param, parameters};
use crate::tree::{descendants_in_scope, named_children, text};

/// What binds a name in one scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding<'t, 's> {
    /// `name = value`, or one element of `a, b = x, y`: the value.
    Value(Node<'t>),
    /// A parameter of the scope's function.
    Param(Param<'t, 's>),
    /// A function or class defined in the scope: the definition.
    Definition(Node<'t>),
    /// An import: the statement.
    Import(Node<'t>),
    /// Something whose value is not read (a loop variable, `+=`, …), described.
    Other(&'static str),
}

/// Every binding of one scope, by name, in document order.
#[derive(Debug, Default)]
pub struct ScopeBindings<'t, 's> {
    names: HashMap<&'s str, Vec<Binding<'t, 's>>>,
    order: Vec<&'s str>,
}

impl<'t, 's> ScopeBindings<'t, 's> {
    /// Reads the bindings of `scope` (a `function_definition` or the `module`).
    pub fn read(scope: Node<'t>, source: &'s str) -> Self {
        let mut out = Self::default();
        if scope.kind() == "function_definition" {
            for param in parameters(scope, source) {
                out.push(param.name, Binding::Param(param));
            }
        }
        let body = match scope.kind() {
            "function_definition" => scope.child_by_field_name("body"),
            _ => Some(scope),
        };
        let Some(body) = body else { return out };
        for node in descendants_in_scope(body) {
            match node.kind() {
                "assignment" => {
                    let Some(left) = node.child_by_field_name("left") else {
                        continue;
                    };
                    if matches!(left.kind(), "attribute" | "subscript") {
                        continue;
                    }
                    let right = node.child_by_field_name("right");
                    for name in identifiers(left, source) {
                        out.push(
                            name,
                            match (left.kind(), right) {
                                ("identifier", Some(right)) => Binding::Value(right),
                                (_, None) => Binding::Other("declared without a value"),
                                (_, Some(right)) => unpacked(left, right, name, source),
                            },
                        );
                    }
                }
                "augmented_assignment" | "for_statement" => {
                    let what = match node.kind() {
                        "for_statement" => "a loop variable",
                        _ => "changed in place (`+=` ...)",
                    };
                    for name in node
                        .child_by_field_name("left")
                        .map(|l| identifiers(l, source))
                        .unwrap_or_default()
                    {
                        out.push(name, Binding::Other(what));
                    }
                }
                "as_pattern_target" => {
                    for name in identifiers(node, source) {
                        out.push(name, Binding::Other("bound by `as`"));
                    }
                }
                "named_expression" => {
                    if let Some(name) = node.child_by_field_name("name") {
                        for name in identifiers(name, source) {
                            out.push(name, Binding::Other("bound by `:=`"));
                        }
                    }
                }
                "import_statement" | "import_from_statement" => {
                    for binding in import_bindings(node, source) {
                        if let Some(local) = source_name(node, &binding.local, source) {
                            out.push(local, Binding::Import(node));
                        }
                    }
                }
                "function_definition" | "class_definition" if node != body => {
                    if let Some(name) = node.child_by_field_name("name") {
                        out.push(text(name, source), Binding::Definition(node));
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn push(&mut self, name: &'s str, binding: Binding<'t, 's>) {
        let list = self.names.entry(name).or_default();
        if list.is_empty() {
            self.order.push(name);
        }
        list.push(binding);
    }

    /// The bindings of `name`, in document order (parameters first).
    pub fn of(&self, name: &str) -> &[Binding<'t, 's>] {
        self.names.get(name).map_or(&[], Vec::as_slice)
    }

    /// The names bound, in the order of their first binding.
    pub fn names(&self) -> &[&'s str] {
        &self.order
    }
}

/// The distinct identifiers in a binding target, in order.
fn identifiers<'s>(target: Node<'_>, source: &'s str) -> Vec<&'s str> {
    let mut out: Vec<&'s str> = Vec::new();
    for n in descendants_in_scope(target) {
        if n.kind() == "identifier" {
            let name = text(n, source);
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// The local name of an import as a slice of the source (the alias or first segment).
fn source_name<'s>(statement: Node<'_>, local: &str, source: &'s str) -> Option<&'s str> {
    descendants_in_scope(statement)
        .into_iter()
        .filter(|n| n.kind() == "identifier")
        .map(|n| text(n, source))
        .find(|t| *t == local)
}

/// `a, b = 2, 30` → the element for `name`.
fn unpacked<'t, 's>(left: Node<'t>, right: Node<'t>, name: &str, source: &str) -> Binding<'t, 's> {
    let targets: Vec<Node<'t>> = named_children(left)
        .into_iter()
        .filter(|n| n.kind() != "comment")
        .collect();
    let values: Vec<Node<'t>> = match right.kind() {
        "expression_list" | "tuple" => named_children(right)
            .into_iter()
            .filter(|n| n.kind() != "comment")
            .collect(),
        _ => return Binding::Other("unpacked from an expression lint cannot split"),
    };
    let index = targets
        .iter()
        .position(|t| t.kind() == "identifier" && text(*t, source) == name);
    match index {
        Some(i) if targets.len() == values.len() => Binding::Value(values[i]),
        _ => Binding::Other("unpacked from an expression lint cannot split"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::tree;

    fn describe(b: &Binding<'_, '_>, source: &str) -> String {
        match b {
            Binding::Value(v) => format!("= {}", text(*v, source)),
            Binding::Param(p) => format!("param {}", p.name),
            Binding::Definition(_) => "def".to_owned(),
            Binding::Import(_) => "import".to_owned(),
            Binding::Other(what) => (*what).to_owned(),
        }
    }

    #[test]
    fn every_kind_of_binding_in_a_scope() {
        let source = "import os.path\nfrom enum import Enum as E\nA, B = 2, 30\nC, D = f()\nfor i in range(3):\n    A += i\nwith open(p) as fh:\n    pass\ndef g(x, y=1):\n    z = x\n    return z\nclass K:\n    pass\n";
        let parsed = tree(source);
        let module = ScopeBindings::read(parsed.root_node(), source);
        let read = |name: &str| -> Vec<String> {
            module
                .of(name)
                .iter()
                .map(|b| describe(b, source))
                .collect()
        };
        assert_eq!(read("os"), ["import"]);
        assert!(read("path").is_empty(), "`import os.path` binds `os` only");
        assert_eq!(read("E"), ["import"]);
        assert_eq!(read("A"), ["= 2", "changed in place (`+=` ...)"]);
        assert_eq!(read("B"), ["= 30"]);
        assert_eq!(read("C"), ["unpacked from an expression lint cannot split"]);
        assert_eq!(read("i"), ["a loop variable"]);
        assert_eq!(read("fh"), ["bound by `as`"]);
        assert_eq!(read("g"), ["def"]);
        assert_eq!(read("K"), ["def"]);
        assert!(
            read("z").is_empty(),
            "a function's locals are its own scope"
        );
        let g = parsed.root_node().named_child(6).expect("g");
        let function = ScopeBindings::read(g, source);
        let names: Vec<&str> = function.names().to_vec();
        assert_eq!(names, ["x", "y", "z"]);
        assert_eq!(describe(&function.of("z")[0], source), "= x");
    }
}
