//! Planning a capture of a live server (`plan --engine`): the window is "after W warm-up
//! requests, record while N requests run, then stop". There is no schedule: the server records
//! every engine iteration between `/start_profile` and `/stop_profile`, prefills and decodes
//! mixed by continuous batching. The plan says how many iterations that is, how much of it is
//! decode, how large each rank's output gets (and by which model), and what the version's
//! hard-coded level and metrics cannot show.

use npuprof_repository::engine::{ConfigStyle, EngineDefinition, ParseMode, VersionFacts};
use npuprof_schedule::PhaseSelection;
use serde::Serialize;

use crate::WorkflowError;

/// Version of `plan --engine … --json`.
pub const SERVE_PLAN_SCHEMA_VERSION: u32 = 1;

/// Bytes of text export per kernel, with call stacks, shapes and memory on: the vendored real
/// Level1 run (`crates/verify/tests/data/runs/msinsight-text-level1`, rank 0: 2,895,625 bytes of
/// `ASCEND_PROFILER_OUTPUT` for 191 kernels; a test recomputes it).
pub const BYTES_PER_KERNEL_WITH_STACK: u64 = 15_200;

/// Bytes per kernel without stacks and memory: the same run less its `python_function`
/// events, call-stack strings, memory CSVs and counter events (about 5,100 bytes per kernel;
/// docs/vllm-ascend.md shows the sums).
pub const BYTES_PER_KERNEL: u64 = 5_100;

/// Kernels one engine iteration launches when the user does not say (an assumption: a dense
/// model of a few dozen layers launches hundreds to a few thousand; count yours in one step of
/// an earlier profile's kernel_details.csv).
pub const DEFAULT_KERNELS_PER_STEP: u64 = 1_000;

/// The load a server capture sends when not told otherwise: one definition for `plan --engine`
/// and `collect --engine`, so that the plan is of the capture collect makes.
pub mod load_defaults {
    /// Profiled requests.
    pub const REQUESTS: u32 = 32;
    /// Prompt tokens per request.
    pub const PROMPT_LEN: u32 = 128;
    /// Output tokens per request (long outputs make a decode-dominated window).
    pub const OUTPUT_LEN: u32 = 128;
    /// Requests in flight at once.
    pub const CONCURRENCY: u32 = 8;
    /// Warm-up requests before the profiler starts (the same shape).
    pub const WARMUP: u32 = 4;
}

/// The load and the capture asked for.
#[derive(Debug, Clone, Copy)]
pub struct ServeLoad {
    /// Requests recorded.
    pub requests: u64,
    /// Prompt tokens per request.
    pub prompt_len: u64,
    /// Output tokens per request.
    pub output_len: u64,
    /// Requests in flight at once.
    pub concurrency: u64,
    /// Warm-up requests before profiling starts.
    pub warmup: u64,
    /// Tensor-parallel size (ranks).
    pub tp: u32,
    /// Call stacks on.
    pub with_stack: bool,
    /// Kernels per engine iteration, when known.
    pub kernels_per_step: Option<u64>,
    /// The phase asked for (one phase: runs per stage, for an engine whose start takes it).
    pub phases: PhaseSelection,
    /// Forward steps asked of the server (`None`: start and stop around the load).
    pub steps: Option<u64>,
}

/// The window asked of a server whose start request takes one.
#[derive(Debug, Clone, Serialize)]
pub struct StageWindow {
    /// Forward steps (per stage when `by_stage`).
    pub steps: u64,
    /// Whether each stage (prefill, decode) is a run of its own.
    pub by_stage: bool,
    /// Run directories each rank writes.
    pub runs_per_rank: u32,
    /// The start request's JSON body.
    pub body: String,
}

/// Engine iterations in the window.
#[derive(Debug, Clone, Serialize)]
pub struct Iterations {
    /// Prefills: one per request (several may share an iteration).
    pub prefills: u64,
    /// Decode iterations ≈ ceil(N/C)·O: C requests decode together, O tokens each.
    pub decode: u64,
    /// At most prefills + decode iterations (fewer when prefills share iterations with decodes).
    pub at_most: u64,
    /// Share of the iterations that are decode, at most-iterations (0 to 1).
    pub decode_share: f64,
    /// Prompt tokens prefilled in the window (N·P).
    pub prompt_tokens: u64,
}

