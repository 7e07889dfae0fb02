//! The profiling plan for the cann-recipes framework: the prefill and decode windows as torch_npu
//! will run them, the `step()` budget, and the token budget of a run config (MTP-aware).

use serde::Serialize;

use crate::schedule::{Action, Schedule};

/// One of the two phases the framework profiles into separate directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The first forward of a batch (`prof/prefill`).
    Prefill,
    /// The following forwards (`prof/decode`).
    Decode,
}

impl Phase {
    /// `"prefill"` or `"decode"`.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
        }
    }
}

/// Which phases to profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PhaseSelection {
    /// Prefill only (the decode branch gets a no-op profiler).
    Prefill,
    /// Decode only (the prefill branch gets a no-op profiler).
    Decode,
    /// Both, each into its own directory.
    #[default]
    Both,
}

impl PhaseSelection {
    /// Whether `phase` is profiled.
    pub fn includes(self, phase: Phase) -> bool {
        !matches!(
            (self, phase),
            (PhaseSelection::Prefill, Phase::Decode) | (PhaseSelection::Decode, Phase::Prefill)
        )
    }

    /// The profiled phases, prefill first.
    pub fn phases(self) -> Vec<Phase> {
        [Phase::Prefill, Phase::Decode]
            .into_iter()
            .filter(|p| self.includes(*p))
            .collect()
    }
}

/// The framework's fixed prefill schedule: `active=1, repeat=1, skip_first=0` (wait/warmup 0).
pub const PREFILL_SCHEDULE: Schedule = Schedule {
    wait: 0,
    warmup: 0,
    active: 1,
    repeat: 1,
    skip_first: 0,
    skip_first_wait: 0,
};

/// `create_profiler`'s default decode window in cann-recipes: `active=3, skip_first=3`.
pub const DEFAULT_DECODE_ACTIVE: i64 = 3;
/// See [`DEFAULT_DECODE_ACTIVE`].
pub const DEFAULT_DECODE_SKIP_FIRST: i64 = 3;

/// The extra `step()` call the collection guide asks for beyond the exact close.
pub const MARGIN_STEP_CALLS: u64 = 1;

/// What a run config says about the token budget and the profiler switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunConfig {
    /// Whether the file has a `model_config` mapping (LLM configs do; video/image pipelines do not).
    pub has_model_config: bool,
    /// `model_config.enable_profiler`, if present.
    pub enable_profiler: Option<bool>,
    /// `model_config.next_n` (MTP speculative steps), 0 when absent.
    pub next_n: u64,
    /// `scheduler_config.max_new_tokens`, if present (the engine uses 1 when absent).
    pub max_new_tokens: Option<u64>,
}

impl RunConfig {
    /// The engine's effective `max_new_tokens` (1 when the key is absent).
    pub fn effective_max_new_tokens(&self) -> u64 {
        self.max_new_tokens.unwrap_or(1)
    }

    /// Decode forwards (= decode `step()` calls) guaranteed by `max_new_tokens`, worst case for MTP:
    /// `floor((max_new_tokens − 1) / (next_n + 1))`.
    pub fn guaranteed_decode_step_calls(&self) -> u64 {
        self.effective_max_new_tokens().saturating_sub(1) / self.next_n.saturating_add(1)
    }

    /// The smallest `max_new_tokens` that guarantees `decode_calls` decode forwards:
    /// `1 + (next_n + 1) · decode_calls`.
    pub fn min_max_new_tokens(&self, decode_calls: u64) -> u64 {
        min_max_new_tokens(self.next_n, decode_calls)
    }
}

/// `1 + (next_n + 1) · decode_calls`: one token from prefill, up to `next_n + 1` per decode forward.
pub fn min_max_new_tokens(next_n: u64, decode_calls: u64) -> u64 {
    1u64.saturating_add(next_n.saturating_add(1).saturating_mul(decode_calls))
}

