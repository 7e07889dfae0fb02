//! Values of Python expressions, evaluated the way the interpreter would where the code makes
//! them certain: literals, module constants, `Enum` members and their `.value`, tuples, dict
//! literals (string keys), comparisons and membership of known values, `not`/`and`/`or`, and
//! `os.path.join` of parts. Locals are followed through a function's straight-line code up to a
//! given node, taking the branch whose condition is known and merging both when it is not (a
//! branch that ends in `return`/`raise` does not reach what follows). Anything else is
//! [`Value::Unknown`], never a guess.

use tree_sitter::Node;

use super::literal::{int_literal, string_text};
use crate::{callee, dotted, line, named_children, text};

/// How deep module constants may chain (`A = B`, `B = A`, ...) before the value is unknown.
const MAX_CONSTANT_DEPTH: u8 = 32;

thread_local! {
    /// The module constants being followed on this thread (a bound on `A = B`, `B = A`).
    static CONSTANT_DEPTH: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// A value an expression evaluates to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// An integer literal, with the byte range of the literal that spells it.
    Int {
        /// The value.
        value: i64,
        /// Where it is written.
        at: std::ops::Range<usize>,
    },
    /// A string.
    Str(String),
    /// `True` / `False`, or a decided comparison.
    Bool(bool),
    /// `None`.
    None,
    /// A member of an `Enum` class of the module.
    Member {
        /// The class.
        class: String,
        /// The member's name.
        name: String,
        /// The member's value (`.value`), when it is a string.
        value: Option<String>,
    },
    /// A tuple or list.
    Tuple(Vec<Value>),
    /// A dict literal with string keys, in order.
    Dict(Vec<(String, Value)>),
    /// A path joined from parts (`os.path.join`), unknown parts kept as their text.
    Path(Vec<PathPart>),
    /// Not known: why (the expression and what stops its evaluation).
    Unknown(String),
}

/// One part of a joined path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathPart {
    /// A known string.
    Known(String),
    /// An expression that is not known (its text).
    Unknown(String),
}

impl Value {
    /// The string it is, when it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The known string parts of a path or string, in order.
    pub fn path_parts(&self) -> Vec<String> {
        match self {
            Value::Str(s) => s
                .split('/')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect(),
            Value::Path(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    PathPart::Known(s) => Some(s.clone()),
                    PathPart::Unknown(_) => None,
                })
                .flat_map(|s| Value::Str(s).path_parts())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Python's truth value, when it is known.
    pub fn truthy(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            Value::None => Some(false),
            Value::Int { value, .. } => Some(*value != 0),
            Value::Str(s) => Some(!s.is_empty()),
            Value::Tuple(items) => Some(!items.is_empty()),
            Value::Dict(entries) => Some(!entries.is_empty()),
            Value::Member { .. } => Some(true),
            Value::Path(_) | Value::Unknown(_) => None,
        }
    }

    fn same(&self, other: &Value) -> Option<bool> {
        match (self, other) {
            (Value::Int { value: a, .. }, Value::Int { value: b, .. }) => Some(a == b),
            (Value::Str(a), Value::Str(b)) => Some(a == b),
            (Value::Bool(a), Value::Bool(b)) => Some(a == b),
            (Value::None, Value::None) => Some(true),
            (
                Value::Member {
                    class: c1,
                    name: n1,
                    ..
                },
                Value::Member {
                    class: c2,
                    name: n2,
                    ..
                },
            ) if c1 == c2 => Some(n1 == n2),
            _ => None,
        }
    }

    /// Whether two values are known to be the same value (for merging branches).
    fn identical(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Unknown(_), _) | (_, Value::Unknown(_)) => false,
            _ => self == other,
        }
    }
}

/// An `Enum` class at the top level of a module and its members with string values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumClass {
    /// The class name.
    pub name: String,
    /// 1-based line of the class.
    pub line: usize,
    /// `(member, value, line)` for each `NAME = "value"` of its body.
    pub members: Vec<(String, String, usize)>,
}

