//! verify on real run directories assembled from the vendored samples and on every broken
//! variant: each failure mode maps to its code, severity and next action.

mod common;

use std::fs;
use std::path::Path;

use common::*;
use npuprof_verify::finding::{Code, Severity};
use npuprof_verify::{NoProgress, Options, PhaseSelection, VerifyReport, verify};

/// A copy of the real rank-0 run in a new temp directory (kept alive by the first element).
fn fresh_real_run() -> (tempfile::TempDir, Run) {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let run = real_run(&tmp.path().join("r_ascend_pt"), 0);
    (tmp, run)
}

fn good_result_dir(root: &Path) -> ResultDir {
    let res = ResultDir::new(root, "qwen", "20260725", "qwen_dense");
    res.add_run("prefill", 0);
    res.add_run("decode", 0);
    res.write_log(0, CLEAN_LOG);
    res
}

#[test]
fn real_samples_as_a_result_directory_are_ok() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res = good_result_dir(tmp.path());
    let report = run_verify(&res.dir, |_| {});
    check_codes(&report, &[]);
    assert_eq!(report.runs.len(), 2);
    let run = &report.runs[1];
    assert_eq!(run.phase.as_deref(), Some("decode"));
    assert_eq!(run.rank, Some(0));
    assert_eq!(run.steps.expected, Some(vec![13]));
    assert_eq!(run.steps.kernel_details, vec![13]);
    let trace = run
        .artifacts
        .trace_view
        .as_ref()
        .map(|t| (t.state.as_str(), t.events));
    assert_eq!(trace, Some(("complete", 3670)));
    let kernels = run
        .artifacts
        .kernel_details
        .as_ref()
        .map(|k| (k.columns, k.rows));
    assert_eq!(kernels, Some((47, 2463)));
}

#[test]
fn real_sample_files_as_shipped_in_a_bare_run_directory() {
    // Only the files the samples ship: operator_details and the memory files are missing.
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let run = real_run(&tmp.path().join("rank_0_ascend_pt"), 0);
    for name in [
        "operator_details.csv",
        "memory_record.csv",
        "operator_memory.csv",
    ] {
        run.remove(name);
    }
    let report = run_verify(&run.dir, |_| {});
    check_codes(&report, &[(Severity::Warning, Code::ArtifactMissing)]);
    let msg = &report.findings[0].message;
    for name in [
        "operator_details.csv",
        "memory_record.csv",
        "operator_memory.csv",
    ] {
        assert!(msg.contains(name), "{msg}");
    }
}

#[test]
fn level0_header_with_level2_recorded_is_an_error_that_does_not_advise_level1() {
    let (_tmp, run) = fresh_real_run();
    run.write(
        "kernel_details.csv",
        fs::read(level0_kernel_details()).unwrap_or_default(),
    );
    let report = run_verify(&run.dir, |_| {});
    check_codes(
        &report,
        &[
            (Severity::Error, Code::KernelHeaderMinimal),
            // Step Id 50 in the Level0 sample vs step 13 recorded by the schedule.
            (Severity::Error, Code::StepsMissing),
            (Severity::Warning, Code::StepsUnexpected),
        ],
    );
    // The run already recorded Level2: the next action must not be "set Level1".
    check_next_action(
        &report,
        Code::KernelHeaderMinimal,
        "the run already recorded Level2",
    );
    check_no_action(&report, "ProfilerLevel.Level1");
}

#[test]
fn level0_recorded_run_is_explained_not_failed() {
    let (_tmp, run) = fresh_real_run();
    run.write(
        "kernel_details.csv",
        fs::read(level0_kernel_details()).unwrap_or_default(),
    );
    run.remove("op_statistic.csv").remove("api_statistic.csv");
    // The Level0 table's own computing (8827.454 µs over its 187 non-HCCL rows) and no
    // communication files of the Level2 run: the totals of one run (verify cross-checks them).
    run.remove("communication.json")
        .remove("communication_matrix.json");
    let step_trace = fs::read_to_string(level2_output("step_trace_time.csv")).unwrap_or_default();
    run.write(
        "step_trace_time.csv",
        step_trace
            .replace("\n0,13,", "\n0,50,")
            .replace("231290.09999999995", "8827.454"),
    );
    run.edit_info(|v| {
        v["config"]["experimental_config"]["_profiler_level"] = "Level0".into();
        v["config"]["experimental_config"]["_aic_metrics"] = "ACL_AICORE_NONE".into();
        v["config"]["common_config"]["schedule"]["skip_first"] = 49.into();
    });
    let report = run_verify(&run.dir, |_| {});
    check_codes(&report, &[(Severity::Warning, Code::KernelHeaderMinimal)]);
    assert_eq!(report.runs[0].steps.kernel_details, vec![50]);
}

