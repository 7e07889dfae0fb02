//! What runs before a profiled window (NPL021): the calls before it in its function, and
//! before each place the function is entered from — its callers in the file and the calls
//! through dicts, lists or tuples of functions (`MODES[mode](model, x)`) — followed up to the
//! module (`for run in (f, g): run(model, x)` too). A call counts as a warm-up when it runs the measured call itself, has `warm` in
//! its name, or runs a model on the same objects (a model call, or a local function whose body
//! runs one, passed the measured call's model or inputs).
//!
//! The file is indexed once (the first warm-up key of each scope, the dispatch tables), so a
//! window costs a few lookups per caller, however long the file.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;

use npuprof_syntax::semantic::params::function_name;
use npuprof_syntax::semantic::table_names;
use npuprof_syntax::{callee, descendants_in_scope, dotted, line, named_children, text};
use tree_sitter::Node;

use crate::profile::FileContext;
use crate::python::last_segment;

/// How many callers up lint follows before it stops (and says nothing).
const MAX_CALLERS_UP: usize = 6;

/// What is known about the warm-up before a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Warmup {
    /// A warm-up runs before the window on every path lint found.
    Warmed,
    /// No warm-up runs on this path: the scopes passed on the way, innermost first.
    Cold(Vec<String>),
    /// Some path cannot be followed (a function not called in the file, too deep).
    Unknown,
}

/// The file's warm-up index, built on first use.
#[derive(Default)]
pub(crate) struct Warmups<'t> {
    index: OnceCell<Index<'t>>,
    /// Answers already found: (scope id, byte, keys) → verdict (callers shared by many
    /// windows are followed once).
    answers: RefCell<HashMap<Question, Warmup>>,
}

/// A warm-up question: is there a warm-up with one of these keys in this scope (by id)
/// before this byte?
type Question = (usize, usize, Vec<String>);

struct Index<'t> {
    /// (scope id, key) → the end of the first call with that key in that scope.
    first: HashMap<(usize, String), usize>,
    /// A function's name → the calls through a table that holds it (`T[k](...)`, or
    /// `run(...)` in `for run in T:` / `for run in (f, g):`).
    dispatch: HashMap<String, Vec<Node<'t>>>,
}

/// Whether a callee looks like a model forward (`model(...)`, `self.model(...)`,
/// `model.generate(...)`, `run_decode_step(...)`).
pub(crate) fn is_model_call(callee: &str) -> bool {
    let segments: Vec<String> = callee.split('.').map(str::to_lowercase).collect();
    if segments
        .iter()
        .any(|s| s.contains("tokenizer") || s.contains("processor"))
    {
        return false;
    }
    let last = segments.last().map(String::as_str).unwrap_or("");
    if last.contains("model") {
        const CONSTRUCTORS: [&str; 9] = [
            "build", "load", "create", "make", "get", "init", "set", "save", "to",
        ];
        return !CONSTRUCTORS.iter().any(|p| last.starts_with(p));
    }
    const FORWARDS: [&str; 6] = [
        "forward",
        "generate",
        "prefill",
        "decode",
        "infer",
        "inference",
    ];
    FORWARDS.iter().any(|f| {
        last == *f
            || last.starts_with(&format!("{f}_"))
            || last.ends_with(&format!("_{f}"))
            || last.contains(&format!("_{f}_"))
    })
}

/// The keys a warm-up before `call` may match: the same callee, a `warm` name, a model call
/// of the same name, or a model run on the same objects.
pub(crate) fn wanted_keys(call: Node<'_>, source: &str) -> Vec<String> {
    let Some(name) = callee(call, source) else {
        return Vec::new();
    };
    let mut keys = vec![
        format!("call:{name}"),
        "warm".to_owned(),
        format!("last:{}", last_segment(&name)),
    ];
    keys.extend(
        objects(call, &name, source)
            .into_iter()
            .map(|o| format!("obj:{o}")),
    );
    keys
}

/// The objects a model call runs on: the model itself when the callee names it
/// (`model`, `self.model`, `engine` of `engine.generate`), else the call's plain arguments.
fn objects(call: Node<'_>, name: &str, source: &str) -> Vec<String> {
    if last_segment(name).to_lowercase().contains("model") {
        return vec![name.to_owned()];
    }
    if let Some((object, _)) = name.rsplit_once('.') {
        return vec![object.to_owned()];
    }
    call.child_by_field_name("arguments")
        .map(named_children)
        .unwrap_or_default()
        .into_iter()
        .map(|a| match a.kind() {
            "keyword_argument" => a.child_by_field_name("value").unwrap_or(a),
            _ => a,
        })
        .filter(|a| matches!(a.kind(), "identifier" | "attribute"))
        .filter_map(|a| dotted(a, source))
        .collect()
}

