//! End-to-end tests: the bundled cann-recipes-style repository (`examples/recipes-mini`) runs
//! on the CPU under the fake torch_npu (`tests/fake_torch_npu`), driven by the real `npuprof`
//! binary: route → plan → patch → run → verify → revert, plus the failure paths (window that
//! does not close, Level0 header, bad output disk fixed by relocate).
//!
//! Every test works on its own copy of the example in a temp dir, so tests run in parallel
//! and never touch the source tree. Needs `python3` and `bash`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tempfile::TempDir;

mod support;
use support::{copy_tree, source_files, workspace_root};

const NPUPROF: &str = env!("CARGO_BIN_EXE_npuprof");

/// Decode window of `create_profiler`'s defaults in the example (skip_first=3, active=3).
const DEFAULT_DECODE_STEPS: [u64; 3] = [3, 4, 5];

/// `create_profiler`'s default decode `active` in the example.
const FRAMEWORK_DECODE_ACTIVE: u64 = 3;

/// Environment variables of the fake that must not leak in from the caller.
const FAKE_ENV: [&str; 6] = [
    "FAKE_TORCH_NPU_BUILD",
    "FAKE_TORCH_NPU_NO_MSPROF",
    "FAKE_TORCH_NPU_CANN_VERSION",
    "FAKE_TORCH_NPU_BAD_DISK",
    "FAKE_TORCH_NPU_SLOW_FIRST_STEP",
    "RANK",
];

/// A private copy of `examples/recipes-mini`.
struct Repo {
    tmp: TempDir,
    root: PathBuf,
}

impl Repo {
    fn new() -> Self {
        Self::from_example("recipes-mini")
    }

    /// A private copy of `examples/<name>`.
    fn from_example(name: &str) -> Self {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = tmp.path().join(name);
        copy_tree(&workspace_root().join("examples").join(name), &root);
        Self { tmp, root }
    }

    /// A scratch directory next to the copy (outside the repository).
    fn scratch(&self, name: &str) -> PathBuf {
        let dir = self.tmp.path().join(name);
        fs::create_dir_all(&dir).expect("scratch dir");
        dir
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// Every file of the repository (contents), except run output, journals and caches.
    fn files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        source_files(&self.root)
    }

    /// `bash executor/scripts/infer.sh --model M --yaml F` with the fake torch_npu on PYTHONPATH.
    fn infer(&self, model: &str, yaml: &str, env: &[(&str, &str)]) -> Output {
        self.infer_args(&["--model", model, "--yaml", yaml], env)
    }

    /// `bash executor/scripts/infer.sh ARGS...` with the fake torch_npu on PYTHONPATH.
    fn infer_args(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new("bash");
        command
            .arg("executor/scripts/infer.sh")
            .args(args)
            .current_dir(&self.root)
            .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env_remove("WORK_DIR")
            .env_remove("RES_PATH")
            .env_remove("NODE_RANK");
        for name in FAKE_ENV {
            command.env_remove(name);
        }
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().expect("bash must be installed")
    }

    /// Runs the example and asserts the launcher succeeded and wrote new run directories;
    /// returns the result directory (`res/<date>/<case>`: the date is the day, so a rerun on the
    /// same day writes into the same one).
    fn infer_ok(&self, model: &str, yaml: &str) -> PathBuf {
        let before = self.run_dirs_of(model);
        let output = self.infer(model, yaml, &[]);
        assert_success(&output, "infer.sh");
        let new: Vec<PathBuf> = self
            .run_dirs_of(model)
            .difference(&before)
            .cloned()
            .collect();
        assert!(!new.is_empty(), "the run wrote no run directory");
        let result = self
            .result_dirs(model)
            .into_iter()
            .find(|case| new.iter().all(|run| run.starts_with(case)));
        result.expect("every new run directory under one result directory")
    }

    /// Every `*_ascend_pt` directory under `models/<model>/res`.
    fn run_dirs_of(&self, model: &str) -> BTreeSet<PathBuf> {
        let mut out = BTreeSet::new();
        for case in self.result_dirs(model) {
            for phase in ["prefill", "decode"] {
                out.extend(run_dirs(&case, phase));
            }
        }
        out
    }

    /// `models/<model>/res/<date>/<case>` directories.
    fn result_dirs(&self, model: &str) -> BTreeSet<PathBuf> {
        let res = self.root.join("models").join(model).join("res");
        let mut dirs = BTreeSet::new();
        for date in sorted_entries(&res) {
            dirs.extend(sorted_entries(&date).into_iter().filter(|p| p.is_dir()));
        }
        dirs
    }

    fn npuprof(&self, args: &[&str]) -> Output {
        Command::new(NPUPROF)
            .args(args)
            .current_dir(&self.root)
            .env("NO_COLOR", "1")
            .output()
            .expect("npuprof binary")
    }

