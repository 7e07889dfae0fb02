//! verify on the complete real 2-rank run (vendored) and on the variations real torch_npu output
//! shows: Level0 traces without `CANN`, un-prefixed pipeline metric columns,
//! 2023 `_wait` schedule keys, one rank or a subset of ranks, `parallel_group_info`.

mod common;

use std::fs;

use common::*;
use npuprof_verify::finding::{Code, Severity};

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
}

fn trace_of(run: &Run) -> Vec<u8> {
    read_sample(&run.out().join("trace_view.json"))
}

fn kernels_of(run: &Run) -> Vec<u8> {
    read_sample(&run.out().join("kernel_details.csv"))
}

fn set_level(run: &Run, level: &str) {
    run.edit_info(|v| {
        v["config"]["experimental_config"]["_profiler_level"] = serde_json::json!(level);
    });
}

#[test]
fn the_real_two_rank_run_is_ok() {
    let report = run_verify(&real_two_rank_run(), |_| {});
    check_codes(&report, &[]);
    assert_eq!(report.runs.len(), 2);
    for (rank, run) in report.runs.iter().enumerate() {
        assert_eq!(run.rank, Some(rank as u32));
        assert_eq!(run.level.as_deref(), Some("Level1"));
        assert_eq!(run.steps.expected, Some(vec![50]));
        assert_eq!(run.steps.kernel_details, vec![50]);
        assert_eq!(run.steps.step_trace_time, vec![50]);
        let trace = run.artifacts.trace_view.as_ref().map(|t| t.state.as_str());
        assert_eq!(trace, Some("complete"));
        let kernels = run
            .artifacts
            .kernel_details
            .as_ref()
            .map(|k| (k.columns, k.rows));
        assert_eq!(kernels, Some((46, 191)));
    }
}

#[test]
fn one_rank_alone_is_ok_unless_the_whole_run_is_asked_for() {
    let rank1 = real_two_rank_run().join("rank1_ascend_pt");
    let report = run_verify(&rank1, |_| {});
    check_codes(&report, &[]);
    assert_eq!(report.runs[0].rank, Some(1));
    let report = run_verify(&rank1, |o| o.world_size = Some(2));
    check_codes(&report, &[(Severity::Error, Code::RankMissing)]);
    assert!(report.findings[0].message.contains("rank(s) 0 of 2"));
}

