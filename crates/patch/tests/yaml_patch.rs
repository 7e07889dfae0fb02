//! Snapshot tests of the run-config edits: the example configs, missing keys, comment columns,
//! spelling, CRLF, and refusals.

mod common;

use common::{apply_checked, example_repo, fixtures, read, report};
use npuprof_patch::PatchError;
use npuprof_patch::yaml::{MAX_TOKEN_BUDGET, MaxNewTokens, YamlOptions, patch_run_config};
use npuprof_repository::config::{RunConfig, Switch};
use npuprof_repository::definition::{ConfigKeys, Definitions};

/// The key paths of a shape (`shared-engine` or `legacy-runner`).
fn keys(shape: &str) -> &'static ConfigKeys {
    &Definitions::builtin()
        .shapes
        .iter()
        .find(|s| s.id == shape)
        .expect("shape")
        .config
}

fn options(shape: &str, max_new_tokens: MaxNewTokens) -> YamlOptions<'static> {
    let keys = keys(shape);
    YamlOptions {
        switch: &keys.switch,
        budget: &keys.budget,
        max_new_tokens,
    }
}

fn raise_to_69() -> YamlOptions<'static> {
    options("shared-engine", MaxNewTokens::AtLeast(69))
}

fn read_run_config(text: &str) -> RunConfig {
    npuprof_repository::config::read(text, keys("shared-engine")).expect("config reads")
}

/// A run config of the example repository.
fn repo_yaml(path: &str) -> String {
    read(&example_repo().join(path))
}

/// Patches `source`, checks idempotence and inverse, and returns the snapshot text.
fn check_yaml(path: &str, source: &str, options: &YamlOptions) -> String {
    let patch = patch_run_config(source, options).unwrap_or_else(|e| panic!("{path}: {e}"));
    let new = apply_checked(source, &patch.edits);
    let again =
        patch_run_config(&new, options).unwrap_or_else(|e| panic!("{path} (second run): {e}"));
    assert!(
        again.edits.is_empty() && again.changes.is_empty(),
        "{path}: patching twice must change nothing, got {:?}",
        again.changes
    );
    let keys = if options.budget[0] == "data_config" {
        keys("legacy-runner")
    } else {
        keys("shared-engine")
    };
    let config = npuprof_repository::config::read(&new, keys).expect("patched config reads");
    assert_eq!(config.switch, Switch::Bool(true), "{path}");
    report(path, source, &new, &patch.changes)
}

fn fixture(name: &str) -> String {
    read(&fixtures().join("yaml").join(name))
}

#[test]
fn fixture_repository_configs() {
    for (path, shape) in [
        (
            "models/deepseek-mini/config/decode_mtp.yaml",
            "shared-engine",
        ),
        (
            "models/deepseek-mini/config/deepseek-mini_pd/prefill.yaml",
            "shared-engine",
        ),
        (
            "models/glm_5_2/config/glm_mini_rank_2.yaml",
            "legacy-runner",
        ),
        ("models/pangu_7b/config/pangu_mini_7b.yaml", "legacy-runner"),
    ] {
        let snapshot = check_yaml(
            path,
            &repo_yaml(path),
            &options(shape, MaxNewTokens::AtLeast(69)),
        );
        let name = path.replace('/', "_").trim_end_matches(".yaml").to_owned();
        insta::assert_snapshot!(format!("repo__{name}"), snapshot);
    }
}

#[test]
fn prefill_only_kept_at_one() {
    let source = repo_yaml("models/deepseek-mini/config/prefill_only.yaml");
    let options = options("shared-engine", MaxNewTokens::Keep);
    insta::assert_snapshot!(check_yaml("prefill_only.yaml", &source, &options));
}

#[test]
fn exact_budget_lowers_too() {
    let source = repo_yaml("models/deepseek-mini/config/deepseek-mini_pd/decode.yaml");
    let options = options("shared-engine", MaxNewTokens::Exactly(40));
    insta::assert_snapshot!(check_yaml("decode.yaml", &source, &options));
}

