//! kernel_details.csv: required columns for the recorded level and metric group, rows.

use std::path::Path;

use super::file_findings::csv_corrupt;
use super::{Ctx, disp};
use crate::Progress;
use crate::finding::{Code, Evidence, Finding, Severity};
use crate::report::KernelSummary;
use npuprof_runs::probe::Opened;
use npuprof_runs::profiler_info::{Level, ProfilerInfo, RecordedSchedule};
use npuprof_scan::kernel_csv::{self, KernelScan};

/// The fix for a minimal header when Level0 was (or may have been) recorded.
const RAISE_LEVEL_FIX: &str = "pass experimental_config=torch_npu.profiler._ExperimentalConfig(profiler_level=torch_npu.profiler.ProfilerLevel.Level1, aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization) to torch_npu.profiler.profile(...) and re-run";

pub(super) fn scan_kernels(
    opened: Opened,
    progress: &dyn Progress,
) -> Result<KernelScan, std::io::Error> {
    kernel_csv::scan_kernel_file(&opened.file, |n| progress.advance(n))
}

pub(super) fn kernel_summary(path: &Path, scan: &KernelScan) -> KernelSummary {
    KernelSummary {
        bytes: path.metadata().map(|m| m.len()).unwrap_or(0),
        columns: scan.header.len(),
        header: if is_minimal(scan) { "minimal" } else { "full" }.to_owned(),
        rows: scan.rows,
        empty_step_id_rows: scan.empty_step_id_rows,
        all_empty_columns: scan.all_empty_columns.clone(),
    }
}

/// A Level0 header: no `Task ID`, no `Stream ID`, no metric columns.
fn is_minimal(scan: &KernelScan) -> bool {
    !scan.has("Task ID")
        && !scan.has("Stream ID")
        && !scan.has("aicore_time(us)")
        && !scan
            .header
            .iter()
            .any(|h| h.starts_with("aic_") || h.starts_with("aiv_"))
}

/// Whether the header uses the AIC/AIV split spelling (`aic_*`/`aiv_*` pairs).
fn has_split_metrics(scan: &KernelScan) -> bool {
    scan.header
        .iter()
        .any(|h| h.starts_with("aic_") || h.starts_with("aiv_"))
}

/// Metric columns expected for an `_aic_metrics` value, each as its accepted spellings: chips
/// with the AIC/AIV split write `aic_*`/`aiv_*` pairs, the others the un-prefixed names
/// (both seen in real output). `None`: the group's names are not known.
fn metric_columns(aic_metrics: &str) -> Option<&'static [&'static [&'static str]]> {
    match aic_metrics {
        "ACL_AICORE_PIPE_UTILIZATION" => Some(&[
            &["aicore_time(us)", "aiv_time(us)"],
            &["aic_mac_ratio", "mac_ratio"],
            &["aiv_vec_ratio", "vec_ratio"],
            &["aic_scalar_ratio", "aiv_scalar_ratio", "scalar_ratio"],
            &["aic_mte2_ratio", "aiv_mte2_ratio", "mte2_ratio"],
        ]),
        "ACL_AICORE_ARITHMETIC_UTILIZATION" => Some(&[
            &["aicore_time(us)", "aiv_time(us)"],
            &["aic_mac_fp16_ratio", "mac_fp16_ratio"],
            &["aic_mac_int8_ratio", "mac_int8_ratio"],
            &["aic_cube_fops", "cube_fops"],
            &["aiv_vec_fp32_ratio", "vec_fp32_ratio"],
            &["aiv_vector_fops", "aic_vector_fops", "vector_fops"],
        ]),
        "ACL_AICORE_L0B_AND_WIDTH" => Some(&[
            &["aicore_time(us)", "aiv_time(us)"],
            &["aic_l0a_read_bw(GB/s)", "l0a_read_bw(GB/s)"],
            &["aic_l0b_read_bw(GB/s)", "l0b_read_bw(GB/s)"],
        ]),
        "ACL_AICORE_NONE" => Some(&[]),
        _ => None,
    }
}

