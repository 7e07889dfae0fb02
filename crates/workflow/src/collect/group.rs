//! The launch's process group once the launch has returned: what is left in it (a `nohup … &`,
//! a rank the launcher did not wait for) is ended, SIGTERM first, SIGKILL after a grace period,
//! and named.

use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use serde::Serialize;

/// A process the launch left running in its group, stopped by collect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Straggler {
    /// Its process id.
    pub pid: i32,
    /// Its command line (or its name, when the command line is unreadable).
    pub command: String,
    /// Whether it ignored SIGTERM and was killed (SIGKILL).
    pub killed: bool,
}

/// The live (not zombie) processes of group `group`, read from `/proc`.
pub fn members(group: Pid) -> Vec<(i32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<(i32, String)> = entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid pgrp …`: comm may hold spaces and parentheses.
            let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            let mut fields = rest.split(' ');
            let state = fields.next()?;
            let pgrp: i32 = fields.nth(1)?.parse().ok()?;
            (pgrp == group.as_raw_nonzero().get() && state != "Z" && state != "X").then(|| {
                (
                    pid,
                    command_line(&entry.path()).unwrap_or_else(|| name.to_owned()),
                )
            })
        })
        .collect();
    found.sort();
    found
}

fn command_line(proc_dir: &std::path::Path) -> Option<String> {
    let raw = std::fs::read(proc_dir.join("cmdline")).ok()?;
    let text: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|part| !part.is_empty())
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect();
    (!text.is_empty()).then(|| text.join(" "))
}

/// How long [`end`] waits for the processes it SIGKILLed to be gone (a process in
/// uninterruptible sleep, such as one in a driver call, dies only when the call returns).
const KILLED_GONE: Duration = Duration::from_secs(5);

/// Polls `busy` every `poll` while it holds, for at most `within`.
fn wait_while(within: Duration, poll: Duration, mut busy: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while busy() && Instant::now() < deadline {
        std::thread::sleep(poll);
    }
}

/// Ends what is left of group `group`: SIGTERM, then SIGKILL for what still runs after
/// `grace`. Returns the processes that were left.
pub fn end(group: Pid, grace: Duration, poll: Duration) -> Vec<Straggler> {
    let left = members(group);
    if left.is_empty() {
        return Vec::new();
    }
    let _ = kill_process_group(group, Signal::TERM);
    let deadline = Instant::now() + grace;
    let mut running = members(group);
    while !running.is_empty() && Instant::now() < deadline {
        std::thread::sleep(poll);
        running = members(group);
    }
    if !running.is_empty() {
        let _ = kill_process_group(group, Signal::KILL);
        // SIGKILL lands when each process is next scheduled: wait (bounded) until they are
        // gone, so that none outlives npuprof by that moment.
        wait_while(KILLED_GONE, poll, || !members(group).is_empty());
    }
    left.into_iter()
        .map(|(pid, command)| Straggler {
            killed: running.iter().any(|(p, _)| *p == pid),
            pid,
            command,
        })
        .collect()
}

/// A process that descends from a launch but left its process group (`setsid`, `setpgid`):
/// ending the group does not reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escaped {
    /// Its process id.
    pub pid: i32,
    /// Its start time (`/proc/<pid>/stat` field 22), so that a reused pid is not signalled.
    pub start: u64,
    /// Its command line.
    pub command: String,
}

/// `(pid, ppid, pgrp, start)` of every live process.
fn processes() -> Vec<(i32, i32, i32, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let (_, rest) = stat.rsplit_once(") ")?;
            let fields: Vec<&str> = rest.split(' ').collect();
            // After `comm`: state(0) ppid(1) pgrp(2) … starttime(19).
            let state = *fields.first()?;
            if state == "Z" || state == "X" {
                return None;
            }
            Some((
                pid,
                fields.get(1)?.parse().ok()?,
                fields.get(2)?.parse().ok()?,
                fields.get(19)?.parse().ok()?,
            ))
        })
        .collect()
}

/// The live descendants of `leader` that are not in group `group` (they called `setsid` or
/// `setpgid`), read from `/proc` while `leader` still runs (an orphan's parent is init).
pub fn escaped(leader: Pid, group: Pid) -> Vec<Escaped> {
    let all = processes();
    let (leader, group) = (leader.as_raw_nonzero().get(), group.as_raw_nonzero().get());
    let mut tree = vec![leader];
    let mut found = Vec::new();
    // Breadth-first over parent links; bounded by the process table.
    let mut i = 0;
    while i < tree.len() && i < all.len() + 1 {
        let parent = tree[i];
        for &(pid, ppid, pgrp, start) in &all {
            if ppid == parent && !tree.contains(&pid) {
                tree.push(pid);
                if pgrp != group {
                    found.push(Escaped {
                        pid,
                        start,
                        command: command_line(&std::path::Path::new("/proc").join(pid.to_string()))
                            .unwrap_or_default(),
                    });
                }
            }
        }
        i += 1;
    }
    found
}

/// Ends the `escaped` processes still running (the same start time): SIGTERM, then SIGKILL
/// after `grace`; returns them as stragglers.
pub fn end_escaped(escaped: &[Escaped], grace: Duration, poll: Duration) -> Vec<Straggler> {
    let alive = |e: &Escaped| {
        processes()
            .iter()
            .any(|&(pid, _, _, start)| pid == e.pid && start == e.start)
    };
    let left: Vec<&Escaped> = escaped.iter().filter(|e| alive(e)).collect();
    for e in &left {
        if let Some(pid) = Pid::from_raw(e.pid) {
            let _ = kill_process(pid, Signal::TERM);
        }
    }
    wait_while(grace, poll, || left.iter().any(|e| alive(e)));
    let stragglers: Vec<Straggler> = left
        .iter()
        .map(|e| {
            let still = alive(e);
            if still && let Some(pid) = Pid::from_raw(e.pid) {
                let _ = kill_process(pid, Signal::KILL);
            }
            Straggler {
                pid: e.pid,
                command: format!("{} (left the server's process group)", e.command),
                killed: still,
            }
        })
        .collect();
    // As in [`end`]: the SIGKILLed are waited for (bounded).
    if stragglers.iter().any(|s| s.killed) {
        wait_while(KILLED_GONE, poll, || left.iter().any(|e| alive(e)));
    }
    stragglers
}
