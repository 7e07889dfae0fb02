//! Name resolution across files: definitions that create a torch_npu profiler ("makers"),
//! what a call may reach, and the type of the receivers profilers are assigned to.

use std::collections::{HashMap, HashSet};

use crate::python::{Call, Def, PyFacts};
use crate::report::Site;
use crate::walk::PyFile;

/// The torch_npu call that creates a profiler.
pub(crate) const TORCH_PROFILE: &str = "torch_npu.profiler.profile";

/// A definition: (file index, def index).
pub(crate) type DefId = (usize, usize);

/// The type a profiler receiver (`self.profiler`, `prof`) was assigned.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReceiverType {
    /// A torch_npu profiler (directly, or returned by a factory function).
    Torch,
    /// An instance of a profiler-making class in the repository.
    Class(DefId),
}

pub(crate) struct Index<'a> {
    pub(crate) files: &'a [PyFile],
    /// Top-level functions and classes by name.
    top_level: HashMap<&'a str, Vec<DefId>>,
    pub(crate) makers: HashSet<DefId>,
}

impl<'a> Index<'a> {
    pub(crate) fn new(files: &'a [PyFile]) -> Self {
        let mut top_level: HashMap<&str, Vec<DefId>> = HashMap::new();
        for (f, file) in files.iter().enumerate() {
            for (d, def) in file.facts.defs.iter().enumerate() {
                if def.parent.is_none() {
                    top_level.entry(def.name.as_str()).or_default().push((f, d));
                }
            }
        }
        let mut index = Index {
            files,
            top_level,
            makers: HashSet::new(),
        };
        index.find_makers();
        index
    }

    pub(crate) fn facts(&self, f: usize) -> &'a PyFacts {
        &self.files[f].facts
    }

    pub(crate) fn def(&self, (f, d): DefId) -> &'a Def {
        &self.files[f].facts.defs[d]
    }

    /// The class a definition is a method of (the nearest enclosing class).
    pub(crate) fn class_of(&self, f: usize, mut d: Option<usize>) -> Option<usize> {
        while let Some(i) = d {
            let def = &self.facts(f).defs[i];
            if def.is_class {
                return Some(i);
            }
            d = def.parent;
        }
        None
    }

    pub(crate) fn methods(&self, (f, class): DefId, name: &str) -> Vec<DefId> {
        let defs = &self.facts(f).defs;
        (0..defs.len())
            .filter(|&d| defs[d].parent == Some(class) && !defs[d].is_class && defs[d].name == name)
            .map(|d| (f, d))
            .collect()
    }

    /// Definitions a call may reach, by name: plain calls reach top-level functions and classes,
    /// `self.x()` reaches methods of the enclosing class, `obj.x()` reaches methods of the class
    /// `obj` was assigned an instance of.
    pub(crate) fn resolve(&self, f: usize, call: &Call, receivers: &Receivers) -> Vec<DefId> {
        match call.receiver.as_deref() {
            None => self
                .top_level
                .get(call.name.as_str())
                .cloned()
                .unwrap_or_default(),
            Some("self" | "cls") => match self.class_of(f, call.func) {
                Some(class) => self.methods((f, class), &call.name),
                None => Vec::new(),
            },
            Some(_) => match receivers.type_of(self, f, call) {
                Some(ReceiverType::Class(class)) => self.methods(class, &call.name),
                _ => Vec::new(),
            },
        }
    }

    /// Definitions that create a torch_npu profiler, directly or through other definitions;
    /// a class is one when any of its methods is.
    fn find_makers(&mut self) {
        let none = Receivers::default();
        loop {
            let mut added = false;
            for (f, file) in self.files.iter().enumerate() {
                for call in &file.facts.calls {
                    let Some(d) = call.func else { continue };
                    if self.makers.contains(&(f, d)) {
                        continue;
                    }
                    let makes = call.canonical() == TORCH_PROFILE
                        || self
                            .resolve(f, call, &none)
                            .iter()
                            .any(|t| self.makers.contains(t));
                    if makes {
                        self.makers.insert((f, d));
                        added = true;
                    }
                }
                for (d, def) in file.facts.defs.iter().enumerate() {
                    if def.is_class
                        && !self.makers.contains(&(f, d))
                        && file.facts.defs.iter().enumerate().any(|(m, method)| {
                            method.parent == Some(d) && self.makers.contains(&(f, m))
                        })
                    {
                        self.makers.insert((f, d));
                        added = true;
                    }
                }
            }
            if !added {
                break;
            }
        }
    }

    pub(crate) fn is_wrapper_class(&self, id: DefId) -> bool {
        self.def(id).is_class
            && self.makers.contains(&id)
            && !self
                .methods(
                    id,
                    &npuprof_repository::Definitions::builtin()
                        .markers
                        .phase_method,
                )
                .is_empty()
            && !self.methods(id, "step").is_empty()
    }

    pub(crate) fn site(&self, f: usize, func: Option<usize>, line: usize) -> Site {
        Site {
            path: self.files[f].path.clone(),
            line,
            function: func.map_or_else(
                || "<module>".to_owned(),
                |d| self.facts(f).defs[d].qualname.clone(),
            ),
        }
    }

    pub(crate) fn def_site(&self, id: DefId) -> Site {
        let def = self.def(id);
        Site {
            path: self.files[id.0].path.clone(),
            line: def.line,
            function: def.qualname.clone(),
        }
    }

    /// Whether definition `d` of file `f` is, or is nested in, `ancestor`.
    pub(crate) fn within(&self, f: usize, d: Option<usize>, ancestor: usize) -> bool {
        let mut cur = d;
        while let Some(i) = cur {
            if i == ancestor {
                return true;
            }
            cur = self.facts(f).defs[i].parent;
        }
        false
    }
}

