//! What the names in a file refer to: `import torch_npu`, `from torch_npu.profiler import
//! profile as p`, ... → a map from local names to fully qualified module paths.

use std::collections::HashMap;

use npuprof_syntax::{named_children, text};
use tree_sitter::Node;

/// Local name → fully qualified dotted path, from every import statement in the file.
#[derive(Debug, Default)]
pub(crate) struct Imports {
    names: HashMap<String, String>,
}

impl Imports {
    /// Collects the imports anywhere in the module (also inside functions).
    pub(crate) fn collect(module: Node<'_>, source: &str) -> Self {
        let mut names = HashMap::new();
        let mut stack = vec![module];
        while let Some(node) = stack.pop() {
            match node.kind() {
                "import_statement" => {
                    for name in named_children(node) {
                        match name.kind() {
                            "dotted_name" => {
                                let full = text(name, source);
                                let first = full.split('.').next().unwrap_or(full);
                                names.insert(first.to_owned(), first.to_owned());
                            }
                            "aliased_import" => {
                                if let (Some(n), Some(a)) = (
                                    name.child_by_field_name("name"),
                                    name.child_by_field_name("alias"),
                                ) {
                                    names.insert(
                                        text(a, source).to_owned(),
                                        text(n, source).to_owned(),
                                    );
                                }
                            }
                            _ => {}
                        }
                    }
                }
                "import_from_statement" => {
                    let Some(module_name) = node.child_by_field_name("module_name") else {
                        continue;
                    };
                    let module_path = text(module_name, source);
                    let mut cursor = node.walk();
                    for name in node.children_by_field_name("name", &mut cursor) {
                        let (imported, local) = match name.kind() {
                            "aliased_import" => (
                                name.child_by_field_name("name"),
                                name.child_by_field_name("alias"),
                            ),
                            _ => (Some(name), Some(name)),
                        };
                        if let (Some(i), Some(l)) = (imported, local) {
                            names.insert(
                                text(l, source).to_owned(),
                                format!("{module_path}.{}", text(i, source)),
                            );
                        }
                    }
                }
                _ => stack.extend(named_children(node)),
            }
        }
        Self { names }
    }

    /// The fully qualified path of a dotted name used in the file, if its first segment was imported.
    pub(crate) fn resolve(&self, dotted: &str) -> Option<String> {
        let (first, rest) = match dotted.split_once('.') {
            Some((first, rest)) => (first, Some(rest)),
            None => (dotted, None),
        };
        let base = self.names.get(first)?;
        Some(match rest {
            Some(rest) => format!("{base}.{rest}"),
            None => base.clone(),
        })
    }
}
