//! Profiler code matched by structure, whatever its names: a *factory* is a function whose body
//! builds `…profiler.profile(…, schedule=…schedule(…), on_trace_ready=…trace_handler(<path>))`;
//! a *site* is a call of a factory whose save-path argument names a phase (`"prefill"` or
//! `"decode"` among its string literals, directly or through one helper method). Every value of a
//! site's window is traced to where it lives: the call's argument, a class constant it passes,
//! the factory's default, or a literal inside the factory.
//!
//! When the save path names no phase literally, the call is evaluated once per member of the
//! phase `Enum` its function takes (`npuprof_syntax::semantic::value`): the member's `.value` in the save
//! path (`os.path.join(base, "prof", phase.value)`), the `**kwargs` dict the branches on the
//! phase choose, and whether the call is reached for that member at all. One such call serves
//! several phases ([`Site::shared`]); a phase is switched off there by a guard before it
//! ([`Selector`]).
//!
//! Pure functions of one file's text; byte ranges refer to that text.

pub use npuprof_schedule::Phase;
use npuprof_syntax::semantic::literal::string_text;
use npuprof_syntax::semantic::params::{ParamKind, parameters as params_of};
use npuprof_syntax::semantic::resolve::class_attribute;
use npuprof_syntax::semantic::value::{EnumClass, Evaluator, Module, Value};
use npuprof_syntax::{callee, descendants, dotted, line, named_children, text};
use serde::Serialize;
use tree_sitter::{Node, Tree};

/// A piece of source: its byte range, 1-based line and text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Span {
    /// Byte offset of the start.
    pub start: usize,
    /// Byte offset of the end (exclusive).
    pub end: usize,
    /// 1-based line of the start.
    pub line: usize,
    /// The text.
    pub text: String,
}

impl Span {
    fn of(node: Node<'_>, source: &str) -> Self {
        Self {
            start: node.start_byte(),
            end: node.end_byte(),
            line: line(node),
            text: text(node, source).to_owned(),
        }
    }

    /// The integer the text spells, if it is an integer literal.
    pub fn int(&self) -> Option<i64> {
        self.text.replace('_', "").parse().ok()
    }
}

/// The arguments of `torch_npu.profiler.schedule(...)` that make a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowField {
    /// `wait`.
    Wait,
    /// `warmup`.
    Warmup,
    /// `active`.
    Active,
    /// `repeat`.
    Repeat,
    /// `skip_first`.
    SkipFirst,
}

impl WindowField {
    /// Every field, in torch_npu's keyword order.
    pub const ALL: [WindowField; 5] = [
        WindowField::Wait,
        WindowField::Warmup,
        WindowField::Active,
        WindowField::Repeat,
        WindowField::SkipFirst,
    ];

    /// The keyword.
    pub fn name(self) -> &'static str {
        match self {
            WindowField::Wait => "wait",
            WindowField::Warmup => "warmup",
            WindowField::Active => "active",
            WindowField::Repeat => "repeat",
            WindowField::SkipFirst => "skip_first",
        }
    }
}

/// How a factory fills one schedule argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FactoryValue {
    /// From its parameter of this name.
    Parameter {
        /// The parameter.
        name: String,
    },
    /// A literal fixed in the factory.
    Literal {
        /// The literal.
        span: Span,
    },
    /// Something else (an expression npuprof does not follow).
    Other {
        /// Its text.
        text: String,
    },
}

/// A parameter of a factory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Parameter {
    /// Its name.
    pub name: String,
    /// Its default value.
    pub default: Option<Span>,
    /// Whether it may be passed positionally (before `*` / `*args`).
    pub positional: bool,
}

/// A function that builds a torch_npu profiler with a schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Factory {
    /// Its name.
    pub name: String,
    /// The class it is a method of, if any.
    pub class: Option<String>,
    /// Line of its `def`.
    pub line: usize,
    /// Its parameters (without `self`/`cls`).
    pub parameters: Vec<Parameter>,
    /// How each schedule argument is filled (fields it does not pass are absent).
    pub schedule: Vec<(WindowField, FactoryValue)>,
    /// The parameter passed to the trace handler (the save path).
    pub save_parameter: Option<String>,
    /// The parameter its `if` tests to decide whether to profile.
    pub enable_parameter: Option<String>,
    /// The class it returns instead when profiling is off (`FakeContextManager()`).
    pub disabled: Option<String>,
    /// The `profile(...)` call it makes, and the values of its tracer keywords
    /// ([`TRACER_KEYWORDS`]) it passes, for a structure window's edits.
    #[serde(skip)]
    pub profile: Option<ProfileCall>,
}