    fn root_arg(&self) -> &str {
        self.root.to_str().expect("utf-8 temp path")
    }
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut entries: Vec<PathBuf> = read.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    entries
}

fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({:?})\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn assert_exit(output: &Output, code: i32, what: &str) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "{what}: unexpected exit code\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn json_stdout(output: &Output, what: &str) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "{what}: stdout is not JSON ({error})\n--- stdout\n{}\n--- stderr\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// The `*_ascend_pt` run directories of one phase of a result directory.
fn run_dirs(result: &Path, phase: &str) -> Vec<PathBuf> {
    sorted_entries(&result.join("prof").join(phase))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with("_ascend_pt"))
        .collect()
}

/// Distinct values of the first column of a CSV the fake wrote (`Step Id` / `Device_id`).
fn csv_column(path: &Path, column: &str) -> BTreeSet<u64> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let index = header
        .iter()
        .position(|c| *c == column)
        .unwrap_or_else(|| panic!("{}: no column {column}", path.display()));
    // The columns read here precede every quoted field, so a plain split is exact.
    lines
        .filter_map(|line| line.split(',').nth(index)?.trim().parse().ok())
        .collect()
}

fn output_file(run: &Path, name: &str) -> PathBuf {
    run.join("ASCEND_PROFILER_OUTPUT").join(name)
}

fn set_of(range: impl IntoIterator<Item = u64>) -> BTreeSet<u64> {
    range.into_iter().collect()
}

fn replace_in_file(path: &Path, from: &str, to: &str) {
    let text = fs::read_to_string(path).expect("read");
    assert!(text.contains(from), "{}: no {from:?}", path.display());
    fs::write(path, text.replacen(from, to, 1)).expect("write");
}

// ---------------------------------------------------------------------------------------------
// The engine and the fake, without npuprof.
// ---------------------------------------------------------------------------------------------

#[test]
fn engine_with_builtin_profiler_writes_default_windows() {
    let repo = Repo::new();
    // qwen-mini/dense.yaml already says `enable_profiler: True`.
    let output = repo.infer("qwen-mini", "dense.yaml", &[]);
    assert_success(&output, "infer.sh");
    let console = String::from_utf8_lossy(&output.stdout);
    assert!(
        console.contains("profiler.py: Start parsing profiling data"),
        "{console}"
    );
    // torch_npu warns about the recipes' warmup=0 (as the real scheduler does), and about nothing
    // else: both windows close.
    let warnings: Vec<&str> = console
        .lines()
        .filter(|l| l.contains("[WARNING]"))
        .collect();
    assert!(
        !warnings.is_empty()
            && warnings.iter().all(|l| l.ends_with(
                "profiler.py: Profiler won't be using warmup, this can skew profiler results"
            )),
        "{console}"
    );

    let results = repo.result_dirs("qwen-mini");
    assert_eq!(results.len(), 1);
    let result = results.iter().next().cloned().unwrap_or_default();
    assert_eq!(result.file_name().unwrap_or_default(), "qwen_mini_dense");
    let log = fs::read_to_string(result.join("log_0.log")).expect("log_0.log");
    // Offline: every request makes exactly max_new_tokens (64) decode forwards.
    assert!(log.contains("decode steps per request: [64]"), "{log}");

    let prefill = run_dirs(&result, "prefill");
    let decode = run_dirs(&result, "decode");
    assert_eq!((prefill.len(), decode.len()), (1, 1));
    for run in prefill.iter().chain(&decode) {
        for name in [
            "profiler_info_0.json",
            "profiler_metadata.json",
            "FRAMEWORK",
            "logs",
        ] {
            assert!(run.join(name).exists(), "{} lacks {name}", run.display());
        }
        assert!(output_file(run, "analyse.done").exists());
    }
    let prefill_steps = csv_column(&output_file(&prefill[0], "kernel_details.csv"), "Step Id");
    assert_eq!(prefill_steps, set_of([0]));
    let decode_steps = csv_column(&output_file(&decode[0], "kernel_details.csv"), "Step Id");
    assert_eq!(decode_steps, set_of(DEFAULT_DECODE_STEPS));
    let step_rows = csv_column(&output_file(&decode[0], "step_trace_time.csv"), "Step");
    assert_eq!(step_rows, set_of(DEFAULT_DECODE_STEPS));
}

