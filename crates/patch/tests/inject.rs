//! `inject`: entry analysis and harness rendering, on examples/plain-infer and on fixtures;
//! the rendered harness runs under python3 with a stub torch_npu and steps exactly its budget.

use std::path::{Path, PathBuf};
use std::process::Command;

use npuprof_patch::inject::{Harness, HarnessOptions, HarnessPhases, InjectError, render_harness};

const PHASES: [(HarnessPhases, &str); 4] = [
    (HarnessPhases::Decode, "decode"),
    (HarnessPhases::Prefill, "prefill"),
    (HarnessPhases::Both, "both"),
    (HarnessPhases::Separate, "separate"),
];

fn manifest_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn read(rel: &str) -> String {
    let path = manifest_path(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Renders the harness for an entry file (named like the CLI names it), 4 decode steps.
fn check_harness(entry_rel: &str, phase: HarnessPhases) -> Harness {
    let source = read(entry_rel);
    let name = entry_rel.rsplit('/').next().unwrap_or(entry_rel);
    let harness_name = format!("{}_profiled.py", name.trim_end_matches(".py"));
    let options = HarnessOptions {
        phase,
        decode_steps: 4,
        entry_rel: name,
        entry_display: name,
        harness_display: &harness_name,
        structure: false,
    };
    render_harness(&source, &options).expect("renders")
}

fn wiring_summary(h: &Harness) -> String {
    h.wiring
        .iter()
        .map(|w| {
            format!(
                "{}: {} (line {:?}) {}\n",
                w.function,
                if w.wired { "wired" } else { "STUB" },
                w.entry_line,
                w.detail
            )
        })
        .collect()
}

fn parses_cleanly(text: &str) -> bool {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("grammar");
    parser
        .parse(text, None)
        .is_some_and(|t| !t.root_node().has_error())
}

#[test]
fn plain_infer_is_fully_wired_in_every_mode() {
    for (phase, name) in PHASES {
        let h = check_harness("../../examples/plain-infer/infer.py", phase);
        assert!(
            h.wiring.iter().all(|w| w.wired),
            "{name}: {}",
            wiring_summary(&h)
        );
        assert!(parses_cleanly(&h.text), "{name}");
        assert!(!h.text.contains("NotImplementedError"), "{name}");
        insta::assert_snapshot!(format!("plain_infer_{name}"), h.text);
    }
    insta::assert_snapshot!(wiring_summary(&check_harness(
        "../../examples/plain-infer/infer.py",
        HarnessPhases::Decode
    )));
}

#[test]
fn function_style_entry_is_wired_through_its_functions() {
    let h = check_harness(
        "tests/inject_fixtures/function_style.py",
        HarnessPhases::Decode,
    );
    assert!(h.wiring.iter().all(|w| w.wired), "{}", wiring_summary(&h));
    insta::assert_snapshot!(wiring_summary(&h));
}

#[test]
fn module_names_bound_by_unpacking_are_entry_globals() {
    let h = check_harness(
        "tests/inject_fixtures/unpacked_globals.py",
        HarnessPhases::Decode,
    );
    assert!(h.wiring.iter().all(|w| w.wired), "{}", wiring_summary(&h));
    assert!(
        h.text.contains("[entry.PROMPT[0], entry.EXTRA]"),
        "{}",
        h.text
    );
}

#[test]
fn unrecognised_pieces_become_marked_stubs() {
    let h = check_harness(
        "tests/inject_fixtures/unrecognised.py",
        HarnessPhases::Decode,
    );
    assert!(h.wiring.iter().all(|w| !w.wired), "{}", wiring_summary(&h));
    assert_eq!(
        h.text
            .matches("raise NotImplementedError(\"npuprof: fill in ")
            .count(),
        4
    );
    assert!(parses_cleanly(&h.text));
    insta::assert_snapshot!(wiring_summary(&h));
}

#[test]
fn an_entry_with_top_level_code_is_not_imported() {
    let h = check_harness(
        "tests/inject_fixtures/toplevel_code.py",
        HarnessPhases::Decode,
    );
    assert!(
        !h.text.contains("_load_entry"),
        "importing would run the entry's inference"
    );
    assert!(h.wiring.iter().all(|w| !w.wired), "{}", wiring_summary(&h));
    insta::assert_snapshot!(wiring_summary(&h));
}

#[test]
fn an_entry_with_a_syntax_error_is_refused() {
    let options = HarnessOptions {
        phase: HarnessPhases::Decode,
        decode_steps: 4,
        entry_rel: "x.py",
        entry_display: "x.py",
        harness_display: "x_profiled.py",
        structure: false,
    };
    let err = render_harness("def f(:\n    pass\n", &options).expect_err("syntax error");
    assert!(
        matches!(err, InjectError::EntrySyntax { line: 1, .. }),
        "{err}"
    );
    let zero = HarnessOptions {
        decode_steps: 0,
        ..options
    };
    assert!(matches!(
        render_harness("x = 1\n", &zero),
        Err(InjectError::NoDecodeSteps)
    ));
}

/// One profiler as the stub torch_npu recorded it.
#[derive(Debug)]
struct Recorded {
    schedule: serde_json::Value,
    steps: u64,
    save_dir: String,
    activities: serde_json::Value,
    experimental: serde_json::Value,
}

/// Copies plain-infer into a temp dir, writes the harness next to infer.py, runs it with the stub.
fn run_harness(h: &Harness) -> (Vec<Recorded>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        manifest_path("../../examples/plain-infer/infer.py"),
        dir.path().join("infer.py"),
    )
    .expect("copy");
    std::fs::write(dir.path().join("infer_profiled.py"), &h.text).expect("write");
    let log = dir.path().join("stub.jsonl");
    let output = Command::new("python3")
        .arg("infer_profiled.py")
        .current_dir(dir.path())
        .env(
            "PYTHONPATH",
            manifest_path("tests/inject_fixtures/stub_torch_npu"),
        )
        .env("NPUPROF_STUB_LOG", &log)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "harness failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let records = std::fs::read_to_string(&log)
        .expect("stub log")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json line");
            Recorded {
                schedule: v["schedule"].clone(),
                steps: v["steps"].as_u64().expect("steps"),
                save_dir: v["save_dir"].as_str().expect("save_dir").to_owned(),
                activities: v["activities"].clone(),
                experimental: v["experimental"].clone(),
            }
        })
        .collect();
    (
        records,
        stdout.replace(&dir.path().display().to_string(), "[TMP]"),
    )
}

