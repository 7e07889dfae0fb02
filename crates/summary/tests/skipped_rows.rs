//! Robust reading: a row whose number of fields is not the header's (as in a real 2023
//! export, line 17 of its kernel_details.csv) is reported with its file and line and left out;
//! the rest of that rank and the other ranks are summarised.

mod common;

use common::summary_all as summary;

use common::{Layout, drop_a_field, output_file, real_copy, run_dirs};
use npuprof_summary::warnings::WarningCode;

#[test]
fn a_ragged_kernel_row_is_skipped_and_named_and_every_rank_summarised() {
    let clean = summary(real_copy(Layout::Flat).path());
    let planted = real_copy(Layout::Flat);
    let rank0 = &run_dirs(planted.path(), Layout::Flat)[0].1;
    let dropped = drop_a_field(&output_file(rank0, "kernel_details.csv"), 15);
    let got = summary(planted.path());
    let (before, after) = (&clean.runs[0], &got.runs[0]);
    let rows: Vec<_> = after
        .skipped_rows
        .iter()
        .map(|r| {
            (
                r.file.to_string_lossy().into_owned(),
                r.line,
                r.fields,
                r.expected,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [(
            "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv".to_owned(),
            16,
            45,
            46
        )]
    );
    let (b, a) = (before.kernels.as_ref(), after.kernels.as_ref());
    assert_eq!(a.map(|k| k.rows), b.map(|k| k.rows - 1));
    let total = |k: Option<&npuprof_summary::kernels::KernelTotals>| k.map_or(0.0, |k| k.total_us);
    assert!((total(a) - (total(b) - dropped)).abs() < 1e-6);
    assert_eq!(after.steps, before.steps, "the rest of the rank is read");
    let mut other = got.runs[1].clone();
    other.path.clone_from(&clean.runs[1].path);
    assert!(other == clean.runs[1], "the other rank is untouched");
    let warnings: Vec<_> = got
        .warnings
        .iter()
        .map(|w| (w.code, w.message.as_str()))
        .collect();
    assert_eq!(
        warnings,
        [(
            WarningCode::SkippedRows,
            "rows were skipped: rank 0: rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv line 16 has 45 fields, the header has 46: row skipped (the totals leave out the rows that could not be read)"
        )]
    );
}

#[test]
fn a_ragged_step_row_is_skipped_too() {
    let planted = real_copy(Layout::Flat);
    let rank1 = &run_dirs(planted.path(), Layout::Flat)[1].1;
    let steps = output_file(rank1, "step_trace_time.csv");
    // The vendored file's CRLF line ends are kept: the line named is the editor's.
    let text = std::fs::read_to_string(&steps).expect("read");
    assert!(text.contains("\r\n"), "the real export has CRLF line ends");
    let row = text.lines().nth(1).expect("a step");
    let cut = &row[..row.rfind(',').expect("fields")];
    std::fs::write(&steps, format!("{text}{cut}\r\n")).expect("write");
    let got = summary(planted.path());
    let run = &got.runs[1];
    assert_eq!(run.steps.len(), 1);
    assert_eq!(run.skipped_rows.len(), 1);
    assert_eq!(run.skipped_rows[0].line, 3);
    assert!(got.runs[0].skipped_rows.is_empty());
}
