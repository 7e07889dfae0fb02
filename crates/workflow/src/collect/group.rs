//! The launch's process group once the launch has returned: what is left in it (a `nohup … &`,
//! a rank the launcher did not wait for) is ended, SIGTERM first, SIGKILL after a grace period,
//! and named.

use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
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
    }
    left.into_iter()
        .map(|(pid, command)| Straggler {
            killed: running.iter().any(|(p, _)| *p == pid),
            pid,
            command,
        })
        .collect()
}
