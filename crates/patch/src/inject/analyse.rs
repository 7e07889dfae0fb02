//! Reading an entry script: can it be imported, and where are its model construction, its
//! prefill call and its decode loop?

use std::collections::{BTreeMap, HashMap, HashSet};

use npuprof_syntax::semantic::bindings::Binding;
use npuprof_syntax::semantic::params::required_parameters;
use npuprof_syntax::{
    SemanticModel, arguments, callee, children, descendants_in_scope, first_error, line, parse,
    text,
};
use serde::Serialize;
use tree_sitter::Node;

use super::InjectError;
use crate::schedule::Phase;

/// What was recognised in the entry script. Every `Err` / `None` becomes a stub in the harness.
#[derive(Debug, Clone)]
pub struct EntryAnalysis {
    /// `Err(reason)` when importing the entry would run code (top-level statements).
    pub importable: Result<(), String>,
    /// The top-level function that constructs the model.
    pub build: Option<BuildFunction>,
    /// The prefill call, before the decode loop.
    pub prefill: Option<ForwardCall>,
    /// The decode call inside the loop.
    pub decode: Option<ForwardCall>,
    /// Why the decode call was not wired although a loop was found.
    pub decode_note: Option<String>,
    /// The prefill inputs: `Ok(expression)` rewritten for the harness, or `Err(what is missing)`.
    pub inputs: Option<Result<Inputs, String>>,
    /// Command-line defaults of the entry (`--prompt-len` → `prompt_len = 16`), for `ENTRY_ARGS`.
    pub entry_args: BTreeMap<String, String>,
}

/// A top-level model-construction function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuildFunction {
    /// Its name.
    pub name: String,
    /// Its 1-based line.
    pub line: usize,
    /// Parameters without defaults: the harness cannot call it alone when non-empty.
    pub required_params: Vec<String>,
}

/// How a forward is called in the entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Callee {
    /// `model.<name>(...)`.
    Method(String),
    /// `model(...)`.
    Direct,
    /// A top-level function of the entry, `<name>(model, ...)`.
    Function(String),
}

/// A recognised prefill or decode call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForwardCall {
    /// The call as written in the entry.
    pub source: String,
    /// Its 1-based line.
    pub line: usize,
    /// What is called.
    pub callee: Callee,
    /// Whether the model is passed as the first argument (function form).
    pub model_first: bool,
    /// The variable the result is assigned to.
    pub result: String,
}

/// The prefill inputs as an expression valid inside the harness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inputs {
    /// The name in the entry (`input_ids`); empty when the prefill call takes no input.
    pub name: String,
    /// The 1-based line of its definition.
    pub line: usize,
    /// The expression, with entry globals as `entry.X` and `args` as `ENTRY_ARGS`.
    pub expression: String,
}

const BUILTINS: [&str; 30] = [
    "range",
    "len",
    "list",
    "dict",
    "tuple",
    "int",
    "float",
    "str",
    "sum",
    "min",
    "max",
    "zip",
    "enumerate",
    "abs",
    "sorted",
    "reversed",
    "map",
    "filter",
    "any",
    "all",
    "round",
    "bool",
    "set",
    "iter",
    "next",
    "None",
    "True",
    "False",
    "isinstance",
    "bytes",
];