/// What a module defines at its top level that expressions refer to.
#[derive(Debug, Clone, Default)]
pub struct Module<'t> {
    /// Its `Enum` classes.
    pub enums: Vec<EnumClass>,
    constants: Vec<(String, Node<'t>)>,
}

impl<'t> Module<'t> {
    /// Reads the top level of `root`.
    pub fn read(root: Node<'t>, source: &str) -> Self {
        let mut module = Module::default();
        for item in named_children(root) {
            let item = if item.kind() == "decorated_definition" {
                item.child_by_field_name("definition").unwrap_or(item)
            } else {
                item
            };
            match item.kind() {
                "class_definition" => {
                    if let Some(e) = enum_class(item, source) {
                        module.enums.push(e);
                    }
                }
                "expression_statement" => {
                    if let Some((name, value)) = simple_assignment(item, source) {
                        module.constants.retain(|(n, _)| *n != name);
                        module.constants.push((name, value));
                    }
                }
                _ => {}
            }
        }
        module
    }

    /// The enum class named `name`.
    pub fn enum_class(&self, name: &str) -> Option<&EnumClass> {
        self.enums.iter().find(|e| e.name == name)
    }
}

/// `class X(Enum)` (or any base whose name ends in `Enum`) with its string members.
fn enum_class(class: Node<'_>, source: &str) -> Option<EnumClass> {
    let bases = class.child_by_field_name("superclasses")?;
    let is_enum = named_children(bases)
        .into_iter()
        .filter_map(|b| dotted(b, source))
        .any(|b| b.rsplit('.').next().is_some_and(|n| n.ends_with("Enum")));
    if !is_enum {
        return None;
    }
    let name = text(class.child_by_field_name("name")?, source).to_owned();
    let mut members = Vec::new();
    for statement in named_children(class.child_by_field_name("body")?) {
        if let Some((member, value)) = simple_assignment(statement, source)
            && value.kind() == "string"
        {
            members.push((member, string_text(value, source), line(statement)));
        }
    }
    Some(EnumClass {
        name,
        line: line(class),
        members,
    })
}

/// `NAME = <expr>` as one statement: the name and the value node.
fn simple_assignment<'t>(statement: Node<'t>, source: &str) -> Option<(String, Node<'t>)> {
    let assignment = if statement.kind() == "assignment" {
        statement
    } else {
        named_children(statement)
            .into_iter()
            .find(|n| n.kind() == "assignment")?
    };
    let left = assignment.child_by_field_name("left")?;
    let right = assignment.child_by_field_name("right")?;
    (left.kind() == "identifier").then(|| (text(left, source).to_owned(), right))
}

/// Local names bound to values.
pub type Bindings = Vec<(String, Value)>;

/// Evaluates expressions of one module.
#[derive(Debug, Clone, Copy)]
pub struct Evaluator<'m, 't, 's> {
    /// The module's definitions.
    pub module: &'m Module<'t>,
    /// The module's source.
    pub source: &'s str,
    /// The run config, as the value a call of one of `loaders` returns (`yaml.safe_load(f)`).
    pub run_config: Option<&'m Value>,
    /// The functions that load the run config (dotted callee names).
    pub loaders: &'m [String],
}

impl<'m, 't, 's> Evaluator<'m, 't, 's> {
    /// An evaluator of `module` without a run config.
    pub fn new(module: &'m Module<'t>, source: &'s str) -> Self {
        Self {
            module,
            source,
            run_config: None,
            loaders: &[],
        }
    }

    /// Whether `target` (inside `function`) is reached when `function` starts with `locals`:
    /// `Some(true)` certainly, `Some(false)` certainly not, `None` when a condition on the way
    /// is not known.
    pub fn reaches(&self, function: Node<'_>, target: Node<'_>, locals: Bindings) -> Option<bool> {
        let body = function.child_by_field_name("body")?;
        match self.walk(body, target, locals) {
            Walk::Reached(_, certain) => certain.then_some(true),
            Walk::Ended | Walk::Passed(_) => Some(false),
        }
    }