#[test]
fn engine_runs_every_rank_as_its_own_process() {
    let repo = Repo::new();
    let yaml = repo.path("models/deepseek-mini/config/ep4.yaml");
    replace_in_file(&yaml, "enable_profiler: False", "enable_profiler: True ");
    let result = repo.infer_ok("deepseek-mini", "ep4.yaml");
    for rank in 0..4 {
        assert!(result.join(format!("log_{rank}.log")).is_file());
    }
    for phase in ["prefill", "decode"] {
        let runs = run_dirs(&result, phase);
        assert_eq!(runs.len(), 4, "{phase}: {runs:?}");
        let mut ranks = BTreeSet::new();
        for run in &runs {
            let info: Vec<_> = sorted_entries(run)
                .into_iter()
                .filter_map(|p| {
                    let name = p.file_name()?.to_str()?.to_owned();
                    name.strip_prefix("profiler_info_")?
                        .strip_suffix(".json")?
                        .parse::<u64>()
                        .ok()
                })
                .collect();
            assert_eq!(info.len(), 1, "{}", run.display());
            ranks.insert(info[0]);
            let devices = csv_column(&output_file(run, "kernel_details.csv"), "Device_id");
            assert_eq!(devices, set_of([info[0]]));
            assert!(output_file(run, "communication.json").is_file());
        }
        assert_eq!(ranks, set_of(0..4), "{phase}");
    }
}

#[test]
fn launcher_fails_when_a_rank_fails() {
    let repo = Repo::new();
    let yaml = repo.path("models/qwen-mini/config/long_decode.yaml");
    replace_in_file(&yaml, "batch_size: 1", "batch_size: 0");
    let output = repo.infer("qwen-mini", "long_decode.yaml", &[]);
    assert_exit(&output, 1, "infer.sh with a failing rank");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("rank 1 failed"), "{stderr}");
    let result = repo
        .result_dirs("qwen-mini")
        .into_iter()
        .next()
        .unwrap_or_default();
    let log = fs::read_to_string(result.join("log_1.log")).expect("log_1.log");
    assert!(
        log.contains("batch_size must be a positive integer"),
        "{log}"
    );
}

#[test]
fn launcher_rejects_bad_arguments() {
    let repo = Repo::new();
    let output = repo.infer("no-such-model", "x.yaml", &[]);
    assert_exit(&output, 2, "infer.sh --model no-such-model");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("no model directory models/no-such-model")
    );
    let output = repo.infer("qwen-mini", "missing.yaml", &[]);
    assert_exit(&output, 2, "infer.sh --yaml missing.yaml");
}

#[test]
fn online_prefill_role_writes_its_node_directory() {
    let repo = Repo::new();
    let args = [
        "--model",
        "deepseek-mini",
        "--mode",
        "online",
        "--pd-role",
        "prefill",
    ];
    replace_in_file(
        &repo.path("models/deepseek-mini/config/deepseek-mini_pd/prefill.yaml"),
        "enable_profiler: False",
        "enable_profiler: True",
    );
    // An exported WORK_DIR is overwritten by function.sh, as in cann-recipes-infer.
    let elsewhere = repo.scratch("elsewhere");
    let elsewhere = elsewhere.to_str().expect("utf-8 path");
    let output = repo.infer_args(&args, &[("WORK_DIR", elsewhere), ("NODE_RANK", "1")]);
    assert_success(&output, "infer.sh --mode online");
    let case = repo
        .result_dirs("deepseek-mini")
        .into_iter()
        .next()
        .unwrap_or_default();
    let node = case.join("prefill_node1");
    assert!(node.join("log_0.log").is_file(), "{}", node.display());
    // One run directory per rank (world_size 2).
    assert_eq!(run_dirs(&node, "prefill").len(), 2);
    assert!(
        run_dirs(&node, "decode").is_empty(),
        "a prefill node runs no decode"
    );
    assert!(sorted_entries(&repo.scratch("elsewhere")).is_empty());

    let output = repo.infer_args(&["--model", "deepseek-mini", "--mode", "online"], &[]);
    assert_exit(&output, 2, "infer.sh --mode online without --pd-role");
}

#[test]
fn reruns_on_one_day_share_the_result_directory() {
    let repo = Repo::new();
    let first = repo.infer_ok("qwen-mini", "dense.yaml");
    let second = repo.infer_ok("qwen-mini", "dense.yaml");
    // The launcher names results by day and case: a rerun adds run directories beside the first.
    assert_eq!(first, second);
    assert_eq!(run_dirs(&second, "decode").len(), 2);
}

// ---------------------------------------------------------------------------------------------
// route → plan → patch → run → verify → revert with the real binary.
// ---------------------------------------------------------------------------------------------

/// One profiling request: what `npuprof patch` is asked for.
struct Request<'a> {
    model: &'a str,
    yaml: &'a str,
    /// `both`, `decode` or `prefill`.
    phase: &'a str,
    /// `--decode-active` (3 is the framework's own default; npuprof patch defaults to 10).
    decode_active: u64,
    /// Extra `patch` arguments.
    extra: &'a [&'a str],
}

impl Request<'_> {
    fn yaml_path(&self, repo: &Repo) -> PathBuf {
        repo.path(&format!("models/{}/config/{}", self.model, self.yaml))
    }

    fn decode_steps(&self) -> BTreeSet<u64> {
        set_of(3..3 + self.decode_active)
    }

    fn phases(&self) -> Vec<&'static str> {
        match self.phase {
            "prefill" => vec!["prefill"],
            "decode" => vec!["decode"],
            _ => vec!["prefill", "decode"],
        }
    }
}

