//! A small, honest value resolver: what integer (or which expression) a name in the script
//! stands for, the way its author wrote it — module and function constants (tuple unpacking and
//! integer arithmetic included), argparse defaults, environment-variable defaults, function
//! parameters at the call that matters, attributes assigned once (`self.warmup = 2`).
//!
//! Every answer says how it was found ([`Trail`]): the names followed, and what is decided at
//! run time (a command-line flag, a parameter with no call in the file), checked with its
//! default. When a value cannot be known the answer is an error naming why; nothing is guessed.

use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, HashSet};

use npuprof_syntax::{
    callee, descendants_in_scope, dotted, kwarg, line, named_children, positional, text,
};
use tree_sitter::Node;

use crate::python::{has_splat, last_segment, scope_of};

/// How deep names may chain (`A = B`, `B = C + 1`, ...) before giving up.
const MAX_DEPTH: u8 = 12;

/// A call of a function defined in the file: that function's parameters take this call's
/// arguments (e.g. `with make_profiler(active=5) as prof:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame<'t> {
    /// The function definition.
    pub(crate) def: Node<'t>,
    /// The call.
    pub(crate) call: Node<'t>,
}

/// How a value was found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Trail {
    /// `NAME = value (line N)` for each name followed, innermost first.
    pub(crate) resolved: Vec<String>,
    /// What is decided at run time, with the default the value was checked with.
    pub(crate) runtime: Vec<String>,
}

impl Trail {
    /// Adds `other`'s entries that are not already here.
    pub(crate) fn merge(&mut self, other: &Trail) {
        for (mine, theirs) in [
            (&mut self.resolved, &other.resolved),
            (&mut self.runtime, &other.runtime),
        ] {
            for entry in theirs {
                if !mine.contains(entry) {
                    mine.push(entry.clone());
                }
            }
        }
    }

    /// `; resolved: A = 2 (line 3); decided at run time: ... (checked with the default)`, or "".
    pub(crate) fn describe(&self) -> String {
        let mut out = String::new();
        if !self.resolved.is_empty() {
            out.push_str("; resolved: ");
            out.push_str(&self.resolved.join(", "));
        }
        if !self.runtime.is_empty() {
            out.push_str("; decided at run time: ");
            out.push_str(&self.runtime.join(", "));
            out.push_str(" (checked with the default)");
        }
        out
    }
}

/// An integer and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Int {
    /// The value (the default, for values decided at run time).
    pub(crate) value: i64,
    /// How it was found.
    pub(crate) trail: Trail,
}

impl Int {
    fn literal(value: i64) -> Self {
        Self {
            value,
            trail: Trail::default(),
        }
    }
}

/// An integer, or why it cannot be known.
pub(crate) type Resolution = Result<Int, String>;

/// What binds a name in one scope.
#[derive(Clone)]
enum Binding<'t> {
    /// `name = value`, or one element of `a, b = x, y`.
    Value(Node<'t>),
    /// A parameter of a function.
    Param(Param<'t>),
    /// Something else (a loop variable, `+=`, an import, ...), described.
    Other(&'static str),
}

/// A function parameter.
#[derive(Clone)]
struct Param<'t> {
    def: Node<'t>,
    /// Position among the positional parameters (`None` after `*`).
    index: Option<usize>,
    name: String,
    default: Option<Node<'t>>,
}

/// One `parser.add_argument("--flag", ...)` call.
struct CliArg<'t> {
    dest: String,
    flag: String,
    default: Option<Node<'t>>,
    required: bool,
}

/// Resolves names of one file.
///
/// The file is indexed once (calls by callee, `add_argument` calls, module-level bindings on
/// first use), so that resolving stays linear in the file's size however many windows it has.
pub(crate) struct Resolver<'t, 's> {
    source: &'s str,
    root: Node<'t>,
    /// The file's index, built on first use (most files that mention `profiler` have no
    /// window to resolve).
    index: OnceCell<Index<'t, 's>>,
    /// The bindings of names at module level, computed on first use.
    module_bindings: RefCell<HashMap<String, Vec<Binding<'t>>>>,
    /// The names `K` whose `K.step` is used in a function that does not take `K` as a
    /// parameter (nor does any function around it): module globals stepped in functions.
    globals_stepped: OnceCell<HashSet<&'s str>>,
}

