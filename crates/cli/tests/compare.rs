//! `npuprof compare` on the vendored real run against copies changed by named
//! transformations: terminal and JSON snapshots, errors, width, and the HTML page in Chromium.

#[path = "../../summary/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;

use common::browser::{charts, chromium_or_skip, render};
use common::{Layout, command_in, real_copy, remove_type, run_dirs, slow_down_type, stdout_of};
use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

/// `npuprof compare <args>` run inside `dir`, without colour.
fn compare_in(dir: &Path, args: &[&str]) -> Command {
    command_in(&get_cargo_bin("npuprof"), dir, "compare", args)
}

/// `base/` = the real run; `new/` = the real run with MatMulV2 three times slower on both
/// ranks (and the step's computing time longer by as much). Returns the added µs per rank.
fn slower_matmul(root: &Path) -> Vec<f64> {
    for side in ["base", "new"] {
        let copy = real_copy(Layout::Flat);
        std::fs::rename(copy.path(), root.join(side)).expect("move copy");
    }
    run_dirs(&root.join("new"), Layout::Flat)
        .iter()
        .map(|(_, dir)| slow_down_type(dir, "MatMulV2", 3.0))
        .collect()
}

#[test]
fn terminal_report_names_the_slower_type() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let added = slower_matmul(tmp.path());
    assert_cmd_snapshot!(
        "slower_matmul_human",
        compare_in(tmp.path(), &["base", "new"])
    );
    let out = compare_in(tmp.path(), &["base", "new"])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    let per_step_ms = added.iter().sum::<f64>() / 2.0 / 1000.0;
    assert!(
        text.starts_with("run step 1.4% slower (+")
            && text.contains(&format!("+{per_step_ms:.2} ms in MatMulV2")),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
}

#[test]
fn rank_0_against_rank_1_of_the_real_run() {
    let data = common::real_run();
    let mut cmd = compare_in(&data, &["rank0_ascend_pt", "rank1_ascend_pt", "--top", "4"]);
    assert_cmd_snapshot!("real_rank0_vs_rank1_human", cmd);
    let text = stdout_of(&mut compare_in(
        &data,
        &["rank0_ascend_pt", "rank1_ascend_pt"],
    ));
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
}

#[test]
fn the_docs_example_is_real_output() {
    let command = "npuprof compare real-2rank/rank0_ascend_pt real-2rank/rank1_ascend_pt --top 4";
    let (args, want) = common::docs_example(command);
    let args: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let data = common::real_run();
    let parent = data.parent().expect("data dir");
    assert_eq!(stdout_of(&mut compare_in(parent, &args)), want);
}

#[test]
fn json_report_of_the_slower_run() {
    let tmp = tempfile::tempdir().expect("temp dir");
    slower_matmul(tmp.path());
    assert_cmd_snapshot!(
        "slower_matmul_json",
        compare_in(tmp.path(), &["base", "new", "--json"])
    );
}

#[test]
fn runs_without_a_shared_phase_exit_2() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let result = real_copy(Layout::ResultDir);
    let flat = real_copy(Layout::Flat);
    std::fs::rename(result.path(), tmp.path().join("result")).expect("move");
    std::fs::rename(flat.path(), tmp.path().join("flat")).expect("move");
    assert_cmd_snapshot!(
        "no_shared_phase",
        compare_in(tmp.path(), &["flat", "result"])
    );
    assert_cmd_snapshot!("missing_new", compare_in(tmp.path(), &["flat", "nope"]));
    // Both are read at once; the base's error is the one reported.
    assert_cmd_snapshot!("missing_both", compare_in(tmp.path(), &["gone", "nope"]));
}

/// `--phase` is checked against what the runs have, as in summary.
#[test]
fn an_unknown_phase_lists_the_phases_there_are() {
    let tmp = tempfile::tempdir().expect("temp dir");
    for side in ["base", "new"] {
        let copy = real_copy(Layout::ResultDir);
        std::fs::rename(copy.path(), tmp.path().join(side)).expect("move copy");
    }
    assert_cmd_snapshot!(
        "unknown_phase",
        compare_in(tmp.path(), &["base", "new", "--phase", "decod"])
    );
}

