//! Patching resolved targets of every family in `examples/recipes-mini` (the miniature
//! repository in the real target's shapes): snapshots of the diffs, byte-exact revert, idempotence, the
//! patched Python run under a stub torch_npu, and structural matching over generated variants
//! of the profiler module (renamed names, keyword-only parameters, tabs, CRLF).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{apply_checked, example_repo, fixtures, python_parses, visible};
use npuprof_patch::diff::unified_diff;
use npuprof_patch::target::{PatchRequest, Sources, TargetPatch, TokenBudget, files, patch_target};
use npuprof_repository::{Family, Request, Target, resolve};
use npuprof_schedule::{PhaseSelection, Window};
use serde_json::Value;

const PROFILER_CONTEXT: &str = "executor/utils/profiler_context.py";
const MTP_CONFIG: &str = "models/deepseek-mini/config/decode_mtp.yaml";
const KIMI_CONFIG: &str = "models/kimi_k3/config/kimi_mini_rank_1.yaml";

/// A named transformation of the fixture repository's shared-engine profiler module.
#[derive(Debug, Clone, Copy)]
enum Variant {
    /// As on disk.
    Stock,
    /// Every name a tool might hard-code, renamed.
    Renamed,
    /// The window parameters keyword-only (`*, active=3`).
    KeywordOnly,
    /// Tabs for indentation.
    Tabs,
    /// CRLF line endings (module and run config).
    Crlf,
    /// `set_status` without its trailing bare `return`.
    NoTrailingReturn,
    /// kimi_k3's run config with a draft model and `next_n: 3`.
    DraftModel,
}

impl Variant {
    const ALL: [Variant; 6] = [
        Variant::Stock,
        Variant::Renamed,
        Variant::KeywordOnly,
        Variant::Tabs,
        Variant::Crlf,
        Variant::NoTrailingReturn,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::Stock => "stock",
            Variant::Renamed => "renamed",
            Variant::KeywordOnly => "keyword_only",
            Variant::Tabs => "tabs",
            Variant::Crlf => "crlf",
            Variant::NoTrailingReturn => "no_trailing_return",
            Variant::DraftModel => "draft_model",
        }
    }

    /// `(manager class, status method)` after the transformation.
    fn manager(self) -> (&'static str, &'static str) {
        match self {
            Variant::Renamed => ("ProfHolder", "switch_phase"),
            _ => ("ProfilerManager", "set_status"),
        }
    }

    /// The file's text after the transformation; a transformation meant for a file must change
    /// it (else the example moved and the variant tests nothing).
    fn apply(self, path: &str, text: &str) -> String {
        let new = match (self, path) {
            (Variant::Renamed, PROFILER_CONTEXT) => text
                .replace("create_profiler", "make_npu_prof")
                .replace("ProfilerManager", "ProfHolder")
                .replace("current_profiler", "active_prof")
                .replace("FakeContextManager", "NoProfiler")
                .replace("set_status", "switch_phase"),
            (Variant::KeywordOnly, PROFILER_CONTEXT) => text.replace(
                "profile_save_path=\"prof\", active=3",
                "profile_save_path=\"prof\", *, active=3",
            ),
            (Variant::Tabs, PROFILER_CONTEXT) => text
                .lines()
                .map(|l| {
                    let n = l.len() - l.trim_start_matches(' ').len();
                    format!("{}{}\n", "\t".repeat(n / 4), &l[n - n % 4..])
                })
                .collect(),
            (Variant::Crlf, PROFILER_CONTEXT | MTP_CONFIG) => text.replace('\n', "\r\n"),
            (Variant::NoTrailingReturn, PROFILER_CONTEXT) => text.replace(
                "            self.current_profiler.start()\n        return\n",
                "            self.current_profiler.start()\n",
            ),
            (Variant::DraftModel, KIMI_CONFIG) => text
                .replace("draft_model_type: \"none\"", "draft_model_type: \"dspark\"")
                .replace("next_n: 0", "next_n: 3"),
            _ => return text.to_owned(),
        };
        assert_ne!(new, text, "{self:?} does not apply to {path}");
        new
    }
}

/// A copy of the example repository with `variant` applied.
fn repo(variant: Variant) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_tree(&example_repo(), dir.path(), Path::new(""), variant);
    dir
}

