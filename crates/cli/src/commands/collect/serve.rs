//! `npuprof collect --engine ENGINE`: collect against a live server (`npuprof_serve`), with its
//! progress on stderr (a status line on a terminal) and its report on stdout.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use npuprof_serve::http::Endpoint;
use npuprof_serve::load::{Api, Load, LoadReport};
use npuprof_serve::settings::{self, ConfigStyle, Engine};
use npuprof_serve::{
    Event, Observer, ParsedBy, ServeReport, ServeRequest, Stage, Target, Timing, WindowClosed,
};
use npuprof_verify::Severity;
use npuprof_workflow::collect::{Interrupt, Output};

use super::Args;
use super::status_line::StatusLine;
use super::summary::{relative, write_verdict};
use crate::exit::Exit;
use crate::failure::{ErrorCode, Failure};
use crate::output;

/// The OpenAI route of the load (`--api`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ApiArg {
    /// `/v1/completions`, the prompt as token ids (its length exact).
    #[default]
    Completions,
    /// `/v1/chat/completions`, one user message of P words.
    Chat,
}

/// How the installed engine switches its profiler on (`--config-style`): one of the styles
/// its definition has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StyleArg {
    /// Environment variables (vLLM-Ascend before January 2026).
    Env,
    /// `--profiler-config` (vLLM-Ascend from January 2026).
    ProfilerConfig,
    /// The start request's JSON body (SGLang).
    Request,
}

impl From<StyleArg> for ConfigStyle {
    fn from(style: StyleArg) -> Self {
        match style {
            StyleArg::Env => ConfigStyle::Env,
            StyleArg::ProfilerConfig => ConfigStyle::ProfilerConfig,
            StyleArg::Request => ConfigStyle::Request,
        }
    }
}

/// The help heading of the serving options.
const SERVING: &str = "Serving (--engine)";

/// The options of `collect --engine`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeArgs {
    /// Profiled requests [default: 32].
    #[arg(long, value_name = "N", requires = "engine", help_heading = SERVING, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub requests: Option<u32>,
    /// Prompt tokens per request [default: 128].
    #[arg(long, value_name = "P", requires = "engine", help_heading = SERVING, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub prompt_len: Option<u32>,
    /// Output tokens per request (long outputs make a decode-dominated window) [default: 128].
    #[arg(long, value_name = "O", requires = "engine", help_heading = SERVING, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub output_len: Option<u32>,
    /// Requests in flight at once [default: 8].
    #[arg(long, value_name = "C", requires = "engine", help_heading = SERVING, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub concurrency: Option<u32>,
    /// Warm-up requests before the profiler starts (same shape) [default: 4].
    #[arg(long, value_name = "W", requires = "engine", help_heading = SERVING, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub warmup: Option<u32>,
    /// The OpenAI route of the load [default: completions].
    #[arg(long, value_enum, requires = "engine", help_heading = SERVING)]
    pub api: Option<ApiArg>,
    /// The server's address: a running server to profile (without a command), or where the
    /// started command listens [default: its --host/--port, else http://127.0.0.1:8000].
    #[arg(long, value_name = "URL", requires = "engine", help_heading = SERVING)]
    pub url: Option<String>,
    /// Where the profile goes: the server's profiler directory (required with --url alone,
    /// unless the engine's start request names it) [default: a new `npuprof-<engine>-<time>`
    /// directory here].
    #[arg(long, value_name = "DIR", requires = "engine", help_heading = SERVING)]
    pub profile_dir: Option<PathBuf>,
    /// How the installed engine switches its profiler on [default: read from --engine-source,
    /// else from the engine's package the command's own Python finds, else the engine's newest
    /// style].
    #[arg(long, value_enum, requires = "engine", help_heading = SERVING)]
    pub config_style: Option<StyleArg>,
    /// The engine's checkout or the site-packages directory that holds it: its config style,
    /// level and metrics are read from its source (as `route` reads them).
    #[arg(long, value_name = "DIR", requires = "engine", conflicts_with = "config_style", help_heading = SERVING)]
    pub engine_source: Option<PathBuf>,
    /// Seconds to wait for the server to become healthy [default: 1200].
    #[arg(long, value_name = "SECS", requires = "engine", help_heading = SERVING, value_parser = seconds)]
    pub health_timeout: Option<Duration>,
    /// Seconds the warm-up, and again the load, may take [default: 1800].
    #[arg(long, value_name = "SECS", requires = "engine", help_heading = SERVING, value_parser = seconds)]
    pub load_timeout: Option<Duration>,
    /// Seconds from the stop until every rank's output is complete, and again for the offline
    /// parse [default: 900].
    #[arg(long, value_name = "SECS", requires = "engine", help_heading = SERVING, value_parser = seconds)]
    pub output_timeout: Option<Duration>,
    /// Seconds without a change in the run directories that make the output complete [default: 5].
    #[arg(long, value_name = "SECS", requires = "engine", help_heading = SERVING, value_parser = seconds)]
    pub quiet: Option<Duration>,
    /// Seconds from SIGTERM to SIGKILL when the server is stopped [default: 15].
    #[arg(long, value_name = "SECS", requires = "engine", help_heading = SERVING, value_parser = seconds)]
    pub grace: Option<Duration>,
}

