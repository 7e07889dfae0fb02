//! `npuprof verify` on run directories assembled from the vendored real samples
//! and on every broken variant: human and JSON snapshots, exit codes.

// The shared fixtures build databases and rewrite CSVs: they need the dev-dependencies
// rusqlite and csv.
#[path = "../../verify/tests/common/mod.rs"]
mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::*;
use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

/// `npuprof verify <args>` run inside `dir` (paths in the output stay relative).
fn verify_in(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.current_dir(dir)
        .arg("verify")
        .args(args)
        .env("NO_COLOR", "1");
    cmd
}

/// Snapshot settings: the temp dir becomes `[TMP]`; the filesystem of the temp dir (which
/// differs between machines) becomes `[FS]`.
fn settings(tmp: &Path) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(&regex_escape(&tmp.display().to_string()), "[TMP]");
    s.add_filter(r"\(filesystem: [^)]*\)", "(filesystem: [FS])");
    s.add_filter(
        r"(the output filesystem is the likely cause|the filesystem looks local, but the evidence still matches the known bad-disk failure)",
        "[FS VERDICT]",
    );
    s
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
}

const RESULT: &str = "models/qwen/res/20260725/qwen_dense";

fn good(root: &Path) -> ResultDir {
    let res = ResultDir::new(root, "qwen", "20260725", "qwen_dense");
    res.add_run("prefill", 0);
    res.add_run("decode", 0);
    res.write_log(0, CLEAN_LOG);
    res
}

fn single_run(root: &Path) -> Run {
    real_run(&root.join("rank_0_ascend_pt"), 0)
}

#[test]
fn good_result_directory_exits_0() {
    let tmp = tempdir();
    good(tmp.path());
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!("good_human", verify_in(tmp.path(), &[RESULT]));
        assert_cmd_snapshot!("good_json", verify_in(tmp.path(), &[RESULT, "--json"]));
        // --model/--yaml picks the same (newest) result directory, named as the launcher names
        // it: <model_name>_<yaml stem>.
        let config = tmp.path().join("models/qwen/config");
        fs::create_dir_all(&config).unwrap_or_default();
        fs::write(
            config.join("dense.yaml"),
            "model_config:\n  model_name: qwen\n  enable_profiler: True\n",
        )
        .unwrap_or_default();
        assert_cmd_snapshot!(
            "good_model",
            verify_in(
                tmp.path(),
                &["--model", "qwen", "--yaml", "dense.yaml", "--repo", "."]
            )
        );
    });
}

#[test]
fn minimal_kernel_header_with_level2_recorded() {
    let tmp = tempdir();
    let run = single_run(tmp.path());
    run.write(
        "kernel_details.csv",
        fs::read(level0_kernel_details()).unwrap_or_default(),
    );
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(verify_in(tmp.path(), &["rank_0_ascend_pt"]));
    });
}

#[test]
fn minimal_kernel_header_without_profiler_info() {
    let tmp = tempdir();
    let run = single_run(tmp.path());
    run.write(
        "kernel_details.csv",
        fs::read(level0_kernel_details()).unwrap_or_default(),
    );
    let _ = fs::remove_file(run.info_path());
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(verify_in(tmp.path(), &["rank_0_ascend_pt"]));
    });
}

#[test]
fn trace_unterminated_after_host_phase() {
    let tmp = tempdir();
    single_run(tmp.path()).write("trace_view.json", trace_host_only());
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(
            "unterminated_human",
            verify_in(tmp.path(), &["rank_0_ascend_pt"])
        );
        assert_cmd_snapshot!(
            "unterminated_json",
            verify_in(tmp.path(), &["rank_0_ascend_pt", "--json"])
        );
    });
}

#[test]
fn trace_cut_mid_event() {
    let tmp = tempdir();
    single_run(tmp.path()).write("trace_view.json", common::trace_cut_mid_event());
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(verify_in(tmp.path(), &["rank_0_ascend_pt"]));
    });
}

#[test]
fn trace_trailing_comma_close() {
    let tmp = tempdir();
    single_run(tmp.path()).write("trace_view.json", trace_trailing_comma());
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(verify_in(tmp.path(), &["rank_0_ascend_pt"]));
    });
}

#[test]
fn trace_temp_leftover() {
    let tmp = tempdir();
    let run = single_run(tmp.path());
    run.remove("trace_view.json");
    run.write("trace_view_temp.json", trace_host_only());
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(verify_in(tmp.path(), &["rank_0_ascend_pt"]));
    });
}

