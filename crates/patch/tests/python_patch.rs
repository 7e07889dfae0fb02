//! Snapshot tests of the `profiler_context.py` refactor on the example and on the variants.

mod common;

use common::{apply_checked, example_python, fixtures, python_parses, read, report};
use npuprof_patch::PatchError;
use npuprof_patch::plan::PhaseSelection;
use npuprof_patch::python::{PythonOptions, patch_profiler_context};

const OPTION_SETS: [(&str, PythonOptions); 4] = [
    (
        "both_active10",
        PythonOptions {
            phases: PhaseSelection::Both,
            decode_active: 10,
            decode_skip_first: None,
        },
    ),
    (
        "decode_active30_skip5",
        PythonOptions {
            phases: PhaseSelection::Decode,
            decode_active: 30,
            decode_skip_first: Some(5),
        },
    ),
    (
        "prefill",
        PythonOptions {
            phases: PhaseSelection::Prefill,
            decode_active: 10,
            decode_skip_first: None,
        },
    ),
    (
        "both_defaults",
        PythonOptions {
            phases: PhaseSelection::Both,
            decode_active: 3,
            decode_skip_first: Some(3),
        },
    ),
];

/// Patches `source`, checks re-parse, idempotence and inverse, and returns the snapshot text.
fn check_python(path: &str, source: &str, options: &PythonOptions) -> String {
    let patch = patch_profiler_context(source, options).unwrap_or_else(|e| panic!("{path}: {e}"));
    let new = apply_checked(source, &patch.edits);
    assert!(python_parses(&new), "{path}: patched file must parse");
    let again = patch_profiler_context(&new, options)
        .unwrap_or_else(|e| panic!("{path} (second run): {e}"));
    assert!(
        again.edits.is_empty(),
        "{path}: patching twice must change nothing, got {:?}",
        again.changes
    );
    report(path, source, &new, &patch.changes)
}

fn check_fixture(name: &str) {
    let source = read(&fixtures().join("python").join(name));
    for (label, options) in &OPTION_SETS {
        let snapshot = check_python(name, &source, options);
        insta::assert_snapshot!(
            format!("{}__{label}", name.trim_end_matches(".py")),
            snapshot
        );
    }
}

#[test]
fn example_repo() {
    let source = example_python();
    for (label, options) in &OPTION_SETS {
        let snapshot = check_python("executor/utils/profiler_context.py", &source, options);
        insta::assert_snapshot!(format!("example__{label}"), snapshot);
    }
}

#[test]
fn crlf() {
    check_fixture("crlf.py");
}

#[test]
fn tabs() {
    check_fixture("tabs.py");
}

#[test]
fn keyword_only_annotated() {
    check_fixture("keyword_only.py");
}

#[test]
fn multiline_defaults_and_comments() {
    check_fixture("multiline_defaults.py");
}

#[test]
fn prefill_call_incomplete() {
    check_fixture("prefill_incomplete.py");
}

#[test]
fn decode_call_passes_window() {
    check_fixture("decode_call_window.py");
}

#[test]
fn no_fake_context_manager_is_fine_with_both_phases() {
    let source = read(&fixtures().join("python/no_fake.py"));
    let snapshot = check_python("no_fake.py", &source, &OPTION_SETS[0].1);
    insta::assert_snapshot!(snapshot);
}

/// The already-patched state (decode only, window 30/5) patched again with other options:
/// edits are relative to the current text.
#[test]
fn already_patched() {
    let source = read(&fixtures().join("python/already_patched.py"));
    for (label, options) in &OPTION_SETS {
        let snapshot = check_python("already_patched.py", &source, options);
        insta::assert_snapshot!(format!("already_patched__{label}"), snapshot);
    }
}

fn refusal(name: &str, options: &PythonOptions) -> String {
    let source = read(&fixtures().join("python").join(name));
    match patch_profiler_context(&source, options) {
        Ok(patch) => panic!("{name}: expected a refusal, got {:?}", patch.changes),
        Err(e) => e.to_string(),
    }
}

#[test]
fn refuses_missing_functions() {
    let message = refusal("not_found.py", &OPTION_SETS[0].1);
    insta::assert_snapshot!(message);
}

#[test]
fn refuses_syntax_errors() {
    let source = read(&fixtures().join("python/syntax_error.py"));
    let err = patch_profiler_context(&source, &OPTION_SETS[0].1).expect_err("syntax error");
    assert!(
        matches!(
            err,
            PatchError::Syntax {
                language: "Python",
                ..
            }
        ),
        "{err}"
    );
    insta::assert_snapshot!(err.to_string());
}

#[test]
fn refuses_phase_off_without_fake_context_manager() {
    let message = refusal("no_fake.py", &OPTION_SETS[1].1);
    insta::assert_snapshot!(message);
}
