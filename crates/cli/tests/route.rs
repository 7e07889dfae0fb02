//! `npuprof route` end to end: human and JSON output on the bundled examples and on variants,
//! warnings on stderr, exit codes. Commands run from the workspace root with relative paths,
//! or on temporary directories whose path is filtered to `[TMP]`.

use std::fs;
use std::path::Path;
use std::process::Command;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

mod support;
use support::workspace_root;

/// `npuprof route <args>` run from the workspace root, without colour.
fn route(args: &[&str]) -> Command {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.current_dir(workspace_root())
        .env("NO_COLOR", "1")
        .arg("route")
        .args(args);
    cmd
}

/// `npuprof route <args>` run from a temporary directory (so paths in the output, and in the
/// snapshot's recorded arguments, are relative); any absolute temp path left is `[TMP]`.
fn route_in(tmp: &Path, args: &[&str]) -> Command {
    let mut cmd = route(args);
    cmd.current_dir(tmp);
    cmd
}

/// Runs `check` with the temporary directory's path replaced by `[TMP]` in snapshots.
fn with_tmp_filter(tmp: &Path, check: impl FnOnce()) {
    let mut settings = insta::Settings::clone_current();
    let escaped: String = tmp
        .display()
        .to_string()
        .chars()
        .flat_map(|c| {
            let escape = "\\.+*?()|[]{}^$".contains(c);
            escape.then_some('\\').into_iter().chain(std::iter::once(c))
        })
        .collect();
    settings.add_filter(&escaped, "[TMP]");
    settings.bind(check);
}

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("create dir");
    fs::write(path, bytes).expect("write");
}

#[test]
fn recipes_mini_human() {
    assert_cmd_snapshot!(route(&["examples/recipes-mini"]));
}

#[test]
fn recipes_mini_json() {
    assert_cmd_snapshot!(route(&["examples/recipes-mini", "--json"]));
}

#[test]
fn plain_infer_human() {
    assert_cmd_snapshot!(route(&["examples/plain-infer"]));
}

#[test]
fn plain_infer_json() {
    assert_cmd_snapshot!(route(&["examples/plain-infer", "--json"]));
}

#[test]
fn vllm_env_human() {
    assert_cmd_snapshot!(route(&["crates/route/tests/fixtures/vllm-env"]));
}

#[test]
fn profile_loop_human() {
    assert_cmd_snapshot!(route(&["crates/route/tests/fixtures/profile-loop"]));
}

#[test]
fn comment_only_human() {
    assert_cmd_snapshot!(route(&["crates/route/tests/fixtures/comment-only"]));
}

#[test]
fn scattered_human() {
    assert_cmd_snapshot!(route(&["crates/route/tests/fixtures/scattered"]));
}

#[test]
fn broken_yaml_warns_on_stderr() {
    assert_cmd_snapshot!(route(&["crates/route/tests/fixtures/broken-yaml"]));
}

#[test]
fn missing_path_exits_2() {
    assert_cmd_snapshot!(route(&["no/such/repo"]));
}

#[test]
fn file_instead_of_directory_exits_2() {
    assert_cmd_snapshot!(route(&[
        "examples/recipes-mini/executor/model_runner.py",
        "--json"
    ]));
}

#[test]
fn symlink_loop_and_non_utf8_are_warnings() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("repo");
    write(
        &root,
        "run.py",
        b"import torch_npu\n\nif __name__ == \"__main__\":\n    pass\n",
    );
    write(
        &root,
        "latin1.py",
        b"import torch_npu\n# caf\xe9\nprof = torch_npu.profiler.profile()\n",
    );
    fs::create_dir_all(root.join("sub")).expect("mkdir");
    std::os::unix::fs::symlink("..", root.join("sub/back")).expect("symlink");
    with_tmp_filter(tmp.path(), || {
        assert_cmd_snapshot!("symlink_loop_human", route_in(tmp.path(), &["repo"]));
        assert_cmd_snapshot!(
            "symlink_loop_json",
            route_in(tmp.path(), &["repo", "--json"])
        );
    });
}

#[test]
fn dangling_symlink_and_fifo_are_skipped_without_hanging() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("repo");
    write(
        &root,
        "a.py",
        b"import torch_npu\nprof = torch_npu.profiler.profile()\n",
    );
    std::os::unix::fs::symlink("missing/target.py", root.join("b.py")).expect("symlink");
    let fifo = Command::new("mkfifo")
        .arg(root.join("c.py"))
        .status()
        .expect("mkfifo");
    assert!(fifo.success());
    // Reading the FIFO would block forever; the scan must skip it and finish.
    let output = route_in(tmp.path(), &["repo", "--json"])
        .output()
        .expect("run npuprof");
    assert_eq!(output.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(report["route"], "inject");
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("b.py") && warnings.contains("cannot read"),
        "{warnings}"
    );
    assert_eq!(report["evidence"][0]["path"], "a.py");
}

