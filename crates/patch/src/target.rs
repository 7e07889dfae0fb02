//! Path A for any resolved target: from the requested window to the edits of every file the
//! target involves (the phase calls, the factory, a class constant, the run config), the plan
//! they give, and the warnings.
//!
//! Documented choices:
//! - A decode window value is set where it lives: the call's argument, the class constant the
//!   call passes, or the factory's default — unless another phase's call relies on the same
//!   default, in which case the value is passed at the decode call instead.
//! - A pinned prefill (the shared engine) passes `active=1, repeat=1, skip_first=0` explicitly;
//!   a model's own prefill window is kept.
//! - A phase is switched off the target's way: its call is replaced by the factory's disabled
//!   stand-in (given a no-op for every method the code calls on it), or passed `False` as the
//!   factory's enable argument.
//! - A config whose budget buys no decode forward: with the budget on auto, phase `decode` is
//!   refused and phase `both` patches prefill only (the budget is left alone: raising it would
//!   change the benchmark). An explicit budget is always honoured.

use std::cell::RefCell;
use std::collections::BTreeMap;

use npuprof_repository::config::{self, dotted};
use npuprof_repository::python::{self, Factory, Site, Span, ValueSource, WindowField};
use npuprof_repository::{BudgetRule, NotRecordedCause, PhaseOff, PrefillPolicy, Profiled, Target};
use npuprof_schedule::{Phase, PhaseSelection, Schedule, Window};
use tree_sitter::Tree;

use crate::edit::{Edit, Edits};
use crate::error::PatchError;
use crate::plan::{Plan, PlanConfig, PlanRequest, PrefillWindow};
use crate::python_edit::{add_noop_method, append_arguments, top_level_class};
use crate::text::newline;
use crate::yaml::{MaxNewTokens, YamlOptions, patch_run_config};

/// How to set the token budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TokenBudget {
    /// Raise it to the plan's minimum when lower.
    #[default]
    Auto,
    /// Set it to this value.
    Set(u64),
}

/// The requested profiling window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchRequest {
    /// The phases to profile.
    pub phases: PhaseSelection,
    /// The decode window.
    pub window: Window,
    /// The token budget policy.
    pub max_new_tokens: TokenBudget,
    /// Record module calls and shapes (`with_modules=True`, `record_shapes=True` at the
    /// factory's `profile(...)` call): a structure window for `npuprof breakdown`.
    pub modules: bool,
}

/// The edits of one file, with a line per change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// The file, relative to the repository.
    pub path: String,
    /// The edits, sorted and disjoint.
    pub edits: Edits,
    /// What each change does.
    pub changes: Vec<String>,
}

/// Everything a patch computed, before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetPatch {
    /// One entry per involved file, Python first, the run config last.
    pub files: Vec<FilePatch>,
    /// The plan as it will run with the patched files.
    pub plan: Plan,
    /// Things the user should know.
    pub warnings: Vec<String>,
}

/// A refusal, with the file it is about.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct TargetPatchError {
    /// The file the refusal is about (relative to the repository).
    pub path: String,
    /// What is wrong.
    #[source]
    pub error: PatchError,
}

/// The file texts a patch reads, by repository-relative path.
pub type Sources = BTreeMap<String, String>;

/// The files a patch of `target` reads (and may edit): the Python files, then the run config.
pub fn files(target: &Target) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(p) = target.profiled() {
        out.push(p.factory_path.clone());
        for phase in &p.phases {
            if !out.contains(&phase.path) {
                out.push(phase.path.clone());
            }
        }
    }
    out.push(target.config_path.clone());
    out
}

