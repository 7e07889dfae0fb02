//! The patched `profiler_context.py` still runs: python3 imports it with a stub `torch_npu`,
//! drives `set_status(True)`, `step()`, then N × (`set_status(False)`, `step()`) for each phase
//! option, and the test checks which profilers were created with which schedule.

mod common;

use std::process::Command;

use common::{apply_checked, example_python, fixtures, read};
use npuprof_patch::plan::PhaseSelection;
use npuprof_patch::python::{PythonOptions, patch_profiler_context};
use serde_json::{Value, json};

/// Patches the example with `options`, runs it under python3, and returns the events.
fn check_execution(options: &PythonOptions, decode_forwards: u32) -> Value {
    run_patched(&example_python(), options, decode_forwards)
}

/// Patches `source` with `options`, runs it under python3, and returns the events.
fn run_patched(source: &str, options: &PythonOptions, decode_forwards: u32) -> Value {
    let patch = patch_profiler_context(source, options).expect("patch");
    let patched = apply_checked(source, &patch.edits);
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("profiler_context.py"), patched).expect("write");
    let output = Command::new("python3")
        .arg(fixtures().join("drive_profiler.py"))
        .arg(dir.path())
        .arg(decode_forwards.to_string())
        .arg(dir.path().join("res"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "the patched module failed under python3:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("driver prints JSON")
}

fn creations(run: &Value) -> Vec<Value> {
    run["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["event"] == "create")
        .map(|e| json!({"path": e["path"], "schedule": e["schedule"]}))
        .collect()
}

fn count(run: &Value, profiler: u64, event: &str) -> usize {
    run["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["profiler"] == profiler && e["event"] == event)
        .count()
}

#[test]
fn both_phases() {
    let run = check_execution(
        &PythonOptions {
            phases: PhaseSelection::Both,
            decode_active: 10,
            decode_skip_first: Some(2),
        },
        13,
    );
    assert_eq!(
        creations(&run),
        vec![
            json!({"path": "prof/prefill", "schedule": {"wait": 0, "warmup": 0, "active": 1, "repeat": 1, "skip_first": 0}}),
            json!({"path": "prof/decode", "schedule": {"wait": 0, "warmup": 0, "active": 10, "repeat": 1, "skip_first": 2}}),
        ]
    );
    // Prefill: started, one step, stopped at the first decode. Decode: started, 13 steps, stopped at exit.
    assert_eq!(
        (
            count(&run, 0, "start"),
            count(&run, 0, "step"),
            count(&run, 0, "stop")
        ),
        (1, 1, 1)
    );
    assert_eq!(
        (
            count(&run, 1, "start"),
            count(&run, 1, "step"),
            count(&run, 1, "stop")
        ),
        (1, 13, 1)
    );
    assert_eq!(run["status"], "decode");
}

#[test]
fn decode_only() {
    let run = check_execution(
        &PythonOptions {
            phases: PhaseSelection::Decode,
            decode_active: 30,
            decode_skip_first: None,
        },
        34,
    );
    assert_eq!(
        creations(&run),
        vec![
            json!({"path": "prof/decode", "schedule": {"wait": 0, "warmup": 0, "active": 30, "repeat": 1, "skip_first": 3}})
        ]
    );
    assert_eq!(
        (
            count(&run, 0, "start"),
            count(&run, 0, "step"),
            count(&run, 0, "stop")
        ),
        (1, 34, 1)
    );
    assert_eq!(run["status"], "decode");
}

#[test]
fn prefill_only() {
    let run = check_execution(
        &PythonOptions {
            phases: PhaseSelection::Prefill,
            decode_active: 10,
            decode_skip_first: None,
        },
        5,
    );
    assert_eq!(
        creations(&run),
        vec![
            json!({"path": "prof/prefill", "schedule": {"wait": 0, "warmup": 0, "active": 1, "repeat": 1, "skip_first": 0}})
        ]
    );
    assert_eq!(
        (
            count(&run, 0, "start"),
            count(&run, 0, "step"),
            count(&run, 0, "stop")
        ),
        (1, 1, 1)
    );
    // The state still reaches "decode"; the decode branch holds the no-op profiler.
    assert_eq!(run["status"], "decode");
    assert_eq!(run["final"], "FakeContextManager");
}

/// Every variant fixture, patched for every phase, still runs and creates exactly the profilers
/// of the requested phases with the requested schedules.
#[test]
fn every_variant_runs_for_every_phase() {
    let variants = [
        "crlf.py",
        "tabs.py",
        "keyword_only.py",
        "multiline_defaults.py",
        "prefill_incomplete.py",
        "decode_call_window.py",
        "already_patched.py",
    ];
    let prefill = json!({"path": "prof/prefill", "schedule": {"wait": 0, "warmup": 0, "active": 1, "repeat": 1, "skip_first": 0}});
    let decode = json!({"path": "prof/decode", "schedule": {"wait": 0, "warmup": 0, "active": 7, "repeat": 1, "skip_first": 2}});
    for name in variants {
        let source = read(&fixtures().join("python").join(name));
        for (phases, expected) in [
            (PhaseSelection::Both, vec![prefill.clone(), decode.clone()]),
            (PhaseSelection::Decode, vec![decode.clone()]),
            (PhaseSelection::Prefill, vec![prefill.clone()]),
        ] {
            let options = PythonOptions {
                phases,
                decode_active: 7,
                decode_skip_first: Some(2),
            };
            let run = run_patched(&source, &options, 10);
            assert_eq!(creations(&run), expected, "{name} with {phases:?}");
            assert_eq!(
                run["status"], "decode",
                "{name} with {phases:?}: the state machine must reach decode"
            );
        }
    }
}