/// What to plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRequest {
    /// The phases to profile.
    pub phases: PhaseSelection,
    /// The decode schedule (already clamped).
    pub decode: Schedule,
    /// Evaluate the decode window after exactly this many `step()` calls instead of the budget.
    pub decode_step_calls: Option<u64>,
    /// The run config, when one was given.
    pub config: Option<RunConfig>,
}

/// A run of identical actions in the per-step table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActionSpan {
    /// First step number of the span.
    pub first_step: u64,
    /// Last step number of the span (inclusive).
    pub last_step: u64,
    /// The action for every step of the span.
    pub action: Action,
}

/// One phase's window as torch_npu will run it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhasePlan {
    /// `prefill` or `decode`.
    pub phase: Phase,
    /// Schedule `active` (after clamping).
    pub active: u64,
    /// Schedule `skip_first`.
    pub skip_first: u64,
    /// Schedule `warmup`.
    pub warmup: u64,
    /// Schedule `wait`.
    pub wait: u64,
    /// Schedule `repeat` (0 = cycles forever).
    pub repeat: u64,
    /// Schedule `skip_first_wait` (torch_npu 26.1+).
    pub skip_first_wait: u64,
    /// The step numbers recorded in the evaluated run (the `Step Id`s the output will carry).
    pub recorded_steps: Vec<u64>,
    /// The step numbers the window records when it gets its minimum `step()` calls (for
    /// `repeat = 0`: the first cycle).
    pub window_steps: Vec<u64>,
    /// `step()` calls after which the last cycle is saved; null when `repeat = 0`.
    pub closing_step_calls: Option<u64>,
    /// Minimum `step()` calls to plan for (closing + 1 margin; exactly 1 for the framework's
    /// prefill, which always gets one call); null when `repeat = 0`.
    pub min_step_calls: Option<u64>,
    /// The number of `step()` calls the verdict below is for.
    pub evaluated_step_calls: u64,
    /// Where `evaluated_step_calls` comes from: `framework`, `config`, `budget` or `argument`.
    pub evaluated_from: &'static str,
    /// Whether the window closes with at least one saved cycle and no warning.
    pub closes_cleanly: bool,
    /// The first warning torch_npu would print (exact text), if any.
    pub warning: Option<String>,
    /// Every warning torch_npu would print, in order.
    pub warnings: Vec<String>,
    /// The state the profiler is in when `stop()` is called.
    pub stop_state: Action,
    /// Per-step actions for steps `0..=max(evaluated_step_calls, min_step_calls)`, as spans of
    /// equal action.
    pub actions: Vec<ActionSpan>,
    /// npuprof's explanation (why it does not close, what `repeat = 0` means, …).
    pub notes: Vec<String>,
}

/// The token-budget view of a run config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigPlan {
    /// What the config says.
    #[serde(flatten)]
    pub config: RunConfig,
    /// The engine's effective `max_new_tokens`.
    pub effective_max_new_tokens: u64,
    /// Decode `step()` calls guaranteed by it (worst case with MTP).
    pub guaranteed_decode_step_calls: u64,
    /// Whether the config's `max_new_tokens` is at least `min_max_new_tokens`.
    pub budget_sufficient: bool,
    /// Phases this config cannot capture at all, with the reason.
    pub cannot_capture: Vec<String>,
}

/// The whole plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// One entry per profiled phase, prefill first.
    pub phases: Vec<PhasePlan>,
    /// The smallest `max_new_tokens` that closes every planned window (with the margin);
    /// null when a window never closes (`repeat = 0`).
    pub min_max_new_tokens: Option<u64>,
    /// The `next_n` used for `min_max_new_tokens` (from the config, else 0).
    pub next_n: u64,
    /// The run config's view, when one was given.
    pub config: Option<ConfigPlan>,
}