/// Computes the edits for `target` from the texts in `sources` (see [`files`]).
pub fn patch_target(
    target: &Target,
    sources: &Sources,
    request: &PatchRequest,
) -> Result<TargetPatch, TargetPatchError> {
    let refuse = |path: &str, message: String| TargetPatchError {
        path: path.to_owned(),
        error: PatchError::Refused(message),
    };
    let profiled = target
        .profiled()
        .ok_or_else(|| refuse(&target.config_path, manual_refusal(target)))?;
    let mut warnings = Vec::new();
    let phases = effective_phases(target, profiled, request, &mut warnings)?;
    let mut files = Files::new(sources);
    let facts = Facts::read(profiled, &files)?;

    for phase in Phase::ALL {
        let Some(site) = facts.site(phase) else {
            // Every phase but mm_encode is expected of every target; mm_encode only when asked.
            let expected = phase != Phase::MmEncode || phases == PhaseSelection::MmEncode;
            if phases.includes(phase) && expected {
                return Err(refuse(
                    &profiled.factory_path,
                    format!(
                        "no {} profiler call was found (`npuprof route --model {} --yaml {}` shows what the target holds)",
                        phase.name(),
                        target.model,
                        target.yaml
                    ),
                ));
            }
            continue;
        };
        let path = facts.path(phase);
        let on = phases.includes(phase);
        // A phase the user left out is switched off; one this run can never record (a PD
        // role, a prefill benchmark) is left as it is.
        let requested = request.phases.includes(phase);
        match (phase, on) {
            (_, false) if requested => {}
            (_, false) => switch_off(profiled, &facts, phase, &mut files)?,
            (Phase::MmEncode | Phase::Prefill, true) => {
                require_enabled(profiled, &facts.factory, site, path)?;
                if profiled.shape.prefill == PrefillPolicy::Pinned {
                    pin_prefill(&facts, site, path, &mut files)?;
                }
            }
            (Phase::Decode, true) => {
                require_enabled(profiled, &facts.factory, site, path)?;
                set_decode(&facts, site, path, request.window, &mut files)?;
            }
        }
    }

    if request.modules {
        trace_modules(&facts, &mut files)?;
    }
    let keys = &profiled.shape.config;
    let yaml = sources
        .get(&target.config_path)
        .ok_or_else(|| refuse(&target.config_path, "not read".to_owned()))?;
    let before = plan_of(profiled, &facts, phases, request.window, None);
    let max_new_tokens = match request.max_new_tokens {
        TokenBudget::Set(n) => MaxNewTokens::Exactly(n),
        TokenBudget::Auto if !phases.includes(Phase::Decode) => MaxNewTokens::Keep,
        TokenBudget::Auto => match before.min_max_new_tokens {
            Some(min) => MaxNewTokens::AtLeast(min),
            None => {
                warnings.push(
                    "repeat=0: the decode window never closes by itself; the token budget is left as is"
                        .to_owned(),
                );
                MaxNewTokens::Keep
            }
        },
    };
    let yaml_patch = patch_run_config(
        yaml,
        &YamlOptions {
            switch: &keys.switch,
            budget: &keys.budget,
            max_new_tokens,
        },
    )
    .map_err(|error| TargetPatchError {
        path: target.config_path.clone(),
        error,
    })?;
    let patched_yaml = yaml_patch.edits.apply(yaml);
    let patched_config = config::read(&patched_yaml, keys).map_err(|e| TargetPatchError {
        path: target.config_path.clone(),
        error: PatchError::Internal(e.to_string()),
    })?;
    let plan = plan_of(
        profiled,
        &facts,
        phases,
        request.window,
        Some(&patched_config),
    );
    if phases.includes(Phase::Decode)
        && plan
            .phases
            .iter()
            .any(|p| p.phase == Phase::Decode && !p.closes_cleanly)
    {
        warnings.push(format!(
            "with {} {} the decode window does not close cleanly (needs at least {})",
            dotted(&keys.budget),
            patched_config.effective_budget,
            plan.min_max_new_tokens
                .map_or_else(|| "a finite repeat".to_owned(), |m| m.to_string())
        ));
    }
    if phases.includes(Phase::Decode) && profiled.budget.rule == BudgetRule::DataDependent {
        warnings.push(format!(
            "the decode budget is {}; EOS or rejected drafts may end the run sooner or later, so \
             the decode window is not guaranteed to close as planned",
            profiled.budget.describe()
        ));
    }
    let mut out = files.finish()?;
    out.push(FilePatch {
        path: target.config_path.clone(),
        edits: yaml_patch.edits,
        changes: yaml_patch.changes,
    });
    Ok(TargetPatch {
        files: out,
        plan,
        warnings,
    })
}

fn manual_refusal(target: &Target) -> String {
    match &target.how {
        npuprof_repository::How::Manual(m) => format!(
            "model `{}` has no profiler switch npuprof can set (family {}): {}",
            target.model,
            target.family.letter(),
            m.instruction
        ),
        npuprof_repository::How::Settable(_) => String::new(),
    }
}

