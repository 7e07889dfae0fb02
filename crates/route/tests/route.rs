//! `scan` on the bundled examples and on fixture variants (on disk in `tests/fixtures/`, or
//! built in a temporary directory when they need CRLF, symlinks, bad bytes or large files).
//!
//! Paths are relative to the crate (cargo runs integration tests from the package root), so
//! reports and snapshots carry no machine-specific path.

use std::fs;
use std::path::{Path, PathBuf};

use npuprof_route::{Route, RouteError, RouteReport, scan};

const RECIPES_MINI: &str = "../../examples/recipes-mini";
const PLAIN_INFER: &str = "../../examples/plain-infer";

fn fixture(name: &str) -> PathBuf {
    Path::new("tests/fixtures").join(name)
}

fn json(report: &RouteReport) -> String {
    serde_json::to_string_pretty(report).expect("the report serializes")
}

/// Scans `root`, checks the route, and snapshots the JSON report under `name`.
fn check_route(name: &str, root: &Path, expected: Route) -> RouteReport {
    let report = scan(root).unwrap_or_else(|err| panic!("scan {}: {err}", root.display()));
    assert_eq!(report.route, expected, "{name}: {}", json(&report));
    insta::assert_snapshot!(name, json(&report));
    report
}

/// Scans a repository in a temporary directory; the temp path is replaced by `[TMP]`.
fn check_tmp_route(name: &str, root: &Path, expected: Route) -> RouteReport {
    let tmp = root.display().to_string();
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&regex_escape(&tmp), "[TMP]");
    settings.bind(|| check_route(name, root, expected))
}

fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Copies a directory tree, passing every file's bytes through `transform`.
fn copy_tree(from: &Path, to: &Path, transform: &dyn Fn(&Path, Vec<u8>) -> Vec<u8>) {
    fs::create_dir_all(to).expect("create dir");
    for entry in fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target, transform);
        } else {
            let bytes = fs::read(entry.path()).expect("read file");
            fs::write(&target, transform(&entry.path(), bytes)).expect("write file");
        }
    }
}

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("create dir");
    fs::write(path, bytes).expect("write");
}

fn kinds_at<'a>(report: &'a RouteReport, path: &str) -> Vec<(usize, &'a str)> {
    report
        .evidence
        .iter()
        .filter(|e| e.path == path)
        .map(|e| (e.line, e.kind.as_str()))
        .collect()
}

/// The report without the fields that name the root, for comparing two copies of a repo.
fn comparable(report: &RouteReport) -> serde_json::Value {
    let mut value = serde_json::to_value(report).expect("to value");
    let object = value.as_object_mut().expect("object");
    object.remove("root");
    object.remove("next");
    value
}

