//! A model's run configs, each read through its shape without any Python (what
//! `route --model M` lists), or, for a recipe profiled by hand that has none, its manual target.

use std::path::Path;

use crate::catalog::definitions_for;
use crate::definition::Manual;
use crate::error::TargetError;
use crate::resolve::{ConfigView, Evidence, Launch, config_view, list_configs};

/// One run config of a model.
#[derive(Debug)]
pub struct ConfigEntry {
    /// The path under the model's run-config directory.
    pub yaml: String,
    /// What it says through its shape, or why it cannot be read.
    pub view: Result<ConfigView, TargetError>,
}

/// What a model offers to profile.
#[derive(Debug)]
pub enum ModelConfigs {
    /// A recipe without run configs, profiled by hand as the definitions say.
    Manual {
        /// Its definition entry.
        manual: &'static Manual,
        /// Its launch, when the definitions name one.
        launch: Option<Launch>,
        /// Where its profiler writes, when the definitions say.
        results: Option<String>,
        /// The lines of its files that show the toggle, the launch and the results.
        evidence: Vec<Evidence>,
    },
    /// Its run configs, sorted.
    Configs(Vec<ConfigEntry>),
}

/// The run configs of `model` in `repo`; a model with neither run configs nor a manual entry
/// is [`TargetError::NoConfigs`].
pub fn model_configs(repo: &Path, model: &str) -> Result<ModelConfigs, TargetError> {
    let definitions = definitions_for(repo)?;
    let layout = &definitions.layout;
    let dir = repo.join(layout.config_dir(model));
    let model_exists = repo.join(layout.model_dir(model)).is_dir();
    if let Some(manual) = definitions
        .manual(model)
        .filter(|_| !dir.is_dir() && model_exists)
    {
        return Ok(ModelConfigs::Manual {
            manual,
            launch: crate::manual::launch(manual, ""),
            results: crate::manual::results(manual, ""),
            evidence: crate::manual::evidence(manual, |rel| {
                std::fs::read_to_string(repo.join(rel)).ok()
            }),
        });
    }
    if !dir.is_dir() {
        return Err(TargetError::NoConfigs {
            repo: repo.to_path_buf(),
            model: model.to_owned(),
            models: layout.models.clone(),
            configs: layout.configs.clone(),
            nearby: crate::nearby::near_current_dir(model).into(),
        });
    }
    let entries = list_configs(&dir)
        .into_iter()
        .map(|yaml| {
            let rel = format!("{}/{yaml}", layout.config_dir(model));
            let view = crate::resolve::read(repo, &rel).and_then(|text| {
                let value = crate::config::parse_yaml(&text)?;
                config_view(definitions, repo, model, &yaml, &text, &value, None)
            });
            ConfigEntry { yaml, view }
        })
        .collect();
    Ok(ModelConfigs::Configs(entries))
}

/// The models of the repository at `repo` whose runs execute `file` (repository-relative, `/`):
/// a run config of theirs resolves, through its shape, to a target whose profiler factory lives
/// there (every shared-engine model runs `executor/utils/profiler_context.py`). Sorted; models
/// whose configs cannot be read are left out.
pub fn models_running(repo: &Path, file: &str) -> Vec<String> {
    let Ok(definitions) = definitions_for(repo) else {
        return Vec::new();
    };
    crate::resolve::list_models(repo, &definitions.layout.models)
        .into_iter()
        .filter(|model| match model_configs(repo, model) {
            Ok(ModelConfigs::Configs(entries)) => entries.iter().any(|entry| {
                entry.view.as_ref().is_ok_and(|v| {
                    // A config of another pipeline (no switch section) runs none of it.
                    v.config.has_switch_section && v.shape.factory_files.iter().any(|f| f == file)
                })
            }),
            _ => false,
        })
        .collect()
}
