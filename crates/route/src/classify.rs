//! From per-file facts to the decision: which definitions create a profiler, which call sites
//! are live, what is dead, which mechanisms exist, and the route.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

use crate::mechanisms::{MechanismsFound, env_mechanism};
use crate::python::{Call, KeyUse, Returned};
use crate::report::{ChainLink, DeadPath, Evidence, Mechanism, Route, Warning, Wrapper};
use crate::resolve::{DefId, Index, ReceiverType, Receivers, TORCH_PROFILE};
use crate::shell::PROFILER_ENV_VARS;
use crate::walk::{self, PyFile, ShellFile};

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
fn api_kind(canonical: &str) -> Option<&'static str> {
    let rest = canonical.strip_prefix("torch_npu.profiler.")?;
    Some(match rest {
        "profile" => "profile_call",
        "schedule" => "schedule",
        "_ExperimentalConfig" => "experimental_config",
        "tensorboard_trace_handler" => "trace_handler",
        r if r.starts_with("dynamic_profile") => "dynamic_profile",
        _ => "profiler_api",
    })
}

fn evidence(path: &str, line: usize, kind: &'static str, text: &str) -> Evidence {
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
    let mut warnings = Vec::new();

    // Dead: profiler-making definitions whose name is referenced nowhere.
    let referenced: HashSet<&str> = files
        .iter()
        .flat_map(|file| file.facts.referenced.iter().map(String::as_str))
        .collect();
    let mut dead: Vec<DefId> = index
        .makers
        .iter()
        .copied()
        .filter(|&id| !referenced.contains(index.def(id).name.as_str()))
        .filter(|&id| is_dead_candidate(&index, &receivers, id))
        .collect();
    dead.sort_unstable();
    let dead_owner = |f: usize, func: Option<usize>| {
        dead.iter()
            .find(|&&(df, dd)| df == f && index.within(f, func, dd))
            .copied()
    };
    let mut dead_uses: BTreeMap<DefId, Vec<Evidence>> = BTreeMap::new();

    let mut live = Vec::new();
    let mut mechanisms = MechanismsFound::default();

    // The wrapper: a profiler-making class with set_status and step, constructed and called.
    let mut wrappers: Vec<DefId> = index.makers.iter().copied().collect();
    wrappers.retain(|&id| index.is_wrapper_class(id));
    wrappers.sort_unstable();
    let mut chain_starts: Vec<(usize, usize)> = Vec::new();
    let mut wired: BTreeSet<DefId> = BTreeSet::new();

    for (f, file) in files.iter().enumerate() {
        let path = file.path.as_str();
        for (framework, import) in &file.facts.framework_imports {
            let id = if *framework == "vllm" {
                "vllm-torch-profiler"
            } else {
                "sglang-torch-profiler"
            };
            mechanisms.add(id, path, String::new());
            live.push(evidence(
                path,
                import.line,
                "framework_import",
                &import.text,
            ));
        }
        for import in &file.facts.profiler_imports {
            live.push(evidence(path, import.line, "profiler_import", &import.text));
        }
        for (c, call) in file.facts.calls.iter().enumerate() {
            if let Some(kind) = api_kind(call.canonical()) {
                let ev = evidence(path, call.line, kind, &file.facts.line_text(call.line));
                match dead_owner(f, call.func) {
                    Some(owner) => dead_uses.entry(owner).or_default().push(ev),
                    None => {
                        if kind == "dynamic_profile" {
                            mechanisms.add("torch-npu-dynamic-profile", path, String::new());
                        }
                        live.push(ev);
                    }
                }
                continue;
            }
            if matches!(call.name.as_str(), "start_profile" | "stop_profile")
                && call.receiver.is_some()
            {
                live.push(evidence(
                    path,
                    call.line,
                    "profile_control",
                    &file.facts.line_text(call.line),
                ));
            }
            let targets = index.resolve(f, call, &receivers);
            // Constructions of the wrapper class outside it.
            if call.receiver.is_none()
                && let Some(&class) = targets.iter().find(|t| wrappers.contains(t))
                && !(class.0 == f && index.within(f, call.func, class.1))
            {
                live.push(evidence(
                    path,
                    call.line,
                    "manager",
                    &file.facts.line_text(call.line),
                ));
                chain_starts.push((f, c));
            }
            match receivers.type_of(&index, f, call) {
                Some(ReceiverType::Class(class))
                    if wrappers.contains(&class)
                        && (call.name == markers().phase_method || call.name == "step")
                        && !(class.0 == f && index.within(f, call.func, class.1)) =>
                {
                    live.push(evidence(
                        path,
                        call.line,
                        "live_site",
                        &file.facts.line_text(call.line),
                    ));
                    chain_starts.push((f, c));
                    if call.name == markers().phase_method {
                        wired.insert(class);
                    }
                }
                Some(ReceiverType::Torch)
                    if call.name == "step"
                        && call.in_loop
                        && dead_owner(f, call.func).is_none() =>
                {
                    live.push(evidence(
                        path,
                        call.line,
                        "loop_step",
                        &file.facts.line_text(call.line),
                    ));
                    // Where the stepped profiler comes from, then the step itself.
                    let source = file
                        .facts
                        .assigns
                        .iter()
                        .find(|a| Some(&a.target) == call.receiver.as_ref());
                    if let Some(assign) = source
                        && !chain_starts.contains(&(f, assign.call))
                    {
                        chain_starts.push((f, assign.call));
                    }
                    chain_starts.push((f, c));
                    mechanisms.add("torch-npu-profile-loop", path, String::new());
                }
                _ => {}
            }
        }
        for key in &file.facts.keys {
            let value = key.value.as_str();
            let switch = &markers().switch_key;
            let is_switch_flag = value
                .strip_prefix("--")
                .is_some_and(|f| f.replace('-', "_") == *switch);
            let kind = match (key.usage, value) {
                (KeyUse::Lookup, v) if v == switch => "switch",
                (KeyUse::Flag, _) if is_switch_flag => "switch",
                (KeyUse::Lookup, v) if PROFILER_ENV_VARS.contains(&v) => {
                    mechanisms.add(env_mechanism(v), path, String::new());
                    "env_var"
                }
                (KeyUse::Lookup, "torch_profiler_dir") | (KeyUse::Flag, "--profiler-config") => {
                    mechanisms.add("vllm-torch-profiler", path, String::new());
                    "profiler_config"
                }
                (KeyUse::Flag, v) if v == "--profile" || v.starts_with("--profile-") => {
                    mechanisms.add("mindspeed-profile", path, v.to_owned());
                    "cli_flag"
                }
                _ => continue,
            };
            live.push(evidence(path, key.line, kind, &key.text));
        }
    }
    for script in shell {
        for assignment in &script.assignments {
            let ev = evidence(&script.path, assignment.line, "env_var", &assignment.text);
            mechanisms.add(env_mechanism(assignment.name), &script.path, String::new());
            live.push(ev);
        }
    }
    // MindSpeed is switched by `--profile` itself; other `--profile-*` flags alone are not it.
    if mechanisms
        .0
        .get("mindspeed-profile")
        .is_some_and(|(_, knobs)| !knobs.contains("--profile"))
    {
        mechanisms.0.remove("mindspeed-profile");
    }

    // The wrapper that is wired (prefer one); its definitions as evidence.
    let wrapper_id = wired
        .iter()
        .next()
        .copied()
        .or_else(|| wrappers.first().copied());
    let wrapper = wrapper_id.map(|id| wrapper_of(&index, id));
    if let (Some(id), Some(w)) = (wrapper_id, &wrapper) {
        let text = index.facts(id.0).line_text(w.class_line);
        live.push(evidence(&w.path, w.class_line, "wrapper", &text));
        if let Some(factory) = factory_of(&index, id) {
            let def = index.def(factory);
            let text = index.facts(factory.0).line_text(def.line);
            live.push(evidence(
                &files[factory.0].path,
                def.line,
                "wrapper_factory",
                &text,
            ));
        }
        if wired.is_empty() {
            warnings.push(Warning {
                path: w.path.clone(),
                message: format!(
                    "{} is defined but its set_status is never called: the profiler is not wired into a loop",
                    w.class
                ),
            });
        }
    }
    if !wired.is_empty()
        && let Some(w) = &wrapper
    {
        mechanisms.add("recipes-profiler-manager", &w.path, String::new());
    }

    let route = if !wired.is_empty() {
        Route::Framework
    } else if !mechanisms.0.is_empty() {
        Route::FrameworkOther
    } else {
        Route::Inject
    };

    let call_chain = call_chain(&index, &receivers, &chain_starts);
    let dead_paths = dead
        .iter()
        .map(|&id| {
            let def = index.def(id);
            DeadPath {
                path: files[id.0].path.clone(),
                line: def.line,
                function: def.qualname.clone(),
                reason: "creates a torch_npu profiler but is never called or referenced".to_owned(),
                uses: {
                    let mut uses = dead_uses.remove(&id).unwrap_or_default();
                    uses.sort();
                    uses
                },
            }
        })
        .collect();

    live.sort();
    live.dedup();
    let reason = reason(route, wrapper.as_ref(), &mechanisms, &live);
    Classified {
        route,
        reason,
        wrapper,
        mechanisms: mechanisms.into_list(),
        evidence: live,
        call_chain,
        dead_paths,
        warnings,
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
            let ids: Vec<&str> = mechanisms.0.keys().copied().collect();
            format!("built-in profiling mechanism found: {}", ids.join(", "))
        }
        _ => {
            let uses = live
                .iter()
                .filter(|e| {
                    matches!(
                        e.kind,
                        "profile_call" | "trace_handler" | "schedule" | "profiler_import"
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

/// The names a scan recognises by role (from the target definitions).
fn markers() -> &'static npuprof_target::definition::Markers {
    &npuprof_target::Definitions::builtin().markers
}