#[test]
fn recipes_mini_is_framework_with_live_chain_dead_path_and_configs() {
    let report = check_route("recipes_mini", Path::new(RECIPES_MINI), Route::Framework);
    assert_eq!(report.path, "A");
    let wrapper = report.wrapper.as_ref().expect("wrapper found");
    assert_eq!(wrapper.path, "executor/utils/profiler_context.py");
    assert_eq!(wrapper.class, "ProfilerManager");
    assert_eq!(wrapper.factory.as_deref(), Some("create_profiler"));

    // Two set_status/step pairs in the engine, in that order.
    let engine = "executor/core/engine/execution_engine.py";
    let live: Vec<&str> = report
        .evidence
        .iter()
        .filter(|e| e.path == engine && e.kind.as_str() == "live_site")
        .map(|e| e.text.as_str())
        .collect();
    assert_eq!(
        live,
        [
            "self.profiler.set_status(batch.is_prefill)",
            "self.profiler.step()",
            "self.profiler.set_status(batch.is_prefill)",
            "self.profiler.step()"
        ]
    );
    assert!(report.call_chain.iter().any(|l| {
        l.from.path == engine
            && l.call == "self.profiler.set_status"
            && l.to
                .as_ref()
                .is_some_and(|t| t.function == "ProfilerManager.set_status")
    }));
    assert!(
        report
            .call_chain
            .iter()
            .any(|l| l.from.function == "create_profiler"
                && l.call == "torch_npu.profiler.profile"
                && l.to.is_none())
    );

    let dead: Vec<(&str, &str)> = report
        .dead_paths
        .iter()
        .map(|d| (d.path.as_str(), d.function.as_str()))
        .collect();
    // The legacy runner's factory is live: family-B models call it from their own loops.
    assert!(dead.is_empty(), "{dead:?}");

    let configs: Vec<&str> = report.configs.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        configs,
        [
            "models/deepseek-mini/config/afd.yaml",
            "models/deepseek-mini/config/decode_mtp.yaml",
            "models/deepseek-mini/config/deepseek-mini_pd/decode.yaml",
            "models/deepseek-mini/config/deepseek-mini_pd/prefill.yaml",
            "models/deepseek-mini/config/ep4.yaml",
            "models/deepseek-mini/config/prefill_only.yaml",
            "models/glm_5_2/config/ci_950/glm_mini_rank_1.yaml",
            "models/glm_5_2/config/ci_a3/glm_mini_rank_1.yaml",
            "models/glm_5_2/config/glm_mini_rank_2.yaml",
            "models/hunyuan-mini/config/single.yaml",
            "models/kimi_k3/config/kimi_mini_rank_1.yaml",
            "models/pangu_7b/config/pangu_mini_7b.yaml",
            "models/qwen-mini/config/dense.yaml",
            "models/qwen-mini/config/long_decode.yaml",
            "models/wan-mini/config/t2v.yaml",
        ]
    );
    let by_path = |p: &str| {
        report
            .configs
            .iter()
            .find(|c| c.path.ends_with(p))
            .expect("config")
    };
    // Offline: decode forwards = max_new_tokens whatever next_n; the base runner's loop: N − 1.
    let mtp = by_path("decode_mtp.yaml")
        .decode_forwards
        .expect("forwards");
    assert_eq!((mtp.min, mtp.max), (32, 32));
    let pangu = by_path("pangu_mini_7b.yaml")
        .decode_forwards
        .expect("forwards");
    assert_eq!((pangu.min, pangu.max), (23, 23));
    let pd_decode = by_path("deepseek-mini_pd/decode.yaml");
    assert!(!pd_decode.profilable.prefill && !pd_decode.profilable.decode);
    let t2v = by_path("t2v.yaml");
    assert_eq!(
        (
            t2v.enable_profiler,
            t2v.profilable.prefill,
            t2v.profilable.decode
        ),
        (None, false, false)
    );
    let prefill_only = by_path("prefill_only.yaml");
    assert!(prefill_only.profilable.prefill && !prefill_only.profilable.decode);
    assert_eq!(
        report.next.command.as_deref(),
        Some("npuprof route --repo ../../examples/recipes-mini --model <MODEL>")
    );
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

#[test]
fn plain_infer_is_inject() {
    let report = check_route("plain_infer", Path::new(PLAIN_INFER), Route::Inject);
    assert_eq!(report.path, "B");
    assert!(report.evidence.is_empty());
    assert_eq!(
        report.entry_candidates.first().map(String::as_str),
        Some("infer.py")
    );
}

#[test]
fn crlf_line_endings_give_the_same_report() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("recipes-crlf");
    copy_tree(Path::new(RECIPES_MINI), &root, &|_, bytes| {
        String::from_utf8(bytes)
            .expect("utf-8 example")
            .replace('\n', "\r\n")
            .into_bytes()
    });
    let original = scan(Path::new(RECIPES_MINI)).expect("scan original");
    let crlf = scan(&root).expect("scan crlf");
    assert_eq!(comparable(&crlf), comparable(&original));
}