fn patch(repo: &Repo, request: &Request<'_>) -> Output {
    let active = request.decode_active.to_string();
    let mut args = vec![
        "patch",
        "--repo",
        repo.root_arg(),
        "--model",
        request.model,
        "--yaml",
        request.yaml,
        "--phase",
        request.phase,
        "--decode-active",
        &active,
    ];
    args.extend(request.extra);
    repo.npuprof(&args)
}

fn verify(repo: &Repo, result: &Path, phase: &str) -> (Output, Value) {
    let path = result.to_str().expect("utf-8 path");
    let output = repo.npuprof(&["verify", path, "--phase", phase, "--json"]);
    let report = json_stdout(&output, "npuprof verify --json");
    (output, report)
}

fn revert(repo: &Repo) {
    let output = repo.npuprof(&["revert", "--repo", repo.root_arg()]);
    assert_success(&output, "npuprof revert");
}

/// The `runs` of a verify report for one phase, as (rank, kernel Step Ids, step_trace_time steps).
fn runs_of(report: &Value, phase: &str) -> Vec<(u64, BTreeSet<u64>, BTreeSet<u64>)> {
    let steps = |run: &Value, key: &str| -> BTreeSet<u64> {
        run["steps"][key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_u64)
            .collect()
    };
    let mut runs: Vec<_> = report["runs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|run| run["phase"] == phase)
        .map(|run| {
            let rank = run["rank"].as_u64().unwrap_or(u64::MAX);
            (
                rank,
                steps(run, "kernel_details"),
                steps(run, "step_trace_time"),
            )
        })
        .collect();
    runs.sort();
    runs
}

fn finding_codes(report: &Value) -> BTreeSet<String> {
    report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["code"].as_str().map(str::to_owned))
        .collect()
}

fn error_codes(report: &Value) -> BTreeSet<String> {
    report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["severity"] == "error")
        .filter_map(|f| f["code"].as_str().map(str::to_owned))
        .collect()
}

/// Checks a clean verify report: every phase, every rank, the expected Step Ids.
fn check_clean_report(report: &Value, request: &Request<'_>, ranks: u64) {
    assert_eq!(report["ok"], true, "verify not ok: {report:#}");
    let serious: Vec<_> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["severity"] == "error" || f["severity"] == "warning")
        .collect();
    assert!(
        serious.is_empty(),
        "a clean run has no errors or warnings: {serious:#?}"
    );
    for phase in ["prefill", "decode"] {
        let runs = runs_of(report, phase);
        if !request.phases().contains(&phase) {
            assert!(
                runs.is_empty(),
                "{phase} was switched off but has runs: {runs:?}"
            );
            continue;
        }
        let expected = if phase == "prefill" {
            set_of([0])
        } else {
            request.decode_steps()
        };
        let got_ranks: BTreeSet<u64> = runs.iter().map(|r| r.0).collect();
        assert_eq!(got_ranks, set_of(0..ranks), "{phase} ranks: {report:#}");
        assert_eq!(
            runs.len() as u64,
            ranks,
            "{phase}: one run directory per rank"
        );
        for (rank, kernel_steps, trace_steps) in &runs {
            assert_eq!(
                kernel_steps, &expected,
                "{phase} rank {rank}: kernel_details Step Ids"
            );
            assert_eq!(
                trace_steps, &expected,
                "{phase} rank {rank}: step_trace_time rows"
            );
        }
    }
}

/// The whole loop for one request; returns the verify report.
fn check_full_loop(request: &Request<'_>, ranks: u64) -> Value {
    let repo = Repo::new();
    let before = repo.files();

    let patched = patch(&repo, request);
    assert_success(&patched, "npuprof patch");
    let yaml = fs::read_to_string(request.yaml_path(&repo)).expect("yaml");
    assert_ne!(repo.files(), before, "patch must change the repository");
    assert!(
        yaml.contains("enable_profiler: True"),
        "patch must switch the profiler on:\n{yaml}"
    );

    let result = repo.infer_ok(request.model, request.yaml);
    for phase in request.phases() {
        assert_eq!(
            run_dirs(&result, phase).len() as u64,
            ranks,
            "{phase} run directories"
        );
    }
    let (output, report) = verify(&repo, &result, request.phase);
    assert_exit(&output, 0, "npuprof verify");
    check_clean_report(&report, request, ranks);

    revert(&repo);
    assert_eq!(
        repo.files(),
        before,
        "revert must restore every file byte for byte"
    );
    report
}

