//! Facts read from one Python file with tree-sitter: definitions, calls, assignments of call
//! results, string keys (`.get("x")`, `x["y"]`, `add_argument("--x")`), imports and the names
//! referenced. Comments and ordinary strings are never looked at, so a word in a comment or a
//! message does not count as evidence.

use std::collections::HashSet;
use std::ops::Range;

use npuprof_syntax::semantic::imports::{Imports, import_bindings};
use npuprof_syntax::semantic::literal::string_literal;
use tree_sitter::{Node, Parser};

/// A function or class definition.
#[derive(Debug, Clone)]
pub(crate) struct Def {
    /// `Class.method`, `function`, `outer.inner`.
    pub qualname: String,
    /// The bare name.
    pub name: String,
    /// A class (else a function or method).
    pub is_class: bool,
    /// Index of the enclosing definition in [`PyFacts::defs`].
    pub parent: Option<usize>,
    /// 1-based line of the `def`/`class` keyword.
    pub line: usize,
}

/// A call expression.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    /// The callee as written, whitespace removed (e.g. `self.profiler.set_status`).
    pub callee: String,
    /// The callee with the first segment resolved through the file's imports
    /// (e.g. `profile` imported from `torch_npu.profiler` → `torch_npu.profiler.profile`),
    /// when that differs from `callee`; see [`Call::canonical`].
    pub resolved: Option<String>,
    /// Last segment of the callee (`set_status`).
    pub name: String,
    /// The object the method is called on, as written (`self.profiler`), if any.
    pub receiver: Option<String>,
    /// The innermost enclosing definition, index in [`PyFacts::defs`].
    pub func: Option<usize>,
    /// Inside a `for`/`while` loop of the same function.
    pub in_loop: bool,
    /// 1-based line.
    pub line: usize,
}

impl Call {
    /// The callee with imports resolved.
    pub fn canonical(&self) -> &str {
        self.resolved.as_deref().unwrap_or(&self.callee)
    }
}

/// `target = call(...)` or `with call(...) as target`.
#[derive(Debug, Clone)]
pub(crate) struct Assign {
    /// The target as written (`self.profiler`, `prof`).
    pub target: String,
    /// Index of the call in [`PyFacts::calls`].
    pub call: usize,
}

/// What a `return` statement returns, when it is a call or a name.
#[derive(Debug, Clone)]
pub(crate) enum Returned {
    /// `return f(...)`: index in [`PyFacts::calls`].
    Call(usize),
    /// `return name`.
    Name(String),
}

/// A `return` of a call or a name.
#[derive(Debug, Clone)]
pub(crate) struct Return {
    /// The function returning.
    pub func: Option<usize>,
    /// What it returns.
    pub value: Returned,
}

/// Where a string key was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyUse {
    /// First argument of `.get`, `getenv`, `.setdefault`, `.pop`, or a subscript index.
    Lookup,
    /// First argument of `add_argument` (argparse).
    Flag,
}

/// A string literal used as a key (config key, environment variable, CLI flag).
#[derive(Debug, Clone)]
pub(crate) struct KeyString {
    /// The string's value.
    pub value: String,
    /// How it is used.
    pub usage: KeyUse,
    /// 1-based line.
    pub line: usize,
    /// Trimmed text of the line.
    pub text: String,
}

/// An import of something under `torch_npu.profiler`.
#[derive(Debug, Clone)]
pub(crate) struct ProfilerImport {
    /// 1-based line.
    pub line: usize,
    /// Trimmed text of the line.
    pub text: String,
}