impl Plan {
    /// Builds the plan.
    pub fn new(request: &PlanRequest) -> Self {
        let config = request.config.as_ref();
        let next_n = config.map_or(0, |c| c.next_n);
        let mut phases = Vec::new();
        let mut min_tokens = Some(1);
        for phase in request.phases.phases() {
            let plan = match phase {
                Phase::Prefill => prefill_plan(config),
                Phase::Decode => {
                    let plan = decode_plan(request, config);
                    min_tokens = plan
                        .min_step_calls
                        .map(|calls| min_max_new_tokens(next_n, calls));
                    plan
                }
            };
            phases.push(plan);
        }
        let config = config.map(|c| config_plan(c, request.phases, min_tokens));
        Plan {
            phases,
            min_max_new_tokens: min_tokens,
            next_n,
            config,
        }
    }
}

fn prefill_plan(config: Option<&RunConfig>) -> PhasePlan {
    // The framework starts the prefill profiler at the first prefill, calls step() once after that
    // forward (step 1 is NONE since repeat=1: the cycle is saved), and stop()s it at the first
    // decode (or at exit) in state NONE: a clean close with Step Id 0.
    let mut plan = phase_plan(Phase::Prefill, &PREFILL_SCHEDULE, 1, "framework");
    plan.min_step_calls = Some(1);
    plan.notes.push(
        "the framework calls step() exactly once on the prefill profiler: step 0 is RECORD_AND_SAVE, \
         that step() moves to step 1 = NONE (repeat=1), which saves and parses the cycle; stop() at \
         the first decode (or at exit) is then in NONE: a clean close with Step Id 0"
            .to_owned(),
    );
    if config.is_some_and(|c| !c.has_model_config) {
        plan.notes.push(NO_MODEL_CONFIG.to_owned());
    }
    plan
}

const NO_MODEL_CONFIG: &str = "the config has no model_config (not an LLM run config): the framework's profiler cannot be switched on";

fn decode_plan(request: &PlanRequest, config: Option<&RunConfig>) -> PhasePlan {
    let schedule = &request.decode;
    let closing = schedule.closing_step_calls();
    let min_calls = closing.map(|c| c.saturating_add(MARGIN_STEP_CALLS));
    let (calls, from) = match (request.decode_step_calls, config) {
        (Some(calls), _) => (calls, "argument"),
        (None, Some(config)) => (config.guaranteed_decode_step_calls(), "config"),
        (None, None) => (
            min_calls.unwrap_or(schedule.skip_first.saturating_add(schedule.cycle())),
            "budget",
        ),
    };
    let mut plan = phase_plan(Phase::Decode, schedule, calls, from);
    plan.closing_step_calls = closing;
    plan.min_step_calls = min_calls;
    plan.actions = action_spans(schedule, calls.max(min_calls.unwrap_or(0)));
    plan.window_steps = schedule
        .run(min_calls.unwrap_or(schedule.skip_first.saturating_add(schedule.cycle())))
        .recorded_steps;
    if closing.is_none() {
        plan.notes.push(
            "repeat=0 cycles forever: the window never closes by itself; the verdict depends on \
             where stop() lands"
                .to_owned(),
        );
    }
    if let Some(config) = config {
        if !config.has_model_config {
            plan.notes.push(NO_MODEL_CONFIG.to_owned());
        } else if config.effective_max_new_tokens() <= 1 {
            plan.notes.push(
                "max_new_tokens is 1 (a prefill-only config): decode never runs, the decode window \
                 cannot be captured"
                    .to_owned(),
            );
        } else if from == "config" {
            plan.notes.push(format!(
                "max_new_tokens {} with next_n {} guarantees {} decode step() calls (worst case: every \
                 forward emits {} tokens)",
                config.effective_max_new_tokens(),
                config.next_n,
                calls,
                config.next_n + 1
            ));
        }
    }
    if plan.recorded_steps.is_empty() {
        plan.notes.push(format!(
            "nothing is recorded: {calls} step() calls do not reach the first recorded step"
        ));
    }
    plan
}

