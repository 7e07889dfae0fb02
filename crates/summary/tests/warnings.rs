//! Mismatch warnings: each attribute changed on a copy of the real run is named (code, phase,
//! both values) before any delta; an unchanged copy gets none.

mod common;

use common::summary_all as summary;

use std::fs;
use std::path::Path;

use common::{Layout, db_run, output_file, real_copy, real_run, rewrite_csv, run_dirs};
use npuprof_summary::warnings::WarningCode;
use npuprof_summary::{Comparison, compare};

fn codes(comparison: &Comparison) -> Vec<WarningCode> {
    comparison.warnings.iter().map(|w| w.code).collect()
}

/// Replaces `from` by `to` in the run's `profiler_info_<rank>.json`.
fn edit_info(run: &Path, from: &str, to: &str) {
    let info = fs::read_dir(run)
        .expect("run dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("profiler_info"))
        .expect("profiler_info");
    let text = fs::read_to_string(&info).expect("read");
    assert!(text.contains(from), "{from} not in {}", info.display());
    fs::write(&info, text.replacen(from, to, 1)).expect("write");
}

fn each_run(root: &Path, edit: impl Fn(&Path)) {
    for (_, dir) in run_dirs(root, Layout::Flat) {
        edit(&dir);
    }
}

#[test]
fn an_unchanged_copy_has_no_warning() {
    let (base, new) = (real_copy(Layout::Flat), real_copy(Layout::Flat));
    let comparison = compare(&summary(base.path()), &summary(new.path()));
    assert_eq!(comparison.warnings, []);
    assert_eq!(summary(base.path()).warnings, []);
}

#[test]
fn a_different_profiler_level_and_aic_metrics_are_named_with_both_values() {
    let (base, new) = (real_copy(Layout::Flat), real_copy(Layout::Flat));
    each_run(new.path(), |dir| {
        edit_info(dir, "\"Level1\"", "\"Level2\"");
        edit_info(
            dir,
            "ACL_AICORE_PIPE_UTILIZATION",
            "ACL_AICORE_ARITHMETIC_UTILIZATION",
        );
    });
    let comparison = compare(&summary(base.path()), &summary(new.path()));
    assert_eq!(
        codes(&comparison),
        [WarningCode::ProfilerLevel, WarningCode::AicMetrics]
    );
    assert_eq!(
        comparison.warnings[0].message,
        "profiler levels differ: base Level1, new Level2 (kernel columns, pipe metrics and communication detail differ with the level)"
    );
    assert!(
        comparison.warnings[1]
            .message
            .contains("base ACL_AICORE_PIPE_UTILIZATION, new ACL_AICORE_ARITHMETIC_UTILIZATION"),
        "{:?}",
        comparison.warnings[1]
    );
}

#[test]
fn a_different_build_is_named_and_an_unrecorded_one_is_not_judged() {
    let (base, new) = (real_copy(Layout::Flat), real_copy(Layout::Flat));
    // The vendored run records no versions: nothing to judge on either side yet.
    each_run(new.path(), |dir| {
        edit_info(
            dir,
            "\"rank_id\"",
            "\"torch_npu_version\": \"2.7.1\", \"cann_version\": \"8.3.RC1\", \"rank_id\"",
        );
    });
    let comparison = compare(&summary(base.path()), &summary(new.path()));
    assert_eq!(codes(&comparison), []);
    each_run(base.path(), |dir| {
        edit_info(
            dir,
            "\"rank_id\"",
            "\"torch_npu_version\": \"2.5.1\", \"cann_version\": \"8.0.0\", \"rank_id\"",
        );
    });
    let comparison = compare(&summary(base.path()), &summary(new.path()));
    assert_eq!(codes(&comparison), [WarningCode::Build]);
    assert!(
        comparison.warnings[0]
            .message
            .contains("base torch_npu 2.5.1, CANN 8.0.0, new torch_npu 2.7.1, CANN 8.3.RC1"),
        "{:?}",
        comparison.warnings
    );
}

#[test]
fn the_text_export_against_the_db_export_is_named() {
    let comparison = compare(&summary(&real_run()), &summary(&db_run()));
    assert_eq!(codes(&comparison), [WarningCode::ExportType]);
    assert!(comparison.warnings[0].message.contains("base text, new db"));
}

#[test]
fn a_different_rank_set_and_step_count_are_named() {
    let (base, new) = (real_copy(Layout::Flat), real_copy(Layout::Flat));
    fs::remove_dir_all(new.path().join("rank1_ascend_pt")).expect("remove rank 1");
    // Three steps instead of one: the recorded row twice more.
    let steps = output_file(&new.path().join("rank0_ascend_pt"), "step_trace_time.csv");
    let mut rows = Vec::new();
    rewrite_csv(&steps, |i, fields| {
        if i == 1 {
            rows.push(fields.clone());
        }
    });
    let mut text = fs::read_to_string(&steps).expect("read");
    for step in ["51", "52"] {
        let mut row = rows[0].clone();
        row[0] = step.to_owned();
        text.push_str(&row.join(","));
        text.push('\n');
    }
    fs::write(&steps, text).expect("write");
    let comparison = compare(&summary(base.path()), &summary(new.path()));
    assert_eq!(
        codes(&comparison),
        [WarningCode::RankSet, WarningCode::StepCount]
    );
    let messages: Vec<&str> = comparison
        .warnings
        .iter()
        .map(|w| w.message.as_str())
        .collect();
    assert!(
        messages[0].contains("base rank 0, 1, new rank 0"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("base 1 step, new 3 steps"),
        "{messages:?}"
    );
}

#[test]
fn ranks_of_one_phase_with_different_step_counts_are_named_in_the_summary() {
    let run = real_copy(Layout::ResultDir);
    let decode1 = run.path().join("prof/decode/rank1_ascend_pt");
    let steps = output_file(&decode1, "step_trace_time.csv");
    let text = fs::read_to_string(&steps).expect("read");
    let row = text.lines().nth(1).expect("a step").replacen("50", "51", 1);
    fs::write(&steps, format!("{text}{row}\n")).expect("write");
    let s = summary(run.path());
    let got: Vec<_> = s
        .warnings
        .iter()
        .map(|w| (w.code, w.phase.as_deref(), w.message.as_str()))
        .collect();
    assert_eq!(
        got,
        [(
            WarningCode::StepCount,
            Some("decode"),
            "step counts differ in decode: rank 0 1 step, rank 1 2 steps (per-step figures average different windows: warm-up and outliers weigh differently)"
        )]
    );
    // compare carries each side's own warnings, prefixed with the side.
    let comparison = compare(&s, &summary(real_copy(Layout::ResultDir).path()));
    assert!(
        comparison
            .warnings
            .iter()
            .any(|w| w.code == WarningCode::StepCount && w.message.starts_with("base: ")),
        "{:?}",
        comparison.warnings
    );
}

#[test]
fn different_phases_are_named() {
    let (base, new) = (real_copy(Layout::ResultDir), real_copy(Layout::ResultDir));
    fs::remove_dir_all(new.path().join("prof/prefill")).expect("remove prefill");
    let comparison = compare(&summary(base.path()), &summary(new.path()));
    assert_eq!(codes(&comparison), [WarningCode::Phases]);
    assert!(
        comparison.warnings[0]
            .message
            .contains("base has prefill, decode, new has decode"),
        "{:?}",
        comparison.warnings
    );
}
