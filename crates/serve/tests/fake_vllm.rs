//! Runs the fake vLLM server's own Python test suite (`tests/fake_vllm/tests`), so that
//! `cargo test` checks each fact the fake emulates before the collect tests rely on it.

use std::path::Path;
use std::process::Command;

#[test]
fn fake_vllm_unittests_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let output = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "tests/fake_vllm/tests"])
        .current_dir(&root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 must be installed to run the fake vLLM tests");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "fake vLLM unit tests failed:\n{}\n{stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
    // unittest reports "Ran N tests" on stderr; make sure the whole suite ran.
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
        ran >= 20,
        "expected the full suite to run, got {ran} tests:\n{stderr}"
    );
}