/// The keywords of `torch_npu.profiler.profile(...)` that turn the Python tracer or the shapes
/// on.
pub const TRACER_KEYWORDS: [&str; 3] = ["with_modules", "with_stack", "record_shapes"];

/// A factory's `profile(...)` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileCall {
    /// The call.
    pub call: Span,
    /// The values it passes for [`TRACER_KEYWORDS`], by keyword.
    pub tracer: Vec<(&'static str, Span)>,
}

impl Factory {
    /// The parameter named `name`.
    pub fn parameter(&self, name: &str) -> Option<&Parameter> {
        self.parameters.iter().find(|p| p.name == name)
    }

    /// How the factory fills `field`.
    pub fn schedule_value(&self, field: WindowField) -> Option<&FactoryValue> {
        self.schedule
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| v)
    }
}

/// Where one window value of a site comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ValueSource {
    /// An integer literal passed at the call.
    Argument {
        /// The literal.
        span: Span,
    },
    /// A class constant passed at the call (`self.NAME` / `Class.NAME`).
    ClassConstant {
        /// The constant's name.
        name: String,
        /// Its value in the class body.
        span: Span,
    },
    /// The factory parameter's default (the call does not pass it).
    Default {
        /// The default value.
        span: Span,
    },
    /// A literal inside the factory's `schedule(...)`.
    Fixed {
        /// The literal.
        span: Span,
    },
    /// Passed as an expression npuprof does not evaluate.
    Unresolved {
        /// Its text.
        text: String,
    },
    /// torch_npu's own default (the factory does not pass the argument).
    TorchDefault,
}

impl ValueSource {
    /// The value, when it is known (torch_npu's default is 0 for every window argument but
    /// `active`, whose default npuprof never relies on).
    pub fn value(&self, field: WindowField) -> Option<i64> {
        match self {
            ValueSource::Argument { span }
            | ValueSource::ClassConstant { span, .. }
            | ValueSource::Default { span }
            | ValueSource::Fixed { span } => span.int(),
            ValueSource::Unresolved { .. } => None,
            ValueSource::TorchDefault => match field {
                WindowField::Active => None,
                WindowField::Repeat => Some(0),
                _ => Some(0),
            },
        }
    }

    /// The span an edit of this value replaces, when it is a literal npuprof may edit.
    pub fn editable(&self) -> Option<&Span> {
        match self {
            ValueSource::Argument { span }
            | ValueSource::ClassConstant { span, .. }
            | ValueSource::Default { span } => span.int().map(|_| span),
            _ => None,
        }
    }
}

/// A call of a factory for one phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Site {
    /// The phase its save path names.
    pub phase: Phase,
    /// The factory it calls.
    pub factory: String,
    /// The qualified name of the function holding the call (`Class.method`, or `<module>`).
    pub function: String,
    /// The whole call.
    pub call: Span,
    /// Byte offset just after the last argument (or after `(` when there is none).
    pub arguments_end: usize,
    /// Whether the arguments are laid out one per line.
    pub multiline: bool,
    /// Arguments mapped to the factory's parameters: (parameter, value).
    pub arguments: Vec<(String, Span)>,
    /// Where each window value comes from.
    pub window: Vec<(WindowField, ValueSource)>,
    /// The string literals of the save path, in order (e.g. `prof`, `decode`).
    pub path_literals: Vec<String>,
    /// What the call is assigned to (`self.current_profiler`), if anything.
    pub assigned_to: Option<String>,
    /// Whether this one call builds the profiler of several phases (its phase was evaluated):
    /// nothing may be added to it for one phase alone.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
    /// How the call's function is told the phase, when it was evaluated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<Selector>,
}