/// The output size estimate per rank.
#[derive(Debug, Clone, Serialize)]
pub struct OutputEstimate {
    /// Bytes of text export per rank.
    pub bytes_per_rank: u64,
    /// Ranks writing (the tensor-parallel size).
    pub ranks: u32,
    /// Kernels per iteration used.
    pub kernels_per_step: u64,
    /// Whether that number is the default assumption.
    pub kernels_per_step_assumed: bool,
    /// Bytes per kernel used.
    pub bytes_per_kernel: u64,
    /// The model behind the estimate, in words.
    pub model: String,
}

/// `plan --engine … --json`.
#[derive(Debug, Clone, Serialize)]
pub struct ServePlan {
    /// [`SERVE_PLAN_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The engine definition's id.
    pub engine: String,
    /// The window in words.
    pub window: String,
    /// Warm-up requests before the start.
    pub warmup_requests: u64,
    /// Requests recorded.
    pub requests: u64,
    /// Prompt tokens per request.
    pub prompt_len: u64,
    /// Output tokens per request.
    pub output_len: u64,
    /// Requests in flight.
    pub concurrency: u64,
    /// Tensor-parallel size.
    pub tp: u32,
    /// What the window records.
    pub records: String,
    /// Engine iterations in the window.
    pub iterations: Iterations,
    /// How to make the window decode-dominated.
    pub decode_dominated: String,
    /// The output size estimate.
    pub output: OutputEstimate,
    /// The config style the version takes.
    pub config_style: ConfigStyle,
    /// Whether the style and level/metrics were read from a source (`false`: the newest
    /// version of the style is assumed).
    pub from_source: bool,
    /// The hard-coded level.
    pub level: String,
    /// The hard-coded AI Core metrics.
    pub aic_metrics: String,
    /// What that level and those metrics cannot show.
    pub cannot_show: Vec<String>,
    /// Who parses the output.
    pub parse: ParseMode,
    /// Call stacks on.
    pub with_stack: bool,
    /// The window asked of the server (`--phase`, `--decode-active`), when the engine takes one.
    pub stage_window: Option<StageWindow>,
    /// What to do with a prefill/decode pair, when the engine has PD disaggregation.
    pub pd: Option<String>,
    /// Things to know before running.
    pub warnings: Vec<String>,
}

