//! The built-in profiling mechanisms route knows, their descriptions and knobs.

use std::collections::{BTreeMap, BTreeSet};

use npuprof_repository::engine::EngineDefinition;

use crate::report::{Mechanism, MechanismId};

/// The mechanism an environment variable belongs to.
pub(crate) fn env_mechanism(var: &str) -> MechanismId {
    if crate::shell::engine_env_vars().any(|v| v == var) {
        MechanismId::VllmTorchProfiler
    } else {
        MechanismId::SglangTorchProfiler
    }
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
            // The knobs of every config style, from the engine's definition.
            let definition = EngineDefinition::vllm_ascend();
            let mut knobs: Vec<String> = Vec::new();
            for style in &definition.styles {
                for knob in crate::engine::knobs(definition, style.style) {
                    if !knobs.contains(&knob) {
                        knobs.push(knob);
                    }
                }
            }
            knobs.push(format!("offline: {}", definition.offline_control));
            return ("vLLM / vLLM-Ascend built-in torch profiler", knobs);
        }
        MechanismId::SglangTorchProfiler => (
            "SGLang built-in torch profiler",
            &[
                "SGLANG_TORCH_PROFILER_DIR=<dir> (environment, before the server starts)",
                "POST /start_profile and /stop_profile on the server",
            ],
        ),
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