/// The phases that will really be patched on, after the target's impossibilities.
fn effective_phases(
    target: &Target,
    profiled: &Profiled,
    request: &PatchRequest,
    warnings: &mut Vec<String>,
) -> Result<PhaseSelection, TargetPatchError> {
    let explicit_budget = matches!(request.max_new_tokens, TokenBudget::Set(_));
    let never = |phase: Phase| {
        profiled
            .never_recorded
            .iter()
            .find(|n| n.phase == phase && !(explicit_budget && n.cause == NotRecordedCause::Budget))
            .map(|n| n.why.clone())
    };
    let has = |phase: Phase| profiled.phase(phase).is_some();
    let present: Vec<&str> = profiled.phases.iter().map(|p| p.phase.name()).collect();
    // One phase asked for that the target does not have: refused, naming the file that holds
    // the target's phase calls (not the factory's, which every model shares).
    if let [asked] = request.phases.phases().as_slice()
        && !has(*asked)
    {
        return Err(TargetPatchError {
            path: profiled
                .phases
                .first()
                .map_or_else(|| profiled.factory_path.clone(), |p| p.path.clone()),
            error: PatchError::Refused(format!(
                "{} has no {} profiler call (its phases: {}); pass --phase with one of them, or both",
                target.model,
                asked.name(),
                present.join(", ")
            )),
        });
    }
    let mut keep = Vec::new();
    // "both" is every phase the target has (kimi_k3 has decode alone since upstream dropped its
    // prefill profiler).
    for phase in request.phases.phases().into_iter().filter(|p| has(*p)) {
        match never(phase) {
            Some(why) => warnings.push(format!("{} will not be captured: {why}", phase.name())),
            None => keep.push(phase),
        }
    }
    match keep.as_slice() {
        [] => Err(TargetPatchError {
            path: target.config_path.clone(),
            error: PatchError::Refused(format!(
                "{} cannot be captured with this config: {}; choose another config{}",
                request.phases.name(),
                request
                    .phases
                    .phases()
                    .into_iter()
                    .filter(|p| has(*p))
                    .filter_map(never)
                    .collect::<Vec<_>>()
                    .join("; "),
                if profiled
                    .never_recorded
                    .iter()
                    .any(|n| n.cause == NotRecordedCause::Budget)
                {
                    " or pass --max-new-tokens N"
                } else {
                    ""
                }
            )),
        }),
        [one] => Ok(PhaseSelection::only(*one)),
        [Phase::MmEncode, Phase::Prefill] => {
            warnings.push(
                "mm_encode will not be captured either: without decode npuprof profiles prefill alone"
                    .to_owned(),
            );
            Ok(PhaseSelection::Prefill)
        }
        _ => Ok(PhaseSelection::Both),
    }
}

/// The factory and the phase calls, rediscovered on the exact texts being patched.
struct Facts {
    factory_path: String,
    factory: Factory,
    sites: Vec<(Phase, String, Site)>,
}

impl Facts {
    fn read(profiled: &Profiled, files: &Files<'_>) -> Result<Self, TargetPatchError> {
        let (source, tree) = files.parsed(&profiled.factory_path)?;
        let factory = python::factories(&tree, source)
            .factories
            .into_iter()
            .rfind(|f| f.name == profiled.factory.name && f.class == profiled.factory.class)
            .ok_or_else(|| TargetPatchError {
                path: profiled.factory_path.clone(),
                error: PatchError::Refused(format!(
                    "the profiler factory {} is no longer in the file",
                    profiled.factory.name
                )),
            })?;
        let mut sites = Vec::new();
        for phase in &profiled.phases {
            let (source, tree) = files.parsed(&phase.path)?;
            let found = python::sites(&tree, source, std::slice::from_ref(&factory))
                .into_iter()
                .find(|s| s.phase == phase.phase);
            if let Some(site) = found {
                sites.push((phase.phase, phase.path.clone(), site));
            }
        }
        Ok(Self {
            factory_path: profiled.factory_path.clone(),
            factory,
            sites,
        })
    }

