//! `npuprof collect --engine vllm-ascend` end to end against the fake vLLM server
//! (`tests/fake_vllm`, under the fake torch_npu): 1 and 4 ranks give a verified, summarised
//! profile; a server that dies, one that never becomes healthy, one that ignores SIGTERM and a
//! stop that writes slowly each end with a specific error or outcome and exit code, and leave
//! no process of the server's group and no file outside the profile directory.

use std::path::Path;
use std::process::Command;

use insta_cmd::get_cargo_bin;
use serde_json::Value;

mod support;
use support::server::{
    Run, Workdir, check_nothing_left, check_stopped, free_port, group_members_after,
    wait_for_server,
};
use support::workspace_root;

fn fake_vllm() -> String {
    workspace_root()
        .join("tests/fake_vllm/bin/vllm")
        .display()
        .to_string()
}

/// `npuprof collect --engine vllm-ascend <flags> -- vllm serve fake-model --port P <server
/// args>` in `work`, with the fake's environment `env`: a small, fast load.
fn command(work: &Workdir, flags: &[&str], server: &[&str], env: &[(&str, &str)]) -> Command {
    let port = free_port().to_string();
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.args(["collect", "--engine", "vllm-ascend"])
        .args(["--requests", "4", "--prompt-len", "8", "--output-len", "6"])
        .args([
            "--concurrency",
            "2",
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
        .args([fake_vllm().as_str(), "serve", "fake-model", "--port", &port])
        .args(server)
        .current_dir(work.path())
        .env("HOME", work.path().join("home"))
        .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("NO_COLOR", "1")
        .env_remove("VLLM_TORCH_PROFILER_DIR")
        .env_remove("FAKE_VLLM_FAULT")
        .env_remove("FAKE_VLLM_ERA");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// [`command`] with `--json`, its report parsed.
fn collect(work: &Workdir, flags: &[&str], server: &[&str], env: &[(&str, &str)]) -> Run {
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(flags);
    let out = command(work, &with_json, server, env)
        .output()
        .expect("run npuprof");
    Run::of(&out)
}

/// Exit 0, `ranks` run directories parsed by `parsed_by`, no error finding, a summary of every
/// rank, the whole load answered, and the frontend trace where the era writes one (`frontend`).
fn check_verified(run: &Run, ranks: usize, parsed_by: &str, frontend: usize) {
    assert_eq!(run.code, 0, "{}\n{}", run.json, run.stderr);
    assert_eq!(run.json["schema_version"], 1);
    // The same outcome field as a repository collect's.
    assert_eq!(run.json["outcome"], "clean", "{}", run.json);
    let runs = run.json["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), ranks, "{}", run.json);
    assert!(
        runs.iter().all(|r| r["parsed_by"] == parsed_by),
        "{}",
        run.json
    );
    let verify = &run.json["verify"];
    let errors = verify["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] == "error")
        .count();
    assert_eq!(errors, 0, "{verify}");
    assert_eq!(verify["runs"].as_array().map(Vec::len), Some(ranks));
    let summary = &run.json["summary"];
    assert_eq!(
        summary["runs"].as_array().map(Vec::len),
        Some(ranks),
        "{summary}"
    );
    assert_eq!(run.json["load"]["succeeded"], 4);
    assert_eq!(run.json["load"]["completion_tokens"], 24);
    assert_eq!(
        run.json["frontend_traces"].as_array().map(Vec::len),
        Some(frontend)
    );
}

#[test]
fn one_rank_is_parsed_by_the_engine_verified_and_summarised() {
    let work = Workdir::new();
    let run = collect(&work, &[], &[], &[("FAKE_VLLM_ERA", "pipe")]);
    check_verified(&run, 1, "engine", 1);
    assert_eq!(run.json["aic_metrics"], "PipeUtilization");
    assert_eq!(run.json["shutdown"]["killed"], false);
    check_nothing_left(&work, &run);
}

#[test]
fn four_ranks_leave_raw_data_that_collect_parses_offline() {
    let work = Workdir::new();
    let run = collect(&work, &[], &["--tensor-parallel-size", "4"], &[]);
    check_verified(&run, 4, "offline", 1);
    assert_eq!(run.json["expected_ranks"], 4);
    assert_eq!(run.json["parses"].as_array().map(Vec::len), Some(4));
    check_nothing_left(&work, &run);
}

#[test]
fn the_async_parse_is_waited_for() {
    let work = Workdir::new();
    let run = collect(&work, &[], &[], &[("FAKE_VLLM_ERA", "async")]);
    check_verified(&run, 1, "engine", 1);
    check_nothing_left(&work, &run);
}

#[test]
fn the_env_style_sets_the_variables_and_says_there_are_no_pipe_metrics() {
    let work = Workdir::new();
    let run = collect(
        &work,
        &["--config-style", "env"],
        &[],
        &[("FAKE_VLLM_ERA", "env")],
    );
    check_verified(&run, 1, "engine", 0);
    assert!(
        run.stderr.contains("collects no pipe metrics"),
        "{}",
        run.stderr
    );
    let env = run.json["env"].as_array().expect("env");
    assert!(
        env.iter()
            .any(|p| p[0] == "VLLM_TORCH_PROFILER_WITH_STACK" && p[1] == "0")
    );
    check_nothing_left(&work, &run);
}

/// `--engine-source` reads the style from the installed version's source: an env-era checkout
/// makes collect set the environment variables (no `--config-style` given), and its
/// hard-coded AiCoreNone is said to collect no pipe metrics.
#[test]
fn the_style_is_read_from_the_engine_source() {
    let work = Workdir::new();
    let source = tempfile::tempdir().expect("temp dir");
    support::vllm_checkout::env_era(source.path());
    let source = source.path().to_str().expect("UTF-8 temp path");
    let run = collect(
        &work,
        &["--engine-source", source],
        &[],
        &[("FAKE_VLLM_ERA", "env")],
    );
    check_verified(&run, 1, "engine", 0);
    let env = run.json["env"].as_array().expect("env");
    assert!(
        env.iter().any(|p| p[0] == "VLLM_TORCH_PROFILER_DIR"),
        "{}",
        run.json
    );
    assert!(
        run.stderr.contains("collects no pipe metrics"),
        "{}",
        run.stderr
    );
    check_nothing_left(&work, &run);
}

/// A directory without the engine's package is refused before anything starts.
#[test]
fn an_engine_source_without_the_package_is_refused() {
    let work = Workdir::new();
    let empty = tempfile::tempdir().expect("temp dir");
    let out = command(
        &work,
        &["--engine-source", empty.path().to_str().expect("UTF-8")],
        &[],
        &[],
    )
    .output()
    .expect("run npuprof");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no vllm-ascend package under"), "{stderr}");
}

#[test]
fn a_server_that_dies_mid_run_is_an_error_and_leaves_nothing() {
    let work = Workdir::new();
    let run = collect(&work, &[], &["-tp", "2"], &[("FAKE_VLLM_FAULT", "die")]);
    check_stopped(&run, "server-exited");
    assert_eq!(run.json["shutdown"]["exited_early"], true);
    check_nothing_left(&work, &run);
}

#[test]
fn a_server_that_never_becomes_healthy_is_an_error_and_leaves_nothing() {
    let work = Workdir::new();
    let run = collect(
        &work,
        &["--health-timeout", "1.5"],
        &[],
        &[("FAKE_VLLM_FAULT", "never-healthy")],
    );
    check_stopped(&run, "never-healthy");
    assert!(
        run.json["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not healthy after")),
        "{}",
        run.json
    );
    check_nothing_left(&work, &run);
}

#[test]
fn a_server_that_ignores_sigterm_is_killed() {
    let work = Workdir::new();
    let run = collect(
        &work,
        &[],
        &["-tp", "2"],
        &[("FAKE_VLLM_FAULT", "ignore-sigterm")],
    );
    check_verified(&run, 2, "offline", 1);
    assert_eq!(run.json["shutdown"]["killed"], true, "{}", run.json);
    check_nothing_left(&work, &run);
}

#[test]
fn a_stop_that_writes_slowly_is_waited_for() {
    let work = Workdir::new();
    let run = collect(
        &work,
        &[],
        &[],
        &[
            ("FAKE_VLLM_FAULT", "slow-stop"),
            ("FAKE_VLLM_SLOW_SECONDS", "2"),
        ],
    );
    check_verified(&run, 1, "engine", 1);
    assert!(
        run.json["settled_after_secs"]
            .as_f64()
            .is_some_and(|s| s >= 2.0),
        "{}",
        run.json
    );
    check_nothing_left(&work, &run);
}

#[test]
fn a_stop_still_writing_at_the_deadline_is_an_error() {
    let work = Workdir::new();
    let run = collect(
        &work,
        &["--output-timeout", "1"],
        &[],
        &[
            ("FAKE_VLLM_FAULT", "slow-stop"),
            ("FAKE_VLLM_SLOW_SECONDS", "4"),
        ],
    );
    check_stopped(&run, "output-incomplete");
    check_nothing_left(&work, &run);
}

#[test]
fn a_command_that_configures_the_profiler_itself_is_refused() {
    let work = Workdir::new();
    let out = Command::new(get_cargo_bin("npuprof"))
        .args(["collect", "--engine", "vllm-ascend", "--json", "--"])
        .args([
            fake_vllm().as_str(),
            "serve",
            "m",
            "--profiler-config.profiler=torch",
        ])
        .current_dir(work.path())
        .output()
        .expect("run npuprof");
    assert_eq!(out.status.code(), Some(2));
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON error document");
    assert_eq!(json["error"]["code"], "refused", "{json}");
    assert!(work.listing().iter().all(|p| p == Path::new("home")));
}

#[test]
fn repository_flags_and_phases_are_refused_with_engine() {
    for flags in [&["--repo", "."][..], &["--phase", "decode"][..]] {
        let out = Command::new(get_cargo_bin("npuprof"))
            .args(["collect", "--engine", "vllm-ascend"])
            .args(flags)
            .args(["--", "vllm", "serve", "m"])
            .output()
            .expect("run npuprof");
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
    }
}

/// A server the test starts itself, with the profiler on, in its own process group.
struct OwnServer {
    child: std::process::Child,
    port: u16,
}

impl OwnServer {
    fn start(work: &Workdir, profiler: bool) -> Self {
        use std::os::unix::process::CommandExt as _;
        let port = free_port();
        let mut cmd = Command::new(fake_vllm());
        cmd.args(["serve", "fake-model", "--port", &port.to_string()]);
        if profiler {
            let dir = work.path().join("prof");
            cmd.arg("--profiler-config").arg(format!(
                r#"{{"profiler":"torch","torch_profiler_dir":"{}"}}"#,
                dir.display()
            ));
        }
        let child = cmd
            .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("FAKE_VLLM_ERA", "pipe")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start the fake");
        Self { child, port }
    }

    fn attach(&self, work: &Workdir) -> (i32, Value) {
        self.attach_with(work, &["--profile-dir", "prof"])
    }

    /// `collect --url` of this server with `flags` (which name the profile directory).
    fn attach_with(&self, work: &Workdir, flags: &[&str]) -> (i32, Value) {
        let out = Command::new(get_cargo_bin("npuprof"))
            .args([
                "collect",
                "--engine",
                "vllm-ascend",
                "--json",
                "--quiet",
                "0.5",
            ])
            .args(["--requests", "3", "--output-len", "4", "--warmup", "0"])
            .args(flags)
            .arg("--url")
            .arg(format!("http://127.0.0.1:{}", self.port))
            .current_dir(work.path())
            .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .expect("run npuprof");
        let json = serde_json::from_slice(&out.stdout).expect("JSON");
        (out.status.code().unwrap_or(-1), json)
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
    }
}

#[test]
fn a_running_server_is_profiled_through_url_and_left_running() {
    let work = Workdir::new();
    let mut server = OwnServer::start(&work, true);
    let (code, json) = server.attach(&work);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["runs"].as_array().map(Vec::len), Some(1));
    assert!(json["shutdown"].is_null());
    assert!(
        server.child.try_wait().expect("wait").is_none(),
        "the server must still run"
    );
}

#[test]
fn a_running_server_without_profiling_is_a_specific_error() {
    let work = Workdir::new();
    let server = OwnServer::start(&work, false);
    let (code, json) = server.attach(&work);
    assert_eq!(code, 2, "{json}");
    assert_eq!(json["error"]["kind"], "profiling-not-enabled", "{json}");
}

#[test]
fn ctrl_c_stops_the_collect_and_the_server() {
    let work = Workdir::new();
    let never_healthy = [("FAKE_VLLM_FAULT", "never-healthy")];
    let child = command(&work, &["--json"], &[], &never_healthy)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run npuprof");
    // Once the server has started (its log exists), interrupt collect as Ctrl-C does.
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

/// The text report of a 4-rank collect, up to the profile's summary (whose step count depends
/// on how the fake batched the requests), with what differs between runs filtered.
#[test]
fn the_text_report_says_what_was_collected() {
    let work = Workdir::new();
    let out = command(&work, &[], &["-tp", "4"], &[("FAKE_VLLM_ERA", "pipe")])
        .output()
        .expect("run npuprof");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    // The closing lines point at the page, at advise and at breakdown.
    for next in [
        "next: npuprof summary ",
        "next: npuprof advise ",
        "next: npuprof breakdown ",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(next)),
            "no `{next}` line in:\n{text}"
        );
    }
    let head = text.split("\nrun · ").next().unwrap_or_default();
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"_\d+_\d{17}_ascend_pt", "_[PID]_[TS]_ascend_pt");
    settings.add_filter(
        r"[^ /]+_\d+\.async_llm\.\d+\.pt\.trace\.json",
        "[HOST]_[PID].async_llm.[MS].pt.trace.json",
    );
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]");
    settings.add_filter(r"\d+\.\ds", "[S]s");
    settings.bind(|| insta::assert_snapshot!(head));
}