fn copy_tree(from: &Path, to: &Path, rel: &Path, variant: Variant) {
    std::fs::create_dir_all(to.join(rel)).expect("mkdir");
    for entry in std::fs::read_dir(from.join(rel)).expect("fixture dir") {
        let entry = entry.expect("entry");
        let child = rel.join(entry.file_name());
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().expect("type").is_dir() {
            // Run output and caches of a local run are not part of the example.
            if !matches!(name.as_str(), "res" | "prof" | "__pycache__") {
                copy_tree(from, to, &child, variant);
            }
        } else {
            let text = std::fs::read_to_string(entry.path()).expect("fixture text");
            let key = child.to_string_lossy().replace('\\', "/");
            std::fs::write(to.join(&child), variant.apply(&key, &text)).expect("write");
        }
    }
}

fn target(repo: &Path, model: &str, yaml: &str) -> Target {
    resolve(&Request {
        repo,
        model,
        yaml,
        mode: None,
    })
    .unwrap_or_else(|e| panic!("{model} {yaml}: {e}"))
}

fn sources(repo: &Path, target: &Target) -> Sources {
    files(target)
        .into_iter()
        .map(|rel| {
            let text = std::fs::read_to_string(repo.join(&rel)).expect("source");
            (rel, text)
        })
        .collect()
}

fn request(phases: PhaseSelection, active: u64, skip_first: Option<u64>) -> PatchRequest {
    PatchRequest {
        phases,
        window: Window::new(active, skip_first).expect("window"),
        max_new_tokens: TokenBudget::Auto,
        modules: false,
    }
}

/// Patches, writes the result into `repo`, and checks: every edit set inverts to the original
/// bytes, the Python still parses, and patching the patched repository again changes nothing.
/// Returns the snapshot text (changes, then diffs).
fn check_patch(
    repo: &Path,
    model: &str,
    yaml: &str,
    request: &PatchRequest,
) -> (TargetPatch, String) {
    let t = target(repo, model, yaml);
    let before = sources(repo, &t);
    let patch = patch_target(&t, &before, request).unwrap_or_else(|e| panic!("{}: {e}", e.path));
    let mut out = String::new();
    for file in &patch.files {
        let original = &before[&file.path];
        let new = apply_checked(original, &file.edits);
        if file.path.ends_with(".py") {
            assert!(
                python_parses(&new),
                "{} does not parse after the patch",
                file.path
            );
        }
        for change in &file.changes {
            out.push_str(&format!("# {}: {change}\n", file.path));
        }
        out.push_str(&visible(&unified_diff(&file.path, original, &new)));
        std::fs::write(repo.join(&file.path), new).expect("write patched");
    }
    for warning in &patch.warnings {
        out.push_str(&format!("# warning: {warning}\n"));
    }
    let again = target(repo, model, yaml);
    let second = patch_target(&again, &sources(repo, &again), request).expect("second patch");
    assert!(
        second.files.iter().all(|f| f.edits.is_empty()),
        "patching twice must change nothing the second time: {:?}",
        second.files
    );
    (patch, out)
}

/// Runs the patched manager module under python3 and returns the created profilers' schedules.
fn check_execution(repo: &Path, variant: Variant, decode_forwards: u32) -> Vec<Value> {
    let (class, method) = variant.manager();
    let save = repo.join("res");
    let output = Command::new("python3")
        .arg(fixtures().join("drive_profiler.py"))
        .arg(repo.join("executor/utils"))
        .arg("profiler_context")
        .arg(class)
        .arg(method)
        .arg(decode_forwards.to_string())
        .arg(&save)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "the patched module failed under python3:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    created(&output.stdout)
}

