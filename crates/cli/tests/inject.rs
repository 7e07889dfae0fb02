//! CLI tests of `npuprof inject` on a temp copy of examples/plain-infer: the dry-run diff of
//! every phase mode (and that it changes nothing and applies with `git apply`), writing through
//! the journal, the written harness linting clean and stepping exactly its budget under a stub
//! torch_npu, revert restoring the repository byte for byte, and refusals.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

mod support;
use support::{all_files, copy_example, shell_words};

const MODES: [&str; 4] = ["decode", "prefill", "both", "separate"];

fn manifest(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A temp copy of examples/plain-infer.
fn copy_plain_infer() -> tempfile::TempDir {
    copy_example("plain-infer")
}

fn npuprof(repo: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.current_dir(repo).args(args).env("NO_COLOR", "1");
    cmd
}

#[test]
fn dry_run_prints_a_new_file_diff_per_mode_and_changes_nothing() {
    for mode in MODES {
        let repo = copy_plain_infer();
        let before = all_files(repo.path());
        insta::with_settings!({ snapshot_suffix => mode }, {
            assert_cmd_snapshot!(npuprof(repo.path(), &["inject", "--entry", "infer.py", "--phase", mode, "--decode-active", "4", "--dry-run"]));
        });
        assert_eq!(
            all_files(repo.path()),
            before,
            "{mode}: a dry run changes nothing"
        );
    }
}

#[test]
fn dry_run_diff_applies_with_git_and_equals_what_inject_writes() {
    let Ok(git) = Command::new("git").arg("--version").output() else {
        return;
    };
    assert!(git.status.success());
    let previewed = copy_plain_infer();
    let dry = npuprof(
        previewed.path(),
        &[
            "inject",
            "--entry",
            "infer.py",
            "--phase",
            "both",
            "--dry-run",
        ],
    )
    .output()
    .expect("runs");
    assert_eq!(dry.status.code(), Some(1), "a dry run with changes exits 1");
    fs::write(previewed.path().join("change.diff"), &dry.stdout).expect("write diff");
    let applied = Command::new("git")
        .current_dir(previewed.path())
        .args(["apply", "change.diff"])
        .output()
        .expect("git apply");
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );

    let written = copy_plain_infer();
    let run = npuprof(
        written.path(),
        &["inject", "--entry", "infer.py", "--phase", "both"],
    )
    .output()
    .expect("runs");
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        fs::read(previewed.path().join("infer_profiled.py")).expect("applied"),
        fs::read(written.path().join("infer_profiled.py")).expect("written")
    );
}

/// Runs the harness with the stub torch_npu; returns (active, steps) per profiler.
fn run_with_stub(repo: &Path) -> Vec<(u64, u64)> {
    let log = repo.join("stub.jsonl");
    let output = Command::new("python3")
        .arg("infer_profiled.py")
        .current_dir(repo)
        .env(
            "PYTHONPATH",
            manifest("../patch/tests/inject_fixtures/stub_torch_npu"),
        )
        .env("NPUPROF_STUB_LOG", &log)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let records = fs::read_to_string(&log).expect("stub log");
    fs::remove_file(&log).expect("rm log");
    records
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("json");
            (
                v["schedule"]["active"].as_u64().expect("active"),
                v["steps"].as_u64().expect("steps"),
            )
        })
        .collect()
}

#[test]
fn inject_writes_a_clean_harness_that_steps_its_budget_and_revert_restores() {
    for mode in MODES {
        let repo = copy_plain_infer();
        let before = all_files(repo.path());
        let out = npuprof(
            repo.path(),
            &[
                "inject",
                "--entry",
                "infer.py",
                "--phase",
                mode,
                "--decode-active",
                "3",
            ],
        )
        .output()
        .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(repo.path().join("infer_profiled.py").is_file());

        let lint = npuprof(repo.path(), &["lint", "infer_profiled.py"])
            .output()
            .expect("lint runs");
        assert_eq!(lint.status.code(), Some(0), "{mode}");
        assert!(
            lint.stdout.is_empty(),
            "{mode}: the harness lints clean:\n{}",
            String::from_utf8_lossy(&lint.stdout)
        );

        let expected: Vec<(u64, u64)> = match mode {
            "decode" => vec![(3, 4)],
            "prefill" => vec![(1, 2)],
            "both" => vec![(4, 5)],
            _ => vec![(1, 2), (3, 4)],
        };
        assert_eq!(
            run_with_stub(repo.path()),
            expected,
            "{mode}: (active, step() calls) per profiler"
        );

        let again = npuprof(
            repo.path(),
            &[
                "inject",
                "--entry",
                "infer.py",
                "--phase",
                mode,
                "--decode-active",
                "3",
            ],
        )
        .output()
        .expect("runs");
        assert_eq!(
            again.status.code(),
            Some(0),
            "{mode}: injecting twice is a no-op"
        );

        let _ = fs::remove_dir_all(repo.path().join("__pycache__"));
        let revert = npuprof(repo.path(), &["revert"])
            .output()
            .expect("revert runs");
        assert_eq!(
            revert.status.code(),
            Some(0),
            "{mode}: {}",
            String::from_utf8_lossy(&revert.stderr)
        );
        assert_eq!(
            all_files(repo.path()),
            before,
            "{mode}: revert restores the repository byte for byte"
        );
    }
}

