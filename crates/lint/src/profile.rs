//! Recognising `profile(...)` calls and reading their configuration: experimental config,
//! schedule, trace handler and the high-volume switches.

use npuprof_schedule::Schedule;
use npuprof_syntax::semantic::resolve::{Frame, Int, Resolution, Trail};
use npuprof_syntax::{SemanticModel, callee, dotted, has_splat, kwarg, positional, text};
use tree_sitter::Node;

use crate::python::last_segment;
use crate::warmup::Warmups;

/// Which profiler API a call uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `torch_npu.profiler.profile`.
    TorchNpu,
    /// `torch.profiler.profile`.
    Torch,
}

/// The file being linted: its text, what its imported names refer to, and its names' values.
pub(crate) struct FileContext<'t, 's> {
    /// The source text.
    pub(crate) source: &'s str,
    /// The file saves results without a trace handler (`export_chrome_trace(`, see
    /// [`crate::torch_npu::TRACE_HANDLER_ALTERNATIVES`]).
    pub(crate) exports_results: bool,
    /// What the file's names refer to (bindings, scopes, calls, imports) and their values.
    pub(crate) semantic: SemanticModel<'t, 's>,
    /// What runs before the windows (NPL021), indexed on first use.
    pub(crate) warmups: Warmups<'t>,
}

impl FileContext<'_, '_> {
    /// The qualified path of a call's callee, when its first segment was imported.
    pub(crate) fn qualified_callee(&self, call: Node<'_>) -> Option<String> {
        self.semantic.imports().resolve(&callee(call, self.source)?)
    }

    /// Whether `node` is a `profile(...)` call of torch_npu or torch, and which.
    pub(crate) fn profile_flavor(&self, node: Node<'_>) -> Option<Flavor> {
        if node.kind() != "call" {
            return None;
        }
        let path = self.qualified_callee(node)?;
        if !path.ends_with(".profile") {
            return None;
        }
        if path.starts_with("torch_npu.profiler.") {
            Some(Flavor::TorchNpu)
        } else if path.starts_with("torch.profiler.") {
            Some(Flavor::Torch)
        } else {
            None
        }
    }

    /// Whether `node` is a call of the profiler's `schedule(...)`.
    fn is_schedule_call(&self, node: Node<'_>) -> bool {
        node.kind() == "call"
            && self.qualified_callee(node).is_some_and(|p| {
                p.ends_with(".schedule")
                    && (p.starts_with("torch_npu.profiler") || p.starts_with("torch.profiler"))
            })
    }
}

/// A schedule whose arguments were all resolved, and how.
#[derive(Debug, Clone)]
pub(crate) struct ScheduleValues {
    /// The clamped schedule.
    pub(crate) schedule: Schedule,
    /// How its arguments were found.
    pub(crate) trail: Trail,
}

/// What is known about a schedule argument.
#[derive(Debug, Clone)]
pub(crate) enum ScheduleArg<'t> {
    /// No `schedule=` argument (or `schedule=None`).
    Absent,
    /// A `schedule(...)` call (or a name bound to one).
    Known {
        /// The `schedule(...)` call.
        call: Node<'t>,
        /// The resolved values, or why they could not be resolved.
        values: Result<ScheduleValues, String>,
        /// `repeat` alone, when known (0 when omitted).
        repeat: Option<i64>,
    },
    /// Something npuprof cannot follow (a helper's return value, ...), and why.
    Opaque(String),
}

/// The experimental config argument, as far as it can be followed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ExperimentalArg<'t> {
    /// No `experimental_config=` (or `=None`).
    Absent,
    /// An `_ExperimentalConfig(...)` call.
    Call(Node<'t>),
    /// Something npuprof cannot follow.
    Opaque,
}

/// One `profile(...)` call and its configuration.
#[derive(Debug, Clone)]
pub(crate) struct ProfileCall<'t> {
    /// The call node.
    pub(crate) node: Node<'t>,
    /// torch_npu or torch.
    pub(crate) flavor: Flavor,
    /// The call passes `*args`/`**kwargs`: absent arguments may be there.
    pub(crate) opaque: bool,
    /// `experimental_config=`.
    pub(crate) experimental: ExperimentalArg<'t>,
    /// `schedule=`.
    pub(crate) schedule: ScheduleArg<'t>,
    /// Whether `on_trace_ready=` is given (and not `None`).
    pub(crate) has_trace_handler: bool,
}

