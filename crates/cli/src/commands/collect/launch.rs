//! Running the launch command: its own process group, output streamed to our stderr (stdout
//! stays for data), an optional timeout, and Ctrl-C/SIGTERM forwarded to the whole group.

use std::os::fd::AsFd;
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
    let stdout = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .context("cannot duplicate stderr")?;
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start `{}`", argv.join(" ")))?;
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
        std::thread::sleep(POLL);
    };
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