#[test]
fn json_report() {
    let repo = copy_plain_infer();
    assert_cmd_snapshot!(npuprof(
        repo.path(),
        &[
            "inject",
            "--entry",
            "infer.py",
            "--phase",
            "separate",
            "--decode-active",
            "2",
            "--dry-run",
            "--json"
        ]
    ));
}

#[test]
fn refuses_to_overwrite_a_file_it_did_not_create() {
    let repo = copy_plain_infer();
    let before = all_files(repo.path());
    assert_cmd_snapshot!(npuprof(
        repo.path(),
        &["inject", "--entry", "infer.py", "--out", "README.md"]
    ));
    assert_eq!(all_files(repo.path()), before);
}

#[test]
fn refuses_an_entry_outside_the_repository() {
    let repo = copy_plain_infer();
    let outside = tempfile::tempdir().expect("temp dir");
    fs::write(outside.path().join("other.py"), "x = 1\n").expect("write");
    let entry = outside.path().join("other.py");
    let out = npuprof(
        repo.path(),
        &["inject", "--entry", entry.to_str().expect("utf-8")],
    )
    .output()
    .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("outside the repository"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn refuses_an_entry_with_a_syntax_error() {
    let repo = copy_plain_infer();
    fs::write(repo.path().join("broken.py"), "def main(:\n    pass\n").expect("write");
    assert_cmd_snapshot!(npuprof(repo.path(), &["inject", "--entry", "broken.py"]));
}

#[test]
fn printed_commands_are_shell_quoted_for_hostile_entry_names() {
    let source = fs::read(copy_plain_infer().path().join("infer.py")).unwrap();
    for name in [
        "a;touch PWNED;b.py",
        "$(touch PWNED).py",
        "`touch PWNED`.py",
        "it's \"here\".py",
        "new\nline.py",
        "-c.py",
        "données.py",
    ] {
        let repo = tempfile::tempdir().unwrap();
        fs::write(repo.path().join(name), &source).unwrap();
        let entry = format!("--entry={name}");
        let output = npuprof(repo.path(), &["inject", &entry, "--json"])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{name:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let harness = report["harness"].as_str().unwrap();
        let argv =
            |key: &str| -> Vec<String> { serde_json::from_value(report[key].clone()).unwrap() };
        let run = argv("run_argv");
        let words = shell_words(report["run"].as_str().unwrap(), repo.path());
        assert_eq!(words, run, "{name:?}: `run` is not `run_argv` quoted");
        assert_eq!(run[0], "python3");
        let expected = if harness.starts_with('-') {
            format!("./{harness}")
        } else {
            harness.to_owned()
        };
        assert_eq!(
            run[1], expected,
            "{name:?}: python3 would not get the harness"
        );
        let undo = shell_words(report["undo"].as_str().unwrap(), repo.path());
        assert_eq!(undo, argv("undo_argv"), "{name:?}");
        assert!(
            !repo.path().join("PWNED").exists(),
            "{name:?}: a printed command ran"
        );
        // The human summary shows the same quoted line.
        let repo2 = tempfile::tempdir().unwrap();
        fs::write(repo2.path().join(name), &source).unwrap();
        let text = npuprof(repo2.path(), &["inject", &entry]).output().unwrap();
        let stderr = String::from_utf8(text.stderr).unwrap();
        assert!(
            stderr.contains(&format!("  run:     {}\n", report["run"].as_str().unwrap())),
            "{name:?}: {stderr}"
        );
    }
}

/// One default phase across the commands that choose phases: both (the collection guide's
/// ask-first default), as each command's help says.
#[test]
fn plan_patch_collect_and_inject_default_to_both_phases() {
    for command in ["plan", "patch", "collect", "inject"] {
        let help = Command::new(get_cargo_bin("npuprof"))
            .args([command, "--help"])
            .env("NO_COLOR", "1")
            .output()
            .expect("run");
        let help = String::from_utf8_lossy(&help.stdout);
        // The flag's entry: its line and every line up to the next flag.
        let mut lines = help
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("--phase"));
        let first = lines.next().unwrap_or_default();
        let phase: String = std::iter::once(first)
            .chain(lines.take_while(|l| !l.trim_start().starts_with("--")))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(phase.contains("[default: both]"), "{command}: {phase:?}");
    }
}