#[test]
fn a_profile_dir_that_is_not_the_servers_gets_no_output() {
    let work = Workdir::new();
    let server = OwnServer::start(&work, true);
    let (code, json) = server.attach_with(
        &work,
        &["--profile-dir", "elsewhere", "--output-timeout", "1"],
    );
    assert_eq!(code, 2, "{json}");
    assert_eq!(json["error"]["kind"], "no-output", "{json}");
}

/// A SIGKILL of collect (no handler runs) still ends the server it started: its watchdog sees
/// npuprof's pipe close and stops the server's group (SIGTERM, SIGKILL after 5 s), so no server
/// holds the port, the profiler and the device after npuprof is gone.
#[test]
fn a_killed_collect_does_not_leave_its_server_running() {
    let work = Workdir::new();
    let never_healthy = [("FAKE_VLLM_FAULT", "never-healthy")];
    let mut child = command(&work, &["--json"], &[], &never_healthy)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run npuprof");
    wait_for_server(&work);
    // The server is the group leader of the group npuprof made for it: a child of npuprof.
    let npuprof = i64::from(child.id());
    let server = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|stat| {
            let (pid, rest) = stat.split_once(" (")?;
            let fields: Vec<&str> = rest.rsplit_once(") ")?.1.split(' ').collect();
            let pid: i64 = pid.parse().ok()?;
            let parent: i64 = fields.get(1)?.parse().ok()?;
            let group: i64 = fields.get(2)?.parse().ok()?;
            (parent == npuprof && group == pid).then_some(pid)
        })
        .next()
        .expect("the server's group leader, a child of npuprof");
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    assert_eq!(group_members_after(server, 15), Vec::<String>::new());
}

