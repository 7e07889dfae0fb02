//! CLI tests of `npuprof lint`: human and JSON output, exit codes, the example repository,
//! `--diff` and `--fix` (run under the fake torch_npu, then reverted).

use std::process::Command;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

mod support;
use support::workspace_root;

/// `npuprof lint <args>` run from the workspace root (so paths print relative).
fn lint(args: &[&str]) -> Command {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.current_dir(workspace_root())
        .arg("lint")
        .args(args)
        .env("NO_COLOR", "1");
    cmd
}

#[test]
fn recipes_mini_warns_of_aicore_none_only() {
    // The model profilers are configured (Level1 + PipeUtilization, a trace handler); the
    // windows are stepped through attributes elsewhere, so their counts are not checked. The
    // DiT pipeline's Level1 + AiCoreNone collects no pipe metrics on the 2026 builds (NPL003).
    // The number of files depends on what else the example grows; the findings do not.
    insta::with_settings!({ filters => vec![(r"\(\d+ file\(s\) checked\)", "([N] file(s) checked)")] }, {
        assert_cmd_snapshot!(lint(&["examples/recipes-mini"]));
    });
}

#[test]
fn error_findings_exit_1_with_fix_lines() {
    assert_cmd_snapshot!(lint(&[
        "crates/lint/tests/fixtures/npl010_window_not_closed.py"
    ]));
}

#[test]
fn json_output() {
    assert_cmd_snapshot!(lint(&[
        "--json",
        "crates/lint/tests/fixtures/npl013_loop_without_step.py"
    ]));
}

#[test]
fn correct_template_is_clean() {
    assert_cmd_snapshot!(lint(&["crates/lint/tests/fixtures/good_template.py"]));
}

#[test]
fn missing_path_exits_2() {
    assert_cmd_snapshot!(lint(&["no/such/dir"]));
}

/// A temporary directory holding a copy of one corpus fixture of the lint crate.
fn corpus_copy(fixture: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(
        workspace_root()
            .join("crates/lint/tests/corpus")
            .join(fixture),
        dir.path().join(fixture),
    )
    .expect("copy fixture");
    dir
}

/// `npuprof lint <args>` run inside `dir`.
fn lint_in(dir: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.current_dir(dir)
        .arg("lint")
        .args(args)
        .env("NO_COLOR", "1");
    cmd
}

/// Runs the fixture's `profile_decode` under the fake torch_npu; returns its stdout + stderr.
fn run_under_fake_torch_npu(dir: &std::path::Path, module: &str) -> String {
    let driver = format!(
        "import {module} as m\nclass Engine:\n    def decode_step(self):\n        pass\nm.profile_decode(Engine())\n"
    );
    let out = Command::new("python3")
        .current_dir(dir)
        .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
        .args(["-c", &driver])
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{out:?}");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn diff_shows_the_mechanical_fix_and_changes_nothing() {
    let dir = corpus_copy("old_docs_max_steps_is_active.py");
    let before = std::fs::read(dir.path().join("old_docs_max_steps_is_active.py")).expect("read");
    assert_cmd_snapshot!(lint_in(dir.path(), &["--diff", "."]));
    let after = std::fs::read(dir.path().join("old_docs_max_steps_is_active.py")).expect("read");
    assert_eq!(before, after);
}

#[test]
fn fix_closes_the_window_under_torch_npu_and_revert_restores_the_file() {
    let dir = corpus_copy("old_docs_max_steps_is_active.py");
    let file = dir.path().join("old_docs_max_steps_is_active.py");
    let original = std::fs::read(&file).expect("read");
    let warning = "Incorrect schedule: Stop profiler while current state is RECORD";
    assert!(
        run_under_fake_torch_npu(dir.path(), "old_docs_max_steps_is_active").contains(warning),
        "the unfixed script stops in RECORD"
    );
    assert_cmd_snapshot!(lint_in(dir.path(), &["--fix", "."]));
    let output = run_under_fake_torch_npu(dir.path(), "old_docs_max_steps_is_active");
    assert!(!output.contains("Incorrect schedule"), "{output}");
    let revert = Command::new(get_cargo_bin("npuprof"))
        .current_dir(dir.path())
        .arg("revert")
        .output()
        .expect("revert runs");
    assert!(revert.status.success(), "{revert:?}");
    assert_eq!(std::fs::read(&file).expect("read"), original);
}

#[test]
fn fix_refuses_a_file_outside_the_repository() {
    let dir = corpus_copy("old_docs_max_steps_is_active.py");
    let repo = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("old_docs_max_steps_is_active.py");
    let original = std::fs::read(&file).expect("read");
    let out = lint_in(repo.path(), &["--fix", file.to_str().expect("utf-8 path")])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is outside the repository"), "{stderr}");
    assert_eq!(std::fs::read(&file).expect("read"), original);
}