/// Comment columns after 1 to 17 spaces: the `#` stays where it was whenever the padding allows.
#[test]
fn comment_columns_1_to_17() {
    let options = options("shared-engine", MaxNewTokens::AtLeast(1000));
    let mut all = String::new();
    for n in 1..=17 {
        let name = format!("comment_column_{n:02}.yaml");
        let source = fixture(&name);
        let snapshot = check_yaml(&name, &source, &options);
        let new = patch_run_config(&source, &options)
            .expect("patch")
            .edits
            .apply(&source);
        for key in ["enable_profiler:", "max_new_tokens:"] {
            let column = |text: &str| {
                let line = text.lines().find(|l| l.contains(key)).expect("key line");
                line.find('#').expect("comment")
            };
            let (old, new_column) = (column(&source), column(&new));
            // The value grows by at most 3 characters (8 -> 1000); `False` -> `True` shrinks by 1.
            if n > 3 {
                assert_eq!(old, new_column, "{name}: comment of {key} moved");
            } else {
                assert!(new_column >= old, "{name}: comment of {key} moved left");
            }
        }
        all.push_str(&snapshot);
    }
    insta::assert_snapshot!(all);
}

#[test]
fn missing_keys_are_inserted() {
    insta::assert_snapshot!(check_yaml(
        "missing_keys.yaml",
        &fixture("missing_keys.yaml"),
        &raise_to_69()
    ));
}

#[test]
fn missing_scheduler_config_is_added() {
    insta::assert_snapshot!(check_yaml(
        "no_scheduler.yaml",
        &fixture("no_scheduler.yaml"),
        &raise_to_69()
    ));
}

#[test]
fn lowercase_booleans_stay_lowercase() {
    insta::assert_snapshot!(check_yaml(
        "lowercase.yaml",
        &fixture("lowercase.yaml"),
        &raise_to_69()
    ));
}

#[test]
fn crlf_is_kept() {
    insta::assert_snapshot!(check_yaml(
        "crlf.yaml",
        &fixture("crlf.yaml"),
        &raise_to_69()
    ));
}

#[test]
fn no_final_newline() {
    insta::assert_snapshot!(check_yaml(
        "no_final_newline.yaml",
        &fixture("no_final_newline.yaml"),
        &raise_to_69()
    ));
}

#[test]
fn refuses_config_without_model_config() {
    let source = repo_yaml("models/wan-mini/config/t2v.yaml");
    let err = patch_run_config(&source, &raise_to_69()).expect_err("no model_config");
    assert!(matches!(err, PatchError::NotFound { .. }), "{err}");
    insta::assert_snapshot!(err.to_string());
}

#[test]
fn refuses_syntax_errors() {
    let err =
        patch_run_config(&fixture("syntax_error.yaml"), &raise_to_69()).expect_err("syntax error");
    assert!(
        matches!(
            err,
            PatchError::Syntax {
                language: "YAML",
                ..
            }
        ),
        "{err}"
    );
    insta::assert_snapshot!(err.to_string());
}

/// Every YAML fixture with every policy: the edits invert exactly, are idempotent, and
/// change exactly the intended keys (checked inside `patch_run_config`).
#[test]
fn every_fixture_with_every_policy() {
    let policies = [
        MaxNewTokens::Keep,
        MaxNewTokens::AtLeast(69),
        MaxNewTokens::Exactly(7),
    ];
    let mut names: Vec<String> = std::fs::read_dir(fixtures().join("yaml"))
        .expect("fixtures")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n != "syntax_error.yaml")
        .collect();
    names.sort();
    for name in names {
        let source = fixture(&name);
        for max_new_tokens in policies {
            let options = options("shared-engine", max_new_tokens);
            check_yaml(&name, &source, &options);
            let config = read_run_config(
                &patch_run_config(&source, &options)
                    .expect("patch")
                    .edits
                    .apply(&source),
            );
            assert_eq!(config.switch, Switch::Bool(true), "{name}");
            match max_new_tokens {
                MaxNewTokens::Exactly(n) => assert_eq!(config.budget, Some(n), "{name}"),
                MaxNewTokens::AtLeast(n) => assert!(config.budget >= Some(n), "{name}"),
                MaxNewTokens::Keep => assert_eq!(config.budget, read_run_config(&source).budget),
            }
        }
    }
}

/// `text` between `n` top-level keys before it and `n` after it (a run config of any length).
fn surrounded(text: &str, n: usize) -> (String, usize) {
    let before: String = (0..n).map(|i| format!("pad_before_{i}: {i}\n")).collect();
    let after: String = (0..n).map(|i| format!("pad_after_{i}: {i}\n")).collect();
    (format!("{before}{text}{after}"), before.len())
}