#[test]
fn route_and_plan_see_the_builtin_profiler() {
    let repo = Repo::new();
    let output = repo.npuprof(&["route", repo.root_arg(), "--json"]);
    assert_success(&output, "npuprof route");
    let report = json_stdout(&output, "npuprof route --json");
    assert_eq!(report["path"], "A", "{report:#}");
    assert_eq!(report["route"], "framework", "{report:#}");
    let dead: Vec<_> = report["dead_paths"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            (
                d["path"].as_str().unwrap_or_default(),
                d["function"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    // The legacy runner's factory is live: the family-B models call it from their own loops.
    assert!(dead.is_empty(), "{dead:?}");
    let entries = report["entry_candidates"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        entries.contains(&Value::from("executor/offline/infer.py")),
        "{entries:?}"
    );

    let config = repo.path("models/deepseek-mini/config/decode_mtp.yaml");
    let config = config.to_str().expect("utf-8 path");
    // Offline, decode forwards = max_new_tokens whatever next_n: a 10-step window (skip_first 3
    // kept) needs 14 and fits the config's 32...
    let fits = repo.npuprof(&["plan", "--config", config, "--phase", "decode", "--json"]);
    assert_exit(&fits, 0, "npuprof plan (default window)");
    // ...a 30-step window needs 3 + 30 + 1 = 34 and does not.
    let too_long = repo.npuprof(&[
        "plan",
        "--config",
        config,
        "--phase",
        "decode",
        "--decode-active",
        "30",
        "--json",
    ]);
    assert_exit(&too_long, 1, "npuprof plan (30-step window)");
    json_stdout(&too_long, "npuprof plan --json");
}

#[test]
fn full_loop_both_phases_default_window() {
    // decode_mtp.yaml has the profiler off; its 32 tokens cover the default window even with MTP.
    let request = Request {
        model: "deepseek-mini",
        yaml: "decode_mtp.yaml",
        phase: "both",
        decode_active: FRAMEWORK_DECODE_ACTIVE,
        extra: &[],
    };
    check_full_loop(&request, 1);
}

#[test]
fn full_loop_decode_only_30_steps() {
    let request = Request {
        model: "qwen-mini",
        yaml: "dense.yaml",
        phase: "decode",
        decode_active: 30,
        extra: &[],
    };
    check_full_loop(&request, 1);
}

#[test]
fn full_loop_prefill_only() {
    let request = Request {
        model: "qwen-mini",
        yaml: "dense.yaml",
        phase: "prefill",
        decode_active: FRAMEWORK_DECODE_ACTIVE,
        extra: &[],
    };
    check_full_loop(&request, 1);
}

#[test]
fn full_loop_four_ranks() {
    let request = Request {
        model: "deepseek-mini",
        yaml: "ep4.yaml",
        phase: "both",
        decode_active: FRAMEWORK_DECODE_ACTIVE,
        extra: &[],
    };
    check_full_loop(&request, 4);
}

#[test]
fn full_loop_mtp_raises_max_new_tokens() {
    let request = Request {
        model: "deepseek-mini",
        yaml: "decode_mtp.yaml",
        phase: "decode",
        decode_active: 30,
        extra: &["--max-new-tokens", "auto"],
    };
    let repo = Repo::new();
    let original = fs::read_to_string(request.yaml_path(&repo)).expect("yaml");
    let patched = patch(&repo, &request);
    assert_success(&patched, "npuprof patch");
    let yaml = fs::read_to_string(request.yaml_path(&repo)).expect("yaml");
    let budget = max_new_tokens(&yaml);
    // 3 skipped + 30 recorded + 1 margin decode forwards; offline, every request makes exactly
    // max_new_tokens decode forwards whatever next_n.
    let min_budget = 3 + 30 + 1;
    assert!(
        budget >= min_budget,
        "max_new_tokens raised to {budget} only (needs {min_budget}):\n{yaml}"
    );
    let changed: Vec<_> = original
        .lines()
        .zip(yaml.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(
        changed.len(),
        2,
        "only enable_profiler and max_new_tokens change: {changed:?}"
    );
    assert_eq!(original.lines().count(), yaml.lines().count());

    let result = repo.infer_ok(request.model, request.yaml);
    let (output, report) = verify(&repo, &result, "decode");
    assert_exit(&output, 0, "npuprof verify");
    check_clean_report(&report, &request, 1);
    revert(&repo);
    assert_eq!(
        fs::read_to_string(request.yaml_path(&repo)).expect("yaml"),
        original
    );
}

fn max_new_tokens(yaml: &str) -> u64 {
    yaml.lines()
        .find_map(|line| line.trim().strip_prefix("max_new_tokens:"))
        .and_then(|rest| rest.split('#').next()?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no max_new_tokens in\n{yaml}"))
}

// ---------------------------------------------------------------------------------------------
// Failure paths.
// ---------------------------------------------------------------------------------------------

#[test]
fn window_that_cannot_close_is_reported() {
    // Keep the config's 32 tokens: 32 decode forwards run, fewer than the 3 + 30 steps the
    // window needs to close.
    let request = Request {
        model: "deepseek-mini",
        yaml: "decode_mtp.yaml",
        phase: "decode",
        decode_active: 30,
        extra: &["--max-new-tokens", "32"],
    };
    let repo = Repo::new();
    let before = repo.files();
    let patched = patch(&repo, &request);
    assert_ne!(
        patched.status.code(),
        Some(2),
        "patch: {}",
        String::from_utf8_lossy(&patched.stderr)
    );
    assert_eq!(
        max_new_tokens(&fs::read_to_string(request.yaml_path(&repo)).expect("yaml")),
        32
    );

    let output = repo.infer(request.model, request.yaml, &[]);
    assert_success(&output, "infer.sh");
    let console = String::from_utf8_lossy(&output.stdout);
    assert!(
        console.contains("Stop profiler while current state is RECORD"),
        "{console}"
    );
    let result = repo
        .result_dirs(request.model)
        .into_iter()
        .next()
        .unwrap_or_default();

    let (output, report) = verify(&repo, &result, "decode");
    assert_exit(&output, 1, "npuprof verify of an unclosed window");
    let runs = runs_of(&report, "decode");
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0].1,
        set_of(3..32),
        "the steps that did run are parsed"
    );
    let codes = error_codes(&report);
    assert!(
        codes.contains("steps-missing") || codes.contains("schedule-stop-in-record"),
        "verify must report the unclosed window: {report:#}"
    );
    revert(&repo);
    assert_eq!(repo.files(), before);
}

#[test]
fn level0_minimal_header_is_explained() {
    let repo = Repo::new();
    // Simulate a wrapper configured at Level0 (edited before npuprof touches the repository).
    let wrapper = repo.path("executor/utils/profiler_context.py");
    replace_in_file(&wrapper, "ProfilerLevel.Level1", "ProfilerLevel.Level0");
    let before = repo.files();
    let request = Request {
        model: "qwen-mini",
        yaml: "dense.yaml",
        phase: "decode",
        decode_active: FRAMEWORK_DECODE_ACTIVE,
        extra: &[],
    };
    assert_success(&patch(&repo, &request), "npuprof patch");
    let result = repo.infer_ok(request.model, request.yaml);
    let run = run_dirs(&result, "decode")
        .into_iter()
        .next()
        .unwrap_or_default();
    let header =
        fs::read_to_string(output_file(&run, "kernel_details.csv")).expect("kernel_details");
    assert_eq!(
        header.lines().next().unwrap_or_default().split(',').count(),
        9
    );

    let (_, report) = verify(&repo, &result, "decode");
    let finding = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["code"] == "kernel-header-minimal")
        .unwrap_or_else(|| panic!("no kernel-header-minimal finding: {report:#}"));
    let message = finding["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("Level0"),
        "the finding must name the level: {finding:#}"
    );
    assert_eq!(runs_of(&report, "decode")[0].1, request.decode_steps());
    revert(&repo);
    assert_eq!(repo.files(), before);
}

#[test]
fn bad_disk_is_diagnosed_and_relocate_fixes_it() {
    let repo = Repo::new();
    let model = "deepseek-mini";
    let before = repo.files();
    // The model directory sits on a "bad" filesystem: the fake fails every parser below it.
    fs::write(
        repo.path("models/deepseek-mini/.fake_torch_npu_bad_disk"),
        b"",
    )
    .expect("marker");
    let request = Request {
        model,
        yaml: "decode_mtp.yaml",
        phase: "both",
        decode_active: FRAMEWORK_DECODE_ACTIVE,
        extra: &[],
    };
    assert_success(&patch(&repo, &request), "npuprof patch");

    let output = repo.infer(model, request.yaml, &[]);
    assert_success(&output, "infer.sh (parsing fails, the run does not)");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("Task [CANNExportParser] run failed.")
    );
    let bad = repo
        .result_dirs(model)
        .into_iter()
        .next()
        .unwrap_or_default();
    let (output, report) = verify(&repo, &bad, "both");
    assert_exit(&output, 1, "npuprof verify on the bad disk");
    let codes = finding_codes(&report);
    assert!(
        codes.contains("output-filesystem"),
        "verify must diagnose the filesystem: {report:#}"
    );
    assert!(codes.contains("parser-failed"), "{report:#}");

    let local = repo.scratch("local-res");
    let local_arg = local.to_str().expect("utf-8 path");
    let relocated = repo.npuprof(&[
        "relocate",
        "--repo",
        repo.root_arg(),
        "--model",
        model,
        "--to",
        local_arg,
    ]);
    assert_success(&relocated, "npuprof relocate");
    let res = repo.path("models/deepseek-mini/res");
    assert!(
        fs::symlink_metadata(&res)
            .expect("res")
            .file_type()
            .is_symlink(),
        "res must now be a symlink"
    );

    let good = repo.infer_ok(model, request.yaml);
    let (output, report) = verify(&repo, &good, "both");
    assert_exit(&output, 0, "npuprof verify after relocate");
    check_clean_report(&report, &request, 1);

    revert(&repo);
    assert_eq!(repo.files(), before, "revert restores every file");
    let res_meta = fs::symlink_metadata(&res).expect("res restored");
    assert!(res_meta.is_dir(), "revert puts the real res directory back");
    assert!(
        bad.is_dir(),
        "the first result is back in place: {}",
        bad.display()
    );
}

#[test]
fn compilation_inside_the_window_is_reported() {
    let repo = Repo::new();
    // dense.yaml already enables the profiler; the fake makes the first recorded step 25x slower.
    let output = repo.infer(
        "qwen-mini",
        "dense.yaml",
        &[("FAKE_TORCH_NPU_SLOW_FIRST_STEP", "1")],
    );
    assert_success(&output, "infer.sh");
    let result = repo
        .result_dirs("qwen-mini")
        .into_iter()
        .next()
        .unwrap_or_default();
    let (_, report) = verify(&repo, &result, "both");
    let slow: Vec<_> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["code"] == "compile-in-window")
        .collect();
    assert_eq!(
        slow.len(),
        1,
        "only the decode window has several steps: {report:#}"
    );
    assert_eq!(slow[0]["phase"], "decode");
}

