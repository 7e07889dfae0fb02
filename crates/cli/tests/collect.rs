//! `npuprof collect` end to end: the bundled recipes-mini repository (a temp copy) runs under
//! the fake torch_npu; every run must leave the repository's files exactly as they were.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use insta_cmd::get_cargo_bin;
use serde_json::Value;

mod support;
use support::{copy_example, source_files, workspace_root};

struct Fixture {
    repo: tempfile::TempDir,
    tmp: tempfile::TempDir,
}

fn fixture(example: &str) -> Fixture {
    Fixture {
        repo: copy_example(example),
        tmp: tempfile::tempdir().unwrap(),
    }
}

impl Fixture {
    fn collect(&self, extra: &[&str]) -> Command {
        let mut cmd = Command::new(get_cargo_bin("npuprof"));
        cmd.current_dir(self.repo.path())
            .arg("collect")
            .args(extra)
            .env("NO_COLOR", "1")
            .env("TMPDIR", self.tmp.path())
            .env("XDG_STATE_HOME", self.tmp.path().join("state"))
            .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
            .env("PYTHONDONTWRITEBYTECODE", "1");
        cmd
    }
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not JSON ({err}); stderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// Checks the repository's sources are byte-identical to `before` and no journal is left.
fn check_restored(repo: &Path, before: &BTreeMap<PathBuf, Vec<u8>>) {
    assert_eq!(
        &source_files(repo),
        before,
        "the repository was not restored byte for byte"
    );
    assert!(!repo.join(".npuprof").exists(), "journal left behind");
}

const MTP: [&str; 4] = ["--model", "deepseek-mini", "--yaml", "decode_mtp.yaml"];

#[test]
fn clean_run_is_verified_and_reverted() {
    let fixture = fixture("recipes-mini");
    let before = source_files(fixture.repo.path());
    let output = fixture
        .collect(&[&MTP[..], &["--json"]].concat())
        .output()
        .unwrap();
    let report = json(&output);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(report["outcome"], "clean");
    assert_eq!(report["route"]["route"], "framework");
    assert_eq!(report["patch"]["written"], true);
    assert_eq!(report["runs"].as_array().unwrap().len(), 1);
    assert_eq!(report["verify"][0]["ok"], true);
    assert_eq!(report["revert"], "reverted");
    let result_dir = PathBuf::from(report["runs"][0]["result_dir"].as_str().unwrap());
    assert!(
        result_dir.join("prof/decode").is_dir(),
        "no decode profile in {}",
        result_dir.display()
    );
    check_restored(fixture.repo.path(), &before);
}

/// Runs a clean `collect --json` and returns its report after checking the exit code and that
/// the repository was restored byte for byte.
fn check_clean_collect(args: &[&str]) -> Value {
    check_clean_collect_in(&fixture("recipes-mini"), args)
}

/// [`check_clean_collect`] in a prepared fixture.
fn check_clean_collect_in(fixture: &Fixture, args: &[&str]) -> Value {
    let before = source_files(fixture.repo.path());
    let output = fixture
        .collect(&[args, &["--json"]].concat())
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = json(&output);
    assert_eq!(report["outcome"], "clean");
    assert_eq!(report["revert"], "reverted");
    check_restored(fixture.repo.path(), &before);
    report
}

/// `(phase, rank, kernel_details Step Ids)` of every verified run directory.
fn verified_runs(report: &Value) -> Vec<(String, u64, Vec<u64>)> {
    report["verify"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            let steps = run["steps"]["kernel_details"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_u64().unwrap())
                .collect();
            (
                run["phase"].as_str().unwrap().to_owned(),
                run["rank"].as_u64().unwrap(),
                steps,
            )
        })
        .collect()
}

#[test]
fn each_phase_option_collects_only_that_phase() {
    let decode_steps: Vec<u64> = (3..8).collect();
    for (phase, expected) in [
        (
            "both",
            vec![
                ("decode".to_owned(), 0, decode_steps.clone()),
                ("prefill".to_owned(), 0, vec![0]),
            ],
        ),
        ("decode", vec![("decode".to_owned(), 0, decode_steps)]),
        ("prefill", vec![("prefill".to_owned(), 0, vec![0])]),
    ] {
        let report =
            check_clean_collect(&[&MTP[..], &["--phase", phase, "--decode-active", "5"]].concat());
        let mut runs = verified_runs(&report);
        runs.sort();
        assert_eq!(runs, expected, "phase {phase}");
    }
}

#[test]
fn the_token_budget_is_raised_for_a_long_mtp_window() {
    let report = check_clean_collect(&[&MTP[..], &["--decode-active", "30"]].concat());
    // Offline: decode forwards = max_new_tokens whatever next_n; skip 3 + 30 + 1 margin.
    assert_eq!(report["patch"]["plan"]["min_max_new_tokens"], 34);
    assert!(
        report["patch"]["files"][1]["diff"]
            .as_str()
            .unwrap()
            .contains("+  max_new_tokens: 34"),
        "{}",
        report["patch"]["files"][1]["diff"]
    );
    let decode: Vec<_> = verified_runs(&report)
        .into_iter()
        .filter(|(phase, ..)| phase == "decode")
        .collect();
    assert_eq!(decode, vec![("decode".to_owned(), 0, (3..33).collect())]);
}

