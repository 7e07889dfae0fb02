//! `npuprof plan`: simulate the torch_npu schedule of a model's prefill and decode windows and
//! its run config's token budget, by the rule of the model's target (or any schedule, without a
//! run config).
//!
//! Output: the human table is the command's data and goes to stdout; `--json` prints the plan
//! instead. Exit 0 when every planned window closes cleanly, 1 when one does not (a finding:
//! torch_npu would warn or record nothing), 2 on bad input.

use std::fmt::Write as _;
use std::io::Write as _;

use npuprof_patch::plan::PhasePlan;
use npuprof_patch::schedule::Schedule;
use npuprof_schedule::MAX_WINDOW_STEPS;
use npuprof_workflow::plan::{PlanReport, plan_schedule, plan_target};

use crate::args::{TargetArgs, WindowArgs};
use crate::exit::Exit;
use crate::output::print_json;

/// Arguments of `npuprof plan`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The repository and run config: plan the model's real windows and token budget.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The window.
    #[command(flatten)]
    pub window: WindowArgs,
    /// Decode `warmup` steps per cycle (without a run config) [default: 0]; with --engine,
    /// warm-up requests sent before profiling starts [default: 4, as collect's].
    #[arg(long, allow_negative_numbers = true)]
    pub warmup: Option<i64>,
    /// Decode `wait` steps per cycle (without a run config).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub wait: i64,
    /// Decode `repeat` (0 = cycle forever: the window never closes by itself; without a run config).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub repeat: i64,
    /// Decode `skip_first_wait` (torch_npu 2.7.1.post11 and 2.14.0; without a run config).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub skip_first_wait: i64,
    /// Judge the decode window after exactly this many `step()` calls (default: what the config
    /// guarantees, else the window's minimum).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=MAX_WINDOW_STEPS))]
    pub step_calls: Option<u64>,
    /// The serving engine's capture instead of a schedule (e.g. `vllm-ascend`): a window of
    /// requests between start and stop profile; --repo names its checkout or site-packages to
    /// read that version's settings.
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Print the plan as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// The load of `plan --engine`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Plan a capture of this serving engine's server (a definition id, e.g. `vllm-ascend`).
    #[arg(long, value_name = "ID", value_parser = crate::args::engine_id,
          conflicts_with_all = ["model", "yaml", "config", "pd_role", "decode_skip_first", "wait", "repeat", "skip_first_wait", "step_calls"])]
    pub engine: Option<String>,
    /// Requests recorded (with --engine) [default: 32, as collect's].
    #[arg(long, value_name = "N", requires = "engine",
          default_value_t = u64::from(npuprof_workflow::serve_plan::load_defaults::REQUESTS))]
    pub requests: u64,
    /// Prompt tokens per request (with --engine) [default: 128, as collect's].
    #[arg(long, value_name = "P", requires = "engine",
          default_value_t = u64::from(npuprof_workflow::serve_plan::load_defaults::PROMPT_LEN))]
    pub prompt_len: u64,
    /// Output tokens per request (with --engine) [default: 128, as collect's].
    #[arg(long, value_name = "O", requires = "engine",
          default_value_t = u64::from(npuprof_workflow::serve_plan::load_defaults::OUTPUT_LEN))]
    pub output_len: u64,
    /// Requests in flight at once (with --engine) [default: 8, as collect's].
    #[arg(long, value_name = "C", requires = "engine",
          default_value_t = u64::from(npuprof_workflow::serve_plan::load_defaults::CONCURRENCY))]
    pub concurrency: u64,
    /// Tensor-parallel size: the ranks writing output (with --engine).
    #[arg(long, value_name = "T", requires = "engine", default_value_t = 1)]
    pub tp: u32,
    /// Keep call stacks on (with --engine; npuprof turns them off by default).
    #[arg(long, requires = "engine")]
    pub with_stack: bool,
    /// Kernels one engine iteration launches, for the size estimate (with --engine)
    /// [default: 1000, an assumption].
    #[arg(long, value_name = "K", requires = "engine")]
    pub kernels_per_step: Option<u64>,
}

/// Computes the plan without printing.
pub fn execute(args: &Args) -> anyhow::Result<PlanReport> {
    if args.target.names_config() {
        let target = args.target.resolve()?;
        return Ok(plan_target(
            &target,
            args.window.phases(),
            args.window.window()?,
            args.step_calls,
        )?);
    }
    let decode = Schedule::clamped(
        args.wait,
        args.warmup.unwrap_or(0),
        i64::try_from(args.window.decode_active()).unwrap_or(i64::MAX),
        args.repeat,
        args.window
            .decode_skip_first
            .map_or(0, |s| i64::try_from(s).unwrap_or(i64::MAX)),
        args.skip_first_wait,
    );
    Ok(plan_schedule(
        args.window.phases(),
        decode,
        args.step_calls,
    )?)
}