/// Reads an entry script.
pub fn analyse_entry(source: &str) -> Result<EntryAnalysis, InjectError> {
    let tree = parse(source).ok_or(InjectError::Unparseable)?;
    let root = tree.root_node();
    if root.has_error() {
        let bad = first_error(root).unwrap_or(root);
        return Err(InjectError::EntrySyntax {
            line: line(bad),
            column: bad.start_position().column + 1,
        });
    }
    let top = children(root);
    let mut analysis = EntryAnalysis {
        importable: Ok(()),
        build: None,
        prefill: None,
        decode: None,
        decode_note: None,
        inputs: None,
        entry_args: BTreeMap::new(),
    };
    let functions: HashMap<String, Node<'_>> = top
        .iter()
        .filter_map(|n| definition(*n))
        .filter(|n| n.kind() == "function_definition")
        .filter_map(|f| Some((text(f.child_by_field_name("name")?, source).to_owned(), f)))
        .collect();
    let semantic = SemanticModel::new(root, source);
    let globals: HashSet<String> = semantic
        .scope_bindings(root)
        .names()
        .iter()
        .map(|n| (*n).to_owned())
        .collect();
    let model_classes: HashSet<String> = top
        .iter()
        .filter_map(|n| definition(*n))
        .filter(|n| n.kind() == "class_definition")
        .filter_map(|c| {
            let name = text(c.child_by_field_name("name")?, source);
            let bases = c
                .child_by_field_name("superclasses")
                .map(|b| text(b, source))
                .unwrap_or("");
            (name.contains("Model") || bases.contains("Module")).then(|| name.to_owned())
        })
        .collect();
    let build = find_build(&top, source, &model_classes);
    analysis.build = build.clone();
    let mut constructors = model_classes.clone();
    constructors.extend(build.as_ref().map(|b| b.name.clone()));
    analysis.importable = importable(&top, source, &constructors);
    let Some(driver) = find_driver(&top, source, build.as_ref().map(|f| f.name.as_str())) else {
        return Ok(analysis);
    };
    let body = driver.child_by_field_name("body").unwrap_or(driver);
    let nodes = descendants_in_scope(body);
    let model_var = model_variable(
        &nodes,
        source,
        build.as_ref().map(|f| f.name.as_str()),
        &model_classes,
    );
    let Some(model_var) = model_var else {
        return Ok(analysis);
    };
    let loops: Vec<Node<'_>> = nodes
        .iter()
        .copied()
        .filter(|n| matches!(n.kind(), "for_statement" | "while_statement"))
        .collect();
    let driver = Driver {
        source,
        semantic: &semantic,
        def: driver,
        model_var: &model_var,
        functions: &functions,
        nodes: &nodes,
        loops: &loops,
    };
    let decode_loop = driver.find_decode(&mut analysis);
    driver.find_prefill(decode_loop, &globals, &mut analysis);
    Ok(analysis)
}

/// The function that drives the model, as the analysis reads it.
struct Driver<'d, 't, 's> {
    source: &'s str,
    /// The file's names.
    semantic: &'d SemanticModel<'t, 's>,
    /// The driver's definition.
    def: Node<'t>,
    /// The variable holding the model.
    model_var: &'d str,
    /// The module's functions by name.
    functions: &'d HashMap<String, Node<'t>>,
    /// The driver's nodes (not entering nested definitions).
    nodes: &'d [Node<'t>],
    /// Its `for` and `while` loops.
    loops: &'d [Node<'t>],
}

impl<'t> Driver<'_, 't, '_> {
    fn forward(&self, call: Node<'t>, phase: Phase) -> Option<(Callee, bool)> {
        forward_kind(call, self.source, self.model_var, self.functions, phase)
    }

