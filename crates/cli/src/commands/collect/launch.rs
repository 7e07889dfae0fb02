//! Running the launch command: its own process group, an optional timeout, signals forwarded to
//! the whole group. Its output goes to our stderr (stdout stays for data): line by line when
//! stderr is not a terminal; on a terminal, one status line (elapsed time, the run's last line).

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use rustix::process::{Pid, Signal, kill_process_group};
use serde::Serialize;

/// How long the launched processes get to exit after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(5);
/// How often the child is polled.
const POLL: Duration = Duration::from_millis(50);

/// Set by SIGINT, SIGTERM, SIGHUP (terminal closed), SIGQUIT or SIGUSR1 while `collect` runs:
/// every later signal only sets it again, so it can never interrupt a file being restored.
#[derive(Debug, Clone)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// Installs the handlers (replacing the default "terminate" action for the whole process).
    pub fn install() -> anyhow::Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1};
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1] {
            signal_hook::flag::register(signal, Arc::clone(&flag))
                .context("cannot install the Ctrl-C handler")?;
        }
        Ok(Self(flag))
    }

    /// Whether Ctrl-C or SIGTERM arrived.
    pub fn raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
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

/// Runs `argv` in `dir` until it exits, times out or is interrupted.
pub fn run(
    argv: &[String],
    dir: &Path,
    timeout: Option<Duration>,
    interrupt: &Interrupt,
) -> anyhow::Result<RunReport> {
    let (program, args) = argv.split_first().context("empty launch command")?;
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start `{}`", argv.join(" ")))?;
    let lines = forward_lines(&mut child);
    let mut status_line = StatusLine::new(std::io::stderr().is_terminal());
    let group = Pid::from_child(&child);
    let mut timed_out = false;
    let mut interrupted = false;
    let mut terminated_at: Option<Instant> = None;
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .context("cannot wait for the launch command")?
        {
            break status;
        }
        if terminated_at.is_none() {
            if interrupt.raised() {
                interrupted = true;
            } else if timeout.is_some_and(|t| start.elapsed() >= t) {
                timed_out = true;
            }
            if interrupted || timed_out {
                let _ = kill_process_group(group, Signal::TERM);
                terminated_at = Some(Instant::now());
            }
        } else if terminated_at.is_some_and(|t| t.elapsed() >= GRACE) {
            let _ = kill_process_group(group, Signal::KILL);
        }
        status_line.show(&lines, start.elapsed());
        std::thread::sleep(POLL);
    };
    status_line.show(&lines, start.elapsed());
    status_line.finish();
    if terminated_at.is_some() {
        // Stragglers of the group (ranks started by the launcher) must not outlive it.
        let _ = kill_process_group(group, Signal::KILL);
    }
    Ok(RunReport {
        command: argv.to_vec(),
        exit_code: status.code(),
        signal: status.signal(),
        duration_secs: (start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        timed_out,
        interrupted,
        result_dir: None,
    })
}

/// The child's stdout and stderr, line by line, through one channel.
fn forward_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
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

/// How the run's output is shown on our stderr.
struct StatusLine {
    /// One redrawn line (a terminal) or every line as it comes.
    terminal: bool,
    last: String,
    drawn: bool,
}

impl StatusLine {
    /// The widest status line drawn.
    const WIDTH: usize = 100;

    fn new(terminal: bool) -> Self {
        Self {
            terminal,
            last: String::new(),
            drawn: false,
        }
    }

    /// Shows what arrived since the last call.
    fn show(&mut self, lines: &std::sync::mpsc::Receiver<String>, elapsed: Duration) {
        let mut err = std::io::stderr().lock();
        let mut new = false;
        while let Ok(line) = lines.try_recv() {
            if !self.terminal {
                let _ = writeln!(err, "{line}");
            } else if !line.trim().is_empty() {
                self.last = line;
                new = true;
            }
        }
        if self.terminal && (new || !self.drawn || elapsed.as_millis() % 1000 < POLL.as_millis()) {
            let secs = elapsed.as_secs();
            let head = format!(
                "npuprof collect: running {:02}:{:02} | ",
                secs / 60,
                secs % 60
            );
            let room = Self::WIDTH.saturating_sub(head.chars().count());
            let tail: String = self.last.chars().take(room).collect();
            let _ = write!(err, "\r\x1b[2K{head}{tail}");
            let _ = err.flush();
            self.drawn = true;
        }
    }

    /// Ends the status line (the last line of the run stays visible).
    fn finish(&mut self) {
        if self.terminal && self.drawn {
            let _ = writeln!(std::io::stderr().lock());
        }
    }
}