/// The plan of a capture of `definition`'s server, for a version with `facts` (read from its
/// source when `from_source`).
pub fn plan_serve(
    definition: &EngineDefinition,
    facts: &VersionFacts,
    from_source: bool,
    load: ServeLoad,
) -> Result<ServePlan, WorkflowError> {
    for (name, value) in [
        ("--requests", load.requests),
        ("--output-len", load.output_len),
        ("--concurrency", load.concurrency),
        ("--tp", u64::from(load.tp)),
    ] {
        if value == 0 {
            return Err(WorkflowError::NotPlannable(format!(
                "{name} must be at least 1"
            )));
        }
    }
    if load.kernels_per_step == Some(0) {
        return Err(WorkflowError::NotPlannable(
            "--kernels-per-step must be at least 1".to_owned(),
        ));
    }
    let overflow = || WorkflowError::NotPlannable("the load is too large to plan".to_owned());
    let rounds = load.requests.div_ceil(load.concurrency);
    let decode = rounds.checked_mul(load.output_len).ok_or_else(overflow)?;
    let at_most = decode.checked_add(load.requests).ok_or_else(overflow)?;
    let prompt_tokens = load
        .requests
        .checked_mul(load.prompt_len)
        .ok_or_else(overflow)?;
    #[allow(clippy::cast_precision_loss, reason = "a ratio for display")]
    let decode_share = decode as f64 / at_most as f64;
    let kernels_per_step = load.kernels_per_step.unwrap_or(DEFAULT_KERNELS_PER_STEP);
    let bytes_per_kernel = if load.with_stack {
        BYTES_PER_KERNEL_WITH_STACK
    } else {
        BYTES_PER_KERNEL
    };
    let http = &definition.http;
    let style = definition.style(facts.style);
    let mut warnings = Vec::new();
    let stage_window = stage_window(definition, facts, &load, decode, &mut warnings)?;
    let recorded = stage_window.as_ref().map_or(at_most, |w| {
        w.steps.saturating_mul(u64::from(w.runs_per_rank))
    });
    let bytes_per_rank = recorded
        .checked_mul(kernels_per_step)
        .and_then(|k| k.checked_mul(bytes_per_kernel))
        .ok_or_else(overflow)?;
    if load.with_stack {
        warnings.push(format!(
            "call stacks are on: about {:.1}× the output ({BYTES_PER_KERNEL_WITH_STACK} vs {BYTES_PER_KERNEL} bytes per kernel on the real sample) and a slower server while recording",
            ratio(BYTES_PER_KERNEL_WITH_STACK, BYTES_PER_KERNEL)
        ));
    } else if let Some(s) = style.filter(|s| s.stack_default && facts.stack_setting_read) {
        warnings.push(format!(
            "this version records call stacks unless {} is off: npuprof collect turns it off (pass --with-stack to keep them)",
            s.stack_key()
        ));
    }
    if let (Some(s), Some(true)) = (style, style.and_then(|s| s.shapes_default)) {
        warnings.push(format!(
            "this version records operator shapes unless {} is off: npuprof collect turns it off",
            s.body.as_ref().map_or("", |b| b.shapes.as_str())
        ));
    }
    if load.requests < load.concurrency {
        warnings.push(format!(
            "{} requests never reach concurrency {}: the batch holds {} at most",
            load.requests, load.concurrency, load.requests
        ));
    }
    if load.warmup == 0 {
        warnings.push(
            "no warm-up requests: the first iterations recorded include one-time costs (graph capture, compilation, memory pools)"
                .to_owned(),
        );
    }
    let parse = definition.parse_mode(load.tp, facts.async_parse);
    match parse {
        ParseMode::RawOnly => warnings.push(format!(
            "with TP {} the workers are daemon processes and leave raw data only: each run directory needs an offline analyse() (npuprof collect runs it; npuprof verify names the command)",
            load.tp
        )),
        ParseMode::Async => warnings.push(format!(
            "this version parses asynchronously: {} returns before the output exists, so wait until every rank's files stop changing",
            http.stop
        )),
        ParseMode::InEngine => {}
    }
    if let Some(note) = definition.no_pipe_metrics_note(&facts.metrics) {
        warnings.push(note);
    }
    if let Some(ec) = definition
        .experimental_config
        .as_ref()
        .filter(|ec| ec.level == facts.level && ec.metrics == facts.metrics)
    {
        warnings.push(format!(
            "this version builds no experimental config (before {}): torch_npu's defaults, so verify expects no pipe metrics",
            ec.since
        ));
    }
    if !from_source {
        warnings.push(format!(
            "the level and metrics are those of the newest {}-style version: pass --repo with your checkout or site-packages to read your version's",
            facts.style.as_str()
        ));
    }
    let sent = format!(
        "send {} requests (prompt {} tokens, output {} tokens, {} in flight)",
        load.requests, load.prompt_len, load.output_len, load.concurrency
    );
    let (window, records, decode_dominated) = match &stage_window {
        Some(w) => (
            format!(
                "after {} warm-up request(s), POST {} {}, {sent}; the server stops by itself after the steps ({} if the load ends first)",
                load.warmup, http.start, w.body, http.stop
            ),
            if w.by_stage {
                format!(
                    "each stage as a run of its own, {} forward steps each: the prefill batches from the start, then the decode steps (a prefill batch inside the decode window is recorded while the prefill count is within the steps, and ends the window after)",
                    w.steps
                )
            } else {
                format!("{} forward steps from the start, prefill and decode mixed", w.steps)
            },
            "asked: the decode stage's run holds decode steps only; admit every request at once (concurrency ≥ requests) so no prefill falls inside it".to_owned(),
        ),
        None => (
            format!(
                "after {} warm-up request(s), POST {}, {sent}, wait for them, POST {}",
                load.warmup, http.start, http.stop
            ),
            "every engine iteration between start and stop, prefill and decode mixed: continuous batching admits a new request's prefill while others decode, and the profile has no Step Ids to tell them apart (windows are by wall time)"
                .to_owned(),
            format!(
                "use long outputs (decode iterations grow with --output-len, prefills stay {}), and start recording after the prefills: send the requests first and POST {} once every request has its first token, so the window holds decode iterations only",
                load.requests, http.start
            ),
        ),
    };
    Ok(ServePlan {
        schema_version: SERVE_PLAN_SCHEMA_VERSION,
        engine: definition.id.clone(),
        window,
        warmup_requests: load.warmup,
        requests: load.requests,
        prompt_len: load.prompt_len,
        output_len: load.output_len,
        concurrency: load.concurrency,
        tp: load.tp,
        records,
        iterations: Iterations {
            prefills: load.requests,
            decode,
            at_most,
            decode_share,
            prompt_tokens,
        },
        decode_dominated,
        output: OutputEstimate {
            bytes_per_rank,
            ranks: load.tp,
            kernels_per_step,
            kernels_per_step_assumed: load.kernels_per_step.is_none(),
            bytes_per_kernel,
            model: format!(
                "iterations (at most {recorded}) × kernels per iteration ({kernels_per_step}{}) × bytes per kernel ({bytes_per_kernel}, measured on a real Level1 text export {} call stacks); per rank, every rank alike",
                if load.kernels_per_step.is_none() {
                    ", assumed: pass --kernels-per-step"
                } else {
                    ""
                },
                if load.with_stack { "with" } else { "without" }
            ),
        },
        config_style: facts.style,
        from_source,
        level: facts.level.clone(),
        aic_metrics: facts.metrics.clone(),
        cannot_show: definition.cannot_show(&facts.level, &facts.metrics),
        parse,
        with_stack: load.with_stack,
        stage_window,
        pd: definition.pd.as_ref().map(|pd| pd.note.clone()),
        warnings,
    })
}