#[test]
fn minimal_header_without_profiler_info_says_level0_or_no_experimental_config() {
    let (_tmp, run) = fresh_real_run();
    run.write(
        "kernel_details.csv",
        fs::read(level0_kernel_details()).unwrap_or_default(),
    );
    let _ = fs::remove_file(run.info_path());
    let report = run_verify(&run.dir, |_| {});
    check_codes(
        &report,
        &[
            (Severity::Warning, Code::ProfilerInfoMissing),
            (Severity::Warning, Code::KernelHeaderMinimal),
            (Severity::Info, Code::ExpectationUnknown),
            (Severity::Info, Code::ExpectationUnknown),
        ],
    );
    let msg = report
        .findings
        .iter()
        .find(|f| f.code == Code::KernelHeaderMinimal)
        .map(|f| f.message.clone())
        .unwrap_or_default();
    assert!(msg.contains("Level0, or no ExperimentalConfig"), "{msg}");
}

#[test]
fn block_num_spelling_is_accepted() {
    let (_tmp, run) = fresh_real_run();
    run.write(
        "kernel_details.csv",
        edited_kernel_details(|i, l| {
            if i == 0 {
                l.replace("Block Dim", "Block Num")
            } else {
                l.to_owned()
            }
        }),
    );
    check_codes(&run_verify(&run.dir, |_| {}), &[]);
}

#[test]
fn empty_column_and_empty_step_ids_are_reported() {
    let (_tmp, run) = fresh_real_run();
    run.write(
        "kernel_details.csv",
        edited_kernel_details(|i, l| match i {
            0 => l.to_owned(),
            // Block Dim (column 12) empty everywhere; Step Id empty on 5 rows.
            1..=5 => replace_field(&replace_field(l, 12, ""), 0, ""),
            _ => replace_field(l, 12, ""),
        }),
    );
    let report = run_verify(&run.dir, |_| {});
    check_codes(
        &report,
        &[
            (Severity::Warning, Code::KernelColumnEmpty),
            (Severity::Info, Code::KernelStepIdEmpty),
        ],
    );
    let kd = report.runs[0].artifacts.kernel_details.as_ref();
    assert_eq!(kd.map(|k| k.empty_step_id_rows), Some(5));
    assert_eq!(
        kd.map(|k| k.all_empty_columns.clone()),
        Some(vec!["Block Dim".to_owned()])
    );
}

#[test]
fn missing_metric_columns_are_named() {
    let (_tmp, run) = fresh_real_run();
    run.write(
        "kernel_details.csv",
        edited_kernel_details(|i, l| {
            if i == 0 {
                l.replace("aic_mac_ratio", "aic_mac_ratio_renamed")
            } else {
                l.to_owned()
            }
        }),
    );
    let report = run_verify(&run.dir, |_| {});
    check_codes(&report, &[(Severity::Error, Code::KernelColumnsMissing)]);
    assert!(report.findings[0].message.contains("aic_mac_ratio"));
}

#[test]
fn truncated_kernel_details_has_malformed_rows() {
    let (_tmp, run) = fresh_real_run();
    let text = fs::read(level2_output("kernel_details.csv")).unwrap_or_default();
    run.write("kernel_details.csv", &text[..text.len() / 2]);
    let report = run_verify(&run.dir, |_| {});
    check_codes(&report, &[(Severity::Error, Code::KernelRowsMalformed)]);
}

fn trace_variant(bytes: Vec<u8>) -> (tempfile::TempDir, VerifyReport) {
    let (tmp, run) = fresh_real_run();
    run.write("trace_view.json", bytes);
    let report = run_verify(&run.dir, |_| {});
    (tmp, report)
}

#[test]
fn trace_unterminated_after_host_phase() {
    let host = trace_host_only();
    let (_tmp, report) = trace_variant(host.clone());
    check_codes(&report, &[(Severity::Error, Code::TraceUnterminated)]);
    let f = &report.findings[0];
    assert_eq!(f.evidence.byte_offset, Some(host.len() as u64));
    let t = report.runs[0].artifacts.trace_view.as_ref();
    assert_eq!(
        t.map(|t| t.processes.clone()),
        Some(vec!["Python".to_owned()])
    );
}

