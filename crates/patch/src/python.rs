//! The Python side of path A: set the profiling window in cann-recipes'
//! `executor/utils/profiler_context.py`, with tree-sitter-python and byte-range edits.
//!
//! Documented choices:
//! - The decode window is set where the decode call gets it: a keyword (or positional) argument at
//!   the decode `create_profiler(...)` call when it passes one, otherwise `create_profiler`'s
//!   default value (the stock decode call passes neither, so the default is edited).
//! - The prefill call must pass `active=1, repeat=1, skip_first=0` explicitly (missing ones are
//!   added, wrong ones corrected): the prefill window must not inherit the decode defaults.
//! - A phase is switched off by replacing that branch's `create_profiler(...)` call with
//!   `FakeContextManager()`; the status transitions stay intact. Since `set_status` calls
//!   `.start()` on the result, a no-op `start` (mirroring the class's existing `stop`/`step`) is
//!   added to `FakeContextManager` whenever a branch is off and the class has none; it is never
//!   removed (harmless when unused).
//! - A branch switched off earlier is switched on again by writing the stock call.

use npuprof_python::{all_children, children, first_error, line, named_children, text};
use tree_sitter::{Language, Node};

use crate::edit::{Edit, Edits};
use crate::error::PatchError;
use crate::plan::{Phase, PhaseSelection};
use crate::syntax::{parse, parse_valid, syntax_error};
use crate::text::{indentation, line_end, newline};

/// What the Python file should say after the patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PythonOptions {
    /// The phases to profile (the other branch gets a no-op profiler).
    pub phases: PhaseSelection,
    /// The decode window's `active`.
    pub decode_active: u64,
    /// The decode window's `skip_first`; `None` keeps the current value.
    pub decode_skip_first: Option<u64>,
}

/// The edits for one Python file, with a one-line description of each change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonPatch {
    /// The edits, sorted and disjoint.
    pub edits: Edits,
    /// What each change does, in the order they were planned.
    pub changes: Vec<String>,
}

fn language() -> Language {
    tree_sitter_python::LANGUAGE.into()
}

/// Computes the edits that set the profiling window in `profiler_context.py`.
pub fn patch_profiler_context(
    source: &str,
    options: &PythonOptions,
) -> Result<PythonPatch, PatchError> {
    let tree = parse_valid(source, &language(), "Python")?;
    let root = tree.root_node();
    let ctx = Context {
        source,
        nl: newline(source),
    };
    let mut planned = Planned::default();

    let create = find_top_level(source, root, "function_definition", "create_profiler")?;
    let params = Parameters::of(source, create)?;
    let manager = find_top_level(source, root, "class_definition", "ProfilerManager")?;
    let set_status = find_method(source, manager, "set_status")?;
    let unit = indent_unit(source, set_status);

    let mut any_off = false;
    for phase in [Phase::Prefill, Phase::Decode] {
        let branch = find_branch(source, set_status, phase)?;
        let on = options.phases.includes(phase);
        any_off |= !on;
        match (branch.profiler, on) {
            (BranchProfiler::Create(call), true) => match phase {
                Phase::Prefill => ctx.fix_prefill_call(call, &params, &mut planned)?,
                Phase::Decode => {
                    ctx.set_decode_window(Some(call), &params, options, &mut planned)?
                }
            },
            (BranchProfiler::Create(call), false) => planned.push(
                Edit::replace(call.byte_range(), "FakeContextManager()"),
                format!(
                    "{} branch: create_profiler(...) replaced by FakeContextManager() (phase off)",
                    phase.name()
                ),
            ),
            (BranchProfiler::Fake(fake), true) => {
                require_import_os(source, root)?;
                let indent = indentation(source, fake.start_byte());
                planned.push(
                    Edit::replace(fake.byte_range(), stock_call(phase, indent, &unit, ctx.nl)),
                    format!(
                        "{} branch: profiler switched on again (stock create_profiler call)",
                        phase.name()
                    ),
                );
                if phase == Phase::Decode {
                    ctx.set_decode_window(None, &params, options, &mut planned)?;
                }
            }
            (BranchProfiler::Fake(_), false) => {}
        }
    }
    if any_off {
        ctx.ensure_fake_start(root, &unit, &mut planned)?;
    }

    let edits = Edits::new(source, planned.edits)?;
    let patched = edits.apply(source);
    let new_tree = parse(&patched, &language())?;
    if let Some(error) = first_error(new_tree.root_node()) {
        return Err(PatchError::Internal(format!(
            "the patched Python has a syntax error: {}",
            syntax_error(&patched, error, "Python")
        )));
    }
    Ok(PythonPatch {
        edits,
        changes: planned.changes,
    })
}