/// Everything read from one Python file.
#[derive(Debug, Clone, Default)]
pub(crate) struct PyFacts {
    /// Definitions, in source order.
    pub defs: Vec<Def>,
    /// Calls, in source order.
    pub calls: Vec<Call>,
    /// Assignments of call results.
    pub assigns: Vec<Assign>,
    /// Returns of calls and names.
    pub returns: Vec<Return>,
    /// String keys.
    pub keys: Vec<KeyString>,
    /// Imports from `torch_npu.profiler`.
    pub profiler_imports: Vec<ProfilerImport>,
    /// Imports of serving frameworks with a built-in profiler (`vllm`, `sglang`): the
    /// framework's name and the import line.
    pub framework_imports: Vec<(&'static str, ProfilerImport)>,
    /// Identifiers referenced outside definitions' names and import statements.
    pub referenced: HashSet<String>,
    /// The file has syntax errors (facts are still read from the parts that parse).
    pub has_errors: bool,
    /// Byte ranges of top-level definitions left out of the parse (no relevant word).
    pub skipped: Vec<Range<usize>>,
    /// The source, for the text of evidence lines.
    pub src: String,
    /// Byte offset of each line start.
    line_starts: Vec<usize>,
}

impl PyFacts {
    /// The trimmed text of 1-based `line`.
    pub fn line_text(&self, line: usize) -> String {
        row_text(&self.src, &self.line_starts, line.saturating_sub(1))
    }
}

/// A tree-sitter parser set up for Python.
pub(crate) fn new_parser() -> Parser {
    let mut parser = Parser::new();
    // The grammar is compiled in; a version mismatch would be a build defect caught by every test.
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("tree-sitter-python is compatible with the tree-sitter runtime");
    parser
}

/// Line starts of a text, to turn byte offsets into trimmed line texts.
struct Lines<'a> {
    src: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(src: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', src.as_bytes()).map(|i| i + 1));
        Lines { src, starts }
    }

    /// The trimmed text of 0-based row `row`.
    fn text(&self, row: usize) -> String {
        row_text(self.src, &self.starts, row)
    }
}

/// A tree-sitter range for a byte range of the text.
fn ts_range(lines: &Lines, bytes: Range<usize>) -> tree_sitter::Range {
    let point = |offset: usize| {
        let row = lines
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        tree_sitter::Point {
            row,
            column: offset - lines.starts[row],
        }
    };
    tree_sitter::Range {
        start_byte: bytes.start,
        end_byte: bytes.end,
        start_point: point(bytes.start),
        end_point: point(bytes.end),
    }
}

/// The trimmed text of 0-based `row`, given the line starts.
fn row_text(src: &str, starts: &[usize], row: usize) -> String {
    let start = starts.get(row).copied().unwrap_or(src.len());
    let end = starts.get(row + 1).copied().unwrap_or(src.len());
    src[start..end].trim().to_owned()
}

#[derive(Clone, Copy)]
struct Ctx {
    func: Option<usize>,
    in_loop: bool,
    in_import: bool,
}