fn created(stdout: &[u8]) -> Vec<Value> {
    let run: Value = serde_json::from_slice(stdout).expect("driver prints JSON");
    run["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["event"] == "create")
        .map(|e| serde_json::json!({"path": e["path"], "schedule": e["schedule"]}))
        .collect()
}

fn schedule(active: u64, repeat: u64, skip_first: u64) -> Value {
    serde_json::json!({"wait": 0, "warmup": 0, "active": active, "repeat": repeat, "skip_first": skip_first})
}

#[test]
fn shared_engine_resolves_by_structure_in_every_variant() {
    for variant in Variant::ALL {
        let dir = repo(variant);
        let t = target(dir.path(), "deepseek-mini", "decode_mtp.yaml");
        assert_eq!(t.family, Family::SharedEngine, "{variant:?}");
        let p = t.profiled().expect("settable");
        assert_eq!(p.phases.len(), 2, "{variant:?}");
        assert_eq!(p.factory_path, PROFILER_CONTEXT);
        let attribute = if matches!(variant, Variant::Renamed) {
            "self.active_prof"
        } else {
            "self.current_profiler"
        };
        assert_eq!(p.phases[1].site.assigned_to.as_deref(), Some(attribute));
    }
}

#[test]
fn shared_engine_both_phases_30_steps_in_every_variant() {
    for variant in Variant::ALL {
        let dir = repo(variant);
        let (patch, text) = check_patch(
            dir.path(),
            "deepseek-mini",
            "decode_mtp.yaml",
            &request(PhaseSelection::Both, 30, None),
        );
        // Offline: decode forwards = max_new_tokens whatever next_n; 3 + 30 closes, +1 margin.
        assert_eq!(patch.plan.min_max_new_tokens, Some(34), "{variant:?}");
        insta::assert_snapshot!(format!("engine_both_30__{}", variant.name()), text);
        let created = check_execution(dir.path(), variant, 34);
        assert_eq!(
            created,
            [
                serde_json::json!({"path": "prof/prefill", "schedule": schedule(1, 1, 0)}),
                serde_json::json!({"path": "prof/decode", "schedule": schedule(30, 1, 3)}),
            ],
            "{variant:?}"
        );
    }
}

#[test]
fn a_structure_window_turns_the_module_tracer_on_at_the_profile_call() {
    for variant in Variant::ALL {
        let dir = repo(variant);
        let structure = PatchRequest {
            modules: true,
            ..request(PhaseSelection::Both, 2, None)
        };
        let (_, text) = check_patch(dir.path(), "deepseek-mini", "decode_mtp.yaml", &structure);
        // record_shapes=False becomes True; with_modules, not passed, is appended.
        let diff_line = |sign: char, text_in: &str| {
            text.lines()
                .any(|l| l.starts_with(sign) && l.contains(text_in))
        };
        assert!(
            diff_line('-', "record_shapes=False") && diff_line('+', "record_shapes=True"),
            "{variant:?}: {text}"
        );
        assert!(diff_line('+', "with_modules=True"), "{variant:?}: {text}");
        let created = check_execution(dir.path(), variant, 6);
        assert_eq!(created.len(), 2, "{variant:?}");
    }
}

#[test]
fn shared_engine_one_phase_off_runs_with_the_stand_in() {
    for variant in Variant::ALL {
        for (phases, name) in [
            (PhaseSelection::Decode, "decode"),
            (PhaseSelection::Prefill, "prefill"),
        ] {
            let dir = repo(variant);
            let (_, text) = check_patch(
                dir.path(),
                "deepseek-mini",
                "decode_mtp.yaml",
                &request(phases, 5, Some(2)),
            );
            insta::assert_snapshot!(format!("engine_{name}_only__{}", variant.name()), text);
            let created = check_execution(dir.path(), variant, 10);
            let paths: Vec<&str> = created.iter().filter_map(|c| c["path"].as_str()).collect();
            assert_eq!(paths, [format!("prof/{name}")], "{variant:?} {name}");
        }
    }
}

#[test]
fn a_prefill_only_config_captures_prefill_and_refuses_decode_alone() {
    let dir = repo(Variant::Stock);
    let (patch, _) = check_patch(
        dir.path(),
        "deepseek-mini",
        "prefill_only.yaml",
        &request(PhaseSelection::Both, 10, None),
    );
    assert!(
        patch
            .warnings
            .iter()
            .any(|w| w.contains("decode will not be captured")
                || w.starts_with("decode will not be captured"))
    );
    let dir = repo(Variant::Stock);
    let t = target(dir.path(), "deepseek-mini", "prefill_only.yaml");
    let err = patch_target(
        &t,
        &sources(dir.path(), &t),
        &request(PhaseSelection::Decode, 10, None),
    )
    .expect_err("decode alone is refused");
    assert!(err.to_string().contains("--max-new-tokens"), "{err}");
    let explicit = PatchRequest {
        max_new_tokens: TokenBudget::Set(20),
        modules: false,
        ..request(PhaseSelection::Decode, 10, None)
    };
    let patch = patch_target(&t, &sources(dir.path(), &t), &explicit).expect("explicit budget");
    assert!(patch.plan.phases[0].closes_cleanly);
}

#[test]
fn a_pd_decode_node_is_refused_and_a_prefill_node_records_prefill_only() {
    let dir = repo(Variant::Stock);
    let t = target(dir.path(), "deepseek-mini", "deepseek-mini_pd/decode.yaml");
    let err = patch_target(
        &t,
        &sources(dir.path(), &t),
        &request(PhaseSelection::Both, 10, None),
    )
    .expect_err("decode role");
    assert!(
        err.to_string().contains("PD decode cannot be profiled"),
        "{err}"
    );
    let (patch, _) = check_patch(
        dir.path(),
        "deepseek-mini",
        "deepseek-mini_pd/prefill.yaml",
        &request(PhaseSelection::Both, 10, None),
    );
    let phases: Vec<_> = patch.plan.phases.iter().map(|p| p.phase).collect();
    assert_eq!(phases, [npuprof_schedule::Phase::Prefill]);
}

#[test]
fn legacy_runner_with_its_own_loop_sets_the_factory_default() {
    let dir = repo(Variant::Stock);
    let (patch, text) = check_patch(
        dir.path(),
        "glm_5_2",
        "glm_mini_rank_2.yaml",
        &request(PhaseSelection::Both, 30, None),
    );
    // Its own loop: decode forwards = max_new_tokens; 10 + 30 closes at 40, +1 margin.
    assert_eq!(patch.plan.min_max_new_tokens, Some(41));
    insta::assert_snapshot!("glm_like_both_30", text);
}

/// A factory default that another phase's call relies on stays as it is: the decode value is
/// passed at the decode call instead (a mutation that dropped this condition survived every
/// suite before this test).
#[test]
fn a_default_another_phase_shares_is_passed_at_the_decode_call() {
    let dir = repo(Variant::Stock);
    let module = dir.path().join(PROFILER_CONTEXT);
    let text = std::fs::read_to_string(&module).expect("profiler module");
    let pinned = "active=1, repeat=1, skip_first=0)";
    assert!(text.contains(pinned), "the fixture's prefill call changed");
    // The prefill call now takes `active` from the factory's default too.
    std::fs::write(&module, text.replace(pinned, "repeat=1, skip_first=0)")).expect("write");
    let (_, text) = check_patch(
        dir.path(),
        "deepseek-mini",
        "decode_mtp.yaml",
        &request(PhaseSelection::Both, 30, Some(2)),
    );
    let patched = std::fs::read_to_string(&module).expect("patched module");
    assert!(
        patched.contains("profile_save_path=\"prof\", active=3, repeat=1, skip_first=2)"),
        "the shared default active=3 is kept, the unshared skip_first default set:\n{text}"
    );
    assert!(
        text.contains("decode call: added active=30"),
        "active is passed at the decode call:\n{text}"
    );
}

#[test]
fn legacy_runner_phase_off_passes_false() {
    let dir = repo(Variant::Stock);
    let (_, text) = check_patch(
        dir.path(),
        "glm_5_2",
        "glm_mini_rank_2.yaml",
        &request(PhaseSelection::Decode, 4, Some(1)),
    );
    insta::assert_snapshot!("glm_like_decode_only", text);
}

#[test]
fn class_constants_are_the_window_and_a_draft_model_is_data_dependent() {
    let plain = repo(Variant::Stock);
    let t = target(plain.path(), "kimi_k3", "kimi_mini_rank_1.yaml");
    assert_eq!(
        t.profiled().expect("settable").budget.rule,
        npuprof_repository::BudgetRule::ForwardsBudgetMinusOne
    );
    let dir = repo(Variant::DraftModel);
    let t = target(dir.path(), "kimi_k3", "kimi_mini_rank_1.yaml");
    assert!(
        t.notes
            .iter()
            .any(|n| n.contains("assumes every speculative token is accepted"))
    );
    let (patch, text) = check_patch(
        dir.path(),
        "kimi_k3",
        "kimi_mini_rank_1.yaml",
        &request(PhaseSelection::Both, 5, Some(2)),
    );
    // 2 + 5 closes at 7, +1 margin = 8 rounds; every round may emit next_n + 1 = 4 tokens.
    assert_eq!(patch.plan.min_max_new_tokens, Some(1 + 4 * 8));
    insta::assert_snapshot!("kimi_like_both_5", text);
}

#[test]
fn the_base_runner_loop_is_used_when_the_model_has_none() {
    let dir = repo(Variant::Stock);
    let t = target(dir.path(), "pangu_7b", "pangu_mini_7b.yaml");
    let p = t.profiled().expect("settable");
    assert!(
        p.phases
            .iter()
            .all(|ph| ph.path == "executor/model_runner.py")
    );
    let (patch, text) = check_patch(
        dir.path(),
        "pangu_7b",
        "pangu_mini_7b.yaml",
        &request(PhaseSelection::Both, 3, Some(1)),
    );
    // max_new_tokens − 1 forwards: 1 + 3 closes at 4, +1 margin = 5 forwards → 6 tokens.
    assert_eq!(patch.plan.min_max_new_tokens, Some(6));
    insta::assert_snapshot!("pangu_like_both_3", text);
    // The run itself is checked end to end in the CLI's collect tests (family B under the fake).
}

#[test]
fn a_pipeline_without_a_switch_is_refused_with_its_instruction() {
    let dir = repo(Variant::Stock);
    let t = target(dir.path(), "wan-mini", "t2v.yaml");
    let err = patch_target(
        &t,
        &sources(dir.path(), &t),
        &request(PhaseSelection::Both, 10, None),
    )
    .expect_err("no switch");
    assert!(err.to_string().contains("npuprof inject"), "{err}");
}

/// Results land where the launcher names them.
#[test]
fn result_layout_follows_the_launcher() {
    let dir = repo(Variant::Stock);
    let engine = target(dir.path(), "deepseek-mini", "decode_mtp.yaml");
    assert_eq!(engine.results.case, "deepseek_mini_decode_mtp");
    assert_eq!(engine.results.res_dir, "models/deepseek-mini/res");
    assert_eq!(engine.launch.cwd, ".");
    let beta = target(dir.path(), "glm_5_2", "glm_mini_rank_2.yaml");
    assert_eq!(beta.results.case, "GLM-mini_glm_mini_rank_2");
    assert_eq!(beta.results.res_dir, "models/glm_5_2/res");
    assert_eq!(beta.launch.cwd, "models/glm_5_2");
    assert_eq!(
        beta.results.phase_path(npuprof_schedule::Phase::Decode),
        Some("decode/prof")
    );
    let root: PathBuf = dir
        .path()
        .join("models/glm_5_2/res/20260101/GLM-mini_glm_mini_rank_2");
    std::fs::create_dir_all(&root).expect("mkdir");
    assert_eq!(beta.results.newest(dir.path()), Some(root));
}

/// The texts a patch of `t` reads, with `from` replaced by `to` in `path` (which must hold it).
fn sources_with(repo: &Path, t: &Target, path: &str, from: &str, to: &str) -> Sources {
    let mut out = sources(repo, t);
    let text = out.get_mut(path).expect("a file the patch reads");
    assert!(text.contains(from), "{path} no longer holds {from:?}");
    *text = text.replace(from, to);
    out
}

/// Every change line of a patch, `path: change`.
fn change_lines(patch: &TargetPatch) -> Vec<String> {
    patch
        .files
        .iter()
        .flat_map(|f| f.changes.iter().map(move |c| format!("{}: {c}", f.path)))
        .collect()
}

/// The decode call of the engine, as the example writes it.
const ENGINE_DECODE_PATH: &str = "os.path.join(self.profile_save_path, \"prof\", \"decode\"))";

/// A phase call gone from the text being patched (edited since route) is refused when that
/// phase is asked for, and ignored when it is not.
#[test]
fn a_requested_phase_whose_call_is_gone_is_refused() {
    let dir = repo(Variant::Stock);
    let t = target(dir.path(), "deepseek-mini", "decode_mtp.yaml");
    // The decode call's save path no longer names a phase: no decode call in the text.
    let gone = sources_with(
        dir.path(),
        &t,
        PROFILER_CONTEXT,
        ENGINE_DECODE_PATH,
        "os.path.join(self.profile_save_path, \"prof\", \"later\"))",
    );
    let err = patch_target(&t, &gone, &request(PhaseSelection::Both, 5, None))
        .expect_err("decode asked, no decode call");
    assert_eq!(err.path, PROFILER_CONTEXT);
    assert_eq!(
        err.to_string(),
        "no decode profiler call was found (`npuprof route --model deepseek-mini --yaml \
         decode_mtp.yaml` shows what the target holds)"
    );
    // Prefill alone does not need the decode call: nothing to switch off, the prefill is
    // already pinned, only the switch is set.
    let patch = patch_target(&t, &gone, &request(PhaseSelection::Prefill, 5, None))
        .unwrap_or_else(|e| panic!("prefill alone: {e}"));
    assert_eq!(
        change_lines(&patch),
        ["models/deepseek-mini/config/decode_mtp.yaml: model_config.enable_profiler: False → True"]
    );
}

/// A phase the run can never record (a PD prefill node's decode) is left as written, not
/// switched off: the user asked for it, the run just never reaches it.
#[test]
fn a_requested_phase_the_run_never_records_is_left_as_written() {
    let dir = repo(Variant::Stock);
    let (patch, _) = check_patch(
        dir.path(),
        "deepseek-mini",
        "deepseek-mini_pd/prefill.yaml",
        &request(PhaseSelection::Both, 10, None),
    );
    assert_eq!(
        change_lines(&patch),
        [
            "models/deepseek-mini/config/deepseek-mini_pd/prefill.yaml: model_config.enable_profiler: False → True"
        ]
    );
    assert_eq!(
        patch.warnings,
        [
            "decode will not be captured: a prefill-role node runs no decode (it records one prefill batch)"
        ]
    );
}

/// Without decode the token budget is left alone even when the decode window asked for would
/// need more than the config gives (a prefill-only patch must not change the benchmark).
#[test]
fn a_patch_without_decode_keeps_the_token_budget() {
    let dir = repo(Variant::Stock);
    let t = target(dir.path(), "deepseek-mini", "decode_mtp.yaml");
    let budget = "max_new_tokens: 32";
    let small = sources_with(dir.path(), &t, MTP_CONFIG, budget, "max_new_tokens: 4");
    // A config that leaves the budget to the engine's default keeps it that way (raising a
    // missing budget "to at least 1" would write `max_new_tokens: 1`).
    let unset = sources_with(dir.path(), &t, MTP_CONFIG, &format!("  {budget}\n"), "");
    for texts in [&small, &unset] {
        let patch = patch_target(&t, texts, &request(PhaseSelection::Prefill, 30, None))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            change_lines(&patch)
                .into_iter()
                .filter(|c| c.starts_with(MTP_CONFIG))
                .collect::<Vec<_>>(),
            [format!(
                "{MTP_CONFIG}: model_config.enable_profiler: False → True"
            )]
        );
    }
    // With decode the same request raises it to the plan's minimum (3 + 30 closes, +1).
    let patch = patch_target(&t, &small, &request(PhaseSelection::Both, 30, None))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        change_lines(&patch)
            .iter()
            .any(|c| c.ends_with("scheduler_config.max_new_tokens: 4 → 34")),
        "{:?}",
        change_lines(&patch)
    );
}

