//! Running the launch command: the [`Launcher`] trait (tests drive `collect` with a fake one)
//! and [`ProcessLauncher`], which runs it in its own process group with an optional timeout and
//! stops the whole group on an interrupt. Its output reaches the caller line by line.

use std::io::BufRead as _;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use serde::Serialize;

use super::Stop;

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
    /// Stop it after this long.
    pub timeout: Option<Duration>,
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
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|source| Stop::Start {
                command: argv.join(" "),
                source,
            })?;
        let lines = forward_lines(&mut child);
        let group = Pid::from_child(&child);
        let (mut timed_out, mut interrupted) = (false, false);
        let mut terminated_at: Option<Instant> = None;
        let status = loop {
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
            self.drain(&lines);
            (self.on_output)(Output::Tick(start.elapsed()));
            std::thread::sleep(POLL);
        };
        if terminated_at.is_some() {
            // Stragglers of the group (ranks started by the launcher) must not outlive it.
            let _ = kill_process_group(group, Signal::KILL);
        }
        self.drain_to_end(&lines);
        (self.on_output)(Output::Finished);
        Ok(RunReport {
            command: argv.clone(),
            exit_code: status.code(),
            signal: status.signal(),
            duration_secs: rounded_secs(start.elapsed()),
            timed_out,
            interrupted,
            result_dir: None,
        })
    }
}

impl<F: FnMut(Output)> ProcessLauncher<F> {
    /// Passes on the lines that have arrived.
    fn drain(&mut self, lines: &Receiver<String>) {
        while let Ok(line) = lines.try_recv() {
            (self.on_output)(Output::Line(line));
        }
    }

    /// Passes on the lines still in the pipes after the command ended: until both pipes close,
    /// or for at most [`LAST_LINES`] when a process the command left behind holds them open.
    fn drain_to_end(&mut self, lines: &Receiver<String>) {
        let deadline = Instant::now() + LAST_LINES;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => (self.on_output)(Output::Line(line)),
                Err(RecvTimeoutError::Disconnected | RecvTimeoutError::Timeout) => break,
            }
        }
    }
}

/// Seconds, to the millisecond.
fn rounded_secs(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1000.0).round() / 1000.0
}

/// The child's stdout and stderr, line by line, through one channel.
fn forward_lines(child: &mut std::process::Child) -> Receiver<String> {
    let (send, receive) = std::sync::mpsc::channel();
    let out = child
        .stdout
        .take()
        .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>);
    let err = child
        .stderr
        .take()
        .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>);
    for stream in [out, err].into_iter().flatten() {
        let send = send.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
    }
    receive
}
