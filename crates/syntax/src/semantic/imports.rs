//! What imported names refer to: `import torch_npu`, `import torch_npu.profiler as p`,
//! `from torch_npu.profiler import profile as prof` → local name and qualified path. One
//! reading of import statements for lint, route, inject and the semantic model's bindings.

use std::collections::HashMap;

use tree_sitter::Node;

use crate::tree::{named_children, text};

/// One name an import statement binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportBinding {
    /// The local name (`p` for `import torch_npu.profiler as p`, `torch_npu` for
    /// `import torch_npu.profiler`).
    pub local: String,
    /// The qualified path it stands for (`torch_npu.profiler`, `torch_npu`).
    pub path: String,
    /// The module or name imported in full (`torch_npu.profiler` for both forms above).
    pub imported: String,
}

/// A dotted name's text without whitespace (`a . b` is `a.b`).
fn dotted_text(node: Node<'_>, source: &str) -> String {
    text(node, source)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

/// The names an `import` or `from … import` statement binds (none for other nodes or `*`).
pub fn import_bindings(node: Node<'_>, source: &str) -> Vec<ImportBinding> {
    let mut out = Vec::new();
    let mut cursor = node.walk();
    match node.kind() {
        "import_statement" => {
            for name in node.children_by_field_name("name", &mut cursor) {
                match name.kind() {
                    "dotted_name" => {
                        let full = dotted_text(name, source);
                        let first = full.split('.').next().unwrap_or(&full).to_owned();
                        out.push(ImportBinding {
                            local: first.clone(),
                            path: first,
                            imported: full,
                        });
                    }
                    "aliased_import" => {
                        if let (Some(n), Some(a)) = (
                            name.child_by_field_name("name"),
                            name.child_by_field_name("alias"),
                        ) {
                            let full = dotted_text(n, source);
                            out.push(ImportBinding {
                                local: dotted_text(a, source),
                                path: full.clone(),
                                imported: full,
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
        "import_from_statement" => {
            let Some(module) = node.child_by_field_name("module_name") else {
                return out;
            };
            let module = dotted_text(module, source);
            for name in node.children_by_field_name("name", &mut cursor) {
                let (imported, local) = match name.kind() {
                    "aliased_import" => (
                        name.child_by_field_name("name"),
                        name.child_by_field_name("alias"),
                    ),
                    _ => (Some(name), Some(name)),
                };
                if let (Some(i), Some(l)) = (imported, local) {
                    let path = format!("{module}.{}", dotted_text(i, source));
                    out.push(ImportBinding {
                        local: dotted_text(l, source),
                        path: path.clone(),
                        imported: path,
                    });
                }
            }
        }
        _ => {}
    }
    out
}

/// Local name → qualified path, from every import statement of a module.
#[derive(Debug, Default)]
pub struct Imports {
    names: HashMap<String, String>,
}

impl Imports {
    /// Collects the imports anywhere in the module (also inside functions); a later import
    /// of a name wins.
    pub fn collect(module: Node<'_>, source: &str) -> Self {
        let mut imports = Self::default();
        let mut stack = vec![module];
        while let Some(node) = stack.pop() {
            match node.kind() {
                "import_statement" | "import_from_statement" => {
                    for binding in import_bindings(node, source) {
                        imports.insert(binding.local, binding.path);
                    }
                }
                _ => stack.extend(named_children(node)),
            }
        }
        imports
    }

    /// Whether no name is bound.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Binds `local` to `path`.
    pub fn insert(&mut self, local: String, path: String) {
        self.names.insert(local, path);
    }

    /// The qualified path of a dotted name used in the module, when its first segment was
    /// imported.
    pub fn resolve(&self, dotted: &str) -> Option<String> {
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

    /// [`Imports::resolve`], or the name itself when its first segment was not imported.
    pub fn qualify(&self, dotted: &str) -> String {
        self.resolve(dotted).unwrap_or_else(|| dotted.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::tree;

    #[test]
    fn aliases_and_from_imports_resolve_to_qualified_paths() {
        let source = "import torch_npu\nimport torch_npu.profiler as p\nfrom torch_npu.profiler import profile as prof, schedule\nimport os.path\ndef f():\n    from yaml import safe_load\n";
        let parsed = tree(source);
        let imports = Imports::collect(parsed.root_node(), source);
        assert_eq!(
            imports.resolve("p.profile").as_deref(),
            Some("torch_npu.profiler.profile")
        );
        assert_eq!(
            imports.resolve("prof").as_deref(),
            Some("torch_npu.profiler.profile")
        );
        assert_eq!(
            imports.resolve("schedule").as_deref(),
            Some("torch_npu.profiler.schedule")
        );
        assert_eq!(
            imports.resolve("os.path.join").as_deref(),
            Some("os.path.join")
        );
        assert_eq!(
            imports.resolve("safe_load").as_deref(),
            Some("yaml.safe_load")
        );
        assert_eq!(
            imports.resolve("torch.profiler"),
            None,
            "torch is not imported"
        );
        assert_eq!(imports.qualify("torch.profiler"), "torch.profiler");
    }

    #[test]
    fn one_statement_binds_each_local_name() {
        let source = "import torch_npu.profiler, numpy as np\n";
        let parsed = tree(source);
        let statement = parsed.root_node().named_child(0).expect("import");
        let bound: Vec<(String, String, String)> = import_bindings(statement, source)
            .into_iter()
            .map(|b| (b.local, b.path, b.imported))
            .collect();
        assert_eq!(
            bound,
            [
                (
                    "torch_npu".to_owned(),
                    "torch_npu".to_owned(),
                    "torch_npu.profiler".to_owned()
                ),
                ("np".to_owned(), "numpy".to_owned(), "numpy".to_owned()),
            ]
        );
    }
}
