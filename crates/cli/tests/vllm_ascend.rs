//! vLLM-Ascend as a repository definition, end to end: `route` on miniature checkouts of the
//! two config styles and on an installed package, `plan --engine` for a server. The
//! checkouts are generated (`support::vllm_checkout`): the real file paths and the structural facts of each version
//! (which setting the worker reads, the hard-coded level and metrics, which torch_npu argument
//! the stack setting reaches), in our own minimal Python, no upstream code.

use std::fs;
use std::path::Path;
use std::process::Command;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

mod support;

use support::vllm_checkout::{env_era, profiler_config_era, write};

fn npuprof(cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.current_dir(cwd).env("NO_COLOR", "1").args(args);
    cmd
}

#[test]
fn route_env_era_checkout_human() {
    let dir = tempfile::tempdir().expect("tmp");
    env_era(&dir.path().join("vllm-ascend"));
    assert_cmd_snapshot!(npuprof(dir.path(), &["route", "vllm-ascend"]));
}

#[test]
fn route_env_era_checkout_json() {
    let dir = tempfile::tempdir().expect("tmp");
    env_era(&dir.path().join("vllm-ascend"));
    assert_cmd_snapshot!(npuprof(dir.path(), &["route", "vllm-ascend", "--json"]));
}

#[test]
fn route_profiler_config_checkout_human() {
    let dir = tempfile::tempdir().expect("tmp");
    profiler_config_era(&dir.path().join("vllm-ascend"));
    assert_cmd_snapshot!(npuprof(dir.path(), &["route", "vllm-ascend"]));
}

#[test]
fn route_profiler_config_checkout_json() {
    let dir = tempfile::tempdir().expect("tmp");
    profiler_config_era(&dir.path().join("vllm-ascend"));
    assert_cmd_snapshot!(npuprof(dir.path(), &["route", "vllm-ascend", "--json"]));
}

#[test]
fn route_installed_package_in_site_packages() {
    let dir = tempfile::tempdir().expect("tmp");
    let site = dir.path().join("site-packages");
    profiler_config_era(&site);
    fs::remove_file(site.join("setup.py")).expect("rm");
    write(
        &site,
        "vllm_ascend-0.23.0.dist-info/entry_points.txt",
        "[vllm.platform_plugins]\nascend = vllm_ascend:register\n",
    );
    let out = npuprof(dir.path(), &["route", "site-packages", "--json"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let engine = &report["engine"];
    assert_eq!(engine["install"], "installed");
    assert_eq!(engine["marker"]["path"], "vllm_ascend-0.23.0.dist-info");
    assert_eq!(engine["config_style"]["value"], "profiler-config");
    assert_eq!(engine["aic_metrics"]["value"], "PipeUtilization");
    assert_eq!(
        report["next"]["command"],
        "npuprof collect --engine vllm-ascend -- vllm serve MODEL"
    );
}

#[test]
fn route_without_the_package_is_not_the_engine() {
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path().join("app");
    // A project that only serves with vLLM: the generic mechanism, no engine.
    write(
        &root,
        "serve.py",
        "import os\nimport vllm\n\nos.environ.get(\"VLLM_TORCH_PROFILER_DIR\")\n",
    );
    let out = npuprof(dir.path(), &["route", "app", "--json"])
        .output()
        .expect("run");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(report["engine"].is_null());
    assert_eq!(report["route"], "framework-other");
    assert_eq!(report["mechanisms"][0]["id"], "vllm-torch-profiler");
}

#[test]
fn plan_server_human() {
    let dir = tempfile::tempdir().expect("tmp");
    assert_cmd_snapshot!(npuprof(
        dir.path(),
        &[
            "plan",
            "--engine",
            "vllm-ascend",
            "--requests",
            "32",
            "--prompt-len",
            "512",
            "--output-len",
            "256",
            "--concurrency",
            "8",
            "--warmup",
            "4"
        ],
    ));
}

#[test]
fn plan_server_json_reads_the_version_with_stack_and_tp() {
    let dir = tempfile::tempdir().expect("tmp");
    env_era(&dir.path().join("vllm-ascend"));
    assert_cmd_snapshot!(npuprof(
        dir.path(),
        &[
            "plan",
            "--engine",
            "vllm-ascend",
            "--repo",
            "vllm-ascend",
            "--requests",
            "10",
            "--output-len",
            "100",
            "--concurrency",
            "4",
            "--tp",
            "4",
            "--with-stack",
            "--kernels-per-step",
            "600",
            "--json"
        ],
    ));
}

#[test]
fn plan_server_refuses_what_it_cannot_know() {
    let dir = tempfile::tempdir().expect("tmp");
    fs::create_dir(dir.path().join("empty")).expect("mkdir");
    assert_cmd_snapshot!(npuprof(
        dir.path(),
        &["plan", "--engine", "vllm-ascend", "--repo", "empty"]
    ));
    assert_cmd_snapshot!(npuprof(
        dir.path(),
        &["plan", "--engine", "vllm-ascend", "--concurrency", "0"]
    ));
    assert_cmd_snapshot!(npuprof(dir.path(), &["plan", "--engine", "mindie"]));
}

/// A serving run of `rank` under `root`, from the vendored real run: no schedule, no Step Id
/// column, its files an hour old.
fn serving_run(root: &Path, rank: u32, stamp: &str) {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../verify/tests/data/runs/msinsight-text-level1")
        .join(format!("rank{}_ascend_pt", rank % 2));
    let dir = root.join(format!(
        "dp0_pp0_tp{rank}_dcp0_ep0_rank{rank}_{stamp}_ascend_pt"
    ));
    copy(&sample, &dir);
    let info = dir.join(format!("profiler_info_{}.json", rank % 2));
    let mut v: serde_json::Value =
        serde_json::from_slice(&fs::read(&info).expect("info")).expect("json");
    v["config"]["common_config"]["schedule"] = serde_json::Value::Null;
    fs::write(&info, serde_json::to_vec(&v).expect("json")).expect("write");
    let kernels = dir.join("ASCEND_PROFILER_OUTPUT/kernel_details.csv");
    let text = fs::read_to_string(&kernels).expect("kernels");
    let without: String = text
        .split_inclusive('\n')
        .map(|l| l.split_once(',').map_or(l, |(_, r)| r).to_owned())
        .collect();
    fs::write(&kernels, without).expect("write");
}

fn copy(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy(&entry.path(), &target);
        } else {
            fs::write(&target, fs::read(entry.path()).expect("read")).expect("write");
        }
    }
}