pub(super) fn kernel_findings(
    ctx: &mut Ctx<'_>,
    path: &Path,
    scan: &KernelScan,
    info: Option<&ProfilerInfo>,
) {
    if let Some(c) = scan.corruption {
        // Not what torch_npu writes: one finding, none of the checks that assume a table.
        csv_corrupt(ctx, path, c);
        return;
    }
    let p = disp(path);
    if scan.rows > 0 && scan.ragged_rows == scan.rows {
        // No row fits the header: the rows say nothing about columns or steps.
        rows_malformed(ctx, &p, scan);
        return;
    }
    header_findings(ctx, &p, scan, info);
    rows_findings(ctx, &p, scan, info);
}

/// Whether the scan can be used for step checks (a table torch_npu could have written).
pub(super) fn is_table(scan: &KernelScan) -> bool {
    scan.corruption.is_none() && !(scan.rows > 0 && scan.ragged_rows == scan.rows)
}

/// The header: minimal (Level0) or the columns the recorded level and metric group write.
fn header_findings(ctx: &mut Ctx<'_>, p: &str, scan: &KernelScan, info: Option<&ProfilerInfo>) {
    let level = info.and_then(|i| i.level);
    let schedule = info.and_then(|i| i.schedule);
    let mut absent: Vec<String> = Vec::new();
    let mut need = |names: &[&str]| {
        if !names.iter().any(|n| scan.has(n)) {
            absent.push(names.join("|"));
        }
    };
    for col in [
        "Name",
        "Type",
        "Accelerator Core",
        "Start Time(us)",
        "Duration(us)",
        "Wait Time(us)",
    ] {
        need(&[col]);
    }
    need(&["Block Dim", "Block Num"]);
    if matches!(schedule, Some(RecordedSchedule::Args(_))) {
        need(&["Step Id"]);
    }
    if is_minimal(scan) {
        minimal_header(ctx, p, scan, info);
    } else if let Some(l) = level.filter(|l| l.is_detailed()) {
        for col in [
            "Task ID",
            "Stream ID",
            "Input Shapes",
            "Input Data Types",
            "Output Shapes",
        ] {
            need(&[col]);
        }
        if has_split_metrics(scan) {
            need(&["Mix Block Dim", "Mix Block Num"]);
        }
        match info.and_then(|i| i.aic_metrics.as_deref()) {
            Some(m) => match metric_columns(m) {
                Some(cols) => {
                    for spellings in cols {
                        need(spellings);
                    }
                }
                None => ctx.push(Finding::new(
                    Code::ExpectationUnknown,
                    format!("metric columns for aic_metrics {m} are not known to npuprof and were not checked"),
                    Evidence::line(p.to_owned(), 1),
                    "compare the header with a known-good run of the same metric group",
                )),
            },
            None => ctx.push(Finding::new(
                Code::ExpectationUnknown,
                format!("aic_metrics not recorded at {}: metric columns not checked", l.as_str()),
                Evidence::line(p.to_owned(), 1),
                "keep profiler_info*.json with the run",
            )),
        }
    } else if level.is_none() {
        ctx.push(Finding::new(
            Code::ExpectationUnknown,
            "profiler level unknown: only the base kernel_details columns were checked",
            Evidence::line(p.to_owned(), 1),
            "keep profiler_info*.json with the run",
        ));
    }
    if !absent.is_empty() {
        ctx.push(Finding::new(
            Code::KernelColumnsMissing,
            format!(
                "kernel_details.csv lacks column(s) expected for {}{}: {}",
                level.map_or("the recorded configuration", Level::as_str),
                info.and_then(|i| i.aic_metrics.as_deref())
                    .map(|m| format!(" + {m}"))
                    .unwrap_or_default(),
                absent.join(", ")
            ),
            Evidence::line(p.to_owned(), 1),
            format!(
                "check that torch_npu and CANN versions match (profiler_info: torch_npu {}, CANN {}), then re-parse: {}",
                info.and_then(|i| i.torch_npu_version.as_deref()).unwrap_or("unknown"),
                info.and_then(|i| i.cann_version.as_deref()).unwrap_or("unknown"),
                ctx.reparse()
            ),
        ));
    }
}