/// `--load-timeout` is a deadline: past it no request is sent (they are counted as unsent),
/// instead of each being sent with a spent timeout (3 s asked took 45 s and 6000 connections).
#[test]
fn the_load_stops_sending_at_its_deadline() {
    let work = Workdir::new();
    let started = std::time::Instant::now();
    // The helper's load (4 requests, 2 in flight, after one warm-up answered at once) at
    // three seconds an answer, one second allowed: the first two time out, the rest unsent.
    let run = collect(
        &work,
        &["--load-timeout", "1"],
        &[],
        &[
            ("FAKE_VLLM_FAULT", "slow-answers"),
            ("FAKE_VLLM_SLOW_SECONDS", "3"),
        ],
    );
    let load = &run.json["load"];
    let count = |field: &str| {
        load[field]
            .as_u64()
            .unwrap_or_else(|| panic!("no load.{field}: {}\n{}", run.json, run.stderr))
    };
    let (sent, unsent) = (count("sent"), count("unsent"));
    assert_eq!((sent, unsent), (2, 2), "{load}");
    // Every request sent failed: the load failed (a load with some answers is "incomplete").
    assert_eq!(run.json["outcome"], "failed", "{}", run.json["error"]);
    assert_eq!(
        run.json["error"]["kind"], "load-failed",
        "{}",
        run.json["error"]
    );
    assert!(load["secs"].as_f64().unwrap() < 2.5, "{load}");
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    check_nothing_left(&work, &run);
}