    /// The value of `node` with `locals` bound.
    pub fn eval(&self, node: Node<'_>, locals: &Bindings) -> Value {
        let source = self.source;
        let unknown = || {
            Value::Unknown(format!(
                "`{}` is not a value npuprof evaluates",
                text(node, source)
            ))
        };
        match node.kind() {
            "integer" => int_literal(node, source).map_or_else(unknown, |value| Value::Int {
                value,
                at: node.byte_range(),
            }),
            "string" => self.string(node, locals),
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "none" => Value::None,
            "parenthesized_expression" => named_children(node)
                .into_iter()
                .next()
                .map_or_else(unknown, |n| self.eval(n, locals)),
            "identifier" => {
                let name = text(node, source);
                if let Some((_, v)) = locals.iter().rev().find(|(n, _)| n == name) {
                    return v.clone();
                }
                match self.module.constants.iter().rev().find(|(n, _)| n == name) {
                    Some((_, value)) => CONSTANT_DEPTH.with(|depth| {
                        if depth.get() >= MAX_CONSTANT_DEPTH {
                            return Value::Unknown(format!("`{name}` chains too many names"));
                        }
                        depth.set(depth.get() + 1);
                        let found = self.eval(*value, &Vec::new());
                        depth.set(depth.get() - 1);
                        found
                    }),
                    None => Value::Unknown(format!(
                        "`{name}` is neither a local nor a module constant here"
                    )),
                }
            }
            "attribute" => self.attribute(node, locals).unwrap_or_else(|| {
                Value::Unknown(format!(
                    "`{}` is an attribute npuprof does not follow",
                    text(node, source)
                ))
            }),
            "tuple" | "list" | "expression_list" => Value::Tuple(
                named_children(node)
                    .into_iter()
                    .filter(|n| n.kind() != "comment")
                    .map(|n| self.eval(n, locals))
                    .collect(),
            ),
            "dictionary" => self.dict(node, locals).unwrap_or_else(unknown),
            "comparison_operator" => self.compare(node, locals).unwrap_or_else(unknown),
            "not_operator" => match node
                .child_by_field_name("argument")
                .map(|a| self.eval(a, locals))
            {
                Some(Value::Bool(b)) => Value::Bool(!b),
                _ => unknown(),
            },
            "boolean_operator" => self.boolean(node, locals).unwrap_or_else(unknown),
            "call" => self.call(node, locals).unwrap_or_else(|| {
                Value::Unknown(format!(
                    "`{}` is a call, known only at run time",
                    text(node, source)
                ))
            }),
            _ => unknown(),
        }
    }