fn phase_plan(phase: Phase, schedule: &Schedule, calls: u64, from: &'static str) -> PhasePlan {
    let run = schedule.run(calls);
    PhasePlan {
        phase,
        active: schedule.active,
        skip_first: schedule.skip_first,
        warmup: schedule.warmup,
        wait: schedule.wait,
        repeat: schedule.repeat,
        skip_first_wait: schedule.skip_first_wait,
        window_steps: run.recorded_steps.clone(),
        recorded_steps: run.recorded_steps,
        closing_step_calls: schedule.closing_step_calls(),
        min_step_calls: None,
        evaluated_step_calls: calls,
        evaluated_from: from,
        closes_cleanly: run.closes_cleanly,
        warning: run.warnings.first().cloned(),
        warnings: run.warnings,
        stop_state: run.stop_state,
        actions: action_spans(schedule, calls),
        notes: Vec::new(),
    }
}

/// The actions of steps `0..=last`, merged into spans (after the last cycle every step is NONE,
/// so the final span is extended instead of walked).
fn action_spans(schedule: &Schedule, last: u64) -> Vec<ActionSpan> {
    let mut spans: Vec<ActionSpan> = Vec::new();
    let walked = schedule
        .closing_step_calls()
        .map_or(last, |closing| last.min(closing.saturating_add(1)));
    for step in 0..=walked {
        let action = schedule.action(step);
        match spans.last_mut() {
            Some(span) if span.action == action => span.last_step = step,
            _ => spans.push(ActionSpan {
                first_step: step,
                last_step: step,
                action,
            }),
        }
    }
    if let Some(span) = spans.last_mut() {
        span.last_step = last;
    }
    spans
}

fn config_plan(config: &RunConfig, phases: PhaseSelection, min_mnt: Option<u64>) -> ConfigPlan {
    let mut cannot_capture = Vec::new();
    if !config.has_model_config {
        for phase in phases.phases() {
            cannot_capture.push(format!("{}: {NO_MODEL_CONFIG}", phase.name()));
        }
    } else if phases.includes(Phase::Decode) && config.effective_max_new_tokens() <= 1 {
        cannot_capture.push(
            "decode: max_new_tokens is 1 (prefill-only config), decode never runs".to_owned(),
        );
    }
    let effective = config.effective_max_new_tokens();
    ConfigPlan {
        config: config.clone(),
        effective_max_new_tokens: effective,
        guaranteed_decode_step_calls: config.guaranteed_decode_step_calls(),
        budget_sufficient: min_mnt.is_some_and(|min| effective >= min),
        cannot_capture,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(active: i64, skip_first: i64) -> Schedule {
        Schedule::clamped(0, 0, active, 1, skip_first, 0)
    }

    #[test]
    fn prefill_in_the_framework_closes_cleanly_with_step_zero() {
        let plan = Plan::new(&PlanRequest {
            phases: PhaseSelection::Prefill,
            decode: decode(3, 3),
            decode_step_calls: None,
            config: None,
        });
        let prefill = &plan.phases[0];
        assert_eq!(prefill.recorded_steps, vec![0]);
        assert!(prefill.closes_cleanly);
        assert_eq!(prefill.stop_state, Action::None);
    }

    #[test]
    fn mtp_config_cannot_close_a_30_step_window() {
        let config = RunConfig {
            has_model_config: true,
            enable_profiler: Some(false),
            next_n: 1,
            max_new_tokens: Some(32),
        };
        assert_eq!(config.guaranteed_decode_step_calls(), 15);
        let plan = Plan::new(&PlanRequest {
            phases: PhaseSelection::Both,
            decode: decode(30, 3),
            decode_step_calls: None,
            config: Some(config),
        });
        let decode = &plan.phases[1];
        assert_eq!(decode.min_step_calls, Some(34));
        assert_eq!(plan.min_max_new_tokens, Some(69));
        assert!(!decode.closes_cleanly);
        assert_eq!(
            decode.warning.as_deref(),
            Some(crate::schedule::STOP_IN_RECORD)
        );
        assert_eq!(
            plan.config.as_ref().map(|c| c.budget_sufficient),
            Some(false)
        );
    }
}
