//! Failures under `--json`: every command that has `--json` prints the error document
//! `{"schema_version", "ok": false, "error": {"code", "message", "hint"}}` on stdout and exits 2;
//! a reader that closes the pipe early ends the output quietly.

use std::fs;
use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};
use serde_json::Value;

mod support;
use support::workspace_root;

/// `npuprof <args>` run from the workspace root, without colour.
fn npuprof(args: &[&str]) -> Command {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.current_dir(workspace_root())
        .env("NO_COLOR", "1")
        .args(args);
    cmd
}

/// Checks that `args` fails with exit 2 and the error document with `code` on stdout, and the
/// human message on stderr.
fn check_json_error(args: &[&str], code: &str) {
    let output = npuprof(args).output().expect("run npuprof");
    let shown = args.join(" ");
    assert_eq!(
        output.status.code(),
        Some(2),
        "`npuprof {shown}` must exit 2"
    );
    let document = json(&output, &shown);
    let mut keys: Vec<&str> = document
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["error", "ok", "schema_version"], "`npuprof {shown}`");
    assert_eq!(document["schema_version"], 1, "`npuprof {shown}`");
    assert_eq!(document["ok"], false, "`npuprof {shown}`");
    let error = &document["error"];
    assert_eq!(error["code"], code, "`npuprof {shown}`: {error}");
    for field in ["message", "hint"] {
        assert!(
            error[field].as_str().is_some_and(|text| !text.is_empty()),
            "`npuprof {shown}`: error.{field} must be a non-empty string: {error}"
        );
    }
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("error"),
        "`npuprof {shown}`: the message must also be on stderr"
    );
}

fn json(output: &Output, shown: &str) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "`npuprof {shown}`: stdout is not JSON ({err}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[test]
fn route_error() {
    check_json_error(&["route", "no-such-dir", "--json"], "not_found");
    check_json_error(&["route", "Cargo.toml", "--json"], "invalid_input");
}

#[test]
fn plan_error() {
    check_json_error(&["plan", "--config", "no-such.yaml", "--json"], "not_found");
}

#[test]
fn patch_error() {
    check_json_error(
        &[
            "patch",
            "--repo",
            "examples/recipes-mini",
            "--model",
            "deepseek-mini",
            "--yaml",
            "no-such.yaml",
            "--json",
        ],
        // A run config that is not there is not found (the message lists the ones there are).
        "not_found",
    );
}

#[test]
fn inject_error() {
    check_json_error(
        &[
            "inject",
            "--repo",
            "examples/plain-infer",
            "--entry",
            "no-such.py",
            "--json",
        ],
        "not_found",
    );
}

#[test]
fn lint_error() {
    check_json_error(&["lint", "no-such.py", "--json"], "not_found");
}

#[test]
fn verify_error() {
    check_json_error(&["verify", "no-such-dir", "--json"], "not_found");
    check_json_error(
        &["verify", "examples/recipes-mini", "--json"],
        "invalid_input",
    );
}

#[test]
fn relocate_error() {
    check_json_error(
        &[
            "relocate",
            "--repo",
            "no-such-dir",
            "--model",
            "m",
            "--json",
        ],
        "not_found",
    );
}

#[test]
fn collect_error() {
    check_json_error(
        &[
            "collect",
            "--repo",
            "no-such-dir",
            "--model",
            "m",
            "--yaml",
            "f.yaml",
            "--json",
        ],
        "not_found",
    );
}

#[test]
fn summary_error() {
    check_json_error(&["summary", "no-such-dir", "--json"], "not_found");
}

#[test]
fn compare_error() {
    check_json_error(
        &["compare", "no-such-dir", "no-such-dir-either", "--json"],
        "not_found",
    );
}

#[test]
fn status_error() {
    check_json_error(&["status", "--repo", "no-such-dir", "--json"], "not_found");
}

#[test]
fn revert_error() {
    check_json_error(&["revert", "--repo", "no-such-dir", "--json"], "not_found");
}

/// A command line clap rejects still gets the error document when it asks for JSON.
#[test]
fn usage_error() {
    check_json_error(&["route", "--no-such-flag", "--json"], "usage");
    check_json_error(&["plan", "--decode-active", "many", "--json"], "usage");
}

/// Without `--json`, stdout stays empty on failure.
#[test]
fn no_document_without_json() {
    let output = npuprof(&["route", "no-such-dir"]).output().expect("run");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty(), "stdout: {:?}", output.stdout);
}

/// The whole document, as an agent sees it.
#[test]
fn error_document() {
    assert_cmd_snapshot!(npuprof(&["route", "no-such-dir", "--json"]));
}

/// A repository whose `route --json` report is far larger than a pipe's buffer.
fn large_repository(root: &Path) {
    for index in 0..2000 {
        let dir = root.join(format!("pkg{index}"));
        fs::create_dir_all(&dir).expect("create dir");
        fs::write(
            dir.join("prof.py"),
            "import torch_npu\n\
             prof = torch_npu.profiler.profile(\n\
             \x20   schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=1, repeat=1),\n\
             \x20   on_trace_ready=torch_npu.profiler.tensorboard_trace_handler('./out'),\n\
             )\n",
        )
        .expect("write file");
    }
}

/// Reads a little of `args`'s stdout, closes the pipe, and returns how the command ended.
fn read_then_close(args: &[&str], dir: &Path) -> Output {
    let mut child = npuprof(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn npuprof");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0_u8; 10];
    stdout.read_exact(&mut first).expect("the first bytes");
    drop(stdout);
    child.wait_with_output().expect("wait")
}

/// `npuprof route --json | head -c 10`, and a long human report likewise: nothing about the
/// pipe on stderr, and the command's own exit code (route: 0; lint with warnings only: 0).
#[test]
fn closed_pipe_ends_quietly() {
    let repo = tempfile::tempdir().expect("temp dir");
    large_repository(repo.path());
    let cases: [(&[&str], bool); 2] = [(&["route", ".", "--json"], true), (&["lint", "."], false)];
    for (args, json_only) in cases {
        let shown = args.join(" ");
        let full = npuprof(args)
            .current_dir(repo.path())
            .output()
            .expect("run");
        assert!(
            full.stdout.len() > 1 << 19,
            "`npuprof {shown}` prints {} bytes: it must exceed any pipe buffer for this test to mean anything",
            full.stdout.len()
        );
        let output = read_then_close(args, repo.path());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stderr.contains("Broken pipe") && !stderr.contains("npuprof: error"),
            "`npuprof {shown}` with a closed pipe said: {stderr}"
        );
        if json_only {
            assert_eq!(stderr, "", "`npuprof {shown}` prints nothing on stderr");
        }
        assert_eq!(output.status.code(), Some(0), "`npuprof {shown}`");
    }
}

/// An error that quotes its OS error (`cannot open the repository `x`: No such file …`) says it
/// once, on stderr and in the document, not once more as its cause (issue 32).
#[test]
fn an_io_error_is_said_once() {
    let missing = workspace_root().join("no-such-repository");
    let missing = missing.to_str().expect("UTF-8");
    let output = npuprof(&["status", "--repo", missing, "--json"])
        .output()
        .expect("run npuprof");
    assert_eq!(output.status.code(), Some(2));
    let os_error = "No such file or directory";
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches(os_error).count(), 1, "{stderr}");
    let document = json(&output, "status --repo <missing> --json");
    let message = document["error"]["message"].as_str().expect("message");
    assert_eq!(message.matches(os_error).count(), 1, "{message}");
}
