//! The offline parse of run directories the engine left raw: verify's `analyse(...)` command,
//! one per run directory, several at once (at most one per core), each in its own process group
//! with its output kept in a log beside the runs, bounded by a deadline and by `stop`.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use npuprof_runs::reparse::{ReparseDir, analyse_command};
use npuprof_workflow::collect::{POLL, end_group};
use rustix::process::Pid;
use serde::Serialize;

/// One run directory's offline parse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Parse {
    /// The run directory.
    pub run: PathBuf,
    /// The command run (for the shell).
    pub command: String,
    /// Its exit code (`None`: killed, or it could not start).
    pub exit_code: Option<i32>,
    /// Its output's log.
    pub log: PathBuf,
    /// Why it did not finish, when it did not.
    pub error: Option<String>,
}

/// The log of `run`'s parse, beside the run directories.
fn log_for(run: &Path) -> PathBuf {
    let name = run
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    run.with_file_name(format!("npuprof-analyse-{name}.log"))
}

/// Parses `runs`, at most `jobs` at a time, until `deadline` or `stop()`; the ones still running
/// then are killed (their group with them). Returns one [`Parse`] per run, in order.
pub fn parse_all(
    runs: &[PathBuf],
    jobs: usize,
    deadline: Instant,
    grace: Duration,
    stop: &mut dyn FnMut() -> bool,
) -> Vec<Parse> {
    let mut results: Vec<Parse> = runs
        .iter()
        .map(|run| Parse {
            command: analyse_command(&[ReparseDir::run(run)]),
            run: run.clone(),
            exit_code: None,
            log: log_for(run),
            error: None,
        })
        .collect();
    let mut running: Vec<(usize, Child)> = Vec::new();
    let mut next = 0;
    let mut given_up: Option<&str> = None;
    while next < results.len() || !running.is_empty() {
        if given_up.is_none() {
            if stop() {
                given_up = Some("interrupted");
            } else if Instant::now() >= deadline {
                given_up = Some("timed out");
            }
        }
        if let Some(why) = given_up {
            for (index, child) in running.drain(..) {
                end_group(Pid::from_child(&child), grace, POLL);
                results[index].error = Some(format!("{why} before it finished"));
                let mut child = child;
                let _ = child.wait();
            }
            for result in &mut results[next..] {
                result.error = Some(format!("{why} before it started"));
            }
            break;
        }
        while running.len() < jobs.max(1) && next < results.len() {
            match spawn(&results[next]) {
                Ok(child) => running.push((next, child)),
                Err(e) => results[next].error = Some(format!("cannot run it: {e}")),
            }
            next += 1;
        }
        running.retain_mut(|(index, child)| match child.try_wait() {
            Ok(Some(status)) => {
                // What its worker pool left behind goes with it.
                end_group(Pid::from_child(child), grace, POLL);
                results[*index].exit_code = status.code();
                if !status.success() {
                    results[*index].error = Some(format!("it failed ({status})"));
                }
                false
            }
            Ok(None) => true,
            Err(e) => {
                results[*index].error = Some(format!("cannot wait for it: {e}"));
                false
            }
        });
        std::thread::sleep(POLL);
    }
    results
}

fn spawn(parse: &Parse) -> std::io::Result<Child> {
    let log = npuprof_journal::create_private_file(&parse.log).map_err(std::io::Error::other)?;
    Command::new("sh")
        .arg("-c")
        .arg(&parse.command)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
}

/// How many parses to run at once: one per core, at most `runs`.
pub fn jobs(runs: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(runs)
        .max(1)
}
