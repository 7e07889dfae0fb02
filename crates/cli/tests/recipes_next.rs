//! The newer repository shape (`examples/recipes-next`: phases as an enum, one factory call with
//! a `**kwargs` dict chosen by a branch, a third phase `mm_encode`, models with their own
//! `infer.py`) and the older one (`examples/recipes-mini`): every config is resolved to the code
//! its run executes or refused with the reason, and a patched ProfilerPhase manager, driven
//! under the fake torch_npu in the engine's call order, records exactly the requested window
//! per phase. Needs `python3`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod support;
use support::{copy_example, source_files, workspace_root};

const NPUPROF: &str = env!("CARGO_BIN_EXE_npuprof");

fn npuprof(cwd: &Path, args: &[&str]) -> Output {
    Command::new(NPUPROF)
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .expect("npuprof binary")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Every `(model, config)` of an example, configs relative to `models/<m>/config/`.
fn configs(repo: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for model in fs::read_dir(repo.join("models")).expect("models") {
        let model = model.expect("entry").path();
        let name = model.file_name().unwrap().to_string_lossy().into_owned();
        let mut stack = vec![model.join("config")];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "yaml") {
                    let rel = path.strip_prefix(model.join("config")).unwrap();
                    out.push((name.clone(), rel.to_string_lossy().into_owned()));
                }
            }
        }
    }
    out.sort();
    out
}

/// What `route --model M --yaml F` decides: the family letter, or the refusal's key words.
fn decision(repo: &Path, model: &str, yaml: &str) -> String {
    let out = npuprof(repo, &["route", "--model", model, "--yaml", yaml]);
    let all = text(&out);
    match out.status.code() {
        Some(0) => all
            .split("family ")
            .nth(1)
            .and_then(|r| r.chars().next())
            .map_or_else(|| format!("? {all}"), |c| c.to_string()),
        Some(2) if all.contains("drives the engine's profiler manager itself") => {
            "refused: own loop drives the manager".to_owned()
        }
        Some(2) if all.contains("runs the model's own loop") => {
            "refused: own loop, no profiler".to_owned()
        }
        other => format!("exit {other:?}: {all}"),
    }
}

#[test]
fn every_config_of_both_examples_is_resolved_to_what_its_run_executes_or_refused() {
    let examples = workspace_root().join("examples");
    let mut seen = Vec::new();
    for example in ["recipes-mini", "recipes-next"] {
        let repo = examples.join(example);
        for (model, yaml) in configs(&repo) {
            seen.push(format!(
                "{example} {model} {yaml}: {}",
                decision(&repo, &model, &yaml)
            ));
        }
    }
    let expected = [
        "recipes-mini deepseek-mini afd.yaml: A",
        "recipes-mini deepseek-mini decode_mtp.yaml: A",
        "recipes-mini deepseek-mini deepseek-mini_pd/decode.yaml: A",
        "recipes-mini deepseek-mini deepseek-mini_pd/prefill.yaml: A",
        "recipes-mini deepseek-mini ep4.yaml: A",
        "recipes-mini deepseek-mini prefill_only.yaml: A",
        "recipes-mini glm_5_2 ci_950/glm_mini_rank_1.yaml: B",
        "recipes-mini glm_5_2 ci_a3/glm_mini_rank_1.yaml: B",
        "recipes-mini glm_5_2 glm_mini_rank_2.yaml: B",
        "recipes-mini hunyuan-mini single.yaml: C",
        "recipes-mini kimi_k3 kimi_mini_rank_1.yaml: B",
        "recipes-mini pangu_7b pangu_mini_7b.yaml: B",
        "recipes-mini qwen-mini dense.yaml: A",
        "recipes-mini qwen-mini long_decode.yaml: A",
        "recipes-mini wan-mini t2v.yaml: C",
        // Text mode: the model's infer.py hands the run to the shared engine.
        "recipes-next omni_next omni_multimodal.yaml: refused: own loop drives the manager",
        "recipes-next omni_next omni_text.yaml: A",
        "recipes-next pangu_7b pangu_mini_7b.yaml: B",
        "recipes-next qwen-next dense.yaml: A",
        "recipes-next qwen-next dspark.yaml: A",
        "recipes-next qwen-next long_decode.yaml: A",
        // An own loop that never reaches ModelRunner.define_profiler is not family B.
        "recipes-next solo_next solo.yaml: refused: own loop, no profiler",
    ];
    assert_eq!(seen, expected);
}