/// The phase variable of a call evaluated per phase, and where a guard for one phase goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Selector {
    /// The function's parameter holding the phase (`cur_status`).
    pub parameter: String,
    /// The enum member that is this phase (`ProfilerPhase.DECODE`).
    pub member: String,
    /// 1-based line of the enum member's definition.
    pub member_line: usize,
    /// Byte offset of the start of the line of the statement holding the call.
    pub statement_line_start: usize,
    /// That statement's indentation.
    pub indent: String,
    /// The attribute the function stores the phase in (`self.profiler_status`), if it does.
    pub state_attribute: Option<String>,
}

impl Site {
    /// Where `field` comes from.
    pub fn source(&self, field: WindowField) -> &ValueSource {
        self.window
            .iter()
            .find(|(f, _)| *f == field)
            .map_or(&ValueSource::TorchDefault, |(_, s)| s)
    }

    /// The argument passed for parameter `name`.
    pub fn argument(&self, name: &str) -> Option<&Span> {
        self.arguments
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s)
    }
}

/// What one file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FileFacts {
    /// Factories defined in it (the last definition of a name wins, as in Python).
    pub factories: Vec<Factory>,
    /// Factory names defined more than once at one level, with their lines.
    pub redefined: Vec<(String, Vec<usize>)>,
}

/// Parses Python source (`None` when the parser cannot run at all).
pub fn parse(source: &str) -> Option<Tree> {
    npuprof_syntax::parse(source)
}

/// The line of the first syntax error, if any.
pub fn syntax_error_line(tree: &Tree) -> Option<usize> {
    npuprof_syntax::first_error(tree.root_node()).map(line)
}

/// The factories of one file.
pub fn factories(tree: &Tree, source: &str) -> FileFacts {
    let mut found: Vec<Factory> = Vec::new();
    let mut lines: Vec<(String, Option<String>, usize)> = Vec::new();
    for (def, class) in definitions(tree.root_node(), source, None) {
        if let Some(factory) = factory(def, class.clone(), source) {
            lines.push((factory.name.clone(), class, factory.line));
            found.retain(|f| !(f.name == factory.name && f.class == factory.class));
            found.push(factory);
        }
    }
    let mut redefined: Vec<(String, Vec<usize>)> = Vec::new();
    for (name, class, _) in &lines {
        let at: Vec<usize> = lines
            .iter()
            .filter(|(n, c, _)| n == name && c == class)
            .map(|(_, _, l)| *l)
            .collect();
        if at.len() > 1 && !redefined.iter().any(|(n, _)| n == name) {
            redefined.push((name.clone(), at));
        }
    }
    FileFacts {
        factories: found,
        redefined,
    }
}

/// Function definitions at module level and in top-level classes, with their class.
fn definitions<'t>(
    root: Node<'t>,
    source: &str,
    class: Option<String>,
) -> Vec<(Node<'t>, Option<String>)> {
    let mut out = Vec::new();
    for item in named_children(root) {
        let def = unwrap_decorated(item);
        match def.kind() {
            "function_definition" => out.push((def, class.clone())),
            "class_definition" if class.is_none() => {
                let name = def
                    .child_by_field_name("name")
                    .map(|n| text(n, source).to_owned());
                if let Some(body) = def.child_by_field_name("body") {
                    out.extend(definitions(body, source, name));
                }
            }
            _ => {}
        }
    }
    out
}

