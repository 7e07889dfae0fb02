//! Whether the factory npuprof patches is the one the run calls. A patch edits a definition's
//! bytes; a run that calls something else — a decorator's wrapper, a monkeypatched attribute, a
//! definition imported under a condition or from another module, an `exec`'d one, or the same
//! function with its `__defaults__` replaced — records another window while collect would
//! report the requested one. What cannot be proven is refused: [`rebindings`] names each
//! construct that may rebind the factory, with its file and line.
//!
//! Pure functions of one file's text.

use npuprof_syntax::semantic::imports::import_bindings;
use npuprof_syntax::{callee, descendants, line, named_children, text};
use tree_sitter::{Node, Tree};

use crate::python::Factory;

/// One place that may make the run call something other than the factory as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebinding {
    /// The file, relative to the repository.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// What it does, e.g. "`runner.create_profiler = …` rebinds create_profiler (a monkeypatch)".
    pub what: String,
}

/// The function attributes whose assignment changes what a call of the function does.
const FUNCTION_ATTRIBUTES: [&str; 4] = ["__defaults__", "__kwdefaults__", "__code__", "__call__"];

/// The places in file `rel` (text `source`, parsed `tree`) that may rebind `factory`, defined in
/// `factory_path`.
pub fn rebindings(
    tree: &Tree,
    source: &str,
    rel: &str,
    factory: &Factory,
    factory_path: &str,
) -> Vec<Rebinding> {
    let name = factory.name.as_str();
    let mut found = Vec::new();
    let mut push = |node: Node<'_>, what: String| {
        found.push(Rebinding {
            path: rel.to_owned(),
            line: line(node),
            what,
        });
    };
    for node in descendants(tree.root_node()) {
        match node.kind() {
            "decorated_definition" if rel == factory_path => {
                let decorates = node
                    .child_by_field_name("definition")
                    .is_some_and(|d| line(d) == factory.line);
                // `@staticmethod` and `@classmethod` bind the body as written.
                let wrapping = named_children(node)
                    .into_iter()
                    .filter(|d| d.kind() == "decorator")
                    .any(|d| {
                        let expression = text(d, source).trim_start_matches('@').trim();
                        !matches!(
                            expression,
                            "staticmethod"
                                | "classmethod"
                                | "builtins.staticmethod"
                                | "builtins.classmethod"
                        )
                    });
                if decorates && wrapping {
                    push(
                        node,
                        format!(
                            "a decorator wraps {name}: the run calls what the decorator returns, \
                             not the body npuprof patches"
                        ),
                    );
                }
            }
            "assignment" | "augmented_assignment" => {
                let Some(left) = node.child_by_field_name("left") else {
                    continue;
                };
                for target in targets(left) {
                    if let Some(what) = rebinds(target, source, name) {
                        push(node, what);
                    }
                }
            }
            "call" => {
                let Some(called) = callee(node, source) else {
                    continue;
                };
                let bare = called.rsplit('.').next().unwrap_or(&called);
                if called == "setattr" || called == "builtins.setattr" {
                    let args = npuprof_syntax::positional(node);
                    let attribute = args
                        .get(1)
                        .map(|a| text(*a, source).trim_matches(['"', '\'']));
                    if attribute.is_some_and(|a| a == name || FUNCTION_ATTRIBUTES.contains(&a)) {
                        push(
                            node,
                            format!(
                                "`{}` may rebind {name} at run time",
                                first_line(text(node, source))
                            ),
                        );
                    }
                } else if matches!(bare, "exec" | "eval") && !called.contains('.')
                    || called.starts_with("builtins.") && matches!(bare, "exec" | "eval")
                {
                    push(
                        node,
                        format!(
                            "`{bare}(…)` in a file that names {name}: npuprof cannot see what it \
                             defines or rebinds"
                        ),
                    );
                }
            }
            "import_from_statement" => {
                if let Some(what) = foreign_import(node, source, name, factory_path) {
                    push(node, what);
                }
            }
            _ => {}
        }
    }
    found
}

/// The assignment targets in `left` (a pattern list or tuple is each of its parts).
fn targets(left: Node<'_>) -> Vec<Node<'_>> {
    match left.kind() {
        "pattern_list" | "tuple_pattern" | "list_pattern" | "tuple" | "list" => {
            named_children(left).into_iter().flat_map(targets).collect()
        }
        _ => vec![left],
    }
}

/// What assigning to `target` does to `name`, when it may rebind it.
fn rebinds(target: Node<'_>, source: &str, name: &str) -> Option<String> {
    match target.kind() {
        "identifier" if text(target, source) == name => Some(format!(
            "`{name} = …` rebinds {name}: calls after it run the new value"
        )),
        "attribute" => {
            let attribute = target
                .child_by_field_name("attribute")
                .map(|a| text(a, source))?;
            let object = target
                .child_by_field_name("object")
                .map(|o| text(o, source))?;
            let object_is_factory = object == name || object.ends_with(&format!(".{name}"));
            if attribute == name {
                Some(format!(
                    "`{} = …` rebinds {name} (a monkeypatch): the run may call the new value",
                    text(target, source)
                ))
            } else if object_is_factory && FUNCTION_ATTRIBUTES.contains(&attribute) {
                Some(format!(
                    "`{} = …` changes what a call of {name} does at run time",
                    text(target, source)
                ))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// An import of `name` (or another name imported as it) that is conditional or comes from
/// another module than the factory's file (the import read by `semantic::imports`).
fn foreign_import(node: Node<'_>, source: &str, name: &str, factory_path: &str) -> Option<String> {
    let binding = import_bindings(node, source)
        .into_iter()
        .find(|b| b.local == name)?;
    let (module, original) = binding
        .path
        .rsplit_once('.')
        .unwrap_or(("", binding.path.as_str()));
    let stem = factory_path
        .rsplit('/')
        .next()
        .and_then(|f| f.strip_suffix(".py"))
        .unwrap_or(factory_path);
    let from_factory_module = module.trim_start_matches('.').rsplit('.').next() == Some(stem);
    let conditional = std::iter::successors(node.parent(), Node::parent).any(|a| {
        matches!(
            a.kind(),
            "if_statement" | "try_statement" | "else_clause" | "except_clause" | "match_statement"
        )
    });
    if !from_factory_module || original != name {
        Some(format!(
            "`{}` binds {name} to {module}.{original}, not to the factory in {factory_path}",
            first_line(text(node, source))
        ))
    } else if conditional {
        Some(format!(
            "`{}` is imported under a condition: which definition the run calls depends on it",
            first_line(text(node, source))
        ))
    } else {
        None
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}
