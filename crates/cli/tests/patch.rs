//! CLI tests of `npuprof patch`: the README's dry run on the example repository, JSON, writing
//! through the journal (then idempotence and revert), `git apply` compatibility, and refusals.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

mod support;
use support::{source_files, workspace_root};

fn example_repo() -> PathBuf {
    workspace_root().join("examples/recipes-mini")
}

/// A temp copy of the example repository.
fn copy_example() -> tempfile::TempDir {
    support::copy_example("recipes-mini")
}

/// `npuprof patch <args>` run inside `repo`.
fn patch(repo: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.current_dir(repo)
        .arg("patch")
        .args(args)
        .env("NO_COLOR", "1");
    cmd
}

/// Replaces the temp directory (as given and canonical) by `[TMP]`.
fn filters(dir: &Path) -> Vec<(String, &'static str)> {
    let mut filters = Vec::new();
    if let Ok(canonical) = dir.canonicalize() {
        filters.push((regex_escape(&canonical.display().to_string()), "[TMP]"));
    }
    filters.push((regex_escape(&dir.display().to_string()), "[TMP]"));
    filters
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '/' || c == '_' || c == '-' {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

macro_rules! with_filters {
    ($dir:expr, $body:block) => {{
        let filters = filters($dir);
        let filters: Vec<(&str, &str)> = filters.iter().map(|(a, b)| (a.as_str(), *b)).collect();
        insta::with_settings!({ filters => filters }, $body)
    }};
}

const README_ARGS: [&str; 7] = [
    "--model",
    "deepseek-mini",
    "--yaml",
    "decode_mtp.yaml",
    "--decode-active",
    "30",
    "--dry-run",
];

/// The README's main command, on the bundled example (changes nothing).
#[test]
fn patch_dry_run_readme_command() {
    let before = source_files(&example_repo());
    let mut args = vec!["--repo", "."];
    args.extend(README_ARGS);
    assert_cmd_snapshot!(patch(&example_repo(), &args));
    assert_eq!(
        source_files(&example_repo()),
        before,
        "a dry run must change nothing"
    );
}

#[test]
fn patch_dry_run_json() {
    let repo = copy_example();
    let mut args = README_ARGS.to_vec();
    args.push("--json");
    with_filters!(repo.path(), {
        assert_cmd_snapshot!(patch(repo.path(), &args));
    });
}

#[test]
fn patch_dry_run_decode_only() {
    let repo = copy_example();
    assert_cmd_snapshot!(patch(
        repo.path(),
        &[
            "--config",
            "models/qwen-mini/config/long_decode.yaml",
            "--phase",
            "decode",
            "--decode-skip-first",
            "2",
            "--dry-run"
        ]
    ));
}

/// Writing gives the same files as `git apply` of the dry run's diff; a second run changes
/// nothing; `npuprof revert` restores every byte.
#[test]
fn patch_writes_what_the_dry_run_shows() {
    let written = copy_example();
    let applied = copy_example();
    let original = source_files(written.path());
    let args = &README_ARGS[..6];

    let dry = patch(applied.path(), &README_ARGS).output().expect("runs");
    assert_eq!(dry.status.code(), Some(1), "a dry run with changes exits 1");
    let diff_path = applied.path().join("npuprof.diff");
    fs::write(&diff_path, &dry.stdout).expect("write diff");
    let git = Command::new("git")
        .current_dir(applied.path())
        .args(["apply", "npuprof.diff"])
        .status();
    fs::remove_file(&diff_path).expect("remove diff");

    let out = patch(written.path(), args).output().expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if let Ok(status) = git {
        assert!(status.success(), "git apply must accept the dry-run diff");
        assert_eq!(
            source_files(written.path()),
            source_files(applied.path()),
            "written files = dry-run diff applied"
        );
    }
    assert_ne!(source_files(written.path()), original);

    let again = patch(written.path(), &README_ARGS).output().expect("runs");
    assert_eq!(
        again.status.code(),
        Some(0),
        "nothing left to change: exit 0"
    );
    assert!(again.stdout.is_empty(), "no diff the second time");

    let revert = Command::new(get_cargo_bin("npuprof"))
        .current_dir(written.path())
        .arg("revert")
        .output()
        .expect("runs");
    assert!(
        revert.status.success(),
        "{}",
        String::from_utf8_lossy(&revert.stderr)
    );
    assert_eq!(
        source_files(written.path()),
        original,
        "revert restores every byte"
    );
}

/// Patching again replaces the earlier patch (it starts from the originals), so a phase switched
/// off before can be switched on again; revert restores the original.
#[test]
fn patch_again_replaces_the_earlier_patch_and_can_switch_a_phase_back_on() {
    let repo = copy_example();
    let original = source_files(repo.path());
    let first = patch(
        repo.path(),
        &[
            "--model",
            "qwen-mini",
            "--yaml",
            "dense.yaml",
            "--phase",
            "decode",
        ],
    )
    .output()
    .expect("runs");
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_cmd_snapshot!(patch(
        repo.path(),
        &[
            "--model",
            "qwen-mini",
            "--yaml",
            "dense.yaml",
            "--phase",
            "both",
            "--decode-active",
            "5",
            "--dry-run"
        ]
    ));
    let second = patch(
        repo.path(),
        &[
            "--model",
            "qwen-mini",
            "--yaml",
            "dense.yaml",
            "--phase",
            "decode",
            "--decode-active",
            "5",
        ],
    )
    .output()
    .expect("runs");
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let back_on = patch(
        repo.path(),
        &[
            "--model",
            "qwen-mini",
            "--yaml",
            "dense.yaml",
            "--phase",
            "both",
        ],
    )
    .output()
    .expect("runs");
    assert_eq!(
        back_on.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&back_on.stderr)
    );
    let engine = "executor/utils/profiler_context.py";
    let now = fs::read_to_string(repo.path().join(engine)).expect("engine");
    let before = String::from_utf8(original[Path::new(engine)].clone()).expect("utf-8");
    let prefill_call = r#"os.path.join(self.profile_save_path, "prof", "prefill")"#;
    assert!(
        before.contains(prefill_call),
        "the example has a prefill call"
    );
    assert!(
        now.contains(prefill_call),
        "the prefill call is back:\n{now}"
    );
    assert_eq!(
        now.matches("FakeContextManager()").count(),
        before.matches("FakeContextManager()").count(),
        "no phase is switched off any more"
    );
    let revert = Command::new(get_cargo_bin("npuprof"))
        .current_dir(repo.path())
        .arg("revert")
        .output()
        .expect("runs");
    assert!(
        revert.status.success(),
        "{}",
        String::from_utf8_lossy(&revert.stderr)
    );
    assert_eq!(source_files(repo.path()), original);
}

/// Runs a refused patch: exit 2, nothing changed.
fn check_refusal(repo: &Path, args: &[&str]) -> Command {
    let before = source_files(repo);
    let out = patch(repo, args).output().expect("runs");
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(source_files(repo), before, "a refusal changes nothing");
    assert!(
        !repo.join(".npuprof").exists(),
        "a refusal writes no journal"
    );
    patch(repo, args)
}

#[test]
fn refuses_unknown_config() {
    let repo = copy_example();
    with_filters!(repo.path(), {
        assert_cmd_snapshot!(check_refusal(
            repo.path(),
            &["--model", "deepseek-mini", "--yaml", "nope.yaml"]
        ));
    });
}

#[test]
fn refuses_config_without_model_config() {
    let repo = copy_example();
    assert_cmd_snapshot!(check_refusal(
        repo.path(),
        &["--model", "wan-mini", "--yaml", "t2v.yaml"]
    ));
}

#[test]
fn refuses_decode_on_prefill_only_config() {
    let repo = copy_example();
    assert_cmd_snapshot!(check_refusal(
        repo.path(),
        &[
            "--model",
            "deepseek-mini",
            "--yaml",
            "prefill_only.yaml",
            "--phase",
            "decode"
        ]
    ));
}

#[test]
fn refuses_python_syntax_error() {
    let repo = copy_example();
    let path = repo.path().join("executor/utils/profiler_context.py");
    let text = fs::read_to_string(&path).expect("read");
    fs::write(
        &path,
        text.replace(
            "def step(self):\n        self.current_profiler.step()",
            "def step(self)\n        self.current_profiler.step()",
        ),
    )
    .expect("write");
    assert_cmd_snapshot!(check_refusal(
        repo.path(),
        &["--model", "qwen-mini", "--yaml", "dense.yaml"]
    ));
}

/// No function builds a torch_npu profiler with a schedule: nothing to set.
#[test]
fn refuses_missing_functions() {
    let repo = copy_example();
    let path = repo.path().join("executor/utils/profiler_context.py");
    let text = fs::read_to_string(&path).expect("read");
    fs::write(
        &path,
        text.replace("torch_npu.profiler.profile(", "make_profiler("),
    )
    .expect("write");
    assert_cmd_snapshot!(check_refusal(
        repo.path(),
        &["--model", "qwen-mini", "--yaml", "dense.yaml"]
    ));
}

#[test]
fn refuses_config_outside_the_repository() {
    let repo = copy_example();
    let outside = tempfile::tempdir().expect("temp dir");
    let target = outside.path().join("dense.yaml");
    fs::copy(
        repo.path().join("models/qwen-mini/config/dense.yaml"),
        &target,
    )
    .expect("copy");
    let link = repo.path().join("models/qwen-mini/config/linked.yaml");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let mut settings = filters(outside.path());
    settings.extend(filters(repo.path()));
    let settings: Vec<(&str, &str)> = settings.iter().map(|(a, b)| (a.as_str(), *b)).collect();
    insta::with_settings!({ filters => settings }, {
        assert_cmd_snapshot!(check_refusal(repo.path(), &["--model", "qwen-mini", "--yaml", "linked.yaml"]));
    });
}

#[test]
fn refuses_a_repository_without_the_profiler() {
    let repo = tempfile::tempdir().expect("temp dir");
    fs::create_dir_all(repo.path().join("models/m/config")).expect("mkdir");
    fs::write(
        repo.path().join("models/m/config/c.yaml"),
        "model_config:\n  enable_profiler: False\n",
    )
    .expect("write");
    with_filters!(repo.path(), {
        assert_cmd_snapshot!(check_refusal(
            repo.path(),
            &["--model", "m", "--yaml", "c.yaml"]
        ));
    });
}

/// Runs the README's dry run with the given colour environment and returns its stdout.
fn dry_run_stdout(color_env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.current_dir(example_repo())
        .arg("patch")
        .args(README_ARGS)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR");
    for (key, value) in color_env {
        cmd.env(key, value);
    }
    let output = cmd.output().expect("run npuprof");
    assert_eq!(
        output.status.code(),
        Some(1),
        "a dry run with changes exits 1"
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

#[test]
fn diff_colour_only_when_forced_and_never_with_no_color() {
    const ESC: char = '\u{1b}';
    // stdout is a pipe here: no colour unless forced.
    assert!(!dry_run_stdout(&[]).contains(ESC));
    let forced = dry_run_stdout(&[("CLICOLOR_FORCE", "1")]);
    assert!(forced.contains(ESC), "CLICOLOR_FORCE colours the diff");
    // NO_COLOR wins over everything.
    assert!(!dry_run_stdout(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).contains(ESC));
}

#[test]
fn refuses_max_new_tokens_18446744073709551615() {
    let repo = copy_example();
    assert_cmd_snapshot!(check_refusal(
        repo.path(),
        &[
            "--model",
            "deepseek-mini",
            "--yaml",
            "decode_mtp.yaml",
            "--max-new-tokens",
            "18446744073709551615"
        ]
    ));
}

/// Python uses the last of two top-level definitions: patch edits that one, not the first.
#[test]
fn with_two_top_level_create_profiler_definitions_patch_edits_the_last_one() {
    let repo = copy_example();
    let path = repo.path().join("executor/utils/profiler_context.py");
    let text = fs::read_to_string(&path).expect("read");
    support::append_second_create_profiler(repo.path());
    let out = patch(repo.path(), &[&README_ARGS[..], &["--json"]].concat())
        .output()
        .expect("runs");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let python = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "executor/utils/profiler_context.py")
        .expect("the Python is edited");
    let last_def = text.lines().count() + 2;
    for edit in python["edits"].as_array().unwrap() {
        assert!(
            edit["line"].as_u64().unwrap() as usize >= last_def,
            "an edit outside the last definition: {edit}"
        );
    }
    assert!(python["diff"].as_str().unwrap().contains(
        "-def create_profiler(enable_profiler=False, profile_save_path=\"prof\", active=7"
    ));
}

/// A patch of a file other models run too (the shared engine's profiler_context.py) says so:
/// which models, and that revert restores it; a patch of a model's own loop names none.
#[test]
fn a_patch_names_the_other_models_that_run_the_file_it_edits() {
    let dir = copy_example();
    let output = patch(
        dir.path(),
        &[
            "--model",
            "deepseek-mini",
            "--yaml",
            "decode_mtp.yaml",
            "--dry-run",
            "--json",
        ],
    )
    .output()
    .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        report["shared"],
        serde_json::json!([{"path": "executor/utils/profiler_context.py", "models": ["qwen-mini"]}])
    );
    let human = patch(
        dir.path(),
        &[
            "--model",
            "deepseek-mini",
            "--yaml",
            "decode_mtp.yaml",
            "--dry-run",
        ],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(
        stderr.contains(
            "note: executor/utils/profiler_context.py is run by 1 other model(s) too (qwen-mini): \
             their runs record with this window until `npuprof revert` restores it"
        ),
        "{stderr}"
    );
    let own_loop = patch(
        dir.path(),
        &[
            "--model",
            "kimi_k3",
            "--yaml",
            "kimi_mini_rank_1.yaml",
            "--dry-run",
            "--json",
        ],
    )
    .output()
    .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&own_loop.stdout).unwrap();
    assert_eq!(report["shared"], serde_json::json!([]), "{report}");
}
