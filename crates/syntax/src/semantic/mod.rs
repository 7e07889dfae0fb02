//! The Python semantic layer (after ruff's `ruff_python_semantic`): one [`SemanticModel`] per
//! parsed file, and the one place where npuprof works out what Python names and expressions
//! stand for.
//!
//! - [`SemanticModel`]: built once per file, indexed in one pass on first use — the scope and
//!   parent of every node, the calls by callee, the module's functions, the command-line
//!   options, the imports — with the [`bindings`] of each scope read once on first use;
//! - [`resolve`]: what integer or expression a name stands for, flow-insensitively (one
//!   binding per name, parameters through their calls, `self.x`, argparse and environment
//!   defaults), with the trail of names followed;
//! - [`value`]: values at a point of a function, flow-sensitively (the branch a known
//!   condition takes, enum members, dicts, the loaded run config, `os.path.join`, f-strings);
//! - [`literal`], [`params`], [`imports`], [`options`]: the readings both share.
//!
//! Every answer that is not certain is an explicit unknown with its reason
//! ([`resolve::Resolution`]'s `Err`, [`value::Value::Unknown`]); nothing is guessed. No other
//! crate evaluates Python expressions (a tidy test checks).

pub mod bindings;
pub mod imports;
pub mod literal;
pub mod options;
pub mod params;
pub mod resolve;
pub mod value;

use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use tree_sitter::Node;

use crate::call::{callee, dotted};
use crate::tree::{named_children, text};
use bindings::ScopeBindings;
use imports::Imports;
use options::CliOption;

/// What one file's names refer to, built once per parsed file.
///
/// The file is indexed on first use in one pass (most files that lint or inject read need a
/// few answers), so that questions stay linear in the file's size however many are asked.
pub struct SemanticModel<'t, 's> {
    source: &'s str,
    root: Node<'t>,
    index: OnceCell<Index<'t, 's>>,
    imports: OnceCell<Imports>,
    /// The bindings of each scope read so far, by the scope's node id.
    scopes: RefCell<HashMap<usize, Rc<ScopeBindings<'t, 's>>>>,
    /// Per attribute `a`: the names `K` whose `K.a` is used in a function that does not take
    /// `K` as a parameter (nor does any function around it).
    globals_used: RefCell<HashMap<String, Rc<HashSet<&'s str>>>>,
}

/// What one pass over the file finds.
struct Index<'t, 's> {
    /// The options declared by `add_argument(...)`, in document order.
    cli: Vec<CliOption<'t>>,
    /// Every call of the file by its last callee segment (`f` for `f(...)` and `x.f(...)`),
    /// in document order, with its dotted callee.
    calls: HashMap<&'s str, Vec<(Node<'t>, String)>>,
    /// The scope (function or module) of every named node, by node id: tree-sitter finds a
    /// node's parent by walking down from the root, which is slow in long modules.
    scopes: HashMap<usize, Node<'t>>,
    /// The parent of every named node, by node id (for the same reason).
    parents: HashMap<usize, Node<'t>>,
    /// The module-level function definitions by name (the first of each name).
    module_functions: HashMap<&'s str, Node<'t>>,
    /// `K.a` attributes inside functions, by `a`: the function and `K`.
    attribute_sites: HashMap<&'s str, Vec<(Node<'t>, &'s str)>>,
}

