//! `npuprof breakdown`: the module tree of the vendored 2-rank AlexNet DDP run
//! (`crates/verify/tests/data/runs/msinsight-text-level1`, recorded with `with_modules`) and
//! the layers of the real PP2×DP2 training step's rank 0 (kernel_details.csv only): terminal
//! snapshots, the JSON contract, exit codes and error documents.

use std::path::{Path, PathBuf};
use std::process::Command;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

/// `npuprof breakdown <args>` run inside `dir`, without colour.
fn breakdown_in(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.current_dir(dir)
        .arg("breakdown")
        .args(args)
        .env("NO_COLOR", "1");
    cmd
}

/// The directory that holds the vendored runs, so paths in the output read
/// `msinsight-text-level1/…`.
fn runs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../verify/tests/data/runs")
}

/// A temp directory with one run directory holding the PP step's kernel table only.
fn pp_run() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    let output = tmp.path().join("rank0_ascend_pt/ASCEND_PROFILER_OUTPUT");
    std::fs::create_dir_all(&output).expect("mkdir");
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
            "../verify/tests/data/Ascend-msinsight/\
             test__st__level2__rank_0_ascend_pt__ASCEND_PROFILER_OUTPUT__kernel_details.csv",
        ),
        output.join("kernel_details.csv"),
    )
    .expect("copy");
    tmp
}

#[test]
fn terminal_module_tree_of_the_real_run() {
    assert_cmd_snapshot!(
        "breakdown_modules_human",
        breakdown_in(&runs_dir(), &["msinsight-text-level1", "--depth", "4"])
    );
}

#[test]
fn terminal_layers_of_the_real_pp_step() {
    let tmp = pp_run();
    assert_cmd_snapshot!("breakdown_layers_human", breakdown_in(tmp.path(), &["."]));
}

#[test]
fn json_follows_the_contract() {
    let out = breakdown_in(
        &runs_dir(),
        &["msinsight-text-level1", "--rank", "1", "--json"],
    )
    .output()
    .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["schema_version"], 1);
    let runs = json["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["rank"], 1);
    assert_eq!(run["method"], "modules");
    assert_eq!(run["confidence"], "exact");
    assert_eq!(run["dir"], "rank1_ascend_pt");
    let coverage = run["coverage"].as_f64().expect("coverage");
    assert!(coverage > 0.0 && coverage < 1.0);
    let conv = run["modules"]
        .as_array()
        .expect("modules")
        .iter()
        .find(|m| m["path"] == "/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_0")
        .expect("Conv2d_0");
    assert_eq!(conv["backward"], false);
    // msprof-analyze's value for rank 1 (see crates/breakdown/tests/modules.rs).
    assert!((conv["total_us"].as_f64().expect("total") - 400.808).abs() < 0.001);
    assert!(conv["self_us"].is_number());
    let ledger = &run["ledger"];
    let lines: u64 = ledger["unattributed"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| l["ps"].as_u64().expect("ps"))
        .sum();
    assert_eq!(
        ledger["owned_ps"].as_u64().expect("owned") + lines,
        ledger["total_ps"].as_u64().expect("total")
    );

    let tmp = pp_run();
    let out = breakdown_in(tmp.path(), &[".", "--json"])
        .output()
        .expect("runs");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let run = &json["runs"][0];
    assert_eq!(run["method"], "layers");
    assert_eq!(run["layers"]["count"], 56);
    let items = run["layers"]["items"].as_array().expect("items");
    assert_eq!(items.len(), 56);
    assert_eq!(items[0]["index"], 0);
    assert_eq!(items[0]["kind"], 0);
    assert_eq!(items[0]["first_kernel"], 7);
    assert!(items[0]["median_us"].is_number());
    assert!(run["layers"]["outliers"].is_array());
}

#[test]
fn errors_exit_2_with_an_error_document() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = breakdown_in(tmp.path(), &["missing", "--json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["ok"], false);
    assert_eq!(json["error"]["code"], "not_found");

    let output = tmp.path().join("rank0_ascend_pt/ASCEND_PROFILER_OUTPUT");
    std::fs::create_dir_all(&output).expect("mkdir");
    std::fs::write(output.join("trace_view.json"), "[{\"ph\":\"X\",").expect("write");
    let out = breakdown_in(tmp.path(), &["."]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("trace_view.json"), "{stderr}");
    assert!(stderr.contains("cannot break it down"), "{stderr}");
}

#[test]
fn the_example_in_reports_md_is_what_the_command_prints() {
    let page = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/reports.md"),
    )
    .expect("docs/reports.md");
    let command = "npuprof breakdown msinsight-text-level1 --rank 0 --depth 2";
    let start = page
        .find(&format!("$ {command}\n"))
        .expect("the example in docs/reports.md");
    let body = &page[start + command.len() + 3..];
    let shown = &body[..body.find("```").expect("closing fence")];
    let args: Vec<&str> = command.split_whitespace().skip(2).collect();
    let out = breakdown_in(&runs_dir(), &args).output().expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        shown.trim_end()
    );
}

