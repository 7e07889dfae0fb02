//! Log lines torch_npu prints: parser failures, root causes, schedule warnings.

use std::io::BufRead;

use memchr::memmem;

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

/// A root-cause message torch_npu prints when parsing fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RootMessage {
    /// `Failed to export CANN Profiling data.`
    ExportFailed,
    /// `'msprof' command not found`
    MsprofNotFound,
    /// `CANN Profiling data does not exist.`
    CannDataMissing,
    /// `The profiling data cannot be parsed during the daemon process`
    DaemonProcess,
    /// `Profiling data parsing failed, error: ...`
    ParsingFailed,
}

const ROOT_MESSAGES: [(&str, RootMessage); 5] = [
    (
        "Failed to export CANN Profiling data",
        RootMessage::ExportFailed,
    ),
    ("'msprof' command not found", RootMessage::MsprofNotFound),
    (
        "CANN Profiling data does not exist",
        RootMessage::CannDataMissing,
    ),
    (
        "The profiling data cannot be parsed during the daemon process",
        RootMessage::DaemonProcess,
    ),
    (
        "Profiling data parsing failed, error:",
        RootMessage::ParsingFailed,
    ),
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
    /// Lines containing `run failed`.
    pub run_failed_lines: u64,
    /// Failed parser tasks, each with the first line naming it, in order of appearance.
    pub failed_tasks: Vec<Quoted<String>>,
    /// Root-cause messages.
    pub root_messages: Vec<Quoted<RootMessage>>,
    /// Schedule warnings.
    pub schedule_warnings: Vec<Quoted<ScheduleWarning>>,
    /// Lines asking for `chown` (output directory owned by another user).
    pub ownership: Vec<Quoted<()>>,
    /// `The file size exceeds the preset value` lines.
    pub size_cap: Vec<Quoted<()>>,
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

fn task_name(line: &[u8]) -> Option<String> {
    let start = memmem::find(line, b"Task [")? + 6;
    let len = memchr::memchr(b']', &line[start..])?;
    let name = std::str::from_utf8(&line[start..start + len]).ok()?.trim();
    (!name.is_empty()).then(|| name.to_owned())
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

/// Scans a log stream line by line, in bounded memory.
pub fn scan_log<R: BufRead>(mut reader: R) -> std::io::Result<LogScan> {
    let mut scan = LogScan::default();
    let mut buf = Vec::with_capacity(4096);
    let mut line_no = 0u64;
    loop {
        buf.clear();
        if read_line_capped(&mut reader, &mut buf)? == 0 {
            break;
        }
        line_no += 1;
        let line = buf.as_slice();
        if memmem::find(line, b"run failed").is_some() {
            scan.run_failed_lines += 1;
            if let Some(task) = task_name(line)
                && !scan.failed_tasks.iter().any(|q| q.kind == task)
            {
                scan.failed_tasks.push(Quoted {
                    kind: task,
                    line: line_no,
                    text: quote(line),
                });
            }
            continue;
        }
        if let Some(&(_, kind)) = ROOT_MESSAGES
            .iter()
            .find(|(needle, _)| memmem::find(line, needle.as_bytes()).is_some())
            && scan.root_messages.len() < KEEP
        {
            scan.root_messages.push(Quoted {
                kind,
                line: line_no,
                text: quote(line),
            });
        }
        if memmem::find(line, b"The file size exceeds the preset value").is_some()
            && scan.size_cap.len() < KEEP
        {
            scan.size_cap.push(Quoted {
                kind: (),
                line: line_no,
                text: quote(line),
            });
        }
        if memmem::find(line, b"chown").is_some() && scan.ownership.len() < KEEP {
            scan.ownership.push(Quoted {
                kind: (),
                line: line_no,
                text: quote(line),
            });
        }
        let sched = if memmem::find(line, b"current state is WARMUP").is_some() {
            Some(ScheduleWarning::StopInWarmup)
        } else if memmem::find(line, b"current state is RECORD_AND_SAVE").is_some() {
            Some(ScheduleWarning::StopInRecordAndSave)
        } else if memmem::find(line, b"current state is RECORD").is_some() {
            Some(ScheduleWarning::StopInRecord)
        } else if memmem::find(line, b"Incorrect schedule:").is_some()
            && memmem::find(line, b"followed by").is_some()
        {
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

/// The parser a failed task depends on (torch_npu's parse task graph), if any.
pub fn parent_task(task: &str) -> Option<&'static str> {
    match task {
        "KernelViewParser" | "MemoryViewParser" | "IntegrateParser" => Some("CANNExportParser"),
        "RelationParser"
        | "TraceViewParser"
        | "TraceStepTimeParser"
        | "OperatorViewParser"
        | "CANNAnalyzeParser"
        | "CommunicationParser" => Some("CANNTimelineParser"),
        _ => None,
    }
}

/// Failed tasks whose prerequisite did not fail: the roots of the cascade.
pub fn root_tasks(failed: &[Quoted<String>]) -> Vec<&Quoted<String>> {
    failed
        .iter()
        .filter(|q| match parent_task(&q.kind) {
            Some(parent) => !failed.iter().any(|o| o.kind == parent),
            None => true,
        })
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
