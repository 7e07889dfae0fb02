//! `compare` on the real run against itself and against copies changed by named
//! transformations, with the expected deltas computed from the transformation.

mod common;

use common::summary_all as summary;

use common::{Layout, real_copy, remove_type, run_dirs, slow_down_type};
use npuprof_summary::compare::{Change, side_label};
use npuprof_summary::{Options, compare, summarize};

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
    // Drawn apart from slower/faster in the HTML.
    let html = npuprof_summary::html::render_comparison(&removed);
    assert!(
        html.contains("<rect class=\"removed\" data-segment=\"removed\""),
        "no removed bar"
    );
    assert!(
        !html.contains("<rect class=\"faster\""),
        "a removal is not drawn as faster"
    );
    let html = npuprof_summary::html::render_comparison(&added);
    assert!(html.contains("<rect class=\"added\""));
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

#[test]
fn each_rank_is_compared_and_named_with_its_largest_change() {
    let base = real_copy(Layout::Flat);
    let new = real_copy(Layout::Flat);
    // Rank 1 alone gets a 3× MatMulV2: the straggler of the new run.
    let added = slow_down_type(&run_dirs(new.path(), Layout::Flat)[1].1, "MatMulV2", 3.0);
    let comparison = compare(&summary(base.path()), &summary(new.path()));
    let ranks: Vec<_> = comparison.phases[0]
        .per_rank
        .iter()
        .map(|r| {
            (
                r.base_rank,
                r.new_rank,
                r.step.as_ref().map(|s| s.delta_us),
                r.largest.as_ref().map(|d| d.key.as_str()),
            )
        })
        .collect();
    assert_eq!(ranks.len(), 2);
    assert_eq!(
        (ranks[0].0, ranks[0].1, ranks[0].2),
        (Some(0), Some(0), Some(0.0))
    );
    assert_eq!(ranks[0].3, None, "rank 0 did not change");
    assert_eq!(
        (ranks[1].0, ranks[1].1, ranks[1].3),
        (Some(1), Some(1), Some("MatMulV2"))
    );
    let step = ranks[1].2.unwrap_or_default();
    assert!((step - added).abs() < 1e-6, "rank 1: {step} vs {added}");
    // The phase averages the two ranks: half the change.
    let phase = comparison.phases[0]
        .step
        .as_ref()
        .map_or(0.0, |s| s.delta_us);
    assert!((phase - added / 2.0).abs() < 1e-6);
}

/// Gives every rank of the copy three steps whose totals are `offset + spread × (-1, 0, 1)`
/// around the recorded one (in Computing).
fn three_steps(root: &std::path::Path, offset: f64, spread: f64) {
    for (_, dir) in run_dirs(root, Layout::Flat) {
        let path = common::output_file(&dir, "step_trace_time.csv");
        let mut rows = Vec::new();
        common::rewrite_csv(&path, |i, fields| rows.push((i, fields.clone())));
        let computing = rows[0]
            .1
            .iter()
            .position(|f| f == "Computing")
            .expect("Computing");
        let mut text = rows[0].1.join(",") + "\n";
        for (k, factor) in [-1.0, 0.0, 1.0].into_iter().enumerate() {
            let mut fields = rows[1].1.clone();
            fields[0] = (50 + k).to_string();
            let old: f64 = fields[computing].parse().expect("number");
            fields[computing] = format!("{}", old + offset + spread * factor);
            text.push_str(&(fields.join(",") + "\n"));
        }
        std::fs::write(&path, text).expect("write");
    }
}

#[test]
fn a_change_within_the_step_to_step_spread_is_said_to_be_within_noise() {
    // Spread: the standard deviation of (-s, 0, s) is s.
    let base = real_copy(Layout::Flat);
    three_steps(base.path(), 0.0, 10_000.0);
    let (within, beyond) = (real_copy(Layout::Flat), real_copy(Layout::Flat));
    three_steps(within.path(), 9_000.0, 10_000.0);
    three_steps(beyond.path(), 11_000.0, 10_000.0);
    let b = summary(base.path());
    let inside = compare(&b, &summary(within.path()));
    let phase = &inside.phases[0];
    assert!(
        phase.noise_us.is_some_and(|n| (n - 10_000.0).abs() < 1e-6),
        "{:?}",
        phase.noise_us
    );
    assert_eq!(phase.within_noise, Some(true));
    assert!(
        phase
            .verdict
            .contains("slower (+9.00 ms), within noise (step-to-step spread ±10.00 ms)"),
        "{}",
        phase.verdict
    );
    let outside = compare(&b, &summary(beyond.path()));
    let phase = &outside.phases[0];
    assert_eq!(phase.within_noise, Some(false));
    assert!(!phase.verdict.contains("noise"), "{}", phase.verdict);
    // One step per rank (the vendored run): no spread to judge by.
    let single = compare(&summary(real_copy(Layout::Flat).path()), &b);
    assert_eq!(
        (single.phases[0].noise_us, single.phases[0].within_noise),
        (None, None)
    );
}

