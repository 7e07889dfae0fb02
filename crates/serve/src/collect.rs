//! The loop: (start the server →) health → warm-up → start profile → load → stop profile →
//! output settled → offline parse → verify → summary, and the server shut down whatever
//! happened on the way.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hyper::Method;
use npuprof_schedule::PhaseSelection;
use npuprof_workflow::collect::{Interrupt, Outcome, POLL};

use crate::error::ServeError;
use crate::http::{self, Endpoint};
use crate::load::{self, Load, LoadReport};
use crate::output::{self, Settled};
use crate::parse;
use crate::report::{
    ParsedBy, RunOutput, SCHEMA_VERSION, ServeReport, Stopped, WindowClosed, WindowReport,
};
use crate::server::{self, Server};
use crate::settings::{self, Engine, ParseMode, ServeSettings};

/// Which server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Start this command (`vllm serve MODEL …`) in `cwd`; reach it at `url`, else at the
    /// address its options give.
    Launch {
        /// The command.
        argv: Vec<String>,
        /// Its working directory.
        cwd: PathBuf,
        /// Where it listens, when its options do not say.
        url: Option<Endpoint>,
    },
    /// A server that runs already, profiling into the profile directory.
    Attach(Endpoint),
}

/// How long each wait may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Until the server is healthy.
    pub health: Duration,
    /// For the warm-up, and again for the load.
    pub load: Duration,
    /// From the stop until the output is complete, and again for the offline parse.
    pub output: Duration,
    /// Nothing in the run directories changes for this long: the output is complete.
    pub quiet: Duration,
    /// From SIGTERM to SIGKILL.
    pub grace: Duration,
    /// The whole collect, start to shutdown (`--timeout`), beside the per-stage limits: when it
    /// passes, collect stops as on Ctrl-C and says so.
    pub overall: Option<Duration>,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            health: Duration::from_secs(1200),
            load: Duration::from_secs(1800),
            output: Duration::from_secs(900),
            quiet: Duration::from_secs(5),
            grace: Duration::from_secs(15),
            overall: None,
        }
    }
}

/// The window asked of a server whose start request takes one (the request style): the
/// forward steps to record, and whether per stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServeWindow {
    /// `Both`: every iteration between start and stop (or `steps` of them, mixed); one phase:
    /// the engine records each stage as a run of its own, `steps` forward steps each, and that
    /// phase's runs are the ones asked for.
    pub phases: PhaseSelection,
    /// Forward steps to record: the server stops by itself after them (`None`: start and stop
    /// around the load).
    pub steps: Option<u64>,
}

impl ServeWindow {
    /// Whether the server is asked for runs per stage.
    pub fn by_stage(self) -> bool {
        self.phases != PhaseSelection::Both
    }

    /// Whether anything beyond start/stop around the load is asked (which only the request
    /// style can carry).
    pub fn asked(self) -> bool {
        self.by_stage() || self.steps.is_some()
    }
}

/// What to collect.
#[derive(Debug, Clone)]
pub struct ServeRequest {
    /// The engine.
    pub engine: Engine,
    /// Its facts.
    pub settings: ServeSettings,
    /// Where they came from.
    pub style_from: settings::StyleFrom,
    /// Which server.
    pub target: Target,
    /// Where the profile goes (the server's profiler directory).
    pub profile_dir: PathBuf,
    /// Requests sent before the profiler starts (`requests` 0: none).
    pub warmup: Load,
    /// The profiled load.
    pub load: Load,
    /// The window asked of the server.
    pub window: ServeWindow,
    /// The waits.
    pub timing: Timing,
}

/// A stage of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Waiting for the health check.
    Health,
    /// Sending the warm-up requests.
    WarmUp,
    /// Sending the profiled load.
    Load,
    /// Waiting for the stop and the output.
    Output,
    /// Parsing raw run directories.
    Parse,
    /// Verifying and summarising.
    Verify,
    /// Stopping the server.
    Shutdown,
}

impl Stage {
    /// The stage, said.
    pub fn describe(self) -> &'static str {
        match self {
            Stage::Health => "waiting for the server to become healthy",
            Stage::WarmUp => "warming up",
            Stage::Load => "profiling the load",
            Stage::Output => "waiting for every rank's output",
            Stage::Parse => "parsing raw run directories offline",
            Stage::Verify => "verifying",
            Stage::Shutdown => "stopping the server",
        }
    }
}

