//! lint's helpers over the tree-sitter Python syntax tree, on top of `npuprof-python`: scopes,
//! the resolution of simple names to the one value they were assigned, constant integers,
//! splats and positions.

use npuprof_python::{arguments, descendants_in_scope, kwarg, named_children, text};
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

/// What binds `name` inside one scope.
enum Binding<'t> {
    /// `name = value`.
    Assign(Node<'t>),
    /// A parameter, loop variable, augmented assignment, import, ...
    Other,
}

/// The bindings of `name` directly in `scope` (not in nested definitions).
fn bindings<'t>(scope: Node<'t>, name: &str, source: &str) -> Vec<Binding<'t>> {
    let mut out = Vec::new();
    if scope.kind() == "function_definition"
        && let Some(params) = scope.child_by_field_name("parameters")
    {
        for param in named_children(params) {
            let ident = match param.kind() {
                "identifier" => Some(param),
                _ => param
                    .child_by_field_name("name")
                    .or_else(|| param.named_child(0)),
            };
            if ident.is_some_and(|i| i.kind() == "identifier" && text(i, source) == name) {
                out.push(Binding::Other);
            }
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
                if left.kind() == "identifier" && text(left, source) == name {
                    match node.child_by_field_name("right") {
                        Some(right) => out.push(Binding::Assign(right)),
                        None => out.push(Binding::Other),
                    }
                } else if left.kind() != "identifier"
                    && descendants_in_scope(left)
                        .iter()
                        .any(|n| n.kind() == "identifier" && text(*n, source) == name)
                    && left.kind() != "attribute"
                    && left.kind() != "subscript"
                {
                    out.push(Binding::Other);
                }
            }
            "augmented_assignment" | "for_statement" | "as_pattern_target" | "named_expression" => {
                let target = match node.kind() {
                    "augmented_assignment" | "for_statement" => node.child_by_field_name("left"),
                    "named_expression" => node.child_by_field_name("name"),
                    _ => Some(node),
                };
                if target.is_some_and(|t| {
                    descendants_in_scope(t)
                        .iter()
                        .any(|n| n.kind() == "identifier" && text(*n, source) == name)
                }) {
                    out.push(Binding::Other);
                }
            }
            "function_definition" | "class_definition"
                if node != body
                    && node
                        .child_by_field_name("name")
                        .is_some_and(|n| text(n, source) == name) =>
            {
                out.push(Binding::Other);
            }
            _ => {}
        }
    }
    out
}

/// The value `name` was assigned, when it is bound exactly once, by a plain assignment, in the
/// scope of `at` (a function) or else at module level.
pub(crate) fn resolve_name<'t>(at: Node<'t>, name: &str, source: &str) -> Option<Node<'t>> {
    let mut scope = scope_of(at);
    loop {
        let found = bindings(scope, name, source);
        if !found.is_empty() {
            return match found.as_slice() {
                [Binding::Assign(value)] => Some(*value),
                _ => None,
            };
        }
        if scope.kind() == "module" {
            return None;
        }
        let mut up = scope.parent()?;
        while !matches!(up.kind(), "function_definition" | "module") {
            up = up.parent()?;
        }
        scope = up;
    }
}

/// The value of an expression after following a simple local or module name once.
pub(crate) fn resolve_value<'t>(node: Node<'t>, source: &str) -> Node<'t> {
    if node.kind() == "identifier"
        && let Some(value) = resolve_name(node, text(node, source), source)
    {
        return value;
    }
    node
}

/// The integer value of a literal or simple constant expression (`3`, `-1`, `N`, `N + 1`).
pub(crate) fn int_value(node: Node<'_>, source: &str) -> Option<i64> {
    int_value_depth(node, source, 0)
}

fn int_value_depth(node: Node<'_>, source: &str, depth: u8) -> Option<i64> {
    if depth > 8 {
        return None;
    }
    match node.kind() {
        "integer" => {
            let digits: String = text(node, source).chars().filter(|c| *c != '_').collect();
            digits.parse().ok()
        }
        "parenthesized_expression" => int_value_depth(node.named_child(0)?, source, depth + 1),
        "unary_operator" => {
            let operand =
                int_value_depth(node.child_by_field_name("argument")?, source, depth + 1)?;
            match text(node.child_by_field_name("operator")?, source) {
                "-" => operand.checked_neg(),
                "+" => Some(operand),
                _ => None,
            }
        }
        "binary_operator" => {
            let left = int_value_depth(node.child_by_field_name("left")?, source, depth + 1)?;
            let right = int_value_depth(node.child_by_field_name("right")?, source, depth + 1)?;
            match text(node.child_by_field_name("operator")?, source) {
                "+" => left.checked_add(right),
                "-" => left.checked_sub(right),
                "*" => left.checked_mul(right),
                "//" if right != 0 => Some(left.div_euclid(right)),
                _ => None,
            }
        }
        "identifier" => {
            let value = resolve_name(node, text(node, source), source)?;
            int_value_depth(value, source, depth + 1)
        }
        _ => None,
    }
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