fn unwrap_decorated(node: Node<'_>) -> Node<'_> {
    if node.kind() == "decorated_definition" {
        node.child_by_field_name("definition").unwrap_or(node)
    } else {
        node
    }
}

/// The factory `def` is, if it builds a profiler with a schedule.
fn factory(def: Node<'_>, class: Option<String>, source: &str) -> Option<Factory> {
    let name = text(def.child_by_field_name("name")?, source).to_owned();
    let body = def.child_by_field_name("body")?;
    let profile = descendants(body)
        .into_iter()
        .find(|n| n.kind() == "call" && is_profile_call(*n, source))?;
    let schedule_call = keyword(profile, "schedule", source).filter(|v| v.kind() == "call")?;
    let parameters = parameters(def, source);
    let is_param = |n: Node<'_>| {
        n.kind() == "identifier" && parameters.iter().any(|p| p.name == text(n, source))
    };
    let mut schedule = Vec::new();
    for field in WindowField::ALL {
        let Some(value) = keyword(schedule_call, field.name(), source) else {
            continue;
        };
        let value = if is_param(value) {
            FactoryValue::Parameter {
                name: text(value, source).to_owned(),
            }
        } else if Span::of(value, source).int().is_some() {
            FactoryValue::Literal {
                span: Span::of(value, source),
            }
        } else {
            FactoryValue::Other {
                text: text(value, source).to_owned(),
            }
        };
        schedule.push((field, value));
    }
    let save_parameter = keyword(profile, "on_trace_ready", source)
        .filter(|h| h.kind() == "call")
        .and_then(|h| npuprof_syntax::positional(h).into_iter().next())
        .filter(|a| is_param(*a))
        .map(|a| text(a, source).to_owned());
    let enable_parameter = descendants(body)
        .into_iter()
        .filter(|n| n.kind() == "if_statement")
        .filter_map(|n| n.child_by_field_name("condition"))
        .find(|c| is_param(*c))
        .map(|c| text(c, source).to_owned());
    let disabled = descendants(body)
        .into_iter()
        .filter(|n| n.kind() == "call" && npuprof_syntax::arguments(*n).is_empty())
        .filter_map(|n| callee(n, source))
        .find(|c| !c.contains('.') && c.chars().next().is_some_and(char::is_uppercase));
    let tracer = TRACER_KEYWORDS
        .iter()
        .filter_map(|&k| keyword(profile, k, source).map(|v| (k, Span::of(v, source))))
        .collect();
    Some(Factory {
        name,
        class,
        line: line(def),
        parameters,
        schedule,
        save_parameter,
        enable_parameter,
        disabled,
        profile: Some(ProfileCall {
            call: Span::of(profile, source),
            tracer,
        }),
    })
}

/// `torch_npu.profiler.profile(...)`, `profiler.profile(...)` or an imported `profile(...)`
/// with a `schedule=` keyword.
fn is_profile_call(call: Node<'_>, source: &str) -> bool {
    let Some(name) = callee(call, source) else {
        return false;
    };
    let profile = name == "profile" || name.ends_with("profiler.profile");
    profile && keyword(call, "schedule", source).is_some()
}

fn keyword<'t>(call: Node<'t>, name: &str, source: &str) -> Option<Node<'t>> {
    npuprof_syntax::kwarg(call, name, source)
}

fn parameters(def: Node<'_>, source: &str) -> Vec<Parameter> {
    let mut out = Vec::new();
    let mut positional = true;
    for (i, param) in params_of(def, source).into_iter().enumerate() {
        if param.kind != ParamKind::Named {
            positional &= param.kind != ParamKind::Args;
            continue;
        }
        // A bare `*` (or `*args`) before it makes it keyword-only.
        positional &= param.index.is_some();
        if i == 0 && matches!(param.name, "self" | "cls") {
            continue;
        }
        out.push(Parameter {
            name: param.name.to_owned(),
            default: param.default.map(|d| Span::of(d, source)),
            positional,
        });
    }
    out
}

/// Every call of one of `factories` in the file whose save path names a phase.
pub fn sites(tree: &Tree, source: &str, factories: &[Factory]) -> Vec<Site> {
    let root = tree.root_node();
    let mut out = Vec::new();
    for call in descendants(root).into_iter().filter(|n| n.kind() == "call") {
        let Some(name) = callee(call, source) else {
            continue;
        };
        let last = name.rsplit('.').next().unwrap_or(&name);
        let Some(factory) = factories.iter().find(|f| f.name == last) else {
            continue;
        };
        match site(root, call, factory, source) {
            Some(site) => out.push(site),
            None => out.extend(evaluated_sites(root, call, factory, source)),
        }
    }
    out
}

fn site(root: Node<'_>, call: Node<'_>, factory: &Factory, source: &str) -> Option<Site> {
    let list = call
        .child_by_field_name("arguments")
        .filter(|a| a.kind() == "argument_list")?;
    let arguments = map_arguments(list, factory, source)?;
    let save = factory.save_parameter.as_deref()?;
    let save_node = arguments.iter().find(|(n, _)| n == save).map(|(_, v)| *v)?;
    let path_literals = path_literals(save_node, source);
    let phase = path_literals.iter().find_map(|l| Phase::from_name(l))?;
    let window = WindowField::ALL
        .into_iter()
        .map(|field| {
            (
                field,
                value_source(root, field, &arguments, factory, source),
            )
        })
        .collect();
    let (arguments_end, multiline) = layout(call, list);
    Some(Site {
        phase,
        factory: factory.name.clone(),
        function: enclosing_function(call, source),
        call: Span::of(call, source),
        arguments_end,
        multiline,
        arguments: arguments
            .iter()
            .map(|(n, v)| (n.clone(), Span::of(*v, source)))
            .collect(),
        window,
        path_literals,
        assigned_to: assigned_to(call, source),
        shared: false,
        selector: None,
    })
}