#[test]
fn trace_cut_in_the_middle_of_an_event() {
    let cut = trace_cut_mid_event();
    let host_len = trace_host_only().len() as u64;
    let (_tmp, report) = trace_variant(cut.clone());
    check_codes(&report, &[(Severity::Error, Code::TraceCutMidEvent)]);
    let f = &report.findings[0];
    assert_eq!(f.evidence.byte_offset, Some(cut.len() as u64));
    assert!(
        f.message.contains(&format!("ends at byte {host_len}")),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains(&format!("starting at byte {}", host_len + 1)),
        "{}",
        f.message
    );
    check_next_action(&report, Code::TraceCutMidEvent, "df -h");
}

#[test]
fn trace_trailing_comma_is_an_empty_device_timeline() {
    let t = trace_trailing_comma();
    let (_tmp, report) = trace_variant(t.clone());
    check_codes(
        &report,
        &[(Severity::Error, Code::TraceEmptyDeviceTimeline)],
    );
    assert_eq!(
        report.findings[0].evidence.byte_offset,
        Some(t.len() as u64 - 2)
    );
}

#[test]
fn trace_without_device_processes() {
    // Valid JSON, but only the host events: the Ascend Hardware and CANN processes are missing.
    let mut t = trace_host_only();
    t.push(b']');
    let (_tmp, report) = trace_variant(t);
    check_codes(&report, &[(Severity::Error, Code::TraceProcessMissing)]);
}

#[test]
fn trace_temp_leftover_and_missing_trace() {
    let (_tmp, run) = fresh_real_run();
    run.remove("trace_view.json");
    run.write("trace_view_temp.json", trace_host_only());
    let report = run_verify(&run.dir, |_| {});
    check_codes(
        &report,
        &[
            (Severity::Error, Code::TraceTempLeftover),
            (Severity::Error, Code::ArtifactMissing),
        ],
    );
}

/// The bad-disk diagnosis needs every CSV gone: failed parsers and a broken trace beside the
/// CSVs are a parser failure, not the bad-output-filesystem one (a mutation that dropped the
/// "no CSV" condition survived every suite before this test).
#[test]
fn failed_parsers_and_a_broken_trace_beside_csvs_are_no_bad_disk() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res = ResultDir::new(tmp.path(), "deepseek", "20260725", "ds_decode");
    let run = res.add_run("decode", 0);
    run.write("trace_view.json", trace_host_only());
    res.write_log(0, ALL_PARSERS_FAILED_LOG);
    let report = run_verify(&res.dir, |o| o.phases = PhaseSelection::Decode);
    let codes: Vec<Code> = report.findings.iter().map(|f| f.code).collect();
    assert!(
        codes.contains(&Code::ParserFailed) && codes.contains(&Code::TraceUnterminated),
        "the other conditions of the diagnosis hold: {codes:?}"
    );
    assert!(!codes.contains(&Code::OutputFilesystem), "{codes:?}");
}

#[test]
fn bad_disk_all_parsers_failed() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res = ResultDir::new(tmp.path(), "deepseek", "20260725", "ds_decode");
    let run = res.add_run("decode", 0);
    break_like_bad_disk(&run);
    run.write("analyse.done", "");
    res.write_log(0, ALL_PARSERS_FAILED_LOG);
    let report = run_verify(&res.dir, |o| o.phases = PhaseSelection::Decode);
    let mut expected = vec![
        (Severity::Error, Code::OutputFilesystem),
        (Severity::Error, Code::ParserFailed),
        (Severity::Error, Code::TraceUnterminated),
        (Severity::Info, Code::AnalyseDoneNotSuccess),
    ];
    // kernel_details, op/api statistics (one error); operator_details, step_trace_time, memory
    // (one warning).
    expected.push((Severity::Error, Code::ArtifactMissing));
    expected.push((Severity::Warning, Code::ArtifactMissing));
    check_codes(&report, &expected);
    let parser = report
        .findings
        .iter()
        .find(|f| f.code == Code::ParserFailed);
    let msg = parser.map(|f| f.message.as_str()).unwrap_or_default();
    assert!(msg.contains("11 `run failed`"), "{msg}");
    assert!(
        msg.contains(
            "root failing task(s): CANNExportParser (then, as a consequence: CANNTimelineParser,"
        ),
        "{msg}"
    );
    // The bad-disk diagnosis comes first.
    assert_eq!(report.findings[0].code, Code::OutputFilesystem);
    let root = tmp.path().display().to_string();
    check_next_action(
        &report,
        Code::OutputFilesystem,
        &format!("npuprof relocate --repo {root} --model deepseek"),
    );
    check_next_action(
        &report,
        Code::OutputFilesystem,
        "torch_npu.profiler.profiler.analyse('/tmp/npuprof-reparse/",
    );
}