/// What one pass over the file finds.
struct Index<'t, 's> {
    /// The options declared by `add_argument(...)`.
    cli: Vec<CliArg<'t>>,
    /// Every call of the file by its last callee segment (`f` for `f(...)` and `x.f(...)`),
    /// in document order.
    calls: HashMap<&'s str, Vec<(Node<'t>, String)>>,
    /// The scope (function or module) of every named node, by node id: tree-sitter finds a
    /// node's parent by walking down from the root, which is slow in long modules.
    scopes: HashMap<usize, Node<'t>>,
    /// The parent of every named node, by node id (for the same reason).
    parents: HashMap<usize, Node<'t>>,
    /// The module-level function definitions by name (the first of each name).
    module_functions: HashMap<&'s str, Node<'t>>,
    /// `K.step` attributes inside functions: the function and `K`.
    step_sites: Vec<(Node<'t>, &'s str)>,
}

impl<'t, 's> Index<'t, 's> {
    fn build(root: Node<'t>, source: &'s str) -> Self {
        let mut calls: HashMap<&'s str, Vec<(Node<'t>, String)>> = HashMap::new();
        let mut add_arguments = Vec::new();
        let mut scopes = HashMap::new();
        let mut parents = HashMap::new();
        let mut module_functions = HashMap::new();
        let mut step_sites = Vec::new();
        for def in named_children(root).into_iter().filter_map(definition_of) {
            if let Some(name) = def.child_by_field_name("name") {
                module_functions.entry(text(name, source)).or_insert(def);
            }
        }
        let mut stack = vec![(root, root)];
        while let Some((node, scope)) = stack.pop() {
            scopes.insert(node.id(), scope);
            if node.kind() == "attribute"
                && scope != root
                && node
                    .child_by_field_name("attribute")
                    .is_some_and(|a| text(a, source) == "step")
                && let Some(object) = node.child_by_field_name("object")
                && object.kind() == "identifier"
            {
                step_sites.push((scope, text(object, source)));
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
            cli: cli_args(&add_arguments, source),
            calls,
            scopes,
            parents,
            module_functions,
            step_sites,
        }
    }
}

impl<'t, 's> Resolver<'t, 's> {
    /// A resolver for the file whose syntax tree is `root`.
    pub(crate) fn new(root: Node<'t>, source: &'s str) -> Self {
        Self {
            source,
            root,
            index: OnceCell::new(),
            module_bindings: RefCell::new(HashMap::new()),
            globals_stepped: OnceCell::new(),
        }
    }

    /// Whether some function of the file steps the module global `name` (`name.step`
    /// in a function none of whose enclosing functions has a parameter `name`).
    pub(crate) fn global_stepped_in_function(&self, name: &str) -> bool {
        self.globals_stepped
            .get_or_init(|| {
                let index = self.index();
                index
                    .step_sites
                    .iter()
                    .filter(|(scope, key)| {
                        let mut def = *scope;
                        while def.kind() == "function_definition" {
                            if parameter(def, key, self.source).is_some() {
                                return false;
                            }
                            def = self.scope_of(def);
                        }
                        true
                    })
                    .map(|(_, key)| *key)
                    .collect()
            })
            .contains(name)
    }

    /// The truth value of a condition the script fixes in its text (`True`, `False`, an
    /// integer, a name assigned one of these once, `not` of such), and the names followed.
    pub(crate) fn truth(
        &self,
        node: Node<'t>,
        frame: Option<Frame<'t>>,
    ) -> Result<(bool, Trail), String> {
        if node.kind() == "not_operator" {
            let inner = node
                .child_by_field_name("argument")
                .ok_or("an incomplete expression")?;
            return self.truth(inner, frame).map(|(t, trail)| (!t, trail));
        }
        let (value, _) = self.expression(node, frame);
        let mut trail = Trail::default();
        let truth = match value.kind() {
            "true" => true,
            "false" | "none" => false,
            _ => {
                let found = self.int(node, frame)?;
                return Ok((found.value != 0, found.trail));
            }
        };
        if value != node {
            trail.resolved.push(format!(
                "{} = {} (line {})",
                self.text(node),
                self.text(value),
                line(value)
            ));
        }
        Ok((truth, trail))
    }

    fn index(&self) -> &Index<'t, 's> {
        self.index
            .get_or_init(|| Index::build(self.root, self.source))
    }