#[test]
fn a_four_rank_run_is_verified_for_every_rank() {
    let report = check_clean_collect(&[
        "--model",
        "deepseek-mini",
        "--yaml",
        "ep4.yaml",
        "--decode-active",
        "4",
    ]);
    let mut runs = verified_runs(&report);
    runs.sort();
    let expected: Vec<_> = ["decode", "prefill"]
        .into_iter()
        .flat_map(|phase| {
            (0..4).map(move |rank| {
                let steps = if phase == "decode" {
                    (3..7).collect()
                } else {
                    vec![0]
                };
                (phase.to_owned(), rank, steps)
            })
        })
        .collect();
    assert_eq!(runs, expected);
}

#[test]
fn the_human_summary_names_route_window_and_verdicts_on_stdout() {
    let fixture = fixture("recipes-mini");
    let output = fixture
        .collect(&[&MTP[..], &["--decode-active", "5"]].concat())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8(output.stdout).unwrap();
    for line in [
        "collect: clean",
        "  route: framework (path A)",
        "  window: prefill records steps 0 (active 1, skip_first 0)",
        "  window: decode records steps 3–7 (active 5, skip_first 3)",
        "    verify: 0 error(s), 0 warning(s)",
        "      prefill rank 0: ok, steps 0",
        "      decode rank 0: ok, steps 3–7",
        "  repository: restored byte for byte",
    ] {
        assert!(
            stdout.lines().any(|l| l == line),
            "missing {line:?} in:\n{stdout}"
        );
    }
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("next: npuprof advise ")),
        "no advise line in:\n{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("next: npuprof breakdown ")),
        "no breakdown line in:\n{stdout}"
    );
}

#[test]
fn bad_output_disk_is_relocated_rerun_and_reverted() {
    let fixture = fixture("recipes-mini");
    // The fake torch_npu fails every parser below this marker (resolved through symlinks).
    fs::write(
        fixture
            .repo
            .path()
            .join("models/deepseek-mini/.fake_torch_npu_bad_disk"),
        "",
    )
    .unwrap();
    let before = source_files(fixture.repo.path());
    let output = fixture
        .collect(&[&MTP[..], &["--json"]].concat())
        .output()
        .unwrap();
    let report = json(&output);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(report["runs"].as_array().unwrap().len(), 2);
    assert_eq!(report["verify"][0]["ok"], false);
    let codes: Vec<&str> = report["verify"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["code"].as_str())
        .collect();
    assert!(codes.contains(&"output-filesystem"), "{codes:?}");
    assert_eq!(report["verify"][1]["ok"], true);
    assert_eq!(report["relocate"]["applied"], true);
    let second = PathBuf::from(report["runs"][1]["result_dir"].as_str().unwrap());
    assert!(
        second.starts_with(fixture.tmp.path().canonicalize().unwrap()),
        "{}",
        second.display()
    );
    assert!(second.join("prof/decode").is_dir());
    let res = fixture.repo.path().join("models/deepseek-mini/res");
    assert!(
        fs::symlink_metadata(&res).unwrap().is_dir(),
        "res is not a real directory again"
    );
    check_restored(fixture.repo.path(), &before);
}

#[test]
fn timeout_stops_the_run_and_reverts() {
    let fixture = fixture("recipes-mini");
    let before = source_files(fixture.repo.path());
    let started = Instant::now();
    let output = fixture
        .collect(&[&MTP[..], &["--json", "--timeout", "1", "--", "sleep", "30"]].concat())
        .output()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the timeout did not stop the run"
    );
    let report = json(&output);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(report["runs"][0]["timed_out"], true);
    assert!(report["error"].as_str().unwrap().contains("--timeout"));
    check_restored(fixture.repo.path(), &before);
}

#[test]
fn ctrl_c_stops_the_run_and_reverts() {
    let fixture = fixture("recipes-mini");
    let before = source_files(fixture.repo.path());
    let child = fixture
        .collect(&[&MTP[..], &["--json", "--", "sleep", "30"]].concat())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the patch is applied (the journal exists) and the launch has started.
    let journal = fixture.repo.path().join(".npuprof/journal.json");
    let started = Instant::now();
    while !journal.exists() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..2 {
        // Two Ctrl-Cs: the second must not cut the restore short.
        let status = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
    let output = child.wait_with_output().unwrap();
    let report = json(&output);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        report["error"].as_str().unwrap().contains("interrupted"),
        "{}",
        report["error"]
    );
    if let Some(run) = report["runs"].as_array().unwrap().first() {
        assert_eq!(run["interrupted"], true);
    }
    assert_eq!(report["revert"], "reverted");
    check_restored(fixture.repo.path(), &before);
}

#[test]
fn a_launch_without_results_fails_and_reverts() {
    let fixture = fixture("recipes-mini");
    let before = source_files(fixture.repo.path());
    let output = fixture
        .collect(&[&MTP[..], &["--json", "--", "false"]].concat())
        .output()
        .unwrap();
    let report = json(&output);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(report["runs"][0]["exit_code"], 1);
    assert_eq!(report["error_code"], "launch_failed");
    let error = report["error"].as_str().unwrap();
    assert!(
        error.contains("the launch failed (exit code 1): it wrote no output and no profile"),
        "{error}"
    );
    check_restored(fixture.repo.path(), &before);
}