#[test]
fn the_filesystem_verdict_follows_the_mount_table_given() {
    use npuprof_runs::mounts::MountTable;
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res = ResultDir::new(tmp.path(), "deepseek", "20260725", "ds_decode");
    let run = res.add_run("decode", 0);
    break_like_bad_disk(&run);
    res.write_log(0, ALL_PARSERS_FAILED_LOG);
    let opts = Options {
        path: res.dir,
        phases: PhaseSelection::Decode,
        ..Options::default()
    };
    let verdict = |mountinfo: &str| {
        let table = MountTable::parse(mountinfo);
        let report = npuprof_verify::verify_with_mounts(&opts, &NoProgress, Some(&table))
            .unwrap_or_else(|e| panic!("{e}"));
        let f = report
            .findings
            .iter()
            .find(|f| f.code == Code::OutputFilesystem);
        f.map(|f| f.message.clone()).unwrap_or_default()
    };
    let nfs = verdict("22 1 0:40 / / rw,relatime shared:1 - nfs4 storage:/export rw,vers=4.1\n");
    assert!(nfs.contains("nfs4 from storage:/export at /"), "{nfs}");
    assert!(
        nfs.contains("the output filesystem is the likely cause"),
        "{nfs}"
    );
    let fuse =
        verdict("22 1 0:40 / / rw - ext4 /dev/vda rw\n23 22 0:41 / / rw - fuse.sshfs u@h:/x rw\n");
    assert!(fuse.contains("fuse.sshfs"), "{fuse}");
    let local = verdict("22 1 252:0 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n");
    assert!(local.contains("looks local"), "{local}");
    let unknown = npuprof_verify::verify_with_mounts(&opts, &NoProgress, None)
        .map(|r| {
            r.findings
                .iter()
                .any(|f| f.message.contains("filesystem: unknown"))
        })
        .unwrap_or(false);
    assert!(unknown);
}

#[test]
fn root_cause_message_is_quoted() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res = good_result_dir(tmp.path());
    res.write_log(
        0,
        "2025-06-13 10:13:28 [ERROR] [911684] profiler.py: Task [CANNExportParser] run failed.\n\
         2025-06-13 10:13:28 [ERROR] [911684] profiler.py: 'msprof' command not found\n\
         2025-06-13 10:13:29 [ERROR] [911684] profiler.py: Task [KernelViewParser] run failed.\n",
    );
    let report = run_verify(&res.dir, |_| {});
    check_codes(
        &report,
        &[
            (Severity::Error, Code::ParserFailed),
            (Severity::Error, Code::ParserRootCause),
        ],
    );
    let f = report
        .findings
        .iter()
        .find(|f| f.code == Code::ParserFailed);
    let msg = f.map(|f| f.message.as_str()).unwrap_or_default();
    assert!(
        msg.contains(
            "root failing task(s): CANNExportParser (then, as a consequence: KernelViewParser)"
        ),
        "{msg}"
    );
    assert!(msg.contains("'msprof' command not found"), "{msg}");
    check_next_action(&report, Code::ParserRootCause, "set_env.sh");
}

#[test]
fn schedule_warnings_with_and_without_schedule() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res = good_result_dir(tmp.path());
    res.write_log(
        0,
        "[W] Incorrect schedule: Stop profiler while current state is RECORD which may result in incomplete parsed data.\n\
         [W] Incorrect schedule: Stop profiler while current state is WARMUP which will result in empty parsed data.\n\
         [W] Stop profiler while current state is RECORD_AND_SAVE, perhaps the scheduling cycle has not yet completed.\n\
         [W] Incorrect schedule: RECORD followed by NONE\n\
         [W] Path /x is not owned by the current user, please run chown -R to fix it.\n\
         [W] The file size exceeds the preset value, please check the file: /x/trace_view.json\n",
    );
    let report = run_verify(&res.dir, |_| {});
    check_codes(
        &report,
        &[
            (Severity::Warning, Code::ScheduleStopInRecord),
            (Severity::Error, Code::ScheduleStopInWarmup),
            // A stop in RECORD_AND_SAVE saves and parses the cycle (torch_npu's stop()).
            (Severity::Info, Code::ScheduleCycleIncomplete),
            (Severity::Warning, Code::ScheduleTransition),
            (Severity::Warning, Code::OutputOwner),
            (Severity::Error, Code::SizeCapWarning),
        ],
    );

    // Without a schedule (profiler_info schedule `{}`, and no Step Id column: torch_npu's
    // default schedule marks no ProfilerStep) the RECORD warning is harmless.
    let tmp2 = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res2 = ResultDir::new(tmp2.path(), "qwen", "20260725", "qwen_dense");
    for phase in ["prefill", "decode"] {
        let run = res2.add_run(phase, 0);
        run.edit_info(|v| v["config"]["common_config"]["schedule"] = serde_json::json!({}));
        run.write("kernel_details.csv", kernel_details_without_step_id());
    }
    res2.write_log(
        0,
        "[W] Incorrect schedule: Stop profiler while current state is RECORD which may result in incomplete parsed data.\n",
    );
    let report2 = run_verify(&res2.dir, |_| {});
    check_codes(&report2, &[(Severity::Info, Code::ScheduleStopInRecord)]);
}