#[test]
fn tab_indentation_gives_the_same_report() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("recipes-tabs");
    copy_tree(Path::new(RECIPES_MINI), &root, &|path, bytes| {
        if path.extension().is_none_or(|e| e != "py") {
            return bytes;
        }
        let text = String::from_utf8(bytes).expect("utf-8 example");
        let mut out = String::new();
        for line in text.split_inclusive('\n') {
            let body = line.trim_start_matches(' ');
            let indent = line.len() - body.len();
            out.push_str(&"\t".repeat(indent / 4));
            out.push_str(&" ".repeat(indent % 4));
            out.push_str(body);
        }
        out.into_bytes()
    });
    let engine = fs::read_to_string(root.join("executor/core/engine/execution_engine.py"))
        .expect("read engine copy");
    assert!(
        engine.contains("\n\t\tself.profiler.set_status"),
        "the copy is tab-indented"
    );
    let original = scan(Path::new(RECIPES_MINI)).expect("scan original");
    let tabs = scan(&root).expect("scan tabs");
    assert_eq!(comparable(&tabs), comparable(&original));
}

#[test]
fn words_in_comments_and_strings_do_not_count() {
    let report = check_route("comment_only", &fixture("comment-only"), Route::Inject);
    assert!(report.evidence.is_empty(), "{:?}", report.evidence);
    assert!(report.mechanisms.is_empty());
    assert!(report.dead_paths.is_empty());
}

#[test]
fn vllm_env_var_is_framework_other() {
    let report = check_route("vllm_env", &fixture("vllm-env"), Route::FrameworkOther);
    assert_eq!(report.mechanisms.len(), 1);
    assert_eq!(report.mechanisms[0].id.as_str(), "vllm-torch-profiler");
    assert!(report.mechanisms[0].knobs[0].starts_with("VLLM_TORCH_PROFILER_DIR="));
    assert_eq!(
        kinds_at(&report, "scripts/launch.sh"),
        [(3, "env_var")],
        "the comment line 2 does not count"
    );
}

#[test]
fn vllm_import_alone_is_framework_other() {
    let report = check_route(
        "vllm_import",
        &fixture("vllm-import"),
        Route::FrameworkOther,
    );
    assert_eq!(kinds_at(&report, "offline.py"), [(2, "framework_import")]);
    // Which switch the version reads is not known from an import: collect, which reads the
    // installed version, is named, never one variable it may not read.
    assert_eq!(
        report.next.command.as_deref(),
        Some("npuprof collect --engine vllm-ascend -- vllm serve MODEL")
    );
    assert!(
        report.next.note.contains("npuprof route"),
        "{}",
        report.next.note
    );
}

#[test]
fn sglang_env_var_is_framework_other() {
    let report = check_route("sglang_env", &fixture("sglang-env"), Route::FrameworkOther);
    let ids: Vec<&str> = report.mechanisms.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(
        ids,
        ["sglang-torch-profiler"],
        "the VLLM variable is only in a comment"
    );
    assert_eq!(
        report.next.command.as_deref(),
        Some(
            "npuprof collect --engine sglang -- python -m sglang.launch_server --model-path MODEL"
        )
    );
    // The knobs come from the definition: the JSON body's fields.
    assert!(
        report.mechanisms[0]
            .knobs
            .iter()
            .any(|k| k.contains("\"output_dir\"")),
        "{:?}",
        report.mechanisms[0].knobs
    );
}

#[test]
fn profile_stepped_in_a_loop_is_framework_other() {
    let report = check_route(
        "profile_loop",
        &fixture("profile-loop"),
        Route::FrameworkOther,
    );
    assert_eq!(report.mechanisms[0].id.as_str(), "torch-npu-profile-loop");
    assert!(kinds_at(&report, "bench.py").contains(&(18, "loop_step")));
}

#[test]
fn dynamic_profile_is_framework_other() {
    let report = check_route("dynamic", &fixture("dynamic"), Route::FrameworkOther);
    assert_eq!(
        report.mechanisms[0].id.as_str(),
        "torch-npu-dynamic-profile"
    );
}