#[test]
fn html_page_holds_the_layer_strip_with_its_outliers() {
    let tmp = pp_run();
    let page = tmp.path().join("breakdown.html");
    let out = breakdown_in(tmp.path(), &[".", "--html", "breakdown.html"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote breakdown.html"));
    let html = std::fs::read_to_string(page).expect("the page");
    assert_eq!(html.matches("data-layer=").count(), 56);
    assert_eq!(html.matches("<rect class=\"outlier\"").count(), 2);
    assert!(html.contains("data-layer=\"0\"") && !html.contains("<script"));
}

#[test]
fn terminal_waterfall_between_two_runs() {
    assert_cmd_snapshot!(
        "breakdown_waterfall_human",
        breakdown_in(
            &runs_dir().join("msinsight-text-level1"),
            &["rank0_ascend_pt", "rank1_ascend_pt", "--depth", "3"]
        )
    );
    let out = breakdown_in(
        &runs_dir().join("msinsight-text-level1"),
        &["rank0_ascend_pt", "rank1_ascend_pt", "--json"],
    )
    .output()
    .expect("runs");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["schema_version"], 1);
    let pair = &json["pairs"][0];
    assert_eq!(
        (pair["rank"].as_u64(), pair["new_rank"].as_u64()),
        (Some(0), Some(1))
    );
    let sum: f64 = pair["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["delta_us"].as_f64().expect("delta"))
        .sum();
    let total = pair["new_us"].as_f64().expect("new") - pair["base_us"].as_f64().expect("base");
    assert!((sum - total).abs() < 1e-6);
    // --html is for one profile.
    let out = breakdown_in(&runs_dir(), &["a", "b", "--html", "x.html"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

/// The skill's files vendored in the breakdown crate for the PP step, copied into `dir`.
const SKILL_FILES: [&str; 2] = ["pp_structure_spec.json", "pp-dense-28l_spec.json"];

/// Copies [`SKILL_FILES`] into `tmp`.
fn copy_skill_files(tmp: &Path) {
    for name in SKILL_FILES {
        std::fs::copy(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../breakdown/tests/data/skill")
                .join(name),
            tmp.join(name),
        )
        .expect("copy");
    }
}

/// `--structure`/`--rules` of the PP step (the files copied into `tmp`), with `more`.
fn pp_with_skill(tmp: &Path, more: &[&str]) -> Command {
    copy_skill_files(tmp);
    let mut args = vec![
        ".",
        "--structure",
        SKILL_FILES[0],
        "--rules",
        SKILL_FILES[1],
    ];
    args.extend_from_slice(more);
    breakdown_in(tmp, &args)
}

#[test]
fn terminal_breakdown_by_the_skills_files() {
    let tmp = pp_run();
    assert_cmd_snapshot!("breakdown_skill_human", pp_with_skill(tmp.path(), &[]));
}

#[test]
fn json_and_html_hold_the_skills_breakdown() {
    let tmp = pp_run();
    let out = pp_with_skill(tmp.path(), &["--json", "--html", "page.html"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let by = &json["runs"][0]["structure"];
    assert_eq!(by["layers_declared"], 56);
    assert_eq!(by["outlier"]["method"], "iqr");
    let step = &by["steps"][0];
    assert_eq!(step["step"], 13);
    let attn = &step["sections"][0];
    assert_eq!(attn["component"], "attn");
    assert_eq!(attn["instances"][0]["first_kernel"], 7);
    assert_eq!(attn["clusters"][4]["cluster"], "flash_attn");
    assert_eq!(
        attn["total"]["per_instance_us"].as_array().map(Vec::len),
        Some(28)
    );
    assert_eq!(by["summary"][3]["rows"][9]["name"], "TOTAL");
    let html = std::fs::read_to_string(tmp.path().join("page.html")).expect("the page");
    assert_eq!(html.matches("<table data-component=").count(), 4);
    // Without --structure the section is absent.
    let out = breakdown_in(tmp.path(), &[".", "--json"])
        .output()
        .expect("runs");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(json["runs"][0].get("structure").is_none());
}

#[test]
fn a_bad_skill_file_is_an_error_naming_the_field() {
    let tmp = pp_run();
    std::fs::write(
        tmp.path().join("rules.json"),
        r#"{"component_clusters": {"attn": [{"cluster": "a", "rules": [{"op_name_regex": "("}]}]}}"#,
    )
    .expect("write");
    copy_skill_files(tmp.path());
    let out = breakdown_in(
        tmp.path(),
        &[
            ".",
            "--structure",
            SKILL_FILES[0],
            "--rules",
            "rules.json",
            "--json",
        ],
    )
    .output()
    .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["error"]["code"], "invalid_input");
    let message = json["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            "--rules rules.json: component_clusters.attn[0].rules[0].op_name_regex: not a usable regex"
        ),
        "{message}"
    );
    let out = breakdown_in(tmp.path(), &[".", "--structure", "none.json", "--json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["error"]["code"], "not_found");
    let out = breakdown_in(tmp.path(), &[".", "--rules", "rules.json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}