/// The "does not close cleanly" warning is about decode: a prefill window that never closes
/// (repeat=0 as written in the model's loop) does not raise it.
#[test]
fn a_prefill_window_that_never_closes_raises_no_decode_warning() {
    let dir = repo(Variant::Stock);
    let t = target(dir.path(), "glm_5_2", "glm_mini_rank_2.yaml");
    let looping = sources_with(
        dir.path(),
        &t,
        "models/glm_5_2/models/model_infer.py",
        "active=1, skip_first=5, repeat=1)",
        "active=1, skip_first=5, repeat=0)",
    );
    let patch = patch_target(&t, &looping, &request(PhaseSelection::Both, 30, None))
        .unwrap_or_else(|e| panic!("{e}"));
    let prefill = patch
        .plan
        .phases
        .iter()
        .find(|p| p.phase == npuprof_schedule::Phase::Prefill)
        .expect("prefill planned");
    assert!(
        !prefill.closes_cleanly,
        "the fixture's prefill must not close"
    );
    assert!(
        patch
            .warnings
            .iter()
            .all(|w| !w.contains("does not close cleanly")),
        "{:?}",
        patch.warnings
    );
}

/// A copy of `examples/recipes-next` (the newer engine: one call builds every phase's profiler,
/// with an mm_encode phase).
fn next_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let from = example_repo().join("../recipes-next");
    copy_tree(&from, dir.path(), Path::new(""), Variant::Stock);
    dir
}