/// The window asked of the server, when `--phase` or `--decode-active` was given: refused for
/// an engine whose start request takes none, warned when the load is shorter than the steps.
fn stage_window(
    definition: &EngineDefinition,
    facts: &VersionFacts,
    load: &ServeLoad,
    decode: u64,
    warnings: &mut Vec<String>,
) -> Result<Option<StageWindow>, WorkflowError> {
    let by_stage = load.phases != PhaseSelection::Both;
    if !by_stage && load.steps.is_none() {
        return Ok(None);
    }
    let Some(body) = definition.style(facts.style).and_then(|s| s.body.as_ref()) else {
        return Err(WorkflowError::NotPlannable(format!(
            "--phase and --decode-active: {}'s start request takes no window (it records everything between start and stop, prefill and decode mixed)",
            definition.id
        )));
    };
    let stages = &definition.results.stage_order;
    if let Some(phase) = load
        .phases
        .phases()
        .into_iter()
        .find(|p| by_stage && !stages.contains(p))
    {
        return Err(WorkflowError::NotPlannable(format!(
            "--phase {}: {} records no such stage of its own",
            phase.name(),
            definition.id
        )));
    }
    let steps = load.steps.unwrap_or(1);
    if steps > decode {
        warnings.push(format!(
            "the load runs about {decode} decode iterations, fewer than the {steps} steps asked: the server would not stop by itself (collect then stops it and says so); send more requests or longer outputs"
        ));
    }
    let mut json = serde_json::json!({});
    json[body.dir.as_str()] = serde_json::json!("<dir>");
    json[body.stack.as_str()] = serde_json::json!(false);
    json[body.shapes.as_str()] = serde_json::json!(false);
    json[body.steps.as_str()] = serde_json::json!(steps);
    if by_stage {
        json[body.by_stage.as_str()] = serde_json::json!(true);
    }
    let runs_per_rank = if by_stage {
        u32::try_from(stages.len()).unwrap_or(u32::MAX)
    } else {
        1
    };
    Ok(Some(StageWindow {
        steps,
        by_stage,
        runs_per_rank,
        body: json.to_string(),
    }))
}

