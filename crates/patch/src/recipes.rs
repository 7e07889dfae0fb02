//! Path A for a cann-recipes repository: from the requested window to the edits of
//! `profiler_context.py` and one run config, with the plan they give and the warnings.
//!
//! Policy for configs that cannot capture decode (`max_new_tokens: 1`, prefill-only): with
//! `max_new_tokens` on auto, phase `decode` is refused and phase `both` only patches what prefill
//! needs (a warning says decode will not be captured; the budget is left alone, since raising it
//! would change the benchmark). An explicit `max_new_tokens` is always honoured. A config without
//! `model_config` is refused.

use crate::error::PatchError;
use crate::plan::{Phase, PhaseSelection, Plan, PlanRequest};
use crate::python::{PythonOptions, PythonPatch, patch_profiler_context, read_decode_window};
use crate::schedule::Schedule;
use crate::yaml::{MaxNewTokens, YamlOptions, YamlPatch, patch_run_config, read_run_config};

/// How to set `scheduler_config.max_new_tokens`.
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
    /// The decode window's `active`.
    pub decode_active: u64,
    /// The decode window's `skip_first`; `None` keeps the current value.
    pub decode_skip_first: Option<u64>,
    /// The token budget policy.
    pub max_new_tokens: TokenBudget,
}

/// Everything `patch` computed, before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipesPatch {
    /// Edits of `profiler_context.py`.
    pub python: PythonPatch,
    /// Edits of the run config.
    pub yaml: YamlPatch,
    /// The plan as it will run with the patched files.
    pub plan: Plan,
    /// Things the user should know (a phase that will not be captured, a small budget).
    pub warnings: Vec<String>,
}

/// Which of the two files a refusal is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFile {
    /// `executor/utils/profiler_context.py`.
    ProfilerContext,
    /// The run config (YAML).
    RunConfig,
}

/// A refusal, with the file it is about.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct RecipesError {
    /// The file the refusal is about.
    pub file: SourceFile,
    /// What is wrong.
    #[source]
    pub error: PatchError,
}

fn in_python(error: PatchError) -> RecipesError {
    RecipesError {
        file: SourceFile::ProfilerContext,
        error,
    }
}

fn in_config(error: PatchError) -> RecipesError {
    RecipesError {
        file: SourceFile::RunConfig,
        error,
    }
}

/// Computes the edits for `profiler_context.py` (`python`) and a run config (`yaml`).
pub fn patch_recipes(
    python: &str,
    yaml: &str,
    request: &PatchRequest,
) -> Result<RecipesPatch, RecipesError> {
    let config = read_run_config(yaml).map_err(in_config)?;
    if !config.has_model_config {
        return Err(in_config(PatchError::Refused(
            "the config has no model_config, so it is not an LLM run config of this framework (video/image \
             pipelines have none): there is no profiler switch to turn on"
                .to_owned(),
        )));
    }
    let current = read_decode_window(python).map_err(in_python)?;
    let skip_first = match request.decode_skip_first {
        Some(s) => i64::try_from(s).unwrap_or(i64::MAX),
        None => current.skip_first.ok_or_else(|| {
            in_python(PatchError::Refused(
                "the decode skip_first is not an integer literal in profiler_context.py; pass --decode-skip-first".to_owned(),
            ))
        })?,
    };
    let repeat = current.repeat.ok_or_else(|| {
        in_python(PatchError::Refused(
            "the decode repeat is not an integer literal in profiler_context.py".to_owned(),
        ))
    })?;
    let active = i64::try_from(request.decode_active).unwrap_or(i64::MAX);
    let decode = Schedule::clamped(0, 0, active, repeat, skip_first, 0);
    let plan_request = |config| PlanRequest {
        phases: request.phases,
        decode,
        decode_step_calls: None,
        config: Some(config),
    };
    let before = Plan::new(&plan_request(config.clone()));

    let mut warnings = Vec::new();
    let wants_decode = request.phases.includes(Phase::Decode);
    let prefill_only = config.max_new_tokens.is_some_and(|m| m <= 1);
    let max_new_tokens = match request.max_new_tokens {
        TokenBudget::Set(n) => MaxNewTokens::Exactly(n),
        TokenBudget::Auto if !wants_decode => MaxNewTokens::Keep,
        TokenBudget::Auto if prefill_only => {
            if request.phases == PhaseSelection::Decode {
                return Err(in_config(PatchError::Refused(
                    "the config is prefill-only (max_new_tokens: 1): decode never runs, so the decode window \
                     cannot be captured; choose a decode config or pass --max-new-tokens N"
                        .to_owned(),
                )));
            }
            warnings.push(
                "the config is prefill-only (max_new_tokens: 1): only prefill will be captured; max_new_tokens \
                 left at 1 (pass --max-new-tokens N to capture decode)"
                    .to_owned(),
            );
            MaxNewTokens::Keep
        }
        TokenBudget::Auto => {
            match before.min_max_new_tokens {
                Some(min) => MaxNewTokens::AtLeast(min),
                None => {
                    warnings.push("repeat=0: the decode window never closes by itself; max_new_tokens left as is".to_owned());
                    MaxNewTokens::Keep
                }
            }
        }
    };
    let yaml_patch = patch_run_config(
        yaml,
        &YamlOptions {
            enable_profiler: true,
            max_new_tokens,
        },
    )
    .map_err(in_config)?;
    let python_patch = patch_profiler_context(
        python,
        &PythonOptions {
            phases: request.phases,
            decode_active: request.decode_active,
            decode_skip_first: request.decode_skip_first,
        },
    )
    .map_err(in_python)?;
    let patched_config = read_run_config(&yaml_patch.edits.apply(yaml)).map_err(in_config)?;
    let plan = Plan::new(&plan_request(patched_config));
    let decode_fails = plan
        .phases
        .iter()
        .any(|p| p.phase == Phase::Decode && !p.closes_cleanly);
    if decode_fails && !prefill_only {
        warnings.push(format!(
            "with max_new_tokens {} the decode window does not close cleanly (needs at least {})",
            plan.config
                .as_ref()
                .map_or(0, |c| c.effective_max_new_tokens),
            plan.min_max_new_tokens
                .map_or_else(|| "a finite repeat".to_owned(), |m| m.to_string())
        ));
    }
    Ok(RecipesPatch {
        python: python_patch,
        yaml: yaml_patch,
        plan,
        warnings,
    })
}