#[test]
fn bad_output_disk() {
    let tmp = tempdir();
    let res = ResultDir::new(tmp.path(), "deepseek", "20260725", "ds_decode");
    let run = res.add_run("decode", 0);
    break_like_bad_disk(&run);
    run.write("analyse.done", "");
    res.write_log(0, ALL_PARSERS_FAILED_LOG);
    let dir = "models/deepseek/res/20260725/ds_decode";
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(
            "bad_disk_human",
            verify_in(tmp.path(), &[dir, "--phase", "decode"])
        );
        assert_cmd_snapshot!(
            "bad_disk_json",
            verify_in(tmp.path(), &[dir, "--phase", "decode", "--json"])
        );
    });
}

#[test]
fn parser_root_cause_and_schedule_warnings() {
    let tmp = tempdir();
    let res = good(tmp.path());
    res.write_log(
        0,
        "2025-06-13 10:13:28 [ERROR] [911684] profiler.py: Task [CANNExportParser] run failed.\n\
         2025-06-13 10:13:28 [ERROR] [911684] profiler.py: 'msprof' command not found\n\
         2025-06-13 10:13:29 [ERROR] [911684] profiler.py: Task [KernelViewParser] run failed.\n\
         [W] Incorrect schedule: Stop profiler while current state is RECORD which may result in incomplete parsed data.\n\
         [W] Stop profiler while current state is RECORD_AND_SAVE, perhaps the scheduling cycle has not yet completed.\n\
         [W] Path prof is not owned by the current user, please run chown -R to fix it.\n",
    );
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(verify_in(tmp.path(), &[RESULT]));
    });
}

#[test]
fn missing_phase_and_ranks() {
    let tmp = tempdir();
    let res = ResultDir::new(tmp.path(), "qwen", "20260725", "qwen_dense");
    res.add_run("decode", 0);
    res.add_run("decode", 2);
    for r in 0..4 {
        res.write_log(r, CLEAN_LOG);
    }
    res.write_log(
        0,
        "[W] Incorrect schedule: Stop profiler while current state is WARMUP which will result in empty parsed data.\n",
    );
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(verify_in(tmp.path(), &[RESULT]));
    });
}

/// A re-run left a second run directory of the same phase and rank: the rows carry the run
/// directories' names, which alone tell them apart.
#[test]
fn rows_of_a_rerun_name_their_run_directories() {
    let tmp = tempdir();
    let res = good(tmp.path());
    real_run(
        &res.dir
            .join("prof/decode/node1_4000_20260725180000123_ascend_pt"),
        0,
    );
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!("rerun_rows", verify_in(tmp.path(), &[RESULT]));
    });
}

#[test]
fn compilation_inside_the_window() {
    let tmp = tempdir();
    let run = single_run(tmp.path());
    run.write(
        "kernel_details.csv",
        kernel_details_with_steps(|i| (13 + (i % 4)).to_string()),
    );
    let header = fs::read_to_string(level2_output("step_trace_time.csv")).unwrap_or_default();
    let mut csv = format!("{}\n", header.lines().next().unwrap_or_default());
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
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(verify_in(
            tmp.path(),
            &["rank_0_ascend_pt", "--expect-active", "4"] // the older name of --decode-active, kept as a hidden alias
        ));
    });
}

#[test]
fn nothing_to_verify_exits_2() {
    let tmp = tempdir();
    fs::create_dir_all(tmp.path().join("empty")).unwrap_or_default();
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!("no_run_directory", verify_in(tmp.path(), &["empty"]));
        assert_cmd_snapshot!("missing_path", verify_in(tmp.path(), &["nope"]));
        assert_cmd_snapshot!(
            "model_without_results",
            verify_in(
                tmp.path(),
                &["--model", "nope", "--yaml", "x.yaml", "--repo", "."]
            )
        );
    });
}

/// `npuprof verify <node> --json` run in `root`, its stdout saved as `<node>.json`.
fn node_report(root: &Path, node: &str) {
    let out = verify_in(root, &[node, "--json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fs::write(root.join(format!("{node}.json")), out.stdout).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn merge_three_nodes_with_a_missing_and_a_duplicated_rank() {
    let tmp = tempdir();
    for (node, ranks) in [("a", [0, 1]), ("b", [2, 3]), ("c", [3, 5])] {
        node_of_real_run(tmp.path(), node, &ranks, 6);
        node_report(tmp.path(), node);
    }
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(
            "merge_human",
            verify_in(tmp.path(), &["--merge", "a.json", "b.json", "c.json"])
        );
        assert_cmd_snapshot!(
            "merge_json",
            verify_in(
                tmp.path(),
                &["--merge", "a.json", "b.json", "c.json", "--json"]
            )
        );
    });
}

#[test]
fn merge_refuses_what_is_not_a_report() {
    let tmp = tempdir();
    fs::write(tmp.path().join("x.json"), "{\"ok\": true}").unwrap_or_else(|e| panic!("{e}"));
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(
            "merge_not_a_report",
            verify_in(tmp.path(), &["--merge", "x.json"])
        );
    });
}