#[test]
fn missing_phase_and_ranks_are_named() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res = ResultDir::new(tmp.path(), "deepseek", "20260725", "ds_ep4");
    res.add_run("decode", 0);
    res.add_run("decode", 2);
    for r in 0..4 {
        res.write_log(r, CLEAN_LOG);
    }
    let _ = fs::create_dir_all(res.dir.join("prof/prefill"));
    let report = run_verify(&res.dir, |_| {});
    check_codes(
        &report,
        &[
            (Severity::Error, Code::PhaseMissing),
            (Severity::Error, Code::RankMissing),
        ],
    );
    let f = report.findings.iter().find(|f| f.code == Code::RankMissing);
    let msg = f.map(|f| f.message.as_str()).unwrap_or_default();
    assert!(msg.contains("rank(s) 1, 3 of 4"), "{msg}");
    let p = report
        .findings
        .iter()
        .find(|f| f.code == Code::PhaseMissing);
    assert!(p.is_some_and(|f| f.message.contains("exists but holds no run directory")));
}

#[test]
fn ranks_option_and_communication_files() {
    let (_tmp, run) = fresh_real_run();
    run.remove("communication.json");
    let report = run_verify(&run.dir, |o| o.world_size = Some(2));
    check_codes(
        &report,
        &[
            (Severity::Error, Code::RankMissing),
            (Severity::Warning, Code::ArtifactMissing),
        ],
    );
}

#[test]
fn steps_and_compilation_inside_the_window() {
    let (_tmp, run) = fresh_real_run();
    // Spread the real kernels over steps 13..=16; step 13 is 20× slower in step_trace_time.
    run.write(
        "kernel_details.csv",
        kernel_details_with_steps(|i| (13 + (i % 4)).to_string()),
    );
    let header = fs::read_to_string(level2_output("step_trace_time.csv")).unwrap_or_default();
    let header = header.lines().next().unwrap_or_default().to_owned();
    let mut csv = format!("{header}\n");
    // Computing: a quarter of the real rows' 231290.1 µs per step (verify cross-checks the sum).
    for (step, stage) in [
        (13, 16_200_445.0),
        (14, 810_022.25),
        (15, 805_000.5),
        (16, 812_000.0),
    ] {
        csv.push_str(&format!(
            "0,{step},57822.525,420174.26,0.0,420174.26,158558.0,{stage},0,420174.26,206.25\n"
        ));
    }
    run.write("step_trace_time.csv", csv);
    let report = run_verify(&run.dir, |o| o.expect_active = Some(4));
    check_codes(&report, &[(Severity::Warning, Code::CompileInWindow)]);
    assert_eq!(report.runs[0].steps.expected, Some(vec![13, 14, 15, 16]));
    check_next_action(&report, Code::CompileInWindow, "skip_first");

    // Without --expect-active the schedule records only step 13.
    let report = run_verify(&run.dir, |_| {});
    check_codes(
        &report,
        &[
            (Severity::Warning, Code::StepsUnexpected),
            (Severity::Warning, Code::CompileInWindow),
        ],
    );
}

#[test]
fn db_only_export_is_accepted() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path().join("r_ascend_pt");
    let run = real_run(&dir, 0);
    for name in fs::read_dir(run.out())
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
    {
        let _ = fs::remove_file(run.out().join(name));
    }
    run.write("ascend_pytorch_profiler_0.db", profiler_db(DbVariant::Good));
    run.write("analysis.db", analysis_db());
    run.edit_info(|v| {
        v["config"]["experimental_config"]["_export_type"] = serde_json::json!(["db"])
    });
    let report = run_verify(&run.dir, |_| {});
    check_codes(&report, &[(Severity::Info, Code::DbExport)]);
}