impl<'t, 's> Index<'t, 's> {
    fn build(root: Node<'t>, source: &'s str) -> Self {
        let mut calls: HashMap<&'s str, Vec<(Node<'t>, String)>> = HashMap::new();
        let mut add_arguments = Vec::new();
        let mut scopes = HashMap::new();
        let mut parents = HashMap::new();
        let mut module_functions = HashMap::new();
        let mut attribute_sites: HashMap<&'s str, Vec<(Node<'t>, &'s str)>> = HashMap::new();
        for def in named_children(root).into_iter().filter_map(function_of) {
            if let Some(name) = def.child_by_field_name("name") {
                module_functions.entry(text(name, source)).or_insert(def);
            }
        }
        let mut stack = vec![(root, root)];
        while let Some((node, scope)) = stack.pop() {
            scopes.insert(node.id(), scope);
            if node.kind() == "attribute"
                && scope != root
                && let (Some(attribute), Some(object)) = (
                    node.child_by_field_name("attribute"),
                    node.child_by_field_name("object"),
                )
                && object.kind() == "identifier"
            {
                attribute_sites
                    .entry(text(attribute, source))
                    .or_default()
                    .push((scope, text(object, source)));
            }
            let inner = if node.kind() == "function_definition" {
                node
            } else {
                scope
            };
            if node.kind() == "call"
                && let Some(function) = node.child_by_field_name("function")
                && let Some(name) = dotted(function, source)
            {
                let last = match function.kind() {
                    "attribute" => function
                        .child_by_field_name("attribute")
                        .map(|a| text(a, source)),
                    _ => Some(text(function, source)),
                };
                if last == Some("add_argument") {
                    add_arguments.push(node);
                }
                if let Some(last) = last {
                    calls.entry(last).or_default().push((node, name));
                }
            }
            for child in named_children(node) {
                parents.insert(child.id(), node);
                stack.push((child, inner));
            }
        }
        for list in calls.values_mut() {
            list.sort_by_key(|(n, _)| n.start_byte());
        }
        add_arguments.sort_by_key(|n| n.start_byte());
        Self {
            cli: add_arguments
                .into_iter()
                .filter_map(|c| CliOption::read(c, source))
                .collect(),
            calls,
            scopes,
            parents,
            module_functions,
            attribute_sites,
        }
    }
}

impl<'t, 's> SemanticModel<'t, 's> {
    /// The model of the file whose syntax tree is `root`.
    pub fn new(root: Node<'t>, source: &'s str) -> Self {
        Self {
            source,
            root,
            index: OnceCell::new(),
            imports: OnceCell::new(),
            scopes: RefCell::new(HashMap::new()),
            globals_used: RefCell::new(HashMap::new()),
        }
    }

    fn index(&self) -> &Index<'t, 's> {
        self.index
            .get_or_init(|| Index::build(self.root, self.source))
    }

