//! The checks can fail: on a miniature wheel that agrees with the facts given (`testdata/`)
//! every check is ok; one change to the wheel (or the facts) at a time makes its check drift.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::builds::Build;
use super::facts::schedule_case;
use super::{BuildResult, check};

const MINI: Build = Build {
    version: "mini",
    python: "3",
    platform: "any",
};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fidelity/testdata")
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fidelity/fidelity.py")
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read_dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// A scratch directory for one test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("npuprof-fidelity-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("mkdir");
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The facts the miniature wheel agrees with; `tree` is the path-rule case tree.
fn facts(tree: &Path) -> Value {
    let schedule: Vec<_> = [(1, 1, 2, 2, 0, 0), (0, 0, 1, 1, 3, 0), (2, 0, 1, 1, 1, 1)]
        .into_iter()
        .map(|(w, wu, a, r, s, sfw)| schedule_case(w, wu, a, r, s, sfw))
        .collect();
    let run = "prof/decode/host_0_ascend_pt";
    fs::create_dir_all(tree.join(run).join("FRAMEWORK")).expect("mkdir");
    json!({
        "build": "mini",
        "schedule": schedule,
        "texts": [
            {"text": npuprof_schedule::STOP_IN_WARMUP, "owner": "schedule", "builds": ["mini"]},
            {"text": "printed by no build", "owner": "verify", "builds": null},
        ],
        "levels": {"Level_none": ["trace_view.json"], "Level0": ["trace_view.json", "kernel_details.csv"]},
        "paths": {
            "root": tree,
            "cases": [
                {"path": run, "parses": [run]},
                {"path": "prof/decode", "parses": [run]},
                {"path": "prof", "parses": []},
            ],
            "suggested": [{"path": tree.join("prof/decode"), "code": "parser-failed"}],
        },
        "api": {
            "fake_root": testdata().join("mini_fake"),
            "trace_handler_alternatives": npuprof_lint::torch_npu::TRACE_HANDLER_ALTERNATIVES,
        },
        "aicore_none": {"promoting_builds": ["mini"]},
    })
}

/// Runs the checks on the miniature wheel after `edit` (file, from, to) and facts `change`.
fn run(
    name: &str,
    edit: Option<(&str, &str, &str)>,
    change: impl FnOnce(&mut Value),
) -> BuildResult {
    let scratch = Scratch::new(name);
    let wheel = scratch.0.join("wheel");
    copy_dir(&testdata().join("mini_wheel"), &wheel);
    if let Some((file, from, to)) = edit {
        let path = wheel.join("torch_npu/profiler").join(file);
        let text = fs::read_to_string(&path).expect("read");
        assert!(text.contains(from), "{file} holds {from:?}");
        fs::write(&path, text.replacen(from, to, 1)).expect("write");
    }
    let mut facts = facts(&scratch.0.join("tree"));
    change(&mut facts);
    let facts_path = scratch.0.join("facts.json");
    fs::write(&facts_path, facts.to_string()).expect("write facts");
    check(&script(), &wheel, &facts_path, &MINI).expect("the checks run")
}

fn status<'a>(result: &'a BuildResult, name: &str) -> (&'a str, &'a str) {
    let c = result
        .checks
        .iter()
        .find(|c| c.check == name)
        .expect("every check reports");
    (c.status.as_str(), c.reason.as_str())
}

#[test]
fn every_check_is_ok_on_a_wheel_that_agrees() {
    let result = run("agrees", None, |_| {});
    for c in &result.checks {
        assert_eq!(c.status, "ok", "{}: {}", c.check, c.reason);
    }
    let (_, texts) = status(&result, "texts");
    assert!(texts.contains("lacks 'printed by no build'"), "{texts}");
}

#[test]
fn schedule_drifts_when_the_scheduler_differs() {
    let result = run(
        "schedule",
        Some((
            "scheduler.py",
            "step // cycle >= self.repeat",
            "step // cycle > self.repeat",
        )),
        |_| {},
    );
    let (s, reason) = status(&result, "schedule");
    assert_eq!(s, "drift", "{reason}");
    assert!(
        reason.contains("torch_npu WARMUP, npuprof NONE"),
        "{reason}"
    );
}

