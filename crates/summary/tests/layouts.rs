//! Where runs are found and what bad input gives: the real run in each directory layout, and
//! broken by named transformations.

mod common;

use common::{Layout, drop_column, output_file, real_copy, run_dirs, truncate};
use npuprof_summary::{Options, SummaryError, summarize};

fn check_phases(layout: Layout, want: &[(Option<&str>, Option<u32>)]) {
    let tmp = real_copy(layout);
    let summary = summarize(tmp.path(), &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let got: Vec<_> = summary
        .runs
        .iter()
        .map(|r| (r.phase.as_deref(), r.rank))
        .collect();
    assert_eq!(got, want, "{layout:?}");
}

fn check_error(result: Result<npuprof_summary::Summary, SummaryError>, needles: &[&str]) {
    let message = match result {
        Ok(_) => panic!("expected an error containing {needles:?}"),
        Err(e) => e.to_string(),
    };
    for needle in needles {
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
    }
}

#[test]
fn phases_come_from_the_result_directory_layouts() {
    let both = [
        (Some("prefill"), Some(0)),
        (Some("prefill"), Some(1)),
        (Some("decode"), Some(0)),
        (Some("decode"), Some(1)),
    ];
    check_phases(Layout::ResultDir, &both);
    check_phases(Layout::PhaseThenProf, &both);
    check_phases(Layout::Flat, &[(None, Some(0)), (None, Some(1))]);
}

#[test]
fn phase_and_rank_select_runs() {
    let tmp = real_copy(Layout::ResultDir);
    let options = Options {
        phase: Some("decode".to_owned()),
        rank: Some(1),
        top: Some(5),
    };
    let summary = summarize(tmp.path(), &options).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(summary.runs.len(), 1);
    assert_eq!(summary.runs[0].dir, "prof/decode/rank1_ascend_pt");
    assert_eq!(summary.runs[0].top_kernels.len(), 5);
    let none = Options {
        phase: Some("prefil".to_owned()),
        ..Options::default()
    };
    check_error(
        summarize(tmp.path(), &none),
        &["no phase `prefil`: the profile has prefill, decode"],
    );
    let no_rank = Options {
        phase: Some("decode".to_owned()),
        rank: Some(5),
        ..Options::default()
    };
    check_error(
        summarize(tmp.path(), &no_rank),
        &["no rank 5 in phase decode: the profile has rank 0, 1"],
    );
}

#[test]
fn rank_selection_reads_only_the_selected_run() {
    let tmp = real_copy(Layout::Flat);
    let rank0 = &run_dirs(tmp.path(), Layout::Flat)[0].1;
    drop_column(&output_file(rank0, "kernel_details.csv"), "Name");
    let one = Options {
        rank: Some(1),
        ..Options::default()
    };
    let summary = summarize(tmp.path(), &one).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(summary.runs.len(), 1);
    check_error(summarize(tmp.path(), &Options::default()), &["`Name`"]);
}

#[test]
fn of_several_broken_runs_the_first_in_order_is_reported() {
    let tmp = real_copy(Layout::Flat);
    let runs = run_dirs(tmp.path(), Layout::Flat);
    let (rank0, rank1) = (&runs[0].1, &runs[1].1);
    // Without its long names, rank 0's file is the smaller: rank 1 is read first.
    drop_column(&output_file(rank0, "kernel_details.csv"), "Name");
    drop_column(&output_file(rank1, "kernel_details.csv"), "Duration(us)");
    let size = |run| std::fs::metadata(output_file(run, "kernel_details.csv")).map(|m| m.len());
    assert!(size(rank1).ok() > size(rank0).ok());
    check_error(
        summarize(tmp.path(), &Options::default()),
        &["rank0_ascend_pt", "`Name`"],
    );
}

#[test]
fn a_single_run_directory_is_summarised() {
    let tmp = real_copy(Layout::Flat);
    let run = tmp.path().join("rank1_ascend_pt");
    let summary = summarize(&run, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(summary.runs.len(), 1);
    assert_eq!(summary.runs[0].dir, ".");
    assert_eq!(summary.ranks[0].imbalance_ratio, None);
}

#[test]
fn missing_paths_and_empty_trees_are_errors() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    check_error(
        summarize(&tmp.path().join("nope"), &Options::default()),
        &["no such file"],
    );
    check_error(
        summarize(tmp.path(), &Options::default()),
        &["no torch_npu run directory"],
    );
}

#[test]
fn a_missing_required_column_is_named_with_the_file() {
    let tmp = real_copy(Layout::Flat);
    let run = &run_dirs(tmp.path(), Layout::Flat)[0].1;
    drop_column(&output_file(run, "kernel_details.csv"), "Duration(us)");
    check_error(
        summarize(tmp.path(), &Options::default()),
        &[
            "kernel_details.csv",
            "required column `Duration(us)`",
            "the header has: Step Id,",
        ],
    );
}

#[test]
fn optional_columns_may_be_missing() {
    let tmp = real_copy(Layout::Flat);
    let run = &run_dirs(tmp.path(), Layout::Flat)[0].1;
    for column in ["Accelerator Core", "Type", "aic_mac_ratio", "aiv_vec_ratio"] {
        drop_column(&output_file(run, "kernel_details.csv"), column);
    }
    drop_column(&output_file(run, "step_trace_time.csv"), "Overlapped");
    let summary = summarize(run, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let run = &summary.runs[0];
    assert_eq!(run.top_kernels[0].core, "");
    assert_eq!(run.by_type.len(), 1);
    assert!(
        run.pipe
            .as_ref()
            .is_some_and(|p| p.ratios.cube == 0.0 && p.ratios.memory > 0.0)
    );
    assert_eq!(run.time_split.as_ref().and_then(|s| s.overlapped), None);
}

#[test]
fn missing_files_become_notes() {
    let tmp = real_copy(Layout::Flat);
    let run = &run_dirs(tmp.path(), Layout::Flat)[0].1;
    std::fs::remove_file(output_file(run, "step_trace_time.csv")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_file(output_file(run, "kernel_details.csv")).unwrap_or_else(|e| panic!("{e}"));
    let summary = summarize(run, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let notes = summary.runs[0].notes.join("\n");
    assert!(
        notes.contains("no ASCEND_PROFILER_OUTPUT/step_trace_time.csv"),
        "{notes}"
    );
    assert!(
        notes.contains("no ASCEND_PROFILER_OUTPUT/kernel_details.csv"),
        "{notes}"
    );
    assert!(summary.runs[0].steps.is_empty() && summary.runs[0].kernels.is_none());
}

#[test]
fn a_truncated_json_is_an_error_and_a_cut_csv_row_is_skipped() {
    let tmp = real_copy(Layout::Flat);
    let run = &run_dirs(tmp.path(), Layout::Flat)[0].1;
    truncate(&output_file(run, "communication.json"), 500);
    check_error(
        summarize(run, &Options::default()),
        &["communication.json", "not a torch_npu communication.json"],
    );
    let tmp = real_copy(Layout::Flat);
    let run = &run_dirs(tmp.path(), Layout::Flat)[0].1;
    // Cut in the middle of the second data row: it has too few fields, and is skipped and
    // named like any malformed row (robust reading), not summarised as a kernel, at its line in
    // the CRLF file.
    truncate(&output_file(run, "kernel_details.csv"), 1200);
    let summary = summarize(run, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let skipped: Vec<_> = summary.runs[0]
        .skipped_rows
        .iter()
        .map(|r| (r.line, r.fields, r.expected))
        .collect();
    assert_eq!(skipped, [(3, 30, 46)]);
    assert_eq!(summary.runs[0].kernels.as_ref().map(|k| k.rows), Some(1));
    assert!(
        summary.warnings[0]
            .message
            .contains("has 30 fields, the header has 46")
    );
}