    /// The first loop that calls a decode forward (returned), and that call when it threads its
    /// result (`state = f(model, state)`), else why not.
    fn find_decode(&self, analysis: &mut EntryAnalysis) -> Option<Node<'t>> {
        let source = self.source;
        for l in self.loops {
            let Some((_, result, call)) = descendants_in_scope(*l)
                .iter()
                .filter_map(|n| assigned_call(*n, source))
                .find(|(_, _, call)| self.forward(*call, Phase::Decode).is_some())
            else {
                continue;
            };
            let (callee, model_first) = self
                .forward(call, Phase::Decode)
                .unwrap_or((Callee::Direct, false));
            let extra = non_model_args(call, source, self.model_var);
            let threaded = extra.len() == 1
                && extra[0].kind() == "identifier"
                && text(extra[0], source) == result;
            let found = ForwardCall {
                source: text(call, source).to_owned(),
                line: line(call),
                callee,
                model_first,
                result: result.clone(),
            };
            if threaded {
                analysis.decode = Some(found);
            } else {
                analysis.decode_note = Some(format!(
                    "`{}` (line {}) does not have the form `{result} = f(model, {result})`",
                    found.source, found.line
                ));
            }
            return Some(*l);
        }
        None
    }

    /// The last prefill forward before the decode loop (outside every loop), with its input.
    fn find_prefill(
        &self,
        decode_loop: Option<Node<'t>>,
        globals: &HashSet<String>,
        analysis: &mut EntryAnalysis,
    ) {
        let source = self.source;
        let limit = decode_loop.map_or(usize::MAX, |l| l.start_byte());
        let inside_a_loop = |n: &Node<'_>| {
            self.loops
                .iter()
                .any(|l| l.start_byte() <= n.start_byte() && n.end_byte() <= l.end_byte())
        };
        let Some((_, result, call)) = self
            .nodes
            .iter()
            .rev()
            .filter(|n| n.end_byte() <= limit && !inside_a_loop(n))
            .filter_map(|n| assigned_call(*n, source))
            .find(|(_, _, call)| self.forward(*call, Phase::Prefill).is_some())
        else {
            return;
        };
        let (callee, model_first) = self
            .forward(call, Phase::Prefill)
            .unwrap_or((Callee::Direct, false));
        let extra = non_model_args(call, source, self.model_var);
        analysis.inputs = Some(match extra.as_slice() {
            [] => Ok(Inputs {
                name: String::new(),
                line: line(call),
                expression: "None".to_owned(),
            }),
            [input] => self.resolve_inputs(*input, globals, &mut analysis.entry_args),
            _ => Err(format!(
                "`{}` takes {} input argument(s); the harness passes one",
                text(call, source),
                extra.len()
            )),
        });
        analysis.prefill = Some(ForwardCall {
            source: text(call, source).to_owned(),
            line: line(call),
            callee,
            model_first,
            result: result.clone(),
        });
        if let Some(decode) = &analysis.decode
            && decode.result != result
        {
            analysis.decode_note = Some(format!(
                "the decode loop threads `{}` but the prefill result is `{result}`",
                decode.result
            ));
            analysis.decode = None;
        }
    }

    /// Follows the prefill input to an expression the harness can evaluate.
    fn resolve_inputs(
        &self,
        input: Node<'t>,
        globals: &HashSet<String>,
        entry_args: &mut BTreeMap<String, String>,
    ) -> Result<Inputs, String> {
        let source = self.source;
        let bindings = self.semantic.scope_bindings(self.def);
        if input.kind() == "keyword_argument" || input.kind().ends_with("splat") {
            return Err(format!(
                "the prefill input `{}` is not a plain argument",
                text(input, source)
            ));
        }
        let (name, expr, def_line) = if input.kind() == "identifier" {
            let name = text(input, source);
            match bindings.of(name) {
                [Binding::Value(value)] => (name.to_owned(), *value, line(*value)),
                _ => {
                    return Err(format!(
                        "`{name}` is not assigned exactly once in the driver function"
                    ));
                }
            }
        } else {
            (text(input, source).to_owned(), input, line(input))
        };
        let argparse = self.argparse_defaults();
        let args_var = bindings
            .names()
            .iter()
            .find_map(|var| match bindings.of(var) {
                [Binding::Value(value)]
                    if value.kind() == "call" && text(*value, source).contains("parse_args") =>
                {
                    Some((*var).to_owned())
                }
                _ => None,
            });
        let bound = comprehension_bound(expr, source);
        let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        for node in descendants_in_scope(expr)
            .into_iter()
            .filter(|n| n.kind() == "identifier")
        {
            let parent = node.parent();
            if parent.is_some_and(|p| {
                (p.kind() == "attribute" && p.child_by_field_name("attribute") == Some(node))
                    || (p.kind() == "keyword_argument"
                        && p.child_by_field_name("name") == Some(node))
            }) {
                continue;
            }
            let ident = text(node, source);
            if bound.contains(ident) || BUILTINS.contains(&ident) {
                continue;
            }
            if args_var.as_deref() == Some(ident) {
                let attribute = parent
                    .filter(|p| {
                        p.kind() == "attribute" && p.child_by_field_name("object") == Some(node)
                    })
                    .and_then(|p| p.child_by_field_name("attribute"))
                    .map(|a| text(a, source).to_owned())
                    .ok_or_else(|| format!("`{ident}` is used other than as `{ident}.<option>`"))?;
                if !argparse.contains_key(&attribute) {
                    return Err(format!(
                        "`{ident}.{attribute}` has no literal default in the driver's argument parser"
                    ));
                }
                edits.push((node.byte_range(), "ENTRY_ARGS".to_owned()));
                continue;
            }
            if globals.contains(ident) {
                edits.push((node.byte_range(), format!("entry.{ident}")));
                continue;
            }
            return Err(format!(
                "`{ident}` in `{name} = ...` is local to the entry's driver function"
            ));
        }
        if !edits.is_empty() && edits.iter().any(|(_, r)| r == "ENTRY_ARGS") {
            entry_args.extend(argparse);
        }
        let base = expr.start_byte();
        let mut expression = text(expr, source).to_owned();
        edits.sort_by_key(|(range, _)| std::cmp::Reverse(range.start));
        for (range, replacement) in edits {
            expression.replace_range(range.start - base..range.end - base, &replacement);
        }
        Ok(Inputs {
            name,
            line: def_line,
            expression,
        })
    }

    /// The options the driver declares with a literal default (`--prompt-len` with
    /// `default=16` → `prompt_len` → `16`).
    fn argparse_defaults(&self) -> BTreeMap<String, String> {
        let source = self.source;
        let (start, end) = (self.def.start_byte(), self.def.end_byte());
        self.semantic
            .cli_options()
            .iter()
            .filter(|o| start <= o.call.start_byte() && o.call.end_byte() <= end)
            .filter_map(|o| {
                let default = o.default.filter(|d| {
                    matches!(
                        d.kind(),
                        "integer" | "float" | "string" | "true" | "false" | "none"
                    )
                })?;
                Some((o.dest.clone(), text(default, source).to_owned()))
            })
            .collect()
    }
}

