//! The proof that a repository's layout is data: a renamed-layout fork of cann-recipes-infer
//! (models under `recipes/`, run configs under `recipes/<m>/yamls/`, results under `out/`, the
//! launcher `run.sh` sourcing `launch_lib.sh`), generated from `examples/recipes-mini` and
//! described only by `tests/data/renamed-layout.yaml` (loaded through `NPUPROF_DEFINITIONS`).
//! route, plan, patch, revert and relocate give on the fork exactly what they give on the
//! example, with the fork's names, and collect runs the fork's launcher under the fake torch_npu.

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use insta_cmd::get_cargo_bin;

/// The example's names and the fork's, in the order the texts are rewritten.
const RENAMES: &[(&str, &str)] = &[
    ("function.sh", "launch_lib.sh"),
    ("executor/scripts/infer.sh", "executor/scripts/run.sh"),
    ("scripts/infer.sh", "scripts/run.sh"),
    ("infer.sh --yaml", "run.sh --yaml"),
    ("under config/", "under yamls/"),
    ("models/", "recipes/"),
    ("/config/", "/yamls/"),
    ("/config\"", "/yamls\""),
    ("\"res/", "\"out/"),
    ("/res/", "/out/"),
    ("/res\"", "/out\""),
];

/// The fork's definition file.
fn definition() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/renamed-layout.yaml")
}

/// The fork's path for an example path (`models/<m>/config/x` → `recipes/<m>/yamls/x`; the
/// launcher scripts renamed; everything else as it is).
fn fork_path(rel: &str) -> String {
    let parts: Vec<&str> = rel.split('/').collect();
    match parts.as_slice() {
        ["models", model, "config", rest @ ..] => {
            format!("recipes/{model}/yamls/{}", rest.join("/"))
        }
        ["models", rest @ ..] => format!("recipes/{}", rest.join("/")),
        ["executor", "scripts", "infer.sh"] => "executor/scripts/run.sh".to_owned(),
        ["executor", "scripts", "function.sh"] => "executor/scripts/launch_lib.sh".to_owned(),
        _ => rel.to_owned(),
    }
}

/// A model's own Python package named `models` (`models/glm_5_2/models/model_infer.py`): not the
/// layout's directory, so not renamed.
const OWN_PACKAGE: (&str, &str) = ("/models/model_infer", "/\u{0}/model_infer");

/// `text` with the example's names replaced by the fork's.
fn renamed(text: &str) -> String {
    let kept = text.replace(OWN_PACKAGE.0, OWN_PACKAGE.1);
    RENAMES
        .iter()
        .fold(kept, |t, (from, to)| t.replace(from, to))
        .replace(OWN_PACKAGE.1, OWN_PACKAGE.0)
}

/// Writes the fork of `examples/recipes-mini` into `to`: every file at its fork path, the
/// launcher scripts' texts renamed (the Python is left as it is: it names no layout path).
fn generate_fork(to: &Path) {
    let example = support::copy_example("recipes-mini");
    for (rel, bytes) in support::source_files(example.path()) {
        let rel = rel.to_string_lossy().into_owned();
        let target = to.join(fork_path(&rel));
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        if rel.ends_with(".sh") {
            fs::write(&target, renamed(&String::from_utf8(bytes).unwrap())).unwrap();
        } else {
            fs::write(&target, bytes).unwrap();
        }
    }
    assert!(!to.join("models").exists() && to.join("recipes/deepseek-mini/yamls").is_dir());
}

/// The example and its fork, side by side.
struct Pair {
    _dir: tempfile::TempDir,
    example: PathBuf,
    fork: PathBuf,
}

fn pair() -> Pair {
    let dir = tempfile::tempdir().unwrap();
    let example = dir.path().join("example");
    let fork = dir.path().join("fork");
    support::copy_tree(
        &support::workspace_root().join("examples/recipes-mini"),
        &example,
    );
    generate_fork(&fork);
    Pair {
        example: example.canonicalize().unwrap(),
        fork: fork.canonicalize().unwrap(),
        _dir: dir,
    }
}

