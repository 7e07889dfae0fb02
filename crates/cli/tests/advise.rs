//! `npuprof advise` on the vendored real 2-rank run (`crates/summary/tests/data/real-2rank`):
//! terminal and JSON snapshots, exit codes (1 with findings, 0 without, 2 on errors).

#[path = "../../summary/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;

use common::{command_in, real_run};
use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

/// `npuprof advise <args>` run inside `dir`, without colour.
fn advise_in(dir: &Path, args: &[&str]) -> Command {
    command_in(&get_cargo_bin("npuprof"), dir, "advise", args)
}

/// The directory that holds the vendored run, so paths in the output read `real-2rank/…`.
fn data_dir() -> std::path::PathBuf {
    real_run().parent().expect("data dir").to_path_buf()
}

#[test]
fn terminal_advice_on_the_real_run() {
    assert_cmd_snapshot!(
        "advise_real_human",
        advise_in(&data_dir(), &["real-2rank", "--top", "3"])
    );
}

#[test]
fn json_advice_on_the_real_run() {
    assert_cmd_snapshot!(
        "advise_real_json",
        advise_in(
            &data_dir(),
            &["real-2rank", "--rank", "1", "--top", "1", "--json"]
        )
    );
}

/// A one-rank run in a temp directory with the real run's profiler_info and one quiet step
/// (all computing); its `ASCEND_PROFILER_OUTPUT` directory.
fn quiet_run() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = tmp.path().join("rank0_ascend_pt");
    let out = run.join("ASCEND_PROFILER_OUTPUT");
    std::fs::create_dir_all(&out).expect("mkdir");
    std::fs::copy(
        real_run().join("rank0_ascend_pt/profiler_info_0.json"),
        run.join("profiler_info_0.json"),
    )
    .expect("copy");
    std::fs::write(
        out.join("step_trace_time.csv"),
        "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free\n1,1000,0,0,0,10\n",
    )
    .expect("write");
    (tmp, out)
}

#[test]
fn no_findings_exit_0_and_errors_exit_2() {
    let (tmp, out) = quiet_run();
    // One static AI Core kernel, compute-bound.
    std::fs::write(
        out.join("kernel_details.csv"),
        "Step Id,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),aic_mac_ratio\n\
         1,mm,MatMulV2,static,AI_CORE,100.0\t,1000,0.9\n",
    )
    .expect("write");
    let done = advise_in(tmp.path(), &["."]).output().expect("run");
    assert_eq!(done.status.code(), Some(0), "{done:?}");
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert!(stdout.starts_with("no findings in 1 run(s)"), "{stdout}");
    // Without a path, advise reads `.`, as summary does.
    let here = advise_in(tmp.path(), &[]).output().expect("run");
    assert_eq!(here.status.code(), Some(0), "{here:?}");
    assert_eq!(here.stdout, done.stdout);
    // Information alone (a kernel bound by no pipe: `no-bound` is info) needs no action: exit 0.
    std::fs::write(
        out.join("kernel_details.csv"),
        "Step Id,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),aic_mac_ratio\n\
         1,mm,MatMulV2,static,AI_CORE,100.0\t,1000,0.3\n",
    )
    .expect("write");
    let info = advise_in(tmp.path(), &[".", "--json"])
        .output()
        .expect("run");
    let advice: serde_json::Value = serde_json::from_slice(&info.stdout).expect("JSON");
    let severities: Vec<&str> = advice["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["severity"].as_str())
        .collect();
    assert_eq!(severities, ["info"], "{advice}");
    assert_eq!(info.status.code(), Some(0), "{info:?}");
    let findings = advise_in(&data_dir(), &["real-2rank"])
        .output()
        .expect("run");
    assert_eq!(findings.status.code(), Some(1));
    let missing = advise_in(tmp.path(), &["nowhere"]).output().expect("run");
    assert_eq!(missing.status.code(), Some(2));
    let json = advise_in(tmp.path(), &["nowhere", "--json"])
        .output()
        .expect("run");
    let error: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON error");
    assert_eq!(error["schema_version"], 1, "{error}");
}

/// `--html FILE` writes the advice page (stdout keeps the terminal report) and says so on
/// stderr; summary's `--html` page holds the same findings, after the warnings.
#[test]
fn html_pages_hold_the_findings() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let page = tmp.path().join("advice.html");
    let plain = advise_in(&data_dir(), &["real-2rank"])
        .output()
        .expect("run");
    let done = advise_in(&data_dir(), &["real-2rank", "--html"])
        .arg(&page)
        .output()
        .expect("run");
    assert_eq!(done.status.code(), Some(1), "{done:?}");
    assert_eq!(done.stdout, plain.stdout, "stdout is the terminal report");
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(stderr.contains("npuprof: wrote "), "{stderr}");
    let advice = std::fs::read_to_string(&page).expect("the advice page");
    let json = advise_in(&data_dir(), &["real-2rank", "--json"])
        .output()
        .expect("run");
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let codes: Vec<String> = json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| format!("data-code=\"{}\"", f["code"].as_str().unwrap_or_default()))
        .collect();
    assert!(!codes.is_empty());
    let in_order = |html: &str| {
        let mut at = 0;
        for code in &codes {
            at += html[at..]
                .find(code.as_str())
                .unwrap_or_else(|| panic!("{code} missing or out of order"));
            at += code.len();
        }
    };
    assert!(advice.contains("<h1>npuprof advise</h1>"));
    in_order(&advice);
    let summary_page = tmp.path().join("summary.html");
    let summary = command_in(
        &get_cargo_bin("npuprof"),
        &data_dir(),
        "summary",
        &["real-2rank", "--html"],
    )
    .arg(&summary_page)
    .output()
    .expect("run");
    assert_eq!(summary.status.code(), Some(0), "{summary:?}");
    let summary = std::fs::read_to_string(&summary_page).expect("the summary page");
    let advice_at = summary
        .find("<section class=\"advice\"")
        .expect("an advice section in summary's page");
    let ranks_at = summary.find("<section class=\"ranks\"").expect("ranks");
    assert!(advice_at < ranks_at, "advice before the ranks");
    in_order(&summary);
}

/// A note longer than the report's 100 columns is wrapped at spaces, never cut mid-sentence.
#[test]
fn a_long_note_is_wrapped_whole() {
    let (tmp, _) = quiet_run();
    let done = advise_in(tmp.path(), &["."]).output().expect("run");
    let stdout = String::from_utf8_lossy(&done.stdout);
    let note = "note (run · rank 0): no ASCEND_PROFILER_OUTPUT/kernel_details.csv (no NPU \
                activity?): kernels not judged";
    assert!(note.chars().count() > 100, "the note must need wrapping");
    let joined = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(joined.contains(note), "{stdout}");
    assert!(!stdout.contains('…'), "{stdout}");
    for line in stdout.lines() {
        assert!(line.chars().count() <= 100, "{line:?}");
    }
}