/// Sets every modification time under `dir` an hour back.
fn age(dir: &Path) {
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for entry in fs::read_dir(dir).expect("read").flatten() {
        if entry.path().is_dir() {
            age(&entry.path());
        }
        fs::File::open(entry.path())
            .expect("open")
            .set_modified(past)
            .expect("mtime");
    }
}

#[test]
fn verify_recognises_serving_output_by_the_definitions_names() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("prof");
    serving_run(&out, 0, "20260101120000123");
    serving_run(&out, 1, "20260101120000125");
    fs::write(
        out.join("host_7.async_llm.1767268800000.pt.trace.json.gz"),
        b"\x1f\x8b",
    )
    .expect("write");
    age(&out);
    let run = |args: &[&str]| {
        let out = npuprof(dir.path(), args).output().expect("run");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        (out.status.code(), report)
    };
    let codes = |report: &serde_json::Value| -> Vec<String> {
        report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| f["code"].as_str().expect("code").to_owned())
            .collect()
    };
    let (code, report) = run(&["verify", "prof", "--json"]);
    assert_eq!(code, Some(0));
    assert_eq!(codes(&report), ["serving-output", "serving-frontend-trace"]);
    assert_eq!(report["runs"].as_array().expect("runs").len(), 2);
    // Renamed as torch_npu's default names them, only --engine says it is serving output.
    for rank in [0, 1] {
        let from = fs::read_dir(&out)
            .expect("read")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains(&format!("_rank{rank}_")))
            .expect("run");
        fs::rename(
            from,
            out.join(format!("host_{rank}_2026010112000012{rank}_ascend_pt")),
        )
        .expect("rename");
    }
    let (_, plain) = run(&["verify", "prof", "--json"]);
    assert!(
        !codes(&plain).contains(&"serving-output".to_owned()),
        "{:?}",
        codes(&plain)
    );
    let (code, forced) = run(&["verify", "prof", "--engine", "vllm-ascend", "--json"]);
    assert_eq!(code, Some(0));
    assert!(
        codes(&forced).contains(&"serving-output".to_owned()),
        "{:?}",
        codes(&forced)
    );
}

