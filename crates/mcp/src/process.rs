//! One tool call as one child: `npuprof <command> …` in its own process group, its stdout read
//! whole (the result), its stderr read by line (the progress), interrupted as Ctrl-C does when
//! the call is cancelled. The groups still running are known to [`Groups`], which ends them
//! when the server stops.

use std::collections::BTreeSet;
use std::future::Future;
use std::io;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, BufReader};
use tokio::time::Instant;

/// How long a cancelled or stopped command has to finish after its SIGINT (collect restores
/// the repository then) before its group is killed.
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(30);

/// How long the output pipes are read after the command exited (something it started may
/// hold them open).
const DRAIN: Duration = Duration::from_secs(2);

/// How often a command that says nothing is reported as still running (a progress
/// notification also keeps a client's request timeout from running out).
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// The stderr lines kept for the result's text summary.
const TAIL_LINES: usize = 5;

/// The longest stderr line passed on (progress messages), in bytes.
const MAX_LINE: usize = 400;

/// The process groups of the commands still running.
#[derive(Debug, Clone, Default)]
pub struct Groups(Arc<Mutex<BTreeSet<i32>>>);

impl Groups {
    fn insert(&self, group: i32) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(group);
    }

    fn remove(&self, group: i32) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&group);
    }

    fn live(&self) -> Vec<Pid> {
        let groups = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        groups
            .iter()
            .filter_map(|&group| Pid::from_raw(group))
            .filter(|&group| test_kill_process_group(group).is_ok())
            .collect()
    }

    /// Interrupts every running command (SIGINT to its group, as Ctrl-C: collect restores the
    /// repository), waits up to `grace` for them to end, then kills what is left.
    pub async fn stop_all(&self, grace: Duration) {
        let live = self.live();
        if live.is_empty() {
            return;
        }
        for &group in &live {
            let _ = kill_process_group(group, Signal::INT);
        }
        let deadline = Instant::now() + grace;
        while !self.live().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for group in self.live() {
            let _ = kill_process_group(group, Signal::KILL);
        }
    }
}

/// How a command ended.
#[derive(Debug)]
pub struct Finished {
    /// Its exit code (`None`: ended by a signal).
    pub code: Option<i32>,
    /// Its whole stdout.
    pub stdout: Vec<u8>,
    /// Its last stderr lines.
    pub stderr_tail: Vec<String>,
    /// Whether it was interrupted because the call was cancelled.
    pub cancelled: bool,
}

/// Runs `program` with `args` in its own process group, with stdin closed; `on_line` gets each
/// stderr line as it comes, and `still running after N s` after each `heartbeat` without one;
/// when `cancelled` completes the group gets SIGINT, and SIGKILL [`INTERRUPT_GRACE`] later if it
/// still runs.
pub async fn run<C, L, F>(
    program: &Path,
    args: &[String],
    groups: &Groups,
    heartbeat: Duration,
    cancelled: C,
    mut on_line: L,
) -> io::Result<Finished>
where
    C: Future<Output = ()>,
    L: FnMut(String) -> F,
    F: Future<Output = ()>,
{
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| io::Error::other("the command ended before it could be tracked"))?;
    groups.insert(group);
    let group_pid = Pid::from_raw(group);
    let mut stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout"))?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| io::Error::other("no stderr"))?;
    let reader = tokio::spawn(async move {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes).await;
        bytes
    });
    let mut lines = BufReader::new(stderr).lines();
    let mut tail: Vec<String> = Vec::new();
    let keep = |line: String, tail: &mut Vec<String>| {
        let line = clip(line.trim_end());
        if !line.trim().is_empty() {
            if tail.len() == TAIL_LINES {
                tail.remove(0);
            }
            tail.push(line.clone());
        }
        line
    };
    tokio::pin!(cancelled);
    let (mut interrupted, mut stderr_open) = (false, true);
    let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
    let kill_at = tokio::time::sleep_until(far);
    tokio::pin!(kill_at);
    let drained = tokio::time::sleep_until(far);
    tokio::pin!(drained);
    let started = Instant::now();
    let every = heartbeat;
    let heartbeat = tokio::time::sleep(every);
    tokio::pin!(heartbeat);
    let mut status = None;
    while status.is_none() || stderr_open {
        tokio::select! {
            ended = child.wait(), if status.is_none() => {
                status = Some(ended);
                drained.as_mut().reset(Instant::now() + DRAIN);
            }
            line = lines.next_line(), if stderr_open => match line {
                Ok(Some(line)) => {
                    let line = keep(line, &mut tail);
                    if !line.trim().is_empty() {
                        heartbeat.as_mut().reset(Instant::now() + every);
                        on_line(line).await;
                    }
                }
                _ => stderr_open = false,
            },
            () = &mut heartbeat, if status.is_none() => {
                heartbeat.as_mut().reset(Instant::now() + every);
                on_line(format!("still running after {} s", started.elapsed().as_secs())).await;
            }
            () = &mut cancelled, if !interrupted => {
                interrupted = true;
                if let Some(pid) = group_pid {
                    let _ = kill_process_group(pid, Signal::INT);
                }
                kill_at.as_mut().reset(Instant::now() + INTERRUPT_GRACE);
            }
            () = &mut kill_at => {
                if let Some(pid) = group_pid {
                    let _ = kill_process_group(pid, Signal::KILL);
                }
                kill_at.as_mut().reset(far);
            }
            // Something the command started holds its stderr open.
            () = &mut drained => break,
        }
    }
    groups.remove(group);
    let status =
        status.unwrap_or_else(|| Err(io::Error::other("the command was not waited for")))?;
    let stdout = tokio::time::timeout(DRAIN, reader)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    Ok(Finished {
        code: status.code(),
        stdout,
        stderr_tail: tail,
        cancelled: interrupted,
    })
}

