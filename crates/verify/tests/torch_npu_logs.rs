//! verify judges torch_npu's logs as the real builds write them: the parser's own
//! `<run>/logs/profiler_<ts>_<pid>_<Name>.log` (ProfilerLogger records, tracebacks, the 2.7.1+
//! status table; absent in 2.1.0.post10), the job's stdout (`Task [X] run failed.` goes there
//! only) in each build's texts, and the files themselves (raw data, empty windows, Level_none,
//! analyse.done). The log texts below follow the format strings and messages of the wheels'
//! `torch_npu/profiler/**` (2.1.0.post10, 2.5.1, 2.7.1, 2.14.0).

mod common;

use std::fs;
use std::path::PathBuf;

use common::*;
use npuprof_verify::PhaseSelection;
use npuprof_verify::finding::{Code, Severity};

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
}

fn set_build(run: &Run, version: &str) {
    run.edit_info(|v| {
        v["torch_npu_version"] = serde_json::json!(version);
        v["cann_version"] = serde_json::json!("8.3.RC1");
    });
}

/// Verifies a cann-recipes result directory whose decode run was written by `build` (the real
/// run as is when `None`), after `tweak`, with `stdout` as rank 0's `log_0.log`.
fn stdout_report(
    build: Option<&str>,
    tweak: impl FnOnce(&Run),
    stdout: &str,
) -> (tempfile::TempDir, npuprof_verify::VerifyReport) {
    let tmp = tempdir();
    let res = ResultDir::new(tmp.path(), "deepseek", "20251020", "ds_decode");
    let run = res.add_run("decode", 0);
    if let Some(build) = build {
        set_build(&run, build);
    }
    tweak(&run);
    res.write_log(0, stdout);
    let report = run_verify(&res.dir, |o| o.phases = PhaseSelection::Decode);
    (tmp, report)
}

/// Asserts that a finding of `code` says `needle`.
fn check_message(report: &npuprof_verify::VerifyReport, code: Code, needle: &str) {
    let said = message(report, code);
    assert!(
        said.contains(needle),
        "no {code:?} finding says {needle:?}: {said}\n{report:#?}"
    );
}

