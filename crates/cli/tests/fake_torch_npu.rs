//! Runs the fake torch_npu's own Python test suite (`tests/fake_torch_npu/tests`),
//! so `cargo test` checks the fake against the real samples and torch_npu's
//! schedule arithmetic before the end-to-end tests rely on it.

use std::process::Command;

mod support;
use support::workspace_root;

#[test]
fn fake_torch_npu_unittests_pass() {
    let output = Command::new("python3")
        .args([
            "-m",
            "unittest",
            "discover",
            "-s",
            "tests/fake_torch_npu/tests",
        ])
        .current_dir(workspace_root())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 must be installed to run the fake torch_npu tests");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "fake torch_npu unit tests failed:\n{}\n{stderr}",
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
        ran >= 30,
        "expected the full suite to run, got {ran} tests:\n{stderr}"
    );
}