/// A `--url` whose health route answers 404 is not waited on for the health timeout: the
/// answer is definitive (another program on the port), and collect says so at once.
#[test]
fn a_health_route_that_answers_404_ends_the_wait() {
    let work = Workdir::new();
    let port = free_port().to_string();
    // Python's file server answers 404 for /health (no such file).
    let mut other = Command::new("python3")
        .args(["-m", "http.server", &port, "--bind", "127.0.0.1"])
        .current_dir(work.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 -m http.server");
    let url = format!("http://127.0.0.1:{port}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).is_err()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let started = std::time::Instant::now();
    let out = Command::new(get_cargo_bin("npuprof"))
        .args([
            "collect",
            "--engine",
            "vllm-ascend",
            "--url",
            &url,
            "--profile-dir",
            "prof",
            "--json",
        ])
        .current_dir(work.path())
        .env("HOME", work.path().join("home"))
        .env("NO_COLOR", "1")
        .output()
        .expect("run npuprof");
    let _ = other.kill();
    let _ = other.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("answers 404"), "{stdout}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

/// A server child that left the server's process group (`setsid`) is found while the server
/// runs, ended with it and named among the stragglers.
#[test]
fn a_server_child_in_its_own_session_is_ended_and_named() {
    let work = Workdir::new();
    let run = collect(&work, &[], &[], &[("FAKE_VLLM_FAULT", "setsid-child")]);
    let stragglers = run.json["shutdown"]["stragglers"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", run.json));
    let escaped: Vec<&Value> = stragglers
        .iter()
        .filter(|s| {
            s["command"].as_str().is_some_and(|c| {
                c.starts_with("sleep 1000") && c.contains("left the server's process group")
            })
        })
        .collect();
    assert_eq!(escaped.len(), 1, "{}", run.json["shutdown"]);
    let pid = escaped[0]["pid"].as_i64().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let alive = || {
        Path::new(&format!("/proc/{pid}")).exists()
            && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| !s.contains(") Z "))
    };
    while alive() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!alive(), "the setsid child {pid} still runs");
    check_nothing_left(&work, &run);
}

/// `--timeout` means for a server collect what it means for a repository's: a deadline for the
/// whole collect, beside the per-stage limits (a never-healthy server is stopped after it, not
/// after the 20-minute health limit), and the server is shut down.
#[test]
fn the_timeout_is_a_deadline_for_the_whole_server_collect() {
    let work = Workdir::new();
    let started = std::time::Instant::now();
    let run = collect(
        &work,
        &["--timeout", "2"],
        &[],
        &[("FAKE_VLLM_FAULT", "never-healthy")],
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run.json["error"]["kind"], "timed-out", "{}", run.json);
    assert_eq!(run.json["outcome"], "failed", "{}", run.json);
    assert!(
        run.json["error"]["message"].as_str().is_some_and(|m| m
            .starts_with("--timeout 2 s passed while waiting for the server to become healthy")),
        "{}",
        run.json["error"]
    );
    assert_ne!(run.code, 0);
    check_nothing_left(&work, &run);
}

/// A load some of whose requests failed ends "incomplete" (exit 1), never "clean".
#[test]
fn a_load_with_some_failed_requests_is_incomplete() {
    let work = Workdir::new();
    // Two answered after a second each, the next two sent with half a second left.
    let run = collect(
        &work,
        &["--load-timeout", "1.5"],
        &[],
        &[
            ("FAKE_VLLM_FAULT", "slow-answers"),
            ("FAKE_VLLM_SLOW_SECONDS", "1"),
        ],
    );
    let load = &run.json["load"];
    assert!(
        load["succeeded"].as_u64() > Some(0) && load["failed"].as_u64() > Some(0),
        "{load}"
    );
    assert_eq!(run.json["outcome"], "incomplete", "{}", run.json["error"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    check_nothing_left(&work, &run);
}

/// Without --engine-source or --config-style, the version is read from the vllm-ascend
/// package the command's own Python finds (here an environment-era one on PYTHONPATH): collect
/// sets the environment variables that version reads, never `--profiler-config`.
#[test]
fn the_style_is_read_from_the_package_the_command_s_python_finds() {
    let work = Workdir::new();
    let site = tempfile::tempdir().expect("temp dir");
    support::vllm_checkout::env_era(site.path());
    let path = std::env::join_paths([
        site.path().to_path_buf(),
        workspace_root().join("tests/fake_torch_npu"),
    ])
    .expect("paths");
    let path = path.to_str().expect("UTF-8");
    let run = collect(
        &work,
        &[],
        &[],
        &[("FAKE_VLLM_ERA", "env"), ("PYTHONPATH", path)],
    );
    check_verified(&run, 1, "engine", 0);
    assert_eq!(run.json["config_style"], "env", "{}", run.json);
    assert_eq!(run.json["style_from"]["from"], "command-python");
    let args = run.json["command"].as_array().expect("command");
    assert!(
        !args.iter().any(|a| a
            .as_str()
            .is_some_and(|a| a.starts_with("--profiler-config"))),
        "{args:?}"
    );
    check_nothing_left(&work, &run);
}

/// An installed pair that disagrees (vllm-ascend reads the profiler config, the vLLM beside it
/// has no --profiler-config) is refused before anything starts, naming both.
#[test]
fn an_installed_pair_that_disagrees_is_refused_before_anything_starts() {
    let work = Workdir::new();
    let site = tempfile::tempdir().expect("temp dir");
    support::vllm_checkout::profiler_config_era(site.path());
    support::vllm_checkout::write(site.path(), "vllm/__init__.py", "");
    let path = std::env::join_paths([
        site.path().to_path_buf(),
        workspace_root().join("tests/fake_torch_npu"),
    ])
    .expect("paths");
    let out = command(
        &work,
        &[],
        &[],
        &[("PYTHONPATH", path.to_str().expect("UTF-8"))],
    )
    .output()
    .expect("run npuprof");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--profiler-config") && stderr.contains("does not offer it"),
        "{stderr}"
    );
    assert!(work.listing().iter().all(|p| p == Path::new("home")));
}