/// Where a call's arguments end (just after `(` when there are none) and whether they are laid
/// out one per line.
fn layout(call: Node<'_>, list: Node<'_>) -> (usize, bool) {
    let args = npuprof_syntax::arguments(call);
    let end = args
        .last()
        .map_or(list.start_byte() + 1, |a: &Node<'_>| a.end_byte());
    let multiline = args
        .last()
        .is_some_and(|a| a.start_position().row > list.start_position().row);
    (end, multiline)
}

/// The phase sites of a call whose phase is a value of its function's phase parameter.
fn evaluated_sites(root: Node<'_>, call: Node<'_>, factory: &Factory, source: &str) -> Vec<Site> {
    evaluated(root, call, factory, source).unwrap_or_default()
}

fn evaluated(root: Node<'_>, call: Node<'_>, factory: &Factory, source: &str) -> Option<Vec<Site>> {
    let module = Module::read(root, source);
    let ev = Evaluator::new(&module, source);
    let function = ancestors(call).find(|n| n.kind() == "function_definition")?;
    let (parameter, class) = phase_parameter(function, &module, source)?;
    let list = call
        .child_by_field_name("arguments")
        .filter(|a| a.kind() == "argument_list")?;
    let save = factory.save_parameter.as_deref()?;
    let statement = ancestors(call).find(|n| n.parent().map(|p| p.kind()) == Some("block"))?;
    let line_start = source[..statement.start_byte()]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let indent = source[line_start..statement.start_byte()].to_owned();
    let state_attribute = phase_state_attribute(function, &parameter, source);
    let (arguments_end, multiline) = layout(call, list);
    let mut out = Vec::new();
    for (member, value, member_line) in &class.members {
        let Some(phase) = Phase::from_name(value) else {
            continue;
        };
        let bound = Value::Member {
            class: class.name.clone(),
            name: member.clone(),
            value: Some(value.clone()),
        };
        let Some(locals) = ev.bindings_at(function, call, vec![(parameter.clone(), bound)]) else {
            continue;
        };
        // Each argument's value for this phase: (parameter, value, the node it is written at).
        let mut passed: Vec<(String, Value, Node<'_>)> = Vec::new();
        let mut splat_unknown = None;
        for argument in &call_arguments(list, factory, source)? {
            match *argument {
                Argument::Named(ref name, value) => {
                    passed.push((name.clone(), ev.eval(value, &locals), value));
                }
                Argument::DictSplat { splat, inner } => match ev.eval(inner, &locals) {
                    Value::Dict(entries) => {
                        for (key, value) in entries {
                            passed.push((key, value, inner));
                        }
                    }
                    _ => splat_unknown = Some(text(splat, source).to_owned()),
                },
            }
        }
        let path = passed.iter().find(|(n, _, _)| n == save)?;
        let path_literals = path.1.path_parts();
        if !path_literals.iter().any(|p| p == phase.name()) {
            continue;
        }
        let span_at = |range: &std::ops::Range<usize>| {
            root.descendant_for_byte_range(range.start, range.end)
                .map(|n| Span::of(n, source))
        };
        let window = WindowField::ALL
            .into_iter()
            .map(|field| {
                let source_of = match factory.schedule_value(field) {
                    None => ValueSource::TorchDefault,
                    Some(FactoryValue::Literal { span }) => {
                        ValueSource::Fixed { span: span.clone() }
                    }
                    Some(FactoryValue::Other { text }) => {
                        ValueSource::Unresolved { text: text.clone() }
                    }
                    Some(FactoryValue::Parameter { name }) => {
                        match passed.iter().rev().find(|(n, _, _)| n == name) {
                            Some((_, Value::Int { at, .. }, _)) => span_at(at).map_or_else(
                                || ValueSource::Unresolved { text: name.clone() },
                                |span| ValueSource::Argument { span },
                            ),
                            Some((_, _, node)) => ValueSource::Unresolved {
                                text: text(*node, source).to_owned(),
                            },
                            None => match (
                                &splat_unknown,
                                factory.parameter(name).and_then(|p| p.default.clone()),
                            ) {
                                (Some(splat), _) => ValueSource::Unresolved {
                                    text: splat.clone(),
                                },
                                (None, Some(span)) => ValueSource::Default { span },
                                (None, None) => ValueSource::Unresolved {
                                    text: format!("{name} (no default, not passed)"),
                                },
                            },
                        }
                    }
                };
                (field, source_of)
            })
            .collect();
        let arguments = passed
            .iter()
            .filter_map(|(n, v, node)| match v {
                Value::Int { at, .. } => span_at(at).map(|s| (n.clone(), s)),
                _ => Some((n.clone(), Span::of(*node, source))),
            })
            .collect();
        out.push(Site {
            phase,
            factory: factory.name.clone(),
            function: enclosing_function(call, source),
            call: Span::of(call, source),
            arguments_end,
            multiline,
            arguments,
            window,
            path_literals,
            assigned_to: assigned_to(call, source),
            shared: true,
            selector: Some(Selector {
                parameter: parameter.clone(),
                member: format!("{}.{member}", class.name),
                member_line: *member_line,
                statement_line_start: line_start,
                indent: indent.clone(),
                state_attribute: state_attribute.clone(),
            }),
        });
    }
    Some(out)
}

/// The parameter of `function` that holds a phase: annotated with an `Enum` class of the module
/// whose members name phases (or, unannotated, compared with such a class's members).
fn phase_parameter<'m>(
    function: Node<'_>,
    module: &'m Module<'_>,
    source: &str,
) -> Option<(String, &'m EnumClass)> {
    let names_phases = |c: &EnumClass| {
        c.members
            .iter()
            .any(|(_, v, _)| Phase::from_name(v).is_some())
    };
    for param in params_of(function, source) {
        let Some(annotation) = param.annotation.map(|t| text(t, source)) else {
            continue;
        };
        if let Some(class) = module.enum_class(annotation).filter(|c| names_phases(c)) {
            return Some((param.name.to_owned(), class));
        }
    }
    let body = function.child_by_field_name("body")?;
    let phase_classes: Vec<&EnumClass> = module.enums.iter().filter(|c| names_phases(c)).collect();
    let [class] = phase_classes.as_slice() else {
        return None;
    };
    let member_prefix = format!("{}.", class.name);
    parameters(function, source).into_iter().find_map(|p| {
        let compared = descendants(body).into_iter().any(|n| {
            n.kind() == "comparison_operator"
                && named_children(n).first().map(|l| text(*l, source)) == Some(p.name.as_str())
                && text(n, source).contains(&member_prefix)
        });
        compared.then_some((p.name, *class))
    })
}

/// `self.X` in `self.X = <parameter>` inside `function`.
fn phase_state_attribute(function: Node<'_>, parameter: &str, source: &str) -> Option<String> {
    descendants(function).into_iter().find_map(|n| {
        (n.kind() == "assignment"
            && n.child_by_field_name("right").map(|r| text(r, source)) == Some(parameter))
        .then(|| n.child_by_field_name("left"))
        .flatten()
        .filter(|l| l.kind() == "attribute")
        .map(|l| text(l, source).to_owned())
    })
}

/// One argument of a factory call, read against the factory's parameters.
enum Argument<'t> {
    /// A keyword argument, or a positional one by its parameter's name: the value's node.
    Named(String, Node<'t>),
    /// `**inner`: whose keys only an evaluation can tell.
    DictSplat { splat: Node<'t>, inner: Node<'t> },
}

/// The call's arguments in order; `None` when a `*args` splat hides the positions, a
/// positional argument has no parameter, or the tree is incomplete.
fn call_arguments<'t>(
    list: Node<'t>,
    factory: &Factory,
    source: &str,
) -> Option<Vec<Argument<'t>>> {
    let mut positional = factory
        .parameters
        .iter()
        .filter(|p| p.positional)
        .map(|p| p.name.as_str());
    let mut out = Vec::new();
    for arg in named_children(list) {
        match arg.kind() {
            "comment" => {}
            "keyword_argument" => {
                let name = arg.child_by_field_name("name")?;
                let value = arg.child_by_field_name("value")?;
                out.push(Argument::Named(text(name, source).to_owned(), value));
            }
            "dictionary_splat" => out.push(Argument::DictSplat {
                splat: arg,
                inner: named_children(arg).into_iter().next()?,
            }),
            "list_splat" => return None,
            _ => out.push(Argument::Named(positional.next()?.to_owned(), arg)),
        }
    }
    Some(out)
}

