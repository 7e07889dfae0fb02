//! trace_view.json: scanning it and the findings for each structural state.

use std::path::Path;

use super::{Ctx, disp};
use crate::Progress;
use crate::finding::{Code, Evidence, Finding, Severity};
use crate::report::TraceSummary;
use npuprof_runs::probe::Opened;
use npuprof_runs::profiler_info::{Level, ProfilerInfo};
use npuprof_scan::trace_scan::{TraceScan, TraceScanner, TraceState};

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

/// The process that holds the device timeline at every level.
const DEVICE_PROCESS: &str = "Ascend Hardware";
/// The host CANN API process, written from Level1 up.
const CANN_PROCESS: &str = "CANN";

pub(super) fn scan_trace(opened: Opened, progress: &dyn Progress) -> std::io::Result<TraceScan> {
    TraceScanner::scan_file_parallel(&opened.file, |n| progress.advance(n))
}

/// Whether the trace's device timeline is empty: closed with `},]`, or complete without an
/// `Ascend Hardware` process.
pub(super) fn device_timeline_empty(scan: &TraceScan) -> bool {
    match scan.state {
        TraceState::TrailingCommaClose { .. } => true,
        TraceState::Complete => !scan.has_process(DEVICE_PROCESS),
        _ => false,
    }
}

/// The trace's findings. In an empty window (no kernels recorded, told by the artifact set) a
/// complete trace without a device timeline is what torch_npu writes, not a failure.
pub(super) fn trace_findings(
    ctx: &mut Ctx<'_>,
    path: &Path,
    scan: &TraceScan,
    info: Option<&ProfilerInfo>,
    empty_window: bool,
) {
    if matches!(scan.state, TraceState::Complete) {
        if !empty_window {
            trace_process_findings(ctx, &disp(path), scan, info);
        }
    } else {
        ctx.push(state_finding(ctx, path, scan));
    }
}

/// The one finding for a trace that is not a complete array.
fn state_finding(ctx: &Ctx<'_>, path: &Path, scan: &TraceScan) -> Finding {
    let p = disp(path);
    let reparse = ctx.reparse();
    let eof = scan.bytes;
    let last = scan.last_event_end;
    let device_seen = scan.has_process(DEVICE_PROCESS);
    match scan.state {
        TraceState::Complete | TraceState::Empty => Finding::new(
            Code::TraceEmpty,
            "trace_view.json holds nothing but whitespace",
            Evidence::offset(p, 0),
            format!(
                "the timeline parser wrote nothing: check the logs for `run failed`, then re-parse: {reparse}"
            ),
        ),
        TraceState::NotAnArray => Finding::new(
            Code::TraceNotArray,
            "trace_view.json is an object-form Chrome trace (`{\"traceEvents\": [...]}` or another JSON object), not torch_npu's bare event array: another tool wrote or rewrote it, and its processes were not checked",
            Evidence::offset(p, 0),
            format!("re-parse the run to regenerate the timeline: {reparse}"),
        ),
        TraceState::Unterminated { trailing_comma } if device_seen => Finding::new(
            Code::TraceUnterminated,
            format!(
                "trace_view.json has no closing `]`: it ends cleanly after event {} (byte {last}{}; EOF at byte {eof}) while the device timeline (`{DEVICE_PROCESS}`) was being appended: the writer was killed or the disk filled up",
                scan.events,
                if trailing_comma { ", then a comma" } else { "" },
            ),
            Evidence::offset(p, last),
            format!(
                "check free space (`df -h {}`) and whether the process was killed (OOM, timeout); then re-parse: {reparse}",
                ctx.dir
            ),
        ),
        TraceState::Unterminated { trailing_comma } => Finding::new(
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
            Code::TraceMalformed,
            format!(
                "trace_view.json is not valid JSON: {reason} at byte {offset} (last complete event ends at byte {last})"
            ),
            Evidence::offset(p, offset),
            format!("re-parse the run to regenerate the timeline: {reparse}"),
        ),
    }
}

/// The processes a complete trace must name: `Ascend Hardware` (the device timeline) whenever
/// NPU activity is recorded, and `CANN` (host API) from Level1 up; Level0 writes no `CANN`.
fn trace_process_findings(
    ctx: &mut Ctx<'_>,
    p: &str,
    scan: &TraceScan,
    info: Option<&ProfilerInfo>,
) {
    let npu = info.and_then(ProfilerInfo::npu_activity);
    let level = info.and_then(|i| i.level);
    if npu == Some(false) || level == Some(Level::None) {
        return;
    }
    let reparse = ctx.reparse();
    let f = if !scan.has_process(DEVICE_PROCESS) {
        let (severity, action) = if npu == Some(true) {
            (
                Severity::Error,
                format!(
                    "ProfilerActivity.NPU was recorded, so device parsing failed: look for CANNTimelineParser/CANNExportParser `run failed` in the logs; re-parse: {reparse}"
                ),
            )
        } else {
            (
                Severity::Warning,
                format!(
                    "activities unknown: if ProfilerActivity.NPU was recorded, device parsing failed (check the logs; re-parse: {reparse}); if not, record it to get a device timeline"
                ),
            )
        };
        Finding::new(
            Code::TraceProcessMissing,
            format!(
                "trace_view.json has no `{DEVICE_PROCESS}` process: the device timeline is missing (processes: {})",
                list_processes(scan)
            ),
            Evidence::path(p),
            action,
        ).with_severity(severity)
    } else if level.is_some_and(Level::is_detailed) && !scan.has_process(CANN_PROCESS) {
        Finding::new(
            Code::TraceProcessMissing,
            format!(
                "trace_view.json has no `{CANN_PROCESS}` process although {} was recorded (it writes the host CANN API timeline from Level1 up): CANN timeline parsing failed",
                level.map_or("Level1", Level::as_str)
            ),
            Evidence::path(p),
            format!("look for CANNTimelineParser `run failed` in the logs; re-parse: {reparse}"),
        )
    } else {
        return;
    };
    ctx.push(f);
}

fn list_processes(scan: &TraceScan) -> String {
    if scan.process_names.is_empty() {
        "none named".to_owned()
    } else {
        scan.process_names.join(", ")
    }
}
