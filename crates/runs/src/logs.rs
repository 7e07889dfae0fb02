//! Log lines torch_npu prints: parser failures, root causes, schedule warnings.

use std::io::BufRead;

use memchr::memmem;

use crate::build::Build;
use crate::parse_tasks;

/// Longest quote kept from a log line.
const QUOTE_LIMIT: usize = 240;
/// Most lines kept per kind of message.
const KEEP: usize = 8;
/// The longest part of a line kept for matching: longer lines (binary junk, a progress bar
/// without line ends) are read through but not stored, so memory does not grow with them.
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// A torch_npu schedule warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScheduleWarning {
    /// `Stop profiler while current state is WARMUP ...` (the run directory is deleted).
    StopInWarmup,
    /// `Stop profiler while current state is RECORD which may result in incomplete parsed data.`
    StopInRecord,
    /// `Stop profiler while current state is RECORD_AND_SAVE, perhaps the scheduling cycle has not yet completed.`
    StopInRecordAndSave,
    /// `Incorrect schedule: X followed by Y` (raw data kept, not parsed).
    Transition,
}

/// A root-cause message torch_npu prints (stdout) or logs (`<run>/logs/`) when parsing fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RootMessage {
    /// msprof is not on PATH: `'msprof' command not found!` (2.7.1+, on the same line as
    /// `Failed to export CANN Profiling data`) or `msprof command not found!` (2.5.1 and older).
    MsprofNotFound,
    /// `Failed to export CANN Profiling data` for another reason.
    ExportFailed,
    /// `CANN Profiling data does not exist.`
    CannDataMissing,
    /// `The profiling data cannot be parsed during the daemon process`
    DaemonProcess,
    /// `Profiling data parsing failed` (`, error: ...` from 2.5.1; bare in 2.1.0.post10), or the
    /// parser log's `Failed to parsing profiling data`.
    ParsingFailed,
    /// `Call <func> failed. Exception: ...`: torch_npu swallowed an exception of start, stop,
    /// step or analyse.
    CallFailed,
}

/// Root-cause texts, most specific first: a line is classified by the first that it holds.
const ROOT_MESSAGES: [(&str, RootMessage); 9] = [
    ("'msprof' command not found", RootMessage::MsprofNotFound),
    ("msprof command not found", RootMessage::MsprofNotFound),
    (
        "Failed to export CANN Profiling data",
        RootMessage::ExportFailed,
    ),
    (
        "CANN Profiling data does not exist",
        RootMessage::CannDataMissing,
    ),
    (
        "The profiling data cannot be parsed during the daemon process",
        RootMessage::DaemonProcess,
    ),
    ("Profiling data parsing failed", RootMessage::ParsingFailed),
    (
        "Failed to parsing profiling data",
        RootMessage::ParsingFailed,
    ),
    (" failed. Exception: ", RootMessage::CallFailed),
    (
        "Failed to parse CANN Profiling data",
        RootMessage::ExportFailed,
    ),
];

/// Whose files a `chown` message is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// The CANN toolkit's own files (msprof): `The '<msprof>' path and current owner have
    /// inconsistent permissions. please execute 'chown -R <user> <toolkit>'`.
    Toolkit {
        /// The directory the message asks to chown.
        target: Option<String>,
    },
    /// The run's output (`PROF_*`): `... owner is neither root nor the current user ...
    /// chown -R $(id -un) '<dir>'`, or another chown request.
    Output {
        /// The directory the message asks to chown.
        target: Option<String>,
        /// It is the CANN export's own owner check of `PROF_*` (whose effect depends on the
        /// build), not another tool's request.
        export_check: bool,
    },
}

/// Texts that say an I/O operation itself failed (the bad-disk signature).
const IO_ERRORS: [&str; 6] = [
    "[Errno 5]",
    "Input/output error",
    "No space left on device",
    "Stale file handle",
    "Transport endpoint is not connected",
    "Disk quota exceeded",
];

/// A log line worth quoting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quoted<K> {
    /// What the line says.
    pub kind: K,
    /// 1-based line number.
    pub line: u64,
    /// The line, trimmed and shortened.
    pub text: String,
}

