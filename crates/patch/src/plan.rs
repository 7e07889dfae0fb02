//! The profiling plan: the prefill and decode windows as torch_npu will run them, the `step()`
//! budget, and the token budget of a run config by the target's rule (see
//! `npuprof_repository::Budget`).

use serde::Serialize;

use crate::schedule::{Action, Schedule};
pub use crate::schedule::{Phase, PhaseSelection};
use npuprof_repository::budget::MARGIN_STEP_CALLS;
use npuprof_repository::{Budget, NotRecorded};

/// The shared engine's fixed prefill schedule: `active=1, repeat=1, skip_first=0` (wait/warmup 0).
pub const PREFILL_SCHEDULE: Schedule = Schedule {
    wait: 0,
    warmup: 0,
    active: 1,
    repeat: 1,
    skip_first: 0,
    skip_first_wait: 0,
};

/// What a run config says about the token budget, read through its target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanConfig {
    /// The rule that turns the budget into decode forwards, with `next_n`.
    pub budget: Budget,
    /// `max_new_tokens` as written (null when absent).
    pub max_new_tokens: Option<u64>,
    /// The budget the engine uses (its default when absent).
    pub effective_max_new_tokens: u64,
    /// Phases this run can never record, with the reason (a PD role, a prefill-only budget).
    pub never_recorded: Vec<NotRecorded>,
}

impl PlanConfig {
    /// Decode `step()` calls the budget guarantees.
    pub fn guaranteed_decode_step_calls(&self) -> u64 {
        self.budget
            .guaranteed_forwards(self.effective_max_new_tokens)
    }

    fn never(&self, phase: Phase) -> Option<&str> {
        self.never_recorded
            .iter()
            .find(|n| n.phase == phase)
            .map(|n| n.why.as_str())
    }
}

/// The prefill window and the `step()` calls its profiler gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefillWindow {
    /// The schedule.
    pub schedule: Schedule,
    /// `step()` calls: 1 for the shared engine; the model's loop decides for its own loops.
    pub step_calls: u64,
    /// Whether npuprof pins it (`true`) or the model's own window is kept.
    pub pinned: bool,
}

impl PrefillWindow {
    /// The shared engine's: one `step()` on `active=1, repeat=1, skip_first=0`.
    pub const ENGINE: PrefillWindow = PrefillWindow {
        schedule: PREFILL_SCHEDULE,
        step_calls: 1,
        pinned: true,
    };
}

/// What to plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRequest {
    /// The phases to profile.
    pub phases: PhaseSelection,
    /// The prefill window.
    pub prefill: PrefillWindow,
    /// The multimodal encoder's window, when the target has that phase.
    pub mm_encode: Option<PrefillWindow>,
    /// The decode schedule (already clamped).
    pub decode: Schedule,
    /// Evaluate the decode window after exactly this many `step()` calls instead of the budget.
    pub decode_step_calls: Option<u64>,
    /// The run config, when one was given.
    pub config: Option<PlanConfig>,
}

/// Where the number of `step()` calls a verdict is for comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EvaluatedFrom {
    /// The framework's own loop (the prefill profiler).
    Framework,
    /// The run config's token budget.
    Config,
    /// The window's own minimum (no config).
    Budget,
    /// `--step-calls`.
    Argument,
}

impl EvaluatedFrom {
    /// The name used in JSON and tables.
    pub fn name(self) -> &'static str {
        match self {
            EvaluatedFrom::Framework => "framework",
            EvaluatedFrom::Config => "config",
            EvaluatedFrom::Budget => "budget",
            EvaluatedFrom::Argument => "argument",
        }
    }
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
    /// Schedule `skip_first_wait` (torch_npu 2.7.1.post11 and 2.14.0).
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
    /// Where `evaluated_step_calls` comes from.
    pub evaluated_from: EvaluatedFrom,
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