/// Edits planned so far, each with its description; no-op edits are not recorded.
#[derive(Default)]
struct Planned {
    edits: Vec<Edit>,
    changes: Vec<String>,
}

struct Context<'s> {
    source: &'s str,
    nl: &'static str,
}

impl Planned {
    fn push(&mut self, edit: Edit, change: String) {
        self.edits.push(edit);
        self.changes.push(change);
    }

    /// Records `edit` only if it changes `source`.
    fn push_if_changed(&mut self, source: &str, edit: Edit, change: String) {
        if source.get(edit.range.clone()) != Some(edit.replacement.as_str()) {
            self.push(edit, change);
        }
    }
}

/// The profiler a `set_status` branch assigns to `self.profiler`.
enum BranchProfiler<'t> {
    /// `create_profiler(...)`: the phase is on.
    Create(Node<'t>),
    /// `FakeContextManager()`: the phase is off.
    Fake(Node<'t>),
}

struct Branch<'t> {
    profiler: BranchProfiler<'t>,
}

/// How `create_profiler`'s parameters are declared.
struct Parameters<'t> {
    /// Names in declaration order, for positional arguments (stops at `*` or `*args`).
    positional: Vec<String>,
    /// Every named parameter and its default value, if any.
    named: Vec<(String, Option<Node<'t>>)>,
}

impl<'t> Parameters<'t> {
    fn of(source: &str, def: Node<'t>) -> Result<Self, PatchError> {
        let list = def.child_by_field_name("parameters").ok_or_else(|| {
            PatchError::Internal("create_profiler has no parameter list".to_owned())
        })?;
        let mut positional = Vec::new();
        let mut named = Vec::new();
        let mut keyword_only = false;
        for param in named_children(list) {
            let (name, default) = match param.kind() {
                "identifier" => (Some(param), None),
                "typed_parameter" => (
                    named_children(param)
                        .into_iter()
                        .find(|n| n.kind() == "identifier"),
                    None,
                ),
                "default_parameter" | "typed_default_parameter" => (
                    param.child_by_field_name("name"),
                    param.child_by_field_name("value"),
                ),
                "keyword_separator" | "list_splat_pattern" => {
                    keyword_only = true;
                    continue;
                }
                _ => continue,
            };
            let Some(name) = name else { continue };
            let name = text(name, source).to_owned();
            if !keyword_only {
                positional.push(name.clone());
            }
            named.push((name, default));
        }
        Ok(Self { positional, named })
    }

    fn get(&self, name: &str) -> Option<Option<Node<'t>>> {
        self.named.iter().find(|(n, _)| n == name).map(|(_, d)| *d)
    }

    fn names(&self) -> String {
        self.named
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The arguments of a call, mapped to parameter names.
struct CallArguments<'t> {
    list: Node<'t>,
    /// (parameter name, value node).
    by_name: Vec<(String, Node<'t>)>,
}

impl<'t> CallArguments<'t> {
    fn of(source: &str, call: Node<'t>, params: &Parameters<'_>) -> Result<Self, PatchError> {
        let list = call
            .child_by_field_name("arguments")
            .filter(|a| a.kind() == "argument_list")
            .ok_or_else(|| {
                PatchError::Refused(format!("unsupported call `{}`", text(call, source)))
            })?;
        let mut by_name = Vec::new();
        let mut index = 0;
        for arg in named_children(list) {
            match arg.kind() {
                "comment" => {}
                "keyword_argument" => {
                    if let (Some(name), Some(value)) = (
                        arg.child_by_field_name("name"),
                        arg.child_by_field_name("value"),
                    ) {
                        by_name.push((text(name, source).to_owned(), value));
                    }
                }
                "list_splat" | "dictionary_splat" => {
                    return Err(PatchError::Refused(format!(
                        "the create_profiler call at line {} passes `{}`: npuprof cannot tell which parameters it sets",
                        line(arg),
                        text(arg, source)
                    )));
                }
                _ => {
                    let name = params.positional.get(index).ok_or_else(|| {
                        PatchError::Refused(format!(
                            "the create_profiler call at line {} passes more positional arguments than it declares",
                            line(arg)
                        ))
                    })?;
                    by_name.push((name.clone(), arg));
                    index += 1;
                }
            }
        }
        Ok(Self { list, by_name })
    }

    fn get(&self, name: &str) -> Option<Node<'t>> {
        self.by_name
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }
}