fn message(report: &npuprof_verify::VerifyReport, code: Code) -> String {
    report
        .findings
        .iter()
        .filter(|f| f.code == code)
        .map(|f| f.message.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The CANN export's record and traceback in a 2.14.0 parser log (`logger.exception`), and the
/// task status table the main process logs at the end, for an export that hit an I/O error.
const BAD_DISK_EXPORT_LOG_2_14: &str = "\
[2026-10-01-12:00:00.101] [INFO] [AscendProfiler_CANNExportParser:56] Profiler logger initialized at: /res/prof/decode/x_ascend_pt/logs/profiler_20261001120000_4321_CANNExportParser.log
[2026-10-01-12:00:00.102] [INFO] [AscendProfiler_CANNExportParser:58] CANNExportParser start.
[2026-10-01-12:00:03.456] [ERROR] [AscendProfiler_CANNExportParser:101] Failed to export CANN Profiling data
Traceback (most recent call last):
  File \"/usr/local/python3.11/site-packages/torch_npu/profiler/analysis/prof_view/cann_parse/_cann_export.py\", line 90, in run
    completed_analysis = subprocess.run(
                         ^^^^^^^^^^^^^^^
OSError: [Errno 5] Input/output error: '/res/prof/decode/x_ascend_pt/PROF_000001_20261001120000000_ABCDEFGHIJKLMNOP/mindstudio_profiler_output'
";

const STATUS_TABLE_2_14: &str = "\
[2026-10-01-12:00:00.050] [INFO] [AscendProfiler_ProfilingParser:56] Profiler logger initialized at: /res/prof/decode/x_ascend_pt/logs/profiler_20261001120000_4300_ProfilingParser.log
[2026-10-01-12:00:09.001] [INFO] [AscendProfiler_ProfilingParser:473] ============================================================
[2026-10-01-12:00:09.001] [INFO] [AscendProfiler_ProfilingParser:474] Task execution completed
[2026-10-01-12:00:09.001] [INFO] [AscendProfiler_ProfilingParser:475] ============================================================
[2026-10-01-12:00:09.002] [INFO] [AscendProfiler_ProfilingParser:478] torch_op                  | PTHREAD         | Succeed    | 0.120s | deps: None
[2026-10-01-12:00:09.002] [INFO] [AscendProfiler_ProfilingParser:478] task_queue                | PTHREAD         | Succeed    | 0.098s | deps: None
[2026-10-01-12:00:09.002] [INFO] [AscendProfiler_ProfilingParser:478] trace_prepare             | SUB_PROCESS     | Succeed    | 0.455s | deps: torch_op, task_queue
[2026-10-01-12:00:09.002] [INFO] [AscendProfiler_ProfilingParser:478] export                    | SUB_PROCESS     | Failed     | 3.354s | deps: None
";

#[test]
fn the_run_logs_alone_give_the_bad_disk_diagnosis_and_relocate() {
    let tmp = tempdir();
    let res = ResultDir::new(tmp.path(), "deepseek", "20261001", "ds_decode");
    let run = res.add_run("decode", 0);
    set_build(&run, "2.14.0");
    break_like_bad_disk(&run);
    run.write("analyse.done", "");
    run.write_log(
        "profiler_20261001120000_4321_CANNExportParser.log",
        BAD_DISK_EXPORT_LOG_2_14,
    );
    run.write_log(
        "profiler_20261001120000_4300_ProfilingParser.log",
        STATUS_TABLE_2_14,
    );
    // No log_<rank>.log, no --log: nothing of stdout was captured.
    let report = run_verify(&res.dir, |o| o.phases = PhaseSelection::Decode);
    assert_eq!(
        report.findings[0].code,
        Code::OutputFilesystem,
        "{report:#?}"
    );
    check_next_action(
        &report,
        Code::OutputFilesystem,
        &format!("npuprof relocate --repo {}", tmp.path().display()),
    );
    check_message(
        &report,
        Code::ParserFailed,
        "root failing task(s): CANNExportParser",
    );
    check_message(
        &report,
        Code::ParserRootCause,
        "Failed to export CANN Profiling data",
    );
    check_message(&report, Code::ParserRootCause, "OSError: [Errno 5]");
}

#[test]
fn msprof_missing_on_one_line_is_the_cann_environment_not_the_disk() {
    // 2.7.1+: print_error_msg of the CANN export's RuntimeError, both texts on one line.
    let (_tmp, report) = stdout_report(
        Some("2.7.1"),
        break_like_bad_disk,
        "[2025-10-20 09:00:01] [ERROR] [66457] profiler.py: Failed to export CANN Profiling data. Error msg: Export CANN Profiling data failed! 'msprof' command not found!ERR01003 PROF not found\n\
         [2025-10-20 09:00:02] [ERROR] [66457] profiler.py: Task [CANNExportParser] run failed.\n\
         [2025-10-20 09:00:02] [ERROR] [66457] profiler.py: Task [KernelViewParser] run failed.\n",
    );
    check_message(
        &report,
        Code::ParserRootCause,
        "CANN environment not loaded: source set_env.sh",
    );
    check_next_action(&report, Code::ParserRootCause, "set_env.sh");
    assert!(
        report
            .findings
            .iter()
            .filter(|f| f.code == Code::ParserRootCause)
            .all(|f| !f.next_action.contains("local disk")),
        "{report:#?}"
    );
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.code == Code::OutputFilesystem),
        "{report:#?}"
    );
}

#[test]
fn texts_of_the_older_builds_are_read() {
    // 2.5.1: no brackets, `msprof command not found!` without quotes.
    let (_tmp, report) = stdout_report(
        Some("2.5.1"),
        |_| {},
        "2025-04-01 10:00:00 [ERROR] [911684] profiler.py: Export CANN Profiling data failed! msprof command not found!ERR01003\n\
         2025-04-01 10:00:00 [ERROR] [911684] profiler.py: Task [CANNExportParser] run failed.\n",
    );
    check_message(
        &report,
        Code::ParserRootCause,
        "CANN environment not loaded",
    );

    // 2.1.0.post10: internal task names, `has not run successfully`, and the bare
    // `Profiling data parsing failed.` warning; no torch_npu_version recorded.
    let (_tmp, report) = stdout_report(
        None,
        |_| {},
        "2025-01-10 10:00:00 [ERROR] [4242] profiler.py: Task export has not run successfully.\n\
         2025-01-10 10:00:00 [ERROR] [4242] profiler.py: Task timeline has not run successfully.\n\
         2025-01-10 10:00:00 [ERROR] [4242] profiler.py: Task kernel has not run successfully.\n\
         2025-01-10 10:00:01 [WARNING] [4242] profiler.py: Profiling data parsing failed.\n",
    );
    check_message(
        &report,
        Code::ParserFailed,
        "root failing task(s): CANNExportParser (then, as a consequence: CANNTimelineParser, KernelViewParser)",
    );
    check_message(
        &report,
        Code::ParserRootCause,
        "Profiling data parsing failed.",
    );
}

#[test]
fn kernel_view_after_relation_after_the_timeline_is_one_root() {
    let (_tmp, report) = stdout_report(
        None,
        |_| {},
        "[2025-10-20 09:00:02] [ERROR] [7] profiler.py: Task [CANNTimelineParser] run failed.\n\
         [2025-10-20 09:00:02] [ERROR] [7] profiler.py: Task [RelationParser] run failed.\n\
         [2025-10-20 09:00:02] [ERROR] [7] profiler.py: Task [KernelViewParser] run failed.\n",
    );
    check_message(
        &report,
        Code::ParserFailed,
        "root failing task(s): CANNTimelineParser (then, as a consequence: RelationParser, KernelViewParser)",
    );
}

#[test]
fn swallowed_calls_and_missing_flow_events_are_explained() {
    let (_tmp, report) = stdout_report(
        None,
        |_| {},
        "[2025-10-20 09:00:01] [ERROR] [7] profiler.py: Call stop failed. Exception: [Errno 28] No space left on device\n\
         [2025-10-20 09:00:02] [ERROR] [7] profiler.py: Failed to get acl to npu flow events. For details, please check the logs at: /res/prof/decode/x_ascend_pt/logs\n",
    );
    check_message(
        &report,
        Code::ParserRootCause,
        "a profiler call failed and torch_npu swallowed the exception",
    );
    check_message(&report, Code::AclFlowMissing, "why Step Id is missing");
}

#[test]
fn chown_messages_name_the_toolkit_or_the_output_by_build() {
    // 2.7.1: a PROF_* owned by another user makes the export raise (an error, logged by the
    // export's logger.error); the toolkit message names the ascend-toolkit directory.
    let (tmp, run) = fresh_run();
    set_build(&run, "2.7.1");
    run.write_log(
        "profiler_20251020090000_11_CANNExportParser.log",
        "[2025-10-20-09:00:01.100] [ERROR] [AscendProfiler_CANNExportParser:75] Failed to export CANN Profiling data, error: Path '/data/res/x_ascend_pt/PROF_000001_1_ABC' owner is neither root nor the current user. Please execute 'chown -R $(id -un) '/data/res/x_ascend_pt/PROF_000001_1_ABC' '.\n\
         [2025-10-20-09:00:01.200] [ERROR] [AscendProfiler_CANNExportParser:75] Failed to export CANN Profiling data, error: The '/usr/local/Ascend/ascend-toolkit/latest/bin/msprof' path and current owner have inconsistent permissions.please execute 'chown -R alice /usr/local/Ascend/ascend-toolkit'ERR01004\n",
    );
    let report = run_verify(&run.dir, |_| {});
    let output = report
        .findings
        .iter()
        .find(|f| f.code == Code::OutputOwner)
        .unwrap_or_else(|| panic!("{report:#?}"));
    assert_eq!(output.severity, Severity::Error);
    assert!(
        output
            .next_action
            .contains("chown -R \"$(id -un)\" /data/res/x_ascend_pt/PROF_000001_1_ABC"),
        "{}",
        output.next_action
    );
    let toolkit = report
        .findings
        .iter()
        .find(|f| f.code == Code::ToolkitOwner)
        .unwrap_or_else(|| panic!("{report:#?}"));
    assert!(
        toolkit
            .next_action
            .contains("chown -R \"$(id -un)\" /usr/local/Ascend/ascend-toolkit;"),
        "{}",
        toolkit.next_action
    );
    drop(tmp);

    // 2.14.0 only warns about the output's owner and goes on.
    let (_tmp, run) = fresh_run();
    set_build(&run, "2.14.0");
    run.write("analyse.done", "");
    run.write_log(
        "profiler_20261001120000_11_CANNExportParser.log",
        "[2026-10-01-12:00:01.100] [WARNING] [AscendProfiler_CANNExportParser:122] The owner of path '/data/res/x_ascend_pt/PROF_000001_1_ABC' is neither root nor the current user. Please run: chown -R $(id -un) '/data/res/x_ascend_pt/PROF_000001_1_ABC'.\n",
    );
    let report = run_verify(&run.dir, |_| {});
    check_codes(&report, &[(Severity::Warning, Code::OutputOwner)]);
    check_message(&report, Code::OutputOwner, "torch_npu 2.14.0 only warns");
}

fn fresh_run() -> (tempfile::TempDir, Run) {
    let tmp = tempdir();
    let run = real_run(
        &tmp.path().join("node1_4000_20261001120000123_ascend_pt"),
        0,
    );
    (tmp, run)
}

/// Removes the files only device data (kernels, steps, communication) produces.
fn remove_device_files(run: &Run) {
    for name in [
        "kernel_details.csv",
        "step_trace_time.csv",
        "op_statistic.csv",
        "api_statistic.csv",
        "communication.json",
        "communication_matrix.json",
    ] {
        run.remove(name);
    }
}

#[test]
fn level_none_is_judged_by_what_level_none_writes() {
    let (_tmp, run) = fresh_run();
    run.edit_info(|v| {
        v["config"]["experimental_config"]["_profiler_level"] = serde_json::json!("Level_none")
    });
    remove_device_files(&run);
    let report = run_verify(&run.dir, |o| o.world_size = Some(1));
    check_codes(&report, &[]);
}

/// A real Level2 run whose window recorded no kernels: raw data, no kernel files, a complete
/// trace without a device timeline, and a clean 2.14.0 parser log.
fn empty_window_run() -> (tempfile::TempDir, Run) {
    let (tmp, run) = fresh_run();
    set_build(&run, "2.14.0");
    remove_device_files(&run);
    let trace = read_sample(&trace_view());
    let trace = without_process_name(&trace, "Ascend Hardware");
    run.write("trace_view.json", trace);
    run.write("analyse.done", "");
    let _ = fs::create_dir_all(
        run.dir
            .join("PROF_000001_20261001120000000_ABCDEFGHIJKLMNOP/device_0/data"),
    );
    run.write_log(
        "profiler_20261001120000_4300_ProfilingParser.log",
        "[2026-10-01-12:00:00.050] [INFO] [AscendProfiler_ProfilingParser:56] Profiler logger initialized\n\
         [2026-10-01-12:00:09.002] [INFO] [AscendProfiler_ProfilingParser:478] export                    | SUB_PROCESS     | Succeed    | 3.354s | deps: None\n",
    );
    (tmp, run)
}

#[test]
fn an_empty_window_is_no_kernels_recorded_not_a_parser_failure() {
    let (_tmp, run) = empty_window_run();
    let report = run_verify(&run.dir, |o| o.world_size = Some(1));
    check_codes(&report, &[(Severity::Warning, Code::NoKernelsInWindow)]);
    check_next_action(&report, Code::NoKernelsInWindow, "prof.step()");

    // The same files with stdout reporting failed parsers: a failure after all.
    let stdout = run.dir.join("job_stdout.txt");
    fs::write(
        &stdout,
        "[2026-10-01 12:00:02] [ERROR] [4300] profiler.py: Task [CANNTimelineParser] run failed.\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let report = run_verify(&run.dir, |o| {
        o.world_size = Some(1);
        o.logs = vec![stdout.clone()];
    });
    check_codes(
        &report,
        &[
            (Severity::Error, Code::ParserFailed),
            (Severity::Error, Code::ArtifactMissing),
        ],
    );
}