/// A minimal header, judged against the recorded level (never "set Level1" when it was).
fn minimal_header(ctx: &mut Ctx<'_>, p: &str, scan: &KernelScan, info: Option<&ProfilerInfo>) {
    let level = info.and_then(|i| i.level);
    let (severity, why, fix) = match level {
        Some(l) if l.is_detailed() => (
            Severity::Error,
            format!(
                "although profiler_info records {}: the detailed columns were not produced (torch_npu/CANN mismatch or failed CANN export)",
                l.as_str()
            ),
            format!(
                "the run already recorded {}: look for CANNExportParser/KernelViewParser `run failed` in the logs, check that torch_npu matches CANN {}, then re-parse: {}",
                l.as_str(),
                info.and_then(|i| i.cann_version.as_deref())
                    .unwrap_or("(version unknown)"),
                ctx.reparse()
            ),
        ),
        Some(Level::Level0) => (
            Severity::Warning,
            "as recorded (Level0): no per-kernel shapes, streams or AI Core metrics".to_owned(),
            format!("if you need them, {RAISE_LEVEL_FIX}"),
        ),
        _ => (
            Severity::Warning,
            "which means Level0, or no ExperimentalConfig was passed to the profiler".to_owned(),
            format!("if you need shapes, streams and AI Core metrics, {RAISE_LEVEL_FIX}"),
        ),
    };
    ctx.push(
        Finding::new(
            Code::KernelHeaderMinimal,
            format!(
                "kernel_details.csv has the minimal {}-column header ({}), {why}",
                scan.header.len(),
                scan.header.join(",")
            ),
            Evidence::line(p.to_owned(), 1),
            fix,
        )
        .with_severity(severity),
    );
}

fn rows_malformed(ctx: &mut Ctx<'_>, p: &str, scan: &KernelScan) {
    ctx.push(Finding::new(
        Code::KernelRowsMalformed,
        format!(
            "{} of {} rows have a field count different from the header's {} columns (a cut or corrupted file)",
            scan.ragged_rows,
            scan.rows,
            scan.header.len()
        ),
        Evidence::line(p, scan.first_ragged_line.unwrap_or(0)),
        format!("check free space and re-parse: {}", ctx.reparse()),
    ));
}

/// The rows: malformed, none, columns empty in every row, empty Step Ids.
fn rows_findings(ctx: &mut Ctx<'_>, p: &str, scan: &KernelScan, info: Option<&ProfilerInfo>) {
    let schedule = info.and_then(|i| i.schedule);
    if scan.ragged_rows > 0 {
        rows_malformed(ctx, p, scan);
    }
    if let Some((line, text)) = &scan.first_invalid_duration {
        ctx.push(Finding::new(
            Code::KernelDurationInvalid,
            format!(
                "{} row(s) have a Duration(us) that is not a finite number of 0 or more (the first{}: `{text}`); they count as 0",
                scan.invalid_durations,
                if *line > 0 { format!(", line {line}") } else { String::new() }
            ),
            if *line > 0 {
                Evidence::line(p.to_owned(), *line)
            } else {
                Evidence::path(p.to_owned())
            },
            Code::KernelDurationInvalid.info().next_action,
        ));
    }
    if scan.rows == 0 {
        ctx.push(Finding::new(
            Code::KernelNoRows,
            if scan.header.is_empty() {
                "kernel_details.csv is empty".to_owned()
            } else {
                "kernel_details.csv has a header but no rows: no kernel ran inside the recorded window".to_owned()
            },
            Evidence::path(p.to_owned()),
            "check that the recorded steps actually run model forwards (npuprof plan), then re-run",
        ));
    } else if !scan.all_empty_columns.is_empty() {
        ctx.push(Finding::new(
            Code::KernelColumnEmpty,
            format!(
                "column(s) present but empty in all {} rows: {} — a torch_npu/CANN version mismatch",
                scan.rows,
                scan.all_empty_columns.join(", ")
            ),
            Evidence::line(p.to_owned(), 1),
            format!(
                "install the torch_npu release that matches CANN {} and re-parse",
                info.and_then(|i| i.cann_version.as_deref()).unwrap_or("(version unknown)")
            ),
        ));
    }
    if scan.empty_step_id_rows > 0 && schedule != Some(RecordedSchedule::Absent) {
        ctx.push(Finding::new(
            Code::KernelStepIdEmpty,
            format!(
                "{} of {} kernel rows have an empty Step Id (kernels outside every recorded step)",
                scan.empty_step_id_rows, scan.rows
            ),
            Evidence::path(p),
            "none needed unless most rows are affected; then check that prof.step() is called once per forward",
        ));
    }
}
