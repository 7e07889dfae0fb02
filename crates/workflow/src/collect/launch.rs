//! Running the launch command: the [`Launcher`] trait (tests drive `collect` with a fake one)
//! and [`ProcessLauncher`], which runs it in its own process group with an optional timeout,
//! stops the whole group on an interrupt, and ends what the launch leaves in its group. Its
//! output is captured in fixed memory (`capture`) and reaches the caller line by line, as many
//! lines per poll as can be shown.

use std::collections::BTreeMap;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use serde::Serialize;

use super::Stop;
use super::capture::{Capture, Readers};
use super::diagnose::LaunchError;
use super::group::{self, Straggler};

/// How long the launched processes get to exit after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(5);
/// How often the child is polled.
pub const POLL: Duration = Duration::from_millis(50);
/// How long the output still in the pipes is read after the command ended.
const LAST_LINES: Duration = Duration::from_secs(2);

/// Raised by SIGINT, SIGTERM, SIGHUP (terminal closed), SIGQUIT or SIGUSR1 while `collect` runs
/// (once [`Interrupt::on_signals`] installed the handlers): every later signal only raises it
/// again, so it can never interrupt a file being restored.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// A flag raised by those signals (replacing their default "terminate" action for the whole
    /// process).
    pub fn on_signals() -> std::io::Result<Self> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1};
        let interrupt = Self::default();
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1] {
            signal_hook::flag::register(signal, Arc::clone(&interrupt.0))?;
        }
        Ok(interrupt)
    }

    /// Raises the flag (what a signal does).
    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether it was raised.
    pub fn raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// One launch: what to run, where, for how long at most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The command, as argv.
    pub argv: Vec<String>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Environment variables set for it (on top of npuprof's own environment).
    pub env: BTreeMap<String, String>,
    /// Stop it after this long.
    pub timeout: Option<Duration>,
    /// Where the whole output goes (created; `None`: kept only in memory, head and tail).
    pub log: Option<PathBuf>,
}

/// How one launch went.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The command, as argv.
    pub command: Vec<String>,
    /// Its exit code (null when killed by a signal or not started).
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// Wall time in seconds.
    pub duration_secs: f64,
    /// Whether `--timeout` stopped it.
    pub timed_out: bool,
    /// Whether Ctrl-C/SIGTERM stopped it.
    pub interrupted: bool,
    /// The result directory it produced (absolute, real path), when one was found.
    pub result_dir: Option<String>,
    /// What was kept of its output (head and tail of each stream) and where the whole is.
    pub output: Capture,
    /// Processes it left running in its group, stopped once it returned.
    pub stragglers: Vec<Straggler>,
    /// The errors its output and the rank logs it wrote show, the most telling first.
    pub launch_errors: Vec<LaunchError>,
}

impl RunReport {
    /// The report of a launch of `argv` that ended with `exit_code` after `duration`.
    pub fn exited(argv: &[String], exit_code: i32, duration: Duration) -> Self {
        Self {
            command: argv.to_vec(),
            exit_code: Some(exit_code),
            signal: None,
            duration_secs: rounded_secs(duration),
            timed_out: false,
            interrupted: false,
            result_dir: None,
            output: Capture::default(),
            stragglers: Vec::new(),
            launch_errors: Vec::new(),
        }
    }

    /// How it ended, in words: `exit code 1`, `signal 9`.
    pub fn ended(&self) -> String {
        match (self.exit_code, self.signal) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            (None, None) => "no exit status".to_owned(),
        }
    }
}

/// Runs a launch to its end (it exits, times out, or `interrupt` is raised).
pub trait Launcher {
    /// Runs `launch`; an error means it could not be started at all.
    fn launch(&mut self, launch: &Launch, interrupt: &Interrupt) -> Result<RunReport, Stop>;
}

/// What a running launch shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// A line of its stdout or stderr.
    Line(String),
    /// Time passed (about every [`POLL`]), with the time since it started.
    Tick(Duration),
    /// It ended.
    Finished,
}

/// Runs the launch as a process group; its output goes to `on_output`.
pub struct ProcessLauncher<F> {
    on_output: F,
}

impl<F: FnMut(Output)> ProcessLauncher<F> {
    /// A launcher that reports the run's output to `on_output`.
    pub fn new(on_output: F) -> Self {
        Self { on_output }
    }
}

impl<F: FnMut(Output)> Launcher for ProcessLauncher<F> {
    fn launch(&mut self, launch: &Launch, interrupt: &Interrupt) -> Result<RunReport, Stop> {
        let argv = &launch.argv;
        let (program, args) = argv.split_first().ok_or(Stop::EmptyLaunch)?;
        let start = Instant::now();
        let mut child = Command::new(program)
            .args(args)
            .current_dir(&launch.cwd)
            .envs(&launch.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|source| Stop::Start {
                command: npuprof_repository::shell::join(argv),
                source,
            })?;
        let readers = Readers::of_child(&mut child, launch.log.as_deref());
        let group = Pid::from_child(&child);
        let (mut timed_out, mut interrupted) = (false, false);
        let mut terminated_at: Option<Instant> = None;
        let status = loop {
            // Never blocks: the readers do the reading, this loop only looks.
            if let Some(status) = child.try_wait().map_err(Stop::Wait)? {
                break status;
            }
            if terminated_at.is_none() {
                interrupted = interrupt.raised();
                timed_out = !interrupted && launch.timeout.is_some_and(|t| start.elapsed() >= t);
                if interrupted || timed_out {
                    let _ = kill_process_group(group, Signal::TERM);
                    terminated_at = Some(Instant::now());
                }
            } else if terminated_at.is_some_and(|t| t.elapsed() >= GRACE) {
                let _ = kill_process_group(group, Signal::KILL);
            }
            self.show(&readers);
            (self.on_output)(Output::Tick(start.elapsed()));
            std::thread::sleep(POLL);
        };
        // What the launch left in its group must not outlive it.
        let stragglers = group::end(group, GRACE, POLL);
        self.show_to_end(&readers);
        (self.on_output)(Output::Finished);
        Ok(RunReport {
            command: argv.clone(),
            exit_code: status.code(),
            signal: status.signal(),
            duration_secs: rounded_secs(start.elapsed()),
            timed_out,
            interrupted,
            result_dir: None,
            output: readers.capture(),
            stragglers,
            launch_errors: Vec::new(),
        })
    }
}

impl<F: FnMut(Output)> ProcessLauncher<F> {
    /// Passes on the lines that have arrived (a bounded number).
    fn show(&mut self, readers: &Readers) {
        for line in readers.arrived() {
            (self.on_output)(Output::Line(line));
        }
    }

    /// Passes on the lines still in the pipes after the command ended: until both pipes close,
    /// or for at most [`LAST_LINES`] when a process outside the group holds them open.
    fn show_to_end(&mut self, readers: &Readers) {
        let deadline = Instant::now() + LAST_LINES;
        while !readers.finished() && Instant::now() < deadline {
            self.show(readers);
            std::thread::sleep(POLL / 5);
        }
        self.show(readers);
    }
}

/// Seconds, to the millisecond.
fn rounded_secs(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1000.0).round() / 1000.0
}