/// Assignment targets holding a profiler: `(file, class scope for self.x, target) → type`.
#[derive(Default)]
pub(crate) struct Receivers(HashMap<(usize, Option<usize>, String), ReceiverType>);

impl Receivers {
    pub(crate) fn new(index: &Index) -> Self {
        let mut map = HashMap::new();
        let none = Receivers::default();
        for (f, file) in index.files.iter().enumerate() {
            for assign in &file.facts.assigns {
                let call = &file.facts.calls[assign.call];
                let ty = if call.canonical() == TORCH_PROFILE {
                    Some(ReceiverType::Torch)
                } else {
                    let targets = index.resolve(f, call, &none);
                    let maker = targets.into_iter().find(|t| index.makers.contains(t));
                    maker.map(|t| {
                        if index.def(t).is_class {
                            ReceiverType::Class(t)
                        } else {
                            ReceiverType::Torch
                        }
                    })
                };
                if let Some(ty) = ty {
                    let key = (
                        f,
                        scope(index, f, call.func, &assign.target),
                        assign.target.clone(),
                    );
                    // A class-typed assignment wins over a torch one for the same target.
                    map.entry(key)
                        .and_modify(|old| {
                            if matches!(ty, ReceiverType::Class(_)) {
                                *old = ty;
                            }
                        })
                        .or_insert(ty);
                }
            }
        }
        Receivers(map)
    }

    pub(crate) fn type_of(&self, index: &Index, f: usize, call: &Call) -> Option<ReceiverType> {
        let receiver = call.receiver.as_ref()?;
        let key = (f, scope(index, f, call.func, receiver), receiver.clone());
        self.0.get(&key).copied()
    }
}

/// `self.x` targets are scoped to their class; other names to their file.
pub(crate) fn scope(index: &Index, f: usize, func: Option<usize>, target: &str) -> Option<usize> {
    if target.starts_with("self.") {
        index.class_of(f, func)
    } else {
        None
    }
}