/// The definition inside a possibly decorated definition.
fn definition(node: Node<'_>) -> Option<Node<'_>> {
    match node.kind() {
        "function_definition" | "class_definition" => Some(node),
        "decorated_definition" => node.child_by_field_name("definition"),
        _ => None,
    }
}

/// Whether importing the module only defines things: no top-level calls or loops, and no
/// top-level assignment that constructs the model (`constructors`).
fn importable(
    top: &[Node<'_>],
    source: &str,
    constructors: &HashSet<String>,
) -> Result<(), String> {
    for node in top {
        let ok = match node.kind() {
            "import_statement"
            | "import_from_statement"
            | "future_import_statement"
            | "function_definition"
            | "class_definition"
            | "decorated_definition"
            | "try_statement"
            | "pass_statement" => true,
            "expression_statement" => node.named_child(0).is_some_and(|e| {
                matches!(e.kind(), "string" | "concatenated_string")
                    || (e.kind() == "assignment"
                        && !descendants_in_scope(e).into_iter().any(|n| {
                            n.kind() == "call"
                                && n.child_by_field_name("function")
                                    .is_some_and(|f| constructors.contains(text(f, source)))
                        }))
            }),
            "if_statement" => node.child_by_field_name("condition").is_some_and(|c| {
                text(c, source)
                    .replace('\'', "\"")
                    .contains("__name__ == \"__main__\"")
            }),
            _ => false,
        };
        if !ok {
            return Err(format!(
                "top-level code at line {} would run when the harness imports the entry",
                line(*node)
            ));
        }
    }
    Ok(())
}

/// A top-level function that constructs the model: by name (build/load/create/make/init/get +
/// model), else one that returns an instance of a model class.
fn find_build(
    top: &[Node<'_>],
    source: &str,
    model_classes: &HashSet<String>,
) -> Option<BuildFunction> {
    let functions: Vec<Node<'_>> = top
        .iter()
        .filter_map(|n| definition(*n))
        .filter(|n| n.kind() == "function_definition")
        .collect();
    let by_name = functions.iter().find(|f| {
        let name = f
            .child_by_field_name("name")
            .map(|n| text(n, source).to_lowercase())
            .unwrap_or_default();
        name.contains("model")
            && ["build", "load", "create", "make", "init", "get"]
                .iter()
                .any(|v| name.contains(v))
    });
    let by_return = || {
        functions.iter().find(|f| {
            descendants_in_scope(**f)
                .into_iter()
                .filter(|n| n.kind() == "return_statement")
                .any(|r| {
                    descendants_in_scope(r)
                        .into_iter()
                        .filter(|n| n.kind() == "call")
                        .any(|c| {
                            c.child_by_field_name("function")
                                .is_some_and(|callee| model_classes.contains(text(callee, source)))
                        })
                })
        })
    };
    let f = by_name.or_else(by_return)?;
    Some(BuildFunction {
        name: text(f.child_by_field_name("name")?, source).to_owned(),
        line: line(*f),
        required_params: required_parameters(*f, source),
    })
}

/// The function that drives inference: it calls the build function (or is `main`) and has a loop.
fn find_driver<'t>(top: &[Node<'t>], source: &str, build: Option<&str>) -> Option<Node<'t>> {
    let functions: Vec<Node<'t>> = top
        .iter()
        .filter_map(|n| definition(*n))
        .filter(|n| n.kind() == "function_definition")
        .collect();
    let has_loop = |f: &Node<'t>| {
        descendants_in_scope(*f)
            .iter()
            .any(|n| matches!(n.kind(), "for_statement" | "while_statement"))
    };
    let calls_build = |f: &Node<'t>| {
        build.is_some_and(|b| {
            descendants_in_scope(*f).iter().any(|n| {
                n.kind() == "call"
                    && n.child_by_field_name("function")
                        .is_some_and(|c| text(c, source) == b)
            })
        })
    };
    let name_is = |f: &Node<'t>, wanted: &str| {
        f.child_by_field_name("name")
            .is_some_and(|n| text(n, source) == wanted)
    };
    functions
        .iter()
        .find(|f| calls_build(f) && has_loop(f))
        .or_else(|| functions.iter().find(|f| name_is(f, "main")))
        .copied()
}