/// A duration in seconds (fractions allowed), at most a day.
fn seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(0.0..=86_400.0).contains(&secs) {
        return Err(format!("{text} is not from 0 to 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

use npuprof_workflow::serve_plan::load_defaults::{
    CONCURRENCY as DEFAULT_CONCURRENCY, OUTPUT_LEN as DEFAULT_OUTPUT_LEN,
    PROMPT_LEN as DEFAULT_PROMPT_LEN, REQUESTS as DEFAULT_REQUESTS, WARMUP as DEFAULT_WARMUP,
};

/// Runs `collect --engine ID` (`ID` a serving-engine definition's).
pub fn run(args: &Args, engine: &str) -> anyhow::Result<Exit> {
    refuse_repository_flags(args)?;
    npuprof_repository::Catalog::global().map_err(npuprof_repository::TargetError::from)?;
    let engine = Engine::by_id(engine).ok_or_else(|| {
        Failure::new(
            ErrorCode::Usage,
            format!("no serving-engine definition `{engine}`"),
        )
    })?;
    let (settings, style_from) = version_settings(args, engine)?;
    let serve = &args.serve;
    let url = serve.url.as_deref().map(Endpoint::parse).transpose()?;
    let cwd = std::env::current_dir()?;
    let target = match (args.launch.is_empty(), url) {
        (false, url) => Target::Launch {
            argv: args.launch.clone(),
            cwd: cwd.clone(),
            url,
        },
        (true, Some(url)) => {
            if serve.profile_dir.is_none() && settings.start_body.is_none() {
                let keys: Vec<&str> = engine
                    .definition()
                    .styles
                    .iter()
                    .rev()
                    .map(|s| s.dir_key())
                    .collect();
                return Err(Failure::new(
                    ErrorCode::Usage,
                    "--url without a command needs --profile-dir",
                )
                .with_hint(format!(
                    "give the running server's profiler directory (its {})",
                    keys.join(" or ")
                ))
                .into());
            }
            Target::Attach(url)
        }
        (true, None) => return Err(npuprof_serve::ServeError::no_command(engine).into()),
    };
    let profile_dir = match &serve.profile_dir {
        Some(dir) => cwd.join(dir),
        None => cwd.join(default_dir(engine)),
    };
    let model = match &target {
        Target::Launch { argv, .. } => settings::read_command(engine, argv)
            .ok()
            .and_then(|facts| facts.model),
        Target::Attach(_) => None,
    };
    let load = Load {
        requests: serve.requests.unwrap_or(DEFAULT_REQUESTS) as usize,
        prompt_len: serve.prompt_len.unwrap_or(DEFAULT_PROMPT_LEN) as usize,
        output_len: serve.output_len.unwrap_or(DEFAULT_OUTPUT_LEN) as usize,
        concurrency: serve.concurrency.unwrap_or(DEFAULT_CONCURRENCY) as usize,
        api: match serve.api.unwrap_or_default() {
            ApiArg::Completions => Api::Completions,
            ApiArg::Chat => Api::Chat,
        },
        model,
    };
    let defaults = Timing::default();
    let request = ServeRequest {
        engine,
        settings,
        style_from,
        target,
        profile_dir,
        warmup: Load {
            requests: serve.warmup.unwrap_or(DEFAULT_WARMUP) as usize,
            ..load.clone()
        },
        load,
        window: npuprof_serve::ServeWindow {
            phases: args.window.phases(),
            steps: (args.window.phase.is_some() || args.window.decode_active.is_some())
                .then(|| args.window.decode_active()),
        },
        timing: Timing {
            health: serve.health_timeout.unwrap_or(defaults.health),
            load: serve.load_timeout.unwrap_or(defaults.load),
            output: serve.output_timeout.unwrap_or(defaults.output),
            overall: args.timeout.map(Duration::from_secs),
            quiet: serve.quiet.unwrap_or(defaults.quiet),
            grace: serve.grace.unwrap_or(defaults.grace),
        },
    };
    npuprof_serve::check(&request)?;
    npuprof_serve::make_profile_dir(&request)?;
    let interrupt = Interrupt::on_signals()
        .map_err(|e| anyhow::anyhow!("cannot install the Ctrl-C handler: {e}"))?;
    let mut printer = Printer {
        status: StatusLine::new(),
    };
    let report = npuprof_serve::collect(&request, &mut printer, &interrupt)?;
    let text = render(&report);
    if args.json {
        output::print_json(&report)?;
        errprint!("{text}");
    } else {
        output::print_text(&text)?;
    }
    Ok(match report.exit_code {
        0 => Exit::Ok,
        1 => Exit::Findings,
        _ => Exit::Error,
    })
}

/// The settings of the version that will run, and where they came from: `--engine-source`,
/// `--config-style`, else the engine's package as the command's own Python finds it, else the
/// definition's newest style (said so).
fn version_settings(
    args: &Args,
    engine: Engine,
) -> anyhow::Result<(settings::ServeSettings, settings::StyleFrom)> {
    let serve = &args.serve;
    if let Some(source) = &serve.engine_source {
        let settings = settings::from_source(engine, source)
            .map_err(|message| Failure::new(ErrorCode::InvalidInput, message))?;
        return Ok((settings, settings::StyleFrom::EngineSource(source.clone())));
    }
    let definition = engine.definition();
    if let Some(style) = serve.config_style {
        let style = ConfigStyle::from(style);
        if definition.style(style).is_none() {
            let known: Vec<&str> = definition.styles.iter().map(|s| s.style.as_str()).collect();
            return Err(Failure::new(
                ErrorCode::Usage,
                format!(
                    "--config-style {}: {} has no such style (it has {})",
                    style.as_str(),
                    engine.name(),
                    known.join(", ")
                ),
            )
            .into());
        }
        return Ok((
            settings::for_engine(engine, style),
            settings::StyleFrom::Option,
        ));
    }
    // The code that will run: the engine's package as the command's own Python finds it.
    let env = settings::env_for(
        &settings::for_engine(engine, newest_style(engine)),
        std::path::Path::new(""),
    );
    let found = settings::command_python(&args.launch)
        .and_then(|python| settings::package_root(engine, &python, &env));
    if let Some(root) = found
        && npuprof_repository::engine::detect_with(definition, &root).is_some()
    {
        let settings = settings::from_source(engine, &root).map_err(|message| {
            Failure::new(
                ErrorCode::InvalidInput,
                format!(
                    "{message} (the package the command's Python finds, under {})",
                    root.display()
                ),
            )
            .with_hint("pass --engine-source DIR or --config-style to override")
        })?;
        return Ok((settings, settings::StyleFrom::CommandPython(root)));
    }
    Ok((
        settings::for_engine(engine, newest_style(engine)),
        settings::StyleFrom::Assumed,
    ))
}

/// The definition's newest config style (its last).
fn newest_style(engine: Engine) -> ConfigStyle {
    engine
        .definition()
        .styles
        .last()
        .map_or(ConfigStyle::ProfilerConfig, |s| s.style)
}

/// The repository's flags mean nothing for a server: refused, not ignored.
fn refuse_repository_flags(args: &Args) -> anyhow::Result<()> {
    let t = &args.target;
    let given = [
        ("--repo", t.repo.is_some()),
        ("--model", t.model.is_some()),
        ("--yaml", t.yaml.is_some()),
        ("--config", t.config.is_some()),
        ("--pd-role", t.pd_role.is_some()),
        ("--keep-patch", args.keep_patch),
        (
            "--decode-skip-first",
            args.window.decode_skip_first.is_some(),
        ),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, set)| *set) {
        return Err(Failure::new(
            ErrorCode::Usage,
            format!("{flag} is for a repository; --engine collects from a server"),
        )
        .with_hint("a server's window is its load: --requests, --prompt-len, --output-len, --concurrency, --warmup")
        .into());
    }
    Ok(())
}

/// `npuprof-<engine>-<unix seconds>`.
fn default_dir(engine: Engine) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("npuprof-{}-{now}", engine.name())
}

/// Prints progress on stderr.
struct Printer {
    status: StatusLine,
}

impl Observer for Printer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Settings(s) => {
                errln!(
                    "npuprof collect: this engine version hard-codes {} + {} (not selectable); the call stack is off",
                    s.level,
                    s.aic_metrics
                );
                if let Some(note) = &s.no_pipe_metrics_note {
                    errln!("npuprof collect: warning: {note}");
                }
            }
            Event::Starting { argv, env } => {
                let env: Vec<String> = env
                    .iter()
                    .map(|(k, v)| format!("{k}={}", npuprof_paths::shell::quote(v)))
                    .collect();
                let env = if env.is_empty() {
                    String::new()
                } else {
                    format!("{} ", env.join(" "))
                };
                errln!(
                    "npuprof collect: starting `{env}{}`",
                    npuprof_paths::shell::join(argv)
                );
            }
            Event::Stage(stage) => {
                self.status.show(Output::Finished);
                errln!("npuprof collect: {}", stage.describe());
            }
            Event::Tick(_, elapsed) => self.status.show(Output::Tick(elapsed)),
            Event::Line(line) => self.status.show(Output::Line(line.to_owned())),
            Event::Loaded(stage, load) => {
                self.status.show(Output::Finished);
                errln!(
                    "npuprof collect: {}: {}",
                    describe_load(stage),
                    load_line(load)
                );
            }
            Event::Settled { runs, raw } => {
                self.status.show(Output::Finished);
                errln!(
                    "npuprof collect: output complete: {} run director{}, {} raw",
                    runs.len(),
                    if runs.len() == 1 { "y" } else { "ies" },
                    raw.len()
                );
            }
        }
    }
}