#[test]
fn mindspeed_profile_flag_is_framework_other() {
    let report = check_route("mindspeed", &fixture("mindspeed"), Route::FrameworkOther);
    assert_eq!(report.mechanisms[0].id.as_str(), "mindspeed-profile");
    assert_eq!(kinds_at(&report, "arguments.py").len(), 5);
}

#[test]
fn scattered_api_use_is_inject_with_evidence() {
    let report = check_route("scattered", &fixture("scattered"), Route::Inject);
    let kinds: Vec<&str> = report.evidence.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "profile_call",
            "trace_handler",
            "profiler_import",
            "profiler_api"
        ]
    );
    assert_eq!(report.entry_candidates, ["infer.py"]);
}

#[test]
fn callers_outside_the_prefilter_are_found() {
    // main.py mentions no profiler word; it calls make_trace and steps it in a loop.
    let report = check_route(
        "hidden_caller",
        &fixture("hidden-caller"),
        Route::FrameworkOther,
    );
    assert!(kinds_at(&report, "main.py").contains(&(9, "loop_step")));
    let dead: Vec<&str> = report
        .dead_paths
        .iter()
        .map(|d| d.function.as_str())
        .collect();
    assert_eq!(dead, ["unused_trace"]);
    assert_eq!(report.stats.python_parsed, 2);
}

#[test]
fn loops_in_blocks_left_out_of_the_parse_are_found() {
    // main.py passes the prefilter (module-level `OUT = "./profile_out"`), but `run` has no
    // profiler word, so it is first left out of the parse; it calls the factory make_trace.
    let report = check_route(
        "skipped_block",
        &fixture("skipped-block"),
        Route::FrameworkOther,
    );
    assert!(kinds_at(&report, "main.py").contains(&(15, "loop_step")));
    assert!(report.dead_paths.is_empty());
}

#[test]
fn broken_yaml_is_a_warning_and_other_configs_are_read() {
    let report = check_route("broken_yaml", &fixture("broken-yaml"), Route::Inject);
    let paths: Vec<&str> = report.configs.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "models/llm/config/broken.yaml",
            "models/llm/config/good.yaml",
            "other.yaml"
        ]
    );
    assert!(report.configs[0].error.is_some());
    assert_eq!(report.warnings.len(), 1);
    assert_eq!(report.warnings[0].path, "models/llm/config/broken.yaml");
    let other = &report.configs[2];
    assert_eq!((other.next_n, other.max_new_tokens), (Some(2), Some(7)));
}

#[test]
fn unwired_wrapper_is_not_framework() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("unwired");
    copy_tree(Path::new(RECIPES_MINI), &root, &|_, bytes| bytes);
    fs::remove_file(root.join("executor/core/engine/execution_engine.py")).expect("remove engine");
    let report = scan(&root).expect("scan");
    assert_ne!(report.route, Route::Framework);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.message.contains("never called")),
        "{:?}",
        report.warnings
    );
}

#[test]
fn nested_repository_gets_its_own_repo_in_the_next_command() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("mono");
    copy_tree(
        Path::new(RECIPES_MINI),
        &root.join("team/recipes"),
        &|_, bytes| bytes,
    );
    let report = scan(&root).expect("scan");
    assert_eq!(report.route, Route::Framework);
    assert_eq!(report.configs.len(), 15);
    assert_eq!(report.configs[0].model.as_deref(), Some("deepseek-mini"));
    // Several models: the next step names the nested repository, and no model of it (which
    // model to profile is the user's choice).
    let expected = format!(
        "npuprof route --repo {}/team/recipes --model <MODEL>",
        root.display()
    );
    assert_eq!(report.next.command.as_deref(), Some(expected.as_str()));
    // One model with one config that records decode: the patch of that config.
    let single = tmp.path().join("single");
    copy_tree(Path::new(RECIPES_MINI), &single, &|_, bytes| bytes);
    for entry in fs::read_dir(single.join("models")).expect("models") {
        let entry = entry.expect("entry");
        if entry.file_name() != "qwen-mini" {
            fs::remove_dir_all(entry.path()).expect("rm");
        }
    }
    fs::remove_file(single.join("models/qwen-mini/config/long_decode.yaml")).expect("rm");
    let report = scan(&single).expect("scan");
    let expected = format!(
        "npuprof patch --repo {} --model qwen-mini --yaml dense.yaml --dry-run",
        single.display()
    );
    assert_eq!(report.next.command.as_deref(), Some(expected.as_str()));
}

