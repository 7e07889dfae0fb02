//! Dotted names and calls: the callee, the arguments, keyword arguments.

use tree_sitter::Node;

use crate::tree::{children, text};

/// `a` or `a.b.c` when `node` is an identifier or a chain of attributes on one.
pub fn dotted(node: Node<'_>, source: &str) -> Option<String> {
    match node.kind() {
        "identifier" => Some(text(node, source).to_owned()),
        "attribute" => {
            let object = dotted(node.child_by_field_name("object")?, source)?;
            let attribute = text(node.child_by_field_name("attribute")?, source);
            Some(format!("{object}.{attribute}"))
        }
        _ => None,
    }
}

/// The callee of `call` as a dotted name (`None` for `f()()`, `x[0]()`, ...).
pub fn callee(call: Node<'_>, source: &str) -> Option<String> {
    dotted(call.child_by_field_name("function")?, source)
}

/// The arguments of `call`, positional and keyword nodes in order, without comments.
pub fn arguments(call: Node<'_>) -> Vec<Node<'_>> {
    call.child_by_field_name("arguments")
        .map(children)
        .unwrap_or_default()
}

/// The positional arguments of `call` (splats included, keyword arguments not).
pub fn positional(call: Node<'_>) -> Vec<Node<'_>> {
    arguments(call)
        .into_iter()
        .filter(|a| a.kind() != "keyword_argument")
        .collect()
}

/// The value of keyword argument `name` of `call`.
pub fn kwarg<'t>(call: Node<'t>, name: &str, source: &str) -> Option<Node<'t>> {
    arguments(call).into_iter().find_map(|arg| {
        (arg.kind() == "keyword_argument"
            && arg.child_by_field_name("name").map(|n| text(n, source)) == Some(name))
        .then(|| arg.child_by_field_name("value"))
        .flatten()
    })
}

/// Whether a call passes `*args` or `**kwargs` (its arguments cannot be known).
pub fn has_splat(call: Node<'_>) -> bool {
    arguments(call)
        .iter()
        .any(|a| matches!(a.kind(), "list_splat" | "dictionary_splat"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{first_call, first_expression, tree};

    #[test]
    fn dotted_reads_identifiers_and_attribute_chains() {
        let source = "torch_npu.profiler.profile\n";
        let parsed = tree(source);
        let expr = first_expression(&parsed);
        assert_eq!(
            dotted(expr, source).as_deref(),
            Some("torch_npu.profiler.profile")
        );
        let object = expr.child_by_field_name("object").expect("object");
        let head = object.child_by_field_name("object").expect("head");
        assert_eq!(dotted(head, source).as_deref(), Some("torch_npu"));
    }

    #[test]
    fn dotted_is_none_for_other_expressions() {
        let source = "f().x\n";
        let parsed = tree(source);
        assert_eq!(dotted(first_expression(&parsed), source), None);
    }

    #[test]
    fn callee_is_the_dotted_function() {
        let source = "prof.step()\r\n";
        let parsed = tree(source);
        assert_eq!(
            callee(first_call(&parsed), source).as_deref(),
            Some("prof.step")
        );
        let source = "make()()\n";
        let parsed = tree(source);
        assert_eq!(callee(first_expression(&parsed), source), None);
    }

    #[test]
    fn arguments_and_positional_skip_comments() {
        let source = "f(a,  # one\r\n  *rest, key=2, **more)\r\n";
        let parsed = tree(source);
        let call = first_call(&parsed);
        let all: Vec<&str> = arguments(call)
            .into_iter()
            .map(|a| text(a, source))
            .collect();
        assert_eq!(all, ["a", "*rest", "key=2", "**more"]);
        let plain: Vec<&str> = positional(call)
            .into_iter()
            .map(|a| text(a, source))
            .collect();
        assert_eq!(plain, ["a", "*rest", "**more"]);
    }

    #[test]
    fn arguments_of_an_empty_call_are_empty() {
        let parsed = tree("g()\n");
        let call = first_call(&parsed);
        assert!(arguments(call).is_empty());
        assert!(positional(call).is_empty());
    }

    #[test]
    fn kwarg_finds_the_value_by_name() {
        let source = "schedule(wait=1, active=N + 1)\n";
        let parsed = tree(source);
        let call = first_call(&parsed);
        let active = kwarg(call, "active", source).expect("active");
        assert_eq!(text(active, source), "N + 1");
        assert_eq!(
            kwarg(call, "wait", source).map(|v| text(v, source)),
            Some("1")
        );
        assert!(kwarg(call, "repeat", source).is_none());
    }
}