/// What happens along the way.
#[derive(Debug)]
pub enum Event<'a> {
    /// The settings in force (level and metrics the engine hard-codes, the no-pipe note).
    Settings(&'a ServeSettings),
    /// The server is being started.
    Starting {
        /// The command, with the profiler's arguments.
        argv: &'a [String],
        /// The environment added.
        env: &'a [(String, String)],
    },
    /// A stage begins.
    Stage(Stage),
    /// Time passed in a stage.
    Tick(Stage, Duration),
    /// The server printed a line.
    Line(&'a str),
    /// A load finished.
    Loaded(Stage, &'a LoadReport),
    /// The output is complete: the run directories, and which the engine left raw.
    Settled {
        /// The run directories.
        runs: &'a [PathBuf],
        /// The raw ones, to parse.
        raw: &'a [PathBuf],
    },
}

/// Told what happens (the CLI prints it).
pub trait Observer {
    /// Something happened.
    fn event(&mut self, event: Event<'_>);
}

struct Loop<'a> {
    request: &'a ServeRequest,
    observer: &'a mut dyn Observer,
    interrupt: &'a Interrupt,
    /// When `--timeout` ends the whole collect.
    deadline: Deadline,
    server: Option<Server>,
    endpoint: Endpoint,
    ranks: Option<usize>,
    report: ServeReport,
    rt: tokio::runtime::Runtime,
}

/// Refuses what [`collect`] would refuse before it starts anything (it writes nothing): a
/// command that cannot be read or switches the profiler on itself, a profile directory that
/// holds run directories already. The caller then makes the profile directory of a launch.
pub fn check(request: &ServeRequest) -> Result<(), ServeError> {
    let settings = &request.settings;
    if let Target::Launch { argv, .. } = &request.target {
        if argv.is_empty() {
            return Err(ServeError::no_command(request.engine));
        }
        settings::read_command(request.engine, argv).map_err(ServeError::BadCommand)?;
        refuse_own_switches(settings, argv)?;
    }
    let window = request.window;
    if window.asked() && settings.start_body.is_none() {
        return Err(ServeError::WindowNotSupported {
            engine: request.engine.name().to_owned(),
        });
    }
    if let Some(phase) = window
        .phases
        .phases()
        .into_iter()
        .find(|p| window.by_stage() && !settings.stage_order.contains(p))
    {
        return Err(ServeError::BadCommand(format!(
            "{} records no {} stage of its own",
            request.engine.name(),
            phase.name()
        )));
    }
    if window.by_stage() && window.steps.is_none() {
        return Err(ServeError::BadCommand(
            "a window per stage needs its number of steps".to_owned(),
        ));
    }
    if !output::list(&request.profile_dir, settings).runs.is_empty() {
        return Err(ServeError::ProfileDirNotEmpty {
            dir: request.profile_dir.display().to_string(),
        });
    }
    Ok(())
}

/// Runs the loop, after [`check`]; a launch's profile directory must exist. Refusals (before
/// anything started) are errors; anything after the server was started ends in the report,
/// with the server shut down.
pub fn collect(
    request: &ServeRequest,
    observer: &mut dyn Observer,
    interrupt: &Interrupt,
) -> Result<ServeReport, ServeError> {
    check(request)?;
    let started = Instant::now();
    let settings = &request.settings;
    let (endpoint, ranks, command, env) = match &request.target {
        Target::Attach(endpoint) => (endpoint.clone(), None, None, Vec::new()),
        Target::Launch { argv, url, .. } => {
            let facts =
                settings::read_command(request.engine, argv).map_err(ServeError::BadCommand)?;
            let endpoint = url
                .clone()
                .unwrap_or_else(|| Endpoint::new(&facts.host, facts.port));
            let mut full = argv.clone();
            full.extend(settings::args_for(settings, &request.profile_dir));
            (
                endpoint,
                Some(facts.ranks),
                Some(full),
                settings::env_for(settings, &request.profile_dir),
            )
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(ServeError::Runtime)?;
    let mut report = ServeReport {
        schema_version: SCHEMA_VERSION,
        engine: request.engine,
        config_style: settings.config_style,
        style_from: request.style_from.clone(),
        level: settings.level.clone(),
        aic_metrics: settings.aic_metrics.clone(),
        no_pipe_metrics_note: settings.no_pipe_metrics_note.clone(),
        parse_mode: settings.parses_in_engine,
        url: endpoint.url(),
        command: command.clone(),
        env: env.clone(),
        profile_dir: request.profile_dir.clone(),
        expected_ranks: ranks,
        window: WindowReport {
            phase: request.window.phases,
            steps: request.window.steps,
            closed_by: None,
        },
        pd_note: command_pd_note(request),
        healthy_after_secs: None,
        warmup: None,
        load: None,
        settled_after_secs: None,
        runs: Vec::new(),
        frontend_traces: Vec::new(),
        parses: Vec::new(),
        verify: None,
        summary: None,
        summary_error: None,
        shutdown: None,
        server_log: None,
        error: None,
        outcome: Outcome::Failed,
        exit_code: 0,
    };
    observer.event(Event::Settings(settings));
    let mut server = None;
    if let (Some(argv), Target::Launch { cwd, .. }) = (&command, &request.target) {
        if !request.profile_dir.is_dir() {
            return Err(ServeError::ProfileDir {
                dir: request.profile_dir.display().to_string(),
                source: std::io::ErrorKind::NotFound.into(),
            });
        }
        let log = server::log_path(&request.profile_dir);
        observer.event(Event::Starting { argv, env: &env });
        server = Some(Server::start(argv, &env, cwd, Some(&log))?);
        report.server_log = Some(log);
    }
    let mut run = Loop {
        request,
        observer,
        interrupt,
        deadline: Deadline(
            request
                .timing
                .overall
                .map(|limit| (started + limit, limit.as_secs())),
        ),
        server,
        endpoint,
        ranks,
        report,
        rt,
    };
    let outcome = run.steps();
    if let Some(server) = run.server.take() {
        run.observer.event(Event::Stage(Stage::Shutdown));
        run.report.shutdown = Some(server.shutdown(request.timing.grace));
    }
    let mut report = run.report;
    report.outcome = match &outcome {
        Err(_) => Outcome::Failed,
        Ok(()) => {
            let errors = report
                .verify
                .as_ref()
                .map_or(0, |v| v.count(npuprof_verify::Severity::Error));
            // Fewer steps recorded than asked is not the window asked for, whatever verify says
            // of the steps that were.
            let failed = report
                .load
                .as_ref()
                .is_some_and(|l| l.failed > 0 || l.unsent > 0)
                || report.window.closed_by == Some(WindowClosed::StopBeforeSteps);
            match (errors > 0, failed) {
                (true, _) => Outcome::VerifyErrors,
                (false, true) => Outcome::Incomplete,
                (false, false) => Outcome::Clean,
            }
        }
    };
    report.exit_code = report.outcome.exit_code();
    if let Err(error) = outcome {
        report.error = Some(Stopped {
            kind: error.kind(),
            message: error_text(&error),
        });
    }
    Ok(report)
}

/// The error and its causes, on one line.
fn error_text(error: &ServeError) -> String {
    npuprof_workflow::error_text(error)
}

/// Refuses a command or environment that switches the profiler on already.
fn refuse_own_switches(settings: &ServeSettings, argv: &[String]) -> Result<(), ServeError> {
    for switch in settings::switches(settings) {
        let given = if switch.starts_with('-') {
            argv.iter().any(|a| {
                a == switch
                    || a.starts_with(&format!("{switch}="))
                    || a.starts_with(&format!("{switch}."))
            })
        } else {
            std::env::var_os(switch).is_some()
        };
        if given {
            return Err(ServeError::AlreadyConfigured(switch.to_owned()));
        }
    }
    Ok(())
}

/// How long an interrupted collect waits for the stop of a server it attached to.
const INTERRUPTED_STOP: Duration = Duration::from_secs(30);

/// How many quiet periods an unparsed run waits when the engine parses asynchronously.
const ASYNC_RAW_QUIET: u32 = 3;

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

impl Loop<'_> {
    fn steps(&mut self) -> Result<(), ServeError> {
        let timing = self.request.timing;
        let settings = &self.request.settings;
        self.healthy()?;
        if self.request.warmup.requests > 0 {
            let warmup = self.load(Stage::WarmUp, &self.request.warmup)?;
            self.report.warmup = Some(warmup);
        }
        self.profile(&settings.start_path, true)?;
        let load = self.load(Stage::Load, &self.request.load);
        let ranks = self.ranks.unwrap_or(1);
        let window = self.request.window;
        let runs_per_rank = if window.by_stage() {
            settings.stage_order.len().max(1)
        } else {
            1
        };
        // The profiler is stopped whatever the load did, unless the server is gone.
        let stopped = match &load {
            Err(ServeError::ServerExited { .. }) => Ok(()),
            Err(ServeError::Interrupted(_)) => {
                // A server collect did not start keeps running: leave it not profiling.
                if self.server.is_none() {
                    let _ = self.rt.block_on(http::request(
                        &self.endpoint,
                        Method::POST,
                        &settings.stop_path,
                        None,
                        INTERRUPTED_STOP,
                    ));
                }
                Ok(())
            }
            _ => self.close_window(ranks * runs_per_rank),
        };
        self.report.load = Some(load?);
        stopped?;
        let stop = Instant::now();
        self.observer.event(Event::Stage(Stage::Output));
        let dir = &self.request.profile_dir;
        let settled = {
            let mut watch = watcher(
                self.interrupt,
                self.deadline,
                &mut self.server,
                &mut *self.observer,
                Stage::Output,
                stop,
            );
            // An engine that parses after the stop has returned may not have begun when the
            // raw data falls quiet: an unparsed run waits longer before it counts as raw.
            let raw_quiet = if settings.parses_in_engine == ParseMode::Async && ranks == 1 {
                timing.quiet * ASYNC_RAW_QUIET
            } else {
                timing.quiet
            };
            let quiet = output::Quiet {
                parsed: timing.quiet,
                raw: raw_quiet,
            };
            output::settle(
                dir,
                settings,
                ranks * runs_per_rank,
                quiet,
                stop + timing.output,
                POLL * 4,
                &mut || watch().is_some_and(|e| matches!(e, ServeError::Interrupted(_))),
            )
        };
        let listing = match settled {
            Settled::Quiet(listing) => listing,
            Settled::Stopped => {
                return Err(ServeError::Interrupted(
                    "while waiting for the output".to_owned(),
                ));
            }
            Settled::TimedOut { listing, changing } => {
                if changing {
                    self.report.runs = runs_of(&listing.runs, &[]);
                    return Err(ServeError::OutputStillChanging {
                        dir: dir.display().to_string(),
                        secs: timing.output.as_secs(),
                    });
                }
                if listing.runs.is_empty() {
                    return Err(ServeError::NoOutput {
                        dir: dir.display().to_string(),
                        secs: timing.output.as_secs(),
                    });
                }
                listing
            }
        };
        self.report.settled_after_secs = Some(secs(stop.elapsed()));
        self.report.frontend_traces = listing.frontend.clone();
        let raw: Vec<PathBuf> = listing
            .runs
            .iter()
            .filter(|r| !output::parsed(r))
            .cloned()
            .collect();
        self.observer.event(Event::Settled {
            runs: &listing.runs,
            raw: &raw,
        });
        if !raw.is_empty() {
            self.observer.event(Event::Stage(Stage::Parse));
            let start = Instant::now();
            let mut watch = watcher(
                self.interrupt,
                self.deadline,
                &mut self.server,
                &mut *self.observer,
                Stage::Parse,
                start,
            );
            self.report.parses = parse::parse_all(
                &raw,
                parse::jobs(raw.len()),
                start + timing.output,
                timing.grace,
                &mut || watch().is_some_and(|e| matches!(e, ServeError::Interrupted(_))),
            );
        }
        let offline: Vec<PathBuf> = self
            .report
            .parses
            .iter()
            .filter(|p| p.error.is_none())
            .map(|p| p.run.clone())
            .collect();
        self.report.runs = runs_of(&listing.runs, &offline);
        if window.by_stage() {
            label_stages(&mut self.report.runs, settings);
        }
        if self.interrupt.raised() {
            return Err(ServeError::Interrupted("while parsing".to_owned()));
        }
        self.verify(&listing.runs)
    }

    /// Ends the window after the load: a server asked for N steps closes it itself (its runs
    /// are all there and parsed once the load has run); otherwise, or when the load ran out
    /// before the steps did, the stop route closes it.
    fn close_window(&mut self, expected: usize) -> Result<(), ServeError> {
        let settings = &self.request.settings;
        if self.request.window.steps.is_some() {
            let listing = output::list(&self.request.profile_dir, settings);
            if listing.runs.len() >= expected && listing.runs.iter().all(|r| output::parsed(r)) {
                self.report.window.closed_by = Some(WindowClosed::Server);
                return Ok(());
            }
        }
        let stop = settings.stop_path.clone();
        self.profile(&stop, false)?;
        self.report.window.closed_by = Some(if self.request.window.steps.is_some() {
            WindowClosed::StopBeforeSteps
        } else {
            WindowClosed::Stop
        });
        Ok(())
    }

    /// The start request's JSON body, for an engine that takes one: the profile directory,
    /// stacks and shapes off, and the window.
    fn start_body(&self) -> Option<Vec<u8>> {
        let keys = self.request.settings.start_body.as_ref()?;
        let window = self.request.window;
        let mut body = serde_json::json!({});
        body[keys.dir.as_str()] = serde_json::json!(self.request.profile_dir);
        body[keys.stack.as_str()] = serde_json::json!(false);
        body[keys.shapes.as_str()] = serde_json::json!(false);
        if let Some(steps) = window.steps {
            body[keys.steps.as_str()] = serde_json::json!(steps);
        }
        if window.by_stage() {
            body[keys.by_stage.as_str()] = serde_json::json!(true);
        }
        serde_json::to_vec(&body).ok()
    }

    fn verify(&mut self, runs: &[PathBuf]) -> Result<(), ServeError> {
        self.observer.event(Event::Stage(Stage::Verify));
        let dir = &self.request.profile_dir;
        // The logs that speak for the parse that made each output: the offline parses' own,
        // and the server's when the engine parsed (its daemon refusals are moot once parsed).
        let mut logs: Vec<PathBuf> = self.report.parses.iter().map(|p| p.log.clone()).collect();
        if self.report.parses.len() < runs.len()
            && let Some(log) = &self.report.server_log
        {
            logs.push(log.clone());
        }
        let options = npuprof_verify::Options {
            path: dir.clone(),
            world_size: self.ranks.and_then(|r| u32::try_from(r).ok()),
            logs,
            ..npuprof_verify::Options::default()
        };
        let keep = |run: &Path| runs.iter().any(|r| r == run || dir.join(run) == *r);
        let verified = npuprof_verify::verify_runs(&options, &npuprof_verify::NoProgress, &keep)?;
        self.report.verify = Some(verified);
        match self.summarize() {
            Ok(summary) => self.report.summary = Some(summary),
            Err(e) => self.report.summary_error = Some(e.to_string()),
        }
        Ok(())
    }

    /// The summary of the collected runs. With a window per stage, each run is summarised as
    /// the stage it records (the ranks of one stage compared with each other, never a rank's
    /// prefill run with its decode run), and only the stage asked for when it is one.
    fn summarize(&self) -> Result<npuprof_summary::Summary, npuprof_summary::SummaryError> {
        let dir = &self.request.profile_dir;
        let window = self.request.window;
        if !window.by_stage() {
            return npuprof_summary::summarize(dir, &npuprof_summary::Options::default());
        }
        let runs: Vec<(PathBuf, Option<String>)> = self
            .report
            .runs
            .iter()
            .map(|run| {
                let path = if run.dir.is_absolute() {
                    run.dir.clone()
                } else {
                    dir.join(&run.dir)
                };
                (path, run.stage.map(|stage| stage.name().to_owned()))
            })
            .collect();
        let asked = window.phases.phases();
        let options = npuprof_summary::Options {
            phase: match asked.as_slice() {
                [one] => Some(one.name().to_owned()),
                _ => None,
            },
            ..npuprof_summary::Options::default()
        };
        npuprof_summary::summarize_runs(dir, &runs, &options)
    }

    /// Polls the health route until 200, the server's exit, the deadline or an interrupt.
    fn healthy(&mut self) -> Result<(), ServeError> {
        self.observer.event(Event::Stage(Stage::Health));
        let settings = &self.request.settings;
        let start = Instant::now();
        let deadline = start + self.request.timing.health;
        loop {
            if let Some(error) = watcher(
                self.interrupt,
                self.deadline,
                &mut self.server,
                &mut *self.observer,
                Stage::Health,
                start,
            )() {
                return Err(error);
            }
            let answer = self.rt.block_on(http::request(
                &self.endpoint,
                Method::GET,
                &settings.health_path,
                None,
                Duration::from_secs(5).min(self.request.timing.health),
            ));
            let last = match answer {
                Ok(response) if response.status == 200 => {
                    self.report.healthy_after_secs = Some(secs(start.elapsed()));
                    return Ok(());
                }
                // A definitive answer: the route is not there, and waiting will not add it.
                Ok(response) if response.status == 404 => {
                    return Err(ServeError::NoHealthRoute {
                        secs: start.elapsed().as_secs(),
                        url: self.endpoint.url(),
                        path: settings.health_path.clone(),
                    });
                }
                Ok(response) => format!("HTTP {}", response.status),
                Err(e) => e.to_string(),
            };
            if Instant::now() >= deadline {
                return Err(ServeError::NeverHealthy {
                    secs: self.request.timing.health.as_secs(),
                    url: self.endpoint.url(),
                    path: settings.health_path.clone(),
                    last,
                });
            }
            std::thread::sleep(POLL * 4);
        }
    }

    /// POSTs the start (`start`) or stop profile route `path`; 200 is success, 404 says
    /// profiling is not configured, another failure is named by the route.
    fn profile(&mut self, path: &str, start: bool) -> Result<(), ServeError> {
        let what = path.trim_start_matches('/');
        let timeout = if start {
            self.request.timing.load
        } else {
            self.request.timing.output
        };
        let (endpoint, owned) = (self.endpoint.clone(), path.to_owned());
        let body = if start { self.start_body() } else { None };
        let answer = self.drive(Stage::Load, async move {
            http::request(&endpoint, Method::POST, &owned, body, timeout).await
        })?;
        match answer {
            Ok(response) if response.status == 200 => Ok(()),
            Ok(response) if response.status == 404 => Err(ServeError::ProfilingNotEnabled {
                url: self.endpoint.url(),
                path: path.to_owned(),
            }),
            Ok(response) => Err(ServeError::Profile {
                what: what.to_owned(),
                detail: format!(
                    "HTTP {}: {}",
                    response.status,
                    String::from_utf8_lossy(&response.body[..response.body.len().min(300)])
                ),
            }),
            Err(e) => Err(self.gone(Stage::Load).unwrap_or(ServeError::Profile {
                what: what.to_owned(),
                detail: e.to_string(),
            })),
        }
    }

    /// Sends a load; every request failing is an error.
    fn load(&mut self, stage: Stage, load: &Load) -> Result<LoadReport, ServeError> {
        self.observer.event(Event::Stage(stage));
        let deadline = Instant::now() + self.request.timing.load;
        let route = load.route(&self.request.settings);
        let report = self.drive(
            stage,
            load::run(self.endpoint.clone(), route, load.clone(), deadline),
        )?;
        self.observer.event(Event::Loaded(stage, &report));
        // What the load did stays in the report, also when it failed.
        match stage {
            Stage::WarmUp => self.report.warmup = Some(report.clone()),
            _ => self.report.load = Some(report.clone()),
        }
        if report.succeeded == 0 && report.sent > 0 {
            if let Some(error) = self.gone(stage) {
                return Err(error);
            }
            return Err(ServeError::LoadFailed {
                stage: match stage {
                    Stage::WarmUp => "warm-up",
                    _ => "load",
                }
                .to_owned(),
                first: report.first_error.unwrap_or_default(),
            });
        }
        Ok(report)
    }

    /// The server's exit as an error, once its output has been read (a request failing
    /// because the server died says so, not "connection refused").
    fn gone(&mut self, stage: Stage) -> Option<ServeError> {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            if let Some(error) = watcher(
                self.interrupt,
                self.deadline,
                &mut self.server,
                &mut *self.observer,
                stage,
                Instant::now(),
            )() {
                return Some(error);
            }
            if Instant::now() >= deadline || self.server.is_none() {
                return None;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Runs `future` on the runtime, watching for the server's exit and interrupts.
    fn drive<T: Send + 'static>(
        &mut self,
        stage: Stage,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, ServeError> {
        let start = Instant::now();
        let mut watch = watcher(
            self.interrupt,
            self.deadline,
            &mut self.server,
            &mut *self.observer,
            stage,
            start,
        );
        self.rt.block_on(async {
            let handle = tokio::spawn(future);
            loop {
                if handle.is_finished() {
                    return handle
                        .await
                        .map_err(|e| ServeError::Runtime(std::io::Error::other(e.to_string())));
                }
                if let Some(error) = watch() {
                    handle.abort();
                    return Err(error);
                }
                tokio::time::sleep(POLL).await;
            }
        })
    }
}

/// A check run while waiting: passes the server's lines on, ticks, and says when to stop (an
/// interrupt, or the server's exit).
fn watcher<'w>(
    interrupt: &'w Interrupt,
    deadline: Deadline,
    server: &'w mut Option<Server>,
    observer: &'w mut dyn Observer,
    stage: Stage,
    start: Instant,
) -> impl FnMut() -> Option<ServeError> + 'w {
    move || {
        observer.event(Event::Tick(stage, start.elapsed()));
        if let Some(server) = server.as_mut() {
            for line in server.lines() {
                observer.event(Event::Line(&line));
            }
        }
        if interrupt.raised() {
            return Some(ServeError::Interrupted(format!(
                "while {}",
                stage.describe()
            )));
        }
        if let Some(secs) = deadline.passed() {
            return Some(ServeError::TimedOut {
                secs,
                when: format!("while {}", stage.describe()),
            });
        }
        let server = server.as_mut()?;
        let status = server.exited()?;
        let last = server
            .capture()
            .kept_lines()
            .last()
            .map(|l| format!("; its last line: {l}"))
            .unwrap_or_default();
        Some(ServeError::ServerExited {
            ended: ended(status),
            when: format!("while {}", stage.describe()),
            last,
        })
    }
}

fn ended(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        _ => "ended".to_owned(),
    }
}

fn runs_of(runs: &[PathBuf], offline: &[PathBuf]) -> Vec<RunOutput> {
    runs.iter()
        .map(|dir| RunOutput {
            dir: dir.clone(),
            stage: None,
            parsed_by: if offline.contains(dir) {
                ParsedBy::Offline
            } else if output::parsed(dir) {
                ParsedBy::Engine
            } else {
                ParsedBy::Raw
            },
        })
        .collect()
}

/// Labels each rank's runs by stage: its run directories (`<worker>_<timestamp><suffix>`), in
/// timestamp order, are the stages in the definition's order.
fn label_stages(runs: &mut [RunOutput], settings: &ServeSettings) {
    let worker_and_stamp = |dir: &Path| -> Option<(String, String)> {
        let name = dir.file_name()?.to_str()?;
        let stem = name.strip_suffix(&settings.run_dir_suffix)?;
        let (worker, stamp) = stem.rsplit_once('_')?;
        Some((worker.to_owned(), stamp.to_owned()))
    };
    let mut by_worker: std::collections::BTreeMap<String, Vec<(String, usize)>> =
        std::collections::BTreeMap::new();
    for (i, run) in runs.iter().enumerate() {
        if let Some((worker, stamp)) = worker_and_stamp(&run.dir) {
            by_worker.entry(worker).or_default().push((stamp, i));
        }
    }
    for mut stamps in by_worker.into_values() {
        stamps.sort();
        if stamps.len() != settings.stage_order.len() {
            continue;
        }
        for ((_, i), stage) in stamps.into_iter().zip(&settings.stage_order) {
            runs[i].stage = Some(*stage);
        }
    }
}

/// What the definition says of a PD node, when the launched command is one.
fn command_pd_note(request: &ServeRequest) -> Option<String> {
    let Target::Launch { argv, .. } = &request.target else {
        return None;
    };
    let option = settings::read_command(request.engine, argv)
        .ok()?
        .pd_option?;
    let pd = request.engine.definition().pd.as_ref()?;
    Some(format!(
        "{option}: this server is one node of a prefill/decode pair; {}",
        pd.note
    ))
}

/// The end of the whole collect (`--timeout`), with its length in seconds for the message.
#[derive(Debug, Clone, Copy)]
struct Deadline(Option<(Instant, u64)>);

impl Deadline {
    /// The limit's seconds, once it has passed.
    fn passed(self) -> Option<u64> {
        self.0
            .filter(|(at, _)| Instant::now() >= *at)
            .map(|(_, secs)| secs)
    }
}