// ---------------------------------------------------------------------------------------------
// Path B: a script without a profiler gets an injected harness.
// ---------------------------------------------------------------------------------------------

#[test]
fn inject_run_verify_revert_on_plain_script() {
    let repo = Repo::from_example("plain-infer");
    let before = repo.files();
    let route = json_stdout(
        &repo.npuprof(&["route", repo.root_arg(), "--json"]),
        "npuprof route --json",
    );
    assert_eq!(route["path"], "B", "{route:#}");

    let harness = inject_harness(&repo, &before);
    run_harness(&repo, &harness[0]);

    let prof = repo.path("npuprof_prof");
    let (output, report) = verify(&repo, &prof, "decode");
    assert_exit(&output, 0, "npuprof verify of the harness output");
    assert_eq!(report["ok"], true, "{report:#}");
    let runs = report["runs"].as_array().cloned().unwrap_or_default();
    assert_eq!(runs.len(), 1, "{report:#}");
    let expected = &runs[0]["steps"]["expected"];
    assert!(
        expected.as_array().is_some_and(|steps| !steps.is_empty()),
        "{report:#}"
    );
    assert_eq!(&runs[0]["steps"]["kernel_details"], expected, "{report:#}");

    revert(&repo);
    assert_eq!(repo.files(), before, "revert removes the harness");
}