#[test]
fn keep_patch_leaves_the_patch_for_revert() {
    let fixture = fixture("recipes-mini");
    let before = source_files(fixture.repo.path());
    let output = fixture
        .collect(&[&MTP[..], &["--keep-patch"]].concat())
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_ne!(source_files(fixture.repo.path()), before);
    let revert = Command::new(get_cargo_bin("npuprof"))
        .current_dir(fixture.repo.path())
        .arg("revert")
        .output()
        .unwrap();
    assert!(revert.status.success());
    check_restored(fixture.repo.path(), &before);
}

#[test]
fn path_b_repositories_are_refused_unchanged() {
    let fixture = fixture("plain-infer");
    let config = fixture.repo.path().join("models/m/config");
    fs::create_dir_all(&config).unwrap();
    fs::write(
        config.join("run.yaml"),
        "model_config:\n  enable_profiler: False\n",
    )
    .unwrap();
    let before = source_files(fixture.repo.path());
    let output = fixture
        .collect(&["--config", "models/m/config/run.yaml", "--json"])
        .output()
        .unwrap();
    let report = json(&output);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(report["route"]["route"], "inject");
    assert!(
        report["error"].as_str().unwrap().contains("path A only"),
        "{}",
        report["error"]
    );
    assert!(report["runs"].as_array().unwrap().is_empty());
    assert_eq!(report["revert"], "nothing", "nothing was changed");
    assert_eq!(source_files(fixture.repo.path()), before);
    assert!(!fixture.repo.path().join(".npuprof").exists());
}

#[test]
fn an_existing_journal_is_refused() {
    let fixture = fixture("recipes-mini");
    let keep = fixture
        .collect(&[&MTP[..], &["--keep-patch", "--", "true"]].concat())
        .output()
        .unwrap();
    assert_eq!(
        keep.status.code(),
        Some(2),
        "`true` writes no result directory"
    );
    let patched = source_files(fixture.repo.path());
    let output = fixture.collect(&MTP).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("already has npuprof changes"));
    assert_eq!(source_files(fixture.repo.path()), patched);
}

/// One example model of each settable family, with the recorded steps each phase must show
/// for `--decode-active 4 --decode-skip-first 2` (prefill: the model's own window).
struct FamilyCase {
    model: &'static str,
    yaml: &'static str,
    /// The prefill Step Ids (the shared engine pins step 0; glm_5_2 keeps its skip_first 5).
    prefill: Vec<u64>,
    /// Ranks of the config.
    ranks: u64,
}

fn family_cases() -> Vec<FamilyCase> {
    vec![
        FamilyCase {
            model: "deepseek-mini",
            yaml: "decode_mtp.yaml",
            prefill: vec![0],
            ranks: 1,
        },
        FamilyCase {
            model: "glm_5_2",
            yaml: "glm_mini_rank_2.yaml",
            prefill: vec![5],
            ranks: 2,
        },
        FamilyCase {
            model: "pangu_7b",
            yaml: "pangu_mini_7b.yaml",
            prefill: vec![0],
            ranks: 1,
        },
        FamilyCase {
            model: "kimi_k3",
            yaml: "kimi_mini_rank_1.yaml",
            prefill: vec![0],
            ranks: 1,
        },
    ]
}

/// patch → run under the fake → verify → revert, byte-exact, for every settable family and
/// every phase option: each phase records exactly the planned steps on every rank.
#[test]
fn every_family_and_phase_option_collects_clean_and_reverts() {
    for case in family_cases() {
        for phase in ["both", "decode", "prefill"] {
            let report = check_clean_collect(&[
                "--model",
                case.model,
                "--yaml",
                case.yaml,
                "--phase",
                phase,
                "--decode-active",
                "4",
                "--decode-skip-first",
                "2",
            ]);
            let mut expected = Vec::new();
            for rank in 0..case.ranks {
                if phase != "prefill" {
                    expected.push(("decode".to_owned(), rank, (2..6).collect::<Vec<u64>>()));
                }
                if phase != "decode" {
                    expected.push(("prefill".to_owned(), rank, case.prefill.clone()));
                }
            }
            expected.sort();
            let mut runs = verified_runs(&report);
            runs.sort();
            assert_eq!(
                runs, expected,
                "{} {} --phase {phase}",
                case.model, case.yaml
            );
        }
    }
}

