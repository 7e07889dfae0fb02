//! The whole path-A computation on the example repository: plan, Python and YAML edits together,
//! the refusals, and a property test over random option combinations.

mod common;

use common::{apply_checked, example_python, example_yaml, python_parses, report};
use npuprof_patch::plan::PhaseSelection;
use npuprof_patch::recipes::{PatchRequest, RecipesError, SourceFile, TokenBudget, patch_recipes};
use npuprof_patch::yaml::read_run_config;
use proptest::prelude::*;

const EXAMPLE_CONFIGS: [(&str, &str); 6] = [
    ("deepseek-mini", "decode_mtp.yaml"),
    ("deepseek-mini", "ep4.yaml"),
    ("deepseek-mini", "prefill_only.yaml"),
    ("qwen-mini", "dense.yaml"),
    ("qwen-mini", "long_decode.yaml"),
    ("wan-mini", "t2v.yaml"),
];

/// Computes the patch, checks inverse and idempotence of both files, returns the snapshot text.
fn check_recipes(python: &str, yaml: &str, request: &PatchRequest) -> Result<String, RecipesError> {
    let patch = patch_recipes(python, yaml, request)?;
    let new_python = apply_checked(python, &patch.python.edits);
    let new_yaml = apply_checked(yaml, &patch.yaml.edits);
    assert!(python_parses(&new_python));
    let again = patch_recipes(&new_python, &new_yaml, request).expect("second run");
    assert!(
        again.python.edits.is_empty() && again.yaml.edits.is_empty(),
        "patching twice must change nothing"
    );
    let mut out = String::new();
    for warning in &patch.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    out.push_str(&report(
        "executor/utils/profiler_context.py",
        python,
        &new_python,
        &patch.python.changes,
    ));
    out.push_str(&report("config.yaml", yaml, &new_yaml, &patch.yaml.changes));
    let decode = patch
        .plan
        .phases
        .iter()
        .find(|p| p.phase == npuprof_patch::plan::Phase::Decode);
    if let Some(decode) = decode {
        out.push_str(&format!(
            "decode: recorded {:?}, closes cleanly: {}\n",
            decode.recorded_steps, decode.closes_cleanly
        ));
    }
    Ok(out)
}

fn request(
    phases: PhaseSelection,
    active: u64,
    skip_first: Option<u64>,
    budget: TokenBudget,
) -> PatchRequest {
    PatchRequest {
        phases,
        decode_active: active,
        decode_skip_first: skip_first,
        max_new_tokens: budget,
    }
}

/// The README's main case: MTP config, decode window of 30 steps.
#[test]
fn mtp_config_decode_active_30() {
    let yaml = example_yaml("deepseek-mini", "decode_mtp.yaml");
    let snapshot = check_recipes(
        &example_python(),
        &yaml,
        &request(PhaseSelection::Both, 30, None, TokenBudget::Auto),
    )
    .expect("patch");
    insta::assert_snapshot!(snapshot);
    // 3 skipped + 30 recorded + 1 margin = 34 decode step() calls; with next_n 1 that needs
    // 1 + 2 * 34 = 69 tokens.
    let patched = patch_recipes(
        &example_python(),
        &yaml,
        &request(PhaseSelection::Both, 30, None, TokenBudget::Auto),
    )
    .expect("patch");
    let config = read_run_config(&patched.yaml.edits.apply(&yaml)).expect("reads");
    assert_eq!(config.max_new_tokens, Some(69));
    assert_eq!(patched.plan.min_max_new_tokens, Some(69));
}

#[test]
fn prefill_only_config() {
    let yaml = example_yaml("deepseek-mini", "prefill_only.yaml");
    let both = check_recipes(
        &example_python(),
        &yaml,
        &request(PhaseSelection::Both, 10, None, TokenBudget::Auto),
    )
    .expect("both is allowed with a warning");
    insta::assert_snapshot!("prefill_only_both", both);
    let err = patch_recipes(
        &example_python(),
        &yaml,
        &request(PhaseSelection::Decode, 10, None, TokenBudget::Auto),
    )
    .expect_err("decode is refused");
    assert_eq!(err.file, SourceFile::RunConfig);
    insta::assert_snapshot!("prefill_only_decode_refused", err.to_string());
    let explicit = check_recipes(
        &example_python(),
        &yaml,
        &request(PhaseSelection::Decode, 10, None, TokenBudget::Set(40)),
    )
    .expect("an explicit budget is honoured");
    insta::assert_snapshot!("prefill_only_decode_explicit_budget", explicit);
}

#[test]
fn config_without_model_config_is_refused() {
    let yaml = example_yaml("wan-mini", "t2v.yaml");
    let err = patch_recipes(
        &example_python(),
        &yaml,
        &request(PhaseSelection::Both, 10, None, TokenBudget::Auto),
    )
    .expect_err("refused");
    insta::assert_snapshot!(err.to_string());
}

#[test]
fn small_explicit_budget_warns() {
    let yaml = example_yaml("qwen-mini", "dense.yaml");
    let patch = patch_recipes(
        &example_python(),
        &yaml,
        &request(PhaseSelection::Decode, 10, Some(0), TokenBudget::Set(5)),
    )
    .expect("patch");
    insta::assert_snapshot!(patch.warnings.join("\n"));
}

fn phases() -> impl Strategy<Value = PhaseSelection> {
    prop_oneof![
        Just(PhaseSelection::Both),
        Just(PhaseSelection::Decode),
        Just(PhaseSelection::Prefill)
    ]
}

fn budget() -> impl Strategy<Value = TokenBudget> {
    prop_oneof![
        Just(TokenBudget::Auto),
        (1u64..5000).prop_map(TokenBudget::Set)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Any option combination on any example config: either a clear refusal, or edits that
    /// re-parse, invert exactly, and are idempotent; and a second patch with other options on
    /// the patched files works the same way.
    #[test]
    fn random_options(
        phase_a in phases(), active_a in 1u64..=64, skip_a in proptest::option::of(0u64..=20), budget_a in budget(),
        phase_b in phases(), active_b in 1u64..=64, skip_b in proptest::option::of(0u64..=20), budget_b in budget(),
        config in 0usize..EXAMPLE_CONFIGS.len(),
    ) {
        let (model, file) = EXAMPLE_CONFIGS[config];
        let yaml = example_yaml(model, file);
        let python = example_python();
        let first = request(phase_a, active_a, skip_a, budget_a);
        let Ok(patch) = patch_recipes(&python, &yaml, &first) else {
            // Refusals are for the configs that cannot be patched as asked.
            prop_assert!(file == "t2v.yaml" || file == "prefill_only.yaml");
            return Ok(());
        };
        let (python2, yaml2) = (apply_checked(&python, &patch.python.edits), apply_checked(&yaml, &patch.yaml.edits));
        prop_assert!(python_parses(&python2));
        let again = patch_recipes(&python2, &yaml2, &first).expect("idempotent run");
        prop_assert!(again.python.edits.is_empty() && again.yaml.edits.is_empty());
        let second = request(phase_b, active_b, skip_b, budget_b);
        if let Ok(patch) = patch_recipes(&python2, &yaml2, &second) {
            let (python3, yaml3) = (apply_checked(&python2, &patch.python.edits), apply_checked(&yaml2, &patch.yaml.edits));
            prop_assert!(python_parses(&python3));
            let again = patch_recipes(&python3, &yaml3, &second).expect("idempotent run");
            prop_assert!(again.python.edits.is_empty() && again.yaml.edits.is_empty());
        }
    }
}
