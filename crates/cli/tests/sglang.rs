//! SGLang, the third engine, end to end against the fake SGLang server
//! (`tests/data/fake_sglang`, under the fake torch_npu): route and plan on miniature sources of
//! the two versions that differ (with and without PR #24835's experimental config), and
//! `collect --engine sglang` for a decode-only window of N steps, a mixed window, start/stop
//! around the load, two tensor-parallel ranks, the older version, a running server (`--url`),
//! and the faults (dies, never healthy, ignores SIGTERM, slow parse, `--timeout`, Ctrl-C). After
//! each collect no process of the server's group is left and nothing outside the profile
//! directory was written.

use std::path::PathBuf;
use std::process::Command;

use insta_cmd::get_cargo_bin;
use serde_json::Value;

mod support;
use support::server::{
    Run, Workdir, check_nothing_left, check_stopped, free_port, group_members_after,
    wait_for_server,
};
use support::{all_files, sglang_checkout, workspace_root};

/// The fake's package directory (for PYTHONPATH).
fn fake_sglang() -> PathBuf {
    workspace_root().join("crates/cli/tests/data/fake_sglang")
}

fn python_path() -> String {
    std::env::join_paths([fake_sglang(), workspace_root().join("tests/fake_torch_npu")])
        .expect("paths")
        .into_string()
        .expect("UTF-8")
}