/// plan's serving load is collect's when neither is told otherwise (one definition,
/// `serve_plan::load_defaults`): the plan is of the capture collect makes, warm-up included.
#[test]
fn plan_server_defaults_are_collects() {
    use npuprof_workflow::serve_plan::load_defaults as d;
    let dir = tempfile::tempdir().expect("tmp");
    env_era(&dir.path().join("vllm-ascend"));
    let output = npuprof(
        dir.path(),
        &[
            "plan",
            "--engine",
            "vllm-ascend",
            "--repo",
            "vllm-ascend",
            "--json",
        ],
    )
    .output()
    .expect("run");
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    for (field, value) in [
        ("requests", d::REQUESTS),
        ("prompt_len", d::PROMPT_LEN),
        ("output_len", d::OUTPUT_LEN),
        ("concurrency", d::CONCURRENCY),
        ("warmup_requests", d::WARMUP),
    ] {
        assert_eq!(plan[field], u64::from(value), "{field}: {plan}");
    }
    // collect's help states the same numbers.
    let help = npuprof(dir.path(), &["collect", "--help"])
        .output()
        .expect("run");
    let help = String::from_utf8_lossy(&help.stdout);
    for (what, value) in [
        ("Profiled requests", d::REQUESTS),
        ("Requests in flight at once", d::CONCURRENCY),
        ("Warm-up requests before the profiler starts", d::WARMUP),
    ] {
        let line = help
            .lines()
            .skip_while(|l| !l.contains(what))
            .take(3)
            .collect::<String>();
        assert!(
            line.contains(&format!("[default: {value}]")),
            "{what}: {line}"
        );
    }
}

/// route on an installed pair: msMonitor daemon mode (it excludes the torch profiler), the
/// run-directory prefix, a vLLM without --profiler-config beside it, and a checkout's PD proxy,
/// each said with its line.
#[test]
fn route_says_msmonitor_prefixes_a_disagreeing_pair_and_pd() {
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path();
    profiler_config_era(root);
    write(root, "vllm/__init__.py", "");
    write(
        root,
        "vllm_ascend/worker/worker.py",
        "from torch_npu.profiler import dynamic_profile as dp\n\n\n\
         class NPUWorker:\n\
         \x20   def __init__(self, vllm_config):\n\
         \x20       self.profiler_config = vllm_config.profiler_config\n\
         \x20       self.daemon = vllm_config.additional_config.get(\"msmonitor_use_daemon\")\n\n\
         \x20   def profile(self, is_start=True, profile_prefix=None):\n\
         \x20       pass\n",
    );
    write(
        root,
        "examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py",
        "# the proxy\n",
    );
    let out = npuprof(root, &["route", "--json", "."])
        .output()
        .expect("run");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let warnings: Vec<&str> = json["engine"]["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    let has = |text: &str| warnings.iter().any(|w| w.contains(text));
    assert!(
        has("msMonitor daemon mode (vllm_ascend/worker/worker.py:7)"),
        "{warnings:?}"
    );
    assert!(has("cannot run with the torch profiler"), "{warnings:?}");
    assert!(has("does not offer it"), "{warnings:?}");
    assert!(has("<prefix>_dp<d>_pp<p>"), "{warnings:?}");
    assert!(
        has("PD disaggregation") && has("does not forward"),
        "{warnings:?}"
    );
    // plan refuses the disagreeing pair: no switch it does not read is recommended.
    let out = npuprof(root, &["plan", "--engine", "vllm-ascend", "--repo", "."])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not offer it"));
    // With the vLLM that offers it, plan names msMonitor and the PD proxy.
    write(
        root,
        "vllm/config/profiler.py",
        "class ProfilerConfig:\n    pass\n",
    );
    let out = npuprof(
        root,
        &["plan", "--engine", "vllm-ascend", "--repo", ".", "--json"],
    )
    .output()
    .expect("run");
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let text = plan["warnings"].to_string();
    assert!(
        text.contains("msMonitor") && text.contains("PD disaggregation"),
        "{text}"
    );
}
