//! From per-file facts to the decision: which definitions create a profiler, which call sites
//! are live, what is dead, which mechanisms exist, and the route.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

use crate::mechanisms::{MechanismsFound, env_mechanism};
use crate::python::{Call, KeyUse, Returned};
use crate::report::{
    ChainLink, DeadPath, Evidence, EvidenceKind, Mechanism, MechanismId, Route, Warning, Wrapper,
};
use crate::resolve::{DefId, Index, ReceiverType, Receivers, TORCH_PROFILE};
use crate::shell::profiler_env_var;
use crate::walk::{self, PyFile, ShellFile};
use npuprof_repository::engine::EngineDefinition;

/// What the classification found.
pub(crate) struct Classified {
    pub route: Route,
    pub reason: String,
    pub wrapper: Option<Wrapper>,
    pub mechanisms: Vec<Mechanism>,
    pub evidence: Vec<Evidence>,
    pub call_chain: Vec<ChainLink>,
    pub dead_paths: Vec<DeadPath>,
    pub warnings: Vec<Warning>,
}

/// The evidence kind of a torch_npu.profiler call, by its canonical name.
fn api_kind(canonical: &str) -> Option<EvidenceKind> {
    let rest = canonical.strip_prefix("torch_npu.profiler.")?;
    Some(match rest {
        "profile" => EvidenceKind::ProfileCall,
        "schedule" => EvidenceKind::Schedule,
        "_ExperimentalConfig" => EvidenceKind::ExperimentalConfig,
        "tensorboard_trace_handler" => EvidenceKind::TraceHandler,
        r if r.starts_with("dynamic_profile") => EvidenceKind::DynamicProfile,
        _ => EvidenceKind::ProfilerApi,
    })
}

fn evidence(path: &str, line: usize, kind: EvidenceKind, text: &str) -> Evidence {
    Evidence {
        path: path.to_owned(),
        line,
        kind,
        text: text.to_owned(),
    }
}

