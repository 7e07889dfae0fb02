//! Turning a scanned log into findings.

use std::io::BufReader;
use std::path::{Path, PathBuf};

use crate::finding::{Code, Evidence, Finding, Severity};
use crate::run_check;
use crate::schedule_findings::{self, ScheduleContext};
use npuprof_runs::build::Build;
use npuprof_runs::logs::{self, LogScan, Owner, RootMessage};
use npuprof_runs::probe::{self, FileProblem};

fn root_next_action(kind: RootMessage, reparse: &str) -> String {
    match kind {
        RootMessage::ExportFailed | RootMessage::ParsingFailed => format!(
            "read the details (and the traceback) in <run dir>/logs/profiler_*.log; re-parse a copy on a local disk: {reparse}"
        ),
        RootMessage::MsprofNotFound => format!(
            "source the CANN environment in the shell that runs the job (e.g. `source /usr/local/Ascend/ascend-toolkit/set_env.sh`; `which msprof` must print a path), then re-parse: {reparse}"
        ),
        RootMessage::CannDataMissing => "the CANN raw data (PROF_*/device_*) is missing: record ProfilerActivity.NPU and let the window close (npuprof plan), then re-run".to_owned(),
        RootMessage::DaemonProcess => format!(
            "parse outside the daemon process, from a plain shell: {reparse}"
        ),
        RootMessage::CallFailed => "torch_npu caught this exception and went on (start/stop/step/analyse did nothing): fix what the exception names, then re-run".to_owned(),
    }
}

/// What a root-cause message means, before its quote.
fn root_meaning(kind: RootMessage) -> &'static str {
    match kind {
        RootMessage::MsprofNotFound => {
            "CANN environment not loaded: source set_env.sh (msprof is not on PATH, so the CANN export cannot run)"
        }
        RootMessage::ExportFailed => "the CANN export (msprof) failed",
        RootMessage::CannDataMissing => "the CANN raw data does not exist",
        RootMessage::DaemonProcess => "parsing was refused inside a daemon process",
        RootMessage::ParsingFailed => "parsing failed",
        RootMessage::CallFailed => "a profiler call failed and torch_npu swallowed the exception",
    }
}

/// The ParserFailed finding: failed tasks (roots first, then the cascade) and failed files.
fn parser_failed(scan: &LogScan, p: &str, reparse: &str) -> Option<Finding> {
    if scan.failed_tasks.is_empty() && scan.run_failed_lines == 0 && scan.generate_failed.is_empty()
    {
        return None;
    }
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
        .or_else(|| scan.failed_tasks.first().map(|t| t.line))
        .or_else(|| scan.generate_failed.first().map(|g| g.line));
    let mut cause = scan
        .root_messages
        .first()
        .map(|m| format!("; root cause (line {}): \"{}\"", m.line, m.text))
        .unwrap_or_default();
    if let Some(e) = scan.exceptions.first() {
        cause.push_str(&format!("; exception (line {}): \"{}\"", e.line, e.text));
    }
    let mut parts = Vec::new();
    if scan.run_failed_lines > 0 {
        parts.push(format!("{} `run failed` line(s)", scan.run_failed_lines));
    }
    if !scan.failed_tasks.is_empty() || scan.run_failed_lines > 0 {
        parts.push(format!(
            "root failing task(s): {}{}",
            if root_names.is_empty() {
                "unnamed".to_owned()
            } else {
                root_names.join(", ")
            },
            if cascade.is_empty() {
                String::new()
            } else {
                format!(" (then, as a consequence: {})", cascade.join(", "))
            }
        ));
    }
    if !scan.generate_failed.is_empty() {
        let files: Vec<&str> = scan
            .generate_failed
            .iter()
            .map(|g| g.kind.as_str())
            .collect();
        parts.push(format!("failed to generate: {}", files.join("; ")));
    }
    Some(Finding::new(
        Code::ParserFailed,
        format!("{}{cause}", parts.join("; ")),
        Evidence {
            path: Some(p.to_owned()),
            line: first_line,
            byte_offset: None,
        },
        format!(
            "fix the root task's failure first (details in <run dir>/logs/profiler_*.log), then re-parse: {reparse}"
        ),
    ))
}