    fn site(&self, phase: Phase) -> Option<&Site> {
        self.sites
            .iter()
            .find(|(p, _, _)| *p == phase)
            .map(|(_, _, s)| s)
    }

    fn path(&self, phase: Phase) -> &str {
        self.sites
            .iter()
            .find(|(p, _, _)| *p == phase)
            .map_or("", |(_, path, _)| path.as_str())
    }

    /// Whether a call other than `phase`'s takes `field` from the factory's default.
    fn default_shared(&self, phase: Phase, field: WindowField) -> bool {
        self.sites
            .iter()
            .any(|(p, _, s)| *p != phase && matches!(s.source(field), ValueSource::Default { .. }))
    }
}

/// The planned edits of every Python file, by path, and each file's syntax tree (parsed once).
struct Files<'s> {
    sources: &'s Sources,
    edits: BTreeMap<String, (Vec<Edit>, Vec<String>)>,
    trees: RefCell<BTreeMap<String, Tree>>,
}

impl<'s> Files<'s> {
    fn new(sources: &'s Sources) -> Self {
        Self {
            sources,
            edits: BTreeMap::new(),
            trees: RefCell::new(BTreeMap::new()),
        }
    }

    fn text(&self, path: &str) -> Result<&'s str, TargetPatchError> {
        self.sources
            .get(path)
            .map(String::as_str)
            .ok_or_else(|| TargetPatchError {
                path: path.to_owned(),
                error: PatchError::Internal("the file was not read".to_owned()),
            })
    }

    /// The file's text and tree (a cheap copy of the one parse of it).
    fn parsed(&self, path: &str) -> Result<(&'s str, Tree), TargetPatchError> {
        let source = self.text(path)?;
        if let Some(tree) = self.trees.borrow().get(path) {
            return Ok((source, tree.clone()));
        }
        let tree =
            crate::syntax::parse_valid(source, &tree_sitter_python::LANGUAGE.into(), "Python")
                .map_err(|error| TargetPatchError {
                    path: path.to_owned(),
                    error,
                })?;
        self.trees
            .borrow_mut()
            .insert(path.to_owned(), tree.clone());
        Ok((source, tree))
    }

    /// Records `edit` unless it changes nothing.
    fn push(&mut self, path: &str, edit: Edit, change: String) {
        let unchanged = self
            .sources
            .get(path)
            .and_then(|s| s.get(edit.range.clone()))
            == Some(edit.replacement.as_str());
        if unchanged {
            return;
        }
        let entry = self.edits.entry(path.to_owned()).or_default();
        // The same edit asked twice (a stand-in method two phases need) is made once; two
        // insertions at one place are one insertion of both texts, in order.
        if let Some(same) = entry.0.iter_mut().find(|e| e.range == edit.range) {
            if same.replacement == edit.replacement {
                return;
            }
            if edit.range.is_empty() {
                same.replacement.push_str(&edit.replacement);
                entry.1.push(change);
                return;
            }
        }
        entry.0.push(edit);
        entry.1.push(change);
    }

    /// Every Python file's edits, checked: sorted, disjoint, and the result still parses.
    fn finish(self) -> Result<Vec<FilePatch>, TargetPatchError> {
        let mut out = Vec::new();
        for (path, (edits, changes)) in self.edits {
            let source = self.sources.get(&path).map_or("", String::as_str);
            let wrap = |error| TargetPatchError {
                path: path.clone(),
                error,
            };
            let edits = Edits::new(source, edits).map_err(|e| wrap(e.into()))?;
            let patched = edits.apply(source);
            crate::syntax::parse_valid(&patched, &tree_sitter_python::LANGUAGE.into(), "Python")
                .map_err(|e| {
                    wrap(PatchError::Internal(format!(
                        "the patched Python does not parse: {e}"
                    )))
                })?;
            out.push(FilePatch {
                path,
                edits,
                changes,
            });
        }
        Ok(out)
    }
}

/// A phase that should run must not have been switched off by its enable argument.
fn require_enabled(
    profiled: &Profiled,
    factory: &Factory,
    site: &Site,
    path: &str,
) -> Result<(), TargetPatchError> {
    let off = factory
        .enable_parameter
        .as_deref()
        .and_then(|p| site.argument(p))
        .is_some_and(|a| a.text == "False");
    if off && profiled.shape.phase_off == PhaseOff::DisableArgument {
        return Err(TargetPatchError {
            path: path.to_owned(),
            error: PatchError::Refused(format!(
                "the {} profiler call at line {} passes `False` to switch it off (an earlier npuprof patch?); run `npuprof revert` first",
                site.phase.name(),
                site.call.line
            )),
        });
    }
    Ok(())
}