#[test]
fn inject_breakdown_adds_a_structure_window_that_breakdown_reads_exactly() {
    let repo = Repo::from_example("plain-infer");
    let before = repo.files();
    let injected = repo.npuprof(&[
        "inject",
        "--repo",
        repo.root_arg(),
        "--entry",
        "infer.py",
        "--breakdown",
        "--json",
    ]);
    let report = json_stdout(&injected, "npuprof inject --breakdown --json");
    let windows: Vec<(String, bool)> = report["windows"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|w| {
            (
                w["name"].as_str().unwrap_or_default().to_owned(),
                w["with_modules"] == true,
            )
        })
        .collect();
    assert_eq!(
        windows,
        [("both".to_owned(), false), ("structure".to_owned(), true)],
        "{report:#}"
    );
    assert_eq!(report["structure_path"], "npuprof_structure");
    run_harness(
        &repo,
        Path::new(report["harness"].as_str().expect("harness")),
    );
    // The timing window keeps the guide's settings and its own directory.
    let (output, timing) = verify(&repo, &repo.path("npuprof_prof"), "decode");
    assert_exit(&output, 0, "npuprof verify of the timing window");
    assert_eq!(timing["ok"], true, "{timing:#}");
    let timing_runs = timing["runs"].as_array().cloned().unwrap_or_default();
    assert_eq!(timing_runs.len(), 1, "{timing:#}");
    let info_of = |dir: &Path| -> Value {
        let run = fs::read_dir(dir)
            .expect("the window's directory")
            .flatten()
            .find(|e| e.file_name().to_string_lossy().ends_with("_ascend_pt"))
            .expect("a run directory")
            .path();
        let info = fs::read_dir(&run)
            .expect("the run directory")
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("profiler_info"))
            .expect("profiler_info*.json")
            .path();
        serde_json::from_slice(&fs::read(info).expect("info")).expect("JSON")
    };
    let common = |info: &Value, key: &str| info["config"]["common_config"][key].clone();
    let timing_info = info_of(&repo.path("npuprof_prof/both"));
    assert_eq!(common(&timing_info, "with_modules"), false);
    assert_eq!(common(&timing_info, "record_shapes"), false);
    let structure_info = info_of(&repo.path("npuprof_structure"));
    assert_eq!(common(&structure_info, "with_modules"), true);
    assert_eq!(common(&structure_info, "schedule")["active"], 2);
    // breakdown reads the structure window exactly: the module tree, every kernel owned.
    let out = repo.npuprof(&["breakdown", "npuprof_structure", "--json"]);
    let tree = json_stdout(&out, "npuprof breakdown --json");
    let run = &tree["runs"][0];
    assert_eq!(run["method"], "modules", "{tree:#}");
    assert_eq!(run["confidence"], "exact");
    assert_eq!(run["coverage"], 1.0, "{tree:#}");
    let paths: Vec<&str> = run["modules"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["path"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        paths.contains(&"/FakeModel_0/DecoderLayer_1/MLP_1"),
        "{paths:?}"
    );
    assert_eq!(run["steps"].as_array().map(Vec::len), Some(2));
    // The timing window has no module events.
    let out = repo.npuprof(&["breakdown", "npuprof_prof", "--json"]);
    let timing_tree = json_stdout(&out, "npuprof breakdown --json");
    assert_ne!(timing_tree["runs"][0]["method"], "modules");

    revert(&repo);
    assert_eq!(repo.files(), before, "revert removes the harness");
}

