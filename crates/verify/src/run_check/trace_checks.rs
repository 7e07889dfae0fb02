//! trace_view.json: scanning it and the findings for each structural state.

use std::fs::File;
use std::path::Path;

use super::{Ctx, disp, reparse_command};
use crate::Progress;
use crate::finding::{Code, Evidence, Finding, Severity};
use crate::profiler_info::{Level, ProfilerInfo};
use crate::report::TraceSummary;
use crate::trace_scan::{TraceScan, TraceScanner, TraceState};

fn state_name(state: &TraceState) -> &'static str {
    match state {
        TraceState::Complete => "complete",
        TraceState::Empty => "empty",
        TraceState::NotAnArray => "not-an-array",
        TraceState::Unterminated { .. } => "unterminated",
        TraceState::CutMidEvent { .. } => "cut-mid-event",
        TraceState::TrailingCommaClose { .. } => "trailing-comma-close",
        TraceState::Malformed { .. } => "malformed",
    }
}

pub(super) fn trace_summary(scan: &TraceScan) -> TraceSummary {
    TraceSummary {
        bytes: scan.bytes,
        state: state_name(&scan.state).to_owned(),
        events: scan.events,
        last_event_end: scan.last_event_end,
        processes: scan.process_names.clone(),
    }
}

pub(super) fn scan_trace(path: &Path, progress: &dyn Progress) -> std::io::Result<TraceScan> {
    let file = File::open(path)?;
    TraceScanner::scan_reader(file, |n| progress.advance(n))
}

pub(super) fn trace_findings(
    ctx: &mut Ctx<'_>,
    path: &Path,
    scan: &TraceScan,
    info: Option<&ProfilerInfo>,
) {
    let p = disp(path);
    let reparse = reparse_command(&ctx.dir);
    let eof = scan.bytes;
    let last = scan.last_event_end;
    let f = match scan.state {
        TraceState::Complete => {
            trace_process_findings(ctx, &p, scan, info);
            return;
        }
        TraceState::Empty => Finding::new(
            Severity::Error,
            Code::TraceEmpty,
            "trace_view.json is empty",
            Evidence::offset(p, 0),
            format!(
                "the timeline parser wrote nothing: check the logs for `run failed`, then re-parse: {reparse}"
            ),
        ),
        TraceState::NotAnArray => Finding::new(
            Severity::Warning,
            Code::TraceNotArray,
            "trace_view.json is a JSON object, not torch_npu's bare event array: not written by torch_npu's TraceViewParser",
            Evidence::offset(p, 0),
            format!("re-parse the run to regenerate the timeline: {reparse}"),
        ),
        TraceState::Unterminated { trailing_comma } => Finding::new(
            Severity::Error,
            Code::TraceUnterminated,
            format!(
                "trace_view.json has no closing `]`: it ends cleanly after event {} (byte {last}{}; EOF at byte {eof}): the host events were written but the device timeline was never appended — device-side (CANN) parsing failed or was killed",
                scan.events,
                if trailing_comma { ", then a comma" } else { "" },
            ),
            Evidence::offset(p, last),
            format!(
                "find the failing parser with `grep -n 'run failed' <log>`; re-parse a copy on a local disk: {reparse}"
            ),
        ),
        TraceState::CutMidEvent { event_start } => Finding::new(
            Severity::Error,
            Code::TraceCutMidEvent,
            format!(
                "trace_view.json is cut in the middle of an event: the event starting at byte {event_start} is unfinished at EOF (byte {eof}); the last complete event ends at byte {last}: the writer was killed or the disk filled up"
            ),
            Evidence::offset(p, eof),
            format!(
                "check free space (`df -h {}`) and whether the process was killed (OOM, timeout); then re-parse: {reparse}",
                ctx.dir
            ),
        ),
        TraceState::TrailingCommaClose { comma } => Finding::new(
            Severity::Error,
            Code::TraceEmptyDeviceTimeline,
            format!(
                "trace_view.json closes with `,]` (comma at byte {comma}): the device timeline appended after the host events was empty, and the file is not valid JSON"
            ),
            Evidence::offset(p, comma),
            format!(
                "check that NPU activity was enabled and kernels ran inside the window (CANN raw data under PROF_*/device_*); then re-parse: {reparse}"
            ),
        ),
        TraceState::Malformed { offset, reason } => Finding::new(
            Severity::Error,
            Code::TraceMalformed,
            format!(
                "trace_view.json is not valid JSON: {reason} at byte {offset} (last complete event ends at byte {last})"
            ),
            Evidence::offset(p, offset),
            format!("re-parse the run to regenerate the timeline: {reparse}"),
        ),
    };
    ctx.push(f);
}

fn trace_process_findings(
    ctx: &mut Ctx<'_>,
    p: &str,
    scan: &TraceScan,
    info: Option<&ProfilerInfo>,
) {
    let npu = info.and_then(ProfilerInfo::npu_activity);
    if npu == Some(false) || info.and_then(|i| i.level) == Some(Level::None) {
        return;
    }
    let missing: Vec<&str> = ["Ascend Hardware", "CANN"]
        .into_iter()
        .filter(|n| !scan.has_process(n))
        .collect();
    if missing.is_empty() {
        return;
    }
    let severity = if npu == Some(true) {
        Severity::Error
    } else {
        Severity::Warning
    };
    ctx.push(Finding::new(
        severity,
        Code::TraceProcessMissing,
        format!(
            "trace_view.json has no `process_name` event for {}: the device timeline is missing{}",
            missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(" and "),
            if npu.is_none() {
                " (activities unknown)"
            } else {
                ""
            }
        ),
        Evidence::path(p),
        format!(
            "record ProfilerActivity.NPU and check the logs for CANN parser failures; re-parse: {}",
            reparse_command(&ctx.dir)
        ),
    ));
}