/// Families C and D: collect refuses with the model's real toggle and changes nothing.
#[test]
fn switchless_pipelines_are_refused_with_their_toggle() {
    let fixture = fixture("recipes-mini");
    let before = source_files(fixture.repo.path());
    let output = fixture
        .collect(&["--model", "hunyuan-mini", "--yaml", "single.yaml", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let report = json(&output);
    let error = report["error"].as_str().unwrap();
    assert!(
        error.contains("`prof-dit: true` under model_args"),
        "{error}"
    );
    assert_eq!(source_files(fixture.repo.path()), before);
    assert!(!fixture.repo.path().join(".npuprof").exists());
}

/// Issue 32.3: the launched command deletes `.npuprof/` while the files are patched: collect
/// puts the journal back from its own copy outside the repository and restores every file.
#[test]
fn a_launch_that_deletes_the_journal_is_restored_byte_for_byte() {
    check_journal_removing_launch(&["bash", "-c", "rm -rf .npuprof"], |_| {});
}

/// The same with `git clean -fdx` in a git repository (`.npuprof/` ignores itself, so `-x`
/// removes it).
#[test]
fn a_launch_that_runs_git_clean_fdx_is_restored_byte_for_byte() {
    check_journal_removing_launch(&["git", "clean", "-fdqx"], |repo| {
        for args in [
            &["init", "-q"][..],
            &["add", "-A"],
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "base",
            ],
        ] {
            let status = Command::new("git")
                .args(args)
                .current_dir(repo)
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        }
    });
}

/// Runs collect with `launch` (which removes `.npuprof/`) in a fixture `prepare`d first: the
/// repository ends byte-identical, stderr says the journal was put back, and the copy of the
/// originals outside the repository is gone.
fn check_journal_removing_launch(launch: &[&str], prepare: impl Fn(&Path)) {
    let fixture = fixture("recipes-mini");
    prepare(fixture.repo.path());
    let before = source_files(fixture.repo.path());
    let output = fixture
        .collect(&[&MTP[..], &["--json", "--"], launch].concat())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report = json(&output);
    assert_eq!(report["revert"], "reverted", "{stderr}");
    assert!(stderr.contains("the launch removed .npuprof/"), "{stderr}");
    check_restored(fixture.repo.path(), &before);
    let private = fixture.tmp.path().join("state/npuprof/collect");
    for dir in fs::read_dir(private).unwrap() {
        for entry in fs::read_dir(dir.unwrap().path()).unwrap() {
            let name = entry.unwrap().file_name();
            assert!(
                !name.to_string_lossy().starts_with("originals"),
                "the copy of the originals is left: {name:?}"
            );
        }
    }
}

/// Runs collect with a launch that runs `script` (which damages the repository): exit 2, and
/// stderr says `says` and names the file still patched, never "unchanged".
fn check_destructive_launch(script: &str, says: &str) -> Value {
    let fixture = fixture("recipes-mini");
    let output = fixture
        .collect(&[&MTP[..], &["--json", "--", "bash", "-c", script]].concat())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(says) && stderr.contains("profiler_context.py"),
        "{stderr}"
    );
    assert!(!stderr.contains("unchanged"), "{stderr}");
    json(&output)
}

// ---- Issue 13: signals, concurrency and bounds of collect ----

/// Whether process `pid` is still running (a zombie is not).
fn alive(pid: &str) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Sends `signal` to a collect whose launch sleeps, once the patch is applied and the launch
/// has started: collect must stop the launch (its whole process group), revert, and exit 2
/// well before the launch would have ended.
fn check_signal_stops_collect_and_reverts(signal: &str) {
    let fixture = fixture("recipes-mini");
    let before = source_files(fixture.repo.path());
    let pid_file = fixture.tmp.path().join("launch.pid");
    let script = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
    let started = Instant::now();
    let child = fixture
        .collect(&[&MTP[..], &["--json", "--", "bash", "-c", &script]].concat())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let journal = fixture.repo.path().join(".npuprof/journal.json");
    while !(journal.exists() && pid_file.exists()) && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let launch_pid = fs::read_to_string(&pid_file).unwrap().trim().to_owned();
    assert!(alive(&launch_pid), "SIG{signal}: the launch is not running");
    let status = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(40),
        "SIG{signal} was swallowed: collect ran on"
    );
    let report = json(&output);
    assert_eq!(output.status.code(), Some(2), "SIG{signal}: {report:#}");
    assert!(
        report["error"].as_str().unwrap().contains("interrupted"),
        "SIG{signal}: {}",
        report["error"]
    );
    assert_eq!(report["revert"], "reverted", "SIG{signal}");
    let stopped = Instant::now();
    while alive(&launch_pid) && stopped.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !alive(&launch_pid),
        "SIG{signal}: the launched command still runs"
    );
    check_restored(fixture.repo.path(), &before);
}

#[test]
fn sighup_during_collect_stops_the_launch_and_reverts() {
    check_signal_stops_collect_and_reverts("HUP");
}

#[test]
fn sigusr1_during_collect_stops_the_launch_and_reverts() {
    check_signal_stops_collect_and_reverts("USR1");
}

#[test]
fn sigquit_during_collect_stops_the_launch_and_reverts() {
    check_signal_stops_collect_and_reverts("QUIT");
}

#[test]
fn sigterm_stops_collect_and_is_not_swallowed() {
    check_signal_stops_collect_and_reverts("TERM");
}

#[test]
fn a_launch_that_runs_rm_rf_everything_is_not_reported_unchanged() {
    let report = check_destructive_launch("rm -rf ./*", "NOT reverted");
    assert_ne!(report["revert"], "reverted", "{report:#}");
}

