//! The totals a run carries more than once, checked against each other: kernel_details.csv's
//! computing rows (every `Accelerator Core` but `HCCL`/`COMMUNICATION`) and their time against
//! op_statistic.csv's total and step_trace_time's `Computing`, and its communication rows
//! against communication.json's operators. On intact real runs they agree (2448 rows and
//! 231290.100 µs in all three on MindStudio Insight's `test/st/level2` rank 0; 187 rows and
//! 8873.74 / 8873.75 / 8873.76 µs on the 2-rank AlexNet run); a table cut at a row boundary
//! passes every format check and fails these. A finding gives both numbers; agreement gives
//! none.

use std::path::Path;

use serde_json::Value;

use super::{Ctx, disp};
use crate::finding::{Code, Evidence, Finding, Severity};
use npuprof_runs::probe;
use npuprof_scan::kernel_csv::{KernelScan, StepTraceRow, read_small_table};

/// The largest communication.json read to count its operators (real ones are a few MiB).
const COMMUNICATION_CAP: u64 = 256 << 20;

/// Two sums of the same durations (µs) agree within this (rounding of the three-decimal fields
/// each writer sums: 0.02 µs apart on the AlexNet run), plus [`RELATIVE`] of the larger.
const ABSOLUTE_US: f64 = 1.0;

/// See [`ABSOLUTE_US`].
const RELATIVE: f64 = 1e-4;

/// How far apart two sums of the same durations (µs) may be.
pub(super) fn tolerance(a: f64, b: f64) -> f64 {
    ABSOLUTE_US + RELATIVE * a.abs().max(b.abs())
}

fn agree(a: f64, b: f64) -> bool {
    (a - b).abs() <= tolerance(a, b)
}

/// The computing rows and their time from op_statistic.csv: summed `Count` and `Total
/// Time(us)`; `None` when the file cannot be read as the table.
fn op_statistic(path: &Path) -> Option<(u64, f64)> {
    let opened = probe::open_regular(path).ok()?;
    let (header, rows) = read_small_table(opened.file).ok()?;
    let col = |name: &str| header.iter().position(|h| h == name);
    let (count, time) = (col("Count")?, col("Total Time(us)")?);
    let mut sums = (0_u64, 0.0_f64);
    for row in &rows {
        sums.0 += row.get(count)?.parse::<u64>().ok()?;
        sums.1 += row.get(time)?.parse::<f64>().ok()?;
    }
    Some(sums)
}

/// communication.json's operators over every step (the vendor's `Total Op Info` left out);
/// `None` when it cannot be read as the file.
fn communication_ops(path: &Path) -> Option<u64> {
    let bytes = probe::read_capped(path, COMMUNICATION_CAP).ok()?.ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    let mut ops = 0;
    for categories in v.as_object()?.values() {
        for operators in categories.as_object()?.values() {
            ops += operators
                .as_object()?
                .keys()
                .filter(|k| *k != "Total Op Info")
                .count() as u64;
        }
    }
    Some(ops)
}

/// The cross-checks of one run directory's output `out`; `has` says which files it holds.
pub(super) fn consistency_findings(
    ctx: &mut Ctx<'_>,
    out: &Path,
    kernels: Option<&KernelScan>,
    step_rows: Option<&[StepTraceRow]>,
    has: &dyn Fn(&str) -> bool,
) {
    // Only a table read to its end, row by row as its header says, with the core column.
    let whole = |k: &&KernelScan| {
        k.has_core() && k.has("Duration(us)") && k.corruption.is_none() && k.ragged_rows == 0
    };
    let Some(k) = kernels.filter(whole) else {
        return;
    };
    // Files of different windows (their steps differ: the step checks say so) are not one
    // parse's totals.
    let traced: std::collections::BTreeSet<u64> = step_rows
        .into_iter()
        .flatten()
        .filter_map(|r| r.step)
        .collect();
    let tabled: std::collections::BTreeSet<u64> = k.steps.keys().copied().collect();
    if !traced.is_empty() && !tabled.is_empty() && traced != tabled {
        return;
    }
    let kernel_path = out.join("kernel_details.csv");
    let computing = k.computing;
    let stats_path = out.join("op_statistic.csv");
    if let Some((count, time)) = has("op_statistic.csv")
        .then(|| op_statistic(&stats_path))
        .flatten()
        .filter(|&(count, time)| count != computing.kernels || !agree(time, computing.duration_us))
    {
        let lost = computing.kernels < count || computing.duration_us < time;
        ctx.push(
            Finding::new(
                Code::KernelTotalsDisagree,
                format!(
                    "{} holds {} computing rows, {:.3} µs; {} counts {count} operators, {time:.3} µs{}",
                    disp(&kernel_path),
                    computing.kernels,
                    computing.duration_us,
                    disp(&stats_path),
                    if lost { ": kernel_details.csv lost rows (cut or rewritten)" } else { "" }
                ),
                Evidence::path(disp(&kernel_path)),
                ctx.reparse(),
            )
            .with_severity(if lost { Severity::Error } else { Severity::Warning }),
        );
    }
    let recorded: Option<f64> = step_rows
        .filter(|rows| !rows.is_empty())
        .and_then(|rows| rows.iter().map(|r| r.computing_us).sum());
    // Kernels of several streams overlap: their sum may exceed the union step_trace_time
    // records, never fall short of it.
    if let Some(recorded) =
        recorded.filter(|r| computing.duration_us < *r && !agree(*r, computing.duration_us))
    {
        let trace = out.join("step_trace_time.csv");
        ctx.push(Finding::new(
            Code::KernelTotalsDisagree,
            format!(
                "{} holds {:.3} µs of computing kernels; {} records {recorded:.3} µs of Computing: \
                 kernel_details.csv lost rows (cut or rewritten)",
                disp(&kernel_path),
                computing.duration_us,
                disp(&trace)
            ),
            Evidence::path(disp(&kernel_path)),
            ctx.reparse(),
        ));
    }
    let comm_path = out.join("communication.json");
    if let Some(ops) = has("communication.json")
        .then(|| communication_ops(&comm_path))
        .flatten()
        .filter(|&ops| ops != k.communication.kernels)
    {
        ctx.push(Finding::new(
            Code::CommunicationCountDisagrees,
            format!(
                "{} holds {} communication rows; {} has {ops} operators",
                disp(&kernel_path),
                k.communication.kernels,
                disp(&comm_path)
            ),
            Evidence::path(disp(&comm_path)),
            ctx.reparse(),
        ));
    }
}