#[test]
fn no_output_dir_and_run_logs() {
    let (_tmp, run) = fresh_real_run();
    let _ = fs::remove_dir_all(run.out());
    run.write_log(
        "profiler_2026.log",
        "[2026-07-25 17:56:02] [ERROR] [66457] profiler.py: Task [CANNTimelineParser] run failed.\n\
         [2026-07-25 17:56:02] [ERROR] [66457] profiler.py: Profiling data parsing failed, error: [Errno 5] Input/output error\n",
    );
    let report = run_verify(&run.dir, |_| {});
    check_codes(
        &report,
        &[
            (Severity::Error, Code::OutputDirMissing),
            (Severity::Error, Code::ParserFailed),
            (Severity::Error, Code::ParserRootCause),
            (Severity::Error, Code::OutputFilesystem),
        ],
    );
}

#[test]
fn nothing_to_verify_is_an_error() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let opts = Options {
        path: tmp.path().to_path_buf(),
        ..Options::default()
    };
    let err = verify(&opts, &NoProgress).err().map(|e| e.to_string());
    assert!(err.is_some_and(|e| e.contains("no torch_npu run directory found")));
    let missing = Options {
        path: tmp.path().join("nope"),
        ..Options::default()
    };
    assert!(verify(&missing, &NoProgress).is_err());
}

#[test]
fn every_code_is_documented_kebab_case() {
    for code in Code::ALL {
        let s = code.as_str();
        assert!(s.chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{s}");
        let json = serde_json::to_string(code).unwrap_or_default();
        assert_eq!(json, format!("\"{s}\""));
    }
}

#[test]
fn phase_directory_and_phase_filter() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res = good_result_dir(tmp.path());
    let report = run_verify(&res.dir.join("prof/decode"), |_| {});
    check_codes(&report, &[(Severity::Info, Code::WorldSizeUnknown)]);
    assert_eq!(
        report.target.kind,
        npuprof_runs::discover::TargetKind::PhaseDir
    );
    assert_eq!(report.runs[0].phase.as_deref(), Some("decode"));
    let report = run_verify(&res.dir, |o| o.phases = PhaseSelection::Decode);
    check_codes(&report, &[]);
    assert_eq!(report.runs.len(), 1);
}

#[test]
fn a_run_without_profiler_info_is_not_counted_as_a_missing_rank() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res = ResultDir::new(tmp.path(), "qwen", "20260725", "qwen_dense");
    let run = res.add_run("decode", 0);
    let _ = fs::remove_file(run.info_path());
    res.write_log(0, CLEAN_LOG);
    let report = run_verify(&res.dir, |o| o.phases = PhaseSelection::Decode);
    assert!(!report.findings.iter().any(|f| f.code == Code::RankMissing));
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.code == Code::ProfilerInfoMissing)
    );
}

/// What torch_npu's `analyse(path)` parses (`_path_manager.py`, `get_profiler_path_list`, the
/// same in every build 2.1–2.14): `path` when it holds `FRAMEWORK/` or a `PROF_*` directory,
/// else each immediate subdirectory that does.
fn analyse_parses(path: &Path) -> Vec<std::path::PathBuf> {
    let is_run = |dir: &Path| {
        dir.join("FRAMEWORK").is_dir()
            || fs::read_dir(dir).is_ok_and(|entries| {
                entries.flatten().any(|e| {
                    e.path().is_dir() && e.file_name().to_string_lossy().starts_with("PROF_")
                })
            })
    };
    if !path.is_dir() {
        return Vec::new();
    }
    if is_run(path) {
        return vec![path.to_path_buf()];
    }
    let mut runs: Vec<_> = fs::read_dir(path)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    runs.retain(|p| p.is_dir() && is_run(p));
    runs
}

/// The paths of every `analyse('…')` in the report's next actions (plain paths only).
fn suggested_analyse_paths(report: &VerifyReport) -> Vec<std::path::PathBuf> {
    const CALL: &str = "torch_npu.profiler.profiler.analyse('";
    let mut out = Vec::new();
    for f in &report.findings {
        let mut rest = f.next_action.as_str();
        while let Some(at) = rest.find(CALL) {
            rest = &rest[at + CALL.len()..];
            let end = rest.find('\'').unwrap_or(rest.len());
            out.push(std::path::PathBuf::from(&rest[..end]));
            rest = &rest[end..];
        }
    }
    out
}