/// What one log file says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogScan {
    /// Lines saying a task failed: `Task [X] run failed.` (2.5.1+) or `Task x has not run
    /// successfully.` (2.1.0.post10); both go to stdout only.
    pub run_failed_lines: u64,
    /// Failed parser tasks (class names), each with the first line naming it, in order of
    /// appearance: from those stdout lines and from the 2.7.1+ status table of a parser log.
    pub failed_tasks: Vec<Quoted<String>>,
    /// Root-cause messages.
    pub root_messages: Vec<Quoted<RootMessage>>,
    /// `Failed to generate <what>` records of a parser log, `what` as logged.
    pub generate_failed: Vec<Quoted<String>>,
    /// Python exception lines (`OSError: [Errno 5] ...`) following a `Traceback`.
    pub exceptions: Vec<Quoted<()>>,
    /// Lines saying an I/O operation failed (`[Errno 5]`, `No space left on device`, ...).
    pub io_errors: Vec<Quoted<()>>,
    /// `Failed to get acl to npu flow events`: kernels cannot be given a Step Id.
    pub acl_flow_missing: Vec<Quoted<()>>,
    /// Schedule warnings.
    pub schedule_warnings: Vec<Quoted<ScheduleWarning>>,
    /// Lines asking for `chown`, by whose files they are about.
    pub ownership: Vec<Quoted<Owner>>,
    /// `The file size exceeds the preset value` lines.
    pub size_cap: Vec<Quoted<()>>,
}

impl LogScan {
    /// Whether the log says parsing failed: a failed task, a failed file, a root cause.
    pub fn parsers_failed(&self) -> bool {
        self.run_failed_lines > 0
            || !self.failed_tasks.is_empty()
            || !self.generate_failed.is_empty()
            || !self.root_messages.is_empty()
    }

    /// Whether the failure has a cause other than the output disk (the CANN environment, a
    /// daemon process, missing raw data, the toolkit's ownership on a build whose export stops on
    /// it): the bad-disk verdict does not apply then.
    pub fn has_environment_cause(&self, build: &Build) -> bool {
        self.root_messages.iter().any(|m| {
            matches!(
                m.kind,
                RootMessage::MsprofNotFound
                    | RootMessage::DaemonProcess
                    | RootMessage::CannDataMissing
            )
        }) || (build.toolkit_owner_fatal() != Some(false)
            && self
                .ownership
                .iter()
                .any(|o| matches!(o.kind, Owner::Toolkit { .. })))
    }

    fn push_task(&mut self, name: &str, line_no: u64, line: &[u8]) {
        let class = parse_tasks::class_name(name);
        if !self.failed_tasks.iter().any(|q| q.kind == class) {
            self.failed_tasks.push(Quoted {
                kind: class,
                line: line_no,
                text: quote(line),
            });
        }
    }
}

/// Pushes a quote of `line` when fewer than [`KEEP`] are kept.
fn keep<K>(list: &mut Vec<Quoted<K>>, kind: K, line_no: u64, line: &[u8]) {
    if list.len() < KEEP {
        list.push(Quoted {
            kind,
            line: line_no,
            text: quote(line),
        });
    }
}

fn has(line: &[u8], needle: &str) -> bool {
    memmem::find(line, needle.as_bytes()).is_some()
}

/// The text after `needle` in `line`, when present.
fn after<'a>(line: &'a str, needle: &str) -> Option<&'a str> {
    line.find(needle).map(|i| &line[i + needle.len()..])
}

/// The task named by a stdout failure line: `Task [X] run failed.` or `Task x has not run
/// successfully.`
fn failed_task_name(line: &str) -> Option<&str> {
    if let Some(rest) = after(line, "Task [") {
        let name = rest.split(']').next()?.trim();
        return (!name.is_empty()).then_some(name);
    }
    let rest = after(line, "Task ")?;
    let name = rest[..rest.find(" has not run successfully")?].trim();
    (!name.is_empty() && !name.contains(' ')).then_some(name)
}

/// A `<task> | <mode> | Failed | <time>s | deps: ...` row of the 2.7.1+ status table.
fn status_table_failure(line: &str) -> Option<&str> {
    if !line.contains("| deps:") {
        return None;
    }
    let cells: Vec<&str> = line.split(" | ").map(str::trim).collect();
    if cells.len() < 4 || cells[2] != "Failed" {
        return None;
    }
    // The first cell holds the logger prefix `[time] [LEVEL] [AscendProfiler_X:478] name`.
    let name = cells[0].rsplit("] ").next()?.trim();
    (!name.is_empty()).then_some(name)
}

