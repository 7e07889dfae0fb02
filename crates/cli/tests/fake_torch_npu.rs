//! Runs the Python test suites of the fakes: the fake torch_npu's (`tests/fake_torch_npu/tests`)
//! and the fake vLLM server's (`tests/fake_vllm/tests`), so `cargo test` checks the fakes
//! against the real samples, torch_npu's schedule arithmetic and the facts of vLLM-Ascend
//! before the end-to-end tests rely on them.

use std::process::Command;

mod support;
use support::workspace_root;

/// Runs `python3 -m unittest discover -s <dir>` from the workspace; it must pass and run at
/// least `at_least` tests.
fn check_unittests(dir: &str, at_least: u32) {
    let output = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", dir])
        .current_dir(workspace_root())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 must be installed to run the fakes' tests");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{dir} failed:\n{}\n{stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
    // unittest reports "Ran N tests" on stderr; make sure some actually ran.
    let ran = stderr
        .lines()
        .find_map(|line| {
            line.strip_prefix("Ran ")?
                .split(' ')
                .next()?
                .parse::<u32>()
                .ok()
        })
        .unwrap_or(0);
    assert!(
        ran >= at_least,
        "expected the full suite to run, got {ran} tests:\n{stderr}"
    );
}

#[test]
fn fake_torch_npu_unittests_pass() {
    check_unittests("tests/fake_torch_npu/tests", 30);
}

#[test]
fn fake_vllm_unittests_pass() {
    check_unittests("tests/fake_vllm/tests", 20);
}