#[test]
fn two_collects_at_once_leave_the_repository_as_it_was() {
    let fixture = fixture("recipes-mini");
    let before = source_files(fixture.repo.path());
    let children: Vec<_> = (0..2)
        .map(|_| {
            fixture
                .collect(&[&MTP[..], &["--json"]].concat())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut clean = 0;
    for child in children {
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        match output.status.code() {
            Some(0) => clean += 1,
            _ => assert!(
                stderr.contains("another npuprof is working here"),
                "{stderr}"
            ),
        }
    }
    assert!(clean >= 1, "neither collect ran");
    check_restored(fixture.repo.path(), &before);
}

#[test]
fn collect_decode_active_5000000000_is_refused_at_once() {
    let fixture = fixture("recipes-mini");
    let before = source_files(fixture.repo.path());
    let started = Instant::now();
    let output = fixture
        .collect(&[&MTP[..], &["--decode-active", "5000000000"]].concat())
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("5000000000"), "{stderr}");
    check_restored(fixture.repo.path(), &before);
}

/// `collect` whose launch produces nothing: it patches, runs, fails and reverts, through the
/// same write steps as a real run.
const QUICK_COLLECT: [&str; 7] = [
    "--model",
    "deepseek-mini",
    "--yaml",
    "decode_mtp.yaml",
    "--json",
    "--",
    "true",
];

/// Checks a quick collect ended as it should: no results, reverted.
fn check_quick_collect(output: &Output, context: &str) {
    let report = json(output);
    assert_eq!(output.status.code(), Some(2), "{context}: {report:#}");
    assert!(
        report["error"]
            .as_str()
            .is_some_and(|e| e.contains("wrote no new run directory")),
        "{context}: {report:#}"
    );
    assert_eq!(report["revert"], "reverted", "{context}");
}

/// Runs `npuprof revert` in `repo` and checks it succeeded.
fn check_revert_ok(repo: &Path, context: &str) {
    let revert = Command::new(get_cargo_bin("npuprof"))
        .current_dir(repo)
        .arg("revert")
        .output()
        .unwrap();
    assert!(
        revert.status.success(),
        "{context}, then revert: {}",
        String::from_utf8_lossy(&revert.stderr)
    );
}

#[test]
fn kill_at_every_write_step_of_collect_is_finished_by_revert_and_a_rerun() {
    let mut points = 0;
    for n in 1.. {
        let fixture = fixture("recipes-mini");
        let before = source_files(fixture.repo.path());
        let killed = fixture
            .collect(&QUICK_COLLECT)
            .env("NPUPROF_FAILPOINT", format!("any:{n}"))
            .output()
            .unwrap();
        if killed.status.code().is_some() {
            check_quick_collect(&killed, "not killed");
            check_restored(fixture.repo.path(), &before);
            break;
        }
        points = n;
        let context = format!("collect killed at write step {n}");
        check_revert_ok(fixture.repo.path(), &context);
        check_restored(fixture.repo.path(), &before);
        let rerun = fixture.collect(&QUICK_COLLECT).output().unwrap();
        check_quick_collect(&rerun, &context);
        check_restored(fixture.repo.path(), &before);
    }
    assert!(points >= 10, "only {points} write steps seen");
}

/// With two top-level `create_profiler` definitions Python uses the last; collect patches that
/// one, so the run records exactly the window asked for (issue 13: it used to patch the first,
/// say "clean, window 3–32" and record other steps).
#[test]
fn with_two_create_profiler_definitions_the_recorded_steps_are_the_window() {
    let fixture = fixture("recipes-mini");
    support::append_second_create_profiler(fixture.repo.path());
    let report = check_clean_collect_in(
        &fixture,
        &[&MTP[..], &["--phase", "decode", "--decode-active", "5"]].concat(),
    );
    assert_eq!(
        verified_runs(&report),
        vec![("decode".to_owned(), 0, (3..8).collect::<Vec<u64>>())]
    );
}

// ---- Issue 28 "collect, every time" and issue 32 (5, 11) ----

/// The run directories verified in a report (their paths, sorted).
fn verified_dirs(report: &Value) -> Vec<String> {
    let mut dirs: Vec<String> = report["verify"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["dir"].as_str().unwrap().to_owned())
        .collect();
    dirs.sort();
    dirs
}

/// A second and a third collect of one config on one day write into the same result
/// directory: each passes, and verifies only the run directories its own launch wrote. One
/// model of family A (shared engine) and one of family B (legacy runner, two ranks).
#[test]
fn collecting_two_and_three_times_in_a_row_passes_per_family() {
    for (model, yaml, runs) in [
        ("deepseek-mini", "decode_mtp.yaml", 2),
        ("glm_5_2", "glm_mini_rank_2.yaml", 4),
    ] {
        let fixture = fixture("recipes-mini");
        let args = ["--model", model, "--yaml", yaml, "--decode-active", "4"];
        let mut seen: Vec<String> = Vec::new();
        let mut result_dirs = Vec::new();
        for round in 1..=3 {
            let report = check_clean_collect_in(&fixture, &args);
            let dirs = verified_dirs(&report);
            assert_eq!(dirs.len(), runs, "{model} round {round}: {dirs:?}");
            assert!(
                dirs.iter().all(|d| !seen.contains(d)),
                "{model} round {round} verified an older run: {dirs:?}"
            );
            seen.extend(dirs);
            result_dirs.push(report["runs"][0]["result_dir"].clone());
        }
        assert!(
            result_dirs.windows(2).all(|w| w[0] == w[1]),
            "{model}: one result directory for the day: {result_dirs:?}"
        );
    }
}

/// A launch whose Python cannot import torch_npu is "the launch failed", quoting the
/// traceback's final line; never `phase-missing` with schedule advice, never Rust debug text.
#[test]
fn a_crash_is_named_as_a_failed_launch() {
    let fixture = fixture("recipes-mini");
    let before = source_files(fixture.repo.path());
    let no_torch_npu = fixture.tmp.path().join("empty");
    fs::create_dir_all(&no_torch_npu).unwrap();
    let output = fixture
        .collect(&[&MTP[..], &["--json"]].concat())
        .env("PYTHONPATH", &no_torch_npu)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let report = json(&output);
    assert_eq!(report["error_code"], "launch_failed", "{report:#}");
    let error = report["error"].as_str().unwrap();
    assert!(
        error.starts_with("the launch failed (exit code 1): ")
            && error.contains("ModuleNotFoundError: No module named 'torch_npu'"),
        "{error}"
    );
    let first = &report["runs"][0]["launch_errors"][0];
    assert_eq!(first["kind"], "traceback");
    assert!(stderr.contains("> ModuleNotFoundError"), "{stderr}");
    for text in [&stderr[..], &String::from_utf8_lossy(&output.stdout)[..]] {
        assert!(!text.contains("phase-missing"), "{text}");
        assert!(!text.contains("Some("), "Rust debug text: {text}");
    }
    check_restored(fixture.repo.path(), &before);
}

/// The recipes `infer.sh` exits 0 even when every rank failed: the error is only in
/// `log_0.log`, and collect reads it from there.
#[test]
fn a_launch_that_exits_0_after_every_rank_failed_is_named_from_the_rank_log() {
    let fixture = fixture("recipes-mini");
    let before = source_files(fixture.repo.path());
    let no_torch_npu = fixture.tmp.path().join("empty");
    fs::create_dir_all(&no_torch_npu).unwrap();
    let script = "bash executor/scripts/infer.sh --model deepseek-mini --yaml decode_mtp.yaml \
                  >/dev/null 2>&1; exit 0";
    let output = fixture
        .collect(&[&MTP[..], &["--json", "--", "bash", "-c", script]].concat())
        .env("PYTHONPATH", &no_torch_npu)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let report = json(&output);
    assert_eq!(report["runs"][0]["exit_code"], 0);
    assert_eq!(report["error_code"], "launch_failed", "{report:#}");
    let error = report["error"].as_str().unwrap();
    assert!(
        error.contains("No module named 'torch_npu' (in log_0.log)"),
        "{error}"
    );
    check_restored(fixture.repo.path(), &before);
}

/// Issue 32.5: stderr on a full disk — no panic: collect restores the repository, then exits 2.
/// stdout on a full disk: the same.
#[test]
fn an_unwritable_stderr_or_stdout_restores_then_exits_2() {
    for stream in ["stderr", "stdout"] {
        let fixture = fixture("recipes-mini");
        let before = source_files(fixture.repo.path());
        let full = fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let mut cmd = fixture.collect(&MTP);
        if stream == "stderr" {
            cmd.stderr(full).stdout(Stdio::null());
        } else {
            cmd.stdout(full).stderr(Stdio::null());
        }
        let status = cmd.status().unwrap();
        assert_eq!(status.code(), Some(2), "{stream} on /dev/full");
        check_restored(fixture.repo.path(), &before);
    }
}

/// Issue 32.11: a launch that leaves a background child behind (`nohup … &`): after collect
/// no such process remains, and collect says which one it stopped.
#[test]
fn a_process_the_launch_leaves_behind_is_stopped_and_named() {
    let fixture = fixture("recipes-mini");
    let pid_file = fixture.tmp.path().join("left.pid");
    // The launch returns once its child runs `sleep` (nohup has exec'd it), so the name the
    // straggler is stopped under does not race with that exec.
    let script = format!(
        "nohup sleep 1000 >/dev/null 2>&1 & pid=$!; \
         until tr '\\0' ' ' < /proc/$pid/cmdline 2>/dev/null | grep -q '^sleep 1000'; do sleep 0.01; done; \
         echo $pid > '{}'",
        pid_file.display()
    );
    let output = fixture
        .collect(&[&MTP[..], &["--json", "--", "bash", "-c", &script]].concat())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let pid = fs::read_to_string(&pid_file).unwrap().trim().to_owned();
    assert!(!alive(&pid), "the launch's child {pid} still runs");
    assert!(
        stderr.contains(&format!("stopped pid {pid} (`sleep 1000`)")),
        "{stderr}"
    );
    let report = json(&output);
    assert_eq!(report["runs"][0]["stragglers"][0]["pid"].to_string(), pid);
}

/// One error, one code: an error of the pipeline patch and collect share (a run config that is
/// not there, one that is not valid YAML) has the same code in collect's report
/// (`error_code`) as in patch's error document, and collect reverts to nothing.
#[test]
fn collect_and_patch_give_a_shared_error_the_same_code() {
    let fixture = fixture("recipes-mini");
    let config = fixture
        .repo
        .path()
        .join("models/deepseek-mini/config/broken.yaml");
    fs::write(&config, "model_config: [unclosed\n").unwrap();
    let before = source_files(fixture.repo.path());
    for (yaml, code) in [
        ("no-such.yaml", "not_found"),
        ("broken.yaml", "invalid_input"),
    ] {
        let args = ["--model", "deepseek-mini", "--yaml", yaml, "--json"];
        let collected = fixture.collect(&args).output().unwrap();
        assert_eq!(collected.status.code(), Some(2), "collect --yaml {yaml}");
        let report = json(&collected);
        assert_eq!(report["outcome"], "failed", "{report:#}");
        assert_eq!(
            report["error_code"], code,
            "collect --yaml {yaml}: {report:#}"
        );
        let patched = Command::new(get_cargo_bin("npuprof"))
            .current_dir(fixture.repo.path())
            .arg("patch")
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert_eq!(patched.status.code(), Some(2), "patch --yaml {yaml}");
        let document = json(&patched);
        assert_eq!(
            document["error"]["code"], code,
            "patch --yaml {yaml}: {document:#}"
        );
        check_restored(fixture.repo.path(), &before);
    }
}

/// A run whose profiler is not the one patched (here the run's environment rebinds
/// `torch_npu.profiler.schedule` to a 3-step window, which no reading of the repository can
/// see) records steps 3–5 where 3–12 were asked: collect says so as an error and exits 1, never
/// "clean", and still restores the repository.
#[test]
fn a_run_that_records_another_window_than_the_one_patched_is_not_clean() {
    let fixture = fixture("recipes-mini");
    let site = fixture.tmp.path().join("site");
    fs::create_dir_all(&site).unwrap();
    fs::write(
        site.join("sitecustomize.py"),
        "import torch_npu.profiler as _p\n\
         _orig = _p.schedule\n\
         def _three(**kw):\n    kw['active'] = min(kw.get('active', 1), 3)\n    return _orig(**kw)\n\
         _p.schedule = _three\n",
    )
    .unwrap();
    let before = source_files(fixture.repo.path());
    let pythonpath = format!(
        "{}:{}",
        workspace_root().join("tests/fake_torch_npu").display(),
        site.display()
    );
    let output = fixture
        .collect(
            &[
                &MTP[..],
                &["--phase", "decode", "--decode-active", "10", "--json"],
            ]
            .concat(),
        )
        .env("PYTHONPATH", &pythonpath)
        .output()
        .unwrap();
    let report = json(&output);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_ne!(report["outcome"], "clean");
    let findings: Vec<&Value> = report["verify"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "window-not-requested")
        .collect();
    assert_eq!(findings.len(), 1, "{:#}", report["verify"][0]["findings"]);
    assert_eq!(findings[0]["severity"], "error");
    let message = findings[0]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "it recorded step(s) 3, 4, 5 where steps 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 were asked for"
        ) && message.contains("active=3")
            && message.contains("active=10"),
        "{message}"
    );
    check_restored(fixture.repo.path(), &before);
    // The human summary says the same: no "ok" for that run.
    let human = fixture
        .collect(&[&MTP[..], &["--phase", "decode", "--decode-active", "10"]].concat())
        .env("PYTHONPATH", &pythonpath)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&human.stdout);
    assert!(!stdout.contains("collect: clean"), "{stdout}");
    assert!(!stdout.contains("decode rank 0: ok"), "{stdout}");
    assert!(stdout.contains("window-not-requested"), "{stdout}");
}