    /// The parent of `node` (from the index when it is a named node).
    pub(crate) fn parent(&self, node: Node<'t>) -> Option<Node<'t>> {
        match self.index().parents.get(&node.id()) {
            Some(parent) => Some(*parent),
            None => node.parent(),
        }
    }

    /// The class a node is written in (the nearest class around it).
    fn enclosing_class(&self, node: Node<'t>) -> Option<Node<'t>> {
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
    pub(crate) fn is_method(&self, def: Node<'t>) -> bool {
        let mut parent = self.parent(def);
        if parent.is_some_and(|p| p.kind() == "decorated_definition") {
            parent = parent.and_then(|p| self.parent(p));
        }
        parent
            .and_then(|block| self.parent(block))
            .is_some_and(|c| c.kind() == "class_definition")
    }

    /// The nearest function definition around `node`, or the module.
    pub(crate) fn scope_of(&self, node: Node<'t>) -> Node<'t> {
        match self.index().scopes.get(&node.id()) {
            Some(scope) => *scope,
            None => scope_of(node),
        }
    }

    /// The integer value of `node`, evaluated with the parameters of `frame` bound to its call.
    pub(crate) fn int(&self, node: Node<'t>, frame: Option<Frame<'t>>) -> Resolution {
        self.int_at(node, frame, 0)
    }

    /// The expression `node` stands for: names and `self.x` followed to the one expression
    /// assigned to them, parameters to the argument of their call. The frame returned is the
    /// one that expression must be evaluated in.
    pub(crate) fn expression(
        &self,
        node: Node<'t>,
        frame: Option<Frame<'t>>,
    ) -> (Node<'t>, Option<Frame<'t>>) {
        let mut current = (node, frame);
        for _ in 0..MAX_DEPTH {
            match self.follow_once(current.0, current.1) {
                Some(next) => current = next,
                None => break,
            }
        }
        current
    }

    fn follow_once(
        &self,
        node: Node<'t>,
        frame: Option<Frame<'t>>,
    ) -> Option<(Node<'t>, Option<Frame<'t>>)> {
        match node.kind() {
            "identifier" => match self.binding(node, text(node, self.source)).ok()? {
                Binding::Value(value) => Some((value, frame)),
                Binding::Param(param) => {
                    let call = match frame.filter(|f| f.def == param.def) {
                        Some(f) => f.call,
                        None => match self.call_sites(param.def).as_slice() {
                            [only] => *only,
                            [] => return param.default.map(|d| (d, None)),
                            _ => return None,
                        },
                    };
                    match self.argument(&param, call).ok()? {
                        Some(arg) => Some((arg, None)),
                        None => param.default.map(|d| (d, None)),
                    }
                }
                Binding::Other(_) => None,
            },
            "attribute" => {
                let attr = dotted(node, self.source)?.strip_prefix("self.")?.to_owned();
                let value = self.instance_attribute(node, &attr).ok()?;
                Some((value, None))
            }
            "parenthesized_expression" => Some((node.named_child(0)?, frame)),
            _ => None,
        }
    }

    fn int_at(&self, node: Node<'t>, frame: Option<Frame<'t>>, depth: u8) -> Resolution {
        if depth > MAX_DEPTH {
            return Err(format!("`{}` chains too many names", self.text(node)));
        }
        let depth = depth + 1;
        match node.kind() {
            "integer" => {
                let digits: String = self.text(node).chars().filter(|c| *c != '_').collect();
                digits
                    .parse()
                    .map(Int::literal)
                    .map_err(|_| format!("`{}` is not a plain integer", self.text(node)))
            }
            "parenthesized_expression" => match node.named_child(0) {
                Some(inner) => self.int_at(inner, frame, depth),
                None => Err("an empty expression".to_owned()),
            },
            "unary_operator" => self.unary(node, frame, depth),
            "binary_operator" => self.binary(node, frame, depth),
            "identifier" => self.name(node, frame, depth),
            "attribute" => self.attribute(node, frame, depth),
            "call" => self.call(node, frame, depth),
            _ => Err(format!(
                "`{}` is not an integer lint can compute",
                self.text(node)
            )),
        }
    }

    fn text(&self, node: Node<'_>) -> &'s str {
        text(node, self.source)
    }

    fn unary(&self, node: Node<'t>, frame: Option<Frame<'t>>, depth: u8) -> Resolution {
        let operand = node
            .child_by_field_name("argument")
            .ok_or("an incomplete expression")?;
        let mut value = self.int_at(operand, frame, depth)?;
        let operator = node.child_by_field_name("operator").map(|o| self.text(o));
        value.value = match operator {
            Some("-") => value.value.checked_neg().ok_or("an integer overflow")?,
            Some("+") => value.value,
            _ => return Err(format!("`{}` is not integer arithmetic", self.text(node))),
        };
        Ok(value)
    }

    fn binary(&self, node: Node<'t>, frame: Option<Frame<'t>>, depth: u8) -> Resolution {
        let (Some(l), Some(r), Some(op)) = (
            node.child_by_field_name("left"),
            node.child_by_field_name("right"),
            node.child_by_field_name("operator"),
        ) else {
            return Err("an incomplete expression".to_owned());
        };
        let left = self.int_at(l, frame, depth)?;
        let right = self.int_at(r, frame, depth)?;
        let (a, b) = (left.value, right.value);
        let value = match self.text(op) {
            "+" => a.checked_add(b),
            "-" => a.checked_sub(b),
            "*" => a.checked_mul(b),
            "//" if b != 0 => Some(a.div_euclid(b)),
            "%" if b != 0 => Some(a.rem_euclid(b)),
            _ => {
                return Err(format!(
                    "`{}` is not integer arithmetic lint computes",
                    self.text(node)
                ));
            }
        }
        .ok_or("an integer overflow")?;
        let mut trail = left.trail;
        trail.merge(&right.trail);
        Ok(Int { value, trail })
    }

    fn name(&self, node: Node<'t>, frame: Option<Frame<'t>>, depth: u8) -> Resolution {
        let name = self.text(node);
        match self.binding(node, name)? {
            Binding::Value(value) => {
                let mut found = self.int_at(value, frame, depth)?;
                found.trail.resolved.push(format!(
                    "{name} = {} (line {})",
                    found.value,
                    line(value)
                ));
                Ok(found)
            }
            Binding::Param(param) => self.param(&param, frame, depth),
            Binding::Other(what) => Err(format!("`{name}` is {what}")),
        }
    }

    /// The one binding of `name` seen from `at` (its function, then the module).
    fn binding(&self, at: Node<'t>, name: &str) -> Result<Binding<'t>, String> {
        let mut scope = self.scope_of(at);
        loop {
            let mut found = if scope.kind() == "module" {
                self.module_bindings
                    .borrow_mut()
                    .entry(name.to_owned())
                    .or_insert_with(|| bindings(scope, name, self.source))
                    .clone()
            } else {
                bindings(scope, name, self.source)
            };
            if found.len() > 1 {
                return Err(format!("`{name}` is assigned more than once"));
            }
            if let Some(binding) = found.pop() {
                return Ok(binding);
            }
            if scope.kind() == "module" {
                return Err(format!("`{name}` is not assigned in this file"));
            }
            scope = self.scope_of(scope);
        }
    }

    fn param(&self, param: &Param<'t>, frame: Option<Frame<'t>>, depth: u8) -> Resolution {
        let function = function_name(param.def, self.source);
        let name = &param.name;
        if let Some(f) = frame.filter(|f| f.def == param.def) {
            return self.argument_value(param, f.call, depth);
        }
        let calls = self.call_sites(param.def);
        if calls.is_empty() {
            let Some(default) = param.default else {
                return Err(format!(
                    "`{name}` is a parameter of `{function}()` without a default, and `{function}()` is not called in this file"
                ));
            };
            let mut found = self.int_at(default, None, depth)?;
            found.trail.runtime.push(format!(
                "parameter `{name}` of `{function}()`, default {} (no call in this file)",
                found.value
            ));
            return Ok(found);
        }
        let values: Vec<Int> = calls
            .iter()
            .map(|call| self.argument_value(param, *call, depth))
            .collect::<Result<_, _>>()?;
        let first = values[0].clone();
        if values.iter().any(|v| v.value != first.value) {
            let lines: Vec<String> = calls.iter().map(|c| line(*c).to_string()).collect();
            return Err(format!(
                "`{function}()` is called with different values of `{name}` (lines {})",
                lines.join(", ")
            ));
        }
        Ok(first)
    }

    /// The value of `param` at `call`: its argument, else its default.
    fn argument_value(&self, param: &Param<'t>, call: Node<'t>, depth: u8) -> Resolution {
        let function = function_name(param.def, self.source);
        let name = &param.name;
        let (node, how) = match self.argument(param, call)? {
            Some(arg) => (arg, format!("at the call on line {}", line(call))),
            None => match param.default {
                Some(default) => (
                    default,
                    format!("the default, at the call on line {}", line(call)),
                ),
                None => {
                    return Err(format!(
                        "`{function}()` is called without `{name}` on line {}",
                        line(call)
                    ));
                }
            },
        };
        let mut found = self.int_at(node, None, depth)?;
        found
            .trail
            .resolved
            .push(format!("{name} = {} ({how})", found.value));
        Ok(found)
    }

    /// The argument node `call` passes for `param` (`None`: not passed).
    fn argument(&self, param: &Param<'t>, call: Node<'t>) -> Result<Option<Node<'t>>, String> {
        if has_splat(call) {
            return Err(format!(
                "the call on line {} passes `*args`/`**kwargs`",
                line(call)
            ));
        }
        if let Some(value) = kwarg(call, &param.name, self.source) {
            return Ok(Some(value));
        }
        let offset = usize::from(self.is_method(param.def));
        let index = param.index.and_then(|i| i.checked_sub(offset));
        Ok(index.and_then(|i| positional(call).get(i).copied()))
    }

    /// The module node of the file.
    pub(crate) fn root(&self) -> Node<'t> {
        self.root
    }

    /// Whether `def` has a parameter `name`.
    pub(crate) fn has_parameter(&self, def: Node<'t>, name: &str) -> bool {
        parameter(def, name, self.source).is_some()
    }

    /// The argument `call` passes for the parameter `name` of `def` (`None`: not a
    /// parameter, not passed, or hidden in `*args`/`**kwargs`).
    pub(crate) fn argument_of(
        &self,
        def: Node<'t>,
        name: &str,
        call: Node<'t>,
    ) -> Option<Node<'t>> {
        let param = parameter(def, name, self.source)?;
        self.argument(&param, call).ok().flatten()
    }

    /// The calls of `def` in the file: `f(...)` for a module function, `x.f(...)` for a
    /// method, `Class(...)` for `__init__`.
    pub(crate) fn call_sites(&self, def: Node<'t>) -> Vec<Node<'t>> {
        let name = function_name(def, self.source);
        let method = self.is_method(def);
        let class = method
            .then(|| self.enclosing_class(def))
            .flatten()
            .and_then(|c| c.child_by_field_name("name"))
            .map(|n| self.text(n));
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
    pub(crate) fn local_function(&self, call: Node<'t>) -> Option<Node<'t>> {
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
            .filter_map(definition_of)
            .find(|d| {
                d.child_by_field_name("name")
                    .is_some_and(|n| self.text(n) == wanted)
            })
    }

    fn attribute(&self, node: Node<'t>, frame: Option<Frame<'t>>, depth: u8) -> Resolution {
        let Some(name) = dotted(node, self.source) else {
            return Err(format!("`{}` is not a simple attribute", self.text(node)));
        };
        if let Some(attr) = name.strip_prefix("self.")
            && !attr.contains('.')
        {
            let value = self.instance_attribute(node, attr)?;
            let mut found = self.int_at(value, frame, depth)?;
            found
                .trail
                .resolved
                .push(format!("{name} = {} (line {})", found.value, line(value)));
            return Ok(found);
        }
        let dest = last_segment(&name);
        let args: Vec<&CliArg<'t>> = self.index().cli.iter().filter(|a| a.dest == dest).collect();
        match args.as_slice() {
            [arg] => self.cli_value(arg, depth),
            [] => Err(format!(
                "`{name}` is an attribute lint cannot follow (not `self.x`, not a command-line option of this file)"
            )),
            _ => Err(format!(
                "`{dest}` is declared by more than one `add_argument`"
            )),
        }
    }

    fn cli_value(&self, arg: &CliArg<'t>, depth: u8) -> Resolution {
        let flag = &arg.flag;
        if arg.required {
            return Err(format!(
                "`{flag}` is required on the command line (no default)"
            ));
        }
        let Some(default) = arg.default else {
            return Err(format!(
                "`{flag}` comes from the command line and has no default"
            ));
        };
        let mut found = self.int_or_digits(default, depth)?;
        found.trail.runtime.push(format!(
            "`{flag}` from the command line, default {}",
            found.value
        ));
        Ok(found)
    }

    /// An integer, or a string literal of one (`"30"`, as `int()` and argparse accept).
    fn int_or_digits(&self, node: Node<'t>, depth: u8) -> Resolution {
        if node.kind() == "string"
            && let Some(value) =
                string_literal(node, self.source).and_then(|s| s.trim().parse().ok())
        {
            return Ok(Int::literal(value));
        }
        self.int_at(node, None, depth)
    }

    fn call(&self, node: Node<'t>, frame: Option<Frame<'t>>, depth: u8) -> Resolution {
        let name = callee(node, self.source).unwrap_or_default();
        let args = positional(node);
        match (name.as_str(), args.as_slice()) {
            ("int", [value]) => match value.kind() {
                "string" => self.int_or_digits(*value, depth),
                _ => self.int_at(*value, frame, depth),
            },
            ("os.getenv" | "os.environ.get" | "getenv", [var, default]) => {
                let var = string_literal(*var, self.source).unwrap_or_default();
                let mut found = self.int_or_digits(*default, depth)?;
                found.trail.runtime.push(format!(
                    "environment variable `{var}`, default {}",
                    found.value
                ));
                Ok(found)
            }
            ("max" | "min", [_, _, ..]) => {
                let values: Vec<Int> = args
                    .iter()
                    .map(|a| self.int_at(*a, frame, depth))
                    .collect::<Result<_, _>>()?;
                let pick = if name == "max" {
                    values.iter().max_by_key(|v| v.value)
                } else {
                    values.iter().min_by_key(|v| v.value)
                };
                let mut trail = Trail::default();
                for v in &values {
                    trail.merge(&v.trail);
                }
                Ok(Int {
                    value: pick.map_or(0, |v| v.value),
                    trail,
                })
            }
            _ => Err(format!(
                "`{}` is the result of a call, known only at run time",
                self.text(node)
            )),
        }
    }

    /// The one value assigned to `self.<attr>` in the class around `at` (or a class-level
    /// `attr = value`).
    fn instance_attribute(&self, at: Node<'t>, attr: &str) -> Result<Node<'t>, String> {
        let Some(class) = self.enclosing_class(at) else {
            return Err(format!("`self.{attr}` is used outside a class"));
        };
        let wanted = format!("self.{attr}");
        let mut values = Vec::new();
        let mut others = 0;
        let mut stack = vec![class];
        while let Some(node) = stack.pop() {
            if node != class && node.kind() == "class_definition" {
                continue;
            }
            match node.kind() {
                "assignment" => {
                    let left = node.child_by_field_name("left");
                    let target = left.and_then(|l| dotted(l, self.source));
                    let class_level = left.is_some_and(|l| l.kind() == "identifier")
                        && node
                            .parent()
                            .and_then(|p| self.parent(p))
                            .and_then(|b| self.parent(b))
                            == Some(class)
                        && target.as_deref() == Some(attr);
                    if target.as_deref() == Some(wanted.as_str()) || class_level {
                        match node.child_by_field_name("right") {
                            Some(right) => values.push(right),
                            None => others += 1,
                        }
                    }
                }
                "augmented_assignment"
                    if node
                        .child_by_field_name("left")
                        .and_then(|l| dotted(l, self.source))
                        .as_deref()
                        == Some(wanted.as_str()) =>
                {
                    others += 1
                }
                _ => {}
            }
            stack.extend(named_children(node));
        }
        match (values.as_slice(), others) {
            ([value], 0) => Ok(*value),
            ([], 0) => Err(format!("`self.{attr}` is not assigned in its class")),
            _ => Err(format!(
                "`self.{attr}` is assigned more than once in its class"
            )),
        }
    }
}

/// The options declared by `add_argument(...)` calls.
fn cli_args<'t>(calls: &[Node<'t>], source: &str) -> Vec<CliArg<'t>> {
    let mut out = Vec::new();
    for node in calls.iter().copied() {
        let flags: Vec<String> = positional(node)
            .into_iter()
            .filter_map(|a| string_literal(a, source))
            .collect();
        let Some(flag) = flags
            .iter()
            .find(|f| f.starts_with("--"))
            .or(flags.first())
            .cloned()
        else {
            continue;
        };
        let dest = kwarg(node, "dest", source)
            .and_then(|d| string_literal(d, source))
            .unwrap_or_else(|| flag.trim_start_matches('-').replace('-', "_"));
        out.push(CliArg {
            dest,
            flag,
            default: kwarg(node, "default", source),
            required: kwarg(node, "required", source).is_some_and(|r| text(r, source) == "True"),
        });
    }
    out
}

/// The content of a plain string literal (no f-string, no concatenation).
fn string_literal(node: Node<'_>, source: &str) -> Option<String> {
    if node.kind() != "string"
        || named_children(node)
            .iter()
            .any(|c| c.kind() == "interpolation")
    {
        return None;
    }
    let raw = text(node, source);
    let body = raw.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let quote = ["\"\"\"", "'''", "\"", "'"]
        .into_iter()
        .find(|q| body.starts_with(q) && body.ends_with(q) && body.len() >= 2 * q.len())?;
    Some(body[quote.len()..body.len() - quote.len()].to_owned())
}

/// The function definition behind a statement (`def`, or a decorated `def`).
fn definition_of(node: Node<'_>) -> Option<Node<'_>> {
    match node.kind() {
        "function_definition" => Some(node),
        "decorated_definition" => node
            .child_by_field_name("definition")
            .filter(|d| d.kind() == "function_definition"),
        _ => None,
    }
}

/// The bindings of `name` directly in `scope` (not in nested definitions).
fn bindings<'t>(scope: Node<'t>, name: &str, source: &str) -> Vec<Binding<'t>> {
    let mut out = Vec::new();
    if scope.kind() == "function_definition" {
        out.extend(parameter(scope, name, source).map(Binding::Param));
    }
    let body = match scope.kind() {
        "function_definition" => scope.child_by_field_name("body"),
        _ => Some(scope),
    };
    let Some(body) = body else { return out };
    let mentions = |target: Node<'_>| {
        descendants_in_scope(target)
            .iter()
            .any(|n| n.kind() == "identifier" && text(*n, source) == name)
    };
    for node in descendants_in_scope(body) {
        match node.kind() {
            "assignment" => {
                let (Some(left), right) = (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                ) else {
                    continue;
                };
                if matches!(left.kind(), "attribute" | "subscript") || !mentions(left) {
                    continue;
                }
                out.push(match (left.kind(), right) {
                    ("identifier", Some(right)) => Binding::Value(right),
                    ("identifier", None) => Binding::Other("declared without a value"),
                    (_, Some(right)) => unpacked(left, right, name, source),
                    (_, None) => Binding::Other("declared without a value"),
                });
            }
            "augmented_assignment" if node.child_by_field_name("left").is_some_and(mentions) => {
                out.push(Binding::Other("changed in place (`+=` ...)"))
            }
            "for_statement" if node.child_by_field_name("left").is_some_and(mentions) => {
                out.push(Binding::Other("a loop variable"))
            }
            "as_pattern_target" if mentions(node) => out.push(Binding::Other("bound by `as`")),
            "named_expression" if node.child_by_field_name("name").is_some_and(mentions) => {
                out.push(Binding::Other("bound by `:=`"))
            }
            "import_statement" | "import_from_statement" if mentions(node) => {
                out.push(Binding::Other("imported"))
            }
            "function_definition" | "class_definition"
                if node != body
                    && node
                        .child_by_field_name("name")
                        .is_some_and(|n| text(n, source) == name) =>
            {
                out.push(Binding::Other("a function or class"))
            }
            _ => {}
        }
    }
    out
}

/// `a, b = 2, 30` → the element for `name`.
fn unpacked<'t>(left: Node<'t>, right: Node<'t>, name: &str, source: &str) -> Binding<'t> {
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

/// The parameter `name` of `def`.
fn parameter<'t>(def: Node<'t>, name: &str, source: &str) -> Option<Param<'t>> {
    let params = def.child_by_field_name("parameters")?;
    let mut index = Some(0usize);
    for param in named_children(params) {
        let (ident, default) = match param.kind() {
            "identifier" => (Some(param), None),
            "default_parameter" | "typed_default_parameter" => (
                param.child_by_field_name("name"),
                param.child_by_field_name("value"),
            ),
            "typed_parameter" => (param.named_child(0), None),
            "list_splat_pattern" | "keyword_separator" | "dictionary_splat_pattern" => {
                index = None;
                (param.named_child(0), None)
            }
            _ => (None, None),
        };
        if let Some(ident) = ident
            && ident.kind() == "identifier"
            && text(ident, source) == name
        {
            return Some(Param {
                def,
                index: index.filter(|_| {
                    !matches!(
                        param.kind(),
                        "list_splat_pattern" | "dictionary_splat_pattern"
                    )
                }),
                name: text(ident, source).to_owned(),
                default,
            });
        }
        index = index.map(|i| i + 1);
    }
    None
}

/// The name of the parameter of `def` that receives a call's positional argument `index`
/// (`self` skipped for methods).
pub(crate) fn parameter_at<'s>(
    def: Node<'_>,
    method: bool,
    index: usize,
    source: &'s str,
) -> Option<&'s str> {
    let params = def.child_by_field_name("parameters")?;
    let index = index + usize::from(method);
    let param = named_children(params)
        .into_iter()
        .filter(|p| p.kind() != "comment")
        .nth(index)?;
    let ident = match param.kind() {
        "identifier" => param,
        "default_parameter" | "typed_default_parameter" => param.child_by_field_name("name")?,
        "typed_parameter" => param.named_child(0)?,
        _ => return None,
    };
    (ident.kind() == "identifier").then(|| text(ident, source))
}

