//! The summary of the vendored real 2-rank run against values computed independently:
//! `data/real-2rank/expected.py` (Python's csv/json, its results in `expected.json`) and the
//! vendor's own per-type statistics (`op_statistic.csv`, written by torch_npu's parser).

mod common;

use common::{expected, real_run, run_of};
use npuprof_summary::{Options, Summary, summarize};
use serde_json::Value;

/// Relative agreement required of sums computed by two programs (in the same order they agree
/// to the last bit; different summation orders differ by far less than this).
const TOLERANCE: f64 = 1e-9;

fn check_close(what: &str, got: f64, want: f64) {
    let scale = want.abs().max(1.0);
    assert!(
        (got - want).abs() <= TOLERANCE * scale,
        "{what}: npuprof {got}, independent {want}"
    );
}

fn num(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

fn summary_all() -> Summary {
    let options = Options {
        top: None,
        ..Options::default()
    };
    summarize(&real_run(), &options).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn both_ranks_are_found_with_their_rank_from_profiler_info() {
    let summary = summary_all();
    let found: Vec<_> = summary
        .runs
        .iter()
        .map(|r| (r.phase.clone(), r.rank, r.dir.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (None, Some(0), "rank0_ascend_pt"),
            (None, Some(1), "rank1_ascend_pt")
        ]
    );
    assert!(
        summary.runs.iter().all(|r| r.notes.is_empty()),
        "{:?}",
        summary.runs[0].notes
    );
}

#[test]
fn step_totals_and_split_match() {
    let summary = summary_all();
    let want = expected();
    for rank in [0, 1] {
        let run = run_of(&summary, rank);
        let steps = want["runs"][rank.to_string()]["steps"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(run.steps.len(), steps.len());
        for (got, want) in run.steps.iter().zip(&steps) {
            assert_eq!(got.step, want["step"].as_u64());
            check_close("step total", got.total_us, num(&want["total_us"]));
            check_close("computing", got.computing_us, num(&want["computing_us"]));
            check_close("free", got.free_us, num(&want["free_us"]));
        }
        let total: f64 = steps.iter().map(|s| num(&s["total_us"])).sum();
        let computing: f64 = steps.iter().map(|s| num(&s["computing_us"])).sum();
        let split = run
            .time_split
            .as_ref()
            .unwrap_or_else(|| panic!("no split"));
        check_close("computing share", split.computing, computing / total);
        let stats = run
            .step_stats
            .as_ref()
            .unwrap_or_else(|| panic!("no stats"));
        check_close("mean step", stats.mean_us, total / steps.len() as f64);
    }
}

#[test]
fn kernel_totals_and_top_names_match() {
    let summary = summary_all();
    let want = expected();
    for rank in [0, 1] {
        let run = run_of(&summary, rank);
        let want = &want["runs"][rank.to_string()]["kernels"];
        let totals = run.kernels.as_ref().unwrap_or_else(|| panic!("no kernels"));
        assert_eq!(totals.rows, want["rows"].as_u64().unwrap_or_default());
        check_close("kernel total", totals.total_us, num(&want["total_us"]));
        assert_eq!(
            Some(totals.distinct_names as u64),
            want["distinct_names"].as_u64()
        );
        assert_eq!(
            Some(totals.distinct_types as u64),
            want["distinct_types"].as_u64()
        );
        assert_eq!(Some(totals.steps as u64), want["steps"].as_u64());
        assert!(!totals.capped);
        let top = want["top_names"].as_array().cloned().unwrap_or_default();
        assert_eq!(top.len(), 5);
        for (got, want) in run.top_kernels.iter().zip(&top) {
            assert_eq!(Some(got.name.as_str()), want["name"].as_str());
            assert_eq!(Some(got.kind.as_str()), want["type"].as_str());
            assert_eq!(Some(got.count), want["count"].as_u64());
            check_close("name total", got.total_us, num(&want["total_us"]));
            check_close("name share", got.share, num(&want["share"]));
            check_close(
                "name mean",
                got.mean_us,
                num(&want["total_us"]) / got.count as f64,
            );
        }
    }
}

#[test]
fn every_type_matches_python_and_the_vendors_op_statistic() {
    let summary = summary_all();
    let want = expected();
    for rank in [0, 1] {
        let run = run_of(&summary, rank);
        let python = want["runs"][rank.to_string()]["kernels"]["by_type"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(run.by_type.len(), python.len());
        for group in &run.by_type {
            let want = &python[&group.kind];
            assert_eq!(Some(group.count), want["count"].as_u64(), "{}", group.kind);
            check_close(&group.kind, group.total_us, num(&want["total_us"]));
        }
        // op_statistic.csv leaves out communication kernels and sums the parser's unrounded
        // durations (kernel_details rounds each row to 3 decimals): up to 0.0005 µs per row.
        let vendor = want["runs"][rank.to_string()]["op_statistic"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(vendor.len(), 33);
        for (kind, stat) in &vendor {
            let group = run.by_type.iter().find(|g| &g.kind == kind);
            let group = group.unwrap_or_else(|| panic!("type {kind} missing"));
            assert_eq!(Some(group.count), stat["count"].as_u64(), "{kind}");
            let diff = (group.total_us - num(&stat["total_us"])).abs();
            let bound = 0.0005 * (group.count + 1) as f64;
            assert!(
                diff <= bound,
                "{kind}: {} vs op_statistic {}",
                group.total_us,
                stat["total_us"]
            );
        }
    }
}

#[test]
fn pipe_shares_and_bounds_match() {
    let summary = summary_all();
    let want = expected();
    for rank in [0, 1] {
        let run = run_of(&summary, rank);
        let want = &want["runs"][rank.to_string()]["kernels"];
        let pipe = run
            .pipe
            .as_ref()
            .unwrap_or_else(|| panic!("no pipe metrics"));
        check_close("measured", pipe.measured_us, num(&want["pipe_measured_us"]));
        check_close("cube", pipe.ratios.cube, num(&want["pipe"]["cube"]));
        check_close("vector", pipe.ratios.vector, num(&want["pipe"]["vector"]));
        check_close("memory", pipe.ratios.memory, num(&want["pipe"]["memory"]));
        check_close("scalar", pipe.ratios.scalar, num(&want["pipe"]["scalar"]));
        // Communication kernels carry no pipe metrics, so no bound.
        let hccl = run.top_kernels.iter().filter(|k| k.core == "HCCL");
        assert!(hccl.clone().count() == 4 && hccl.clone().all(|k| k.bound.is_none()));
    }
}

#[test]
fn communication_matches_the_vendors_totals() {
    let summary = summary_all();
    let want = expected();
    for rank in [0, 1] {
        let comm = run_of(&summary, rank).communication.as_ref();
        let comm = comm.unwrap_or_else(|| panic!("no communication"));
        let want = &want["runs"][rank.to_string()]["communication"];
        assert_eq!(comm.ops, 4);
        check_close("elapse", comm.elapse_us, num(&want["elapse_us"]));
        check_close("wait", comm.wait_us, num(&want["wait_us"]));
    }
}

#[test]
fn ranks_slowest_and_imbalance_match() {
    let summary = summary_all();
    let want = expected();
    assert_eq!(summary.ranks.len(), 1);
    let ranks = &summary.ranks[0];
    assert_eq!(ranks.per_rank.len(), 2);
    assert_eq!(
        ranks.slowest_rank.map(u64::from),
        want["slowest_rank"].as_u64()
    );
    check_close(
        "imbalance",
        ranks.imbalance_ratio.unwrap_or_default(),
        num(&want["imbalance_ratio"]),
    );
}

#[test]
fn top_keeps_the_longest_groups() {
    let options = Options {
        top: Some(3),
        ..Options::default()
    };
    let summary = summarize(&real_run(), &options).unwrap_or_else(|e| panic!("{e}"));
    let all = summary_all();
    for (few, every) in summary.runs.iter().zip(&all.runs) {
        assert_eq!(few.top_kernels, every.top_kernels[..3]);
        assert_eq!(few.by_type, every.by_type[..3]);
        assert_eq!(few.kernels, every.kernels);
    }
}