fn ratio(a: u64, b: u64) -> f64 {
    #[allow(clippy::cast_precision_loss, reason = "a ratio for display")]
    {
        a as f64 / b as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load() -> ServeLoad {
        ServeLoad {
            requests: 10,
            prompt_len: 128,
            output_len: 100,
            concurrency: 4,
            warmup: 2,
            tp: 1,
            with_stack: false,
            kernels_per_step: Some(500),
            phases: PhaseSelection::Both,
            steps: None,
        }
    }

    fn plan(load: ServeLoad) -> ServePlan {
        let d = EngineDefinition::vllm_ascend();
        plan_serve(d, &d.style_facts(ConfigStyle::ProfilerConfig), true, load).unwrap()
    }

    #[test]
    fn iterations_are_rounds_of_concurrency_times_output_plus_prefills() {
        let p = plan(load());
        // ceil(10 / 4) = 3 rounds of 100 decode iterations; 10 prefills.
        assert_eq!(
            (
                p.iterations.decode,
                p.iterations.prefills,
                p.iterations.at_most
            ),
            (300, 10, 310)
        );
        assert_eq!(p.iterations.prompt_tokens, 1280);
        assert!((p.iterations.decode_share - 300.0 / 310.0).abs() < 1e-12);
        assert_eq!(p.output.bytes_per_rank, 310 * 500 * BYTES_PER_KERNEL);
        assert!(!p.output.kernels_per_step_assumed);
    }

    #[test]
    fn stacks_warn_and_use_the_larger_size() {
        let p = plan(ServeLoad {
            with_stack: true,
            ..load()
        });
        assert_eq!(p.output.bytes_per_kernel, BYTES_PER_KERNEL_WITH_STACK);
        assert!(
            p.warnings
                .iter()
                .any(|w| w.starts_with("call stacks are on")),
            "{:?}",
            p.warnings
        );
        let off = plan(load());
        assert!(
            !off.warnings
                .iter()
                .any(|w| w.starts_with("call stacks are on"))
        );
        assert!(off.warnings.iter().any(|w| w.contains("turns it off")));
    }

    #[test]
    fn a_version_that_fixes_stacks_in_code_gets_no_stack_default_warning() {
        let d = EngineDefinition::vllm_ascend();
        let facts = VersionFacts {
            stack_setting_read: false,
            ..d.style_facts(ConfigStyle::Env)
        };
        let p = plan_serve(d, &facts, true, load()).unwrap();
        assert!(
            !p.warnings.iter().any(|w| w.contains("turns it off")),
            "{:?}",
            p.warnings
        );
    }

    #[test]
    fn tp_above_one_leaves_raw_data_and_zero_is_refused() {
        let p = plan(ServeLoad { tp: 4, ..load() });
        assert_eq!(p.parse, ParseMode::RawOnly);
        assert!(p.warnings.iter().any(|w| w.contains("raw data only")));
        let d = EngineDefinition::vllm_ascend();
        let facts = d.style_facts(ConfigStyle::Env);
        for bad in [
            ServeLoad {
                requests: 0,
                ..load()
            },
            ServeLoad {
                concurrency: 0,
                ..load()
            },
            ServeLoad {
                output_len: 0,
                ..load()
            },
            ServeLoad {
                kernels_per_step: Some(0),
                ..load()
            },
            ServeLoad {
                requests: u64::MAX,
                output_len: u64::MAX,
                ..load()
            },
        ] {
            assert!(plan_serve(d, &facts, true, bad).is_err());
        }
    }

    #[test]
    fn ai_core_none_says_what_it_cannot_show() {
        let d = EngineDefinition::vllm_ascend();
        let p = plan_serve(d, &d.style_facts(ConfigStyle::Env), false, load()).unwrap();
        assert_eq!(
            (p.level.as_str(), p.aic_metrics.as_str()),
            ("Level1", "AiCoreNone")
        );
        assert!(p.cannot_show.iter().any(|c| c.contains("pipe utilisation")));
        assert!(p.warnings.iter().any(|w| w.contains("no pipe metrics")));
        assert!(p.warnings.iter().any(|w| w.contains("pass --repo")));
    }

    /// The per-kernel size with stacks is the vendored real run's: its output bytes over its
    /// kernel rows.
    #[test]
    fn bytes_per_kernel_with_stack_is_the_real_samples() {
        let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../verify/tests/data/runs/msinsight-text-level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT");
        let mut bytes = 0;
        for entry in std::fs::read_dir(&out).unwrap() {
            bytes += entry.unwrap().metadata().unwrap().len();
        }
        let kernels = std::fs::read_to_string(out.join("kernel_details.csv"))
            .unwrap()
            .lines()
            .count() as u64
            - 1;
        let measured = bytes / kernels;
        assert!(
            measured.abs_diff(BYTES_PER_KERNEL_WITH_STACK) * 50 < BYTES_PER_KERNEL_WITH_STACK,
            "{measured}"
        );
    }
}
