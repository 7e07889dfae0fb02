//! Planning a window: a resolved target's real windows and budget, or a bare schedule; either way
//! bounded in one place (no window longer than [`MAX_WINDOW_STEPS`] is simulated).

use npuprof_patch::plan::{Plan, PlanRequest, PrefillWindow};
use npuprof_patch::schedule::{Phase, Schedule};
use npuprof_repository::Target;
use npuprof_schedule::{MAX_WINDOW_STEPS, PhaseSelection, Window};
use serde::Serialize;

use crate::WorkflowError;

/// Version of `plan --json`.
pub const PLAN_SCHEMA_VERSION: u32 = 2;

/// The plan and what it was computed for: `plan --json`.
#[derive(Debug, Serialize)]
pub struct PlanReport {
    /// Version of this JSON schema.
    pub schema_version: u32,
    /// The plan.
    #[serde(flatten)]
    pub plan: Plan,
    /// The run config, relative to the repository, or null.
    pub config_path: Option<String>,
    /// The model's profiling family, when a run config was named.
    pub family: Option<npuprof_repository::Family>,
}

impl PlanReport {
    /// Whether every planned window closes cleanly.
    pub fn clean(&self) -> bool {
        self.plan.phases.iter().all(|p| p.closes_cleanly)
    }
}

/// The plan of a resolved target: its real windows (the decode one as requested) and budget,
/// judged after `step_calls` decode `step()` calls when given.
pub fn plan_target(
    target: &Target,
    phases: PhaseSelection,
    window: Window,
    step_calls: Option<u64>,
) -> Result<PlanReport, WorkflowError> {
    let Some(profiled) = target.profiled() else {
        return Err(WorkflowError::NotPlannable(format!(
            "model `{}` has no profiler switch npuprof can plan (family {}); see `npuprof route --model {} --yaml {}`",
            target.model,
            target.family.letter(),
            target.model,
            target.yaml
        )));
    };
    let site = |phase| profiled.phase(phase).map(|p| &p.site);
    if let [asked] = phases.phases().as_slice()
        && site(*asked).is_none()
    {
        let present: Vec<&str> = profiled.phases.iter().map(|p| p.phase.name()).collect();
        return Err(WorkflowError::NotPlannable(format!(
            "model `{}` has no {} profiler call (its phases: {}); pass --phase with one of them, or both",
            target.model,
            asked.name(),
            present.join(", ")
        )));
    }
    let Some(mut request) = npuprof_patch::target::plan_request(
        profiled,
        site(Phase::MmEncode),
        site(Phase::Prefill),
        site(Phase::Decode),
        phases,
        Some(window),
        &profiled.config,
    ) else {
        return Err(WorkflowError::NotPlannable(format!(
            "model `{}` has no decode profiler call to plan",
            target.model
        )));
    };
    request.decode_step_calls = step_calls;
    Ok(PlanReport {
        schema_version: PLAN_SCHEMA_VERSION,
        plan: bounded_plan(&request)?,
        config_path: Some(target.config_path.clone()),
        family: Some(target.family),
    })
}

/// The plan of a bare decode schedule (no run config), the prefill window as the engine's.
pub fn plan_schedule(
    phases: PhaseSelection,
    decode: Schedule,
    step_calls: Option<u64>,
) -> Result<PlanReport, WorkflowError> {
    Ok(PlanReport {
        schema_version: PLAN_SCHEMA_VERSION,
        plan: bounded_plan(&PlanRequest {
            phases,
            prefill: PrefillWindow::ENGINE,
            mm_encode: None,
            decode,
            decode_step_calls: step_calls,
            config: None,
        })?,
        config_path: None,
        family: None,
    })
}

/// The plan, refused when its decode window (or the step calls it is judged after) is longer
/// than [`MAX_WINDOW_STEPS`].
fn bounded_plan(request: &PlanRequest) -> Result<Plan, WorkflowError> {
    let decode = &request.decode;
    let steps = decode
        .skip_first
        .saturating_add(decode.repeat.max(1).saturating_mul(decode.cycle()));
    let endless_and_long = decode.repeat == 0
        && request
            .decode_step_calls
            .is_some_and(|calls| calls > MAX_WINDOW_STEPS);
    if steps > MAX_WINDOW_STEPS || endless_and_long {
        return Err(WorkflowError::Unbounded {
            steps,
            limit: MAX_WINDOW_STEPS,
        });
    }
    Ok(Plan::new(request))
}
