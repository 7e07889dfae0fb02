//! CLI tests of `npuprof lint`: human and JSON output, exit codes, the example repository.

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
fn recipes_mini_has_only_the_intended_define_profiler_finding() {
    // model_runner.py's unused define_profiler() really has no experimental_config (a warning:
    // exit 0). The live profiler (create_profiler, stepped by ProfilerManager elsewhere) is clean.
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