/// Runs npuprof in `cwd` with the fork's definition loaded.
fn npuprof(cwd: &Path, args: &[&str]) -> Output {
    npuprof_with(&definition(), cwd, args)
}

/// Runs npuprof in `cwd` with the definition file `definitions` loaded.
fn npuprof_with(definitions: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(get_cargo_bin("npuprof"))
        .args(args)
        .current_dir(cwd)
        .env("NPUPROF_DEFINITIONS", definitions)
        .env_remove("CI")
        .output()
        .unwrap()
}

/// stdout and stderr with the repository's path replaced by `[REPO]`.
fn text(output: &Output, repo: &Path) -> (Option<i32>, String, String) {
    let clean = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes).replace(&repo.display().to_string(), "[REPO]")
    };
    (
        output.status.code(),
        clean(&output.stdout),
        clean(&output.stderr),
    )
}

/// Runs `args` (written for the example) on the example and, renamed, on the fork, and checks
/// that the fork's output is the example's with the fork's names.
fn check_same(pair: &Pair, args: &[&str]) -> (Option<i32>, String, String) {
    let on_example = text(&npuprof(&pair.example, args), &pair.example);
    let fork_args: Vec<String> = args.iter().map(|a| renamed(a)).collect();
    let fork_args: Vec<&str> = fork_args.iter().map(String::as_str).collect();
    let on_fork = text(&npuprof(&pair.fork, &fork_args), &pair.fork);
    let expected = (on_example.0, renamed(&on_example.1), renamed(&on_example.2));
    if on_fork != expected {
        let first = |a: &str, b: &str| {
            a.lines()
                .zip(b.lines())
                .find(|(x, y)| x != y)
                .map(|(x, y)| format!("fork:    {x}\nexample: {y}"))
                .unwrap_or_else(|| format!("fork:\n{a}\nexample:\n{b}"))
        };
        panic!(
            "npuprof {args:?}: the fork differs (exit {:?} vs {:?})\nstdout: {}\nstderr: {}",
            on_fork.0,
            expected.0,
            first(&on_fork.1, &expected.1),
            first(&on_fork.2, &expected.2)
        );
    }
    on_fork
}

