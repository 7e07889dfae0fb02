//! Why a launch failed, read from what it wrote: its captured output and the ranks' own logs
//! (`log_<rank>.log`, where the recipes launcher sends each rank's output — its `infer.sh`
//! exits 0 even when every rank failed, so the logs are where a failure shows).

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use serde::Serialize;

/// The bytes read from the end of one rank log (a traceback is at the end).
pub const LOG_TAIL_BYTES: u64 = 64 * 1024;
/// Lines of context quoted before an error line.
const CONTEXT: usize = 3;
/// Launch errors quoted per source.
const MAX_PER_SOURCE: usize = 3;

/// What kind of launch error a line shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A Python traceback (its final line is the exception).
    Traceback,
    /// The device or the host ran out of memory.
    OutOfMemory,
    /// A process was killed (the shell's `Killed`, the kernel's OOM killer).
    Killed,
    /// The launcher's CPU binding failed (`taskset: failed to parse CPU list`).
    CpuBinding,
    /// The entry script or a file it needs is missing (`can't open file`).
    MissingFile,
}

/// Markers of one-line launch errors (matched case-insensitively), in the order they are tried.
/// Not `[ERROR]`: torch_npu logs its parsers' failures so (`Task [X] run failed.`), and those are
/// verify's to diagnose (the output filesystem), not a failed launch.
const MARKERS: &[(&str, ErrorKind)] = &[
    ("taskset: failed to parse cpu list", ErrorKind::CpuBinding),
    ("out of memory", ErrorKind::OutOfMemory),
    ("oom-kill", ErrorKind::Killed),
    ("can't open file", ErrorKind::MissingFile),
];

/// The header of a Python traceback.
const TRACEBACK: &str = "Traceback (most recent call last):";

/// One launch error found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchError {
    /// Where it was found: `output` (the launch's own output) or a log file's name.
    pub source: String,
    /// What kind of error.
    pub kind: ErrorKind,
    /// The error line (a traceback's final line).
    pub line: String,
    /// The lines before it (at most a few).
    pub context: Vec<String>,
}

/// The launch errors in `lines` (one source's text, in order): the last traceback's final line
/// with its context, then the one-line errors, at most [`MAX_PER_SOURCE`].
pub fn scan(source: &str, lines: &[&str]) -> Vec<LaunchError> {
    let mut found = Vec::new();
    let mut in_traceback: Option<usize> = None;
    let mut last_traceback = None;
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with(TRACEBACK) {
            in_traceback = Some(i);
            continue;
        }
        if let Some(start) = in_traceback {
            let indented = line.starts_with(char::is_whitespace);
            if !indented && !line.trim().is_empty() && i > start + 1 {
                last_traceback = Some(i);
                in_traceback = None;
                continue;
            }
        }
        let lower = line.to_lowercase();
        let killed = line.trim() == "Killed" || line.contains(" Killed ");
        let kind = MARKERS
            .iter()
            .find(|(marker, _)| lower.contains(marker))
            .map(|(_, kind)| *kind)
            .or(killed.then_some(ErrorKind::Killed));
        if let Some(kind) = kind {
            found.push(error(source, kind, lines, i));
        }
    }
    if let Some(i) = last_traceback {
        // A traceback's final line may also match a marker (`RuntimeError: NPU out of memory`).
        found.retain(|e| e.line != lines[i]);
        found.insert(0, error(source, ErrorKind::Traceback, lines, i));
    }
    found.dedup_by(|a, b| a.line == b.line);
    found.truncate(MAX_PER_SOURCE);
    found
}

fn error(source: &str, kind: ErrorKind, lines: &[&str], i: usize) -> LaunchError {
    LaunchError {
        source: source.to_owned(),
        kind,
        line: lines[i].trim_end().to_owned(),
        context: lines[i.saturating_sub(CONTEXT)..i]
            .iter()
            .map(|l| l.trim_end().to_owned())
            .collect(),
    }
}

/// The last [`LOG_TAIL_BYTES`] of a regular file, as lines (the first, cut, line dropped);
/// `None` when it is not a regular file or cannot be read.
pub fn log_tail(path: &Path) -> Option<Vec<String>> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut file = std::fs::File::open(path).ok()?;
    let skip = meta.len().saturating_sub(LOG_TAIL_BYTES);
    file.seek(SeekFrom::Start(skip)).ok()?;
    let mut bytes = Vec::new();
    file.take(LOG_TAIL_BYTES).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if skip > 0 && !lines.is_empty() {
        lines.remove(0);
    }
    Some(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_tracebacks_final_line_comes_first_with_its_context() {
        let lines = [
            "infer.sh: 1 rank(s)",
            "Traceback (most recent call last):",
            "  File \"infer.py\", line 3, in <module>",
            "    import torch_npu",
            "ModuleNotFoundError: No module named 'torch_npu'",
            "done",
        ];
        let found = scan("output", &lines);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, ErrorKind::Traceback);
        assert_eq!(found[0].line, lines[4]);
        assert_eq!(found[0].context, &lines[1..4]);
    }

    #[test]
    fn one_line_errors_are_found_and_an_oom_traceback_is_quoted_once() {
        let lines = [
            "taskset: failed to parse CPU list: 0-x",
            "Traceback (most recent call last):",
            "  File \"model.py\", line 9, in forward",
            "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB",
            "bash: line 1:  4242 Killed                  python3 infer.py",
        ];
        let kinds: Vec<ErrorKind> = scan("log_0.log", &lines).iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                ErrorKind::Traceback,
                ErrorKind::CpuBinding,
                ErrorKind::Killed
            ]
        );
    }

    #[test]
    fn ordinary_output_has_no_launch_error() {
        let lines = [
            "loading weights",
            "[2026-12-01 15:05:29] [ERROR] [31410] profiler.py: Task [CANNExportParser] run failed.",
            "Killed 0 processes? no",
        ];
        assert!(scan("output", &lines).is_empty());
    }
}
