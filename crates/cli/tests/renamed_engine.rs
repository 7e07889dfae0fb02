//! The proof that a serving engine is data: a renamed fork of vLLM-Ascend (its package
//! `fork_ascend`, its environment variables `FORK_PROFILER_*`, its config flag and keys, its serve
//! command `forkserve launch MODEL --listen-port P --tp-size T`), described only by a definition
//! file generated from the bundled `vllm-ascend.yaml` and loaded through `NPUPROF_DEFINITIONS`.
//! `route` and `plan --engine` read the fork's checkout, and `collect --engine` drives the fork's server (the
//! fake vLLM behind a wrapper that speaks only the fork's names) to a verified two-rank profile.

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use insta_cmd::get_cargo_bin;
use serde_json::Value;
use support::workspace_root;

/// vLLM-Ascend's names and the fork's, in the order the texts are rewritten.
const RENAMES: &[(&str, &str)] = &[
    ("vllm-ascend", "fork-serve"),
    ("vllm_ascend", "fork_ascend"),
    ("VLLM_TORCH_PROFILER_", "FORK_PROFILER_"),
    ("torch_profiler_", "fork_profiler_"),
    ("--profiler-config", "--fork-config"),
    ("[vllm, serve, MODEL]", "[forkserve, launch, MODEL]"),
    ("subcommand: serve", "subcommand: launch"),
    ("port: [--port]", "port: [--listen-port]"),
    ("[--tensor-parallel-size, -tp]", "[--tp-size]"),
];

fn renamed(text: &str) -> String {
    RENAMES
        .iter()
        .fold(text.to_owned(), |t, (from, to)| t.replace(from, to))
}

/// The fork's definition file in `dir`.
fn definition(dir: &Path) -> PathBuf {
    let bundled = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../repository/definitions/vllm-ascend.yaml"),
    )
    .expect("the bundled definition");
    let file = dir.join("fork-serve.yaml");
    fs::write(&file, renamed(&bundled)).expect("write the definition");
    file
}

/// The fork's definition file in `dir` with `from` replaced by `to`.
fn broken_definition(dir: &Path, from: &str, to: &str) -> PathBuf {
    let file = definition(dir);
    let text = fs::read_to_string(&file).expect("read");
    assert!(text.contains(from), "{from}");
    fs::write(&file, text.replace(from, to)).expect("write");
    file
}

/// An environment-era checkout of the fork: the miniature vLLM-Ascend one, every path and text
/// renamed.
fn fork_checkout(root: &Path) {
    let original = tempfile::tempdir().expect("temp dir");
    support::vllm_checkout::env_era(original.path());
    for (rel, bytes) in support::all_files(original.path()) {
        let (rel, text) = (
            rel.display().to_string(),
            String::from_utf8(bytes).expect("UTF-8"),
        );
        support::vllm_checkout::write(root, &renamed(&rel), &renamed(&text));
    }
}

/// The fork's serve command: translates the fork's command line and variables into the fake
/// vLLM's, and refuses vLLM's own names (which the fork does not read).
const WRAPPER: &str = r#"import os
import sys

fake, argv = sys.argv[1], sys.argv[2:]
env = dict(os.environ)
if any(k.startswith("VLLM_TORCH_PROFILER") for k in env) or any("--profiler-config" in a for a in argv):
    sys.exit("forkserve: vLLM's profiler names are not the fork's")
if not argv or argv[0] != "launch":
    sys.exit("usage: forkserve launch MODEL [--listen-port P] [--tp-size T]")
names = {"launch": "serve", "--listen-port": "--port", "--tp-size": "-tp"}
for k in [k for k in env if k.startswith("FORK_PROFILER_")]:
    env[k.replace("FORK_PROFILER_", "VLLM_TORCH_PROFILER_")] = env.pop(k)
os.execve(sys.executable, [sys.executable, fake] + [names.get(a, a) for a in argv], env)
"#;