/// `route --model M --yaml F` on recipes-next, which must succeed: its whole output.
fn route_next(model: &str, yaml: &str) -> String {
    let repo = workspace_root().join("examples/recipes-next");
    let out = npuprof(&repo, &["route", "--model", model, "--yaml", yaml]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{model} {yaml}: {all}");
    all
}

#[test]
fn the_text_mode_chain_names_the_hand_over_with_its_line() {
    let all = route_next("omni_next", "omni_text.yaml");
    assert!(
        all.contains("models/omni_next/infer.py:27 the model's infer.py hands this run config to the shared engine"),
        "{all}"
    );
    for phase in ["mm_encode", "prefill", "decode"] {
        assert!(
            all.contains(&format!(
                "executor/utils/profiler_context.py:103 {phase} profiler call"
            )),
            "{phase}: {all}"
        );
    }
}

#[test]
fn mm_encode_is_refused_where_the_target_has_no_such_phase() {
    let repo = workspace_root().join("examples/recipes-mini");
    let out = npuprof(
        &repo,
        &[
            "patch",
            "--model",
            "qwen-mini",
            "--yaml",
            "dense.yaml",
            "--phase",
            "mm_encode",
            "--dry-run",
        ],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains("qwen-mini has no mm_encode profiler call (its phases: prefill, decode)"),
        "{all}"
    );
}

/// The Step Ids of each run directory of `<out>/prof/<phase>` after a driven run.
fn recorded(out: &Path, phase: &str) -> Vec<BTreeSet<u64>> {
    let dir = out.join("prof").join(phase);
    let mut runs: Vec<PathBuf> = fs::read_dir(&dir)
        .map(|e| e.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    runs.retain(|p| p.to_string_lossy().ends_with("_ascend_pt"));
    runs.sort();
    runs.iter()
        .map(|run| {
            let csv = run.join("ASCEND_PROFILER_OUTPUT/kernel_details.csv");
            let body =
                fs::read_to_string(&csv).unwrap_or_else(|e| panic!("{}: {e}", csv.display()));
            let mut lines = body.lines();
            let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
            let at = header
                .iter()
                .position(|c| *c == "Step Id")
                .expect("Step Id column");
            lines
                .filter_map(|l| l.split(',').nth(at)?.trim().parse().ok())
                .collect()
        })
        .collect()
}

/// Runs the driver on `repo`'s manager; its profiles land in `out` (emptied first).
fn drive(repo: &Path, out: &Path, decode_forwards: u32) {
    let _ = fs::remove_dir_all(out);
    let script = workspace_root().join("crates/cli/tests/data/drive_phases.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(repo)
        .arg(decode_forwards.to_string())
        .arg(out)
        .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
        .env_remove("RANK")
        .output()
        .expect("python3");
    assert!(out.status.success(), "driver: {}", text(&out));
}

fn patch(repo: &Path, phase: &str, active: &str) -> Output {
    npuprof(
        repo,
        &[
            "patch",
            "--model",
            "qwen-next",
            "--yaml",
            "dense.yaml",
            "--phase",
            phase,
            "--decode-active",
            active,
        ],
    )
}

#[test]
fn a_patched_phase_enum_manager_records_the_requested_window_per_phase() {
    let tmp = copy_example("recipes-next");
    let repo = tmp.path();
    let scratch = tempfile::tempdir().expect("temp dir");
    let profiles = scratch.path();
    let before = source_files(repo);
    let set = |s: &[u64]| s.iter().copied().collect::<BTreeSet<u64>>();

    // Unpatched: two encode and two prefill runs (a new profiler at each switch), Step Id 0
    // each; decode the factory defaults (skip_first 3, active 3).
    drive(repo, profiles, 12);
    assert_eq!(recorded(profiles, "mm_encode"), vec![set(&[0]), set(&[0])]);
    assert_eq!(recorded(profiles, "prefill"), vec![set(&[0]), set(&[0])]);
    assert_eq!(recorded(profiles, "decode"), vec![set(&[3, 4, 5])]);

    // Every phase on, a decode window of 5: set at the factory's default, the others kept at 1.
    let out = patch(repo, "both", "5");
    assert!(out.status.success(), "{}", text(&out));
    drive(repo, profiles, 12);
    assert_eq!(recorded(profiles, "mm_encode"), vec![set(&[0]), set(&[0])]);
    assert_eq!(recorded(profiles, "prefill"), vec![set(&[0]), set(&[0])]);
    assert_eq!(recorded(profiles, "decode"), vec![set(&[3, 4, 5, 6, 7])]);
    let out = npuprof(repo, &["revert"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(source_files(repo), before, "revert is byte-exact");

    // Decode only: encode and prefill are switched off by a guard that keeps the stand-in in
    // place, and decode still starts after them (the manager's phase order holds).
    let out = patch(repo, "decode", "4");
    assert!(out.status.success(), "{}", text(&out));
    drive(repo, profiles, 12);
    assert_eq!(recorded(profiles, "mm_encode"), Vec::<BTreeSet<u64>>::new());
    assert_eq!(recorded(profiles, "prefill"), Vec::<BTreeSet<u64>>::new());
    assert_eq!(recorded(profiles, "decode"), vec![set(&[3, 4, 5, 6])]);
    let out = npuprof(repo, &["revert"]);
    assert!(out.status.success(), "{}", text(&out));

    // Prefill only: encode and decode off; step() and stop() on the stand-in are safe.
    let out = patch(repo, "prefill", "3");
    assert!(out.status.success(), "{}", text(&out));
    drive(repo, profiles, 12);
    assert_eq!(recorded(profiles, "mm_encode"), Vec::<BTreeSet<u64>>::new());
    assert_eq!(recorded(profiles, "prefill"), vec![set(&[0]), set(&[0])]);
    assert_eq!(recorded(profiles, "decode"), Vec::<BTreeSet<u64>>::new());
    let out = npuprof(repo, &["revert"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(source_files(repo), before, "revert is byte-exact");
}

/// `npuprof <args>` run in `examples/recipes-next` (no temporary path in the output).
fn next_cmd(args: &[&str]) -> Command {
    let mut cmd = Command::new(NPUPROF);
    cmd.args(args)
        .current_dir(workspace_root().join("examples/recipes-next"))
        .env("NO_COLOR", "1");
    cmd
}

#[test]
fn route_plan_and_patch_of_the_newer_shape() {
    use insta_cmd::assert_cmd_snapshot;
    assert_cmd_snapshot!(
        "next_route_shared_engine",
        next_cmd(&["route", "--model", "qwen-next", "--yaml", "dense.yaml"])
    );
    assert_cmd_snapshot!(
        "next_route_text_mode_hand_over",
        next_cmd(&["route", "--model", "omni_next", "--yaml", "omni_text.yaml"])
    );
    assert_cmd_snapshot!(
        "next_route_multimodal_refused",
        next_cmd(&[
            "route",
            "--model",
            "omni_next",
            "--yaml",
            "omni_multimodal.yaml"
        ])
    );
    assert_cmd_snapshot!(
        "next_route_own_loop_refused",
        next_cmd(&["route", "--model", "solo_next", "--yaml", "solo.yaml"])
    );
    assert_cmd_snapshot!(
        "next_plan_three_phases",
        next_cmd(&[
            "plan",
            "--model",
            "qwen-next",
            "--yaml",
            "long_decode.yaml",
            "--decode-active",
            "5"
        ])
    );
    assert_cmd_snapshot!(
        "next_patch_decode_only_dry_run",
        next_cmd(&[
            "patch",
            "--model",
            "qwen-next",
            "--yaml",
            "long_decode.yaml",
            "--phase",
            "decode",
            "--decode-active",
            "5",
            "--dry-run",
        ])
    );
    assert_cmd_snapshot!(
        "next_patch_mm_encode_only_dry_run",
        next_cmd(&[
            "patch",
            "--model",
            "qwen-next",
            "--yaml",
            "long_decode.yaml",
            "--phase",
            "mm_encode",
            "--dry-run",
        ])
    );
}

/// Runs `infer.sh --model M --yaml F` under the fake; the result directory of case `case`.
fn infer(repo: &Path, model: &str, yaml: &str, case: &str) -> PathBuf {
    let out = Command::new("bash")
        .args([
            "executor/scripts/infer.sh",
            "--model",
            model,
            "--yaml",
            yaml,
        ])
        .current_dir(repo)
        .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
        .env_remove("RANK")
        .output()
        .expect("bash");
    assert!(out.status.success(), "{}", text(&out));
    let res = repo.join("models").join(model).join("res");
    let date = fs::read_dir(&res)
        .expect("res")
        .flatten()
        .next()
        .expect("a date")
        .path();
    date.join(case)
}

#[test]
fn a_multimodal_run_with_alternating_encode_and_prefill_verifies_clean() {
    let tmp = copy_example("recipes-next");
    let repo = tmp.path();
    let yaml = repo.join("models/omni_next/config/omni_multimodal.yaml");
    let text_ = fs::read_to_string(&yaml).expect("yaml");
    fs::write(
        &yaml,
        text_.replace("enable_profiler: False", "enable_profiler: True "),
    )
    .expect("write");
    let result = infer(
        repo,
        "omni_next",
        "omni_multimodal.yaml",
        "omni_next_omni_multimodal",
    );
    // Two requests: encode and prefill alternate (a new profiler at each switch), then decode.
    for (phase, runs) in [("mm_encode", 2), ("prefill", 2), ("decode", 1)] {
        assert_eq!(recorded(&result, phase).len(), runs, "{phase}");
    }
    let out = npuprof(repo, &["verify", result.to_str().expect("utf-8"), "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["runs"].as_array().map(Vec::len), Some(5), "{report}");
    assert_eq!(
        report["findings"],
        serde_json::json!([]),
        "several encode/prefill runs are normal here"
    );
    assert_eq!(report["ok"], serde_json::json!(true));
    // summary orders the phases as a request meets them: encode, prefill, decode.
    let out = npuprof(repo, &["summary", result.to_str().expect("utf-8")]);
    let shown: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(" · rank").map(|(p, _)| p.to_owned()))
        .collect();
    assert_eq!(
        shown,
        ["mm_encode", "mm_encode", "prefill", "prefill", "decode"],
        "{}",
        text(&out)
    );

    // A text run of the same engine has no encoder phase: prof/mm_encode/ is not required.
    let result = infer(repo, "qwen-next", "dense.yaml", "qwen_next_dense");
    let out = npuprof(repo, &["verify", result.to_str().expect("utf-8"), "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["findings"], serde_json::json!([]), "{report}");
}

#[test]
fn a_standalone_recipe_without_run_configs_is_routed_with_its_real_toggle() {
    let repo = workspace_root().join("examples/recipes-next");
    let out = npuprof(&repo, &["route", "--model", "hstu"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("family D, profiled by hand"), "{all}");
    assert!(
        all.contains("pass --enable_profiler to its launch script"),
        "{all}"
    );
    // The launch line, the results path and the lines of its files that show them.
    assert!(
        all.contains("launch:    cd models/hstu && python3 ./inference/inference_gr_ranking.py --gin_config_file ./inference/configs/kuairand_1k_inference_ranking.gin --mode eval --enable_fused_ops all --enable_profiler"),
        "{all}"
    );
    assert!(all.contains("results:   models/hstu/result"), "{all}");
    assert!(
        all.contains("evidence:  models/hstu/inference/inference_gr_ranking.py:25 toggle: the --enable_profiler flag"),
        "{all}"
    );
    assert!(
        all.contains("evidence:  models/hstu/inference/inference_gr_ranking.py:14 results:"),
        "{all}"
    );
    assert!(all.contains("(cli-flag)"), "{all}");
    // A model directory that is neither is still an error.
    let out = npuprof(&repo, &["route", "--model", "no_such_model"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn a_benchmark_config_outside_config_says_decode_never_runs() {
    let repo = workspace_root().join("examples/recipes-next");
    let out = npuprof(&repo, &["route"]);
    let all = text(&out);
    let line = all
        .lines()
        .find(|l| l.contains("models/qwen-next/benchmark/mmlu_test.yaml"))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(
        line.contains(
            "scheduler_config.max_new_tokens 1 makes it a prefill benchmark, decode never runs"
        ),
        "{line}"
    );
    // The suggested next command is itself accepted (its `<MODEL>` filled in with a model it
    // lists: with several models, route names none of them).
    let next = all
        .lines()
        .find_map(|l| l.strip_prefix("next:"))
        .unwrap_or_else(|| panic!("{all}"))
        .trim()
        .replace("<MODEL>", "qwen-next");
    let argv: Vec<&str> = next.split_whitespace().skip(1).collect();
    let out = npuprof(&repo, &argv);
    assert!(
        out.status.code().is_some_and(|c| c < 2),
        "{next}: {}",
        text(&out)
    );
}

#[test]
fn patch_itself_says_a_draft_model_budget_may_end_sooner() {
    let tmp = copy_example("recipes-mini");
    let repo = tmp.path();
    let yaml = repo.join("models/kimi_k3/config/kimi_mini_rank_1.yaml");
    let body = fs::read_to_string(&yaml).expect("yaml");
    fs::write(
        &yaml,
        body.replace("draft_model_type: \"none\"", "draft_model_type: \"dspark\""),
    )
    .expect("write");
    let args = [
        "patch",
        "--model",
        "kimi_k3",
        "--yaml",
        "kimi_mini_rank_1.yaml",
        "--dry-run",
    ];
    let out = npuprof(repo, &args);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("the decode budget is data-dependent"), "{all}");
    assert!(
        all.contains("EOS or rejected drafts may end the run sooner"),
        "{all}"
    );
    // Without the draft model the budget is exact and nothing is said.
    fs::write(&yaml, body).expect("write");
    let all = text(&npuprof(repo, &args));
    assert!(!all.contains("data-dependent"), "{all}");
}

#[test]
fn the_launcher_evidence_cites_the_line_that_chooses_the_entry() {
    for (model, yaml, line) in [
        (
            "qwen-next",
            "dense.yaml",
            "executor/scripts/function.sh:75 no models/<m>/infer.py: the launcher runs the shared engine",
        ),
        (
            "omni_next",
            "omni_text.yaml",
            "executor/scripts/function.sh:74 the launcher runs the model's own infer.py",
        ),
    ] {
        let all = route_next(model, yaml);
        assert!(all.contains(line), "{model}: {all}");
        assert!(
            !all.contains(":0 "),
            "{model}: no evidence at line 0: {all}"
        );
    }
}

#[test]
fn a_speculative_config_keeps_offline_decode_forwards_at_the_budget() {
    let all = route_next("qwen-next", "dspark.yaml");
    assert!(
        all.contains("scheduler_config.max_new_tokens = 40 -> 40 decode forwards"),
        "{all}"
    );
    assert!(
        all.contains("speculative_config method `dspark`: offline, the scheduler finishes a request on its decode-step count"),
        "{all}"
    );
    assert!(
        all.contains("online requests stop on tokens and EOS, sooner"),
        "{all}"
    );
    // Without a speculative_config nothing is said about it.
    let all = route_next("qwen-next", "dense.yaml");
    assert!(!all.contains("speculative_config"), "{all}");
}

#[test]
fn a_benchmark_config_is_refused_by_route_plan_and_patch_with_decode_never_runs() {
    let repo = workspace_root().join("examples/recipes-next");
    let yaml = "../benchmark/mmlu_test.yaml";
    for args in [
        vec!["route", "--model", "qwen-next", "--yaml", yaml],
        vec![
            "plan",
            "--model",
            "qwen-next",
            "--yaml",
            yaml,
            "--phase",
            "decode",
        ],
        vec![
            "patch",
            "--model",
            "qwen-next",
            "--yaml",
            yaml,
            "--phase",
            "decode",
            "--dry-run",
        ],
    ] {
        let out = npuprof(&repo, &args);
        let all = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {all}");
        assert!(
            all.contains(
                "`models/qwen-next/benchmark/mmlu_test.yaml` is outside models/qwen-next/config/"
            ),
            "{args:?}: {all}"
        );
        assert!(
            all.contains("its own launcher: models/qwen-next/benchmark/run_infer.sh"),
            "{args:?}: {all}"
        );
        assert!(
            all.contains(
                "scheduler_config.max_new_tokens 1 makes it a prefill benchmark: decode never runs"
            ),
            "{args:?}: {all}"
        );
    }
}

#[test]
fn route_names_why_a_config_under_config_is_not_profilable() {
    let repo = workspace_root().join("examples/recipes-next");
    let all = text(&npuprof(&repo, &["route"]));
    let line = all
        .lines()
        .find(|l| l.contains("models/solo_next/config/solo.yaml") && l.contains(" no "))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(line.contains("runs the model's own loop"), "{line}");
    assert!(!line.contains("not under models/<model>/config/"), "{line}");
}

#[test]
fn a_multimedia_model_is_routed_with_its_own_launch_line_results_and_evidence() {
    // The shape of davinci-magihuman (family C), written here: a mode argument naming
    // config/<mode>.yaml, an environment toggle, PROF_DIR's default, the multimedia launcher's cd.
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path();
    let model = repo.join("models/davinci-magihuman");
    fs::create_dir_all(model.join("config")).expect("mkdir");
    fs::create_dir_all(model.join("inference/pipeline")).expect("mkdir");
    fs::create_dir_all(repo.join("executor/scripts")).expect("mkdir");
    fs::write(
        model.join("config/distill.yaml"),
        "model_name: magi\nworld_size: 1\nentry_script: sample_video.py\n",
    )
    .expect("write");
    fs::write(
        model.join("infer.sh"),
        "MODE=\"${1:-base}\"\npython3 - <<EOF\nyaml_path = 'config/${MODE}.yaml'\nEOF\nexport PROF_DIR=\"${PROF_DIR:-./prof/${MODE}_prof/}\"\nmm_launch\n",
    )
    .expect("write");
    fs::write(
        model.join("inference/pipeline/video_generate.py"),
        "import os\n\n\ndef run():\n    if os.environ.get(\"ENABLE_PROFILER\"):\n        return os.environ.get(\"PROF_DIR\")\n",
    )
    .expect("write");
    fs::write(
        repo.join("executor/scripts/mm_function.sh"),
        "function mm_launch_task()\n{\n    cd \"${MM_MODEL_DIR}\"\n}\n",
    )
    .expect("write");
    fs::write(
        repo.join("executor/scripts/function.sh"),
        "INFER_PATH=\"${REPO_ROOT}/executor/offline/infer.py\"\n",
    )
    .expect("write");
    let out = npuprof(
        repo,
        &[
            "route",
            "--model",
            "davinci-magihuman",
            "--yaml",
            "distill.yaml",
        ],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    for line in [
        "family C, a multimedia pipeline",
        "launch:  cd models/davinci-magihuman && ENABLE_PROFILER=1 bash infer.sh distill",
        "profile: by hand (env-var): set ENABLE_PROFILER=1",
        "results: models/davinci-magihuman/prof/distill_prof/",
        "models/davinci-magihuman/infer.sh:3 launch: the mode argument names config/<mode>.yaml",
        "models/davinci-magihuman/inference/pipeline/video_generate.py:5 toggle: ENABLE_PROFILER",
        "models/davinci-magihuman/infer.sh:5 results: PROF_DIR defaults",
        "executor/scripts/mm_function.sh:3 results base: the multimedia launcher cds to models/<m>",
    ] {
        assert!(all.contains(line), "{line}: {all}");
    }
    // Not the LLM launcher's choice of entry.
    assert!(!all.contains("executor/scripts/function.sh"), "{all}");
    // patch still refuses, with the instruction.
    let out = npuprof(
        repo,
        &[
            "patch",
            "--model",
            "davinci-magihuman",
            "--yaml",
            "distill.yaml",
            "--dry-run",
        ],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(all.contains("ENABLE_PROFILER=1"), "{all}");
}

/// `npuprof collect --json` of `qwen-next` in `repo` under the fake torch_npu.
fn collect_next(repo: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "collect",
        "--repo",
        ".",
        "--model",
        "qwen-next",
        "--yaml",
        "dense.yaml",
        "--decode-active",
        "5",
        "--json",
    ];
    args.extend_from_slice(extra);
    let output = Command::new(NPUPROF)
        .args(&args)
        .current_dir(repo)
        .env("NO_COLOR", "1")
        .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
        .output()
        .expect("npuprof binary");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("collect's JSON ({e}): {}", text(&output)))
}

#[test]
fn collect_of_the_newer_shape_records_the_window_twice_in_a_row_and_restores_every_byte() {
    let repo = copy_example("recipes-next");
    let before = source_files(repo.path());
    for (round, phase) in [(1, "decode"), (2, "decode"), (3, "both")] {
        let report = collect_next(repo.path(), &["--phase", phase]);
        assert_eq!(
            (report["outcome"].as_str(), report["exit_code"].as_u64()),
            (Some("clean"), Some(0)),
            "round {round} ({phase}): {report:#}"
        );
        assert_eq!(
            source_files(repo.path()),
            before,
            "round {round}: not restored"
        );
    }
    // The decode window asked for: steps 3–7 (the factory's skip_first 3, then 5 recorded),
    // in each of the three rounds' decode directories.
    let case = repo.path().join("models/qwen-next/res");
    let mut decode_dirs = Vec::new();
    for date in fs::read_dir(&case).expect("res") {
        let out = date.expect("date").path().join("qwen_next_dense");
        decode_dirs.extend(recorded(&out, "decode"));
    }
    assert_eq!(decode_dirs.len(), 3, "{decode_dirs:?}");
    for steps in decode_dirs {
        assert_eq!(steps, (3..=7).collect::<BTreeSet<u64>>());
    }
}