#[test]
fn crlf_tabs_variant_routes_as_framework() {
    // The recipes-style wrapper and engine, tab-indented with CRLF line endings.
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("repo");
    let examples = workspace_root().join("examples/recipes-mini");
    for rel in [
        "executor/utils/profiler_context.py",
        "executor/core/engine/execution_engine.py",
        "models/deepseek-mini/config/decode_mtp.yaml",
    ] {
        let text = fs::read_to_string(examples.join(rel)).expect("read example");
        let mut out = String::new();
        for line in text.lines() {
            let body = line.trim_start_matches(' ');
            let indent = line.len() - body.len();
            if rel.ends_with(".py") {
                out.push_str(&"\t".repeat(indent / 4));
                out.push_str(&" ".repeat(indent % 4));
            } else {
                out.push_str(&" ".repeat(indent));
            }
            out.push_str(body);
            out.push_str("\r\n");
        }
        write(&root, rel, out.as_bytes());
    }
    with_tmp_filter(tmp.path(), || {
        assert_cmd_snapshot!("crlf_tabs_human", route_in(tmp.path(), &["repo"]));
    });
}

/// From a sub-directory of the repository, `route --model` walks up to the repository root.
#[test]
fn route_model_walks_up_from_a_sub_directory() {
    let repo = support::copy_example("recipes-mini");
    let out = Command::new(get_cargo_bin("npuprof"))
        .args([
            "route",
            "--model",
            "deepseek-mini",
            "--yaml",
            "decode_mtp.yaml",
        ])
        .current_dir(repo.path().join("models/deepseek-mini/config"))
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("family A"), "{text}");
    assert!(
        text.contains("executor/utils/profiler_context.py"),
        "{text}"
    );
}

/// A misspelt model or config gets "did you mean" (not the whole list); a file under config/
/// that is not YAML (upstream keeps a README.md there) is not read as a run config.
#[test]
fn did_you_mean_for_models_and_configs() {
    let repo = support::copy_example("recipes-mini");
    fs::write(
        repo.path().join("models/deepseek-mini/config/README.md"),
        "### YAML Parameter Description\nBasic Config\n  model_name: x\n",
    )
    .expect("readme");
    for (args, expected) in [
        (
            ["--model", "deepseek-mini", "--yaml", "README.md"],
            "(a run config is a .yaml file); available: afd.yaml,",
        ),
        (
            ["--model", "deepseek_mini", "--yaml", "decode_mtp.yaml"],
            "did you mean `deepseek-mini`?",
        ),
        (
            ["--model", "deepseek-mini", "--yaml", "decode-mtp.yaml"],
            "did you mean `decode_mtp.yaml`?",
        ),
    ] {
        let out = Command::new(get_cargo_bin("npuprof"))
            .arg("route")
            .args(args)
            .current_dir(repo.path())
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{err}");
    }
}

/// A model the repository lacks: `--repo` is suggested with the directories up to two levels
/// below the current one that do have it (both ways of naming a model).
#[test]
fn a_missing_model_lists_nearby_repositories_that_have_it() {
    let tmp = tempfile::tempdir().expect("temp dir");
    write(tmp.path(), "a/models/qwen/config/x.yaml", b"");
    write(tmp.path(), "b/c/models/qwen/config/x.yaml", b"");
    write(tmp.path(), "d/models/other/config/x.yaml", b"");
    write(tmp.path(), "e/f/g/models/qwen/config/x.yaml", b"");
    with_tmp_filter(tmp.path(), || {
        assert_cmd_snapshot!(
            "missing_model_with_yaml",
            route_in(tmp.path(), &["--model", "qwen", "--yaml", "x.yaml"])
        );
        assert_cmd_snapshot!(
            "missing_model_listing",
            route_in(tmp.path(), &["--model", "qwen"])
        );
    });
}

#[test]
fn the_next_command_is_shell_quoted_for_hostile_names() {
    let source = fs::read(workspace_root().join("examples/plain-infer/infer.py")).unwrap();
    for (dir, name) in [
        ("repo", "a;touch PWNED;b.py"),
        ("repo", "$(touch PWNED).py"),
        ("-repo", "-c.py"),
        ("it's here", "new\nline.py"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join(dir);
        fs::create_dir(&repo).unwrap();
        fs::write(repo.join(name), &source).unwrap();
        let output = route_in(tmp.path(), &[&format!("./{dir}"), "--json"])
            .output()
            .unwrap();
        let report: serde_json::Value =
            serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
                panic!("{name:?}: {e}: {}", String::from_utf8_lossy(&output.stderr))
            });
        let argv: Vec<String> = serde_json::from_value(report["next"]["argv"].clone()).unwrap();
        let command = report["next"]["command"].as_str().unwrap();
        assert_eq!(
            support::shell_words(command, tmp.path()),
            argv,
            "{name:?}: {command}"
        );
        assert!(
            argv.iter().any(|w| w == &format!("--entry={name}"))
                || argv.windows(2).any(|w| w[0] == "--entry" && w[1] == name),
            "{name:?}: {argv:?}"
        );
        assert!(
            !tmp.path().join("PWNED").exists(),
            "{name:?}: the command ran"
        );
    }
}

