//! What integer (or which expression) a name stands for, the way the script's author wrote it
//! — module and function constants (tuple unpacking and integer arithmetic included),
//! argparse defaults, environment-variable defaults, function parameters at the call that
//! matters, attributes assigned once (`self.warmup = 2`) — flow-insensitively: a name must
//! have one binding in its scope.
//!
//! Every answer says how it was found ([`Trail`]): the names followed, and what is decided at
//! run time (a command-line flag, a parameter with no call in the file), checked with its
//! default. When a value cannot be known the answer is an error naming why; nothing is guessed.

use tree_sitter::Node;

use super::SemanticModel;
use super::bindings::Binding;
use super::literal::{int_literal, string_literal};
use super::options::CliOption;
use super::params::{Param, function_name, parameter};
use crate::call::{callee, dotted, has_splat, kwarg, positional};
use crate::tree::{line, named_children, text};

/// How deep names may chain (`A = B`, `B = C + 1`, ...) before giving up.
const MAX_DEPTH: u8 = 12;

/// A call of a function defined in the file: that function's parameters take this call's
/// arguments (e.g. `with make_profiler(active=5) as prof:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'t> {
    /// The function definition.
    pub def: Node<'t>,
    /// The call.
    pub call: Node<'t>,
}

/// How a value was found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trail {
    /// `NAME = value (line N)` for each name followed, innermost first.
    pub resolved: Vec<String>,
    /// What is decided at run time, with the default the value was checked with.
    pub runtime: Vec<String>,
}