impl PhasePlan {
    /// The schedule this window is (the arguments torch_npu's profiler is built with).
    pub fn schedule(&self) -> Schedule {
        Schedule {
            wait: self.wait,
            warmup: self.warmup,
            active: self.active,
            repeat: self.repeat,
            skip_first: self.skip_first,
            skip_first_wait: self.skip_first_wait,
        }
    }
}

/// The token-budget view of a run config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigPlan {
    /// What the config says, with its rule.
    #[serde(flatten)]
    pub config: PlanConfig,
    /// Decode `step()` calls guaranteed by it.
    pub guaranteed_decode_step_calls: u64,
    /// Whether the config's budget is at least `min_max_new_tokens`.
    pub budget_sufficient: bool,
    /// Phases this config cannot capture at all, with the reason.
    pub cannot_capture: Vec<String>,
}

/// The whole plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// One entry per profiled phase, prefill first.
    pub phases: Vec<PhasePlan>,
    /// The smallest `max_new_tokens` that closes every planned window (with the margin) by the
    /// config's rule; null without a config or when a window never closes (`repeat = 0`).
    pub min_max_new_tokens: Option<u64>,
    /// The run config's view, when one was given.
    pub config: Option<ConfigPlan>,
}

impl Plan {
    /// Builds the plan.
    pub fn new(request: &PlanRequest) -> Self {
        let config = request.config.as_ref();
        let mut phases = Vec::new();
        let mut min_tokens = config.map(|_| 1);
        for phase in request.phases.phases() {
            let plan = match phase {
                Phase::MmEncode => match &request.mm_encode {
                    Some(window) => prefill_plan(Phase::MmEncode, window, config),
                    None => continue,
                },
                Phase::Prefill => prefill_plan(Phase::Prefill, &request.prefill, config),
                Phase::Decode => {
                    let plan = decode_plan(request, config);
                    min_tokens = config
                        .and_then(|c| plan.min_step_calls.map(|calls| c.budget.min_budget(calls)));
                    plan
                }
            };
            phases.push(plan);
        }
        let config =
            config.map(|c| config_plan(c, request.phases, min_tokens, request.mm_encode.is_some()));
        Plan {
            phases,
            min_max_new_tokens: min_tokens,
            config,
        }
    }
}

/// The plan of a phase stepped a fixed number of times by the engine (prefill, mm_encode).
fn prefill_plan(phase: Phase, prefill: &PrefillWindow, config: Option<&PlanConfig>) -> PhasePlan {
    let schedule = &prefill.schedule;
    let calls = if prefill.pinned {
        prefill.step_calls
    } else {
        schedule.closing_step_calls().unwrap_or(prefill.step_calls)
    };
    let mut plan = phase_plan(phase, schedule, calls, EvaluatedFrom::Framework);
    plan.min_step_calls = Some(calls);
    if prefill.pinned && phase == Phase::MmEncode {
        plan.notes.push(
            "each encode batch gets a new profiler pinned at active=1, repeat=1, skip_first=0 \
             and one step(): Step Id 0 per run directory; encode and prefill may alternate, so \
             several mm_encode run directories per rank are normal"
                .to_owned(),
        );
    } else if prefill.pinned {
        plan.notes.push(
            "the engine calls step() exactly once on the prefill profiler: step 0 is RECORD_AND_SAVE, \
             that step() moves to step 1 = NONE (repeat=1), which saves and parses the cycle; stop() at \
             the first decode (or at exit) is then in NONE: a clean close with Step Id 0"
                .to_owned(),
        );
    } else {
        plan.notes.push(format!(
            "the model's own prefill window is kept; this assumes its loop steps the prefill \
             profiler {calls} time(s) (e.g. by repeating the prefill while profiling)"
        ));
    }
    if let Some(why) = config.and_then(|c| c.never(phase)) {
        plan.notes.push(format!("never recorded: {why}"));
    }
    plan
}