#[test]
fn html_page_renders_in_chromium() {
    let Some(chromium) = chromium_or_skip("compare::html_page_renders_in_chromium") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let added = slower_matmul(tmp.path());
    let page = tmp.path().join("compare.html");
    stdout_of(&mut compare_in(
        tmp.path(),
        &["base", "new", "--html", "compare.html"],
    ));
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("npuprof-html");
    let dom = render(&chromium, &page, &artifacts.join("compare-phone.png"));
    let charts = charts(&dom);
    let ids: Vec<&str> = charts.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["step", "type-deltas", "name-deltas"]);
    let per_step = added.iter().sum::<f64>() / 2.0;
    let step = &charts[0].1;
    let labels: Vec<&str> = step.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        ["base step", "new step", "base kernels", "new kernels"]
    );
    assert!((step[1].value - step[0].value - per_step).abs() < 1e-6);
    let types = &charts[1].1;
    assert_eq!(types.len(), 1);
    assert_eq!(types[0].label, "MatMulV2");
    assert!((types[0].value - per_step).abs() < 1e-6);
    assert_eq!(types[0].rects[0].0, "slower");
    assert!(dom.contains("run step 1.4% slower"));
}

/// compare takes summary's input forms: with `--repo/--model/--yaml`, the new run is that run
/// config's newest result directory (as `summary --model … --yaml …` reads it).
#[test]
fn the_new_run_may_be_a_run_configs_newest_result() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo = tmp.path().join("repo");
    copy_example_tree(&repo);
    let result = real_copy(Layout::ResultDir);
    let newest = repo.join("models/deepseek-mini/res/20260101/deepseek_mini_decode_mtp");
    std::fs::create_dir_all(newest.parent().expect("date dir")).expect("mkdir");
    std::fs::rename(result.path(), &newest).expect("move copy");
    for (_, dir) in run_dirs(&newest, Layout::ResultDir) {
        slow_down_type(&dir, "MatMulV2", 3.0);
    }
    let base = real_copy(Layout::ResultDir);
    let base = base.path().to_str().expect("UTF-8 temp path");
    let by_path = stdout_of(&mut compare_in(
        tmp.path(),
        &[
            base,
            "repo/models/deepseek-mini/res/20260101/deepseek_mini_decode_mtp",
        ],
    ));
    let by_config = stdout_of(&mut compare_in(
        tmp.path(),
        &[
            base,
            "--repo",
            "repo",
            "--model",
            "deepseek-mini",
            "--yaml",
            "decode_mtp.yaml",
        ],
    ));
    assert_eq!(by_config, by_path);
    assert!(
        by_path.starts_with("prefill step 1.4% slower") && by_path.contains("in MatMulV2"),
        "{by_path}"
    );
    // A NEW path and a run config at once are refused by the command line.
    let both = compare_in(
        tmp.path(),
        &[
            base, "repo", "--repo", "repo", "--model", "m", "--yaml", "f.yaml",
        ],
    )
    .output()
    .expect("run");
    assert_eq!(both.status.code(), Some(2), "{both:?}");
}

/// The bundled recipes example, copied to `to`.
fn copy_example_tree(to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/recipes-mini");
    let status = Command::new("cp")
        .arg("-R")
        .arg(&from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(status.success());
}

#[test]
fn removed_and_added_keys_are_marked_apart_from_faster_and_slower() {
    let tmp = tempfile::tempdir().expect("tempdir");
    slower_matmul(tmp.path());
    for (_, dir) in run_dirs(&tmp.path().join("new"), Layout::Flat) {
        remove_type(&dir, "Relu");
    }
    let text = stdout_of(&mut compare_in(tmp.path(), &["base", "new", "--top", "40"]));
    let line = |key: &str| {
        text.lines()
            .find(|l| l.ends_with(key))
            .unwrap_or_else(|| panic!("no {key}: {text}"))
            .to_owned()
    };
    assert!(line("  - Relu").contains("removed"), "{text}");
    assert!(line("  MatMulV2").contains("slower"), "{text}");
    let back = stdout_of(&mut compare_in(tmp.path(), &["new", "base", "--top", "40"]));
    assert!(
        back.lines()
            .any(|l| l.ends_with("  + Relu") && l.contains("added")),
        "{back}"
    );
}

/// A different profiler level is named before any delta in all three forms: the first line of
/// the terminal report, `warnings[]` of `--json`, and a warning above the first phase of the
/// HTML page.
#[test]
fn a_mismatch_is_named_before_any_delta_in_text_json_and_html() {
    let tmp = tempfile::tempdir().expect("temp dir");
    slower_matmul(tmp.path());
    for (_, dir) in run_dirs(&tmp.path().join("new"), Layout::Flat) {
        let info = dir.join(format!(
            "profiler_info_{}.json",
            dir.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("rank"))
                .and_then(|n| n.split('_').next())
                .expect("rank dir name")
        ));
        let text = std::fs::read_to_string(&info).expect("profiler_info");
        assert!(text.contains("\"Level1\""));
        std::fs::write(&info, text.replacen("\"Level1\"", "\"Level0\"", 1)).expect("write");
    }
    let page = tmp.path().join("page.html");
    let text = stdout_of(compare_in(tmp.path(), &["base", "new", "--html"]).arg(&page));
    assert!(
        text.starts_with(
            "warning[profiler-level]: profiler levels differ: base Level1, new Level0"
        ),
        "{text}"
    );
    let json = stdout_of(&mut compare_in(tmp.path(), &["base", "new", "--json"]));
    let json: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(json["warnings"][0]["code"], "profiler-level", "{json}");
    let html = std::fs::read_to_string(&page).expect("page");
    let warning = html
        .find("<p class=\"warning\" data-code=\"profiler-level\">")
        .expect("the warning in the page");
    let phase = html.find("<section class=\"phase\"").expect("a phase");
    assert!(warning < phase, "the warning comes before the deltas");
}

