//! Target resolution's decisions, each on the bundled example repository or a variant of it
//! generated here (one file changed, added or removed): which launcher line is the evidence,
//! which run config shares a result directory, where the phase calls are looked for, which
//! toggle a hand-profiled model exposes, the decode budget's verdict, a PD config's role, the
//! factory's name, when a model's own entry is followed, and the refusals of a request that
//! names no run config of the model. Each test asserts the exact value a
//! mutation of the decision would change (see docs/mutants.md).

use std::path::{Path, PathBuf};

use npuprof_repository::definition::Toggle;
use npuprof_repository::{
    Family, How, ManualTarget, NotRecordedCause, Request, Target, TargetError, resolve,
};
use npuprof_schedule::Phase;

const LAUNCHER: &str = "executor/scripts/function.sh";

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/recipes-mini")
}

/// A copy of the example repository (run output and caches left out).
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_tree(&example(), dir.path());
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("example dir") {
        let entry = entry.expect("entry");
        let name = entry.file_name();
        let path = entry.path();
        if entry.file_type().expect("type").is_dir() {
            if !matches!(name.to_str(), Some("res" | "prof" | "__pycache__")) {
                copy_tree(&path, &to.join(&name));
            }
        } else {
            std::fs::copy(&path, to.join(&name)).expect("copy");
        }
    }
}

