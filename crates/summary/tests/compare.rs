//! `compare` on the real run against itself and against copies changed by named
//! transformations, with the expected deltas computed from the transformation.

mod common;

use common::{Layout, real_copy, remove_type, run_dirs, slow_down_type};
use npuprof_summary::compare::Change;
use npuprof_summary::{Options, Summary, compare, summarize};

fn summary(path: &std::path::Path) -> Summary {
    let options = Options {
        top: None,
        ..Options::default()
    };
    summarize(path, &options).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_run_against_itself_is_unchanged() {
    let base = real_copy(Layout::Flat);
    let s = summary(base.path());
    let comparison = compare(&s, &s);
    assert_eq!(comparison.phases.len(), 1);
    let phase = &comparison.phases[0];
    assert_eq!(phase.step.as_ref().map(|d| d.delta_us), Some(0.0));
    assert!(phase.by_name.is_empty() && phase.by_type.is_empty());
    assert_eq!(phase.verdict, "run step unchanged (+0.0 µs)");
}

#[test]
fn a_slower_type_explains_the_slower_step() {
    let base = real_copy(Layout::ResultDir);
    let new = real_copy(Layout::ResultDir);
    let mut added = 0.0;
    for (phase, dir) in run_dirs(new.path(), Layout::ResultDir) {
        if phase == Some("decode") {
            added += slow_down_type(&dir, "MatMulV2", 3.0);
        }
    }
    let comparison = compare(&summary(base.path()), &summary(new.path()));
    let phases: Vec<_> = comparison
        .phases
        .iter()
        .map(|p| p.phase.as_deref())
        .collect();
    assert_eq!(phases, [Some("prefill"), Some("decode")]);
    assert!(
        comparison.phases[0].by_type.is_empty(),
        "prefill did not change"
    );
    let decode = &comparison.phases[1];
    // Two ranks of one step each: the per-step, per-rank change is half the added time.
    let per_step = added / 2.0;
    let step = decode
        .step
        .as_ref()
        .unwrap_or_else(|| panic!("no step delta"));
    assert!(
        (step.delta_us - per_step).abs() < 1e-6,
        "{} vs {per_step}",
        step.delta_us
    );
    let top = &decode.by_type[0];
    assert_eq!((top.key.as_str(), top.change), ("MatMulV2", Change::Slower));
    assert!((top.delta_us - per_step).abs() < 1e-6);
    assert_eq!(decode.by_type.len(), 1);
    assert!(
        decode
            .by_name
            .iter()
            .all(|d| d.change == Change::Slower && d.key.contains("MatMul"))
    );
    let pct = step.delta_ratio.unwrap_or_default() * 100.0;
    let ms = per_step / 1000.0;
    let want = format!("decode step {pct:.1}% slower (+{ms:.2} ms): +{ms:.2} ms in MatMulV2");
    assert_eq!(decode.verdict, want);
}

#[test]
fn removed_and_added_types_are_reported() {
    let base = real_copy(Layout::Flat);
    let new = real_copy(Layout::Flat);
    for (_, dir) in run_dirs(new.path(), Layout::Flat) {
        remove_type(&dir, "TransData");
    }
    let (b, n) = (summary(base.path()), summary(new.path()));
    let removed = compare(&b, &n);
    let transdata = removed.phases[0]
        .by_type
        .iter()
        .find(|d| d.key == "TransData");
    let transdata = transdata.unwrap_or_else(|| panic!("TransData delta missing"));
    assert_eq!(transdata.change, Change::Removed);
    assert_eq!((transdata.base_count, transdata.new_count), (57.0, 0.0));
    let added = compare(&n, &b);
    let transdata = added.phases[0]
        .by_type
        .iter()
        .find(|d| d.key == "TransData");
    assert_eq!(transdata.map(|d| d.change), Some(Change::Added));
}

#[test]
fn runs_with_different_phase_names_pair_when_each_has_one() {
    let base = real_copy(Layout::Flat);
    let new = real_copy(Layout::ResultDir);
    let options = Options {
        phase: Some("decode".to_owned()),
        top: None,
        ..Options::default()
    };
    let n = summarize(new.path(), &options).unwrap_or_else(|e| panic!("{e}"));
    let comparison = compare(&summary(base.path()), &n);
    assert_eq!(comparison.phases.len(), 1);
    assert_eq!(comparison.phases[0].phase.as_deref(), Some("decode"));
    let both = compare(&summary(base.path()), &summary(new.path()));
    assert!(both.phases.is_empty());
    assert_eq!(
        both.unmatched,
        [
            "run only in base",
            "prefill only in new",
            "decode only in new"
        ]
    );
}

#[test]
fn hccl_kernels_renumbered_by_another_run_are_the_same_operators() {
    let base = real_copy(Layout::Flat);
    let new = real_copy(Layout::Flat);
    // A later run numbers its collectives differently: hcom_allReduce__586_0_1 → __271_0_1.
    for (_, dir) in run_dirs(new.path(), Layout::Flat) {
        common::rewrite_csv(
            &common::output_file(&dir, "kernel_details.csv"),
            |_, fields| {
                for field in fields.iter_mut() {
                    if field.starts_with("hcom_allReduce__586_") {
                        *field = field.replace("__586_", "__271_");
                    }
                }
            },
        );
    }
    let comparison = compare(&summary(base.path()), &summary(new.path()));
    let phase = &comparison.phases[0];
    assert!(
        phase.by_name.iter().all(|d| !d.key.starts_with("hcom_")),
        "{:#?}",
        phase.by_name
    );
    assert_eq!(phase.verdict, "run step unchanged (+0.0 µs)");
}