    /// The module node of the file.
    pub fn root(&self) -> Node<'t> {
        self.root
    }

    /// The file's source text.
    pub fn source(&self) -> &'s str {
        self.source
    }

    /// What the file's imported names refer to.
    pub fn imports(&self) -> &Imports {
        self.imports
            .get_or_init(|| Imports::collect(self.root, self.source))
    }

    /// The command-line options the file declares, in document order.
    pub fn cli_options(&self) -> &[CliOption<'t>] {
        &self.index().cli
    }

    /// The bindings of `scope` (a function definition or the module).
    pub fn scope_bindings(&self, scope: Node<'t>) -> Rc<ScopeBindings<'t, 's>> {
        self.scopes
            .borrow_mut()
            .entry(scope.id())
            .or_insert_with(|| Rc::new(ScopeBindings::read(scope, self.source)))
            .clone()
    }

    /// Whether some function of the file uses `name.attribute` where `name` is a module
    /// global (none of the enclosing functions has a parameter `name`).
    pub fn global_attribute_in_function(&self, name: &str, attribute: &str) -> bool {
        if let Some(found) = self.globals_used.borrow().get(attribute) {
            return found.contains(name);
        }
        let found: HashSet<&'s str> = self
            .index()
            .attribute_sites
            .get(attribute)
            .into_iter()
            .flatten()
            .filter(|(scope, key)| {
                let mut def = *scope;
                while def.kind() == "function_definition" {
                    if params::parameter(def, key, self.source).is_some() {
                        return false;
                    }
                    def = self.scope_of(def);
                }
                true
            })
            .map(|(_, key)| *key)
            .collect();
        let contains = found.contains(name);
        self.globals_used
            .borrow_mut()
            .insert(attribute.to_owned(), Rc::new(found));
        contains
    }

    /// The parent of `node` (from the index when it is a named node).
    pub fn parent(&self, node: Node<'t>) -> Option<Node<'t>> {
        match self.index().parents.get(&node.id()) {
            Some(parent) => Some(*parent),
            None => node.parent(),
        }
    }

    /// The class a node is written in (the nearest class around it).
    pub fn enclosing_class(&self, node: Node<'t>) -> Option<Node<'t>> {
        let mut current = self.parent(node);
        while let Some(n) = current {
            if n.kind() == "class_definition" {
                return Some(n);
            }
            current = self.parent(n);
        }
        None
    }

    /// Whether a function is defined directly in a class body.
    pub fn is_method(&self, def: Node<'t>) -> bool {
        let mut parent = self.parent(def);
        if parent.is_some_and(|p| p.kind() == "decorated_definition") {
            parent = parent.and_then(|p| self.parent(p));
        }
        parent
            .and_then(|block| self.parent(block))
            .is_some_and(|c| c.kind() == "class_definition")
    }

    /// The nearest function definition around `node`, or the module.
    pub fn scope_of(&self, node: Node<'t>) -> Node<'t> {
        match self.index().scopes.get(&node.id()) {
            Some(scope) => *scope,
            None => crate::tree::scope_of(node),
        }
    }

    /// The calls of `def` in the file: `f(...)` for a module function, `x.f(...)` for a
    /// method, `Class(...)` for `__init__`.
    pub fn call_sites(&self, def: Node<'t>) -> Vec<Node<'t>> {
        let name = params::function_name(def, self.source);
        let method = self.is_method(def);
        let class = method
            .then(|| self.enclosing_class(def))
            .flatten()
            .and_then(|c| c.child_by_field_name("name"))
            .map(|n| text(n, self.source));
        let wanted = match (method, name) {
            (true, "__init__") => class.unwrap_or(name),
            _ => name,
        };
        self.index()
            .calls
            .get(wanted)
            .into_iter()
            .flatten()
            .filter(|(_, c)| match (method, name) {
                (false, _) => c == name,
                (true, "__init__") => true,
                (true, _) => c.contains('.'),
            })
            .map(|(node, _)| *node)
            .collect()
    }

    /// The function definition a call's callee names in this file (`f(...)` for a module
    /// function, `self.f(...)` for a method of the class around the call).
    pub fn local_function(&self, call: Node<'t>) -> Option<Node<'t>> {
        let name = callee(call, self.source)?;
        let (block, wanted) = match name.strip_prefix("self.") {
            Some(rest) if !rest.contains('.') => (
                self.enclosing_class(call)?.child_by_field_name("body")?,
                rest,
            ),
            None if !name.contains('.') => {
                return self.index().module_functions.get(name.as_str()).copied();
            }
            _ => return None,
        };
        named_children(block)
            .into_iter()
            .filter_map(function_of)
            .find(|d| {
                d.child_by_field_name("name")
                    .is_some_and(|n| text(n, self.source) == wanted)
            })
    }
}

/// The function definition behind a statement (`def`, or a decorated `def`).
pub fn function_of(node: Node<'_>) -> Option<Node<'_>> {
    match node.kind() {
        "function_definition" => Some(node),
        "decorated_definition" => node
            .child_by_field_name("definition")
            .filter(|d| d.kind() == "function_definition"),
        _ => None,
    }
}

/// The names of a dict, list or tuple literal's values that are plain names (`{"a": f}`,
/// `[f, g]`, `(f, g)`): the functions a dispatch table holds.
pub fn table_names<'s>(table: Node<'_>, source: &'s str) -> Vec<&'s str> {
    named_children(table)
        .into_iter()
        .filter_map(|item| match item.kind() {
            "pair" => item.child_by_field_name("value"),
            _ => Some(item),
        })
        .filter(|v| v.kind() == "identifier")
        .map(|v| text(v, source))
        .collect()
}
