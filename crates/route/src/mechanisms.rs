//! The built-in profiling mechanisms route knows, their descriptions and knobs.

use std::collections::{BTreeMap, BTreeSet};

use npuprof_repository::engine::EngineDefinition;

use crate::report::{Mechanism, MechanismId};

/// The mechanism an environment variable belongs to (the engine whose definition reads it).
pub(crate) fn env_mechanism(var: &str) -> MechanismId {
    crate::shell::engine_env_vars()
        .find(|(v, _)| *v == var)
        .and_then(|(_, d)| MechanismId::of_engine(d))
        .unwrap_or(MechanismId::VllmTorchProfiler)
}

/// The definitions whose built-in profiler is mechanism `id`.
pub(crate) fn engines_of(id: MechanismId) -> impl Iterator<Item = &'static EngineDefinition> {
    EngineDefinition::all()
        .iter()
        .filter(move |d| MechanismId::of_engine(d) == Some(id))
}

/// Mechanisms found: id → (paths, extra knobs).
#[derive(Default)]
pub(crate) struct MechanismsFound(
    pub(crate) BTreeMap<MechanismId, (BTreeSet<String>, BTreeSet<String>)>,
);

impl MechanismsFound {
    pub(crate) fn add(&mut self, id: MechanismId, path: &str, knob: String) {
        let (paths, knobs) = self.0.entry(id).or_default();
        paths.insert(path.to_owned());
        if !knob.is_empty() {
            knobs.insert(knob);
        }
    }

    pub(crate) fn into_list(self) -> Vec<Mechanism> {
        self.0
            .into_iter()
            .map(|(id, (paths, found_knobs))| {
                let (description, mut knobs) = describe(id);
                if !found_knobs.is_empty() {
                    let flags: Vec<String> = found_knobs.into_iter().collect();
                    knobs.push(format!("launch flags defined here: {}", flags.join(", ")));
                }
                Mechanism {
                    id,
                    description,
                    knobs,
                    paths: paths.into_iter().collect(),
                }
            })
            .collect()
    }
}

/// Description and standard knobs of each mechanism.
fn describe(id: MechanismId) -> (&'static str, Vec<String>) {
    let (description, knobs): (&'static str, &[&str]) = match id {
        MechanismId::RecipesProfilerManager => (
            "cann-recipes style ProfilerManager wired into the engine's forward",
            &[
                "model_config.enable_profiler: True in the run YAML",
                "scheduler_config.max_new_tokens: the decode step budget",
                "create_profiler defaults active/skip_first: the decode window (npuprof patch sets them)",
            ],
        ),
        MechanismId::VllmTorchProfiler => {
            return (
                "vLLM / vLLM-Ascend built-in torch profiler",
                engine_knobs(id),
            );
        }
        MechanismId::SglangTorchProfiler => {
            return ("SGLang built-in torch profiler", engine_knobs(id));
        }
        MechanismId::MindspeedProfile => ("MindSpeed --profile switch", &[]),
        MechanismId::TorchNpuDynamicProfile => (
            "torch_npu dynamic_profile (dp.init(<dir>) + dp.step() in the loop)",
            &[
                "<dir>/profiler_config.json, written by dp.init: edit it while the job runs to start a capture",
            ],
        ),
        MechanismId::TorchNpuProfileLoop => (
            "torch_npu.profiler.profile stepped inside a loop",
            &[
                "the schedule(...) arguments of that profile call (skip_first, warmup, active, repeat)",
            ],
        ),
    };
    (description, knobs.iter().map(|k| (*k).to_owned()).collect())
}

/// The knobs of every config style of the engines of `id`, from their definitions: which one
/// a version reads, `npuprof route` on its checkout or site-packages says.
fn engine_knobs(id: MechanismId) -> Vec<String> {
    let mut knobs: Vec<String> = Vec::new();
    for definition in engines_of(id) {
        for style in &definition.styles {
            for knob in crate::engine::knobs(definition, style.style) {
                if !knobs.contains(&knob) {
                    knobs.push(knob);
                }
            }
        }
        knobs.push(format!("offline: {}", definition.offline_control));
    }
    knobs
}