#[test]
fn parallel_group_info_gives_the_run_size_and_a_subset_is_reported_not_failed() {
    let tmp = tempdir();
    let [r0, r1] = copy_real_run(tmp.path());
    // `distributed_args` (a framework adds it) does not set the run's size: HCCL's groups do.
    for (run, rank) in [(&r0, 2), (&r1, 3)] {
        run.edit_info(|v| v["rank_id"] = serde_json::json!(rank));
        fs::write(
            run.dir.join("profiler_metadata.json"),
            format!(
                r#"{{"distributed_args": {{"backend": "hccl", "rank": {rank}, "world_size": 4}}}}"#
            ),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
    let report = run_verify(tmp.path(), |_| {});
    check_codes(&report, &[]);
    assert_eq!(report.target.expected_ranks, None);
    // Ranks 2 and 3 of a 4-rank run (one node of two), their HCCL groups as torch_npu records
    // them: a tensor-parallel pair and the default group of every rank.
    for (run, rank) in [(&r0, 2), (&r1, 3)] {
        let metadata = serde_json::json!({
            "ENV_VARIABLES": {"ASCEND_GLOBAL_LOG_LEVEL": ""},
            "parallel_group_info": {
                "10.0.0.2%eth0_60000_0_1764246877073570": {
                    "group_name": "tp", "group_rank": rank - 2, "global_ranks": [2, 3]
                },
                "10.0.0.2%eth0_60000_0_1764246877073569": {
                    "group_name": "default_group", "group_rank": rank, "global_ranks": [0, 1, 2, 3]
                }
            },
            "trace_id": "1764246877073569"
        });
        fs::write(run.dir.join("profiler_metadata.json"), metadata.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let report = run_verify(tmp.path(), |_| {});
    check_codes(&report, &[(Severity::Info, Code::RankSubset)]);
    assert_eq!(report.target.expected_ranks, Some(4));
    assert!(!report.target.whole_run);
    let msg = &report.findings[0].message;
    assert!(msg.contains("rank(s) 2, 3 here, 2 of the run's 4"), "{msg}");
    check_next_action(&report, Code::RankSubset, "npuprof verify --merge");
    // Asked for the whole run: ranks 0 and 1 are missing.
    let report = run_verify(tmp.path(), |o| o.world_size = Some(4));
    check_codes(&report, &[(Severity::Error, Code::RankMissing)]);
    assert!(report.findings[0].message.contains("rank(s) 0, 1 of 4"));
}

#[test]
fn level0_trace_without_cann_process_is_ok() {
    let tmp = tempdir();
    let [r0, _] = copy_real_run(tmp.path());
    set_level(&r0, "Level0");
    r0.write(
        "trace_view.json",
        without_process_name(&trace_of(&r0), "CANN"),
    );
    let report = run_verify(&r0.dir, |_| {});
    check_codes(&report, &[]);
    let processes = report.runs[0]
        .artifacts
        .trace_view
        .as_ref()
        .map(|t| t.processes.clone())
        .unwrap_or_default();
    assert!(processes.iter().any(|p| p == "Ascend Hardware"));
    assert!(!processes.iter().any(|p| p == "CANN"));
}

#[test]
fn level1_trace_without_cann_process_is_a_cann_parsing_failure() {
    let tmp = tempdir();
    let [r0, _] = copy_real_run(tmp.path());
    r0.write(
        "trace_view.json",
        without_process_name(&trace_of(&r0), "CANN"),
    );
    let report = run_verify(&r0.dir, |_| {});
    check_codes(&report, &[(Severity::Error, Code::TraceProcessMissing)]);
    check_next_action(&report, Code::TraceProcessMissing, "CANNTimelineParser");
    // NPU activity was recorded: never advise recording it.
    check_no_action(&report, "record ProfilerActivity.NPU");
}

#[test]
fn trace_without_device_timeline_is_an_error_at_every_level() {
    for level in ["Level0", "Level1"] {
        let tmp = tempdir();
        let [r0, _] = copy_real_run(tmp.path());
        set_level(&r0, level);
        r0.write(
            "trace_view.json",
            without_process_name(&trace_of(&r0), "Ascend Hardware"),
        );
        let report = run_verify(&r0.dir, |_| {});
        check_codes(&report, &[(Severity::Error, Code::TraceProcessMissing)]);
        assert!(report.findings[0].message.contains("`Ascend Hardware`"));
    }
}

#[test]
fn trace_cut_at_an_event_boundary_after_the_device_append_says_so() {
    let tmp = tempdir();
    let [r0, _] = copy_real_run(tmp.path());
    let trace = trace_of(&r0);
    // Cut right after the last complete event: `}]` → `}`.
    r0.write("trace_view.json", &trace[..trace.len() - 1]);
    let report = run_verify(&r0.dir, |_| {});
    check_codes(&report, &[(Severity::Error, Code::TraceUnterminated)]);
    let f = &report.findings[0];
    assert!(f.message.contains("was being appended"), "{}", f.message);
    assert!(!f.message.contains("never appended"), "{}", f.message);
}

#[test]
fn unprefixed_pipeline_metric_columns_are_accepted() {
    let tmp = tempdir();
    let [r0, _] = copy_real_run(tmp.path());
    let csv = rewrite_csv_columns(&kernels_of(&r0), unprefixed_pipe_column);
    let header = String::from_utf8_lossy(&csv)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    for col in [
        "mac_ratio",
        "vec_ratio",
        "mte2_ratio",
        "scalar_ratio",
        "aicore_time(us)",
    ] {
        assert!(header.split(',').any(|h| h == col), "{header}");
    }
    assert!(!header.contains("aic_") && !header.contains("aiv_") && !header.contains("Mix Block"));
    r0.write("kernel_details.csv", csv);
    let report = run_verify(&r0.dir, |_| {});
    check_codes(&report, &[]);
    // Without any pipeline metric column, both spellings are named as missing.
    let bare = rewrite_csv_columns(&kernels_of(&r0), |n| {
        (!n.contains("ratio")).then(|| n.to_owned())
    });
    r0.write("kernel_details.csv", bare);
    let report = run_verify(&r0.dir, |_| {});
    check_codes(&report, &[(Severity::Error, Code::KernelColumnsMissing)]);
    assert!(
        report.findings[0]
            .message
            .contains("aic_mac_ratio|mac_ratio")
    );
    check_no_action(&report, "ProfilerLevel.Level1");
}

#[test]
fn real_headers_of_other_metric_groups_are_accepted() {
    for (csv, metrics) in [
        (memory_l0_kernel_details(), "ACL_AICORE_L0B_AND_WIDTH"),
        (
            arithmetic_kernel_details(),
            "ACL_AICORE_ARITHMETIC_UTILIZATION",
        ),
    ] {
        let tmp = tempdir();
        let [r0, _] = copy_real_run(tmp.path());
        r0.write("kernel_details.csv", read_sample(&csv));
        r0.edit_info(|v| {
            v["config"]["experimental_config"]["_aic_metrics"] = serde_json::json!(metrics);
            // These files come from other runs: judge their columns, not their steps.
            v["config"]["common_config"]["schedule"] = serde_json::json!({});
        });
        let report = run_verify(&r0.dir, |_| {});
        assert!(
            !report.findings.iter().any(|f| matches!(
                f.code,
                Code::KernelColumnsMissing | Code::KernelHeaderMinimal
            )),
            "{metrics}: {:#?}",
            report.findings
        );
    }
}

#[test]
fn old_underscore_schedule_keys_are_read() {
    let tmp = tempdir();
    let [r0, _] = copy_real_run(tmp.path());
    r0.edit_info(underscore_schedule);
    let report = run_verify(&r0.dir, |_| {});
    check_codes(&report, &[]);
    assert_eq!(report.runs[0].steps.expected, Some(vec![50]));
    assert_eq!(
        report.runs[0].schedule.as_deref(),
        Some("wait=0 warmup=10 active=1 repeat=1 skip_first=40")
    );
}

#[test]
fn a_schedule_with_missing_keys_is_unknown_not_invented() {
    let tmp = tempdir();
    let [r0, _] = copy_real_run(tmp.path());
    r0.edit_info(|v| {
        underscore_schedule(v);
        if let Some(s) = v
            .pointer_mut("/config/common_config/schedule")
            .and_then(serde_json::Value::as_object_mut)
        {
            s.remove("_active");
        }
    });
    let report = run_verify(&r0.dir, |_| {});
    check_codes(&report, &[(Severity::Info, Code::ExpectationUnknown)]);
    assert!(report.findings[0].message.contains("lacks integer active"));
    assert_eq!(report.runs[0].schedule, None);
    assert_eq!(report.runs[0].steps.expected, None);
}