    /// A string literal; an f-string when every interpolation is a known string or integer
    /// without conversion or format spec (`f"{root}/{stage.value}"`).
    fn string(&self, node: Node<'_>, locals: &Bindings) -> Value {
        let mut out = String::new();
        for part in named_children(node) {
            match part.kind() {
                "string_content" => out.push_str(text(part, self.source)),
                "interpolation" => {
                    // `{`, the expression, `}`: no `=`, conversion or format spec.
                    let parts = crate::all_children(part);
                    let [_, expression, _] = parts.as_slice() else {
                        return Value::Unknown(format!(
                            "`{}` formats with a conversion or format spec",
                            text(part, self.source)
                        ));
                    };
                    match self.eval(*expression, locals) {
                        Value::Str(s) => out.push_str(&s),
                        Value::Int { value, .. } => out.push_str(&value.to_string()),
                        unknown @ Value::Unknown(_) => return unknown,
                        _ => {
                            return Value::Unknown(format!(
                                "`{}` in an f-string is not a string or an integer",
                                text(*expression, self.source)
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
        Value::Str(out)
    }

    fn attribute(&self, node: Node<'_>, locals: &Bindings) -> Option<Value> {
        let object = node.child_by_field_name("object")?;
        let attribute = text(node.child_by_field_name("attribute")?, self.source);
        if object.kind() == "identifier"
            && let Some(class) = self.module.enum_class(text(object, self.source))
            && !locals.iter().any(|(n, _)| n == &class.name)
        {
            let (name, value, _) = class.members.iter().find(|(m, _, _)| m == attribute)?;
            return Some(Value::Member {
                class: class.name.clone(),
                name: name.clone(),
                value: Some(value.clone()),
            });
        }
        match (self.eval(object, locals), attribute) {
            (Value::Member { value: Some(v), .. }, "value") => Some(Value::Str(v)),
            (Value::Member { name, .. }, "name") => Some(Value::Str(name)),
            _ => None,
        }
    }

    fn dict(&self, node: Node<'_>, locals: &Bindings) -> Option<Value> {
        let mut entries = Vec::new();
        for pair in named_children(node) {
            match pair.kind() {
                "comment" => {}
                "pair" => {
                    let key = self.eval(pair.child_by_field_name("key")?, locals);
                    let value = self.eval(pair.child_by_field_name("value")?, locals);
                    entries.push((key.as_str()?.to_owned(), value));
                }
                _ => return None,
            }
        }
        Some(Value::Dict(entries))
    }

    fn compare(&self, node: Node<'_>, locals: &Bindings) -> Option<Value> {
        let operands = named_children(node);
        let operators: Vec<String> = (0..node.child_count())
            .filter_map(|i| node.child(i))
            .filter(|c| !c.is_named())
            .map(|c| text(c, self.source).to_owned())
            .collect();
        let [left, right] = operands.as_slice() else {
            return None;
        };
        let (a, b) = (self.eval(*left, locals), self.eval(*right, locals));
        let op = operators.join(" ");
        let result = match op.as_str() {
            "==" | "is" => a.same(&b)?,
            "!=" | "is not" => !a.same(&b)?,
            "in" | "not in" => {
                let Value::Tuple(items) = b else { return None };
                let mut found = false;
                for item in &items {
                    if a.same(item)? {
                        found = true;
                    }
                }
                found == (op == "in")
            }
            _ => return None,
        };
        Some(Value::Bool(result))
    }

    fn boolean(&self, node: Node<'_>, locals: &Bindings) -> Option<Value> {
        let left = self.eval(node.child_by_field_name("left")?, locals);
        let right = self.eval(node.child_by_field_name("right")?, locals);
        let op = node.child_by_field_name("operator")?;
        let (Value::Bool(a), Value::Bool(b)) = (left, right) else {
            return None;
        };
        Some(Value::Bool(if text(op, self.source) == "and" {
            a && b
        } else {
            a || b
        }))
    }

    fn call(&self, node: Node<'_>, locals: &Bindings) -> Option<Value> {
        if let Some(function) = node.child_by_field_name("function")
            && function.kind() == "attribute"
            && function
                .child_by_field_name("attribute")
                .is_some_and(|a| text(a, self.source) == "get")
        {
            let object = self.eval(function.child_by_field_name("object")?, locals);
            let args = crate::positional(node);
            let key = self.eval(*args.first()?, locals);
            let Value::Dict(entries) = object else {
                return None;
            };
            let key = key.as_str()?;
            return Some(match entries.iter().find(|(k, _)| k == key) {
                Some((_, v)) => v.clone(),
                None => args.get(1).map_or(Value::None, |d| self.eval(*d, locals)),
            });
        }
        let name = callee(node, self.source)?;
        if self.loaders.contains(&name) {
            return self.run_config.cloned();
        }
        if !matches!(name.as_str(), "os.path.join" | "path.join" | "join") {
            return None;
        }
        let mut parts = Vec::new();
        for arg in crate::arguments(node) {
            if arg.kind() == "keyword_argument" || arg.kind().ends_with("splat") {
                return None;
            }
            parts.push(match self.eval(arg, locals) {
                Value::Str(s) => PathPart::Known(s),
                Value::Path(inner) => {
                    parts.extend(inner);
                    continue;
                }
                _ => PathPart::Unknown(text(arg, self.source).to_owned()),
            });
        }
        Some(Value::Path(parts))
    }

    /// The locals at `target` (a node inside `function`'s body) when `locals` are the bindings
    /// at the function's start; `None` when `target` is not reached with them.
    pub fn bindings_at(
        &self,
        function: Node<'_>,
        target: Node<'_>,
        locals: Bindings,
    ) -> Option<Bindings> {
        let body = function.child_by_field_name("body")?;
        match self.walk(body, target, locals) {
            Walk::Reached(b, _) => Some(b),
            Walk::Ended | Walk::Passed(_) => None,
        }
    }

    fn walk(&self, block: Node<'_>, target: Node<'_>, mut locals: Bindings) -> Walk {
        let holds = |n: Node<'_>| {
            n.start_byte() <= target.start_byte() && target.end_byte() <= n.end_byte()
        };
        for statement in named_children(block) {
            if holds(statement) {
                return match statement.kind() {
                    "if_statement" => self.walk_if(statement, target, locals),
                    "with_statement" | "try_statement" => statement
                        .child_by_field_name("body")
                        .map_or(Walk::Reached(locals.clone(), false), |b| {
                            self.walk(b, target, locals)
                        }),
                    "expression_statement" | "return_statement" => Walk::Reached(locals, true),
                    _ => {
                        forget_assigned(statement, self.source, &mut locals);
                        Walk::Reached(locals, false)
                    }
                };
            }
            match statement.kind() {
                "expression_statement" => self.assign(statement, &mut locals),
                "return_statement" | "raise_statement" => return Walk::Ended,
                "if_statement" => match self.walk_if(statement, target, locals.clone()) {
                    Walk::Passed(b) => locals = b,
                    Walk::Ended => return Walk::Ended,
                    Walk::Reached(b, certain) => return Walk::Reached(b, certain),
                },
                "comment" | "pass_statement" => {}
                "with_statement" => {
                    let Some(body) = statement.child_by_field_name("body") else {
                        continue;
                    };
                    forget_assigned(statement, self.source, &mut locals);
                    match self.walk(body, target, locals.clone()) {
                        Walk::Passed(b) => locals = b,
                        other => return other,
                    }
                }
                _ => forget_assigned(statement, self.source, &mut locals),
            }
        }
        Walk::Passed(locals)
    }

    /// An `if` (with its `elif`s and `else`): the branch taken when the condition is known,
    /// else every branch that does not end, merged.
    fn walk_if(&self, statement: Node<'_>, target: Node<'_>, locals: Bindings) -> Walk {
        let mut branches: Vec<(Option<Node<'_>>, Node<'_>)> = Vec::new();
        if let (Some(c), Some(b)) = (
            statement.child_by_field_name("condition"),
            statement.child_by_field_name("consequence"),
        ) {
            branches.push((Some(c), b));
        }
        let mut has_else = false;
        for alt in named_children(statement) {
            match alt.kind() {
                "elif_clause" => {
                    if let (Some(c), Some(b)) = (
                        alt.child_by_field_name("condition"),
                        alt.child_by_field_name("consequence"),
                    ) {
                        branches.push((Some(c), b));
                    }
                }
                "else_clause" => {
                    if let Some(b) = alt.child_by_field_name("body") {
                        branches.push((None, b));
                        has_else = true;
                    }
                }
                _ => {}
            }
        }
        let holds = |n: Node<'_>| {
            n.start_byte() <= target.start_byte() && target.end_byte() <= n.end_byte()
        };
        let mut outcomes: Vec<Bindings> = Vec::new();
        let mut decided = false;
        for (condition, body) in branches {
            let verdict = condition.map(|c| match self.eval(c, &locals).truthy() {
                Some(b) => Value::Bool(b),
                None => Value::Unknown(text(c, self.source).to_owned()),
            });
            match verdict {
                Some(Value::Bool(false)) => {
                    if holds(body) {
                        return Walk::Ended;
                    }
                    continue;
                }
                Some(Value::Bool(true)) | None => {
                    decided = true;
                    if holds(body) {
                        return self.walk(body, target, locals);
                    }
                    if let Walk::Passed(b) = self.walk(body, target, locals.clone()) {
                        outcomes.push(b);
                    }
                    break;
                }
                Some(_) => {
                    if holds(body) {
                        return match self.walk(body, target, locals) {
                            Walk::Reached(b, _) => Walk::Reached(b, false),
                            other => other,
                        };
                    }
                    if let Walk::Passed(b) = self.walk(body, target, locals.clone()) {
                        outcomes.push(b);
                    }
                }
            }
        }
        if !decided && !has_else {
            outcomes.push(locals);
        }
        if outcomes.is_empty() {
            return Walk::Ended;
        }
        Walk::Passed(merge(outcomes))
    }

    fn assign(&self, statement: Node<'_>, locals: &mut Bindings) {
        if let Some((name, value)) = simple_assignment(statement, self.source) {
            let v = self.eval(value, locals);
            locals.push((name, v));
        } else {
            forget_assigned(statement, self.source, locals);
        }
    }
}

/// The outcome of walking a block toward a target node.
enum Walk {
    /// The target is reached with these locals (certainly, or only if an unknown condition
    /// on the way holds).
    Reached(Bindings, bool),
    /// The block ends without reaching it, falling through with these locals.
    Passed(Bindings),
    /// The block returns or raises before it.
    Ended,
}

/// Bindings that hold on every path: a name keeps its value only when every path agrees.
fn merge(outcomes: Vec<Bindings>) -> Bindings {
    let mut names: Vec<String> = Vec::new();
    for b in &outcomes {
        for (n, _) in b {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let last = |b: &Bindings, n: &str| b.iter().rev().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    names
        .into_iter()
        .map(|n| {
            let first = last(&outcomes[0], &n);
            let agreed = first.filter(|f| {
                outcomes
                    .iter()
                    .all(|b| last(b, &n).is_some_and(|v| v.identical(f)))
            });
            let value = agreed.unwrap_or_else(|| {
                Value::Unknown(format!(
                    "`{n}` differs between the branches that reach here"
                ))
            });
            (n, value)
        })
        .collect()
}

/// Every name a statement assigns (loops, `with ... as`, augmented assignments) becomes unknown.
fn forget_assigned(statement: Node<'_>, source: &str, locals: &mut Bindings) {
    let mut stack = vec![statement];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "assignment" | "augmented_assignment" | "for_statement" | "as_pattern_target" => {
                if let Some(left) = n.child_by_field_name("left").or(Some(n)) {
                    let name = text(left, source);
                    if left.kind() == "identifier" {
                        locals.push((
                            name.to_owned(),
                            Value::Unknown(format!(
                                "`{name}` is assigned in a way npuprof does not follow (a loop, `with`, `+=`)"
                            )),
                        ));
                    }
                }
            }
            "function_definition" | "class_definition" | "lambda" => continue,
            _ => {}
        }
        stack.extend(named_children(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = r#"import os
from enum import Enum

BASE = "prof"


class Stage(Enum):
    ENCODE = "mm_encode"
    FIRST = "prefill"
    NEXT = "decode"


def choose(stage: Stage, root):
    if not stage_ok(stage):
        return
    extra = {}
    if stage in (Stage.ENCODE, Stage.FIRST):
        extra = {"active": 1, "repeat": 1}
    elif stage == Stage.NEXT:
        extra = {"active": 5}
    target = os.path.join(root, BASE, stage.value)
    make(target, **extra)
"#;

    fn at(stage: &str) -> (Value, Value) {
        let tree = crate::parse(SOURCE).unwrap();
        let root = tree.root_node();
        let module = Module::read(root, SOURCE);
        let ev = Evaluator::new(&module, SOURCE);
        let function = named_children(root)
            .into_iter()
            .find(|n| n.kind() == "function_definition")
            .unwrap();
        let call = crate::descendants_in_scope(function.child_by_field_name("body").unwrap())
            .into_iter()
            .find(|n| n.kind() == "call" && callee(*n, SOURCE).as_deref() == Some("make"))
            .unwrap();
        let member = Value::Member {
            class: "Stage".into(),
            name: stage.into(),
            value: module
                .enum_class("Stage")
                .unwrap()
                .members
                .iter()
                .find(|m| m.0 == stage)
                .map(|m| m.1.clone()),
        };
        let locals = ev
            .bindings_at(function, call, vec![("stage".into(), member)])
            .unwrap();
        let get = |n: &str| locals.iter().rev().find(|(k, _)| k == n).unwrap().1.clone();
        (get("target"), get("extra"))
    }

    #[test]
    fn enum_values_paths_and_branch_dicts_are_evaluated_per_member() {
        let (path, extra) = at("ENCODE");
        assert_eq!(path.path_parts(), vec!["prof", "mm_encode"]);
        let Value::Dict(entries) = extra else {
            panic!("{extra:?}")
        };
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["active", "repeat"]);
        let (path, extra) = at("NEXT");
        assert_eq!(path.path_parts(), vec!["prof", "decode"]);
        assert!(
            matches!(&extra, Value::Dict(e) if e.len() == 1 && matches!(e[0].1, Value::Int { value: 5, .. }))
        );
    }

    #[test]
    fn a_branch_on_the_loaded_run_config_is_decided_by_its_values() {
        let source = "def main():\n    with open(p) as stream:\n        settings = yaml.safe_load(stream)\n    if settings.get(\"data\", {}).get(\"kind\", \"text\") != \"media\":\n        if settings.get(\"extra\"):\n            raise ValueError()\n        shared()\n        return 0\n    own()\n";
        let tree = crate::parse(source).unwrap();
        let module = Module::read(tree.root_node(), source);
        let loaders = ["yaml.safe_load".to_owned()];
        let function = named_children(tree.root_node())[0];
        let call = |name: &str| {
            crate::descendants_in_scope(function.child_by_field_name("body").unwrap())
                .into_iter()
                .find(|n| n.kind() == "call" && callee(*n, source).as_deref() == Some(name))
                .unwrap()
        };
        let config = |kind: &str| {
            Value::Dict(vec![(
                "data".into(),
                Value::Dict(vec![("kind".into(), Value::Str(kind.into()))]),
            )])
        };
        for (kind, shared, own) in [
            ("text", Some(true), Some(false)),
            ("media", Some(false), Some(true)),
        ] {
            let run_config = config(kind);
            let ev = Evaluator {
                run_config: Some(&run_config),
                loaders: &loaders,
                ..Evaluator::new(&module, source)
            };
            assert_eq!(
                ev.reaches(function, call("shared"), Vec::new()),
                shared,
                "{kind}"
            );
            assert_eq!(ev.reaches(function, call("own"), Vec::new()), own, "{kind}");
        }
        // Without the run config the branch is not known.
        let ev = Evaluator::new(&module, source);
        assert_eq!(ev.reaches(function, call("shared"), Vec::new()), None);
    }

    #[test]
    fn an_unknown_condition_merges_its_branches() {
        let source = "def f(x):\n    a = 1\n    if x:\n        a = 2\n    g(a)\n";
        let tree = crate::parse(source).unwrap();
        let module = Module::read(tree.root_node(), source);
        let ev = Evaluator::new(&module, source);
        let function = named_children(tree.root_node())[0];
        let call = crate::descendants_in_scope(function.child_by_field_name("body").unwrap())
            .into_iter()
            .find(|n| n.kind() == "call")
            .unwrap();
        let locals = ev.bindings_at(function, call, Vec::new()).unwrap();
        assert_eq!(
            locals.last().unwrap().1,
            Value::Unknown("`a` differs between the branches that reach here".into())
        );
    }
}