impl Trail {
    /// Adds `other`'s entries that are not already here.
    pub fn merge(&mut self, other: &Trail) {
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
    pub fn describe(&self) -> String {
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
pub struct Int {
    /// The value (the default, for values decided at run time).
    pub value: i64,
    /// How it was found.
    pub trail: Trail,
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
pub type Resolution = Result<Int, String>;

impl<'t, 's> SemanticModel<'t, 's> {
    /// The truth value of a condition the script fixes in its text (`True`, `False`, an
    /// integer, a name assigned one of these once, `not` of such), and the names followed.
    pub fn truth(&self, node: Node<'t>, frame: Option<Frame<'t>>) -> Result<(bool, Trail), String> {
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

    /// The integer value of `node`, evaluated with the parameters of `frame` bound to its call.
    pub fn int(&self, node: Node<'t>, frame: Option<Frame<'t>>) -> Resolution {
        self.int_at(node, frame, 0)
    }

    /// The expression `node` stands for: names and `self.x` followed to the one expression
    /// assigned to them, parameters to the argument of their call. The frame returned is the
    /// one that expression must be evaluated in.
    pub fn expression(
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
                Binding::Definition(_) | Binding::Import(_) | Binding::Other(_) => None,
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
            "integer" => int_literal(node, self.source)
                .map(Int::literal)
                .ok_or_else(|| format!("`{}` is not a plain integer", self.text(node))),
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
            Binding::Definition(_) => Err(format!("`{name}` is a function or class")),
            Binding::Import(_) => Err(format!("`{name}` is imported")),
            Binding::Other(what) => Err(format!("`{name}` is {what}")),
        }
    }

    /// The one binding of `name` seen from `at` (its function, then the module).
    pub fn binding(&self, at: Node<'t>, name: &str) -> Result<Binding<'t, 's>, String> {
        let mut scope = self.scope_of(at);
        loop {
            let bindings = self.scope_bindings(scope);
            let found = bindings.of(name);
            if found.len() > 1 {
                return Err(format!("`{name}` is assigned more than once"));
            }
            if let Some(binding) = found.first() {
                return Ok(*binding);
            }
            if scope.kind() == "module" {
                return Err(format!("`{name}` is not assigned in this file"));
            }
            scope = self.scope_of(scope);
        }
    }

    fn param(&self, param: &Param<'t, 's>, frame: Option<Frame<'t>>, depth: u8) -> Resolution {
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
    fn argument_value(&self, param: &Param<'t, 's>, call: Node<'t>, depth: u8) -> Resolution {
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
    fn argument(&self, param: &Param<'t, 's>, call: Node<'t>) -> Result<Option<Node<'t>>, String> {
        if has_splat(call) {
            return Err(format!(
                "the call on line {} passes `*args`/`**kwargs`",
                line(call)
            ));
        }
        if let Some(value) = kwarg(call, param.name, self.source) {
            return Ok(Some(value));
        }
        let offset = usize::from(self.is_method(param.def));
        let index = param.index.and_then(|i| i.checked_sub(offset));
        Ok(index.and_then(|i| positional(call).get(i).copied()))
    }

    /// The module node of the file.
    /// Whether `def` has a parameter `name`.
    pub fn has_parameter(&self, def: Node<'t>, name: &str) -> bool {
        parameter(def, name, self.source).is_some()
    }

    /// The argument `call` passes for the parameter `name` of `def` (`None`: not a
    /// parameter, not passed, or hidden in `*args`/`**kwargs`).
    pub fn argument_of(&self, def: Node<'t>, name: &str, call: Node<'t>) -> Option<Node<'t>> {
        let param = parameter(def, name, self.source)?;
        self.argument(&param, call).ok().flatten()
    }

    /// The calls of `def` in the file: `f(...)` for a module function, `x.f(...)` for a
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
        let dest = name.rsplit('.').next().unwrap_or(&name);
        let args: Vec<&CliOption<'t>> = self
            .cli_options()
            .iter()
            .filter(|a| a.dest == dest)
            .collect();
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

    fn cli_value(&self, arg: &CliOption<'t>, depth: u8) -> Resolution {
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

/// `self.NAME`, `cls.NAME` (the class around `value`) or `Class.NAME` (a class of the module):
/// the attribute and the value of the last `NAME = <value>` statement of that class's body.
pub fn class_attribute<'t, 's>(
    root: Node<'t>,
    value: Node<'t>,
    source: &'s str,
) -> Option<(&'s str, Node<'t>)> {
    if value.kind() != "attribute" {
        return None;
    }
    let owner = dotted(value.child_by_field_name("object")?, source)?;
    let attribute = text(value.child_by_field_name("attribute")?, source);
    let class = if owner == "self" || owner == "cls" {
        std::iter::successors(value.parent(), |n| n.parent())
            .find(|n| n.kind() == "class_definition")?
    } else {
        named_children(root)
            .into_iter()
            .map(|n| match n.kind() {
                "decorated_definition" => n.child_by_field_name("definition").unwrap_or(n),
                _ => n,
            })
            .find(|c| {
                c.kind() == "class_definition"
                    && c.child_by_field_name("name").map(|n| text(n, source))
                        == Some(owner.as_str())
            })?
    };
    let mut found = None;
    for statement in named_children(class.child_by_field_name("body")?) {
        let Some(assignment) = named_children(statement)
            .into_iter()
            .find(|n| n.kind() == "assignment")
        else {
            continue;
        };
        if assignment
            .child_by_field_name("left")
            .is_some_and(|l| text(l, source) == attribute)
        {
            found = Some(assignment.child_by_field_name("right"));
        }
    }
    Some((attribute, found??))
}

#[cfg(test)]
mod tests {
    use crate::{descendants_in_scope, parse};

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
        SemanticModel::new(root, source).int(node, None)
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
    fn class_attributes_are_read_from_the_class_body() {
        let source = "class Runner:\n    STEPS = 4\n    STEPS = 6\n    def run(self):\n        make(self.STEPS, Runner.STEPS, self.NONE, other.STEPS)\n";
        let tree = parse(source).expect("a tree");
        let root = tree.root_node();
        let mut stack = vec![root];
        let mut attributes = Vec::new();
        while let Some(n) = stack.pop() {
            if n.kind() == "attribute" && n.parent().is_some_and(|p| p.kind() == "argument_list") {
                attributes.push(n);
            }
            stack.extend(named_children(n));
        }
        attributes.sort_by_key(|n| n.start_byte());
        let read: Vec<Option<(&str, &str)>> = attributes
            .into_iter()
            .map(|a| class_attribute(root, a, source).map(|(n, v)| (n, text(v, source))))
            .collect();
        assert_eq!(
            read,
            [Some(("STEPS", "6")), Some(("STEPS", "6")), None, None]
        );
    }
}
