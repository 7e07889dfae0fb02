//! `route --model M`: the run configs of one model, each read as the repository-level route
//! reads it (the same [`RunConfig`] fields), and the next step for that model.

use std::path::Path;

use serde::Serialize;

use crate::next_step;
use crate::report::{Next, RunConfig};
use crate::yaml_configs;

/// Version of `route --model M --json`: 2 since its configs are the repository route's
/// [`RunConfig`]s (version 1 had its own, smaller entries).
pub const MODEL_SCHEMA_VERSION: u32 = 2;

/// One model's run configs and what to run next.
#[derive(Debug, Clone, Serialize)]
pub struct ModelRoute {
    /// Version of this JSON schema.
    pub schema_version: u32,
    /// The model.
    pub model: String,
    /// Its run configs, as `route` lists them for the whole repository, sorted by path.
    pub configs: Vec<RunConfig>,
    /// The next step: the patch preview of its one config that records decode, else the
    /// command to resolve the config you choose.
    pub next: Next,
}

/// The run configs of `model` in the repository at `root`, read as the repository-level route
/// reads them, and the next step; a model without a run-config directory is an error.
pub fn model_route(
    root: &Path,
    model: &str,
) -> Result<ModelRoute, npuprof_repository::TargetError> {
    let definitions = npuprof_repository::definitions_for(root)?;
    let config_dir = definitions.layout.config_dir(model);
    let dir = root.join(&config_dir);
    if !dir.is_dir() {
        return Err(npuprof_repository::TargetError::NoConfigs {
            repo: root.to_path_buf(),
            model: model.to_owned(),
            models: definitions.layout.models.clone(),
            configs: definitions.layout.configs.clone(),
            nearby: Vec::new().into(),
        });
    }
    let mut read: Vec<RunConfig> = npuprof_repository::list_configs(&dir)
        .into_iter()
        .filter_map(|yaml| {
            let rel = format!("{config_dir}/{yaml}");
            match npuprof_repository::read_source(root, &rel) {
                Ok(text) => yaml_configs::read(root, &rel, &text).map(|r| r.config),
                // Unreadable (a FIFO, too large, not UTF-8): listed with its reason.
                Err(e) => Some(yaml_configs::unreadable(&rel, &e.to_string())),
            }
        })
        .collect();
    read.sort_by(|a, b| a.path.cmp(&b.path));
    let next = next_step::for_model(&root.display().to_string(), model, &read);
    Ok(ModelRoute {
        schema_version: MODEL_SCHEMA_VERSION,
        model: model.to_owned(),
        configs: read,
        next,
    })
}