/// Runs an injected harness (repository-relative) under the fake torch_npu; it must succeed.
fn run_harness(repo: &Repo, harness: &Path) {
    let output = Command::new("python3")
        .arg(harness)
        .current_dir(&repo.root)
        .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("RANK")
        .env_remove("FAKE_TORCH_NPU_BAD_DISK")
        .output()
        .expect("python3");
    assert_success(&output, "the injected harness");
}

/// Injects the path-B harness for `infer.py`; returns its path (the one new file).
fn inject_harness(repo: &Repo, before: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<PathBuf> {
    let injected = repo.npuprof(&["inject", "--repo", repo.root_arg(), "--entry", "infer.py"]);
    assert_success(&injected, "npuprof inject");
    let harness: Vec<_> = repo
        .files()
        .into_keys()
        .filter(|name| !before.contains_key(name))
        .collect();
    assert_eq!(
        harness.len(),
        1,
        "inject writes one harness file: {harness:?}"
    );
    harness
}

/// Runs the injected harness of `plain-infer` under the fake with `env` set; returns the repo,
/// the harness's stdout and the profile directory.
fn injected_run(build: &str, env: &[(&str, &str)]) -> (Repo, String, PathBuf) {
    let repo = Repo::from_example("plain-infer");
    let before = repo.files();
    let harness = inject_harness(&repo, &before);
    let mut cmd = Command::new("python3");
    cmd.arg(&harness[0])
        .current_dir(&repo.root)
        .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
        .env("PYTHONDONTWRITEBYTECODE", "1");
    for name in FAKE_ENV {
        cmd.env_remove(name);
    }
    cmd.env("FAKE_TORCH_NPU_BUILD", build);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = cmd.output().expect("python3");
    assert_success(&output, "the injected harness");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let prof = repo.path("npuprof_prof");
    (repo, stdout, prof)
}

#[test]
fn bad_disk_without_captured_stdout_is_diagnosed_from_the_run_logs() {
    for build in ["2.5.1", "2.7.1", "2.14.0"] {
        let (repo, stdout, prof) = injected_run(build, &[("FAKE_TORCH_NPU_BAD_DISK", "1")]);
        assert!(stdout.contains("run failed"), "{build}: {stdout}");
        // Nothing of stdout is handed to verify: the run's own logs/ and files must do.
        let (output, report) = verify(&repo, &prof, "decode");
        assert_exit(&output, 1, "npuprof verify of a bad-disk run");
        let errors = error_codes(&report);
        assert!(errors.contains("output-filesystem"), "{build}: {report:#}");
    }
}

#[test]
fn msprof_missing_is_the_cann_environment_in_every_build() {
    for build in ["2.5.1", "2.7.1", "2.14.0"] {
        let (repo, stdout, prof) = injected_run(build, &[("FAKE_TORCH_NPU_NO_MSPROF", "1")]);
        let log = repo.path("job.out");
        fs::write(&log, &stdout).expect("write the captured stdout");
        let output = repo.npuprof(&[
            "verify",
            prof.to_str().expect("utf-8"),
            "--log",
            log.to_str().expect("utf-8"),
            "--json",
        ]);
        let report = json_stdout(&output, "npuprof verify --log --json");
        let errors = error_codes(&report);
        assert!(
            !errors.contains("output-filesystem"),
            "{build}: msprof missing is no disk problem: {report:#}"
        );
        let causes: Vec<String> = report["findings"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter(|f| f["code"] == "parser-root-cause")
            .map(|f| f["message"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert!(
            causes
                .iter()
                .any(|m| m.contains("CANN environment not loaded: source set_env.sh")),
            "{build}: {causes:#?}"
        );
    }
}