#[test]
fn symlink_loop_is_a_warning() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("loop");
    copy_tree(&fixture("profile-loop"), &root, &|_, bytes| bytes);
    fs::create_dir_all(root.join("sub")).expect("mkdir");
    std::os::unix::fs::symlink("..", root.join("sub/back")).expect("symlink");
    let report = check_tmp_route("symlink_loop", &root, Route::FrameworkOther);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.path == "sub/back" && w.message.contains("symlink loop"))
    );
}

#[test]
fn non_utf8_large_and_binary_files_are_skipped_with_a_reason() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("bad-files");
    copy_tree(&fixture("profile-loop"), &root, &|_, bytes| bytes);
    write(
        &root,
        "latin1.py",
        b"import torch_npu\n# caf\xe9\nprof = torch_npu.profiler.profile()\n",
    );
    write(&root, "blob.py", b"torch_npu\0\x01\x02");
    let mut big = b"import torch_npu\n".to_vec();
    big.resize(4 * 1024 * 1024 + 1, b'#');
    write(&root, "big.py", &big);
    let report = check_tmp_route("bad_files", &root, Route::FrameworkOther);
    assert_eq!(report.warnings.len(), 1);
    assert_eq!(report.warnings[0].path, "latin1.py");
    let skipped: Vec<&str> = report.skipped.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(skipped, ["big.py", "blob.py"]);
}

#[test]
fn ignored_and_virtualenv_directories_are_not_scanned() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("ignored");
    let looped = fs::read(fixture("profile-loop/bench.py")).expect("fixture");
    write(
        &root,
        "infer.py",
        b"if __name__ == \"__main__\":\n    print('hi')\n",
    );
    write(&root, ".gitignore", b"build/\n");
    write(&root, "build/bench.py", &looped);
    write(&root, "env/pyvenv.cfg", b"home = /usr/bin\n");
    write(&root, "env/lib/bench.py", &looped);
    write(&root, "vendor/site-packages/bench.py", &looped);
    write(&root, "node_modules/bench.py", &looped);
    let report = scan(&root).expect("scan");
    assert_eq!(report.route, Route::Inject, "{}", json(&report));
    assert_eq!(report.stats.python_files, 1);
}

#[test]
fn missing_path_and_file_are_errors() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("nope");
    assert!(matches!(scan(&missing), Err(RouteError::NotFound(_))));
    let file = tmp.path().join("file.py");
    fs::write(&file, "x = 1\n").expect("write");
    let err = scan(&file).expect_err("a file is not a repository");
    assert!(matches!(err, RouteError::NotADirectory(_)));
    assert!(
        err.to_string()
            .ends_with("file.py: not a directory (route scans a repository directory)")
    );
}

/// route reads a run config as plan and patch do: a BOM is skipped and merge keys apply.
#[test]
fn run_configs_are_read_with_bom_and_merge_keys_like_the_target() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    let yaml = "\u{feff}defaults: &defaults\n  max_new_tokens: 48\n  batch_size: 2\nmodel_config:\n  enable_profiler: False\n  next_n: 1\nscheduler_config:\n  <<: *defaults\n";
    write(root, "models/m/config/run.yaml", yaml.as_bytes());
    let report = scan(root).expect("scan");
    let [config] = report.configs.as_slice() else {
        panic!("one config: {:?}", report.configs);
    };
    assert_eq!(config.error, None);
    assert_eq!(
        (config.max_new_tokens, config.next_n, config.enable_profiler),
        (Some(48), Some(1), Some(false))
    );
}