/// A planted 3× kernel in a faster step (the collectives got 30 ms faster): the headline says
/// the step is faster and still names the 3× slower MatMulV2, per rank as well.
#[test]
fn a_three_times_slower_kernel_is_named_in_a_faster_step() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let added = slower_matmul(tmp.path());
    for (_, dir) in run_dirs(&tmp.path().join("new"), Layout::Flat) {
        common::add_to_steps(&dir, "Communication(Not Overlapped)", -30_000.0);
    }
    assert!(added.iter().all(|a| *a > 0.0 && *a < 30_000.0), "{added:?}");
    let json = stdout_of(&mut compare_in(tmp.path(), &["base", "new", "--json"]));
    let json: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let verdict = json["phases"][0]["verdict"].as_str().unwrap_or_default();
    assert!(verdict.contains("faster"), "{verdict}");
    assert!(
        verdict.contains("yet +") && verdict.contains("MatMulV2"),
        "{verdict}"
    );
    let text = stdout_of(&mut compare_in(tmp.path(), &["base", "new"]));
    assert!(text.contains(verdict), "{text}");
}

/// compare reads the vendored db export (no text export) as summary does: rank 0 against
/// rank 1 gives, per step, the kernel times summary reads from the same databases.
#[test]
fn the_db_export_is_compared_with_summarys_numbers() {
    let data = common::db_run();
    let json = stdout_of(&mut compare_in(
        &data,
        &["rank0_ascend_pt", "rank1_ascend_pt", "--json"],
    ));
    let json: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let summary = |rank: &str| -> f64 {
        let text = stdout_of(&mut command_in(
            &get_cargo_bin("npuprof"),
            &data,
            "summary",
            &[rank, "--json"],
        ));
        let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let total = v["runs"][0]["kernels"]["total_us"]
            .as_f64()
            .expect("kernel time");
        let steps = v["runs"][0]["step_stats"]["count"].as_f64().expect("steps");
        total / steps
    };
    let kernel_time = &json["phases"][0]["kernel_time"];
    for (side, rank) in [
        ("base_us", "rank0_ascend_pt"),
        ("new_us", "rank1_ascend_pt"),
    ] {
        let got = kernel_time[side].as_f64().expect("kernel time");
        let want = summary(rank);
        assert!((got - want).abs() <= 1e-6 * want, "{side}: {got} vs {want}");
    }
}

/// A side whose profiler_info is a FIFO is compared without blocking, and compare says what it
/// could not read (`run-note`), as summary does, instead of nothing.
#[test]
fn compare_says_what_a_side_could_not_read() {
    let tmp = tempfile::tempdir().expect("tmp");
    let run = tmp.path().join("run/rank0_ascend_pt");
    common::alexnet_rank0_copy(&run);
    let info = run.join("profiler_info_0.json");
    std::fs::remove_file(&info).expect("rm");
    assert!(
        Command::new("mkfifo")
            .arg(&info)
            .status()
            .expect("mkfifo")
            .success()
    );
    let out = Command::new(get_cargo_bin("npuprof"))
        .current_dir(tmp.path())
        .args(["compare", "run", "run", "--json"])
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let notes: Vec<&str> = report["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter(|w| w["code"] == "run-note")
        .filter_map(|w| w["message"].as_str())
        .collect();
    assert_eq!(notes.len(), 2, "{}", report["warnings"]);
    assert!(notes.iter().all(|n| n.contains("FIFO")), "{notes:?}");
}