#[test]
fn harness_runs_and_steps_exactly_its_budget_in_every_mode() {
    for (phase, name) in PHASES {
        let h = check_harness("../../examples/plain-infer/infer.py", phase);
        let (records, stdout) = run_harness(&h);
        assert_eq!(
            records.len(),
            h.windows.len(),
            "{name}: one profiler per window"
        );
        for (record, window) in records.iter().zip(&h.windows) {
            let expected_schedule = serde_json::json!({"wait": 0, "warmup": 0, "active": window.active, "repeat": 1, "skip_first": 0});
            assert_eq!(record.schedule, expected_schedule, "{name}");
            // active (+1 prefill for both, already in `active`) + the closing step.
            assert_eq!(
                record.steps,
                u64::from(window.active) + 1,
                "{name}/{}",
                window.name
            );
            assert_eq!(record.steps, u64::from(window.step_calls));
            assert!(
                record
                    .save_dir
                    .ends_with(&format!("npuprof_prof/{}", window.save_subdir)),
                "{}",
                record.save_dir
            );
            assert_eq!(record.activities, serde_json::json!(["NPU", "CPU"]));
            assert_eq!(
                record.experimental,
                serde_json::json!({"profiler_level": "Level1", "aic_metrics": "PipeUtilization"})
            );
        }
        let expected_active: Vec<u32> = match phase {
            HarnessPhases::Decode => vec![4],
            HarnessPhases::Prefill => vec![1],
            HarnessPhases::Both => vec![5],
            HarnessPhases::Separate => vec![1, 4],
        };
        assert_eq!(
            h.windows.iter().map(|w| w.active).collect::<Vec<_>>(),
            expected_active,
            "{name}"
        );
        insta::assert_snapshot!(format!("run_{name}"), stdout);
    }
}

#[test]
fn decode_steps_past_the_step_counter_are_an_error_not_a_wrapped_count() {
    let source = read("../../examples/plain-infer/infer.py");
    let options = |decode_steps| HarnessOptions {
        phase: HarnessPhases::Both,
        decode_steps,
        entry_rel: "infer.py",
        entry_display: "infer.py",
        harness_display: "infer_profiled.py",
        structure: false,
    };
    let err = render_harness(&source, &options(u32::MAX)).expect_err("overflow");
    assert!(matches!(err, InjectError::TooManyDecodeSteps), "{err}");
    assert!(err.to_string().contains("at most 4294967293"), "{err}");
    let most = npuprof_patch::inject::MAX_DECODE_STEPS;
    let harness = render_harness(&source, &options(most)).expect("renders");
    assert_eq!(harness.windows[0].step_calls, u32::MAX);
}

/// The string literal `path = os.path.normpath(os.path.join(HERE, "<rel>"))` of a harness,
/// decoded by python3.
fn imported_path(harness: &str) -> Option<String> {
    let line = harness
        .lines()
        .find(|l| l.trim_start().starts_with("path = os.path.normpath"))?;
    let literal = line.split("HERE, ").nth(1)?.trim_end_matches("))");
    let output = Command::new("python3")
        .args([
            "-c",
            "import ast, sys; sys.stdout.write(ast.literal_eval(sys.argv[1]))",
        ])
        .arg(literal)
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8(output.stdout).unwrap())
}

#[test]
fn hostile_entry_names_stay_inside_their_literals_and_comments() {
    let source = read("../../examples/plain-infer/infer.py");
    for name in [
        r"x\x41.py",
        "a\"b.py",
        "it's.py",
        "a\nPWNED = 1\n.py",
        "a\"\"\"\nPWNED = 1\n\"\"\".py",
        "back\\.py",
        "données.py",
    ] {
        let harness_name = format!("{name}_profiled.py");
        let options = HarnessOptions {
            phase: HarnessPhases::Decode,
            decode_steps: 4,
            entry_rel: name,
            entry_display: name,
            harness_display: &harness_name,
            structure: false,
        };
        let harness = render_harness(&source, &options).expect("renders");
        assert!(
            !harness.text.lines().any(|l| l.starts_with("PWNED")),
            "{name:?}: the name broke out of a comment or docstring:\n{}",
            harness.text
        );
        if let Some(imported) = imported_path(&harness.text) {
            assert_eq!(imported, name, "{name:?}: the harness imports another file");
        }
    }
}