fn describe_load(stage: Stage) -> &'static str {
    match stage {
        Stage::WarmUp => "warm-up",
        _ => "load",
    }
}

fn load_line(load: &LoadReport) -> String {
    let mut line = format!(
        "{} of {} requests answered in {:.1}s ({} prompt, {} output tokens)",
        load.succeeded, load.sent, load.secs, load.prompt_tokens, load.completion_tokens
    );
    if load.short_outputs > 0 {
        let _ = write!(
            line,
            "; {} answered with fewer output tokens than asked",
            load.short_outputs
        );
    }
    if let Some(error) = &load.first_error {
        let _ = write!(line, "; first failure: {error}");
    }
    line
}

/// Where the version's facts came from, said.
fn style_from(from: &settings::StyleFrom) -> String {
    match from {
        settings::StyleFrom::Option => "as --config-style says".to_owned(),
        settings::StyleFrom::EngineSource(dir) => format!("read from {}", dir.display()),
        settings::StyleFrom::CommandPython(dir) => format!(
            "read from the package the command's Python runs ({})",
            dir.display()
        ),
        settings::StyleFrom::Assumed => {
            "the newest version assumed (the command's Python shows no package; pass --engine-source)".to_owned()
        }
    }
}

/// The human report.
pub fn render(report: &ServeReport) -> String {
    let mut s = String::new();
    use npuprof_workflow::collect::Outcome;
    let outcome = match (&report.error, report.outcome) {
        (Some(_), _) | (None, Outcome::Failed) => "stopped by an error",
        (None, Outcome::Clean) => "profile collected and verified",
        (None, Outcome::VerifyErrors) => "profile collected, with findings",
        (None, Outcome::Incomplete) => {
            "profile collected and verified, but INCOMPLETE: not all that was asked for happened (below)"
        }
    };
    let _ = writeln!(s, "collect: {outcome}");
    let _ = writeln!(
        s,
        "  engine: {} ({}), {} + {}, {}",
        report.engine.name(),
        report.config_style.as_str(),
        report.level,
        report.aic_metrics,
        report.url
    );
    let _ = writeln!(s, "  version: {}", style_from(&report.style_from));
    let window = &report.window;
    if let Some(steps) = window.steps {
        let per = if window.phase == npuprof_schedule::PhaseSelection::Both {
            "forward steps, prefill and decode mixed".to_owned()
        } else {
            "forward steps per stage, each stage a run of its own".to_owned()
        };
        let closed = match window.closed_by {
            Some(WindowClosed::Server) => "; the server stopped by itself after them",
            Some(WindowClosed::StopBeforeSteps) => {
                "; the load ended first: closed by the stop route, FEWER steps recorded (send more requests or longer outputs)"
            }
            _ => "",
        };
        let _ = writeln!(s, "  window: {steps} {per}{closed}");
    }
    if let Some(note) = &report.pd_note {
        let _ = writeln!(s, "  note: {note}");
    }
    if let Some(load) = &report.warmup {
        let _ = writeln!(s, "  warm-up: {}", load_line(load));
    }
    if let Some(load) = &report.load {
        let _ = writeln!(s, "  load: {}", load_line(load));
    }
    if let Some(secs) = report.settled_after_secs {
        let _ = writeln!(s, "  output complete {secs:.1}s after the stop");
    }
    let dir = report.profile_dir.display().to_string();
    let _ = writeln!(s, "  profile: {}", relative(&dir));
    for run in &report.runs {
        let name = run
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let by = match run.parsed_by {
            ParsedBy::Engine => "parsed by the engine",
            ParsedBy::Offline => "parsed offline by collect",
            ParsedBy::Raw => "raw data only",
        };
        let stage = run
            .stage
            .map(|p| format!(" ({} stage)", p.name()))
            .unwrap_or_default();
        let _ = writeln!(s, "    {name}{stage}: {by}");
    }
    for parse in report.parses.iter().filter(|p| p.error.is_some()) {
        let _ = writeln!(
            s,
            "    offline parse of {} {}: see {}",
            parse.run.display(),
            parse.error.as_deref().unwrap_or_default(),
            parse.log.display()
        );
    }
    for trace in &report.frontend_traces {
        let _ = writeln!(
            s,
            "    frontend trace: {}",
            relative(&trace.display().to_string())
        );
    }
    if let Some(verify) = &report.verify {
        write_verdict(&mut s, verify, true, Some(&dir));
    }
    if let Some(note) = &report.no_pipe_metrics_note {
        let _ = writeln!(s, "  note: {note}");
    }
    if let Some(shutdown) = &report.shutdown {
        let how = if shutdown.exited_early {
            "it had exited".to_owned()
        } else if shutdown.killed {
            "it ignored SIGTERM: killed".to_owned()
        } else {
            "stopped with SIGTERM".to_owned()
        };
        let _ = writeln!(s, "  server: {how}");
        for straggler in &shutdown.stragglers {
            let _ = writeln!(
                s,
                "    stopped pid {} left running: {}",
                straggler.pid, straggler.command
            );
        }
    }
    if let Some(log) = &report.server_log {
        let _ = writeln!(
            s,
            "  server output: {}",
            relative(&log.display().to_string())
        );
    }
    if let Some(error) = &report.error {
        let _ = writeln!(s, "  stopped: {}", error.message);
    }
    if let Some(summary) = &report.summary {
        let _ = write!(s, "\n{}", crate::commands::summary::human(summary));
        let shown = npuprof_paths::shell::quote(&relative(&dir));
        let _ = writeln!(
            s,
            "next: npuprof summary {shown} --html summary.html   (the full report, one self-contained page)"
        );
        let _ = writeln!(
            s,
            "next: npuprof advise {shown}   (what is wrong and what to do)"
        );
        let _ = writeln!(
            s,
            "next: npuprof breakdown {shown}   (where in the model the time goes: modules or layers)"
        );
    } else if let Some(error) = &report.summary_error {
        let _ = writeln!(s, "\nnpuprof collect: no summary of the profile: {error}");
    }
    let errors = report
        .verify
        .as_ref()
        .map_or(0, |v| v.count(Severity::Error));
    if errors > 0 {
        let _ = writeln!(
            s,
            "next: npuprof verify {}   (every finding)",
            npuprof_paths::shell::quote(&relative(&dir))
        );
    }
    s
}