/// `text` with `n` more entries at the end of its top-level `section` block.
fn section_grown(text: &str, section: &str, n: usize) -> String {
    let start = text.find(&format!("\n{section}:")).expect("section") + 1;
    let end = text[start..]
        .find("\n\n")
        .map_or(text.len(), |i| start + i + 1);
    let grown: String = (0..n).map(|i| format!("  pad_{i}: {i}\n")).collect();
    format!("{}{grown}{}", &text[..end], &text[end..])
}

/// The edits as (range, replacement), shifted by `by` bytes.
fn shifted(edits: &npuprof_patch::Edits, by: usize) -> Vec<(std::ops::Range<usize>, String)> {
    edits
        .as_slice()
        .iter()
        .map(|e| (e.range.start + by..e.range.end + by, e.replacement.clone()))
        .collect()
}

/// Past tree-sitter-yaml's 16-bit row counter, a config is patched with exactly the edits of
/// the short file (shifted by the keys before it), and they invert exactly.
#[test]
fn a_config_of_more_than_32767_lines_is_patched_exactly() {
    let decode_mtp = "models/deepseek-mini/config/decode_mtp.yaml";
    let sources = [
        (decode_mtp, repo_yaml(decode_mtp)),
        ("missing_keys.yaml", fixture("missing_keys.yaml")),
    ];
    let policies = [MaxNewTokens::AtLeast(69), MaxNewTokens::Exactly(7)];
    for ((name, small), policy) in sources.into_iter().zip(policies.into_iter().cycle()) {
        let (big, offset) = surrounded(&small, 16_400);
        assert!(big.lines().count() > 32_800);
        let options = options("shared-engine", policy);
        let want = patch_run_config(&small, &options).expect("short file");
        let got = patch_run_config(&big, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!got.edits.is_empty(), "{name}");
        assert_eq!(
            shifted(&got.edits, 0),
            shifted(&want.edits, offset),
            "{name}"
        );
        let new = apply_checked(&big, &got.edits);
        let again = patch_run_config(&new, &options).expect("second run");
        assert!(again.edits.is_empty(), "{name}: {:?}", again.changes);
    }
}

#[test]
fn a_section_past_line_32768_is_found_and_a_missing_one_appended() {
    let small = fixture("no_scheduler.yaml");
    let (big, _) = surrounded(&small, 16_400);
    let options = raise_to_69();
    let patch = patch_run_config(&big, &options).expect("patch");
    let new = apply_checked(&big, &patch.edits);
    let config = read_run_config(&new);
    assert_eq!(
        (config.switch, config.budget),
        (Switch::Bool(true), Some(69))
    );
    assert!(
        new.ends_with("pad_after_16399: 16399\n\nscheduler_config:\n    max_new_tokens: 69\n"),
        "{}",
        &new[new.len() - 100..]
    );
}

/// Only the blocks the edit needs must fit tree-sitter-yaml: a long block elsewhere is fine, a
/// needed one is refused with its name and size.
#[test]
fn a_needed_top_level_block_longer_than_tree_sitter_counts_is_refused() {
    let small = repo_yaml("models/deepseek-mini/config/decode_mtp.yaml");
    let long_elsewhere = section_grown(&small, "data_config", 33_000);
    let patch = patch_run_config(&long_elsewhere, &raise_to_69()).expect("patch");
    assert_eq!(patch.edits.as_slice().len(), 2);

    let long_needed = section_grown(&small, "scheduler_config", 33_000);
    let err = patch_run_config(&long_needed, &raise_to_69()).expect_err("too long");
    assert!(matches!(err, PatchError::Refused(_)), "{err}");
    insta::assert_snapshot!(err.to_string());
}

/// Both insertions land at the end of the file: the switch goes into the last section, then the
/// new budget section follows it.
#[test]
fn a_switch_missing_from_the_last_section_and_a_missing_budget_section_are_both_added() {
    let source = "parallel_config:\n  world_size: 1\nmodel_config:\n  model_name: m\n";
    insta::assert_snapshot!(check_yaml("last_section.yaml", source, &raise_to_69()));
}