/// `line` cut to [`MAX_LINE`] bytes at a character boundary.
fn clip(line: &str) -> String {
    if line.len() <= MAX_LINE {
        return line.to_owned();
    }
    let mut end = MAX_LINE;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn sh(script: &str) -> Vec<String> {
        vec!["-c".into(), script.into()]
    }

    #[test]
    fn stdout_is_the_result_and_stderr_lines_the_progress() {
        let groups = Groups::default();
        let mut seen = Vec::new();
        let finished = runtime()
            .block_on(run(
                Path::new("sh"),
                &sh("echo one >&2; echo '{\"a\": 1}'; echo two >&2; exit 1"),
                &groups,
                HEARTBEAT,
                std::future::pending(),
                |line| {
                    seen.push(line);
                    async {}
                },
            ))
            .unwrap();
        assert_eq!(finished.code, Some(1));
        assert_eq!(finished.stdout, b"{\"a\": 1}\n");
        assert_eq!(seen, ["one", "two"]);
        assert_eq!(finished.stderr_tail, ["one", "two"]);
        assert!(!finished.cancelled);
        assert!(groups.live().is_empty());
    }

    #[test]
    fn a_cancelled_command_gets_sigint_and_finishes_its_work() {
        let groups = Groups::default();
        let script = "trap 'echo restored; exit 2' INT; echo started >&2; \
                      while :; do sleep 0.05; done";
        let finished = runtime()
            .block_on(async {
                let (tx, rx) = tokio::sync::oneshot::channel::<()>();
                let mut tx = Some(tx);
                run(
                    Path::new("sh"),
                    &sh(script),
                    &groups,
                    HEARTBEAT,
                    async {
                        let _ = rx.await;
                    },
                    |_line| {
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(());
                        }
                        async {}
                    },
                )
                .await
            })
            .unwrap();
        assert!(finished.cancelled);
        assert_eq!(finished.code, Some(2));
        assert_eq!(finished.stdout, b"restored\n");
    }

    #[test]
    fn a_quiet_command_is_reported_as_still_running() {
        let mut seen = Vec::new();
        runtime()
            .block_on(run(
                Path::new("sh"),
                &sh("sleep 0.35; echo done >&2"),
                &Groups::default(),
                Duration::from_millis(100),
                std::future::pending(),
                |line| {
                    seen.push(line);
                    async {}
                },
            ))
            .unwrap();
        assert!(seen.len() >= 3, "{seen:?}");
        assert!(seen[0].starts_with("still running after"), "{seen:?}");
        assert_eq!(seen.last().map(String::as_str), Some("done"));
    }

    #[test]
    fn long_lines_are_clipped_at_a_character_boundary() {
        let line = "é".repeat(MAX_LINE);
        let clipped = clip(&line);
        assert!(clipped.len() <= MAX_LINE + "…".len());
        assert!(clipped.ends_with('…'));
    }
}