#[test]
fn kernel_times_are_per_step_of_the_kernel_tables_own_step_ids() {
    // The copy's kernel tables hold every kernel twice, in steps 50 and 51, while
    // step_trace_time still lists step 50 alone: the same kernel time per step.
    let base = real_copy(Layout::Flat);
    let new = real_copy(Layout::Flat);
    for (_, dir) in run_dirs(new.path(), Layout::Flat) {
        let path = common::output_file(&dir, "kernel_details.csv");
        let text = std::fs::read_to_string(&path).expect("read");
        let again: String = text
            .lines()
            .filter_map(|line| line.strip_prefix("50,"))
            .map(|rest| format!("51,{rest}\n"))
            .collect();
        assert!(!again.is_empty(), "rows of step 50 in {}", path.display());
        std::fs::write(&path, text + &again).expect("write");
    }
    let (b, n) = (summary(base.path()), summary(new.path()));
    let run = &n.runs[0];
    assert_eq!(run.kernels.as_ref().map(|k| k.steps), Some(2));
    assert_eq!(b.runs[0].kernels.as_ref().map(|k| k.steps), Some(1));
    assert!(
        run.notes.iter().any(|note| note
            == "kernel_details.csv holds 2 step(s), step_trace_time.csv 1: kernel figures are per \
                step of the kernel table, the time split per step of step_trace_time"),
        "{:?}",
        run.notes
    );
    let phase = &compare(&b, &n).phases[0];
    assert!(
        phase.kernel_time.delta_us.abs() < 1e-6 * phase.kernel_time.base_us,
        "{:?}",
        phase.kernel_time
    );
    assert!(
        phase.by_type.is_empty() && phase.by_name.is_empty(),
        "{:?}",
        phase.by_type
    );
}

/// A 3× slower MatMulV3 (76.262 µs per step on rank 0 of the real run, 0.1 % of its step)
/// stays in the headline when a faster all-reduce makes the step faster; the kernel time
/// of runs without kernel tables says why it is no time; no label is a bare `.`.
#[test]
fn the_largest_change_of_each_sign_stays_in_the_headline() {
    let base = real_copy(Layout::Flat);
    let new = real_copy(Layout::Flat);
    let (mut slower, mut faster) = (0.0, 0.0);
    for (_, dir) in run_dirs(new.path(), Layout::Flat) {
        slower += slow_down_type(&dir, "MatMulV3", 3.0);
        faster += slow_down_type(&dir, "hcom_allReduce_", 0.9);
    }
    assert!(slower > 0.0 && faster < 0.0);
    let comparison = compare(&summary(base.path()), &summary(new.path()));
    let phase = &comparison.phases[0];
    // Two ranks of one step each: per step, per rank, half of each.
    let verdict = &phase.verdict;
    assert!(verdict.contains("faster"), "{verdict}");
    let matmul = npuprof_summary::units::signed(slower / 2.0);
    assert!(
        verdict.ends_with(&format!("; yet {matmul} in MatMulV3")),
        "{verdict}"
    );
    assert_eq!(phase.kernel_time_note, None);
}

#[test]
fn kernel_time_without_kernel_tables_says_why_and_a_dot_is_named_by_its_directory() {
    let pp = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pp2-dp2");
    let s = summary(&pp);
    let comparison = compare(&s, &s);
    assert_eq!(
        comparison.phases[0].kernel_time_note.as_deref(),
        Some("neither run has a kernel table (kernel_details.csv or a db export's kernels)")
    );
    // Tests run in the crate's directory, `crates/summary`.
    assert_eq!(side_label(std::path::Path::new(".")), "summary");
    assert_eq!(side_label(std::path::Path::new("a/run")), "a/run");
    // Nothing reads "-0.0".
    use npuprof_summary::units::{duration, percent, signed};
    assert_eq!(
        (duration(-0.01), signed(-0.01), percent(-0.000_01)),
        ("0.0 µs".to_owned(), "+0.0 µs".to_owned(), "0.0%".to_owned())
    );
    assert_eq!(
        (
            npuprof_summary::units::signed_percent(-0.000_01),
            npuprof_summary::units::signed_percent(-0.041)
        ),
        ("0.0%".to_owned(), "-4.1%".to_owned())
    );
}
