//! Turning a scanned log into findings.

use std::path::Path;

use crate::finding::{Code, Evidence, Finding, Severity};
use crate::logs::{self, LogScan, RootMessage};
use crate::schedule_findings::{self, ScheduleContext};

fn root_next_action(kind: RootMessage, reparse: &str) -> String {
    match kind {
        RootMessage::ExportFailed | RootMessage::ParsingFailed => format!(
            "read the details in <run dir>/logs/profiler_*.log; re-parse a copy on a local disk: {reparse}"
        ),
        RootMessage::MsprofNotFound => format!(
            "put CANN's msprof on PATH (source the CANN set_env.sh, e.g. `source /usr/local/Ascend/ascend-toolkit/set_env.sh`), then re-parse: {reparse}"
        ),
        RootMessage::CannDataMissing => "the CANN raw data (PROF_*/device_*) is missing: record ProfilerActivity.NPU and let the window close (npuprof plan), then re-run".to_owned(),
        RootMessage::DaemonProcess => format!(
            "parse outside the daemon process, from a plain shell: {reparse}"
        ),
    }
}

/// Findings for one log file. `run_dir` is the directory to chown; `reparse` the command
/// that re-parses what the log covers (`crate::reparse::analyse_command`).
pub fn findings(
    scan: &LogScan,
    path: &Path,
    run_dir: &str,
    reparse: &str,
    ctx: ScheduleContext,
) -> Vec<Finding> {
    let p = path.display().to_string();
    let mut out = Vec::new();
    if scan.run_failed_lines > 0 {
        let roots = logs::root_tasks(&scan.failed_tasks);
        let cascade: Vec<&str> = scan
            .failed_tasks
            .iter()
            .filter(|t| !roots.iter().any(|r| r.kind == t.kind))
            .map(|t| t.kind.as_str())
            .collect();
        let root_names: Vec<&str> = roots.iter().map(|r| r.kind.as_str()).collect();
        let first_line = roots
            .first()
            .map(|r| r.line)
            .or_else(|| scan.failed_tasks.first().map(|t| t.line));
        let cause = scan
            .root_messages
            .first()
            .map(|m| format!("; root cause (line {}): \"{}\"", m.line, m.text))
            .unwrap_or_default();
        out.push(Finding::new(
            Severity::Error,
            Code::ParserFailed,
            format!(
                "{} `run failed` line(s); root failing task(s): {}{}{}",
                scan.run_failed_lines,
                if root_names.is_empty() {
                    "unnamed".to_owned()
                } else {
                    root_names.join(", ")
                },
                if cascade.is_empty() {
                    String::new()
                } else {
                    format!(" (then, as a consequence: {})", cascade.join(", "))
                },
                cause
            ),
            Evidence {
                path: Some(p.clone()),
                line: first_line,
                byte_offset: None,
            },
            format!("fix the root task's failure first (details in <run dir>/logs/profiler_*.log), then re-parse: {reparse}"),
        ));
    }
    for m in &scan.root_messages {
        out.push(Finding::new(
            Severity::Error,
            Code::ParserRootCause,
            format!("parser root cause: \"{}\"", m.text),
            Evidence::line(p.clone(), m.line),
            root_next_action(m.kind, reparse),
        ));
    }
    for w in &scan.schedule_warnings {
        out.push(schedule_findings::warning_finding(w, path, ctx));
    }
    for o in &scan.ownership {
        out.push(Finding::new(
            Severity::Warning,
            Code::OutputOwner,
            format!(
                "the output directory belongs to another user: \"{}\"",
                o.text
            ),
            Evidence::line(p.clone(), o.line),
            format!(
                "chown -R \"$(id -un)\" {run_dir}  (or write the output to a directory you own)"
            ),
        ));
    }
    for s in &scan.size_cap {
        out.push(Finding::new(
            Severity::Error,
            Code::SizeCapWarning,
            format!("torch_npu skipped a file over its size cap (treated as empty): \"{}\"", s.text),
            Evidence::line(p.clone(), s.line),
            "profile fewer steps (lower `active`), fewer ranks, or a lower profiler level, and re-run",
        ));
    }
    out
}