#[test]
fn every_suggested_reparse_names_a_path_analyse_parses() {
    // A cann-recipes result directory whose rank logs report failed parsers (real 2.7.1 stdout
    // format), each rank with a prefill and a decode run holding their raw FRAMEWORK/ data.
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res = ResultDir::new(tmp.path(), "deepseek", "20260725", "ds_decode");
    for rank in [0, 1] {
        for phase in ["prefill", "decode"] {
            let run = res.add_run(phase, rank);
            fs::create_dir_all(run.dir.join("FRAMEWORK")).unwrap_or_else(|e| panic!("{e}"));
            if phase == "decode" {
                break_like_bad_disk(&run);
            }
        }
        res.write_log(rank, ALL_PARSERS_FAILED_LOG);
    }
    let report = run_verify(&res.dir, |_| {});
    assert!(
        report.findings.iter().any(|f| f.code == Code::ParserFailed
            && f.evidence
                .path
                .as_deref()
                .is_some_and(|p| p.ends_with("log_1.log"))),
        "the result logs are read"
    );
    let paths = suggested_analyse_paths(&report);
    assert!(paths.len() >= 4, "{paths:?}");
    for path in paths
        .iter()
        .filter(|p| !p.starts_with("/tmp/npuprof-reparse"))
    {
        assert!(
            !analyse_parses(path).is_empty(),
            "analyse('{}') parses nothing",
            path.display()
        );
    }
    // Rank 1's log names rank 1's two run directories, not rank 0's.
    let rank1 = report
        .findings
        .iter()
        .find(|f| f.code == Code::ParserFailed && f.rank == Some(1))
        .map(|f| f.next_action.clone())
        .unwrap_or_default();
    assert_eq!(rank1.matches("_ascend_pt'").count(), 2, "{rank1}");
    assert!(!rank1.contains("node1_4000_"), "{rank1}");
}

/// The real Level2 rank-0 run as cycle `cycle` of `schedule(wait=0, warmup=1, active=1,
/// repeat=2, skip_first=12)`: torch_npu writes one directory per cycle, so cycle 1's holds Step
/// Id 15 where the real (cycle 0) one holds 13. `stamp` is the directory's 17-digit timestamp.
fn repeat_cycle_run(res: &ResultDir, cycle: u64, stamp: &str) -> Run {
    let step = (13 + 2 * cycle).to_string();
    let dir = res
        .dir
        .join("prof")
        .join("decode")
        .join(format!("node1_4000_{stamp}_ascend_pt"));
    let run = real_run(&dir, 0);
    run.edit_info(|v| v["config"]["common_config"]["schedule"]["repeat"] = 2.into());
    run.write(
        "kernel_details.csv",
        kernel_details_with_steps(|_| step.clone()),
    );
    let trace_steps = fs::read_to_string(level2_output("step_trace_time.csv"))
        .unwrap_or_default()
        .replace("\n0,13,", &format!("\n0,{step},"));
    run.write("step_trace_time.csv", trace_steps);
    let comm = fs::read_to_string(level2_output("communication.json"))
        .unwrap_or_default()
        .replace("\"step13\"", &format!("\"step{step}\""));
    run.write("communication.json", comm);
    run
}

#[test]
fn repeat_two_is_checked_across_the_phase_directories_one_cycle_each() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res = ResultDir::new(tmp.path(), "qwen", "20260725", "qwen_dense");
    repeat_cycle_run(&res, 0, "20260725175601123");
    repeat_cycle_run(&res, 1, "20260725175602456");
    res.write_log(0, CLEAN_LOG);
    let report = run_verify(&res.dir, |o| o.phases = PhaseSelection::Decode);
    check_codes(&report, &[]);
    let expected: Vec<_> = report
        .runs
        .iter()
        .map(|r| r.steps.expected.clone())
        .collect();
    assert_eq!(expected, vec![Some(vec![13]), Some(vec![15])]);
}

#[test]
fn a_missing_or_duplicated_cycle_is_named_with_its_step_ids() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res = ResultDir::new(tmp.path(), "qwen", "20260725", "qwen_dense");
    repeat_cycle_run(&res, 0, "20260725175601123");
    res.write_log(0, CLEAN_LOG);
    let report = run_verify(&res.dir, |o| o.phases = PhaseSelection::Decode);
    check_codes(&report, &[(Severity::Error, Code::CycleMissing)]);
    let missing = &report.findings[0].message;
    assert!(missing.contains("cycle 1 (Step Ids 15)"), "{missing}");

    // An older leftover of cycle 0 next to a complete pair: the newer cycle 0 comes after
    // cycle 1 by timestamp.
    repeat_cycle_run(&res, 1, "20260725175602456");
    repeat_cycle_run(&res, 0, "20260725175603789");
    let report = run_verify(&res.dir, |o| o.phases = PhaseSelection::Decode);
    check_codes(
        &report,
        &[
            (Severity::Warning, Code::CycleDuplicate),
            (Severity::Warning, Code::CycleDuplicate),
        ],
    );
    let text: Vec<&str> = report.findings.iter().map(|f| f.message.as_str()).collect();
    assert!(
        text.iter()
            .any(|m| m.contains("cycle 0 (Step Ids 13) is in 2 run directories")),
        "{text:?}"
    );
    assert!(
        text.iter().any(|m| m.contains("not in cycle order")),
        "{text:?}"
    );
}