/// A tree shaped like npuprof's clone: examples under `examples/`, test fixtures that look
/// like repositories under `tests/` and `crates/*/tests/data/`.
fn clone_like(root: &Path) {
    support::copy_tree(&workspace_root().join("examples"), &root.join("examples"));
    let engine =
        fs::read(workspace_root().join("examples/recipes-mini/executor/utils/profiler_context.py"))
            .expect("the example's profiler");
    write(
        root,
        "crates/x/tests/data/fork/executor/utils/profiler_context.py",
        &engine,
    );
    write(
        root,
        "tests/fake/torch_npu/profiler/__init__.py",
        b"def profile(**kw):\n    pass\n",
    );
    write(root, "crates/x/src/lib.rs", b"");
}

/// Route in a clone-like root skips the test suites and the examples, says so, and points at
/// the examples instead of routing the fixtures as a framework.
#[test]
fn a_clone_root_skips_test_suites_and_examples_and_says_so() {
    let tmp = tempfile::tempdir().expect("temp dir");
    clone_like(tmp.path());
    with_tmp_filter(tmp.path(), || {
        assert_cmd_snapshot!("clone_root_human", route_in(tmp.path(), &["."]));
    });
    let out = route_in(tmp.path(), &[".", "--json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["route"], "inject", "{report}");
    assert_eq!(report["mechanisms"], serde_json::json!([]), "{report}");
    let skipped: Vec<&str> = report["skipped"]
        .as_array()
        .expect("skipped[]")
        .iter()
        .filter_map(|entry| entry["path"].as_str())
        .collect();
    assert_eq!(skipped, ["crates/x/tests", "examples", "tests"], "{report}");
    assert_eq!(
        report["next"]["argv"],
        serde_json::json!(["npuprof", "route", "./examples/plain-infer"]),
        "{report}"
    );
    // The root itself is never skipped: an example routes as itself.
    let example = route_in(tmp.path(), &["examples/recipes-mini", "--json"])
        .output()
        .expect("runs");
    let report: serde_json::Value = serde_json::from_slice(&example.stdout).expect("JSON");
    assert_eq!(report["route"], "framework", "{report}");
}

/// On a repository of 26 models (each with two run configs) the text view stays readable:
/// one line per model instead of one per config, the next step names no model, and every
/// config is still in --json.
#[test]
fn the_text_view_of_a_26_model_repository_is_one_line_per_model() {
    let tmp = tempfile::tempdir().expect("tmp");
    let repo = tmp.path().join("big");
    support::copy_tree(&workspace_root().join("examples/recipes-mini"), &repo);
    let models = repo.join("models");
    for entry in fs::read_dir(&models).expect("models") {
        let entry = entry.expect("entry");
        if entry.file_name() != "qwen-mini" {
            fs::remove_dir_all(entry.path()).expect("rm");
        }
    }
    for i in 1..26 {
        support::copy_tree(
            &models.join("qwen-mini"),
            &models.join(format!("model-{i:02}")),
        );
    }
    let output = route_in(tmp.path(), &["big"]).output().expect("run");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains(
            "configs (52 in 26 models; `npuprof route --model M` lists a model's, --json all):"
        ),
        "{text}"
    );
    assert!(text.contains("\n  model-25  "), "{text}");
    assert!(!text.contains("model-25/config/dense.yaml"), "{text}");
    assert!(
        text.lines().count() < 110,
        "{} lines:\n{text}",
        text.lines().count()
    );
    assert!(
        text.contains("next:  npuprof route --repo big --model <MODEL>"),
        "{text}"
    );
    let json = route_in(tmp.path(), &["big", "--json"])
        .output()
        .expect("run");
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(report["configs"].as_array().map(Vec::len), Some(52));
}

/// `route --model M --json` is the repository route's document for one model: every config
/// holds the same fields with the same values as in `route --json`, and it has a `next`.
#[test]
fn route_with_and_without_model_give_the_same_config_fields() {
    let json = |args: &[&str]| -> serde_json::Value {
        let out = route(args).output().expect("run");
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    let repo = json(&["examples/recipes-mini", "--json"]);
    let model = json(&[
        "--repo",
        "examples/recipes-mini",
        "--model",
        "qwen-mini",
        "--json",
    ]);
    assert_eq!(model["schema_version"], 2);
    let of_model: Vec<&serde_json::Value> = repo["configs"]
        .as_array()
        .expect("configs")
        .iter()
        .filter(|c| c["model"] == "qwen-mini")
        .collect();
    let listed: Vec<&serde_json::Value> = model["configs"]
        .as_array()
        .expect("configs")
        .iter()
        .collect();
    assert_eq!(listed, of_model);
    assert!(model["next"]["note"].is_string(), "{model}");
    assert!(
        model["next"]["command"]
            .as_str()
            .is_some_and(|c| c.ends_with("--model qwen-mini --yaml <YAML>")),
        "{}",
        model["next"]
    );
}
