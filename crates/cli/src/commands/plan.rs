//! `npuprof plan`: simulate the torch_npu schedule of the framework's prefill and decode windows
//! and the token budget of a run config (MTP-aware).
//!
//! Output: the human table is the command's data and goes to stdout; `--json` prints the plan
//! instead. Exit 0 when every planned window closes cleanly, 1 when one does not (a finding:
//! torch_npu would warn or record nothing), 2 on bad input.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use npuprof_patch::plan::{PhasePlan, PhaseSelection, Plan, PlanRequest};
use npuprof_patch::schedule::Schedule;
use npuprof_patch::yaml::read_run_config;
use serde::Serialize;

use crate::exit::Exit;
use crate::output::print_json;

/// Which phases to plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PhaseArg {
    /// The first forward (the framework's fixed window: active=1, repeat=1, skip_first=0).
    Prefill,
    /// The decode forwards.
    Decode,
    /// Both.
    Both,
}

impl From<PhaseArg> for PhaseSelection {
    fn from(phase: PhaseArg) -> Self {
        match phase {
            PhaseArg::Prefill => PhaseSelection::Prefill,
            PhaseArg::Decode => PhaseSelection::Decode,
            PhaseArg::Both => PhaseSelection::Both,
        }
    }
}

/// Arguments of `npuprof plan`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Phases to plan.
    #[arg(long, value_enum, default_value = "both")]
    pub phase: PhaseArg,
    /// Decode `active` (recorded steps; torch_npu clamps values below 1 to 1). Default: create_profiler's 3.
    #[arg(long, default_value_t = 3, allow_negative_numbers = true)]
    pub decode_active: i64,
    /// Decode `skip_first` (negative values are clamped to 0). Default: create_profiler's 3.
    #[arg(long, default_value_t = 3, allow_negative_numbers = true)]
    pub decode_skip_first: i64,
    /// Decode `warmup` steps per cycle.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub warmup: i64,
    /// Decode `wait` steps per cycle.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub wait: i64,
    /// Decode `repeat` (0 = cycle forever: the window never closes by itself).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub repeat: i64,
    /// Decode `skip_first_wait` (torch_npu 26.1+: the first cycle starts without its wait).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub skip_first_wait: i64,
    /// Judge the decode window after exactly this many `step()` calls (default: what the config
    /// guarantees, else the budget).
    #[arg(long, value_name = "N")]
    pub step_calls: Option<u64>,
    /// A run config (models/<model>/config/<file>.yaml): token budget and MTP `next_n`.
    #[arg(long, value_name = "YAML")]
    pub config: Option<PathBuf>,
    /// Print the plan as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// The largest window `plan` simulates step by step.
const MAX_SIMULATED_STEPS: u64 = 1_000_000;

/// The plan and where its config came from.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The plan.
    #[serde(flatten)]
    pub plan: Plan,
    /// The `--config` path as given, or null.
    pub config_path: Option<String>,
}

impl Report {
    /// Whether every planned window closes cleanly.
    pub fn clean(&self) -> bool {
        self.plan.phases.iter().all(|p| p.closes_cleanly)
    }
}

/// Computes the plan without printing (for `collect`).
pub fn execute(args: &Args) -> anyhow::Result<Report> {
    let config = match &args.config {
        Some(path) => Some(read_config(path)?),
        None => None,
    };
    let decode = Schedule::clamped(
        args.wait,
        args.warmup,
        args.decode_active,
        args.repeat,
        args.decode_skip_first,
        args.skip_first_wait,
    );
    let window = decode
        .skip_first
        .saturating_add(decode.repeat.max(1).saturating_mul(decode.cycle()));
    let evaluated = args
        .step_calls
        .or_else(|| config.as_ref().map(|c| c.guaranteed_decode_step_calls()));
    if window > MAX_SIMULATED_STEPS
        || (decode.repeat == 0 && evaluated.is_some_and(|e| e > MAX_SIMULATED_STEPS))
    {
        bail!(
            "a decode window over {MAX_SIMULATED_STEPS} steps is not simulated (skip_first + repeat × \
             (wait + warmup + active) = {window}); no inference run profiles that many steps"
        );
    }
    let plan = Plan::new(&PlanRequest {
        phases: args.phase.into(),
        decode,
        decode_step_calls: args.step_calls,
        config,
    });
    Ok(Report {
        plan,
        config_path: args.config.as_ref().map(|p| p.display().to_string()),
    })
}

fn read_config(path: &Path) -> anyhow::Result<npuprof_patch::plan::RunConfig> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read the config `{}`", path.display()))?;
    let text =
        String::from_utf8(bytes).with_context(|| format!("`{}` is not UTF-8", path.display()))?;
    read_run_config(&text).with_context(|| format!("cannot read the config `{}`", path.display()))
}

/// Runs `npuprof plan`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
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
pub fn human(report: &Report) -> String {
    let plan = &report.plan;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<8} {:>6} {:>10} {:>6} {:>4} {:>6}  {:<14} {:>9} {:>16}  closes cleanly",
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
            "{:<8} {:>6} {:>10} {:>6} {:>4} {:>6}  {:<14} {:>9} {:>16}  {}",
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
            format!("{} ({})", phase.evaluated_step_calls, phase.evaluated_from),
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
            "\nconfig {}: next_n {}, max_new_tokens {}{}, guarantees {} decode step() calls",
            report.config_path.as_deref().unwrap_or("-"),
            config.config.next_n,
            config.effective_max_new_tokens,
            if config.config.max_new_tokens.is_none() {
                " (absent: the engine's default)"
            } else {
                ""
            },
            config.guaranteed_decode_step_calls,
        );
        for reason in &config.cannot_capture {
            let _ = writeln!(out, "  cannot capture {reason}");
        }
    }
    match plan.min_max_new_tokens {
        Some(min) => {
            let decode_calls = plan
                .phases
                .iter()
                .find_map(|p| p.min_step_calls.filter(|_| p.phase.name() == "decode"));
            let formula = decode_calls
                .map(|calls| {
                    format!(
                        " (= 1 + (next_n {} + 1) × {calls} decode step() calls)",
                        plan.next_n
                    )
                })
                .unwrap_or_default();
            let decode_planned = decode_calls.is_some();
            let verdict = match &plan.config {
                Some(c) if c.budget_sufficient => "; the config's budget is enough".to_owned(),
                Some(c) if !c.config.has_model_config => {
                    "; this config has no profiler switch".to_owned()
                }
                Some(c) if decode_planned && c.effective_max_new_tokens <= 1 => format!(
                    "; the config is prefill-only: `npuprof patch --max-new-tokens {min}` would make it decode"
                ),
                Some(c) => format!(
                    "; the config has {}: raise it (npuprof patch does)",
                    c.effective_max_new_tokens
                ),
                None => String::new(),
            };
            let _ = writeln!(out, "min max_new_tokens: {min}{formula}{verdict}");
        }
        None => {
            let _ = writeln!(
                out,
                "min max_new_tokens: none (repeat=0: the decode window never closes by itself)"
            );
        }
    }
    out
}
