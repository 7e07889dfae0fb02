//! The server process: the user's command started in its own process group with the
//! settings' environment and arguments, its output read into fixed memory (and a log file), and
//! its shutdown: SIGTERM to the group, SIGKILL after a grace period, then whatever is left.

use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use npuprof_workflow::collect::{
    Capture, POLL, Readers, Straggler, end_escaped, end_group, escaped,
};
use rustix::process::{Pid, Signal, kill_process_group};
use serde::Serialize;

use crate::ServeError;

/// A running server.
pub struct Server {
    child: Child,
    group: Pid,
    readers: Readers,
    exited: Option<std::process::ExitStatus>,
    watchdog: Option<Watchdog>,
}

/// A small process that ends the server's group if npuprof dies without stopping it (SIGKILL,
/// an abort): it blocks reading a pipe only npuprof holds the write end of (close-on-exec, so
/// no other child has it); EOF without npuprof's "stopped" line means npuprof is gone, and it
/// sends the group SIGTERM, then SIGKILL after the grace period. In its own process group, so a
/// terminal's Ctrl-C (which npuprof handles) does not reach it.
struct Watchdog {
    child: Child,
}

/// The watchdog's script: `$1` the server's group, `$2` the grace period in seconds.
/// (`kill -SIG -PGID` without `--`: dash, a common `sh`, reads `--` as a process id.)
const WATCHDOG: &str = "if IFS= read -r _; then exit 0; fi; \
     kill -TERM \"-$1\" 2>/dev/null || exit 0; sleep \"$2\"; kill -KILL \"-$1\" 2>/dev/null; exit 0";

impl Watchdog {
    fn start(group: Pid, grace: Duration) -> Option<Self> {
        Command::new("sh")
            .args(["-c", WATCHDOG, "npuprof-watchdog"])
            .arg(group.as_raw_nonzero().get().to_string())
            .arg(grace.as_secs().max(1).to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .ok()
            .map(|child| Self { child })
    }

    /// The server was stopped by npuprof: the watchdog exits without a signal.
    fn release(mut self) {
        use std::io::Write as _;
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = stdin.write_all(b"stopped\n");
        }
        let _ = self.child.wait();
    }
}

/// How the server ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shutdown {
    /// Its process id, which is also its process group's.
    pub pid: i32,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// Whether it had exited before collect stopped it.
    pub exited_early: bool,
    /// Whether SIGTERM was not enough (SIGKILL sent to the group).
    pub killed: bool,
    /// Processes of its group still running after it ended, stopped by collect.
    pub stragglers: Vec<Straggler>,
    /// Its output, head and tail.
    pub output: Capture,
}

/// How long the watchdog waits between SIGTERM and SIGKILL.
const WATCHDOG_GRACE: Duration = Duration::from_secs(5);

impl Server {
    /// Starts `argv` in `cwd` in a new process group, with `env` added, its output also to `log`.
    pub fn start(
        argv: &[String],
        env: &[(String, String)],
        cwd: &Path,
        log: Option<&Path>,
    ) -> Result<Self, ServeError> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| ServeError::BadCommand("the command is empty".to_owned()))?;
        let mut child = Command::new(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|source| ServeError::Start {
                command: npuprof_paths::shell::join(argv),
                source,
            })?;
        let readers = Readers::of_child(&mut child, log);
        let group = Pid::from_child(&child);
        Ok(Self {
            watchdog: Watchdog::start(group, WATCHDOG_GRACE),
            group,
            child,
            readers,
            exited: None,
        })
    }

    /// Its process group id.
    pub fn group(&self) -> i32 {
        self.group.as_raw_nonzero().get()
    }

    /// Its exit status once it has exited (never blocks).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().ok().flatten();
        }
        self.exited
    }

    /// The lines it printed since the last call (bounded).
    pub fn lines(&self) -> Vec<String> {
        self.readers.arrived().collect()
    }

    /// Its output so far.
    pub fn capture(&self) -> Capture {
        self.readers.capture()
    }

    /// Stops it: SIGTERM to the group, SIGKILL when the leader still runs after `grace`, then
    /// ends whatever is left in the group (SIGTERM, SIGKILL after `grace`).
    pub fn shutdown(mut self, grace: Duration) -> Shutdown {
        let exited_early = self.exited().is_some();
        // Its descendants that left its group (`setsid`), found while it still runs: ending
        // the group does not reach them.
        let escaped = if exited_early {
            Vec::new()
        } else {
            escaped(self.group, self.group)
        };
        let mut killed = false;
        if !exited_early {
            let _ = kill_process_group(self.group, Signal::TERM);
            let deadline = Instant::now() + grace;
            while self.exited().is_none() && Instant::now() < deadline {
                std::thread::sleep(POLL);
            }
            if self.exited().is_none() {
                let _ = kill_process_group(self.group, Signal::KILL);
                killed = true;
            }
        }
        let status = self.child.wait().ok();
        let mut stragglers = end_group(self.group, grace, POLL);
        stragglers.extend(end_escaped(&escaped, grace, POLL));
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.release();
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.readers.finished() && Instant::now() < deadline {
            std::thread::sleep(POLL / 5);
        }
        Shutdown {
            pid: self.group(),
            exit_code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            exited_early,
            killed,
            stragglers,
            output: self.readers.capture(),
        }
    }
}

/// The server's log in the profile directory (kept: it is part of the profile's evidence).
pub fn log_path(profile_dir: &Path) -> PathBuf {
    profile_dir.join("npuprof-server.log")
}