/// kimi_k3 as upstream has it since 61193a74: decode alone (its prefill profiler is gone).
/// "both" is every phase the target has: plan shows decode alone, patch and collect record
/// decode alone (collect is clean, its verify asks for no prefill), and asking for prefill by
/// name is refused naming the model's loop, not the shared factory's file.
#[test]
fn both_phases_of_a_decode_only_target_is_its_decode_phase() {
    let fixture = fixture("recipes-mini");
    let loop_file = fixture
        .repo
        .path()
        .join("models/kimi_k3/models/model_infer.py");
    let text = fs::read_to_string(&loop_file).unwrap();
    let start = text
        .find("        if profile_this_cycle:")
        .expect("prefill block");
    let end = text
        .find("        self.model_runner.model_output_process(cycle_input, next_tokens)")
        .expect("after the prefill block");
    let decode_only = format!(
        "{}        next_tokens = self._run_model(cycle_input, True, warm_up)\n{}",
        &text[..start],
        &text[end..]
    );
    fs::write(&loop_file, decode_only).unwrap();
    let kimi = ["--model", "kimi_k3", "--yaml", "kimi_mini_rank_1.yaml"];
    let npuprof = |args: &[&str]| {
        Command::new(get_cargo_bin("npuprof"))
            .current_dir(fixture.repo.path())
            .args(args)
            .args(kimi)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let plan = npuprof(&["plan"]);
    let stdout = String::from_utf8_lossy(&plan.stdout);
    assert_eq!(plan.status.code(), Some(0), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("decode ")), "{stdout}");
    assert!(!stdout.contains("prefill"), "{stdout}");
    for command in ["plan", "patch"] {
        let dry_run: &[&str] = if command == "patch" {
            &["--dry-run"]
        } else {
            &[]
        };
        let refused = npuprof(&[&[command, "--phase", "prefill"], dry_run].concat());
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("kimi_k3` has no prefill profiler call (its phases: decode)")
                || stderr.contains("kimi_k3 has no prefill profiler call (its phases: decode)"),
            "{command}: {stderr}"
        );
        if command == "patch" {
            assert!(
                stderr.contains("`models/kimi_k3/models/model_infer.py`"),
                "{stderr}"
            );
        }
    }
    let patch = npuprof(&["patch", "--phase", "both", "--dry-run"]);
    // The diff on stdout, what it does on stderr.
    let stdout = format!(
        "{}{}",
        String::from_utf8_lossy(&patch.stdout),
        String::from_utf8_lossy(&patch.stderr)
    );
    assert_eq!(patch.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("decode: records steps 10–19"), "{stdout}");
    assert!(!stdout.contains("prefill:"), "{stdout}");
    let report = check_clean_collect_in(&fixture, &kimi);
    assert_eq!(
        verified_runs(&report),
        vec![("decode".to_owned(), 0, (10..20).collect())]
    );
    assert_eq!(
        report["verify"][0]["target"]["phases"],
        serde_json::json!(["decode"])
    );
}