/// What a `Failed to generate <what>` record names.
fn generated_what(line: &str) -> Option<String> {
    let rest = after(line, "Failed to generate ")?;
    let end = [", error", ". Error", ", Error"]
        .iter()
        .filter_map(|sep| rest.find(sep))
        .min()
        .unwrap_or(rest.trim_end().len());
    let what = rest[..end].trim_end().trim_end_matches('.').trim();
    (!what.is_empty()).then(|| what.to_owned())
}

/// The directory a chown request names: `chown -R <user> '<dir>'` (quotes optional).
fn chown_target(line: &str) -> Option<String> {
    let rest = after(line, "chown -R ")?.trim_start();
    // The user is a name or `$(id -un)`.
    let rest = match rest.strip_prefix("$(") {
        Some(inner) => &inner[inner.find(')')? + 1..],
        None => rest.split_once(char::is_whitespace)?.1,
    };
    let target = rest
        .trim_start()
        .trim_start_matches(['\'', '"'])
        .split(|c: char| c == '\'' || c == '"' || c.is_whitespace())
        .next()?
        .trim_end_matches('.');
    // Only a path is a target (`please run chown -R to fix it` names none).
    target.contains('/').then(|| target.to_owned())
}

fn ownership(line: &str) -> Option<Owner> {
    if !line.contains("chown") {
        return None;
    }
    let target = chown_target(line);
    Some(
        if line.contains("path and current owner have inconsistent permissions") {
            Owner::Toolkit { target }
        } else {
            Owner::Output {
                target,
                export_check: line.contains("neither root nor the current user"),
            }
        },
    )
}

/// An exception line of a traceback: `OSError: [Errno 5] ...`, `RuntimeError: ...`.
fn is_exception_line(line: &str) -> bool {
    let Some((name, _)) = line.split_once(": ") else {
        return false;
    };
    !line.starts_with(char::is_whitespace)
        && (name.ends_with("Error") || name.ends_with("Exception"))
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
}

fn quote(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line.trim_ascii());
    // Progress bars overwrite the line with `\r`: keep the last segment.
    let text = text.rsplit('\r').next().unwrap_or_default().trim();
    if text.chars().count() > QUOTE_LIMIT {
        let cut: String = text.chars().take(QUOTE_LIMIT).collect();
        format!("{cut}…")
    } else {
        text.to_owned()
    }
}

/// Reads one line (up to and including `\n`) into `buf`, keeping at most [`MAX_LINE_BYTES`];
/// returns the bytes consumed (0 at the end).
fn read_line_capped<R: BufRead>(reader: &mut R, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(consumed);
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        reader.consume(take);
        consumed += take;
        if done {
            return Ok(consumed);
        }
    }
}

/// Scans a log stream line by line, in bounded memory: stdout as captured (cann-recipes
/// `log_<rank>.log`, `--log`) and the parser's own logs (`<run>/logs/profiler_*.log`).
pub fn scan_log<R: BufRead>(mut reader: R) -> std::io::Result<LogScan> {
    let mut scan = LogScan::default();
    let mut buf = Vec::with_capacity(4096);
    let mut line_no = 0u64;
    let mut in_traceback = false;
    loop {
        buf.clear();
        if read_line_capped(&mut reader, &mut buf)? == 0 {
            break;
        }
        line_no += 1;
        let line = buf.as_slice();
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if has(line, "run failed") || has(line, "has not run successfully") {
            scan.run_failed_lines += 1;
            if let Some(task) = failed_task_name(text) {
                scan.push_task(task, line_no, line);
            }
            continue;
        }
        if let Some(task) = status_table_failure(text) {
            scan.push_task(task, line_no, line);
            continue;
        }
        if has(line, "Traceback (most recent call last)") {
            in_traceback = true;
        } else if in_traceback && is_exception_line(text) {
            in_traceback = false;
            keep(&mut scan.exceptions, (), line_no, line);
        }
        if let Some(&(_, kind)) = ROOT_MESSAGES.iter().find(|(needle, _)| has(line, needle)) {
            keep(&mut scan.root_messages, kind, line_no, line);
        }
        if let Some(what) = generated_what(text) {
            keep(&mut scan.generate_failed, what, line_no, line);
        }
        if IO_ERRORS.iter().any(|n| has(line, n)) {
            keep(&mut scan.io_errors, (), line_no, line);
        }
        if has(line, "Failed to get acl to npu flow events") {
            keep(&mut scan.acl_flow_missing, (), line_no, line);
        }
        if has(line, "The file size exceeds the preset value") {
            keep(&mut scan.size_cap, (), line_no, line);
        }
        if let Some(owner) = ownership(text) {
            keep(&mut scan.ownership, owner, line_no, line);
        }
        let sched = if has(line, "current state is WARMUP") {
            Some(ScheduleWarning::StopInWarmup)
        } else if has(line, "current state is RECORD_AND_SAVE") {
            Some(ScheduleWarning::StopInRecordAndSave)
        } else if has(line, "current state is RECORD") {
            Some(ScheduleWarning::StopInRecord)
        } else if has(line, "Incorrect schedule:") && has(line, "followed by") {
            Some(ScheduleWarning::Transition)
        } else {
            None
        };
        if let Some(kind) = sched
            && scan
                .schedule_warnings
                .iter()
                .filter(|q| q.kind == kind)
                .count()
                < KEEP
        {
            scan.schedule_warnings.push(Quoted {
                kind,
                line: line_no,
                text: quote(line),
            });
        }
    }
    Ok(scan)
}