/// Findings for one log file, judged for the build that wrote the run (its schedule warnings
/// are `schedule_findings::log_findings`, judged with the runs' schedule evidence). `run_dir` is the
/// directory to chown; `reparse` the command that re-parses what the log covers
/// (`npuprof_runs::reparse::analyse_command`).
pub fn findings(
    scan: &LogScan,
    path: &Path,
    run_dir: &str,
    reparse: &str,
    build: &Build,
) -> Vec<Finding> {
    let p = path.display().to_string();
    let mut out: Vec<Finding> = parser_failed(scan, &p, reparse).into_iter().collect();
    for m in &scan.root_messages {
        out.push(Finding::new(
            Code::ParserRootCause,
            format!(
                "parser root cause: {}: \"{}\"{}",
                root_meaning(m.kind),
                m.text,
                scan.exceptions
                    .iter()
                    .find(|e| e.line > m.line)
                    .map(|e| format!(" (traceback ends, line {}: \"{}\")", e.line, e.text))
                    .unwrap_or_default()
            ),
            Evidence::line(p.clone(), m.line),
            root_next_action(m.kind, reparse),
        ));
    }
    for a in &scan.acl_flow_missing {
        out.push(Finding::new(
            Code::AclFlowMissing,
            format!(
                "torch_npu found no acl-to-npu flow events, so it cannot tie kernels to steps: this is why Step Id is missing or empty in kernel_details.csv: \"{}\"",
                a.text
            ),
            Evidence::line(p.clone(), a.line),
            format!(
                "check <run dir>/logs/ for CANN timeline errors and that torch_npu matches the CANN toolkit ({}, cann {}); then re-parse: {reparse}",
                build.describe(),
                build.cann_version.as_deref().unwrap_or("unknown")
            ),
        ));
    }
    for o in &scan.ownership {
        out.push(ownership_finding(o, &p, run_dir, build));
    }
    for s in &scan.size_cap {
        out.push(Finding::new(
            Code::SizeCapWarning,
            format!("torch_npu skipped a file over its size cap (treated as empty): \"{}\"", s.text),
            Evidence::line(p.clone(), s.line),
            "profile fewer steps (lower `active`), fewer ranks, or a lower profiler level, and re-run",
        ));
    }
    out
}

/// A chown message: the toolkit's files (fix the toolkit) or the run's output (fix the owner,
/// or write to a directory you own), as severe as the build makes it.
fn ownership_finding(o: &logs::Quoted<Owner>, p: &str, run_dir: &str, build: &Build) -> Finding {
    let export_check = !matches!(
        o.kind,
        Owner::Output {
            export_check: false,
            ..
        }
    );
    let fatal = build.toolkit_owner_fatal();
    let severity = if export_check && fatal == Some(true) {
        Severity::Error
    } else {
        Severity::Warning
    };
    let effect = match fatal {
        _ if !export_check => "a chown request".to_owned(),
        Some(true) => format!("{} stops the CANN export on it, so parsing failed", build.describe()),
        Some(false) => format!("{} only warns and goes on", build.describe()),
        None => "whether it stops the export depends on the build (2.7.1 and 2.10.0 stop it; 2.7.1.post11 and 2.14.0 warn)".to_owned(),
    };
    match &o.kind {
        Owner::Toolkit { target } => Finding::new(
            Code::ToolkitOwner,
            format!(
                "the CANN toolkit's files (msprof) belong to another user ({effect}): \"{}\"",
                o.text
            ),
            Evidence::line(p.to_owned(), o.line),
            format!(
                "fix the toolkit's ownership (as its owner or root): chown -R \"$(id -un)\" {}; or source a CANN toolkit installed by your user; then re-parse",
                target.as_deref().unwrap_or("<ascend-toolkit directory>")
            ),
        ).with_severity(severity),
        Owner::Output { target, .. } => Finding::new(
            Code::OutputOwner,
            format!(
                "the output directory belongs to another user ({effect}): \"{}\"",
                o.text
            ),
            Evidence::line(p.to_owned(), o.line),
            format!(
                "chown -R \"$(id -un)\" {}  (or write the output to a directory you own, e.g. npuprof relocate)",
                target.as_deref().unwrap_or(run_dir)
            ),
        ).with_severity(severity),
    }
}