/// Writes `text` at `rel` under `repo`, creating its directory.
fn write(repo: &Path, rel: &str, text: &str) {
    let path = repo.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// Rewrites the file at `rel`: `from` must occur in it (else the example moved and the variant
/// tests nothing).
fn edit(repo: &Path, rel: &str, from: &str, to: &str) {
    let path = repo.join(rel);
    let text = std::fs::read_to_string(&path).expect("example file");
    assert!(text.contains(from), "{rel} no longer holds {from:?}");
    std::fs::write(path, text.replace(from, to)).expect("write");
}

fn try_resolve(repo: &Path, model: &str, yaml: &str) -> Result<Target, TargetError> {
    resolve(&Request {
        repo,
        model,
        yaml,
        mode: None,
    })
}

fn check_resolve(repo: &Path, model: &str, yaml: &str) -> Target {
    try_resolve(repo, model, yaml).unwrap_or_else(|e| panic!("{model} {yaml}: {e}"))
}

fn check_refused(repo: &Path, model: &str, yaml: &str) -> TargetError {
    match try_resolve(repo, model, yaml) {
        Ok(t) => panic!("{model} {yaml} resolved: {:?}", t.how),
        Err(e) => e,
    }
}

fn manual(target: &Target) -> &ManualTarget {
    match &target.how {
        How::Manual(m) => m,
        How::Settable(_) => panic!("{} is settable", target.model),
    }
}

/// The launcher evidence of `target`: `(line, what)`.
fn launcher_line(target: &Target) -> Option<(usize, String)> {
    target
        .evidence
        .iter()
        .find(|e| e.path == LAUNCHER)
        .map(|e| (e.line, e.what.clone()))
}

/// The `(phase, file)` of each phase call.
fn call_files(target: &Target) -> Vec<(Phase, String)> {
    target
        .profiled()
        .expect("settable")
        .phases
        .iter()
        .map(|p| (p.phase, p.path.clone()))
        .collect()
}

#[test]
fn the_launcher_evidence_is_the_uncommented_line_that_picks_the_entry() {
    let dir = repo();
    // Lines 15 and 16 of the example launcher are comments naming both entries: they are not
    // the evidence; lines 74 and 75 pick the entry.
    let engine = check_resolve(dir.path(), "deepseek-mini", "decode_mtp.yaml");
    assert_eq!(
        launcher_line(&engine),
        Some((
            75,
            "no models/<m>/infer.py: the launcher runs the shared engine \
             (executor/offline/infer.py)"
                .to_owned()
        ))
    );
    let own = check_resolve(dir.path(), "glm_5_2", "glm_mini_rank_2.yaml");
    assert_eq!(
        launcher_line(&own),
        Some((
            74,
            "the launcher runs the model's own infer.py, which exists (models/{MODEL_DIR}/infer.py)"
                .replace("{MODEL_DIR}", "glm_5_2")
        ))
    );
    // A launcher that names no entry gives no evidence rather than a made-up line.
    edit(
        dir.path(),
        LAUNCHER,
        "INFER_PATH=\"${REPO_ROOT}/executor/offline/infer.py\"",
        "INFER_PATH=\"${ENTRY}\"",
    );
    let engine = check_resolve(dir.path(), "deepseek-mini", "decode_mtp.yaml");
    assert_eq!(launcher_line(&engine), None);
}

const SHARED_NOTE: &str = "models/glm_5_2/config/ci_950/glm_mini_rank_1.yaml writes to the same \
                           result directory (GLM-mini_glm_mini_rank_1): the launcher drops the \
                           YAML's sub-folder";

fn shared_notes(target: &Target) -> Vec<&str> {
    target
        .notes
        .iter()
        .filter(|n| n.contains("writes to the same result directory"))
        .map(String::as_str)
        .collect()
}

#[test]
fn a_config_of_the_same_name_and_model_name_in_another_folder_shares_the_result_directory() {
    let dir = repo();
    let a3 = check_resolve(dir.path(), "glm_5_2", "ci_a3/glm_mini_rank_1.yaml");
    assert_eq!(a3.results.case, "GLM-mini_glm_mini_rank_1");
    assert_eq!(shared_notes(&a3), [SHARED_NOTE]);
    // Another stem: its own directory, no note.
    let other = check_resolve(dir.path(), "glm_5_2", "glm_mini_rank_2.yaml");
    assert_eq!(shared_notes(&other), Vec::<&str>::new());
    // The same stem under another model_name: another directory, no note.
    edit(
        dir.path(),
        "models/glm_5_2/config/ci_950/glm_mini_rank_1.yaml",
        "model_name: \"GLM-mini\"",
        "model_name: \"GLM-other\"",
    );
    let a3 = check_resolve(dir.path(), "glm_5_2", "ci_a3/glm_mini_rank_1.yaml");
    assert_eq!(shared_notes(&a3), Vec::<&str>::new());
}

#[test]
fn a_model_loop_holds_the_phase_calls_and_result_or_hidden_copies_are_not_read() {
    let dir = repo();
    const LOOP: &str = "models/glm_5_2/models/model_infer.py";
    let stock = check_resolve(dir.path(), "glm_5_2", "glm_mini_rank_2.yaml");
    assert_eq!(
        call_files(&stock),
        [
            (Phase::Prefill, LOOP.to_owned()),
            (Phase::Decode, LOOP.to_owned())
        ]
    );
    assert_eq!(
        stock.results.phases,
        [
            (Phase::Prefill, "prefill/prof".to_owned()),
            (Phase::Decode, "decode/prof".to_owned())
        ]
    );
    // A copy of the loop in the model's results, a hidden directory, a bytecode cache, or in a
    // file that is not Python would be a second call per phase if it were read.
    let text = std::fs::read_to_string(dir.path().join(LOOP)).expect("loop");
    for copy in [
        "models/glm_5_2/res/20260101/old/model_infer.py",
        "models/glm_5_2/.backup/model_infer.py",
        "models/glm_5_2/models/__pycache__/model_infer.py",
        "models/glm_5_2/models/model_infer.py.txt",
    ] {
        write(dir.path(), copy, &text);
    }
    let with_copies = check_resolve(dir.path(), "glm_5_2", "glm_mini_rank_2.yaml");
    assert_eq!(call_files(&with_copies), call_files(&stock));
    // A second copy where Python files are read is two calls per phase: refused, with both.
    write(
        dir.path(),
        "models/glm_5_2/models/model_infer_copy.py",
        &text,
    );
    let err = check_refused(dir.path(), "glm_5_2", "glm_mini_rank_2.yaml");
    let message = err.to_string();
    assert!(
        message.starts_with("2 calls of define_profiler build a prefill profiler (")
            && message.contains(&format!("{LOOP}:"))
            && message.contains("models/glm_5_2/models/model_infer_copy.py:"),
        "{message}"
    );
}

#[test]
fn without_calls_in_the_model_the_base_runner_loop_is_used_and_the_shared_engine_names_its_paths() {
    let dir = repo();
    let pangu = check_resolve(dir.path(), "pangu_7b", "pangu_mini_7b.yaml");
    const BASE: &str = "executor/model_runner.py";
    assert_eq!(
        call_files(&pangu),
        [
            (Phase::Prefill, BASE.to_owned()),
            (Phase::Decode, BASE.to_owned())
        ]
    );
    let engine = check_resolve(dir.path(), "deepseek-mini", "decode_mtp.yaml");
    assert_eq!(
        engine.results.phases,
        [
            (Phase::Prefill, "prof/prefill".to_owned()),
            (Phase::Decode, "prof/decode".to_owned())
        ]
    );
}

#[test]
fn a_script_flag_is_a_model_args_toggle_when_the_config_has_model_args_else_a_cli_flag() {
    let dir = repo();
    const CONFIG: &str = "models/hunyuan-mini/config/single.yaml";
    let t = check_resolve(dir.path(), "hunyuan-mini", "single.yaml");
    let m = manual(&t);
    assert_eq!(
        (m.family, m.toggle),
        (Family::Multimedia, Toggle::ModelArgs)
    );
    assert_eq!(
        m.instruction,
        "add `prof-dit: true` under model_args in the run config (its launcher passes \
         model_args as flags; models/hunyuan-mini/sample_video.py:17 reads --prof-dit)"
    );
    assert!(
        t.evidence
            .iter()
            .any(|e| e.path == "models/hunyuan-mini/sample_video.py"
                && e.line == 17
                && e.what == "profiling toggle (model-args)"),
        "{:?}",
        t.evidence
    );
    edit(dir.path(), CONFIG, "model_args:", "launch_args:");
    let t = check_resolve(dir.path(), "hunyuan-mini", "single.yaml");
    let m = manual(&t);
    assert_eq!((m.family, m.toggle), (Family::Standalone, Toggle::CliFlag));
    assert_eq!(
        m.instruction,
        "pass --prof-dit to the model's launch script (models/hunyuan-mini/sample_video.py:17)"
    );
}

#[test]
fn a_script_without_profiling_gives_no_toggle_and_an_environment_variable_is_one() {
    let dir = repo();
    let t = check_resolve(dir.path(), "wan-mini", "t2v.yaml");
    let m = manual(&t);
    assert_eq!((m.family, m.toggle), (Family::Multimedia, Toggle::None));
    assert!(
        m.instruction.starts_with(
            "the run config has no model_config section, so it belongs to another pipeline than \
             the LLM engine, and no profiling switch was found in models/wan-mini;"
        ),
        "{}",
        m.instruction
    );
    edit(
        dir.path(),
        "models/wan-mini/generate.py",
        "def main():\n",
        "import os\n\n\ndef main():\n    profile = os.environ.get(\"WAN_PROFILE\")\n",
    );
    let t = check_resolve(dir.path(), "wan-mini", "t2v.yaml");
    let m = manual(&t);
    assert_eq!((m.family, m.toggle), (Family::Multimedia, Toggle::EnvVar));
    assert!(
        m.instruction.starts_with(
            "set WAN_PROFILE=1 in the environment of the launch (models/wan-mini/generate.py:"
        ),
        "{}",
        m.instruction
    );
}

#[test]
fn a_budget_of_one_token_records_no_decode_and_two_tokens_do() {
    let dir = repo();
    const CONFIG: &str = "models/deepseek-mini/config/prefill_only.yaml";
    let t = check_resolve(dir.path(), "deepseek-mini", "prefill_only.yaml");
    let never = &t.profiled().expect("settable").never_recorded;
    assert_eq!(never.len(), 1, "{never:?}");
    assert_eq!(
        (never[0].phase, never[0].cause, never[0].why.as_str()),
        (
            Phase::Decode,
            NotRecordedCause::Budget,
            "max_new_tokens 1 makes it a prefill benchmark (1 decode forward(s): no decode window closes)"
        )
    );
    edit(dir.path(), CONFIG, "max_new_tokens: 1", "max_new_tokens: 2");
    let t = check_resolve(dir.path(), "deepseek-mini", "prefill_only.yaml");
    assert_eq!(t.profiled().expect("settable").never_recorded, []);
}

#[test]
fn a_draft_model_makes_the_budget_data_dependent_with_a_note() {
    let dir = repo();
    let note = |t: &Target| {
        t.notes
            .iter()
            .filter(|n| n.starts_with("data-dependent"))
            .cloned()
            .collect::<Vec<_>>()
    };
    let plain = check_resolve(dir.path(), "kimi_k3", "kimi_mini_rank_1.yaml");
    assert_eq!(note(&plain), Vec::<String>::new());
    edit(
        dir.path(),
        "models/kimi_k3/config/kimi_mini_rank_1.yaml",
        "draft_model_type: \"none\"\n  next_n: 0",
        "draft_model_type: \"dspark\"\n  next_n: 3",
    );
    let draft = check_resolve(dir.path(), "kimi_k3", "kimi_mini_rank_1.yaml");
    assert_eq!(
        note(&draft),
        [
            "data-dependent (draft-model acceptance, EOS): npuprof assumes every speculative token \
          is accepted (4 tokens per round), the fewest rounds possible"
        ]
    );
}

#[test]
fn a_request_naming_no_run_config_of_the_model_is_refused_with_the_reason() {
    let dir = repo();
    let repo = dir.path();
    let hint = |model: &str| match check_refused(repo, model, "decode_mtp.yaml") {
        TargetError::UnknownModel { model: m, hint, .. } if m == model => hint,
        other => panic!("{other}"),
    };
    assert_eq!(hint("deepseek-maxi"), "; did you mean `deepseek-mini`?");
    // Nothing close: the model directories (not the files beside them), sorted.
    write(repo, "models/README.md", "models\n");
    assert_eq!(
        hint("zzz"),
        "; available: deepseek-mini, glm_5_2, hunyuan-mini, kimi_k3, pangu_7b, qwen-mini, wan-mini"
    );
    match check_refused(repo, "deepseek-mini", "decode_mtp.json") {
        TargetError::UnknownConfig { path, hint } => {
            assert_eq!(path, "models/deepseek-mini/config/decode_mtp.json");
            assert!(
                hint.starts_with(" (a run config is a .yaml file)"),
                "{hint}"
            );
        }
        other => panic!("{other}"),
    }
    match check_refused(repo, "deepseek-mini", "decode_mtq.yaml") {
        TargetError::UnknownConfig { path, .. } => {
            assert_eq!(path, "models/deepseek-mini/config/decode_mtq.yaml");
        }
        other => panic!("{other}"),
    }
    // A run config that exists but cannot be read is a read error, not a missing config.
    write(repo, "models/deepseek-mini/config/latin1.yaml", "");
    std::fs::write(
        repo.join("models/deepseek-mini/config/latin1.yaml"),
        b"model_name: \"caf\xe9\"\n",
    )
    .expect("write");
    match check_refused(repo, "deepseek-mini", "latin1.yaml") {
        TargetError::Read { source, .. } => {
            assert_eq!(source.kind(), std::io::ErrorKind::InvalidData);
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_config_outside_the_config_directory_is_refused_with_its_launcher_and_budget() {
    let dir = repo();
    let repo = dir.path();
    let bench = "models/deepseek-mini/benchmark/prefill.yaml";
    let text = std::fs::read_to_string(repo.join("models/deepseek-mini/config/prefill_only.yaml"))
        .expect("config");
    write(repo, bench, &text);
    write(
        repo,
        "models/deepseek-mini/benchmark/run.sh",
        "#!/bin/bash\n",
    );
    write(repo, "models/deepseek-mini/benchmark/README.md", "notes\n");
    match check_refused(repo, "deepseek-mini", "../benchmark/prefill.yaml") {
        TargetError::OutsideConfig {
            path,
            launchers,
            why,
            ..
        } => {
            assert_eq!(path, bench);
            assert_eq!(
                launchers,
                " (its own launcher: models/deepseek-mini/benchmark/run.sh)"
            );
            assert_eq!(
                why,
                "; scheduler_config.max_new_tokens 1 makes it a prefill benchmark: decode never \
                 runs, and raising the budget would change the benchmark"
            );
        }
        other => panic!("{other}"),
    }
    edit(repo, bench, "max_new_tokens: 1", "max_new_tokens: 2");
    match check_refused(repo, "deepseek-mini", "../benchmark/prefill.yaml") {
        TargetError::OutsideConfig { why, .. } => assert_eq!(why, ""),
        other => panic!("{other}"),
    }
}

#[test]
fn a_factory_defined_twice_is_noted_with_both_lines_and_the_last_is_used() {
    let dir = repo();
    const MODULE: &str = "executor/utils/profiler_context.py";
    let text = std::fs::read_to_string(dir.path().join(MODULE)).expect("module");
    let start = text.find("def create_profiler(").expect("factory");
    let end = text[start..].find("\n\n\n").expect("factory end") + start;
    let last_line = text.lines().count() + 3;
    // The same factory again at the end of the module, and a helper defined twice (not the
    // factory: no note for it).
    let again = format!(
        "{text}\n\n{}\n\n\ndef helper():\n    return 1\n\n\ndef helper():\n    return 2\n",
        &text[start..end]
    );
    write(dir.path(), MODULE, &again);
    let t = check_resolve(dir.path(), "deepseek-mini", "decode_mtp.yaml");
    let notes: Vec<&String> = t.notes.iter().filter(|n| n.contains(" defines ")).collect();
    assert_eq!(
        notes,
        [&format!(
            "{MODULE} defines create_profiler 2 times (lines 30, {last_line}); Python uses the \
             last, line {last_line}, and so does npuprof"
        )]
    );
    assert_eq!(t.profiled().expect("settable").factory.line, last_line);
}

#[test]
fn a_hand_profiled_model_with_its_own_launcher_cites_its_scripts_not_the_llm_launcher() {
    let dir = repo();
    const MODEL: &str = "models/davinci-magihuman";
    write(
        dir.path(),
        &format!("{MODEL}/config/t2v.yaml"),
        "model_name: \"davinci\"\nmodel_args:\n  steps: 4\n",
    );
    write(
        dir.path(),
        &format!("{MODEL}/infer.sh"),
        "#!/bin/bash\nyaml_path = config/$1.yaml\nexport PROF_DIR=./prof/$1_prof/\n",
    );
    write(
        dir.path(),
        &format!("{MODEL}/inference/pipeline/video_generate.py"),
        "import os\n\nPROFILE = os.environ.get(\"ENABLE_PROFILER\")\n",
    );
    let t = check_resolve(dir.path(), "davinci-magihuman", "t2v.yaml");
    assert_eq!(manual(&t).toggle, Toggle::EnvVar);
    assert_eq!(launcher_line(&t), None, "{:?}", t.evidence);
    assert_eq!(t.launch.cwd, MODEL);
    let cited: Vec<(&str, usize)> = t
        .evidence
        .iter()
        .map(|e| (e.path.as_str(), e.line))
        .collect();
    assert_eq!(
        cited,
        [
            ("models/davinci-magihuman/infer.sh", 2),
            (
                "models/davinci-magihuman/inference/pipeline/video_generate.py",
                3
            ),
            ("models/davinci-magihuman/infer.sh", 3),
            // The multimedia launcher's line that starts the entry script.
            ("executor/scripts/mm_function.sh", 125),
        ]
    );
}

/// The role of a PD config names its launch flag and its results' sub-directory.
#[test]
fn a_pd_config_is_launched_with_its_role_and_files_its_results_under_it() {
    let dir = repo();
    for (role, prefix) in [("prefill", "prefill_node"), ("decode", "decode_node")] {
        let yaml = format!("deepseek-mini_pd/{role}.yaml");
        let t = check_resolve(dir.path(), "deepseek-mini", &yaml);
        assert_eq!(t.results.role_prefix.as_deref(), Some(prefix), "{yaml}");
        let argv = &t.launch.argv;
        let at = argv.iter().position(|a| a == "--pd-role");
        assert_eq!(
            at.and_then(|i| argv.get(i + 1)).map(String::as_str),
            Some(role),
            "{argv:?}"
        );
    }
}

#[test]
fn each_phase_call_is_found_by_its_phase() {
    let dir = repo();
    let t = check_resolve(dir.path(), "deepseek-mini", "decode_mtp.yaml");
    let profiled = t.profiled().expect("settable");
    let found: Vec<Option<Phase>> = Phase::ALL
        .into_iter()
        .map(|phase| profiled.phase(phase).map(|p| p.phase))
        .collect();
    assert_eq!(found, [None, Some(Phase::Prefill), Some(Phase::Decode)]);
}

/// The factory's evidence names it as Python would: a method with its class.
#[test]
fn the_factory_evidence_names_a_method_with_its_class() {
    let dir = repo();
    let factory = |model: &str, yaml: &str| {
        check_resolve(dir.path(), model, yaml)
            .evidence
            .into_iter()
            .find(|e| e.what.starts_with("profiler factory"))
            .map(|e| (e.what, e.path, e.line))
    };
    assert_eq!(
        factory("deepseek-mini", "decode_mtp.yaml"),
        Some((
            "profiler factory create_profiler".to_owned(),
            "executor/utils/profiler_context.py".to_owned(),
            30
        ))
    );
    assert_eq!(
        factory("glm_5_2", "glm_mini_rank_2.yaml"),
        Some((
            "profiler factory ModelRunner.define_profiler".to_owned(),
            "executor/model_runner.py".to_owned(),
            44
        ))
    );
}

/// A model's own `infer.py` is followed to its profiler code only for a config with the
/// switch's section (an LLM run config); another pipeline's config is not.
#[test]
fn a_models_own_entry_is_followed_only_for_a_config_with_the_switch_section() {
    let dir = repo();
    let chain = |model: &str, yaml: &str, text: &str| {
        let value: yaml_serde::Value = yaml_serde::from_str(text).expect("config");
        let definitions = npuprof_repository::Definitions::builtin();
        let view = npuprof_repository::config_view(
            definitions,
            dir.path(),
            model,
            yaml,
            text,
            &value,
            None,
        )
        .unwrap_or_else(|e| panic!("{model} {yaml}: {e}"));
        let chain: Vec<(String, String, usize)> = view
            .chain
            .into_iter()
            .map(|e| (e.what, e.path, e.line))
            .collect();
        (view.shape.id.as_str(), chain)
    };
    let glm = "models/glm_5_2/config/glm_mini_rank_2.yaml";
    let text = std::fs::read_to_string(dir.path().join(glm)).expect("config");
    assert_eq!(
        chain("glm_5_2", "glm_mini_rank_2.yaml", &text),
        (
            "legacy-runner",
            vec![(
                "the model's code imports the legacy runner (executor.model_runner)".to_owned(),
                "models/glm_5_2/runner_glm.py".to_owned(),
                2
            )]
        )
    );
    // kimi_k3's infer.py imports the legacy runner too, but this config has no model_config.
    assert_eq!(
        chain(
            "kimi_k3",
            "other.yaml",
            "model_name: kimi\ndata_config:\n  batch_size: 1\n"
        ),
        ("legacy-runner", Vec::new())
    );
}

/// The "whole run" decode window: the budget's guaranteed forwards less `skip_first` (the decode
/// call's own, 3 from the factory's default, unless given) and the margin step; none when
/// nothing is left.
#[test]
fn the_whole_run_decode_window_is_the_budget_less_skip_first_and_the_margin() {
    let dir = repo();
    let active = |yaml: &str, skip_first: Option<u64>| {
        check_resolve(dir.path(), "deepseek-mini", yaml)
            .profiled()
            .expect("settable")
            .whole_run_decode_active(skip_first)
    };
    // max_new_tokens 32, one decode forward per token.
    assert_eq!(active("decode_mtp.yaml", None), Some(28));
    assert_eq!(active("decode_mtp.yaml", Some(10)), Some(21));
    // max_new_tokens 1.
    assert_eq!(active("prefill_only.yaml", None), None);
}

/// A factory the run may not call as written is refused, naming the file and line that may
/// rebind it (issue 39: collect said "clean" for a window such a run never recorded). Each case
/// is one edit of the example; `@staticmethod` (the legacy runner's) binds the body as written.
#[test]
fn a_factory_the_run_may_not_call_as_written_is_refused_by_its_line() {
    const CONTEXT: &str = "executor/utils/profiler_context.py";
    const ENGINE: &str = "executor/core/engine/execution_engine.py";
    const DEF: &str = "def create_profiler(";
    let import = "from executor.utils.profiler_context import ProfilerManager\n";
    // (file, text replaced, replacement, the reported line's start, what is said)
    let cases: &[(&str, &str, String, &str, &str)] = &[
        (
            CONTEXT,
            DEF,
            format!("import functools\n@functools.lru_cache()\n{DEF}"),
            "@functools",
            "a decorator wraps create_profiler",
        ),
        (
            ENGINE,
            import,
            format!(
                "{import}import executor.utils.profiler_context as pc\n\
                 pc.create_profiler = lambda *a, **k: None\n"
            ),
            "pc.create_profiler =",
            "`pc.create_profiler = …` rebinds create_profiler (a monkeypatch)",
        ),
        (
            ENGINE,
            import,
            format!(
                "{import}import executor.utils.profiler_context as pc\n\
                 setattr(pc, \"create_profiler\", print)\n"
            ),
            "setattr(",
            "`setattr(pc, \"create_profiler\", print)` may rebind create_profiler",
        ),
        (
            CONTEXT,
            "class ProfilerManager:",
            "create_profiler.__defaults__ = (True, \"prof\", 3, 1, 3)\n\n\nclass ProfilerManager:"
                .to_owned(),
            "create_profiler.__defaults__",
            "`create_profiler.__defaults__ = …` changes what a call of create_profiler does",
        ),
        (
            CONTEXT,
            "class ProfilerManager:",
            "exec(\"create_profiler = None\")\n\n\nclass ProfilerManager:".to_owned(),
            "exec(",
            "`exec(…)` in a file that names create_profiler",
        ),
        (
            ENGINE,
            import,
            format!(
                "{import}try:\n    from fast.profiling import create_profiler\n\
                 except ImportError:\n    from executor.utils.profiler_context import create_profiler\n"
            ),
            "from fast",
            "binds create_profiler to fast.profiling.create_profiler",
        ),
        (
            ENGINE,
            import,
            format!(
                "{import}if __debug__:\n    from executor.utils.profiler_context import create_profiler\n"
            ),
            "from executor.utils.profiler_context import create_profiler",
            "is imported under a condition",
        ),
        (
            CONTEXT,
            "class ProfilerManager:",
            "create_profiler = print\n\n\nclass ProfilerManager:".to_owned(),
            "create_profiler = print",
            "`create_profiler = …` rebinds create_profiler",
        ),
    ];
    for (file, from, to, marker, said) in cases {
        let dir = repo();
        edit(dir.path(), file, from, to);
        let err = check_refused(dir.path(), "deepseek-mini", "decode_mtp.yaml").to_string();
        let line = std::fs::read_to_string(dir.path().join(file))
            .expect("edited file")
            .lines()
            .position(|l| l.trim_start().starts_with(marker))
            .expect("the construct's line")
            + 1;
        assert!(
            err.starts_with("npuprof cannot prove that the run calls create_profiler")
                && err.contains(&format!("{file}:{line}: "))
                && err.contains(said),
            "{file} {said}: {err}"
        );
    }
    // The legacy runner's `@staticmethod` factory and an unconditional import resolve.
    let dir = repo();
    check_resolve(dir.path(), "kimi_k3", "kimi_mini_rank_1.yaml");
    edit(
        dir.path(),
        ENGINE,
        import,
        &format!("{import}from executor.utils.profiler_context import create_profiler\n"),
    );
    check_resolve(dir.path(), "deepseek-mini", "decode_mtp.yaml");
}

/// `--yaml sub/../decode_mtp.yaml` names a run config inside config/ and resolves as
/// `decode_mtp.yaml` does (it was refused as "outside config/"); one that leaves config/ is
/// refused as outside.
#[test]
fn a_yaml_path_with_dot_dot_inside_config_resolves_as_the_file_it_names() {
    let dir = repo();
    let plain = check_resolve(dir.path(), "deepseek-mini", "decode_mtp.yaml");
    for spelled in [
        "sub/../decode_mtp.yaml",
        "./decode_mtp.yaml",
        "a/b/../../decode_mtp.yaml",
    ] {
        let target = check_resolve(dir.path(), "deepseek-mini", spelled);
        assert_eq!(target.yaml, "decode_mtp.yaml", "{spelled}");
        assert_eq!(target.config_path, plain.config_path, "{spelled}");
    }
    let outside = check_refused(dir.path(), "deepseek-mini", "sub/../../decode_mtp.yaml");
    assert!(
        matches!(outside, TargetError::OutsideConfig { .. }),
        "{outside:?}"
    );
}

/// A run config over the size cap, or one that is a FIFO, is refused at once, naming why (a
/// 100 MB run config took patch 100 s and 1.9 GB; a FIFO blocked the read).
#[test]
fn an_oversized_or_special_run_config_is_refused_at_once() {
    let dir = repo();
    let path = dir.path().join("models/qwen-mini/config/dense.yaml");
    let text = std::fs::read_to_string(&path).expect("config");
    let pad = "p: 0123456789012345678901234567890123456789\n"
        .repeat(usize::try_from(npuprof_repository::SOURCE_CAP).expect("cap") / 40);
    std::fs::write(&path, format!("{text}{pad}")).expect("write");
    let started = std::time::Instant::now();
    let err = check_refused(dir.path(), "qwen-mini", "dense.yaml").to_string();
    assert!(
        err.contains("npuprof reads source and run-config files of at most"),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    std::fs::remove_file(&path).expect("rm");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let err = check_refused(dir.path(), "qwen-mini", "dense.yaml").to_string();
    assert!(err.contains("FIFO"), "{err}");
}