/// Failed tasks whose prerequisites did not fail: the roots of the cascade (torch_npu's task
/// graph, [`parse_tasks`]).
pub fn root_tasks(failed: &[Quoted<String>]) -> Vec<&Quoted<String>> {
    let names: Vec<&str> = failed.iter().map(|q| q.kind.as_str()).collect();
    let roots = parse_tasks::roots(&names);
    failed
        .iter()
        .filter(|q| roots.contains(&q.kind.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
[2026-07-25 17:56:02] [ERROR] [66457] profiler.py: Task [CANNExportParser] run failed.
[2026-07-25 17:56:02] [ERROR] [66457] profiler.py: Failed to export CANN Profiling data.
[2026-07-25 17:56:03] [ERROR] [66457] profiler.py: Task [KernelViewParser] run failed.
2025-06-13 10:13:28 [ERROR] [911684] profiler.py: Task [IntegrateParser] run failed.
[W] Incorrect schedule: Stop profiler while current state is RECORD which may result in incomplete parsed data.
Stop profiler while current state is RECORD_AND_SAVE, perhaps the scheduling cycle has not yet completed.
";

    #[test]
    fn a_huge_line_is_read_through_not_kept() {
        let mut text = vec![b'x'; 3 * MAX_LINE_BYTES];
        text.extend_from_slice(b"\nTask [TraceViewParser] run failed.\n");
        let scan =
            scan_log(std::io::BufReader::with_capacity(1024, text.as_slice())).unwrap_or_default();
        assert_eq!(scan.run_failed_lines, 1);
        assert_eq!(scan.failed_tasks[0].line, 2);
    }

    #[test]
    fn toolkit_ownership_is_a_cause_only_where_it_stops_the_export() {
        let scan = scan_log(
            "[2025-10-20-09:00:01.200] [WARNING] [AscendProfiler_CANNExportParser:166] The '/opt/Ascend/ascend-toolkit/latest/bin/msprof' path and current owner have inconsistent permissions.please execute 'chown -R alice /opt/Ascend/ascend-toolkit'\n"
                .as_bytes(),
        )
        .unwrap_or_default();
        assert_eq!(
            scan.ownership[0].kind,
            Owner::Toolkit {
                target: Some("/opt/Ascend/ascend-toolkit".to_owned())
            }
        );
        assert!(scan.has_environment_cause(&Build::new(Some("2.7.1"), None)));
        assert!(!scan.has_environment_cause(&Build::new(Some("2.14.0"), None)));
        assert!(scan.has_environment_cause(&Build::unknown()));
    }

    #[test]
    fn finds_the_root_of_a_cascade() {
        let scan = scan_log(LOG.as_bytes()).unwrap_or_default();
        assert_eq!(scan.run_failed_lines, 3);
        let roots: Vec<&str> = root_tasks(&scan.failed_tasks)
            .iter()
            .map(|q| q.kind.as_str())
            .collect();
        assert_eq!(roots, vec!["CANNExportParser"]);
        assert_eq!(scan.root_messages.len(), 1);
        assert_eq!(scan.root_messages[0].line, 2);
        let kinds: Vec<_> = scan.schedule_warnings.iter().map(|q| q.kind).collect();
        assert_eq!(
            kinds,
            vec![
                ScheduleWarning::StopInRecord,
                ScheduleWarning::StopInRecordAndSave
            ]
        );
    }
}