/// The warm-up questions of one window, asked of the file's index.
pub(crate) struct Before<'a, 't, 's> {
    ctx: &'a FileContext<'t, 's>,
}

impl<'t> Warmups<'t> {
    fn index(&self, ctx: &FileContext<'t, '_>) -> &Index<'t> {
        self.index.get_or_init(|| build(ctx))
    }
}

fn build<'t>(ctx: &FileContext<'t, '_>) -> Index<'t> {
    let source = ctx.source;
    let resolver = &ctx.semantic;
    let mut first: HashMap<(usize, String), usize> = HashMap::new();
    let mut tables: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut subscripted: Vec<(Node<'t>, &str)> = Vec::new();
    let mut runs_model: HashMap<usize, bool> = HashMap::new();
    // `for run in (f, g): run(...)`: the loop variable, the functions, the loop.
    let mut loops: Vec<(&str, Vec<&str>, Node<'t>)> = Vec::new();
    let mut plain_calls: HashMap<&str, Vec<Node<'t>>> = HashMap::new();
    let mut stack = vec![resolver.root()];
    while let Some(node) = stack.pop() {
        stack.extend(named_children(node));
        match node.kind() {
            "assignment" => {
                let (Some(left), Some(right)) = (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                ) else {
                    continue;
                };
                if left.kind() == "identifier"
                    && matches!(right.kind(), "dictionary" | "list" | "tuple")
                {
                    tables
                        .entry(text(left, source))
                        .or_default()
                        .extend(table_names(right, source));
                }
            }
            "for_statement" => {
                if let (Some(left), Some(right)) = (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                ) && left.kind() == "identifier"
                {
                    let functions = match right.kind() {
                        "list" | "tuple" => table_names(right, source),
                        "identifier" => vec![text(right, source)],
                        _ => Vec::new(),
                    };
                    loops.push((text(left, source), functions, node));
                }
            }
            "call" => {
                let Some(function) = node.child_by_field_name("function") else {
                    continue;
                };
                if function.kind() == "identifier" {
                    plain_calls
                        .entry(text(function, source))
                        .or_default()
                        .push(node);
                }
                if function.kind() == "subscript"
                    && let Some(table) = function.child_by_field_name("value")
                    && table.kind() == "identifier"
                {
                    subscripted.push((node, text(table, source)));
                }
                let Some(name) = callee(node, source) else {
                    continue;
                };
                let mut keys = Vec::new();
                if last_segment(&name).to_lowercase().contains("warm") {
                    keys.push("warm".to_owned());
                }
                let model = is_model_call(&name)
                    || resolver.local_function(node).is_some_and(|def| {
                        *runs_model
                            .entry(def.id())
                            .or_insert_with(|| body_runs_model(def, source))
                    });
                if model {
                    keys.push(format!("call:{name}"));
                    keys.push(format!("last:{}", last_segment(&name)));
                    keys.extend(
                        objects(node, &name, source)
                            .into_iter()
                            .map(|o| format!("obj:{o}")),
                    );
                }
                let scope = resolver.scope_of(node).id();
                for key in keys {
                    let end = first.entry((scope, key)).or_insert(usize::MAX);
                    *end = (*end).min(node.end_byte());
                }
            }
            _ => {}
        }
    }
    let mut dispatch: HashMap<String, Vec<Node<'t>>> = HashMap::new();
    for (call, table) in subscripted {
        for function in tables.get(table).into_iter().flatten() {
            dispatch
                .entry((*function).to_owned())
                .or_default()
                .push(call);
        }
    }
    for (variable, functions, each) in loops {
        // A loop over a table by name runs the table's functions.
        let functions: Vec<&str> = functions
            .iter()
            .flat_map(|f| match tables.get(f) {
                Some(listed) => listed.clone(),
                None => vec![*f],
            })
            .collect();
        let calls = plain_calls
            .get(variable)
            .into_iter()
            .flatten()
            .filter(|c| each.start_byte() <= c.start_byte() && c.end_byte() <= each.end_byte());
        for call in calls {
            for function in &functions {
                dispatch
                    .entry((*function).to_owned())
                    .or_default()
                    .push(*call);
            }
        }
    }
    Index { first, dispatch }
}

impl<'a, 't, 's> Before<'a, 't, 's> {
    /// The questions about the file `ctx`.
    pub(crate) fn new(ctx: &'a FileContext<'t, 's>) -> Self {
        Self { ctx }
    }

    fn index(&self) -> &'a Index<'t> {
        self.ctx.warmups.index(self.ctx)
    }

    /// Whether a call with one of `keys` ends in `scope` before byte `before`.
    fn warmed_in(&self, scope: Node<'t>, before: usize, keys: &[String]) -> bool {
        let first = &self.index().first;
        keys.iter().any(|k| {
            first
                .get(&(scope.id(), k.clone()))
                .is_some_and(|end| *end <= before)
        })
    }

    /// The warm-up before `anchor` (the start of a window) for a measured call with `keys`.
    pub(crate) fn before(&self, anchor: Node<'t>, keys: &[String]) -> Warmup {
        self.before_in(
            self.ctx.semantic.scope_of(anchor),
            anchor.start_byte(),
            keys,
            0,
        )
    }

    fn before_in(&self, scope: Node<'t>, at: usize, keys: &[String], depth: usize) -> Warmup {
        let question = (scope.id(), at, keys.to_vec());
        if let Some(answer) = self.ctx.warmups.answers.borrow().get(&question) {
            return answer.clone();
        }
        let answer = self.answer(scope, at, keys, depth);
        self.ctx
            .warmups
            .answers
            .borrow_mut()
            .insert(question, answer.clone());
        answer
    }

    fn answer(&self, scope: Node<'t>, at: usize, keys: &[String], depth: usize) -> Warmup {
        if self.warmed_in(scope, at, keys) {
            return Warmup::Warmed;
        }
        let here = match scope.kind() {
            "function_definition" => format!("`{}()`", function_name(scope, self.ctx.source)),
            _ => "the module".to_owned(),
        };
        if scope.kind() != "function_definition" {
            return Warmup::Cold(vec![here]);
        }
        if depth >= MAX_CALLERS_UP {
            return Warmup::Unknown;
        }
        let entries = self.entries(scope);
        if entries.is_empty() {
            return Warmup::Unknown;
        }
        let mut verdict = Warmup::Warmed;
        for entry in entries {
            let mapped = self.map_keys(scope, entry, keys);
            let caller = self.ctx.semantic.scope_of(entry);
            match self.before_in(caller, entry.start_byte(), &mapped, depth + 1) {
                Warmup::Warmed => {}
                Warmup::Cold(mut path) => {
                    path[0] = format!("{} before the call on line {}", path[0], line(entry));
                    path.insert(0, here);
                    return Warmup::Cold(path);
                }
                Warmup::Unknown => verdict = Warmup::Unknown,
            }
        }
        verdict
    }

    /// Where `def` is entered from in the file: its calls, and calls through a table of it.
    fn entries(&self, def: Node<'t>) -> Vec<Node<'t>> {
        let mut entries = self.ctx.semantic.call_sites(def);
        if !self.ctx.semantic.is_method(def) {
            let name = function_name(def, self.ctx.source);
            entries.extend(self.index().dispatch.get(name).into_iter().flatten());
        }
        entries
    }

    /// The keys as the caller sees them: objects that are parameters of `def` become the
    /// arguments `entry` passes (or are dropped when it passes none lint can name).
    fn map_keys(&self, def: Node<'t>, entry: Node<'t>, keys: &[String]) -> Vec<String> {
        keys.iter()
            .filter_map(|key| {
                let Some(object) = key.strip_prefix("obj:") else {
                    return Some(key.clone());
                };
                let root = object.split('.').next().unwrap_or(object);
                if !self.ctx.semantic.has_parameter(def, root) {
                    return Some(key.clone());
                }
                let argument = self.ctx.semantic.argument_of(def, root, entry)?;
                let passed = dotted(argument, self.ctx.source)?;
                Some(format!("obj:{passed}{}", &object[root.len()..]))
            })
            .collect()
    }
}

/// Whether a function's own body runs a model call.
fn body_runs_model(def: Node<'_>, source: &str) -> bool {
    def.child_by_field_name("body").is_some_and(|body| {
        descendants_in_scope(body)
            .into_iter()
            .filter(|n| n.kind() == "call")
            .filter_map(|n| callee(n, source))
            .any(|c| is_model_call(&c))
    })
}