#[test]
fn one_rank_of_the_real_run_alone() {
    let tmp = tempdir();
    copy_real_run(tmp.path());
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(
            "real_rank1_alone",
            verify_in(tmp.path(), &["rank1_ascend_pt"])
        );
        assert_cmd_snapshot!(
            "real_rank1_with_ranks_2",
            verify_in(tmp.path(), &["rank1_ascend_pt", "--ranks", "2"])
        );
    });
}

#[test]
fn captured_stdout_given_with_log() {
    let tmp = tempdir();
    single_run(tmp.path());
    fs::write(
        tmp.path().join("job.out"),
        "[2026-10-01 12:00:02] [ERROR] [4300] profiler.py: Task [CANNTimelineParser] run failed.\n\
         [2026-10-01 12:00:02] [ERROR] [4300] profiler.py: Task [RelationParser] run failed.\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    fs::write(tmp.path().join("other.out"), CLEAN_LOG).unwrap_or_else(|e| panic!("{e}"));
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(
            "captured_log_human",
            verify_in(
                tmp.path(),
                &["rank_0_ascend_pt", "--log", "job.out", "--log", "other.out"]
            )
        );
        // A --log that is not a file is a usage error (exit 2), not a finding.
        assert_cmd_snapshot!(
            "captured_log_missing",
            verify_in(tmp.path(), &["rank_0_ascend_pt", "--log", "nope.out"])
        );
    });
}

#[test]
fn ranks_beyond_the_maximum_are_refused_before_anything_is_allocated() {
    let tmp = tempdir();
    copy_real_run(tmp.path());
    let huge = verify_in(tmp.path(), &["rank1_ascend_pt", "--ranks", "1000000000"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&huge.stderr);
    assert_eq!(huge.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("1..=65536"), "{stderr}");
    // The maximum itself works: rank 1 of 65536 present, the rest named missing.
    let most = verify_in(
        tmp.path(),
        &["rank1_ascend_pt", "--ranks", "65536", "--json"],
    )
    .output()
    .unwrap();
    assert_eq!(
        most.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&most.stderr)
    );
    // A report naming more ranks than that is refused by --merge.
    let report = verify_in(tmp.path(), &["rank1_ascend_pt", "--json"])
        .output()
        .unwrap();
    let mut json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    json["target"]["expected_ranks"] = serde_json::json!(1_000_000_000u32);
    fs::write(tmp.path().join("huge.json"), json.to_string()).unwrap();
    let merged = verify_in(tmp.path(), &["--merge", "huge.json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&merged.stderr);
    assert_eq!(merged.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("more than the 65536 npuprof handles"),
        "{stderr}"
    );
}

/// One cycle's run directory of a `repeat=2` run, verified alone, is judged as that cycle (ok);
/// the directory holding it is still a run missing its other cycle.
#[test]
fn one_cycles_directory_is_judged_as_that_cycle() {
    let tmp = tempdir();
    let run = tmp.path().join("prof/rank0_ascend_pt");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../verify/tests/data/runs/msinsight-text-level1/rank0_ascend_pt");
    copy_tree_writable(&source, &run);
    // Its schedule recorded twice (steps 50 and 61); this directory holds the second cycle.
    let info = run.join("profiler_info_0.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&info).unwrap()).unwrap();
    value["config"]["common_config"]["schedule"]["repeat"] = serde_json::json!(2);
    fs::write(&info, value.to_string()).unwrap();
    for name in ["kernel_details.csv", "step_trace_time.csv"] {
        let path = run.join("ASCEND_PROFILER_OUTPUT").join(name);
        let text = fs::read_to_string(&path).unwrap();
        let moved: Vec<String> = text
            .lines()
            .map(|l| {
                l.strip_prefix("50,")
                    .map_or_else(|| l.to_owned(), |rest| format!("61,{rest}"))
            })
            .collect();
        fs::write(&path, moved.join("\n") + "\n").unwrap();
    }
    let alone = verify_in(tmp.path(), &["prof/rank0_ascend_pt", "--json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&alone.stdout).unwrap();
    assert_eq!(alone.status.code(), Some(0), "{report}");
    let phase_dir = verify_in(tmp.path(), &["prof", "--json"]).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&phase_dir.stdout).unwrap();
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "cycle-missing"),
        "{report}"
    );
}

/// A db export (the vendored `db-level1`, MindStudio Insight's `test/data/pytorch/db/level1`)
/// records its steps in the profiler database's `STEP_TIME`: the table's steps column shows
/// them (step 50, the schedule's) instead of `-`.
#[test]
fn a_db_export_s_steps_are_shown_from_its_database() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../summary/tests/data");
    let out = verify_in(&data, &["db-level1"]).output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("-  "))
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    for row in rows {
        assert!(row.contains("50 in db (exp 50)"), "{text}");
    }
}