/// `with_modules` and the schedule's `active` of each profiler_info under `dir`.
fn tracer_settings(dir: &Path) -> BTreeSet<(bool, u64)> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if entry
                .file_name()
                .to_string_lossy()
                .starts_with("profiler_info")
            {
                let info: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
                let common = &info["config"]["common_config"];
                out.insert((
                    common["with_modules"] == true,
                    common["schedule"]["active"].as_u64().unwrap_or(0),
                ));
            }
        }
    }
    out
}

#[test]
fn breakdown_adds_a_structure_run_with_modules_and_reverts_both_patches() {
    let fixture = fixture("recipes-mini");
    let report = check_clean_collect_in(&fixture, &[&MTP[..], &["--breakdown"]].concat());
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{report:#}");
    assert_eq!(report["verify"].as_array().unwrap().len(), 2);
    assert!(
        report["verify"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["ok"] == true)
    );
    // The structure patch: with_modules and record_shapes on the factory's profile call.
    let changes: Vec<&str> = report["structure"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["changes"].as_array().unwrap())
        .filter_map(Value::as_str)
        .collect();
    assert!(
        changes
            .iter()
            .any(|c| c.contains("with_modules=True") && c.contains("structure window")),
        "{changes:?}"
    );
    // The timing run keeps the guide's settings; the structure run records module calls in a
    // 2-step decode window (and its 1-forward prefill).
    let dir = |i: usize| PathBuf::from(runs[i]["result_dir"].as_str().unwrap());
    let timing = tracer_settings(&dir(0));
    assert!(timing.iter().all(|(modules, _)| !modules), "{timing:?}");
    assert_eq!(
        tracer_settings(&dir(1)),
        BTreeSet::from([(true, 1), (true, 2)])
    );
    // The human summary breaks the structure window down exactly.
    let output = fixture
        .collect(&[&MTP[..], &["--breakdown"]].concat())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("structure window (with_modules=True)"),
        "{stdout}"
    );
    assert!(stdout.contains("nn.Module tree (exact)"), "{stdout}");
    assert!(stdout.contains("DecoderLayer_1"), "{stdout}");
    // The tracer's cost: each run's median step in both windows, as summary gives them (the
    // two collects above wrote into one result directory: the k-th runs of a phase and rank
    // are paired).
    let medians = |i: usize| -> Vec<(String, String)> {
        let summary = Command::new(get_cargo_bin("npuprof"))
            .args(["summary", "--json"])
            .arg(dir(i))
            .output()
            .unwrap();
        let summary: Value = serde_json::from_slice(&summary.stdout).unwrap();
        summary["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| !r["step_stats"].is_null())
            .map(|r| {
                let run = format!("{} rank {}", r["phase"].as_str().unwrap(), r["rank"]);
                let ms = r["step_stats"]["p50_us"].as_f64().unwrap() / 1000.0;
                (run, format!("{ms:.3} ms"))
            })
            .collect()
    };
    let (timing, structure) = (medians(0), medians(1));
    assert_eq!(timing.len(), structure.len(), "{stdout}");
    assert!(
        stdout.contains("the Python tracer's cost on this run (median step"),
        "{stdout}"
    );
    for ((run, timed), (same, traced)) in timing.iter().zip(&structure) {
        assert_eq!(run, same);
        let line = format!("  {run}: {traced} vs {timed} (");
        assert!(stdout.contains(&line), "{line} in {stdout}");
    }
    // The same figures in the JSON report (of the first collect: its own runs only).
    let costs = report["tracer_cost"].as_array().unwrap();
    assert_eq!(costs.len(), 2, "{report:#}");
    for cost in costs {
        let added =
            cost["structure_p50_us"].as_f64().unwrap() / cost["timing_p50_us"].as_f64().unwrap();
        assert!(added > 0.5 && added < 2.0, "{cost}");
        assert_eq!(cost["rank"], 0);
    }
}
