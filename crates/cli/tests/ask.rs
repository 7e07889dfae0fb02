//! Asking first, through a pseudo-terminal (`script` from util-linux allocates it): on a
//! terminal without `--phase`/`--decode-active`, `patch` asks before it changes anything, then
//! prints the equivalent command; never for a dry run, off a terminal, or with `CI` set.

mod support;

use std::io::Write as _;
use std::process::{Command, Stdio};

use insta_cmd::get_cargo_bin;

/// Runs `npuprof <args>` in `dir` on a pseudo-terminal, typing `answers`; returns its output.
fn on_a_terminal(dir: &std::path::Path, args: &str, answers: &str) -> String {
    on_a_terminal_with(dir, args, answers, None)
}

/// [`on_a_terminal`] with `CI` set to `ci` (unset when `None`).
fn on_a_terminal_with(
    dir: &std::path::Path,
    args: &str,
    answers: &str,
    ci: Option<&str>,
) -> String {
    let command = format!("{} {args}", get_cargo_bin("npuprof").display());
    let mut script = Command::new("script");
    match ci {
        Some(value) => script.env("CI", value),
        None => script.env_remove("CI"),
    };
    let mut child = script
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("`script` (util-linux) runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(answers.as_bytes())
        .expect("answers");
    let output = child.wait_with_output().expect("script finishes");
    String::from_utf8_lossy(&output.stdout).replace('\r', "")
}

#[test]
fn patch_asks_for_phase_and_steps_on_a_terminal() {
    let repo = support::copy_example("recipes-mini");
    let out = on_a_terminal(
        repo.path(),
        "patch --model qwen-mini --yaml dense.yaml",
        "2\n3\n",
    );
    assert!(out.contains("Which phase to profile?"), "{out}");
    assert!(out.contains("How many decode steps to record?"), "{out}");
    assert!(
        out.contains("equivalent command: npuprof patch --model qwen-mini --yaml dense.yaml --phase decode --decode-active 30"),
        "{out}"
    );
    assert!(out.contains("active=30"), "the answer is used: {out}");
    assert!(
        out.contains("replaced by FakeContextManager()"),
        "decode only: {out}"
    );
}

#[test]
fn the_whole_run_sizes_the_window_from_the_budget() {
    let repo = support::copy_example("recipes-mini");
    // decode_mtp.yaml: 32 decode forwards offline; skip_first 3 and one of margin leave 28.
    let out = on_a_terminal(
        repo.path(),
        "patch --model deepseek-mini --yaml decode_mtp.yaml --phase decode",
        "4\n",
    );
    assert!(out.contains("the whole run (28)"), "{out}");
    assert!(out.contains("--decode-active 28"), "{out}");
}

#[test]
fn never_asks_with_yes_json_or_ci() {
    let repo = support::copy_example("recipes-mini");
    for args in [
        "patch --model qwen-mini --yaml dense.yaml --dry-run",
        "patch --model qwen-mini --yaml dense.yaml --dry-run --yes",
        "patch --model qwen-mini --yaml dense.yaml --dry-run --json",
    ] {
        let out = on_a_terminal(repo.path(), args, "");
        assert!(!out.contains("Which phase"), "{args}: {out}");
    }
    let out = on_a_terminal_with(
        repo.path(),
        "patch --model qwen-mini --yaml dense.yaml --dry-run",
        "",
        Some("true"),
    );
    assert!(!out.contains("Which phase"), "CI=true: {out}");
    let piped = Command::new(get_cargo_bin("npuprof"))
        .args([
            "patch",
            "--model",
            "qwen-mini",
            "--yaml",
            "dense.yaml",
            "--dry-run",
        ])
        .current_dir(repo.path())
        .env_remove("CI")
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert_eq!(piped.status.code(), Some(1));
    assert!(!String::from_utf8_lossy(&piped.stderr).contains("Which phase"));
}