/// The name of a function definition (`?` if it has none).
pub(crate) fn function_name<'s>(def: Node<'_>, source: &'s str) -> &'s str {
    def.child_by_field_name("name")
        .map_or("?", |n| text(n, source))
}

#[cfg(test)]
mod tests {
    use npuprof_syntax::{descendants_in_scope, parse};

    use super::*;

    /// Resolves the last identifier or attribute named `target` in `source`.
    fn resolve(source: &str, target: &str) -> Resolution {
        let tree = parse(source).expect("a tree");
        let root = tree.root_node();
        let node = descendants_in_scope(root)
            .into_iter()
            .chain(
                // Function bodies too: the target is usually inside one.
                descendants_in_scope(root)
                    .into_iter()
                    .filter(|n| n.kind() == "function_definition")
                    .flat_map(|f| {
                        descendants_in_scope(f.child_by_field_name("body").expect("body"))
                    }),
            )
            .filter(|n| {
                matches!(n.kind(), "identifier" | "attribute")
                    && text(*n, source) == target
                    && n.parent().is_none_or(|p| p.kind() != "keyword_argument")
            })
            .max_by_key(|n| n.start_byte())
            .expect("the target occurs");
        Resolver::new(root, source).int(node, None)
    }

    #[test]
    fn tuple_unpacking_and_arithmetic() {
        let found = resolve("W, A = 2, 30\nM = W + A * 2 - 1\nM\n", "M").expect("resolved");
        assert_eq!(found.value, 61);
        assert_eq!(
            found.trail.resolved,
            ["W = 2 (line 1)", "A = 30 (line 1)", "M = 61 (line 2)"]
        );
        assert!(found.trail.runtime.is_empty());
    }