/// A rank log (torch_npu 2.7.1+ stdout format) holding one schedule warning.
fn warning_log(text: &str) -> String {
    format!("{CLEAN_LOG}[2026-07-25 17:56:02] [WARNING] [66457] profiler.py: {text}\n")
}

const RECORD_STOP: &str = "Incorrect schedule: Stop profiler while current state is RECORD which may result in incomplete parsed data.";

/// A result directory with the real decode run, its profiler_info schedule set to `schedule`
/// (as torch_npu writes `schedule.__dict__`), and `log` as rank 0's log.
fn run_with_schedule(
    root: &Path,
    schedule: serde_json::Value,
    step_ids: bool,
    log: &str,
) -> ResultDir {
    let res = ResultDir::new(root, "qwen", "20260725", "qwen_dense");
    let run = res.add_run("decode", 0);
    run.edit_info(|v| v["config"]["common_config"]["schedule"] = schedule);
    if !step_ids {
        // The default schedule marks no ProfilerStep: kernel_details has no Step Id column.
        run.write("kernel_details.csv", kernel_details_without_step_id());
    }
    res.write_log(0, log);
    res
}

fn severity_of(report: &VerifyReport, code: Code) -> Option<Severity> {
    report
        .findings
        .iter()
        .find(|f| f.code == code)
        .map(|f| f.severity)
}

#[test]
fn a_record_stop_under_a_callable_schedule_is_data_loss_not_harmless() {
    // `{}` with Step Ids: a callable schedule (torch.profiler.schedule, a lambda, a partial).
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let res = run_with_schedule(
        tmp.path(),
        serde_json::json!({}),
        true,
        &warning_log(RECORD_STOP),
    );
    let report = run_verify(&res.dir, |o| o.phases = PhaseSelection::Decode);
    assert_eq!(
        severity_of(&report, Code::ScheduleStopInRecord),
        Some(Severity::Warning)
    );
    check_next_action(
        &report,
        Code::ScheduleStopInRecord,
        "torch_npu.profiler.schedule(...)",
    );
    let unknown = report
        .findings
        .iter()
        .find(|f| f.code == Code::ExpectationUnknown)
        .map(|f| f.message.clone())
        .unwrap_or_default();
    assert!(
        unknown.contains("a callable schedule") && unknown.contains("Step Ids found: 13"),
        "{unknown}"
    );
    assert_eq!(report.runs[0].schedule.as_deref(), Some("callable"));

    // `{}` without Step Ids is torch_npu's default schedule; `null` is no schedule: harmless.
    for (schedule, step_ids) in [
        (serde_json::json!({}), false),
        (serde_json::Value::Null, false),
    ] {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let res = run_with_schedule(
            tmp.path(),
            schedule.clone(),
            step_ids,
            &warning_log(RECORD_STOP),
        );
        let report = run_verify(&res.dir, |o| o.phases = PhaseSelection::Decode);
        assert_eq!(
            severity_of(&report, Code::ScheduleStopInRecord),
            Some(Severity::Info),
            "{schedule}"
        );
        assert_eq!(report.runs[0].schedule.as_deref(), Some("none"));
        check_codes(&report, &[(Severity::Info, Code::ScheduleStopInRecord)]);
    }
}

#[test]
fn a_stop_in_record_and_save_saved_the_cycle() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let schedule =
        serde_json::json!({"wait": 0, "active": 1, "warmup": 1, "repeat": 1, "skip_first": 12});
    let log = warning_log(
        "Stop profiler while current state is RECORD_AND_SAVE, perhaps the scheduling cycle has not yet completed.",
    );
    let res = run_with_schedule(tmp.path(), schedule, true, &log);
    let report = run_verify(&res.dir, |o| o.phases = PhaseSelection::Decode);
    check_codes(&report, &[(Severity::Info, Code::ScheduleCycleIncomplete)]);
    let msg = &report.findings[0].message;
    assert!(
        msg.contains("saves and parses the cycle") && !msg.contains("may not have been saved"),
        "{msg}"
    );
}