#[test]
fn texts_drift_when_a_claimed_text_is_absent() {
    let result = run(
        "texts",
        Some((
            "messages.py",
            "Stop profiler while current state is WARMUP",
            "gone",
        )),
        |_| {},
    );
    let (s, reason) = status(&result, "texts");
    assert_eq!(s, "drift", "{reason}");
}

#[test]
fn levels_drift_when_no_parser_writes_an_expected_file() {
    let result = run(
        "levels",
        Some((
            "analysis/prof_config/_parser_config.py",
            "[TraceViewParser, KernelViewParser]",
            "[TraceViewParser]",
        )),
        |_| {},
    );
    let (s, reason) = status(&result, "levels");
    assert_eq!(s, "drift", "{reason}");
    assert!(
        reason.starts_with("Level0: npuprof expects kernel_details.csv"),
        "{reason}"
    );
}

#[test]
fn paths_drift_on_a_different_rule_and_on_a_suggestion_that_parses_nothing() {
    let result = run(
        "paths-rule",
        Some((
            "analysis/prof_common_func/_path_manager.py",
            "return [input_path]",
            "return []",
        )),
        |_| {},
    );
    let (s, reason) = status(&result, "paths");
    assert_eq!(s, "drift", "{reason}");
    let result = run("paths-suggested", None, |f| {
        let prof = f["paths"]["root"].as_str().expect("root").to_owned() + "/prof";
        f["paths"]["suggested"] = json!([{"path": prof, "code": "parser-failed"}]);
    });
    let (s, reason) = status(&result, "paths");
    assert_eq!(s, "drift", "{reason}");
    assert!(
        reason.contains("verify suggests analyse('prof') (parser-failed), which parses nothing"),
        "{reason}"
    );
}

#[test]
fn api_drifts_when_a_signature_differs() {
    let result = run(
        "api",
        Some(("profiler.py", "self, *, activities", "self, activities")),
        |_| {},
    );
    let (s, reason) = status(&result, "api");
    assert_eq!(s, "drift", "{reason}");
    assert!(
        reason.contains(
            "'activities' is positional-or-keyword in torch_npu, keyword-only in the fake"
        ),
        "{reason}"
    );
}

#[test]
fn api_drifts_when_lint_relies_on_a_method_profile_lacks() {
    let result = run("api-method", None, |f| {
        f["api"]["trace_handler_alternatives"] = json!(["key_averages"]);
    });
    let (s, reason) = status(&result, "api");
    assert_eq!(s, "drift", "{reason}");
    assert!(reason.contains("profile.key_averages()"), "{reason}");
}

#[test]
fn aicore_none_drifts_when_lint_is_wrong_about_the_build() {
    let result = run("aicore", None, |f| {
        f["aicore_none"]["promoting_builds"] = json!([])
    });
    let (s, reason) = status(&result, "aicore-none");
    assert_eq!(s, "drift", "{reason}");
}

#[test]
fn a_check_that_cannot_run_is_an_error_and_the_others_still_run() {
    let result = run(
        "error",
        Some(("scheduler.py", "class Schedule:", "class Schedule(:")),
        |_| {},
    );
    let (s, reason) = status(&result, "schedule");
    assert_eq!(s, "error", "{reason}");
    assert!(reason.starts_with("SyntaxError"), "{reason}");
    assert_eq!(status(&result, "levels").0, "ok");
    assert_eq!(super::worst(&[result], &[]), "error");
}

#[test]
fn the_worst_cell_decides_the_exit() {
    let ok = run("worst", None, |_| {});
    assert_eq!(super::worst(std::slice::from_ref(&ok), &[]), "ok");
    assert_eq!(
        super::worst(
            std::slice::from_ref(&ok),
            &["a text no build prints".to_owned()]
        ),
        "drift"
    );
    let drift = run("worst-drift", None, |f| {
        f["aicore_none"]["promoting_builds"] = json!([])
    });
    assert_eq!(super::worst(&[ok, drift], &[]), "drift");
}
