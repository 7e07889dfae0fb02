//! CLI snapshots of `npuprof plan` (human and JSON) on the example repository's configs.

use std::path::PathBuf;
use std::process::Command;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

fn example_repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/recipes-mini")
}

/// `npuprof plan <args>` run inside the example repository.
fn plan(args: &[&str]) -> Command {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.current_dir(example_repo())
        .arg("plan")
        .args(args)
        .env("NO_COLOR", "1");
    cmd
}

#[test]
fn plan_framework_defaults() {
    assert_cmd_snapshot!(plan(&[]));
}

/// The README's case: MTP config (next_n 1, max_new_tokens 32) cannot close a 30-step window.
#[test]
fn plan_mtp_config_human() {
    assert_cmd_snapshot!(plan(&[
        "--decode-active",
        "30",
        "--config",
        "models/deepseek-mini/config/decode_mtp.yaml"
    ]));
}

#[test]
fn plan_mtp_config_json() {
    assert_cmd_snapshot!(plan(&[
        "--decode-active",
        "30",
        "--config",
        "models/deepseek-mini/config/decode_mtp.yaml",
        "--json"
    ]));
}

#[test]
fn plan_prefill_only_config() {
    assert_cmd_snapshot!(plan(&[
        "--config",
        "models/deepseek-mini/config/prefill_only.yaml"
    ]));
}

#[test]
fn plan_config_without_model_config() {
    assert_cmd_snapshot!(plan(&[
        "--phase",
        "decode",
        "--config",
        "models/wan-mini/config/t2v.yaml"
    ]));
}

/// A directory is not a run config: said so, with the YAML files in it.
#[test]
fn plan_config_that_is_a_directory() {
    assert_cmd_snapshot!(plan(&["--config", "models/deepseek-mini/config"]));
}

#[test]
fn plan_repeat_zero_cycles_forever() {
    assert_cmd_snapshot!(plan(&[
        "--phase",
        "decode",
        "--decode-active",
        "2",
        "--decode-skip-first",
        "1",
        "--repeat",
        "0"
    ]));
}

#[test]
fn plan_clamps_like_torch_npu() {
    assert_cmd_snapshot!(plan(&[
        "--phase",
        "decode",
        "--decode-active",
        "0",
        "--decode-skip-first",
        "-2",
        "--json"
    ]));
}

#[test]
fn plan_stop_in_warmup() {
    assert_cmd_snapshot!(plan(&[
        "--phase",
        "decode",
        "--warmup",
        "2",
        "--step-calls",
        "4"
    ]));
}

#[test]
fn plan_missing_config_is_an_error() {
    assert_cmd_snapshot!(plan(&["--config", "models/nope.yaml"]));
}
