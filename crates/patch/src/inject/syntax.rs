//! inject's own reading of function definitions, on top of `npuprof-syntax`.

use npuprof_syntax::{children, text};
use tree_sitter::Node;

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
