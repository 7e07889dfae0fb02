//! Serving-engine definitions as verify sees them: the output layout of each definition
//! (`npuprof_repository::engine`) turned into verify's [`ServingSpec`].

use npuprof_repository::engine::EngineDefinition;
use npuprof_verify::serving::{DEFAULT_SETTLE, Serving, ServingSpec};

/// The output layout of `definition`'s engine.
pub fn serving_spec(definition: &EngineDefinition) -> ServingSpec {
    ServingSpec {
        engine: definition.id.clone(),
        run_dir_suffix: definition.results.run_dir_suffix.clone(),
        frontend_trace_suffix: definition.results.frontend_trace_suffix.clone(),
        frontend_off_key: definition.results.frontend_off_key.clone(),
        worker_name_shape: definition.worker_name_shape.clone(),
        settle: DEFAULT_SETTLE,
    }
}

/// How verify judges serving output: as `engine`'s when one is named (`--engine`), else as
/// any definition's whose shape the output has.
pub fn verify_serving(engine: Option<&EngineDefinition>) -> Serving {
    match engine {
        Some(definition) => Serving::Forced(serving_spec(definition)),
        None => Serving::Auto(EngineDefinition::all().iter().map(serving_spec).collect()),
    }
}