impl<'t> ProfileCall<'t> {
    /// Reads a profile call's configuration, its parameters bound by `frame` (the call of the
    /// function that builds the profiler, when there is one).
    pub(crate) fn read(
        ctx: &FileContext<'t, '_>,
        node: Node<'t>,
        flavor: Flavor,
        frame: Option<Frame<'t>>,
    ) -> Self {
        let source = ctx.source;
        let given = |name: &str| kwarg(node, name, source).filter(|v| v.kind() != "none");
        let experimental = match given("experimental_config") {
            None => ExperimentalArg::Absent,
            Some(value) => {
                let (value, _) = ctx.semantic.expression(value, frame);
                if value.kind() == "none" {
                    ExperimentalArg::Absent
                } else if value.kind() == "call"
                    && callee(value, source)
                        .is_some_and(|c| last_segment(&c).ends_with("ExperimentalConfig"))
                {
                    ExperimentalArg::Call(value)
                } else {
                    ExperimentalArg::Opaque
                }
            }
        };
        let schedule = match given("schedule") {
            None => ScheduleArg::Absent,
            Some(given) => {
                let (value, inner) = ctx.semantic.expression(given, frame);
                if value.kind() == "none" {
                    ScheduleArg::Absent
                } else if ctx.is_schedule_call(value) {
                    read_schedule(ctx, value, inner)
                } else {
                    ScheduleArg::Opaque(format!(
                        "`schedule={}` is not a `schedule(...)` call lint can follow",
                        text(given, source)
                    ))
                }
            }
        };
        Self {
            node,
            flavor,
            opaque: has_splat(node) || !positional(node).is_empty(),
            experimental,
            schedule,
            has_trace_handler: given("on_trace_ready").is_some(),
        }
    }
}

/// Reads `schedule(wait, active, warmup=0, repeat=0, skip_first=0, skip_first_wait=0)`
/// (torch_npu's positional order; `skip_first_wait` exists from torch_npu 26.1).
fn read_schedule<'t>(
    ctx: &FileContext<'t, '_>,
    call: Node<'t>,
    frame: Option<Frame<'t>>,
) -> ScheduleArg<'t> {
    let source = ctx.source;
    if has_splat(call) {
        return ScheduleArg::Known {
            call,
            values: Err("the `schedule(...)` call passes `*args`/`**kwargs`".to_owned()),
            repeat: None,
        };
    }
    let positional = positional(call);
    let arg = |name: &str, index: usize, default: Option<i64>| -> Resolution {
        match kwarg(call, name, source).or_else(|| positional.get(index).copied()) {
            Some(value) => ctx.semantic.int(value, frame).map_err(|why| {
                format!("could not resolve `{name}={}` ({why})", text(value, source))
            }),
            None => default
                .map(|value| Int {
                    value,
                    trail: Trail::default(),
                })
                .ok_or_else(|| format!("`schedule(...)` has no `{name}`")),
        }
    };
    let repeat = arg("repeat", 3, Some(0));
    let values = (|| {
        let wait = arg("wait", 0, None)?;
        let active = arg("active", 1, None)?;
        let warmup = arg("warmup", 2, Some(0))?;
        let repeat = repeat.clone()?;
        let skip_first = arg("skip_first", 4, Some(0))?;
        let skip_first_wait = arg("skip_first_wait", 5, Some(0))?;
        let mut trail = Trail::default();
        for v in [
            &wait,
            &active,
            &warmup,
            &repeat,
            &skip_first,
            &skip_first_wait,
        ] {
            trail.merge(&v.trail);
        }
        let schedule = Schedule::clamped(
            wait.value,
            warmup.value,
            active.value,
            repeat.value,
            skip_first.value,
            skip_first_wait.value,
        );
        Ok(ScheduleValues { schedule, trail })
    })();
    ScheduleArg::Known {
        call,
        values,
        repeat: repeat.ok().map(|r| r.value),
    }
}

/// The last segment of an enum-like argument of the experimental config (`Level0` for
/// `torch_npu.profiler.ProfilerLevel.Level0`), with the value node, following local names.
pub(crate) fn enum_argument<'t>(
    ctx: &FileContext<'t, '_>,
    config: Node<'t>,
    name: &str,
) -> Option<(Node<'t>, String)> {
    let value = kwarg(config, name, ctx.source)?;
    let (resolved, _) = ctx.semantic.expression(value, None);
    let dotted = dotted(resolved, ctx.source)?;
    Some((value, last_segment(&dotted).to_owned()))
}

/// Whether a keyword argument is literally `True`.
pub(crate) fn is_true(call: Node<'_>, name: &str, source: &str) -> bool {
    kwarg(call, name, source).is_some_and(|v| v.kind() == "true" || text(v, source) == "True")
}