fn call_node<'t>(tree: &'t Tree, site: &Site) -> Option<tree_sitter::Node<'t>> {
    call_at(tree, &site.call)
}

/// The call node spanning exactly `span`.
fn call_at<'t>(tree: &'t Tree, span: &Span) -> Option<tree_sitter::Node<'t>> {
    let mut node = tree
        .root_node()
        .descendant_for_byte_range(span.start, span.end)?;
    while node.kind() != "call" || node.byte_range() != (span.start..span.end) {
        node = node.parent()?;
    }
    Some(node)
}

/// The structure window's tracer: the factory's `profile(...)` call gets `with_modules=True`
/// and `record_shapes=True` (a value it passes is replaced, a keyword it lacks appended).
fn trace_modules(facts: &Facts, files: &mut Files<'_>) -> Result<(), TargetPatchError> {
    let path = facts.factory_path.as_str();
    let internal = |what: String| TargetPatchError {
        path: path.to_owned(),
        error: PatchError::Internal(what),
    };
    let call = facts
        .factory
        .profile
        .clone()
        .ok_or_else(|| internal(format!("no profile(...) call in {}", facts.factory.name)))?;
    let mut missing = Vec::new();
    for key in ["with_modules", "record_shapes"] {
        match call.tracer.iter().find(|(k, _)| *k == key) {
            Some((_, value)) => files.push(
                path,
                Edit::replace(value.start..value.end, "True"),
                format!("{key}=True at line {} (the structure window)", value.line),
            ),
            None => missing.push(format!("{key}=True")),
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let (source, tree) = files.parsed(path)?;
    let edit = call_at(&tree, &call.call)
        .and_then(|node| append_arguments(source, node, &missing, newline(source)))
        .ok_or_else(|| internal(format!("the profile call at line {} moved", call.call.line)))?;
    files.push(
        path,
        edit,
        format!(
            "{} passed to the profiler at line {} (the structure window)",
            missing.join(", "),
            call.call.line
        ),
    );
    Ok(())
}

/// Passes `args` at the call of `site` (appended in its layout).
fn append(
    files: &mut Files<'_>,
    path: &str,
    site: &Site,
    args: &[String],
    change: String,
) -> Result<(), TargetPatchError> {
    if args.is_empty() {
        return Ok(());
    }
    if site.shared {
        return Err(TargetPatchError {
            path: path.to_owned(),
            error: PatchError::Refused(format!(
                "the call at line {} builds the profiler of every phase, so {} passed there would \
                 reach every phase; set it in the {} phase's kwargs entry by hand",
                site.call.line,
                args.join(", "),
                site.phase.name()
            )),
        });
    }
    let (source, tree) = files.parsed(path)?;
    let edit = call_node(&tree, site)
        .and_then(|call| append_arguments(source, call, args, newline(source)))
        .ok_or_else(|| TargetPatchError {
            path: path.to_owned(),
            error: PatchError::Internal(format!("the call at line {} moved", site.call.line)),
        })?;
    files.push(path, edit, change);
    Ok(())
}

/// The prefill call passes `active=1, repeat=1, skip_first=0`.
fn pin_prefill(
    facts: &Facts,
    site: &Site,
    path: &str,
    files: &mut Files<'_>,
) -> Result<(), TargetPatchError> {
    let mut missing = Vec::new();
    for (field, wanted) in [
        (WindowField::Active, 1),
        (WindowField::Repeat, 1),
        (WindowField::SkipFirst, 0),
    ] {
        let source = site.source(field);
        match source {
            ValueSource::Argument { span } => files.push(
                path,
                replace(span, wanted),
                format!(
                    "{} call: {}={} → {}={wanted}",
                    site.phase.name(),
                    field.name(),
                    span.text,
                    field.name()
                ),
            ),
            ValueSource::Default { .. } | ValueSource::ClassConstant { .. } => {
                if source.value(field) != Some(wanted) {
                    missing.push(format!("{}={wanted}", parameter(facts, field)?));
                }
            }
            _ if source.value(field) == Some(wanted) => {}
            other => return Err(not_settable(path, site, field, other)),
        }
    }
    let change = format!("{} call: added {}", site.phase.name(), missing.join(", "));
    append(files, path, site, &missing, change)
}

/// Sets the decode `active` (and `skip_first` when asked) where each value lives.
fn set_decode(
    facts: &Facts,
    site: &Site,
    path: &str,
    window: Window,
    files: &mut Files<'_>,
) -> Result<(), TargetPatchError> {
    let wanted = [
        (WindowField::Active, Some(window.active())),
        (WindowField::SkipFirst, window.skip_first()),
    ];
    let mut passed = Vec::new();
    for (field, value) in wanted {
        let Some(value) = value else { continue };
        let value = i64::try_from(value).unwrap_or(i64::MAX);
        let name = field.name();
        match site.source(field) {
            ValueSource::Argument { span } => files.push(
                path,
                replace(span, value),
                format!("decode call: {name}={} → {name}={value}", span.text),
            ),
            ValueSource::ClassConstant {
                name: constant,
                span,
            } => files.push(
                path,
                replace(span, value),
                format!(
                    "decode window: class constant {constant} = {} → {value}",
                    span.text
                ),
            ),
            ValueSource::Default { span } if !facts.default_shared(Phase::Decode, field) => {
                files.push(
                    &facts.factory_path,
                    replace(span, value),
                    format!(
                        "decode window: {} default {name}={} → {name}={value}",
                        facts.factory.name, span.text
                    ),
                );
            }
            ValueSource::Default { .. } => {
                passed.push(format!("{}={value}", parameter(facts, field)?));
            }
            other => return Err(not_settable(path, site, field, other)),
        }
    }
    let change = format!("decode call: added {}", passed.join(", "));
    append(files, path, site, &passed, change)
}

/// Switches `phase` off the target's way.
fn switch_off(
    profiled: &Profiled,
    facts: &Facts,
    phase: Phase,
    files: &mut Files<'_>,
) -> Result<(), TargetPatchError> {
    let Some(site) = facts.site(phase) else {
        return Ok(());
    };
    let path = facts.path(phase).to_owned();
    let refuse = |message: String| TargetPatchError {
        path: path.clone(),
        error: PatchError::Refused(message),
    };
    match profiled.shape.phase_off {
        PhaseOff::DisableArgument => {
            let param = facts.factory.enable_parameter.as_deref().ok_or_else(|| {
                refuse(format!(
                    "{} has no enable parameter to pass False to",
                    facts.factory.name
                ))
            })?;
            match site.argument(param) {
                Some(span) => files.push(
                    &path,
                    Edit::replace(span.start..span.end, "False"),
                    format!(
                        "{} call: {param}={} → {param}=False (phase off)",
                        phase.name(),
                        span.text
                    ),
                ),
                None => append(
                    files,
                    &path,
                    site,
                    &[format!("{param}=False")],
                    format!("{} call: added {param}=False (phase off)", phase.name()),
                )?,
            }
        }
        PhaseOff::ReplaceCallWithDisabled if site.shared => {
            guard_phase(profiled, facts, site, &path, files)?;
        }
        PhaseOff::ReplaceCallWithDisabled => {
            let disabled = facts.factory.disabled.clone().ok_or_else(|| {
                refuse(format!(
                    "{} returns no disabled stand-in class to put in its place",
                    facts.factory.name
                ))
            })?;
            files.push(
                &path,
                Edit::replace(site.call.start..site.call.end, format!("{disabled}()")),
                format!(
                    "{} branch: {}(...) replaced by {disabled}() (phase off)",
                    phase.name(),
                    site.factory
                ),
            );
            if let Some(attribute) = &site.assigned_to {
                give_stand_in_methods(profiled, &path, attribute, &disabled, files)?;
            }
        }
    }
    Ok(())
}

/// Switches one phase of a call shared by every phase off: a guard before the call's statement
/// puts the disabled stand-in in place for that phase, records the phase in the function's state
/// attribute (so the phase order stays as the manager expects) and returns, so no profiler is
/// made or started for it; `step()` and `stop()` land on the stand-in.
fn guard_phase(
    profiled: &Profiled,
    facts: &Facts,
    site: &Site,
    path: &str,
    files: &mut Files<'_>,
) -> Result<(), TargetPatchError> {
    let refuse = |message: String| TargetPatchError {
        path: path.to_owned(),
        error: PatchError::Refused(message),
    };
    let (Some(selector), Some(attribute), Some(disabled)) = (
        site.selector.as_ref(),
        site.assigned_to.as_ref(),
        facts.factory.disabled.as_ref(),
    ) else {
        return Err(refuse(format!(
            "the {} phase shares its profiler call (line {}) with the other phases and npuprof \
             found no stand-in class and assigned attribute to switch it off with",
            site.phase.name(),
            site.call.line
        )));
    };
    let Some(state) = selector.state_attribute.as_ref() else {
        return Err(refuse(format!(
            "the {} phase shares its profiler call (line {}) and the function keeps no state \
             attribute of the phase, so a guard could change the phase order; switch it off by hand",
            site.phase.name(),
            site.call.line
        )));
    };
    let source = files.text(path)?;
    let nl = newline(source);
    let indent = &selector.indent;
    let inner = format!("{indent}    ");
    let guard = format!(
        "{indent}if {param} == {member}:  # npuprof: {phase} not profiled{nl}\
         {inner}{attribute} = {disabled}(){nl}\
         {inner}{state} = {param}{nl}\
         {inner}return{nl}",
        param = selector.parameter,
        member = selector.member,
        phase = site.phase.name(),
    );
    let at = selector.statement_line_start;
    files.push(
        path,
        Edit::replace(at..at, guard),
        format!(
            "{} phase: a guard before line {} keeps {disabled}() in place (phase off)",
            site.phase.name(),
            site.call.line
        ),
    );
    give_stand_in_methods(profiled, path, attribute, disabled, files)
}

/// Gives the stand-in class a no-op for each method the code calls on `attribute`.
fn give_stand_in_methods(
    profiled: &Profiled,
    site_path: &str,
    attribute: &str,
    disabled: &str,
    files: &mut Files<'_>,
) -> Result<(), TargetPatchError> {
    let (site_source, site_tree) = files.parsed(site_path)?;
    let used = python::methods_called_on(&site_tree, site_source, attribute);
    let factory_path = profiled.factory_path.clone();
    let (source, tree) = files.parsed(&factory_path)?;
    let defined =
        python::class_methods(&tree, source, disabled).ok_or_else(|| TargetPatchError {
            path: factory_path.clone(),
            error: PatchError::NotFound {
                what: format!("class {disabled} (needed to switch a phase off)"),
                found: "no top-level class of that name".to_owned(),
            },
        })?;
    let class = top_level_class(tree.root_node(), source, disabled);
    for method in used.iter().filter(|m| !defined.contains(m)) {
        let edit = class
            .and_then(|c| add_noop_method(source, c, method, newline(source)))
            .ok_or_else(|| TargetPatchError {
                path: factory_path.clone(),
                error: PatchError::Internal(format!("cannot add {method}() to {disabled}")),
            })?;
        files.push(
            &factory_path,
            edit,
            format!("{disabled}: added a no-op {method}() (the code calls {attribute}.{method}())"),
        );
    }
    Ok(())
}

fn replace(span: &Span, value: i64) -> Edit {
    Edit::replace(span.start..span.end, value.to_string())
}

/// The factory parameter that fills `field`.
fn parameter(facts: &Facts, field: WindowField) -> Result<String, TargetPatchError> {
    let factory = &facts.factory;
    match factory.schedule_value(field) {
        Some(python::FactoryValue::Parameter { name }) => Ok(name.clone()),
        _ => Err(TargetPatchError {
            path: facts.factory_path.clone(),
            error: PatchError::Refused(format!(
                "{} does not take `{}` as a parameter",
                factory.name,
                field.name()
            )),
        }),
    }
}

fn not_settable(
    path: &str,
    site: &Site,
    field: WindowField,
    source: &ValueSource,
) -> TargetPatchError {
    let what = match source {
        ValueSource::Fixed { span } => format!(
            "is fixed to {} inside the factory (line {})",
            span.text, span.line
        ),
        ValueSource::Unresolved { text } => {
            format!("is `{text}`, an expression npuprof does not evaluate")
        }
        _ => "is left to torch_npu's default".to_owned(),
    };
    TargetPatchError {
        path: path.to_owned(),
        error: PatchError::Refused(format!(
            "the {} window's `{}` {what} (call at line {}); set it by hand or make it a parameter",
            site.phase.name(),
            field.name(),
            site.call.line
        )),
    }
}

/// The schedule a site gives (with `window` applied to decode).
fn site_schedule(site: &Site, window: Option<Window>) -> Schedule {
    let value =
        |field: WindowField, default: i64| site.source(field).value(field).unwrap_or(default);
    let active = window.map_or_else(
        || value(WindowField::Active, 1),
        |w| i64::try_from(w.active()).unwrap_or(i64::MAX),
    );
    let skip_first = window.and_then(Window::skip_first).map_or_else(
        || value(WindowField::SkipFirst, 0),
        |s| i64::try_from(s).unwrap_or(i64::MAX),
    );
    Schedule::clamped(
        value(WindowField::Wait, 0),
        value(WindowField::Warmup, 0),
        active,
        value(WindowField::Repeat, 1),
        skip_first,
        0,
    )
}

fn plan_of(
    profiled: &Profiled,
    facts: &Facts,
    phases: PhaseSelection,
    window: Window,
    patched: Option<&config::RunConfig>,
) -> Plan {
    let config = patched.unwrap_or(&profiled.config);
    plan_request(
        profiled,
        facts.site(Phase::MmEncode),
        facts.site(Phase::Prefill),
        facts.site(Phase::Decode),
        phases,
        Some(window),
        config,
    )
    .map_or_else(
        || Plan::new(&fallback_request(phases, window)),
        |r| Plan::new(&r),
    )
}

fn fallback_request(phases: PhaseSelection, window: Window) -> PlanRequest {
    PlanRequest {
        phases,
        prefill: PrefillWindow::ENGINE,
        mm_encode: None,
        decode: Schedule::clamped(
            0,
            0,
            i64::try_from(window.active()).unwrap_or(i64::MAX),
            1,
            0,
            0,
        ),
        decode_step_calls: None,
        config: None,
    }
}

/// The plan request for a target: its phase windows (the decode one with `window` applied)
/// and its config's budget by its rule.
pub fn plan_request(
    profiled: &Profiled,
    mm_encode: Option<&Site>,
    prefill: Option<&Site>,
    decode: Option<&Site>,
    phases: PhaseSelection,
    window: Option<Window>,
    config: &config::RunConfig,
) -> Option<PlanRequest> {
    let decode = decode?;
    let prefill_site = prefill;
    let prefill = match (profiled.shape.prefill, prefill) {
        (PrefillPolicy::Pinned, _) | (_, None) => PrefillWindow::ENGINE,
        (PrefillPolicy::AsWritten, Some(site)) => PrefillWindow {
            schedule: site_schedule(site, None),
            step_calls: 1,
            pinned: false,
        },
    };
    let mm_encode = mm_encode.map(|site| match profiled.shape.prefill {
        PrefillPolicy::Pinned => PrefillWindow::ENGINE,
        PrefillPolicy::AsWritten => PrefillWindow {
            schedule: site_schedule(site, None),
            step_calls: 1,
            pinned: false,
        },
    });
    let budget = npuprof_repository::Budget {
        rule: profiled.budget.rule,
        next_n: config.next_n,
    };
    let mut never_recorded = profiled.never_recorded.clone();
    never_recorded.retain(|n| n.cause != NotRecordedCause::Budget);
    never_recorded.extend(npuprof_repository::no_decode_budget(config, budget));
    // "both" is every phase the target has: without a prefill call, decode alone.
    let phases = match (phases, prefill_site) {
        (PhaseSelection::Both, None) => PhaseSelection::Decode,
        (phases, _) => phases,
    };
    Some(PlanRequest {
        phases,
        prefill,
        mm_encode,
        decode: site_schedule(decode, window),
        decode_step_calls: None,
        config: Some(PlanConfig {
            budget,
            max_new_tokens: config.budget,
            effective_max_new_tokens: config.effective_budget,
            never_recorded,
        }),
    })
}