/// Reads the facts of one Python source text, parsing only `ranges` when given (see
/// [`crate::blocks`]); falls back to the whole text when the partial parse has errors.
pub(crate) fn extract(parser: &mut Parser, src: &str, ranges: Option<&[Range<usize>]>) -> PyFacts {
    let lines = Lines::new(src);
    let mut skipped = Vec::new();
    let mut tree = None;
    if let Some(ranges) = ranges {
        let included: Vec<tree_sitter::Range> =
            ranges.iter().map(|r| ts_range(&lines, r.clone())).collect();
        if parser.set_included_ranges(&included).is_ok() {
            tree = parser
                .parse(src, None)
                .filter(|t| !t.root_node().has_error());
            // Back to whole documents for the next parse.
            let _ = parser.set_included_ranges(&[]);
        }
        if tree.is_some() {
            let mut at = 0;
            for r in ranges {
                if r.start > at {
                    skipped.push(at..r.start);
                }
                at = r.end;
            }
            if at < src.len() {
                skipped.push(at..src.len());
            }
        }
    }
    let mut facts = PyFacts {
        skipped,
        ..PyFacts::default()
    };
    let Some(tree) = tree.or_else(|| parser.parse(src, None)) else {
        facts.has_errors = true;
        return facts;
    };
    let root = tree.root_node();
    facts.has_errors = root.has_error();
    let bytes = src.as_bytes();
    let mut aliases = Imports::default();
    facts.src = src.to_owned();

    // Assignment targets and the start byte of the call assigned; calls are recorded when the
    // traversal reaches them, after their assignment, so the two are joined at the end.
    let mut pending: Vec<(String, usize)> = Vec::new();
    // Start byte → index of the outermost call starting there, in source order.
    let mut call_at: Vec<(usize, usize)> = Vec::new();
    let mut pending_returns: Vec<(Option<usize>, usize)> = Vec::new();
    // The name node of the definition just entered (not a reference).
    let mut def_name: Option<usize> = None;
    // One context per depth: the last one applies to the cursor's node.
    let top = Ctx {
        func: None,
        in_loop: false,
        in_import: false,
    };
    let mut ctxs = vec![top];
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        let ctx = ctxs.last().copied().unwrap_or(top);
        let mut child_ctx = ctx;
        match node.kind() {
            "function_definition" | "class_definition" => {
                let name_node = node.child_by_field_name("name");
                if let Some(name) = name_node.and_then(|n| text(n, bytes)) {
                    def_name = name_node.map(|n| n.id());
                    let qualname = match ctx.func {
                        Some(p) => format!("{}.{}", facts.defs[p].qualname, name),
                        None => name.to_owned(),
                    };
                    let row = node.start_position().row;
                    facts.defs.push(Def {
                        qualname,
                        name: name.to_owned(),
                        is_class: node.kind() == "class_definition",
                        parent: ctx.func,
                        line: row + 1,
                    });
                    child_ctx = Ctx {
                        func: Some(facts.defs.len() - 1),
                        in_loop: false,
                        ..ctx
                    };
                }
            }
            "for_statement" | "while_statement" => child_ctx.in_loop = true,
            "import_statement" | "import_from_statement" => {
                child_ctx.in_import = true;
                record_import(node, src, &lines, &mut aliases, &mut facts);
            }
            "call" => {
                // `a.b().c()`: the outer call starts where the inner one does; keep the outer.
                if call_at
                    .last()
                    .is_none_or(|&(start, _)| start != node.start_byte())
                {
                    call_at.push((node.start_byte(), facts.calls.len()));
                }
                record_call(node, ctx, src, &lines, &mut facts);
            }
            "subscript" => record_subscript_keys(node, src, &lines, &mut facts),
            "return_statement" => {
                if let Some(value) = node.named_child(0) {
                    match value.kind() {
                        "call" => pending_returns.push((ctx.func, value.start_byte())),
                        "identifier" => facts.returns.push(Return {
                            func: ctx.func,
                            value: Returned::Name(expr_text(value, bytes)),
                        }),
                        _ => {}
                    }
                }
            }
            "assignment" => record_assignment(node, bytes, &mut pending),
            "as_pattern" => record_with_target(node, bytes, &mut pending),
            "identifier" if !ctx.in_import && def_name != Some(node.id()) => {
                if let Some(name) = text(node, bytes)
                    && !facts.referenced.contains(name)
                {
                    facts.referenced.insert(name.to_owned());
                }
            }
            _ => {}
        }
        if cursor.goto_first_child() {
            ctxs.push(child_ctx);
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                facts
                    .returns
                    .extend(pending_returns.iter().filter_map(|&(func, start)| {
                        Some(Return {
                            func,
                            value: Returned::Call(call_starting_at(&call_at, start)?),
                        })
                    }));
                facts.line_starts = lines.starts;
                return finish(facts, pending, &call_at, &aliases);
            }
            ctxs.pop();
        }
    }
}

/// Joins assignments to their calls and resolves callees through the imports.
fn finish(
    mut facts: PyFacts,
    pending: Vec<(String, usize)>,
    call_at: &[(usize, usize)],
    aliases: &Imports,
) -> PyFacts {
    facts.assigns = pending
        .into_iter()
        .filter_map(|(target, start)| {
            Some(Assign {
                target,
                call: call_starting_at(call_at, start)?,
            })
        })
        .collect();
    if !aliases.is_empty() {
        for call in &mut facts.calls {
            let canonical = aliases.qualify(&call.callee);
            if canonical != call.callee {
                call.resolved = Some(canonical);
            }
        }
    }
    facts
}

/// The call starting at byte `start`, from the (sorted) start table.
fn call_starting_at(call_at: &[(usize, usize)], start: usize) -> Option<usize> {
    let i = call_at.binary_search_by_key(&start, |&(s, _)| s).ok()?;
    Some(call_at[i].1)
}

fn text<'a>(node: Node, bytes: &'a [u8]) -> Option<&'a str> {
    node.utf8_text(bytes).ok()
}

/// A dotted name (`a.b.c`) for identifier/attribute chains; any other expression's text with
/// whitespace removed.
fn expr_text(node: Node, bytes: &[u8]) -> String {
    text(node, bytes)
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

/// Binds local names to the dotted paths they stand for, for imports of `torch_npu`; records
/// the imports from `torch_npu.profiler`.
fn record_import(node: Node, src: &str, lines: &Lines, aliases: &mut Imports, facts: &mut PyFacts) {
    if node.kind() == "import_statement" {
        for binding in import_bindings(node, src) {
            record_framework_import(&binding.imported, node, lines, facts);
            if !is_torch_npu(&binding.imported) {
                continue;
            }
            record_profiler_import(&binding.imported, node, lines, facts);
            aliases.insert(binding.local, binding.path);
        }
        return;
    }
    let module = node
        .child_by_field_name("module_name")
        .map(|m| expr_text(m, src.as_bytes()))
        .unwrap_or_default();
    record_framework_import(&module, node, lines, facts);
    if is_torch_npu(&module) {
        for binding in import_bindings(node, src) {
            record_profiler_import(&binding.path, node, lines, facts);
            aliases.insert(binding.local, binding.path);
        }
    }
}

fn is_torch_npu(dotted: &str) -> bool {
    dotted == "torch_npu" || dotted.starts_with("torch_npu.")
}

/// Serving frameworks whose own profiler route reports when the repository imports them: the
/// modules the engine definitions name.
pub(crate) fn framework_modules() -> impl Iterator<Item = &'static str> {
    npuprof_repository::engine::EngineDefinition::all()
        .iter()
        .flat_map(|d| d.detect.import_modules.iter().map(String::as_str))
}