fn planned(patch: &TargetPatch) -> Vec<npuprof_schedule::Phase> {
    patch.plan.phases.iter().map(|p| p.phase).collect()
}

/// `--phase mm_encode` profiles the encoder alone on a target that has one and is refused,
/// with the target's phases, on one that has none.
#[test]
fn mm_encode_alone_is_patched_where_the_target_has_it_and_refused_elsewhere() {
    use npuprof_schedule::Phase;
    let next = next_repo();
    let t = target(next.path(), "qwen-next", "long_decode.yaml");
    let patch = patch_target(
        &t,
        &sources(next.path(), &t),
        &request(PhaseSelection::MmEncode, 5, None),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", e.path));
    assert_eq!(planned(&patch), [Phase::MmEncode]);
    assert_eq!(patch.warnings, Vec::<String>::new());

    let mini = repo(Variant::Stock);
    let t = target(mini.path(), "deepseek-mini", "decode_mtp.yaml");
    let err = patch_target(
        &t,
        &sources(mini.path(), &t),
        &request(PhaseSelection::MmEncode, 5, None),
    )
    .expect_err("no mm_encode phase");
    assert_eq!(err.path, PROFILER_CONTEXT);
    assert_eq!(
        err.to_string(),
        "deepseek-mini has no mm_encode profiler call (its phases: prefill, decode); pass \
         --phase with one of them, or both"
    );
}

/// A config whose budget buys no decode, on a target with an encoder: both phases asked for
/// means prefill alone (said twice: decode is never captured, and mm_encode not either).
#[test]
fn without_decode_a_target_with_an_encoder_profiles_prefill_alone() {
    use npuprof_schedule::Phase;
    let next = next_repo();
    let t = target(next.path(), "qwen-next", "long_decode.yaml");
    let budget = sources_with(
        next.path(),
        &t,
        "models/qwen-next/config/long_decode.yaml",
        "max_new_tokens: 256",
        "max_new_tokens: 1",
    );
    // Resolved again on the one-token config, so the target knows decode is never recorded.
    std::fs::write(
        next.path().join("models/qwen-next/config/long_decode.yaml"),
        &budget["models/qwen-next/config/long_decode.yaml"],
    )
    .expect("write");
    let t = target(next.path(), "qwen-next", "long_decode.yaml");
    let patch = patch_target(
        &t,
        &sources(next.path(), &t),
        &request(PhaseSelection::Both, 5, None),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", e.path));
    assert_eq!(planned(&patch), [Phase::Prefill]);
    assert_eq!(
        patch.warnings,
        [
            "decode will not be captured: max_new_tokens 1 makes it a prefill benchmark (1 \
             decode forward(s): no decode window closes)",
            "mm_encode will not be captured either: without decode npuprof profiles prefill alone"
        ]
    );
}

/// A phase call that passes `False` to the factory's enable argument (an earlier patch not
/// reverted) is refused when that phase should run: patching on would record nothing.
#[test]
fn a_phase_call_switched_off_by_its_enable_argument_is_refused() {
    let dir = repo(Variant::Stock);
    let t = target(dir.path(), "glm_5_2", "glm_mini_rank_2.yaml");
    let off = sources_with(
        dir.path(),
        &t,
        "models/glm_5_2/models/model_infer.py",
        "define_profiler(enable_profiler=enable_profiler,",
        "define_profiler(enable_profiler=False,",
    );
    let err = patch_target(&t, &off, &request(PhaseSelection::Both, 30, None))
        .expect_err("decode call passes False");
    assert_eq!(err.path, "models/glm_5_2/models/model_infer.py");
    assert_eq!(
        err.to_string(),
        "the decode profiler call at line 75 passes `False` to switch it off (an earlier npuprof \
         patch?); run `npuprof revert` first"
    );
    // Decode off is what the user asks for: that call is left as it is.
    patch_target(&t, &off, &request(PhaseSelection::Prefill, 30, None))
        .unwrap_or_else(|e| panic!("prefill alone: {e}"));
}

/// Two phases of a call shared by every phase switched off: one guard each, at the same place,
/// both kept (in order), and each stand-in method the code needs added once.
#[test]
fn two_phases_off_at_one_shared_call_get_a_guard_each() {
    let next = next_repo();
    let (_, text) = check_patch(
        next.path(),
        "qwen-next",
        "long_decode.yaml",
        &request(PhaseSelection::Decode, 4, None),
    );
    let module = std::fs::read_to_string(next.path().join("executor/utils/profiler_context.py"))
        .expect("patched module");
    let guards: Vec<&str> = module
        .lines()
        .filter(|l| l.contains("# npuprof:") && l.contains("not profiled"))
        .map(str::trim)
        .collect();
    assert_eq!(guards.len(), 2, "{text}");
    assert!(guards[0].contains("mm_encode not profiled"), "{text}");
    assert!(guards[1].contains("prefill not profiled"), "{text}");
    assert_eq!(
        module.matches("    def start():").count(),
        1,
        "the stand-in gets start() once:\n{text}"
    );
}

/// The shared engine's prefill is pinned at `active=1, repeat=1, skip_first=0`: a value passed
/// at the call is replaced, one the call leaves to a factory default that differs is passed,
/// one that matches the default is left alone, and one npuprof cannot evaluate is refused.
#[test]
fn the_engine_prefill_is_pinned_where_each_value_lives() {
    let dir = repo(Variant::Stock);
    let t = target(dir.path(), "deepseek-mini", "decode_mtp.yaml");
    let pinned = "active=1, repeat=1, skip_first=0)";
    // The prefill patched alone, on the module with `from` replaced by `to`.
    let patch_with = |from: &str, to: &str| {
        let src = sources_with(dir.path(), &t, PROFILER_CONTEXT, from, to);
        patch_target(&t, &src, &request(PhaseSelection::Prefill, 5, None))
    };
    let changes = |call: &str| {
        let patch = patch_with(pinned, call).unwrap_or_else(|e| panic!("{call}: {e}"));
        change_lines(&patch)
            .into_iter()
            .filter(|c| c.contains("prefill call"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        changes("active=2, repeat=1, skip_first=0)"),
        [format!(
            "{PROFILER_CONTEXT}: prefill call: active=2 → active=1"
        )]
    );
    // repeat's default is 1 (kept), skip_first's is 3 (passed as 0).
    assert_eq!(
        changes("active=1)"),
        [format!(
            "{PROFILER_CONTEXT}: prefill call: added skip_first=0"
        )]
    );
    // A value fixed inside the factory's schedule(...) is fine when it is the pinned one, and
    // refused when it is not.
    patch_with("repeat=repeat,", "repeat=1,").unwrap_or_else(|e| panic!("repeat fixed at 1: {e}"));
    let err =
        patch_with("skip_first=skip_first\n", "skip_first=2\n").expect_err("skip_first fixed at 2");
    assert!(
        err.to_string()
            .starts_with("the prefill window's `skip_first` is fixed to 2 inside the factory"),
        "{err}"
    );
    let err =
        patch_with(pinned, "active=n, repeat=1, skip_first=0)").expect_err("unevaluated active");
    assert!(
        err.to_string().starts_with(
            "the prefill window's `active` is `n`, an expression npuprof does not evaluate"
        ),
        "{err}"
    );
}

/// The token budget is read as the engine's loader (PyYAML's `safe_load`) reads it: `040` is 32
/// and `3_2` is 32, so "raise to at least 14" leaves them alone (npuprof's YAML library reads
/// both as strings, and the patch used to write `max_new_tokens: 14` over a budget of 32); what
/// PyYAML reads as no count is refused by name, before anything is written.
#[test]
fn the_token_budget_is_read_as_pyyaml_reads_it_and_never_lowered() {
    for written in ["040", "3_2", "0x20", "+32"] {
        let dir = repo(Variant::Stock);
        let path = dir.path().join(MTP_CONFIG);
        let text = std::fs::read_to_string(&path).expect("config");
        let new = text.replace("max_new_tokens: 32", &format!("max_new_tokens: {written}"));
        assert_ne!(new, text);
        std::fs::write(&path, new).expect("write");
        let t = target(dir.path(), "deepseek-mini", "decode_mtp.yaml");
        let budget = t.profiled().map(|p| p.config.effective_budget);
        assert_eq!(budget, Some(32), "{written}");
        let patch = patch_target(
            &t,
            &sources(dir.path(), &t),
            &request(PhaseSelection::Both, 10, None),
        )
        .unwrap_or_else(|e| panic!("{written}: {e}"));
        assert_eq!(patch.plan.min_max_new_tokens, Some(14), "{written}");
        let budget_changes: Vec<String> = change_lines(&patch)
            .into_iter()
            .filter(|c| c.contains("max_new_tokens"))
            .collect();
        assert!(budget_changes.is_empty(), "{written}: {budget_changes:?}");
    }
    for (written, reads) in [
        ("\"32\"", "a string"),
        ("'32'", "a string"),
        ("32.0", "a float"),
        ("-1", "the int -1"),
        (".inf", "a float"),
        ("null", "None"),
        ("", "None"),
        ("[32]", "a list"),
        ("1e309", "a string"),
        ("yes", "the bool True"),
        ("*anchor_elsewhere", "an alias"),
    ] {
        let dir = repo(Variant::Stock);
        let path = dir.path().join(MTP_CONFIG);
        let text = std::fs::read_to_string(&path).expect("config");
        let mut new = text.replace("max_new_tokens: 32", &format!("max_new_tokens: {written}"));
        if written.starts_with('*') {
            new = format!("anchors: &anchor_elsewhere 32\n{new}");
        }
        std::fs::write(&path, &new).expect("write");
        let err = resolve(&Request {
            repo: dir.path(),
            model: "deepseek-mini",
            yaml: "decode_mtp.yaml",
            mode: None,
        })
        .err()
        .unwrap_or_else(|| panic!("{written:?} resolves"));
        let message = err.to_string();
        assert!(
            message.starts_with("scheduler_config.max_new_tokens is `")
                && message.contains(reads)
                && message.contains("write a plain integer, e.g. `max_new_tokens: 32`"),
            "{written:?}: {message}"
        );
    }
}
