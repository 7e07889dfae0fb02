//! One fixture per rule that triggers it and one that must not; snapshots of the findings.

use std::path::Path;

use npuprof_lint::{Code, Finding, lint_source};

mod support;
use support::render;

/// Lints `tests/fixtures/<name>` and renders the findings like the CLI does.
fn check_fixture(name: &str) -> (Vec<Finding>, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let source = std::fs::read_to_string(&path).expect("fixture exists");
    let findings = lint_source(name, &source);
    let rendered = render(&findings);
    (findings, rendered)
}

fn codes(findings: &[Finding]) -> Vec<&'static str> {
    findings.iter().map(|f| f.code.as_str()).collect()
}

/// The fixture triggers `code` (and the snapshot records every finding).
fn assert_triggers(name: &str, code: Code) {
    let (findings, rendered) = check_fixture(name);
    assert!(
        findings.iter().any(|f| f.code == code),
        "{name}: expected {}, got {:?}",
        code.as_str(),
        codes(&findings)
    );
    insta::assert_snapshot!(name, rendered);
}

/// The fixture does not trigger `code` (the snapshot records what else it finds).
fn assert_clean_of(name: &str, code: Code) {
    let (findings, rendered) = check_fixture(name);
    assert!(
        findings.iter().all(|f| f.code != code),
        "{name}: unexpected {}:\n{rendered}",
        code.as_str()
    );
    insta::assert_snapshot!(name, rendered);
}

#[test]
fn good_template_is_clean() {
    let (findings, rendered) = check_fixture("good_template.py");
    assert!(findings.is_empty(), "{rendered}");
}

#[test]
fn unrelated_profile_function_is_ignored() {
    let (findings, rendered) = check_fixture("not_a_profiler.py");
    assert!(findings.is_empty(), "{rendered}");
}

#[test]
fn npl001_missing_experimental_config() {
    assert_triggers("npl001_missing_config.py", Code::MissingExperimentalConfig);
    assert_clean_of("npl001_ok_variants.py", Code::MissingExperimentalConfig);
}

#[test]
fn npl001_ok_variants_have_no_findings() {
    let (findings, rendered) = check_fixture("npl001_ok_variants.py");
    assert!(findings.is_empty(), "{rendered}");
}

#[test]
fn npl002_level0() {
    assert_triggers("npl002_level0.py", Code::ProfilerLevel0);
    assert_clean_of("good_template.py", Code::ProfilerLevel0);
}

#[test]
fn npl003_aicore_none() {
    assert_triggers("npl003_aicore_none.py", Code::AicMetricsNone);
    assert_clean_of("npl001_ok_variants.py", Code::AicMetricsNone);
    assert_clean_of("npl003_ok_level0.py", Code::AicMetricsNone);
}

#[test]
fn npl003_level1_says_which_builds_promote() {
    let (findings, _) = check_fixture("npl003_level1_by_build.py");
    let messages: Vec<&str> = findings
        .iter()
        .filter(|f| f.code == Code::AicMetricsNone)
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    for (message, level) in messages.iter().zip(["Level1", "Level2"]) {
        assert!(message.contains(&format!("at {level}")), "{message}");
        assert!(
            message.contains("2.10.0, 2.7.1.post11, 2.14.0"),
            "{message}"
        );
        assert!(
            message.contains("only 2.1.0.post10, 2.5.1, 2.7.1 replace"),
            "{message}"
        );
    }
    assert_triggers("npl003_level1_by_build.py", Code::AicMetricsNone);
}

#[test]
fn npl004_no_trace_handler() {
    assert_triggers("npl004_no_trace_handler.py", Code::MissingOnTraceReady);
    assert_clean_of("npl001_ok_variants.py", Code::MissingOnTraceReady);
    assert_clean_of(
        "npl004_ok_export_chrome_trace.py",
        Code::MissingOnTraceReady,
    );
}

#[test]
fn npl004_key_averages_is_no_trace_handler() {
    assert_triggers("npl004_key_averages.py", Code::MissingOnTraceReady);
}

#[test]
fn npl005_torch_profiler() {
    assert_triggers("npl005_torch_profiler.py", Code::TorchProfilerOnNpu);
    assert_clean_of("good_template.py", Code::TorchProfilerOnNpu);
}