/// Names of profiler-making definitions that the prefilter would not catch (no profiler word
/// in the name): a block left out of a parse may call them (e.g. step one in a loop).
pub(crate) fn maker_names_outside_prefilter(files: &[PyFile]) -> Vec<String> {
    let index = Index::new(files);
    let mut names: Vec<String> = index
        .makers
        .iter()
        .map(|&id| index.def(id).name.as_str())
        .filter(|name| !(name.starts_with("__") && name.ends_with("__")))
        .filter(|name| !walk::passes_prefilter(name.as_bytes()))
        .map(str::to_owned)
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Names of would-be dead profiler code that no parsed file references and that the
/// prefilter would not catch: their callers may sit in files that were not parsed.
pub(crate) fn unreferenced_names_outside_prefilter(files: &[PyFile]) -> Vec<String> {
    let index = Index::new(files);
    let receivers = Receivers::new(&index);
    let referenced: HashSet<&str> = files
        .iter()
        .flat_map(|file| file.facts.referenced.iter().map(String::as_str))
        .collect();
    let mut names: Vec<String> = index
        .makers
        .iter()
        .filter(|&&id| is_dead_candidate(&index, &receivers, id))
        .map(|&id| index.def(id).name.as_str())
        .filter(|name| !referenced.contains(name) && !walk::passes_prefilter(name.as_bytes()))
        .map(str::to_owned)
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Classifies the repository from the facts of its files.
pub(crate) fn classify(files: &[PyFile], shell: &[ShellFile]) -> Classified {
    let index = Index::new(files);
    let receivers = Receivers::new(&index);
    let mut scan = Scan::new(files, &index, &receivers);
    for f in 0..files.len() {
        scan.imports(f);
        scan.calls(f);
        scan.keys(f);
    }
    scan.shell(shell);
    scan.finish()
}

/// The classification as it reads the files: the evidence and mechanisms found so far.
struct Scan<'a> {
    files: &'a [PyFile],
    index: &'a Index<'a>,
    receivers: &'a Receivers,
    /// Profiler-making definitions whose name is referenced nowhere.
    dead: Vec<DefId>,
    /// What each dead definition does (evidence that does not count as live).
    dead_uses: BTreeMap<DefId, Vec<Evidence>>,
    live: Vec<Evidence>,
    mechanisms: MechanismsFound,
    /// Profiler-making classes with set_status and step.
    wrappers: Vec<DefId>,
    /// Where the call chains start: (file, call).
    chain_starts: Vec<(usize, usize)>,
    /// Wrapper classes whose set_status is called from outside.
    wired: BTreeSet<DefId>,
    warnings: Vec<Warning>,
}

impl<'a> Scan<'a> {
    fn new(files: &'a [PyFile], index: &'a Index<'a>, receivers: &'a Receivers) -> Self {
        let referenced: HashSet<&str> = files
            .iter()
            .flat_map(|file| file.facts.referenced.iter().map(String::as_str))
            .collect();
        let mut dead: Vec<DefId> = index
            .makers
            .iter()
            .copied()
            .filter(|&id| !referenced.contains(index.def(id).name.as_str()))
            .filter(|&id| is_dead_candidate(index, receivers, id))
            .collect();
        dead.sort_unstable();
        let mut wrappers: Vec<DefId> = index.makers.iter().copied().collect();
        wrappers.retain(|&id| index.is_wrapper_class(id));
        wrappers.sort_unstable();
        Self {
            files,
            index,
            receivers,
            dead,
            dead_uses: BTreeMap::new(),
            live: Vec::new(),
            mechanisms: MechanismsFound::default(),
            wrappers,
            chain_starts: Vec::new(),
            wired: BTreeSet::new(),
            warnings: Vec::new(),
        }
    }

    /// The dead definition that `func` of file `f` lies in, if any.
    fn dead_owner(&self, f: usize, func: Option<usize>) -> Option<DefId> {
        self.dead
            .iter()
            .find(|&&(df, dd)| df == f && self.index.within(f, func, dd))
            .copied()
    }

    /// Evidence of file `f` at `line`, with the line's text.
    fn at(&self, f: usize, line: usize, kind: EvidenceKind) -> Evidence {
        let file = &self.files[f];
        evidence(&file.path, line, kind, &file.facts.line_text(line))
    }

    /// Framework and torch_npu.profiler imports.
    fn imports(&mut self, f: usize) {
        let file = &self.files[f];
        let path = file.path.as_str();
        for (framework, import) in &file.facts.framework_imports {
            let id = EngineDefinition::all()
                .iter()
                .find(|d| d.detect.import_modules.iter().any(|m| m == framework))
                .and_then(MechanismId::of_engine)
                .unwrap_or(MechanismId::VllmTorchProfiler);
            self.mechanisms.add(id, path, String::new());
            let kind = EvidenceKind::FrameworkImport;
            self.live
                .push(evidence(path, import.line, kind, &import.text));
        }
        for import in &file.facts.profiler_imports {
            let kind = EvidenceKind::ProfilerImport;
            self.live
                .push(evidence(path, import.line, kind, &import.text));
        }
    }

    /// The calls of file `f`: profiler API calls, profile control, the wrapper's construction
    /// and live sites, torch_npu profilers stepped in a loop.
    fn calls(&mut self, f: usize) {
        for (c, call) in self.files[f].facts.calls.iter().enumerate() {
            if let Some(kind) = api_kind(call.canonical()) {
                self.api_call(f, call, kind);
                continue;
            }
            if matches!(call.name.as_str(), "start_profile" | "stop_profile")
                && call.receiver.is_some()
            {
                self.live
                    .push(self.at(f, call.line, EvidenceKind::ProfileControl));
            }
            self.wrapper_construction(f, c, call);
            self.stepped_receiver(f, c, call);
        }
    }

    /// A torch_npu.profiler API call: live, or a use of the dead definition it lies in.
    fn api_call(&mut self, f: usize, call: &Call, kind: EvidenceKind) {
        let ev = self.at(f, call.line, kind);
        match self.dead_owner(f, call.func) {
            Some(owner) => self.dead_uses.entry(owner).or_default().push(ev),
            None => {
                if kind == EvidenceKind::DynamicProfile {
                    let path = &self.files[f].path;
                    let id = MechanismId::TorchNpuDynamicProfile;
                    self.mechanisms.add(id, path, String::new());
                }
                self.live.push(ev);
            }
        }
    }

    /// A construction of the wrapper class outside it.
    fn wrapper_construction(&mut self, f: usize, c: usize, call: &Call) {
        let targets = self.index.resolve(f, call, self.receivers);
        if call.receiver.is_none()
            && let Some(&class) = targets.iter().find(|t| self.wrappers.contains(t))
            && !(class.0 == f && self.index.within(f, call.func, class.1))
        {
            self.live.push(self.at(f, call.line, EvidenceKind::Manager));
            self.chain_starts.push((f, c));
        }
    }

    /// `set_status`/`step` on a wrapper from outside it, or `step()` of a torch_npu profiler
    /// inside a loop.
    fn stepped_receiver(&mut self, f: usize, c: usize, call: &Call) {
        let phase_method = &markers().phase_method;
        match self.receivers.type_of(self.index, f, call) {
            Some(ReceiverType::Class(class))
                if self.wrappers.contains(&class)
                    && (call.name == *phase_method || call.name == "step")
                    && !(class.0 == f && self.index.within(f, call.func, class.1)) =>
            {
                self.live
                    .push(self.at(f, call.line, EvidenceKind::LiveSite));
                self.chain_starts.push((f, c));
                if call.name == *phase_method {
                    self.wired.insert(class);
                }
            }
            Some(ReceiverType::Torch)
                if call.name == "step"
                    && call.in_loop
                    && self.dead_owner(f, call.func).is_none() =>
            {
                self.live
                    .push(self.at(f, call.line, EvidenceKind::LoopStep));
                // Where the stepped profiler comes from, then the step itself.
                let source = self.files[f]
                    .facts
                    .assigns
                    .iter()
                    .find(|a| Some(&a.target) == call.receiver.as_ref());
                if let Some(assign) = source
                    && !self.chain_starts.contains(&(f, assign.call))
                {
                    self.chain_starts.push((f, assign.call));
                }
                self.chain_starts.push((f, c));
                let path = &self.files[f].path;
                let id = MechanismId::TorchNpuProfileLoop;
                self.mechanisms.add(id, path, String::new());
            }
            _ => {}
        }
    }

    /// Keys of file `f`: the profiler switch, profiler environment variables, built-in
    /// profilers' config options and launch flags.
    fn keys(&mut self, f: usize) {
        let file = &self.files[f];
        let path = file.path.as_str();
        let switch = &markers().switch_key;
        for key in &file.facts.keys {
            let value = key.value.as_str();
            let is_switch_flag = value
                .strip_prefix("--")
                .is_some_and(|f| f.replace('-', "_") == *switch);
            let kind = match (key.usage, value) {
                (KeyUse::Lookup, v) if v == switch => EvidenceKind::Switch,
                (KeyUse::Flag, _) if is_switch_flag => EvidenceKind::Switch,
                (KeyUse::Lookup, v) if profiler_env_var(v).is_some() => {
                    self.mechanisms.add(env_mechanism(v), path, String::new());
                    EvidenceKind::EnvVar
                }
                (KeyUse::Lookup, v) | (KeyUse::Flag, v) if is_profiler_config(key.usage, v) => {
                    let id = MechanismId::VllmTorchProfiler;
                    self.mechanisms.add(id, path, String::new());
                    EvidenceKind::ProfilerConfig
                }
                (KeyUse::Flag, v) if v == "--profile" || v.starts_with("--profile-") => {
                    let id = MechanismId::MindspeedProfile;
                    self.mechanisms.add(id, path, v.to_owned());
                    EvidenceKind::CliFlag
                }
                _ => continue,
            };
            self.live.push(evidence(path, key.line, kind, &key.text));
        }
    }

    /// Profiler environment variables set in shell scripts.
    fn shell(&mut self, shell: &[ShellFile]) {
        for script in shell {
            for assignment in &script.assignments {
                let kind = EvidenceKind::EnvVar;
                let ev = evidence(&script.path, assignment.line, kind, &assignment.text);
                let id = env_mechanism(assignment.name);
                self.mechanisms.add(id, &script.path, String::new());
                self.live.push(ev);
            }
        }
    }

    /// The wrapper that is wired (preferring one), with its definitions as evidence.
    fn wrapper(&mut self) -> Option<Wrapper> {
        let id = self
            .wired
            .iter()
            .next()
            .copied()
            .or_else(|| self.wrappers.first().copied())?;
        let w = wrapper_of(self.index, id);
        let text = self.index.facts(id.0).line_text(w.class_line);
        let kind = EvidenceKind::Wrapper;
        self.live.push(evidence(&w.path, w.class_line, kind, &text));
        if let Some(factory) = factory_of(self.index, id) {
            let line = self.index.def(factory).line;
            self.live
                .push(self.at(factory.0, line, EvidenceKind::WrapperFactory));
        }
        if self.wired.is_empty() {
            self.warnings.push(Warning {
                path: w.path.clone(),
                message: format!(
                    "{} is defined but its set_status is never called: the profiler is not wired into a loop",
                    w.class
                ),
            });
        } else {
            let id = MechanismId::RecipesProfilerManager;
            self.mechanisms.add(id, &w.path, String::new());
        }
        Some(w)
    }

    /// The decision and its report.
    fn finish(mut self) -> Classified {
        // MindSpeed is switched by `--profile` itself; other `--profile-*` flags alone are not it.
        if self
            .mechanisms
            .0
            .get(&MechanismId::MindspeedProfile)
            .is_some_and(|(_, knobs)| !knobs.contains("--profile"))
        {
            self.mechanisms.0.remove(&MechanismId::MindspeedProfile);
        }
        let wrapper = self.wrapper();
        let route = if !self.wired.is_empty() {
            Route::Framework
        } else if !self.mechanisms.0.is_empty() {
            Route::FrameworkOther
        } else {
            Route::Inject
        };
        let call_chain = call_chain(self.index, self.receivers, &self.chain_starts);
        let dead_paths = self.dead_paths();
        self.live.sort();
        self.live.dedup();
        let reason = reason(route, wrapper.as_ref(), &self.mechanisms, &self.live);
        Classified {
            route,
            reason,
            wrapper,
            mechanisms: self.mechanisms.into_list(),
            evidence: self.live,
            call_chain,
            dead_paths,
            warnings: self.warnings,
        }
    }

    /// Each dead definition with what it does.
    fn dead_paths(&mut self) -> Vec<DeadPath> {
        let dead = std::mem::take(&mut self.dead);
        dead.into_iter()
            .map(|id| {
                let def = self.index.def(id);
                let mut uses = self.dead_uses.remove(&id).unwrap_or_default();
                uses.sort();
                DeadPath {
                    path: self.files[id.0].path.clone(),
                    line: def.line,
                    function: def.qualname.clone(),
                    reason: "creates a torch_npu profiler but is never called or referenced"
                        .to_owned(),
                    uses,
                }
            })
            .collect()
    }
}

/// Profiler code that is reported dead when nothing references its name: a factory function
/// (returns a profiler or the result of another factory) or a profiler-making class, that does
/// not drive a profiler itself, and is not a dunder method. Other unused profiler code (a
/// one-off capture helper) stays in the evidence as scattered use.
fn is_dead_candidate(index: &Index, receivers: &Receivers, id: DefId) -> bool {
    let def = index.def(id);
    let dunder = def.name.starts_with("__") && def.name.ends_with("__");
    !dunder && (def.is_class || is_factory(index, id)) && !drives_profiler(index, receivers, id)
}

/// Whether a function returns a profiler: `return <maker call>`, or `return x` where `x` was
/// assigned a maker call in the same function.
fn is_factory(index: &Index, (f, d): DefId) -> bool {
    let facts = index.facts(f);
    let none = Receivers::default();
    let makes = |c: usize| {
        let call = &facts.calls[c];
        call.canonical() == TORCH_PROFILE
            || index
                .resolve(f, call, &none)
                .iter()
                .any(|t| index.makers.contains(t))
    };
    facts
        .returns
        .iter()
        .filter(|r| r.func == Some(d))
        .any(|r| match &r.value {
            Returned::Call(c) => makes(*c),
            Returned::Name(name) => facts
                .assigns
                .iter()
                .any(|a| &a.target == name && facts.calls[a.call].func == Some(d) && makes(a.call)),
        })
}

/// Whether a function or class steps or starts a profiler itself (then it is a loop, an engine
/// or an entry point, possibly called from outside the repository, rather than an unused
/// factory; an unused wrapper class gets its own warning).
fn drives_profiler(index: &Index, receivers: &Receivers, (f, d): DefId) -> bool {
    index.facts(f).calls.iter().any(|call| {
        index.within(f, call.func, d)
            && (matches!(call.name.as_str(), "step" | "start")
                || call.name == markers().phase_method)
            && receivers.type_of(index, f, call).is_some()
    })
}

fn factory_of(index: &Index, class: DefId) -> Option<DefId> {
    let receivers = Receivers::default();
    let (f, _) = class;
    let set_status = index.methods(class, &markers().phase_method);
    index.facts(f).calls.iter().find_map(|call| {
        let func = call.func?;
        if !set_status.contains(&(f, func)) {
            return None;
        }
        index
            .resolve(f, call, &receivers)
            .into_iter()
            .find(|t| !index.def(*t).is_class && index.makers.contains(t))
    })
}

fn wrapper_of(index: &Index, class: DefId) -> Wrapper {
    let def = index.def(class);
    let factory = factory_of(index, class);
    Wrapper {
        path: index.files[class.0].path.clone(),
        class: def.qualname.clone(),
        class_line: def.line,
        factory: factory.map(|id| index.def(id).qualname.clone()),
        factory_line: factory.map(|id| index.def(id).line),
    }
}

/// Links from the live sites down to torch_npu: each site to the definition it calls, then
/// breadth-first through the calls of those definitions that reach a profiler.
fn call_chain(index: &Index, receivers: &Receivers, starts: &[(usize, usize)]) -> Vec<ChainLink> {
    let mut links = Vec::new();
    let mut queue = VecDeque::new();
    let mut seen = HashSet::new();
    let mut follow =
        |links: &mut Vec<ChainLink>, f: usize, call: &Call, queue: &mut VecDeque<DefId>| {
            let from = index.site(f, call.func, call.line);
            if call.canonical() == TORCH_PROFILE {
                links.push(ChainLink {
                    from,
                    call: call.callee.clone(),
                    to: None,
                });
                return;
            }
            let targets = index.resolve(f, call, receivers);
            if let Some(&target) = targets.iter().find(|t| index.makers.contains(t)) {
                let to = index.def_site(target);
                links.push(ChainLink {
                    from,
                    call: call.callee.clone(),
                    to: Some(to),
                });
                if seen.insert(target) {
                    queue.push_back(target);
                }
            } else if let Some(&target) = targets.first() {
                links.push(ChainLink {
                    from,
                    call: call.callee.clone(),
                    to: Some(index.def_site(target)),
                });
            } else {
                links.push(ChainLink {
                    from,
                    call: call.callee.clone(),
                    to: None,
                });
            }
        };
    for &(f, c) in starts {
        follow(&mut links, f, &index.facts(f).calls[c], &mut queue);
    }
    while let Some((f, d)) = queue.pop_front() {
        if index.def((f, d)).is_class {
            continue;
        }
        for call in index.facts(f).calls.iter().filter(|c| c.func == Some(d)) {
            let reaches = call.canonical() == TORCH_PROFILE
                || index
                    .resolve(f, call, receivers)
                    .iter()
                    .any(|t| index.makers.contains(t));
            if reaches {
                follow(&mut links, f, call, &mut queue);
            }
        }
    }
    links
}

fn reason(
    route: Route,
    wrapper: Option<&Wrapper>,
    mechanisms: &MechanismsFound,
    live: &[Evidence],
) -> String {
    match (route, wrapper) {
        (Route::Framework, Some(w)) => format!(
            "{} ({}) is constructed by the engine and its set_status/step are called on every forward",
            w.class, w.path
        ),
        (Route::FrameworkOther, _) => {
            let ids: Vec<&str> = mechanisms.0.keys().map(|id| id.as_str()).collect();
            format!("built-in profiling mechanism found: {}", ids.join(", "))
        }
        _ => {
            let uses = live
                .iter()
                .filter(|e| {
                    matches!(
                        e.kind,
                        EvidenceKind::ProfileCall
                            | EvidenceKind::TraceHandler
                            | EvidenceKind::Schedule
                            | EvidenceKind::ProfilerImport
                    )
                })
                .count();
            if uses == 0 {
                "no profiler wired into an inference loop, and no torch_npu.profiler use".to_owned()
            } else {
                format!(
                    "no profiler wired into an inference loop; {uses} scattered torch_npu.profiler use(s) only"
                )
            }
        }
    }
}

/// A serving engine's profiler-config key read in code, or its flag defined (from the
/// engine definitions).
fn is_profiler_config(usage: KeyUse, value: &str) -> bool {
    use npuprof_repository::engine::{ConfigStyle, EngineDefinition};
    EngineDefinition::all().iter().any(|d| {
        d.style(ConfigStyle::ProfilerConfig)
            .is_some_and(|s| match usage {
                KeyUse::Lookup => s.dir_key() == value,
                KeyUse::Flag => s.flag.as_deref() == Some(value),
            })
    })
}

/// The names a scan recognises by role (from the target definitions).
fn markers() -> &'static npuprof_repository::definition::Markers {
    &npuprof_repository::Definitions::builtin().markers
}