/// The call's arguments by parameter name; `None` when a splat hides them.
fn map_arguments<'t>(
    list: Node<'t>,
    factory: &Factory,
    source: &str,
) -> Option<Vec<(String, Node<'t>)>> {
    call_arguments(list, factory, source)?
        .into_iter()
        .map(|argument| match argument {
            Argument::Named(name, node) => Some((name, node)),
            Argument::DictSplat { .. } => None,
        })
        .collect()
}

fn value_source(
    root: Node<'_>,
    field: WindowField,
    arguments: &[(String, Node<'_>)],
    factory: &Factory,
    source: &str,
) -> ValueSource {
    let param = match factory.schedule_value(field) {
        None => return ValueSource::TorchDefault,
        Some(FactoryValue::Literal { span }) => return ValueSource::Fixed { span: span.clone() },
        Some(FactoryValue::Other { text }) => {
            return ValueSource::Unresolved { text: text.clone() };
        }
        Some(FactoryValue::Parameter { name }) => name,
    };
    if let Some((_, node)) = arguments.iter().find(|(n, _)| n == param) {
        let span = Span::of(*node, source);
        if span.int().is_some() {
            return ValueSource::Argument { span };
        }
        if let Some((name, value)) = class_constant(root, *node, source) {
            return ValueSource::ClassConstant { name, span: value };
        }
        return ValueSource::Unresolved { text: span.text };
    }
    match factory.parameter(param).and_then(|p| p.default.clone()) {
        Some(span) => ValueSource::Default { span },
        None => ValueSource::Unresolved {
            text: format!("{param} (no default, not passed)"),
        },
    }
}

/// `self.NAME` / `Class.NAME` resolved to `NAME = <int>` in the enclosing (or named) class body.
fn class_constant(root: Node<'_>, value: Node<'_>, source: &str) -> Option<(String, Span)> {
    let (attribute, right) = class_attribute(root, value, source)?;
    let span = Some(Span::of(right, source)).filter(|s| s.int().is_some())?;
    Some((attribute.to_owned(), span))
}

/// The string literals of a save-path expression, following one helper method
/// (`self._path("decode")` → the literals of its `return`, with its parameters substituted).
fn path_literals(node: Node<'_>, source: &str) -> Vec<String> {
    let direct = string_literals(node, source);
    if node.kind() != "call" {
        return direct;
    }
    let Some(name) = callee(node, source) else {
        return direct;
    };
    let Some(method) = name.strip_prefix("self.") else {
        return direct;
    };
    let Some(helper) = ancestors(node)
        .find(|n| n.kind() == "class_definition")
        .and_then(|c| c.child_by_field_name("body"))
        .and_then(|b| {
            named_children(b)
                .into_iter()
                .map(unwrap_decorated)
                .find(|d| {
                    d.kind() == "function_definition"
                        && d.child_by_field_name("name").map(|n| text(n, source)) == Some(method)
                })
        })
    else {
        return direct;
    };
    let params: Vec<String> = parameters(helper, source)
        .into_iter()
        .map(|p| p.name)
        .collect();
    let args: Vec<String> = npuprof_syntax::positional(node)
        .into_iter()
        .map(|a| string_literals(a, source).join("/"))
        .collect();
    let Some(returned) = helper
        .child_by_field_name("body")
        .map(descendants)
        .and_then(|d| d.into_iter().find(|n| n.kind() == "return_statement"))
    else {
        return direct;
    };
    let mut out = Vec::new();
    for leaf in descendants(returned) {
        match leaf.kind() {
            "string" => out.push(string_text(leaf, source)),
            "identifier" => {
                if let Some(i) = params.iter().position(|p| p == text(leaf, source))
                    && let Some(arg) = args.get(i)
                {
                    out.push(arg.clone());
                }
            }
            _ => {}
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

fn string_literals(node: Node<'_>, source: &str) -> Vec<String> {
    std::iter::once(node)
        .chain(descendants(node))
        .filter(|n| n.kind() == "string")
        .map(|n| string_text(n, source))
        .filter(|s| !s.is_empty())
        .collect()
}

/// `x` in `x = call(...)` (the call is the whole right-hand side).
fn assigned_to(call: Node<'_>, source: &str) -> Option<String> {
    let parent = call.parent()?;
    (parent.kind() == "assignment"
        && parent.child_by_field_name("right").map(|r| r.id()) == Some(call.id()))
    .then(|| parent.child_by_field_name("left"))
    .flatten()
    .map(|l| text(l, source).to_owned())
}

fn enclosing_function(node: Node<'_>, source: &str) -> String {
    let names: Vec<&str> = ancestors(node)
        .filter(|n| matches!(n.kind(), "function_definition" | "class_definition"))
        .filter_map(|n| n.child_by_field_name("name").map(|x| text(x, source)))
        .collect();
    if names.is_empty() {
        "<module>".to_owned()
    } else {
        names.into_iter().rev().collect::<Vec<_>>().join(".")
    }
}

fn ancestors(node: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    std::iter::successors(node.parent(), |n| n.parent())
}

/// A profiling toggle a script exposes, found by structure: an argparse flag or an environment
/// variable whose name mentions profiling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ScriptToggle {
    /// `parser.add_argument("--prof-x", ...)`.
    Flag {
        /// The flag without its dashes.
        name: String,
        /// 1-based line.
        line: usize,
    },
    /// `os.getenv("ENABLE_PROFILER")` / `os.environ.get(...)` / `os.environ[...]`.
    EnvVar {
        /// The variable.
        name: String,
        /// 1-based line.
        line: usize,
    },
}

/// The profiling toggles of one script.
pub fn script_toggles(tree: &Tree, source: &str) -> Vec<ScriptToggle> {
    let mentions_profiling = |s: &str| s.to_ascii_lowercase().contains("prof");
    let mut out = Vec::new();
    for node in descendants(tree.root_node()) {
        let (name, first) = match node.kind() {
            "call" => (
                callee(node, source).unwrap_or_default(),
                npuprof_syntax::positional(node).into_iter().next(),
            ),
            "subscript" => (
                node.child_by_field_name("value")
                    .and_then(|v| dotted(v, source))
                    .unwrap_or_default(),
                node.child_by_field_name("subscript"),
            ),
            _ => continue,
        };
        let Some(literal) = first
            .filter(|f| f.kind() == "string")
            .map(|f| string_text(f, source))
        else {
            continue;
        };
        if !mentions_profiling(&literal) {
            continue;
        }
        if name.ends_with("add_argument") && literal.starts_with("--") {
            out.push(ScriptToggle::Flag {
                name: literal.trim_start_matches('-').to_owned(),
                line: line(node),
            });
        } else if matches!(
            name.as_str(),
            "os.getenv" | "os.environ.get" | "os.environ" | "getenv"
        ) {
            out.push(ScriptToggle::EnvVar {
                name: literal,
                line: line(node),
            });
        }
    }
    out
}

/// The methods called on `attribute` (`self.x.start()` → `start`) anywhere in `source`.
pub fn methods_called_on(tree: &Tree, source: &str, attribute: &str) -> Vec<String> {
    let prefix = format!("{attribute}.");
    let mut out: Vec<String> = descendants(tree.root_node())
        .into_iter()
        .filter(|n| n.kind() == "call")
        .filter_map(|n| callee(n, source))
        .filter_map(|c| c.strip_prefix(&prefix).map(str::to_owned))
        .filter(|m| !m.contains('.'))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The methods a top-level class defines.
pub fn class_methods(tree: &Tree, source: &str, class: &str) -> Option<Vec<String>> {
    let def = named_children(tree.root_node())
        .into_iter()
        .map(unwrap_decorated)
        .find(|c| {
            c.kind() == "class_definition"
                && c.child_by_field_name("name").map(|n| text(n, source)) == Some(class)
        })?;
    let body = def.child_by_field_name("body")?;
    Some(
        named_children(body)
            .into_iter()
            .map(unwrap_decorated)
            .filter(|d| d.kind() == "function_definition")
            .filter_map(|d| {
                d.child_by_field_name("name")
                    .map(|n| text(n, source).to_owned())
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests;