/// The variable holding the model in the driver.
fn model_variable(
    nodes: &[Node<'_>],
    source: &str,
    build: Option<&str>,
    classes: &HashSet<String>,
) -> Option<String> {
    let assigned: Vec<(String, Node<'_>)> = nodes
        .iter()
        .filter_map(|n| assigned_call(*n, source))
        .map(|(_, v, c)| (v, c))
        .collect();
    assigned
        .iter()
        .find(|(_, call)| {
            call.child_by_field_name("function")
                .map(|f| text(f, source))
                .is_some_and(|f| Some(f) == build || classes.contains(f))
        })
        .map(|(v, _)| v.clone())
        .or_else(|| {
            assigned
                .iter()
                .find(|(v, _)| v == "model")
                .map(|(v, _)| v.clone())
        })
}

/// `name = call(...)` → (statement, name, call).
fn assigned_call<'t>(node: Node<'t>, source: &str) -> Option<(Node<'t>, String, Node<'t>)> {
    if node.kind() != "assignment" {
        return None;
    }
    let left = node
        .child_by_field_name("left")
        .filter(|l| l.kind() == "identifier")?;
    let right = node
        .child_by_field_name("right")
        .filter(|r| r.kind() == "call")?;
    Some((node, text(left, source).to_owned(), right))
}

/// Whether `call` is a prefill/decode forward on `model_var`, and how it is called.
fn forward_kind(
    call: Node<'_>,
    source: &str,
    model_var: &str,
    functions: &HashMap<String, Node<'_>>,
    phase: Phase,
) -> Option<(Callee, bool)> {
    let name = callee(call, source)?;
    let words: &[&str] = match phase {
        Phase::Prefill => &["prefill", "forward", "generate"],
        Phase::Decode => &["decode", "forward", "step"],
        Phase::MmEncode => &["encode"],
    };
    if name == model_var {
        return Some((Callee::Direct, false));
    }
    if let Some(method) = name
        .strip_prefix(model_var)
        .and_then(|r| r.strip_prefix('.'))
    {
        let lower = method.to_lowercase();
        return (!method.contains('.') && words.iter().any(|w| lower.contains(w)))
            .then(|| (Callee::Method(method.to_owned()), false));
    }
    let lower = name.to_lowercase();
    let passes_model = arguments(call)
        .first()
        .is_some_and(|a| text(*a, source) == model_var);
    let word = if phase == Phase::Prefill {
        "prefill"
    } else {
        "decode"
    };
    (functions.contains_key(&name) && lower.contains(word) && passes_model)
        .then_some((Callee::Function(name), true))
}

/// The arguments of a forward call other than the model.
fn non_model_args<'t>(call: Node<'t>, source: &str, model_var: &str) -> Vec<Node<'t>> {
    arguments(call)
        .into_iter()
        .filter(|a| text(*a, source) != model_var)
        .collect()
}

/// Names bound by comprehension `for` clauses and lambdas inside `expr`.
fn comprehension_bound(expr: Node<'_>, source: &str) -> HashSet<String> {
    let mut stack = vec![expr];
    let mut out = HashSet::new();
    while let Some(node) = stack.pop() {
        let target = match node.kind() {
            "for_in_clause" => node.child_by_field_name("left"),
            "lambda" => node.child_by_field_name("parameters"),
            _ => None,
        };
        if let Some(t) = target {
            let mut inner = vec![t];
            while let Some(n) = inner.pop() {
                if n.kind() == "identifier" {
                    out.insert(text(n, source).to_owned());
                }
                inner.extend(children(n));
            }
        }
        stack.extend(children(node));
    }
    out
}