#[test]
fn npl010_window_not_closed() {
    let (findings, _) = check_fixture("npl010_window_not_closed.py");
    assert_eq!(
        findings
            .iter()
            .filter(|f| f.code == Code::WindowNotClosed)
            .count(),
        3,
        "{:?}",
        codes(&findings)
    );
    assert_triggers("npl010_window_not_closed.py", Code::WindowNotClosed);
    assert_clean_of("npl010_ok_uncountable.py", Code::WindowNotClosed);
}

#[test]
fn npl011_no_margin() {
    assert_triggers("npl011_no_margin.py", Code::WindowClosesWithoutMargin);
    assert_clean_of("good_template.py", Code::WindowClosesWithoutMargin);
}

#[test]
fn npl012_unbounded_repeat() {
    let (findings, _) = check_fixture("npl012_unbounded_repeat.py");
    assert_eq!(
        findings
            .iter()
            .filter(|f| f.code == Code::UnboundedRepeat)
            .count(),
        2
    );
    assert_triggers("npl012_unbounded_repeat.py", Code::UnboundedRepeat);
    assert_clean_of("good_template.py", Code::UnboundedRepeat);
}

#[test]
fn npl013_loop_without_step() {
    assert_triggers("npl013_loop_without_step.py", Code::LoopWithoutStep);
    assert_clean_of("npl013_ok_no_schedule.py", Code::LoopWithoutStep);
}

#[test]
fn npl020_compile_in_window() {
    assert_triggers("npl020_compile_in_window.py", Code::CompileInWindow);
    assert_clean_of("npl020_ok_compile_before.py", Code::CompileInWindow);
}

#[test]
fn npl021_no_warmup() {
    assert_triggers("npl021_no_warmup.py", Code::NoWarmupBeforeWindow);
    assert_clean_of("npl021_ok_warmed.py", Code::NoWarmupBeforeWindow);
    assert_clean_of("npl020_ok_compile_before.py", Code::NoWarmupBeforeWindow);
    assert_clean_of(
        "npl021_ok_skipped_first_steps.py",
        Code::NoWarmupBeforeWindow,
    );
}

#[test]
fn npl030_to_npl032_high_volume() {
    let (findings, _) = check_fixture("npl030_high_volume.py");
    for code in [Code::WithStack, Code::ProfileMemory, Code::ProfilerLevel2] {
        assert!(
            findings.iter().any(|f| f.code == code),
            "missing {}",
            code.as_str()
        );
    }
    assert_triggers("npl030_high_volume.py", Code::WithStack);
    assert_clean_of("good_template.py", Code::WithStack);
}

#[test]
fn npl900_syntax_error_is_a_finding_not_a_crash() {
    assert_triggers("npl900_syntax_error.py", Code::SyntaxError);
    assert_clean_of("good_template.py", Code::SyntaxError);
}

#[test]
fn the_lib_docs_do_not_keep_a_second_rule_table() {
    let lib = include_str!("../src/lib.rs");
    for rule in npuprof_lint::RULES {
        assert!(!lib.contains(&format!("| {} |", rule.id)), "{}", rule.id);
    }
}

#[test]
fn profilers_stepped_outside_the_window_are_not_counted() {
    let (findings, rendered) = check_fixture("npl010_ok_stepped_elsewhere.py");
    for code in [
        Code::WindowNotClosed,
        Code::LoopWithoutStep,
        Code::WindowClosesWithoutMargin,
    ] {
        assert!(
            findings.iter().all(|f| f.code != code),
            "unexpected {}:\n{rendered}",
            code.as_str()
        );
    }
    insta::assert_snapshot!("npl010_ok_stepped_elsewhere.py", rendered);
}

#[test]
fn noqa_suppresses_the_named_codes_on_its_line() {
    let (findings, rendered) = check_fixture("noqa.py");
    assert_eq!(codes(&findings), ["NPL001"], "{rendered}");
    assert_eq!(findings[0].line, 14);
    insta::assert_snapshot!("noqa.py", rendered);
}

/// A profiler kept in an attribute, whose only `self.prof.step()` is in a comment, is said
/// (NPL019: nothing in the file steps it; another file may), not passed over.
#[test]
fn npl019_an_attribute_profiler_stepped_only_in_a_comment_is_said() {
    assert_triggers(
        "npl019_attribute_stepped_only_in_a_comment.py",
        Code::WindowUnresolved,
    );
}