fn decode_plan(request: &PlanRequest, config: Option<&PlanConfig>) -> PhasePlan {
    let schedule = &request.decode;
    let closing = schedule.closing_step_calls();
    let min_calls = closing.map(|c| c.saturating_add(MARGIN_STEP_CALLS));
    let (calls, from) = match (request.decode_step_calls, config) {
        (Some(calls), _) => (calls, EvaluatedFrom::Argument),
        (None, Some(config)) => (config.guaranteed_decode_step_calls(), EvaluatedFrom::Config),
        (None, None) => (
            min_calls.unwrap_or(schedule.skip_first.saturating_add(schedule.cycle())),
            EvaluatedFrom::Budget,
        ),
    };
    let mut plan = phase_plan(Phase::Decode, schedule, calls, from);
    plan.closing_step_calls = closing;
    plan.min_step_calls = min_calls;
    plan.actions = action_spans(schedule, calls.max(min_calls.unwrap_or(0)));
    plan.window_steps = match min_calls {
        Some(calls) => schedule.run(calls).recorded_steps,
        None => schedule.cycle_steps(0).into_iter().flatten().collect(),
    };
    if closing.is_none() {
        plan.notes.push(
            "repeat=0 cycles forever: the window never closes by itself; the verdict depends on \
             where stop() lands"
                .to_owned(),
        );
    }
    if let Some(config) = config {
        if let Some(why) = config.never(Phase::Decode) {
            plan.notes.push(format!("never recorded: {why}"));
        } else if from == EvaluatedFrom::Config {
            plan.notes.push(format!(
                "max_new_tokens {} gives {} decode step() calls ({})",
                config.effective_max_new_tokens,
                calls,
                config.budget.describe()
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

fn phase_plan(phase: Phase, schedule: &Schedule, calls: u64, from: EvaluatedFrom) -> PhasePlan {
    let run = schedule.run(calls);
    let notes = run
        .stop_closes_step
        .map(|step| stop_note(run.stop_state, step))
        .into_iter()
        .collect();
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
        notes,
    }
}

/// What torch_npu's `stop()` does with the step open in RECORD or RECORD_AND_SAVE: it closes
/// and records it, then saves the trace; that step holds no forward in a loop that calls
/// `step()` after each forward.
fn stop_note(state: Action, step: u64) -> String {
    let (saved, fix) = if state == Action::RecordAndSave {
        (
            "saves and parses the complete cycle",
            ": give the phase one more step()",
        )
    } else {
        ("parses the incomplete cycle", "")
    };
    format!(
        "stop() in {} closes and records the open step {step}, then {saved}; step {step} holds only \
         what runs between the last step() and stop() (no forward in a loop that calls step() after \
         each forward), so its Step Id has no kernels{fix}",
        state.name()
    )
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

fn config_plan(
    config: &PlanConfig,
    phases: PhaseSelection,
    min_mnt: Option<u64>,
    has_encoder: bool,
) -> ConfigPlan {
    let cannot_capture = phases
        .phases()
        .into_iter()
        .filter(|p| *p != Phase::MmEncode || has_encoder)
        .filter_map(|p| config.never(p).map(|why| format!("{}: {why}", p.name())))
        .collect();
    ConfigPlan {
        guaranteed_decode_step_calls: config.guaranteed_decode_step_calls(),
        budget_sufficient: min_mnt.is_some_and(|min| config.effective_max_new_tokens >= min),
        cannot_capture,
        config: config.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npuprof_repository::{BudgetRule, NotRecordedCause};

    fn decode(active: i64, skip_first: i64) -> Schedule {
        Schedule::clamped(0, 0, active, 1, skip_first, 0)
    }

    fn request(phases: PhaseSelection, config: Option<PlanConfig>) -> PlanRequest {
        PlanRequest {
            phases,
            prefill: PrefillWindow::ENGINE,
            mm_encode: None,
            decode: decode(3, 3),
            decode_step_calls: None,
            config,
        }
    }

    /// The notes that start with `prefix`.
    fn starting<'n>(notes: &'n [String], prefix: &str) -> Vec<&'n str> {
        notes
            .iter()
            .map(String::as_str)
            .filter(|n| n.starts_with(prefix))
            .collect()
    }

    fn never_recorded(phase: Phase, why: &str) -> NotRecorded {
        NotRecorded {
            phase,
            cause: NotRecordedCause::PdRole,
            why: why.to_owned(),
        }
    }

    fn config(rule: BudgetRule, next_n: u64, max_new_tokens: u64) -> PlanConfig {
        PlanConfig {
            budget: Budget { rule, next_n },
            max_new_tokens: Some(max_new_tokens),
            effective_max_new_tokens: max_new_tokens,
            never_recorded: Vec::new(),
        }
    }

    #[test]
    fn prefill_in_the_engine_closes_cleanly_with_step_zero() {
        let plan = Plan::new(&PlanRequest {
            phases: PhaseSelection::Prefill,
            prefill: PrefillWindow::ENGINE,
            mm_encode: None,
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
    fn offline_mtp_config_needs_34_tokens_for_a_30_step_window() {
        let plan = Plan::new(&PlanRequest {
            phases: PhaseSelection::Both,
            prefill: PrefillWindow::ENGINE,
            mm_encode: None,
            decode: decode(30, 3),
            decode_step_calls: None,
            config: Some(config(BudgetRule::ForwardsEqualBudget, 1, 32)),
        });
        let decode = &plan.phases[1];
        assert_eq!(decode.min_step_calls, Some(34));
        assert_eq!(plan.min_max_new_tokens, Some(34));
        assert_eq!(decode.evaluated_step_calls, 32);
        assert!(!decode.closes_cleanly);
        // 32 calls end on the window's last step: stopped in RECORD_AND_SAVE, which closes and
        // records step 32 (empty in a forward-then-step loop) and saves the cycle.
        assert_eq!(
            decode.warning.as_deref(),
            Some(crate::schedule::STOP_IN_RECORD_AND_SAVE)
        );
        assert_eq!(decode.recorded_steps, (3..=32).collect::<Vec<u64>>());
        assert!(
            decode.notes.iter().any(|n| n.contains(
                "stop() in RECORD_AND_SAVE closes and records the open step 32, then saves and parses the complete cycle"
            )),
            "{:?}",
            decode.notes
        );
        assert_eq!(
            plan.config.as_ref().map(|c| c.budget_sufficient),
            Some(false)
        );
    }

    #[test]
    fn online_mtp_config_counts_tokens() {
        let plan = Plan::new(&PlanRequest {
            phases: PhaseSelection::Decode,
            prefill: PrefillWindow::ENGINE,
            mm_encode: None,
            decode: decode(30, 3),
            decode_step_calls: None,
            config: Some(config(BudgetRule::Tokens, 1, 32)),
        });
        assert_eq!(plan.min_max_new_tokens, Some(69));
        assert_eq!(plan.phases[0].evaluated_step_calls, 15);
    }

    #[test]
    fn a_model_prefill_window_is_judged_at_its_close() {
        let plan = Plan::new(&PlanRequest {
            phases: PhaseSelection::Prefill,
            prefill: PrefillWindow {
                schedule: Schedule::clamped(0, 0, 1, 1, 5, 0),
                step_calls: 1,
                pinned: false,
            },
            mm_encode: None,
            decode: decode(10, 10),
            decode_step_calls: None,
            config: None,
        });
        assert_eq!(plan.phases[0].recorded_steps, vec![5]);
        assert!(plan.phases[0].closes_cleanly);
    }

    #[test]
    fn a_phase_the_config_never_records_is_noted_on_that_phase_only() {
        let mut config = config(BudgetRule::ForwardsEqualBudget, 1, 32);
        config.never_recorded = vec![never_recorded(
            Phase::Decode,
            "a prefill node never decodes",
        )];
        let plan = Plan::new(&request(PhaseSelection::Both, Some(config)));
        let [prefill, decode] = &plan.phases[..] else {
            panic!("{:?}", plan.phases);
        };
        let none: [&str; 0] = [];
        assert_eq!(starting(&prefill.notes, "never recorded"), none);
        assert_eq!(
            starting(&decode.notes, "never recorded"),
            ["never recorded: a prefill node never decodes"]
        );
        assert_eq!(starting(&decode.notes, "max_new_tokens"), none);
        assert_eq!(
            plan.config.map(|c| c.cannot_capture),
            Some(vec!["decode: a prefill node never decodes".to_owned()])
        );
    }

    #[test]
    fn the_encoder_is_named_among_the_phases_never_captured_only_on_a_target_that_has_it() {
        let mut config = config(BudgetRule::ForwardsEqualBudget, 1, 32);
        config.never_recorded = vec![
            never_recorded(Phase::MmEncode, "no encoder here"),
            never_recorded(Phase::Prefill, "a decode node never prefills"),
        ];
        let mut request = request(PhaseSelection::Both, Some(config));
        let cannot_capture =
            |request: &PlanRequest| Plan::new(request).config.map(|c| c.cannot_capture);
        assert_eq!(
            cannot_capture(&request),
            Some(vec!["prefill: a decode node never prefills".to_owned()])
        );
        request.mm_encode = Some(PrefillWindow::ENGINE);
        assert_eq!(
            cannot_capture(&request),
            Some(vec![
                "mm_encode: no encoder here".to_owned(),
                "prefill: a decode node never prefills".to_owned()
            ])
        );
    }

    #[test]
    fn the_decode_budget_is_explained_only_when_the_verdict_is_for_the_config() {
        let budget_note =
            |plan: &Plan| starting(&plan.phases[0].notes, "max_new_tokens").join("\n");
        let config = config(BudgetRule::ForwardsEqualBudget, 1, 32);
        let mut request = request(PhaseSelection::Decode, Some(config));
        assert_eq!(
            budget_note(&Plan::new(&request)),
            "max_new_tokens 32 gives 32 decode step() calls (decode forwards = \
             max_new_tokens, whatever next_n)"
        );
        request.decode_step_calls = Some(5);
        let plan = Plan::new(&request);
        assert_eq!(plan.phases[0].evaluated_from, EvaluatedFrom::Argument);
        assert_eq!(budget_note(&plan), "");
    }

    #[test]
    fn the_engine_prefill_and_a_pinned_encoder_each_get_their_own_note() {
        let mut request = request(PhaseSelection::Both, None);
        request.mm_encode = Some(PrefillWindow::ENGINE);
        let plan = Plan::new(&request);
        let first_words: Vec<(Phase, &str)> = plan
            .phases
            .iter()
            .take(2)
            .map(|p| (p.phase, p.notes[0].split(':').next().unwrap_or_default()))
            .collect();
        assert_eq!(
            first_words,
            [
                (
                    Phase::MmEncode,
                    "each encode batch gets a new profiler pinned at active=1, repeat=1, \
                     skip_first=0 and one step()"
                ),
                (
                    Phase::Prefill,
                    "the engine calls step() exactly once on the prefill profiler"
                ),
            ]
        );
    }

    #[test]
    fn each_source_of_the_step_calls_is_named_as_in_json() {
        for from in [
            EvaluatedFrom::Framework,
            EvaluatedFrom::Config,
            EvaluatedFrom::Budget,
            EvaluatedFrom::Argument,
        ] {
            assert_eq!(
                serde_json::to_value(from).ok(),
                Some(serde_json::Value::from(from.name()))
            );
        }
    }

    #[test]
    fn the_per_step_actions_are_spans_of_equal_action_to_the_last_step() {
        let mut request = request(PhaseSelection::Decode, None);
        request.decode_step_calls = Some(10);
        let spans: Vec<(u64, u64, Action)> = Plan::new(&request).phases[0]
            .actions
            .iter()
            .map(|s| (s.first_step, s.last_step, s.action))
            .collect();
        assert_eq!(
            spans,
            [
                (0, 2, Action::None),
                (3, 4, Action::Record),
                (5, 5, Action::RecordAndSave),
                (6, 10, Action::None),
            ]
        );
    }
}