fn npuprof(definitions: Option<&Path>, args: &[&str]) -> Command {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.args(args)
        .env("NO_COLOR", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("NPUPROF_DEFINITIONS")
        .env_remove("VLLM_TORCH_PROFILER_DIR")
        .env_remove("FAKE_VLLM_FAULT")
        .env_remove("FAKE_VLLM_ERA");
    if let Some(file) = definitions {
        cmd.env("NPUPROF_DEFINITIONS", file);
    }
    cmd
}

fn json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn route_and_plan_read_the_fork_s_checkout_by_its_definition() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = definition(dir.path());
    let checkout = dir.path().join("checkout");
    fork_checkout(&checkout);
    let repo = checkout.display().to_string();
    let args = ["plan", "--engine", "fork-serve", "--repo", &repo, "--json"];

    let out = npuprof(Some(&file), &args).output().expect("run npuprof");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let plan = json(&out);
    assert_eq!(plan["engine"], "fork-serve", "{plan}");
    assert_eq!(plan["config_style"], "env", "{plan}");
    assert_eq!(plan["from_source"], true, "{plan}");
    assert_eq!(
        (plan["level"].as_str(), plan["aic_metrics"].as_str()),
        (Some("Level1"), Some("AiCoreNone"))
    );

    // route recognises the fork's package and suggests the fork's collect and serve command.
    let route = npuprof(Some(&file), &["route", &repo, "--json"])
        .output()
        .expect("run npuprof");
    let route = json(&route);
    assert_eq!(route["engine"]["id"], "fork-serve", "{route}");
    assert_eq!(
        route["next"]["command"],
        "npuprof collect --engine fork-serve -- forkserve launch MODEL"
    );

    // Without the definition file the fork is unknown, and vLLM-Ascend's definition does not
    // see its own package in the fork's checkout.
    let unknown = npuprof(None, &args).output().expect("run npuprof");
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("fork-serve"));
    let vllm = ["plan", "--engine", "vllm-ascend", "--repo", &repo];
    let other = npuprof(Some(&file), &vllm).output().expect("run npuprof");
    assert_eq!(other.status.code(), Some(2), "{other:?}");
}

#[test]
fn a_broken_fork_definition_names_its_file_and_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = definition(dir.path());
    let text = fs::read_to_string(&file).expect("read");
    fs::write(
        &file,
        text.replace("port: [--listen-port]", "port: [listen-port]"),
    )
    .expect("write");
    // Named by --engine: the value is refused with the file's error, not as an unknown id.
    let out = npuprof(Some(&file), &["collect", "--engine", "fork-serve"])
        .output()
        .expect("run npuprof");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("fork-serve.yaml`: command.port: must list options"),
        "{stderr}"
    );
}

#[test]
fn a_broken_fork_definition_stops_a_command_that_reads_the_catalog() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = broken_definition(dir.path(), "health: /health", "health: health");
    let out = npuprof(Some(&file), &["route", "--json"])
        .current_dir(dir.path())
        .output()
        .expect("run npuprof");
    assert_eq!(out.status.code(), Some(2));
    let error = json(&out);
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("fork-serve.yaml`: http.health: endpoint `health`"),
        "{error}"
    );
}

#[test]
fn collect_drives_the_fork_s_server_by_its_definition() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = definition(dir.path());
    let checkout = dir.path().join("checkout");
    fork_checkout(&checkout);
    let wrapper = dir.path().join("forkserve.py");
    fs::write(&wrapper, WRAPPER).expect("write the wrapper");
    let work = dir.path().join("work");
    fs::create_dir_all(work.join("home")).expect("work dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
        .to_string();
    let fake = workspace_root().join("tests/fake_vllm/bin/vllm");
    let (fake, wrapper, source) = (
        fake.display().to_string(),
        wrapper.display().to_string(),
        checkout.display().to_string(),
    );
    #[rustfmt::skip]
    let args = [
        "collect", "--engine", "fork-serve", "--engine-source", &source, "--json",
        "--requests", "4", "--prompt-len", "8", "--output-len", "6", "--concurrency", "2",
        "--warmup", "1", "--quiet", "0.5", "--grace", "1", "--profile-dir", "prof",
        "--", "python3", &wrapper, &fake, "launch", "fake-model", "--listen-port", &port,
        "--tp-size", "2",
    ];
    let out = npuprof(Some(&file), &args)
        .current_dir(&work)
        .env("HOME", work.join("home"))
        .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
        .env("FAKE_VLLM_ERA", "env")
        .output()
        .expect("run npuprof");
    let report = json(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{report}\n{stderr}");
    assert_eq!(report["engine"], "fork-serve");
    assert_eq!(report["config_style"], "env");
    let env: Vec<&str> = report["env"]
        .as_array()
        .expect("env")
        .iter()
        .filter_map(|pair| pair[0].as_str())
        .collect();
    assert_eq!(env, ["FORK_PROFILER_DIR", "FORK_PROFILER_WITH_STACK"]);
    // The port came from --listen-port and the two ranks from --tp-size.
    assert!(
        report["url"].as_str().is_some_and(|u| u.ends_with(&port)),
        "{report}"
    );
    assert_eq!(report["expected_ranks"], 2, "{report}");
    assert_eq!(report["runs"].as_array().map(Vec::len), Some(2), "{report}");
    assert_eq!(report["load"]["succeeded"], 4, "{report}");
}