#[test]
fn captured_stdout_is_read_from_the_request() {
    let (_tmp, run) = fresh_run();
    let stdout: PathBuf = run.dir.join("stdout.log");
    fs::write(
        &stdout,
        "[2026-10-01 12:00:02] [ERROR] [4300] profiler.py: Task [TraceStepTimeParser] run failed.\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let report = run_verify(&run.dir, |o| o.logs = vec![stdout.clone()]);
    let f = report
        .findings
        .iter()
        .find(|f| f.code == Code::ParserFailed)
        .unwrap_or_else(|| panic!("{report:#?}"));
    assert_eq!(
        f.evidence.path.as_deref(),
        Some(stdout.to_str().unwrap_or_default())
    );
    assert!(f.message.contains("TraceStepTimeParser"), "{}", f.message);
}

#[test]
fn analyse_done_is_judged_by_build() {
    // 2.14.0 writes analyse.done when any parse ends: none means the parse did not end.
    let (_tmp, run) = fresh_run();
    set_build(&run, "2.14.0");
    let report = run_verify(&run.dir, |_| {});
    check_codes(&report, &[(Severity::Warning, Code::AnalyseDoneMissing)]);
    // Plain 2.7.1 (a 2025 build) never writes it; 2.7.1.post11 (2026) does.
    set_build(&run, "2.7.1");
    check_codes(&run_verify(&run.dir, |_| {}), &[]);
    set_build(&run, "2.7.1.post11");
    check_codes(
        &run_verify(&run.dir, |_| {}),
        &[(Severity::Warning, Code::AnalyseDoneMissing)],
    );
    // No version recorded (2.1.0.post10): nothing is claimed.
    run.edit_info(|v| {
        if let Some(o) = v.as_object_mut() {
            o.remove("torch_npu_version");
            o.remove("cann_version");
        }
    });
    check_codes(&run_verify(&run.dir, |_| {}), &[]);
}

#[test]
fn rotated_parser_logs_are_read() {
    let (_tmp, run) = fresh_run();
    set_build(&run, "2.7.1");
    run.write_log(
        "profiler_20251020090000_11_KernelViewParser.log.1",
        "[2025-10-20-09:00:01.100] [ERROR] [AscendProfiler_KernelViewParser:44] Failed to generate kernel_details.csv, error: [Errno 5] Input/output error\n",
    );
    let report = run_verify(&run.dir, |_| {});
    check_message(
        &report,
        Code::ParserFailed,
        "failed to generate: kernel_details.csv",
    );
}