impl Context<'_> {
    /// The prefill call passes `active=1, repeat=1, skip_first=0` explicitly.
    fn fix_prefill_call(
        &self,
        call: Node<'_>,
        params: &Parameters<'_>,
        planned: &mut Planned,
    ) -> Result<(), PatchError> {
        let args = CallArguments::of(self.source, call, params)?;
        let mut missing = Vec::new();
        for (name, value) in [("active", 1), ("repeat", 1), ("skip_first", 0)] {
            if params.get(name).is_none() {
                return Err(PatchError::NotFound {
                    what: format!("parameter `{name}` of create_profiler"),
                    found: params.names(),
                });
            }
            match args.get(name) {
                Some(node) => planned.push_if_changed(
                    self.source,
                    Edit::replace(node.byte_range(), value.to_string()),
                    format!(
                        "prefill call: {name}={} → {name}={value}",
                        text(node, self.source)
                    ),
                ),
                None => missing.push(format!("{name}={value}")),
            }
        }
        if !missing.is_empty() {
            let change = format!("prefill call: added {}", missing.join(", "));
            planned.push(self.append_arguments(args.list, &missing), change);
        }
        Ok(())
    }

    /// Inserts keyword arguments after the last argument, in the call's layout.
    fn append_arguments(&self, list: Node<'_>, new: &[String]) -> Edit {
        let all = all_children(list);
        let args = children(list);
        let Some(last) = args.last() else {
            // `create_profiler()`: fill the parentheses.
            return Edit::insert(list.start_byte() + 1, new.join(", "));
        };
        let trailing_comma = all
            .iter()
            .skip_while(|n| n.id() != last.id())
            .skip(1)
            .find(|n| n.kind() == ",");
        let one_per_line = last.start_position().row > list.start_position().row;
        if one_per_line {
            let indent = indentation(self.source, last.start_byte());
            let lines: String = new
                .iter()
                .map(|a| format!("{}{indent}{a},", self.nl))
                .collect();
            match trailing_comma {
                Some(comma) => {
                    // After the comma and any comment on that line.
                    Edit::insert(line_end(self.source, comma.end_byte()), lines)
                }
                None => {
                    let lines = lines.strip_suffix(',').unwrap_or(&lines);
                    Edit::insert(last.end_byte(), format!(",{lines}"))
                }
            }
        } else {
            Edit::insert(last.end_byte(), format!(", {}", new.join(", ")))
        }
    }

    /// Sets the decode `active`/`skip_first` where the decode call gets them.
    fn set_decode_window(
        &self,
        call: Option<Node<'_>>,
        params: &Parameters<'_>,
        options: &PythonOptions,
        planned: &mut Planned,
    ) -> Result<(), PatchError> {
        let args = match call {
            Some(call) => Some(CallArguments::of(self.source, call, params)?),
            None => None,
        };
        let wanted = [
            ("active", Some(options.decode_active)),
            ("skip_first", options.decode_skip_first),
        ];
        for (name, value) in wanted {
            let Some(value) = value else { continue };
            if let Some(node) = args.as_ref().and_then(|a| a.get(name)) {
                planned.push_if_changed(
                    self.source,
                    Edit::replace(node.byte_range(), value.to_string()),
                    format!(
                        "decode call: {name}={} → {name}={value}",
                        text(node, self.source)
                    ),
                );
                continue;
            }
            match params.get(name) {
                Some(Some(default)) => planned.push_if_changed(
                    self.source,
                    Edit::replace(default.byte_range(), value.to_string()),
                    format!(
                        "decode window: create_profiler default {name}={} → {name}={value}",
                        text(default, self.source)
                    ),
                ),
                Some(None) => {
                    return Err(PatchError::Refused(format!(
                        "create_profiler's parameter `{name}` has no default and the decode call does not pass it"
                    )));
                }
                None => {
                    return Err(PatchError::NotFound {
                        what: format!("parameter `{name}` of create_profiler"),
                        found: params.names(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Gives `FakeContextManager` a no-op `start`, mirroring its `stop` (or `step`).
    fn ensure_fake_start(
        &self,
        root: Node<'_>,
        unit: &str,
        planned: &mut Planned,
    ) -> Result<(), PatchError> {
        let class = find_top_level(self.source, root, "class_definition", "FakeContextManager")
            .map_err(|e| match e {
                PatchError::NotFound { found, .. } => PatchError::NotFound {
                    what: "class FakeContextManager (needed to switch a phase off)".to_owned(),
                    found,
                },
                other => other,
            })?;
        let Some(body) = class.child_by_field_name("body") else {
            return Err(PatchError::Internal(
                "FakeContextManager has no body".to_owned(),
            ));
        };
        let members: Vec<Node<'_>> = named_children(body)
            .into_iter()
            .filter(|n| n.kind() != "comment")
            .collect();
        if members
            .iter()
            .any(|m| definition_name(self.source, *m) == Some("start"))
        {
            return Ok(());
        }
        let Some(last) = members.last() else {
            return Err(PatchError::Internal(
                "FakeContextManager has an empty body".to_owned(),
            ));
        };
        let member_indent = indentation(self.source, members[0].start_byte()).to_owned();
        let model = ["stop", "step"].into_iter().find_map(|name| {
            members
                .iter()
                .find(|m| definition_name(self.source, **m) == Some(name))
                .copied()
        });
        let (decorators, params, body_text) = match model {
            Some(model) => method_shape(self.source, model),
            None => (
                vec!["@staticmethod".to_owned()],
                "()".to_owned(),
                "pass".to_owned(),
            ),
        };
        let blank_lines = blank_lines_between_members(self.source, &members);
        let nl = self.nl;
        let mut text = nl.repeat(1 + blank_lines);
        for decorator in decorators {
            text.push_str(&format!("{member_indent}{decorator}{nl}"));
        }
        text.push_str(&format!(
            "{member_indent}def start{params}:{nl}{member_indent}{unit}{body_text}"
        ));
        planned.push(
            Edit::insert(last.end_byte(), text),
            "FakeContextManager: added a no-op start() (set_status calls .start() on it)"
                .to_owned(),
        );
        Ok(())
    }
}

/// The stock `create_profiler(...)` call of a branch, laid out one argument per line.
fn stock_call(phase: Phase, indent: &str, unit: &str, nl: &str) -> String {
    let inner = format!("{indent}{unit}");
    let mut args = vec![
        "enable_profiler=self.enable_profiler".to_owned(),
        format!(
            "profile_save_path=os.path.join(self.profile_save_path, \"prof\", \"{}\")",
            phase.name()
        ),
    ];
    if phase == Phase::Prefill {
        args.extend(["active=1", "repeat=1", "skip_first=0"].map(str::to_owned));
    }
    let lines: String = args.iter().map(|a| format!("{nl}{inner}{a},")).collect();
    format!("create_profiler({lines}{nl}{indent})")
}

/// Decorators, parameter list and one-line body of a method, to mirror its style.
fn method_shape(source: &str, member: Node<'_>) -> (Vec<String>, String, String) {
    let (decorators, def) = match member.kind() {
        "decorated_definition" => (
            named_children(member)
                .into_iter()
                .filter(|n| n.kind() == "decorator")
                .map(|d| text(d, source).to_owned())
                .collect(),
            member.child_by_field_name("definition").unwrap_or(member),
        ),
        _ => (Vec::new(), member),
    };
    let params = def
        .child_by_field_name("parameters")
        .map_or("()", |p| text(p, source))
        .to_owned();
    let body = def
        .child_by_field_name("body")
        .map(named_children)
        .and_then(|stmts| match stmts.as_slice() {
            [only] if !text(*only, source).contains('\n') => Some(text(*only, source).to_owned()),
            _ => None,
        })
        .unwrap_or_else(|| "pass".to_owned());
    (decorators, params, body)
}

/// Blank lines between the last two members of a class body (1 when there is only one).
fn blank_lines_between_members(source: &str, members: &[Node<'_>]) -> usize {
    match members {
        [.., a, b] => {
            let gap = b
                .start_position()
                .row
                .saturating_sub(a.end_position().row + 1);
            // Comments between them count as non-blank lines.
            let comments = source[a.end_byte()..b.start_byte()]
                .lines()
                .filter(|l| l.trim_start().starts_with('#'))
                .count();
            gap.saturating_sub(comments)
        }
        _ => 1,
    }
}

/// The name of a function or class definition, decorated or not.
fn definition_name<'s>(source: &'s str, node: Node<'_>) -> Option<&'s str> {
    let def = match node.kind() {
        "decorated_definition" => node.child_by_field_name("definition")?,
        "function_definition" | "class_definition" => node,
        _ => return None,
    };
    def.child_by_field_name("name").map(|n| text(n, source))
}

fn definition_of(node: Node<'_>) -> Node<'_> {
    if node.kind() == "decorated_definition" {
        node.child_by_field_name("definition").unwrap_or(node)
    } else {
        node
    }
}

/// A top-level `def`/`class` named `name`; else a NotFound listing what is there.
fn find_top_level<'t>(
    source: &str,
    root: Node<'t>,
    kind: &str,
    name: &str,
) -> Result<Node<'t>, PatchError> {
    let items = named_children(root);
    if let Some(found) = items
        .iter()
        .find(|n| definition_name(source, **n) == Some(name) && definition_of(**n).kind() == kind)
    {
        return Ok(definition_of(*found));
    }
    let listed: Vec<String> = items
        .iter()
        .filter_map(|n| {
            let def = definition_of(*n);
            let keyword = if def.kind() == "class_definition" {
                "class"
            } else {
                "def"
            };
            definition_name(source, *n).map(|d| format!("{keyword} {d} (line {})", line(def)))
        })
        .collect();
    let keyword = if kind == "class_definition" {
        "class"
    } else {
        "function"
    };
    Err(PatchError::NotFound {
        what: format!("top-level {keyword} `{name}`"),
        found: if listed.is_empty() {
            "no top-level def or class".to_owned()
        } else {
            listed.join(", ")
        },
    })
}

/// A method of `class` named `name`.
fn find_method<'t>(source: &str, class: Node<'t>, name: &str) -> Result<Node<'t>, PatchError> {
    let members = class
        .child_by_field_name("body")
        .map(named_children)
        .unwrap_or_default();
    if let Some(found) = members
        .iter()
        .find(|m| definition_name(source, **m) == Some(name))
    {
        return Ok(definition_of(*found));
    }
    let listed: Vec<&str> = members
        .iter()
        .filter_map(|m| definition_name(source, *m))
        .collect();
    Err(PatchError::NotFound {
        what: format!("method `ProfilerManager.{name}`"),
        found: if listed.is_empty() {
            "no methods".to_owned()
        } else {
            format!("methods {}", listed.join(", "))
        },
    })
}

/// The indentation unit: the body indentation of `def` minus the indentation of `def` itself.
fn indent_unit(source: &str, def: Node<'_>) -> String {
    let outer = indentation(source, def.start_byte());
    let inner = def
        .child_by_field_name("body")
        .and_then(|b| named_children(b).into_iter().next())
        .map_or("    ", |first| indentation(source, first.start_byte()));
    inner
        .strip_prefix(outer)
        .filter(|u| !u.is_empty())
        .unwrap_or("    ")
        .to_owned()
}

/// The `set_status` branch that sets `self.status = "<phase>"`, and its `self.profiler = ...`.
fn find_branch<'t>(
    source: &str,
    set_status: Node<'t>,
    phase: Phase,
) -> Result<Branch<'t>, PatchError> {
    let mut stack = vec![set_status];
    let mut statuses = Vec::new();
    while let Some(node) = stack.pop() {
        if node.kind() == "assignment"
            && node
                .child_by_field_name("left")
                .is_some_and(|l| text(l, source) == "self.status")
        {
            let value = node
                .child_by_field_name("right")
                .map(|r| string_value(source, r))
                .unwrap_or_default();
            if value == phase.name() {
                let block = node.parent().and_then(|s| s.parent());
                if let Some(block) = block {
                    return branch_profiler(source, block, phase);
                }
            }
            statuses.push(text(node, source).to_owned());
        }
        let mut kids = named_children(node);
        kids.reverse();
        stack.extend(kids);
    }
    Err(PatchError::NotFound {
        what: format!(
            "`self.status = \"{}\"` in ProfilerManager.set_status",
            phase.name()
        ),
        found: if statuses.is_empty() {
            "no assignment to self.status".to_owned()
        } else {
            statuses.join("; ")
        },
    })
}

fn branch_profiler<'t>(
    source: &str,
    block: Node<'t>,
    phase: Phase,
) -> Result<Branch<'t>, PatchError> {
    for statement in named_children(block) {
        let Some(assignment) = named_children(statement)
            .into_iter()
            .find(|n| n.kind() == "assignment")
        else {
            continue;
        };
        if assignment
            .child_by_field_name("left")
            .is_none_or(|l| text(l, source) != "self.profiler")
        {
            continue;
        }
        let Some(right) = assignment.child_by_field_name("right") else {
            continue;
        };
        let callee = (right.kind() == "call")
            .then(|| {
                right
                    .child_by_field_name("function")
                    .map(|f| text(f, source))
            })
            .flatten();
        return match callee {
            Some("create_profiler") => Ok(Branch {
                profiler: BranchProfiler::Create(right),
            }),
            Some("FakeContextManager") => Ok(Branch {
                profiler: BranchProfiler::Fake(right),
            }),
            _ => Err(PatchError::Refused(format!(
                "the {} branch of set_status assigns `self.profiler = {}` (line {}); expected create_profiler(...) or FakeContextManager()",
                phase.name(),
                text(right, source),
                line(right)
            ))),
        };
    }
    Err(PatchError::NotFound {
        what: format!(
            "`self.profiler = create_profiler(...)` in the {} branch of set_status",
            phase.name()
        ),
        found: format!("the branch at line {}", line(block)),
    })
}