#[test]
fn route_resolves_the_fork_the_way_it_resolves_the_example() {
    let pair = pair();
    for yaml in [
        "decode_mtp.yaml",
        "deepseek-mini_pd/prefill.yaml",
        "prefill_only.yaml",
    ] {
        let (code, stdout, _) = check_same(
            &pair,
            &[
                "route",
                "--model",
                "deepseek-mini",
                "--yaml",
                yaml,
                "--json",
            ],
        );
        assert_eq!(code, Some(0), "{stdout}");
    }
    let (_, stdout, _) = check_same(
        &pair,
        &[
            "route",
            "--model",
            "deepseek-mini",
            "--yaml",
            "decode_mtp.yaml",
        ],
    );
    insta::assert_snapshot!("fork_route_target", stdout);
    assert!(
        stdout.contains(
            "launch:  bash executor/scripts/run.sh --model deepseek-mini --yaml decode_mtp.yaml"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("results: recipes/deepseek-mini/out/<YYYYMMDD>/"),
        "{stdout}"
    );
    assert!(
        stdout.contains("executor/scripts/launch_lib.sh:"),
        "the launcher's evidence is the fork's script: {stdout}"
    );
    // A model with its own entry, launched from its own directory.
    let (_, stdout, _) = check_same(
        &pair,
        &[
            "route",
            "--model",
            "glm_5_2",
            "--yaml",
            "glm_mini_rank_2.yaml",
        ],
    );
    assert!(
        stdout.contains("cd recipes/glm_5_2 && bash ../../executor/scripts/run.sh"),
        "{stdout}"
    );
    check_same(&pair, &["route", "--model", "deepseek-mini", "--json"]);
    check_same(&pair, &["route", "--model", "nosuch", "--yaml", "x.yaml"]);
    check_same(
        &pair,
        &["route", "--model", "deepseek-mini", "--yaml", "../x.yaml"],
    );
}

#[test]
fn the_scan_places_the_forks_run_configs_and_the_root_is_found_by_its_markers() {
    let pair = pair();
    let (code, stdout, _) = text(&npuprof(&pair.fork, &["route", "--json"]), &pair.fork);
    assert_eq!(code, Some(0), "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let config = report["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == "recipes/deepseek-mini/yamls/decode_mtp.yaml")
        .unwrap_or_else(|| panic!("no fork config in {stdout}"));
    assert_eq!(config["model"], "deepseek-mini", "{config}");
    assert_eq!(config["profilable"]["decode"], true, "{config}");
    // From inside a model directory, with a run config given as a path.
    let inside = pair.fork.join("recipes/deepseek-mini");
    let (code, stdout, stderr) = text(
        &npuprof(
            &inside,
            &["plan", "--config", "yamls/decode_mtp.yaml", "--json"],
        ),
        &pair.fork,
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("recipes/deepseek-mini/yamls/decode_mtp.yaml"),
        "{stdout}"
    );
}

#[test]
fn plan_patch_and_revert_work_on_the_fork() {
    let pair = pair();
    let args = [
        "--model",
        "deepseek-mini",
        "--yaml",
        "decode_mtp.yaml",
        "--decode-active",
        "5",
        "--phase",
        "decode",
        "--json",
    ];
    let plan: Vec<&str> = ["plan"].into_iter().chain(args).collect();
    check_same(&pair, &plan);
    let dry: Vec<&str> = ["patch"]
        .into_iter()
        .chain(args)
        .chain(["--dry-run"])
        .collect();
    check_same(&pair, &dry);
    let before = support::source_files(&pair.fork);
    let patch: Vec<&str> = ["patch"].into_iter().chain(args).collect();
    let (code, stdout, stderr) = check_same(&pair, &patch);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("recipes/deepseek-mini/yamls/decode_mtp.yaml"),
        "the fork's run config is patched: {stdout}"
    );
    assert_ne!(support::source_files(&pair.fork), before);
    let (code, _, stderr) = text(&npuprof(&pair.fork, &["revert"]), &pair.fork);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        support::source_files(&pair.fork),
        before,
        "revert restores the fork byte for byte"
    );
}

#[test]
fn relocate_moves_the_forks_output_directory() {
    let pair = pair();
    let out = pair.fork.join("recipes/deepseek-mini/out");
    fs::create_dir_all(out.join("20260101/case")).unwrap();
    let local = tempfile::tempdir().unwrap();
    let to = local.path().join("res-local");
    let (code, stdout, stderr) = text(
        &npuprof(
            &pair.fork,
            &[
                "relocate",
                "--model",
                "deepseek-mini",
                "--to",
                to.to_str().unwrap(),
                "--json",
            ],
        ),
        &pair.fork,
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["res"], "recipes/deepseek-mini/out", "{stdout}");
    assert!(fs::symlink_metadata(&out).unwrap().is_symlink());
    let (code, _, stderr) = text(&npuprof(&pair.fork, &["revert"]), &pair.fork);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        out.join("20260101/case").is_dir(),
        "revert puts the output back"
    );
}