/// What a log says about parsing, for the cross-run verdicts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogVerdict {
    /// It reports failed parsing.
    pub failed: bool,
    /// It names a cause other than the disk.
    pub environment: bool,
}

impl LogVerdict {
    /// The verdict of one scan, for the build that wrote the runs.
    pub fn of(scan: &LogScan, build: &Build) -> Self {
        Self {
            failed: scan.parsers_failed(),
            environment: scan.has_environment_cause(build),
        }
    }

    /// Both logs' verdicts together.
    pub fn or(self, other: Self) -> Self {
        Self {
            failed: self.failed || other.failed,
            environment: self.environment || other.environment,
        }
    }
}

/// Opens and scans one log file, never blocking on a FIFO or a device.
pub fn scan_file(path: &Path) -> Result<LogScan, FileProblem> {
    probe::open_regular(path)
        .and_then(|o| logs::scan_log(BufReader::new(o.file)).map_err(|e| FileProblem::from_io(&e)))
}

/// The job's captured stdout given by the caller (`--log FILE`, or the log collect captured):
/// its findings go to `findings`; returns what all of them say together.
pub fn captured_logs(
    paths: &[PathBuf],
    run_dir: &str,
    reparse: &str,
    ctx: ScheduleContext,
    build: &Build,
    findings: &mut Vec<Finding>,
) -> LogVerdict {
    let mut verdict = LogVerdict::default();
    for path in paths {
        match scan_file(path) {
            Ok(scan) => {
                verdict = verdict.or(LogVerdict::of(&scan, build));
                findings.extend(self::findings(&scan, path, run_dir, reparse, build));
                findings.extend(schedule_findings::log_findings(&scan, path, ctx));
            }
            Err(p) => findings.push(run_check::problem_finding(path, &p)),
        }
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use npuprof_runs::logs::Quoted;

    fn quoted(kind: &str, line: u64) -> Quoted<String> {
        Quoted {
            kind: kind.to_owned(),
            line,
            text: format!("Failed to generate {kind}"),
        }
    }

    fn message(scan: &LogScan) -> String {
        parser_failed(scan, "log_0.log", "reparse")
            .expect("a failure is reported")
            .message
    }

    #[test]
    fn parser_failed_names_only_the_parts_the_log_has() {
        let files_only = LogScan {
            generate_failed: vec![quoted("kernel_details.csv", 7)],
            ..LogScan::default()
        };
        assert_eq!(
            message(&files_only),
            "failed to generate: kernel_details.csv"
        );
        let stdout_only = LogScan {
            run_failed_lines: 2,
            ..LogScan::default()
        };
        assert_eq!(
            message(&stdout_only),
            "2 `run failed` line(s); root failing task(s): unnamed"
        );
        assert!(parser_failed(&LogScan::default(), "log_0.log", "reparse").is_none());
    }

    #[test]
    fn another_tools_chown_request_is_no_export_failure() {
        let request = Quoted {
            kind: Owner::Output {
                target: Some("/data/prof".to_owned()),
                export_check: false,
            },
            line: 3,
            text: "please chown".to_owned(),
        };
        let stopping = Build::new(Some("2.7.1"), None);
        assert_eq!(stopping.toolkit_owner_fatal(), Some(true));
        let f = ownership_finding(&request, "log_0.log", "run", &stopping);
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("(a chown request)"), "{}", f.message);
    }
}