    #[test]
    fn unpacking_of_another_arity_is_not_split() {
        let err = resolve("A, B = f()\nA\n", "A").expect_err("unknown");
        assert!(err.contains("unpacked from an expression"), "{err}");
    }

    #[test]
    fn a_self_referencing_name_stops_with_a_reason() {
        let err = resolve("def f():\n    N = N + 1\n    return N\n", "N").expect_err("loops");
        assert!(err.contains("chains too many names"), "{err}");
    }

    #[test]
    fn a_required_option_has_no_default_to_check_with() {
        let source = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--steps', type=int, required=True)\nargs = p.parse_args()\nargs.steps\n";
        let err = resolve(source, "args.steps").expect_err("required");
        assert_eq!(
            err,
            "`--steps` is required on the command line (no default)"
        );
    }

    #[test]
    fn keyword_only_parameters_take_keyword_arguments() {
        let source = "def run(*, steps=4):\n    return steps\nrun(steps=9)\n";
        assert_eq!(resolve(source, "steps").expect("resolved").value, 9);
        let source = "def run(*, steps=4):\n    return steps\nrun()\n";
        assert_eq!(resolve(source, "steps").expect("resolved").value, 4);
    }

    #[test]
    fn different_calls_are_not_guessed_between() {
        let source = "def run(steps=4):\n    return steps\nrun(1)\nrun(2)\n";
        let err = resolve(source, "steps").expect_err("ambiguous");
        assert_eq!(
            err,
            "`run()` is called with different values of `steps` (lines 3, 4)"
        );
    }

    #[test]
    fn string_literals_are_read_plainly() {
        let source = "x = 'ab'\ny = \"\"\"cd\"\"\"\nz = f'{x}'\n";
        let tree = parse(source).expect("a tree");
        let strings: Vec<Option<String>> = descendants_in_scope(tree.root_node())
            .into_iter()
            .filter(|n| n.kind() == "string")
            .map(|n| string_literal(n, source))
            .collect();
        assert_eq!(
            strings,
            [Some("ab".to_owned()), Some("cd".to_owned()), None]
        );
    }
}