#[test]
fn a_broken_definition_file_is_refused_naming_the_file_and_key() {
    let pair = pair();
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    let text_ = fs::read_to_string(definition())
        .unwrap()
        .replace("  configs: yamls\n", "");
    fs::write(&bad, text_).unwrap();
    let output = npuprof_with(
        &bad,
        &pair.fork,
        &[
            "route",
            "--model",
            "deepseek-mini",
            "--yaml",
            "decode_mtp.yaml",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.yaml") && stderr.contains("layout") && stderr.contains("configs"),
        "{stderr}"
    );
}

#[test]
fn collect_runs_the_forks_launcher_and_finds_its_results() {
    let pair = pair();
    let before = support::source_files(&pair.fork);
    let state = tempfile::tempdir().unwrap();
    // The fork's launcher also sets an environment variable: collect's "running" line says it.
    let fork = fs::read_to_string(definition()).unwrap();
    let argv = "    argv: [bash, \"{script}\", --model, \"{model}\"]\n";
    assert!(fork.contains(argv));
    let with_env = fork.replacen(
        argv,
        &format!("{argv}    env: {{FORK_RUN: \"{{model}} run\"}}\n"),
        1,
    );
    let definitions = state.path().join("fork.yaml");
    fs::write(&definitions, with_env).unwrap();
    let output = Command::new(get_cargo_bin("npuprof"))
        .args([
            "collect",
            "--model",
            "deepseek-mini",
            "--yaml",
            "decode_mtp.yaml",
            "--decode-active",
            "3",
            "--phase",
            "decode",
            "--json",
        ])
        .current_dir(&pair.fork)
        .env("NPUPROF_DEFINITIONS", &definitions)
        .env("NO_COLOR", "1")
        .env("TMPDIR", state.path())
        .env("XDG_STATE_HOME", state.path().join("state"))
        .env(
            "PYTHONPATH",
            support::workspace_root().join("tests/fake_torch_npu"),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let (code, stdout, stderr) = text(&output, &pair.fork);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let result_dir = report["runs"][0]["result_dir"].as_str().unwrap_or_default();
    assert!(
        result_dir.contains("recipes/deepseek-mini/out/"),
        "{report:#}"
    );
    assert_eq!(report["outcome"], "clean", "{report:#}");
    assert_eq!(
        report["config"],
        "recipes/deepseek-mini/yamls/decode_mtp.yaml"
    );
    assert!(
        stderr.contains("running `FORK_RUN='deepseek-mini run' bash "),
        "{stderr}"
    );
    let after = support::source_files(&pair.fork);
    let changed: Vec<_> = after
        .keys()
        .filter(|rel| !rel.starts_with("recipes/deepseek-mini/out"))
        .filter(|rel| before.get(*rel) != after.get(*rel))
        .collect();
    assert!(changed.is_empty(), "collect left changes: {changed:?}");
}

/// A definition file is code npuprof trusts (its launcher runs): every path in it is checked
/// as the layout's are — a root marker that is no name (`/` would claim every repository), a
/// `..` or absolute path in a factory file, a working directory or a result path — and the
/// error names the file and the key; a definitions path that is a device or a FIFO is refused
/// at once, not read forever.
#[test]
fn hostile_definitions_are_refused_by_file_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let text = fs::read_to_string(definition()).unwrap();
    let cases = [
        (
            "root_markers",
            "root_markers: [executor, recipes]",
            "root_markers: [\"/\"]",
            "layout.root_markers",
        ),
        (
            "factory",
            "factory_files: [executor/utils/profiler_context.py]",
            "factory_files: [../../etc/profile.py]",
            "factory_files[0]",
        ),
        (
            "cwd",
            "shared: \".\"",
            "shared: \"/tmp\"",
            "layout.launcher.cwd.shared",
        ),
    ];
    for (name, from, to, key) in cases {
        assert!(text.contains(from), "{name}: the fork's definition changed");
        let hostile = text.replacen(from, to, 1);
        assert_ne!(hostile, text, "{name}");
        let file = tmp.path().join(format!("{name}.yaml"));
        fs::write(&file, hostile).unwrap();
        let out = npuprof_with(&file, tmp.path(), &["route", "."]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains(&file.display().to_string()) && stderr.contains(key),
            "{name}: {stderr}"
        );
    }
    let fifo = tmp.path().join("fifo.yaml");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    for (path, kind) in [
        (Path::new("/dev/zero"), "character device"),
        (fifo.as_path(), "named pipe"),
    ] {
        let started = std::time::Instant::now();
        let out = npuprof_with(path, tmp.path(), &["route", "."]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(kind), "{stderr}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
}

/// route says which definition file applies and why: the fork's file, by its root markers.
#[test]
fn route_names_the_definition_file_that_matched_and_why() {
    let pair = pair();
    let out = npuprof(&pair.fork, &["route", ".", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["definition"]["source"],
        definition().display().to_string(),
        "{}",
        report["definition"]
    );
    assert_eq!(
        report["definition"]["why"],
        "its root markers (executor/, recipes/) are here"
    );
}