fn record_framework_import(module: &str, node: Node, lines: &Lines, facts: &mut PyFacts) {
    let root = module.split('.').next().unwrap_or_default();
    if let Some(framework) = framework_modules().find(|f| *f == root) {
        let row = node.start_position().row;
        let import = ProfilerImport {
            line: row + 1,
            text: lines.text(row),
        };
        facts.framework_imports.push((framework, import));
    }
}

fn record_profiler_import(full: &str, node: Node, lines: &Lines, facts: &mut PyFacts) {
    if full == "torch_npu.profiler" || full.starts_with("torch_npu.profiler.") {
        let row = node.start_position().row;
        facts.profiler_imports.push(ProfilerImport {
            line: row + 1,
            text: lines.text(row),
        });
    }
}

fn record_call(node: Node, ctx: Ctx, src: &str, lines: &Lines, facts: &mut PyFacts) {
    let bytes = src.as_bytes();
    let Some(function) = node.child_by_field_name("function") else {
        return;
    };
    let callee = expr_text(function, bytes);
    let (name, receiver) = if function.kind() == "attribute" {
        let name = function
            .child_by_field_name("attribute")
            .map(|n| expr_text(n, bytes))
            .unwrap_or_default();
        let receiver = function
            .child_by_field_name("object")
            .map(|n| expr_text(n, bytes));
        (name, receiver)
    } else {
        (callee.clone(), None)
    };
    // A string first argument of `.get`/`getenv`/`.setdefault`/`.pop` or `add_argument` is a key.
    let usage = match name.as_str() {
        "get" | "getenv" | "setdefault" | "pop" => Some(KeyUse::Lookup),
        "add_argument" => Some(KeyUse::Flag),
        _ => None,
    };
    if let Some(usage) = usage
        && let Some(first) = node
            .child_by_field_name("arguments")
            .and_then(|a| a.named_child(0))
        && first.kind() == "string"
    {
        record_key(first, usage, src, lines, facts);
    }
    let row = node.start_position().row;
    facts.calls.push(Call {
        callee,
        resolved: None,
        name,
        receiver,
        func: ctx.func,
        in_loop: ctx.in_loop,
        line: row + 1,
    });
}

/// String indexes of a subscript (`os.environ["X"]`, `cfg["enable_profiler"]`) are keys.
fn record_subscript_keys(node: Node, src: &str, lines: &Lines, facts: &mut PyFacts) {
    let mut cursor = node.walk();
    for index in node.children_by_field_name("subscript", &mut cursor) {
        if index.kind() == "string" {
            record_key(index, KeyUse::Lookup, src, lines, facts);
        }
    }
}

fn record_assignment(node: Node, bytes: &[u8], pending: &mut Vec<(String, usize)>) {
    if let (Some(left), Some(right)) = (
        node.child_by_field_name("left"),
        node.child_by_field_name("right"),
    ) && right.kind() == "call"
    {
        pending.push((expr_text(left, bytes), right.start_byte()));
    }
}

fn record_with_target(node: Node, bytes: &[u8], pending: &mut Vec<(String, usize)>) {
    if let (Some(value), Some(alias)) = (node.named_child(0), node.child_by_field_name("alias"))
        && value.kind() == "call"
    {
        pending.push((expr_text(alias, bytes), value.start_byte()));
    }
}

fn record_key(node: Node, usage: KeyUse, src: &str, lines: &Lines, facts: &mut PyFacts) {
    let Some(value) = string_literal(node, src) else {
        return;
    };
    let row = node.start_position().row;
    facts.keys.push(KeyString {
        value,
        usage,
        line: row + 1,
        text: lines.text(row),
    });
}