/// The bound holds in the library, not only in the CLI's argument parser.
#[test]
fn max_new_tokens_18446744073709551615_is_refused_not_written() {
    let source = repo_yaml("models/deepseek-mini/config/decode_mtp.yaml");
    for policy in [
        MaxNewTokens::Exactly(u64::MAX),
        MaxNewTokens::AtLeast(u64::MAX),
    ] {
        let err =
            patch_run_config(&source, &options("shared-engine", policy)).expect_err("refused");
        assert_eq!(
            err.to_string(),
            "scheduler_config.max_new_tokens 18446744073709551615 is more than npuprof writes \
             (100000000 tokens)"
        );
    }
    let at_most = options("shared-engine", MaxNewTokens::Exactly(MAX_TOKEN_BUDGET));
    check_yaml("decode_mtp.yaml", &source, &at_most);
}

#[test]
fn a_run_config_with_a_bom_is_patched_and_keeps_its_bom() {
    let source = format!("\u{feff}{}", fixture("missing_keys.yaml"));
    let patch = patch_run_config(&source, &raise_to_69()).expect("a BOM is not a second document");
    let new = apply_checked(&source, &patch.edits);
    assert!(new.starts_with('\u{feff}'));
    assert_eq!(
        new.trim_start_matches('\u{feff}'),
        apply_checked(
            &source[3..],
            &patch_run_config(&source[3..], &raise_to_69())
                .unwrap()
                .edits
        )
    );
}

#[test]
fn a_config_without_top_level_keys_is_refused_as_no_block_mapping() {
    for source in ["", "# only a comment\n"] {
        let err = patch_run_config(source, &raise_to_69()).expect_err("no keys");
        assert!(matches!(err, PatchError::Refused(_)), "{source:?}: {err}");
        assert_eq!(
            err.to_string(),
            "the config's top level is not a block mapping (`key: value` lines)"
        );
    }
}

#[test]
fn a_config_with_lone_carriage_returns_is_refused_naming_the_line() {
    let lf = repo_yaml("models/deepseek-mini/config/ep4.yaml");
    let second = lf.find('\n').expect("two lines") + 1;
    let mac = lf.replace('\n', "\r");
    let mixed = format!("{}{}", &lf[..second], lf[second..].replacen('\n', "\r", 1));
    for (source, line) in [(mac, 1), (mixed, 2)] {
        let err = patch_run_config(&source, &raise_to_69()).expect_err("lone CR");
        assert!(matches!(err, PatchError::Refused(_)), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "line {line} holds a carriage return without a line feed after it: YAML reads \
                 it as a line break, npuprof reads and edits LF and CRLF line breaks only; give \
                 the file LF or CRLF line breaks and run again"
            )
        );
    }
}

/// `true` is spelled like the switch's current boolean, else like the file's first boolean (a
/// string in mixed case such as `tRuE` is none), else `True`.
#[test]
fn true_is_spelled_like_the_switch_else_like_the_files_first_boolean() {
    let keep = options("shared-engine", MaxNewTokens::Keep);
    for (source, line) in [
        ("model_config:\n  enable_profiler: FALSE\n", "TRUE"),
        // Not a boolean: the spelling comes from the file's boolean.
        (
            "model_config:\n  enable_profiler: 0\n  use_cache: true\n",
            "true",
        ),
        // Missing: the first real boolean of the file, past a string that only reads like one.
        (
            "model_config:\n  model_name: tRuE\n  use_cache: true\n",
            "true",
        ),
        ("model_config:\n  model_name: m\n", "True"),
    ] {
        let new = apply_checked(
            source,
            &patch_run_config(source, &keep).expect("patch").edits,
        );
        let switch = new.lines().find(|l| l.contains("enable_profiler"));
        assert_eq!(
            switch,
            Some(format!("  enable_profiler: {line}").as_str()),
            "{source:?}"
        );
    }
}

#[test]
fn spaces_after_a_value_without_a_comment_stay_as_they_are() {
    let source =
        "model_config:\n  enable_profiler: False\nscheduler_config:\n  max_new_tokens: 8   \n";
    let new = apply_checked(
        source,
        &patch_run_config(source, &raise_to_69())
            .expect("patch")
            .edits,
    );
    assert_eq!(
        new,
        "model_config:\n  enable_profiler: True\nscheduler_config:\n  max_new_tokens: 69   \n"
    );
}