/// `npuprof collect --engine sglang --json <flags> -- python3 -m sglang.launch_server
/// --model-path fake-model --port P <server args>` in `work`, with the fake's environment `env`:
/// a small, fast load.
fn command(work: &Workdir, flags: &[&str], server: &[&str], env: &[(&str, &str)]) -> Command {
    let port = free_port().to_string();
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.args(["collect", "--engine", "sglang", "--json"])
        .args(["--requests", "4", "--prompt-len", "8", "--output-len", "12"])
        .args([
            "--concurrency",
            "4",
            "--warmup",
            "1",
            "--quiet",
            "0.5",
            "--grace",
            "1",
        ])
        .args(["--profile-dir", "prof"])
        .args(flags)
        .arg("--")
        .args([
            "python3",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "fake-model",
        ])
        .args(["--port", &port])
        .args(server)
        .current_dir(work.path())
        .env("HOME", work.path().join("home"))
        .env("PYTHONPATH", python_path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("NO_COLOR", "1")
        .env_remove("SGLANG_TORCH_PROFILER_DIR")
        .env_remove("FAKE_SGLANG_FAULT")
        .env_remove("FAKE_SGLANG_ERA");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn collect(work: &Workdir, flags: &[&str], server: &[&str], env: &[(&str, &str)]) -> Run {
    Run::of(
        &command(work, flags, server, env)
            .output()
            .expect("run npuprof"),
    )
}

/// Exit 0 and outcome `clean`, `ranks` × `per_rank` run directories parsed by the engine, no
/// error finding, the whole load answered.
fn check_verified(run: &Run, ranks: usize, per_rank: usize) {
    assert_eq!(run.code, 0, "{}\n{}", run.json, run.stderr);
    assert_eq!(run.json["schema_version"], 1);
    assert_eq!(run.json["outcome"], "clean", "{}", run.json);
    let runs = run.json["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), ranks * per_rank, "{}", run.json);
    assert!(
        runs.iter().all(|r| r["parsed_by"] == "engine"),
        "{}",
        run.json
    );
    let verify = &run.json["verify"];
    let errors: Vec<&Value> = verify["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        verify["runs"].as_array().map(Vec::len),
        Some(ranks * per_rank)
    );
    assert_eq!(run.json["load"]["succeeded"], 4);
    assert_eq!(run.json["load"]["completion_tokens"], 48);
    // SGLang's API process writes no trace of its own.
    assert_eq!(run.json["frontend_traces"], serde_json::json!([]));
}

/// The start request's JSON body, as the fake server logged it.
fn start_body(work: &Workdir) -> Value {
    let log = std::fs::read_to_string(work.path().join("prof/npuprof-server.log")).expect("log");
    let line = log
        .lines()
        .find_map(|l| l.strip_prefix("start_profile request: "))
        .unwrap_or_else(|| panic!("no start request in:\n{log}"));
    serde_json::from_str(line).expect("JSON body")
}

/// The stages of the runs, per rank (the worker's pid in the name), in the report's order.
fn stages(run: &Run) -> Vec<(String, String)> {
    run.json["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| {
            let dir = r["dir"].as_str().expect("dir");
            let name = dir.rsplit('/').next().expect("name");
            let pid = name.split('_').nth(1).expect("pid").to_owned();
            (pid, r["stage"].as_str().unwrap_or("none").to_owned())
        })
        .collect()
}

#[test]
fn a_decode_window_of_n_steps_is_asked_in_the_start_body_and_labelled_per_rank() {
    let work = Workdir::new();
    let run = collect(
        &work,
        &["--phase", "decode", "--decode-active", "4"],
        &["--tp-size", "2"],
        &[],
    );
    check_verified(&run, 2, 2);
    assert_eq!(run.json["expected_ranks"], 2);
    let body = start_body(&work);
    assert_eq!(body["num_steps"], 4, "{body}");
    assert_eq!(body["profile_by_stage"], true, "{body}");
    assert_eq!(
        (&body["with_stack"], &body["record_shapes"]),
        (&Value::Bool(false), &Value::Bool(false))
    );
    assert_eq!(
        body["output_dir"].as_str().map(PathBuf::from),
        Some(work.path().join("prof")),
        "the request names the profile directory"
    );
    // Each rank: its prefill run, then its decode run.
    // The runs are listed by name: each worker's (pid) in timestamp order.
    let by_rank = stages(&run);
    let labels: Vec<&str> = by_rank.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(
        labels,
        ["prefill", "decode", "prefill", "decode"].map(|s| s),
        "{by_rank:?}"
    );
    assert_eq!(
        run.json["window"]["closed_by"], "server",
        "{}",
        run.json["window"]
    );
    assert_eq!(run.json["window"]["phase"], "decode");
    // The guide's settings in the server's environment: stacks and shapes off.
    let env = run.json["env"].as_array().expect("env");
    for var in ["SGLANG_PROFILE_WITH_STACK", "SGLANG_PROFILE_RECORD_SHAPES"] {
        assert!(
            env.iter().any(|p| p[0] == var && p[1] == "0"),
            "{var}: {env:?}"
        );
    }
    assert_eq!(run.json["level"], "Level1");
    assert_eq!(run.json["aic_metrics"], "PipeUtilization");
    // The summary is of the decode runs alone, as decode: a rank's prefill run is never
    // compared with its decode run.
    let summary = &run.json["summary"];
    let phases: Vec<&Value> = summary["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("a summary: {}", run.json))
        .iter()
        .map(|r| &r["phase"])
        .collect();
    assert_eq!(phases, [&Value::from("decode"); 2], "{summary}");
    assert_eq!(summary["ranks"].as_array().map(Vec::len), Some(1));
    assert_eq!(summary["ranks"][0]["phase"], "decode");
    check_nothing_left(&work, &run);
}

/// Without a window the profiler is started and stopped around the load, as for vLLM-Ascend:
/// one run per rank, the stop closes it.
#[test]
fn without_a_window_the_stop_route_closes_one_run_per_rank() {
    let work = Workdir::new();
    let run = collect(&work, &[], &[], &[]);
    check_verified(&run, 1, 1);
    let body = start_body(&work);
    assert!(
        body.get("num_steps").is_none() && body.get("profile_by_stage").is_none(),
        "{body}"
    );
    assert_eq!(run.json["window"]["closed_by"], "stop");
    assert_eq!(stages(&run)[0].1, "none");
    check_nothing_left(&work, &run);
}

/// `--decode-active N` alone: N forward steps, prefill and decode mixed, one run per rank,
/// stopped by the server.
#[test]
fn a_mixed_window_of_n_steps_is_stopped_by_the_server() {
    let work = Workdir::new();
    let run = collect(
        &work,
        &["--decode-active", "5"],
        &["--disaggregation-mode", "decode"],
        &[],
    );
    check_verified(&run, 1, 1);
    assert_eq!(start_body(&work)["num_steps"], 5);
    assert_eq!(run.json["window"]["closed_by"], "server");
    // A PD node's command: collect says each node is collected on its own.
    assert!(
        run.json["pd_note"]
            .as_str()
            .is_some_and(|n| n.starts_with("--disaggregation-mode: ")),
        "{}",
        run.json
    );
    check_nothing_left(&work, &run);
}

/// A window longer than the load: the server does not stop by itself, collect closes it with
/// the stop route, says fewer steps were recorded, and the outcome is incomplete.
#[test]
fn a_window_longer_than_the_load_is_closed_by_the_stop_and_said() {
    let work = Workdir::new();
    let out = command(&work, &["--decode-active", "500"], &[], &[])
        .output()
        .expect("run npuprof");
    let run = Run::of(&out);
    // Verified clean, but not the window asked for: incomplete, exit 1.
    assert_eq!(run.code, 1, "{}\n{}", run.json, run.stderr);
    assert_eq!(run.json["outcome"], "incomplete", "{}", run.json);
    assert_eq!(run.json["verify"]["ok"], true, "{}", run.json);
    assert_eq!(run.json["window"]["closed_by"], "stop-before-steps");
    assert!(run.stderr.contains("INCOMPLETE"), "{}", run.stderr);
    assert!(
        run.stderr.contains("FEWER steps recorded"),
        "{}",
        run.stderr
    );
    check_nothing_left(&work, &run);
}

/// The version before PR #24835, read from its source: torch_npu's defaults (Level0, no pipe
/// metrics), said, and verify demands no pipe metrics of it.
#[test]
fn the_version_without_an_experimental_config_is_collected_without_pipe_metrics() {
    let work = Workdir::new();
    let source = tempfile::tempdir().expect("temp dir");
    sglang_checkout::installed_without_experimental_config(source.path());
    let before = all_files(source.path());
    let run = collect(
        &work,
        &["--engine-source", source.path().to_str().expect("UTF-8")],
        &[],
        &[("FAKE_SGLANG_ERA", "old")],
    );
    check_verified(&run, 1, 1);
    assert_eq!(
        (run.json["level"].as_str(), run.json["aic_metrics"].as_str()),
        (Some("Level0"), Some("AiCoreNone"))
    );
    assert!(
        run.json["no_pipe_metrics_note"]
            .as_str()
            .is_some_and(|n| n.contains("PR #24835")),
        "{}",
        run.json
    );
    assert_eq!(run.json["style_from"]["from"], "engine-source");
    assert_eq!(all_files(source.path()), before, "the source is only read");
    check_nothing_left(&work, &run);
}

/// With no --engine-source, the version is read from the package the command's own Python
/// finds (the fake's, which builds the experimental config).
#[test]
fn the_version_is_read_from_the_package_the_command_s_python_finds() {
    let work = Workdir::new();
    let run = collect(&work, &[], &[], &[]);
    assert_eq!(
        run.json["style_from"]["from"], "command-python",
        "{}",
        run.json
    );
    let found = run.json["style_from"]["path"].as_str().map(PathBuf::from);
    assert_eq!(
        found.map(|p| p.canonicalize().expect("exists")),
        Some(fake_sglang().canonicalize().expect("exists"))
    );
    assert_eq!(run.json["config_style"], "request");
    check_nothing_left(&work, &run);
}

#[test]
fn a_server_that_dies_mid_window_is_an_error_and_leaves_nothing() {
    let work = Workdir::new();
    let run = collect(
        &work,
        &[],
        &["--tp-size", "2"],
        &[("FAKE_SGLANG_FAULT", "die")],
    );
    assert_eq!(run.code, 2, "{}", run.json);
    assert!(
        ["server-exited", "load-failed"]
            .contains(&run.json["error"]["kind"].as_str().unwrap_or_default()),
        "{}",
        run.json["error"]
    );
    assert_eq!(run.json["outcome"], "failed");
    check_nothing_left(&work, &run);
}

/// SGLang answers 503 while it starts: one that never leaves that state is never healthy.
#[test]
fn a_server_that_stays_503_is_never_healthy_and_leaves_nothing() {
    let work = Workdir::new();
    let run = collect(
        &work,
        &["--health-timeout", "1.5"],
        &[],
        &[("FAKE_SGLANG_FAULT", "never-healthy")],
    );
    check_stopped(&run, "never-healthy");
    assert!(
        run.json["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("HTTP 503")),
        "{}",
        run.json["error"]
    );
    check_nothing_left(&work, &run);
}

#[test]
fn a_server_that_ignores_sigterm_is_killed_after_a_verified_window() {
    let work = Workdir::new();
    let run = collect(
        &work,
        &["--phase", "decode", "--decode-active", "3"],
        &["--tp-size", "2"],
        &[("FAKE_SGLANG_FAULT", "ignore-sigterm")],
    );
    check_verified(&run, 2, 2);
    assert_eq!(
        run.json["shutdown"]["killed"], true,
        "{}",
        run.json["shutdown"]
    );
    check_nothing_left(&work, &run);
}

/// The in-server parse takes a while: the stop is waited for; past --output-timeout it is an
/// error, and the server is still shut down.
#[test]
fn a_slow_parse_is_waited_for_and_one_past_the_output_timeout_is_an_error() {
    let slow = [
        ("FAKE_SGLANG_FAULT", "slow-parse"),
        ("FAKE_SGLANG_SLOW_SECONDS", "2"),
    ];
    let work = Workdir::new();
    let started = std::time::Instant::now();
    let run = collect(&work, &[], &[], &slow);
    check_verified(&run, 1, 1);
    assert!(started.elapsed() >= std::time::Duration::from_secs(2));
    check_nothing_left(&work, &run);
    let work = Workdir::new();
    let run = collect(&work, &["--output-timeout", "1"], &[], &slow);
    check_stopped(&run, "profile-failed");
    check_nothing_left(&work, &run);
}

/// `--timeout` is the whole collect's deadline for SGLang too.
#[test]
fn the_timeout_is_a_deadline_for_the_whole_collect() {
    let work = Workdir::new();
    let started = std::time::Instant::now();
    let run = collect(
        &work,
        &["--timeout", "2"],
        &[],
        &[("FAKE_SGLANG_FAULT", "never-healthy")],
    );
    check_stopped(&run, "timed-out");
    assert_eq!(run.json["outcome"], "failed");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    check_nothing_left(&work, &run);
}

#[test]
fn ctrl_c_stops_the_collect_and_the_server() {
    let work = Workdir::new();
    let child = command(&work, &[], &[], &[("FAKE_SGLANG_FAULT", "never-healthy")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run npuprof");
    wait_for_server(&work);
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let run = Run::of(&child.wait_with_output().expect("wait"));
    check_stopped(&run, "interrupted");
    check_nothing_left(&work, &run);
}

/// A running server: `--url` with no `--profile-dir` (the start request names the directory,
/// a new one here), and the server is left running.
#[test]
fn a_running_server_is_profiled_through_url_and_left_running() {
    use std::os::unix::process::CommandExt as _;
    let work = Workdir::new();
    let port = free_port();
    let mut server = Command::new("python3")
        .args([
            "-m",
            "sglang.launch_server",
            "--model-path",
            "fake-model",
            "--port",
            &port.to_string(),
        ])
        .env("PYTHONPATH", python_path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("FAKE_SGLANG_FAULT")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start the fake");
    let out = Command::new(get_cargo_bin("npuprof"))
        .args(["collect", "--engine", "sglang", "--json", "--quiet", "0.5"])
        .args([
            "--requests",
            "3",
            "--output-len",
            "4",
            "--warmup",
            "0",
            "--phase",
            "decode",
            "--decode-active",
            "2",
        ])
        .arg("--url")
        .arg(format!("http://127.0.0.1:{port}"))
        .current_dir(work.path())
        .env("HOME", work.path().join("home"))
        .output()
        .expect("run npuprof");
    let run = Run::of(&out);
    let still_running = server.try_wait().expect("wait").is_none();
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", server.id())])
        .status();
    let _ = server.wait();
    assert_eq!(run.code, 0, "{}\n{}", run.json, run.stderr);
    assert!(still_running, "the server must still run");
    assert!(run.json["shutdown"].is_null());
    assert_eq!(
        run.json["runs"].as_array().map(Vec::len),
        Some(2),
        "{}",
        run.json
    );
    let dir = run.json["profile_dir"].as_str().expect("profile dir");
    assert!(dir.contains("npuprof-sglang-"), "{dir}");
    assert_eq!(
        group_members_after(i64::from(server.id()), 15),
        Vec::<String>::new()
    );
}

/// route on a checkout (package below python/) and on an installed older version: the engine,
/// the switch, the level and metrics of that version, and the stack and shape defaults.
#[test]
fn route_names_the_switch_level_metrics_and_defaults_of_each_version() {
    let route = |root: &std::path::Path| -> Value {
        let out = Command::new(get_cargo_bin("npuprof"))
            .args(["route", "--json"])
            .arg(root)
            .output()
            .expect("run npuprof");
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    let new = tempfile::tempdir().expect("temp dir");
    sglang_checkout::checkout_with_experimental_config(new.path());
    let before = all_files(new.path());
    let json = route(new.path());
    let engine = &json["engine"];
    assert_eq!(engine["id"], "sglang", "{json}");
    assert_eq!(engine["install"], "checkout");
    assert_eq!(engine["source_root"], "python");
    assert_eq!(engine["config_style"]["value"], "request");
    assert_eq!(
        (
            engine["level"]["value"].as_str(),
            engine["aic_metrics"]["value"].as_str()
        ),
        (Some("Level1"), Some("PipeUtilization"))
    );
    assert_eq!(
        (
            engine["stack_default"].as_bool(),
            engine["shapes_default"].as_bool()
        ),
        (Some(true), Some(true))
    );
    assert!(
        engine["knobs"][0]
            .as_str()
            .is_some_and(|k| k.contains("\"output_dir\"") && k.contains("/start_profile")),
        "{}",
        engine["knobs"]
    );
    assert!(
        json["next"]["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("npuprof collect --engine sglang -- ")),
        "{}",
        json["next"]
    );
    assert_eq!(all_files(new.path()), before, "route only reads");

    let old = tempfile::tempdir().expect("temp dir");
    sglang_checkout::installed_without_experimental_config(old.path());
    let json = route(old.path());
    let engine = &json["engine"];
    assert_eq!(engine["install"], "installed");
    assert_eq!(engine["no_experimental_config"], true);
    assert_eq!(engine["pipe_metrics"], Value::Null);
    assert!(
        engine["no_pipe_metrics_note"]
            .as_str()
            .is_some_and(|n| n.contains("no pipe metrics")),
        "{engine}"
    );
}

/// plan sizes the window of N steps for each version: per stage with two runs a rank, and the
/// older version's defaults said (verify will expect no pipe metrics).
#[test]
fn plan_sizes_a_decode_window_of_n_steps_for_each_version() {
    let plan = |flags: &[&str]| -> Value {
        let out = Command::new(get_cargo_bin("npuprof"))
            .args([
                "plan",
                "--engine",
                "sglang",
                "--json",
                "--kernels-per-step",
                "100",
            ])
            .args(flags)
            .output()
            .expect("run npuprof");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    let json = plan(&["--phase", "decode", "--decode-active", "8", "--tp", "2"]);
    let window = &json["stage_window"];
    assert_eq!(
        (window["steps"].as_u64(), window["runs_per_rank"].as_u64()),
        (Some(8), Some(2)),
        "{json}"
    );
    assert!(
        window["body"]
            .as_str()
            .is_some_and(|b| b.contains("\"profile_by_stage\":true"))
    );
    // Two runs of 8 steps per rank, 100 kernels a step, 5,100 bytes a kernel.
    assert_eq!(json["output"]["bytes_per_rank"], 16 * 100 * 5_100);
    assert_eq!(
        json["parse"], "in-engine",
        "every scheduler parses, whatever the TP"
    );
    // Plan and collect share the window's default (10 steps) and the load's.
    let default = plan(&["--phase", "decode"]);
    assert_eq!(default["stage_window"]["steps"], 10);
    assert_eq!(default["requests"], 32);
    let old = tempfile::tempdir().expect("temp dir");
    sglang_checkout::installed_without_experimental_config(old.path());
    let json = plan(&["--repo", old.path().to_str().expect("UTF-8")]);
    assert_eq!(
        (json["level"].as_str(), json["aic_metrics"].as_str()),
        (Some("Level0"), Some("AiCoreNone"))
    );
    assert!(
        json["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .any(|w| w
                .as_str()
                .is_some_and(|w| w.contains("expects no pipe metrics"))),
        "{json}"
    );
    assert_eq!(json["stage_window"], Value::Null);
}