/// Runs `npuprof plan`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    if let Some(engine) = &args.serve.engine {
        return super::plan_serve::run(engine, &args);
    }
    let report = execute(&args)?;
    if args.json {
        print_json(&report)?;
    } else {
        crate::output::stdout().write_all(human(&report).as_bytes())?;
    }
    Ok(if report.clean() {
        Exit::Ok
    } else {
        Exit::Findings
    })
}

/// Step numbers as compact ranges: `3–32`, `0, 5–7`.
pub fn compact_steps(steps: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < steps.len() {
        let mut j = i;
        while j + 1 < steps.len() && steps[j + 1] == steps[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            steps[i].to_string()
        } else {
            format!("{}–{}", steps[i], steps[j])
        });
        i = j + 1;
    }
    if out.is_empty() {
        "none".to_owned()
    } else {
        out.join(", ")
    }
}

fn opt(value: Option<u64>) -> String {
    value.map_or_else(|| "never".to_owned(), |v| v.to_string())
}

fn verdict(phase: &PhasePlan) -> String {
    if phase.closes_cleanly {
        "yes".to_owned()
    } else if phase.recorded_steps.is_empty() {
        "NO: nothing recorded".to_owned()
    } else {
        format!("NO: stop() in {}", phase.stop_state.name())
    }
}

/// The compact human table.
pub fn human(report: &PlanReport) -> String {
    let plan = &report.plan;
    let mut out = String::new();
    // As wide as the longest phase name shown (`mm_encode` where the target has it).
    let w = plan
        .phases
        .iter()
        .map(|p| p.phase.name().len())
        .fold(8, usize::max);
    let _ = writeln!(
        out,
        "{:<w$} {:>6} {:>10} {:>6} {:>4} {:>6}  {:<14} {:>9} {:>16}  closes cleanly",
        "phase",
        "active",
        "skip_first",
        "warmup",
        "wait",
        "repeat",
        "recorded steps",
        "min calls",
        "evaluated calls"
    );
    for phase in &plan.phases {
        let _ = writeln!(
            out,
            "{:<w$} {:>6} {:>10} {:>6} {:>4} {:>6}  {:<14} {:>9} {:>16}  {}",
            phase.phase.name(),
            phase.active,
            phase.skip_first,
            phase.warmup,
            phase.wait,
            if phase.repeat == 0 {
                "0 (∞)".to_owned()
            } else {
                phase.repeat.to_string()
            },
            compact_steps(&phase.recorded_steps),
            opt(phase.min_step_calls),
            format!(
                "{} ({})",
                phase.evaluated_step_calls,
                phase.evaluated_from.name()
            ),
            verdict(phase),
        );
    }
    out.push('\n');
    for phase in &plan.phases {
        let spans: Vec<String> = phase
            .actions
            .iter()
            .map(|s| {
                let steps = if s.first_step == s.last_step {
                    s.first_step.to_string()
                } else {
                    format!("{}–{}", s.first_step, s.last_step)
                };
                format!("{steps} {}", s.action.name())
            })
            .collect();
        let _ = writeln!(
            out,
            "{} actions by step: {}",
            phase.phase.name(),
            spans.join(" | ")
        );
        if phase.window_steps != phase.recorded_steps {
            let _ = writeln!(
                out,
                "  a complete window records steps {} (the Step Ids)",
                compact_steps(&phase.window_steps)
            );
        }
        for warning in &phase.warnings {
            let _ = writeln!(out, "  torch_npu would print: {warning}");
        }
        for note in &phase.notes {
            let _ = writeln!(out, "  note: {note}");
        }
    }
    if let Some(config) = &plan.config {
        let _ = writeln!(
            out,
            "\nconfig {}: next_n {}, max_new_tokens {}{}, gives {} decode step() calls ({})",
            report.config_path.as_deref().unwrap_or("-"),
            config.config.budget.next_n,
            config.config.effective_max_new_tokens,
            if config.config.max_new_tokens.is_none() {
                " (absent: the engine's default)"
            } else {
                ""
            },
            config.guaranteed_decode_step_calls,
            config.config.budget.describe(),
        );
        for reason in &config.cannot_capture {
            let _ = writeln!(out, "  cannot capture {reason}");
        }
    }
    match (plan.min_max_new_tokens, &plan.config) {
        (Some(min), Some(c)) => {
            let verdict = if c.budget_sufficient {
                "the config's budget is enough".to_owned()
            } else {
                format!(
                    "the config has {}: raise it (npuprof patch does)",
                    c.config.effective_max_new_tokens
                )
            };
            let _ = writeln!(out, "min max_new_tokens: {min}; {verdict}");
        }
        (None, Some(_)) => {
            let _ = writeln!(
                out,
                "min max_new_tokens: none (repeat=0: the decode window never closes by itself)"
            );
        }
        (_, None) => {}
    }
    out
}