/// The value of a plain string literal (`"prefill"` → `prefill`); empty for anything else.
fn string_value(source: &str, node: Node<'_>) -> String {
    if node.kind() != "string" {
        return String::new();
    }
    named_children(node)
        .into_iter()
        .filter(|n| n.kind() == "string_content")
        .map(|n| text(n, source))
        .collect()
}

fn require_import_os(source: &str, root: Node<'_>) -> Result<(), PatchError> {
    let imports_os = named_children(root).into_iter().any(|n| {
        n.kind() == "import_statement"
            && named_children(n)
                .into_iter()
                .any(|m| text(m, source) == "os")
    });
    if imports_os {
        Ok(())
    } else {
        Err(PatchError::Refused(
            "a phase switched off earlier cannot be switched on again: the module does not `import os`; \
             run `npuprof revert` first"
                .to_owned(),
        ))
    }
}

/// The decode window the Python currently gives the decode profiler (integer literals only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeWindow {
    /// `active`, if it is an integer literal.
    pub active: Option<i64>,
    /// `skip_first`, if it is an integer literal.
    pub skip_first: Option<i64>,
    /// `repeat`, if it is an integer literal.
    pub repeat: Option<i64>,
}

/// Reads the decode window from the decode call's arguments or `create_profiler`'s defaults.
pub fn read_decode_window(source: &str) -> Result<DecodeWindow, PatchError> {
    let tree = parse_valid(source, &language(), "Python")?;
    let root = tree.root_node();
    let create = find_top_level(source, root, "function_definition", "create_profiler")?;
    let params = Parameters::of(source, create)?;
    let manager = find_top_level(source, root, "class_definition", "ProfilerManager")?;
    let set_status = find_method(source, manager, "set_status")?;
    let args = match find_branch(source, set_status, Phase::Decode)?.profiler {
        BranchProfiler::Create(call) => Some(CallArguments::of(source, call, &params)?),
        BranchProfiler::Fake(_) => None,
    };
    let value = |name: &str| {
        let node = args
            .as_ref()
            .and_then(|a| a.get(name))
            .or_else(|| params.get(name).flatten())?;
        text(node, source).parse::<i64>().ok()
    };
    Ok(DecodeWindow {
        active: value("active"),
        skip_first: value("skip_first"),
        repeat: value("repeat"),
    })
}
