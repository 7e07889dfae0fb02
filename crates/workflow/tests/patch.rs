//! `resolve_and_apply`: the target is resolved once, inside the transaction, and from the true
//! originals when the repository was patched before; a resolution error stays a `TargetError`
//! and leaves nothing behind.

use std::path::Path;
use std::process::Command;

use npuprof_patch::target::{PatchRequest, TokenBudget};
use npuprof_repository::{Request, TargetError};
use npuprof_schedule::{PhaseSelection, Window};
use npuprof_workflow::patch::{Mode, resolve_and_apply};

/// A private copy of the bundled recipes-mini repository.
fn recipes_mini() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let status = Command::new("cp")
        .arg("-a")
        .arg(workspace.join("examples/recipes-mini/."))
        .arg(dir.path())
        .status()
        .expect("cp");
    assert!(status.success());
    dir
}

/// Either of the errors `resolve_and_apply` returns.
type Failed = Box<dyn std::error::Error>;

/// Patches `yaml` of deepseek-mini with a decode window of `active` steps (the budget raised as
/// needed); returns the run config's budget the resolved target had.
fn patch(repo: &Path, yaml: &str, active: u64) -> Result<u64, Failed> {
    let request = Request {
        repo,
        model: "deepseek-mini",
        yaml,
        mode: None,
    };
    let mut seen = None;
    resolve_and_apply(
        &request,
        |target| {
            seen = Some(target.profiled().expect("settable").config.effective_budget);
            Ok::<_, Failed>(PatchRequest {
                phases: PhaseSelection::Decode,
                window: Window::new(active, None).expect("window"),
                max_new_tokens: TokenBudget::Auto,
            })
        },
        Mode::Write,
    )?;
    Ok(seen.expect("built"))
}

#[test]
fn a_repatch_resolves_the_originals_not_the_patched_files() {
    let repo = recipes_mini();
    let config = repo
        .path()
        .join("models/deepseek-mini/config/decode_mtp.yaml");
    let original = std::fs::read_to_string(&config).expect("config");
    assert_eq!(
        patch(repo.path(), "decode_mtp.yaml", 30).expect("patched"),
        32
    );
    assert_ne!(
        std::fs::read_to_string(&config).expect("config"),
        original,
        "the budget is raised for 30 steps"
    );
    // The files now hold the raised budget; the target the second window is built from is
    // still the original's.
    assert_eq!(
        patch(repo.path(), "decode_mtp.yaml", 5).expect("patched"),
        32
    );
}

#[test]
fn a_resolution_error_is_the_target_error_and_leaves_no_journal() {
    let repo = recipes_mini();
    let err = patch(repo.path(), "nope.yaml", 5).expect_err("no such config");
    assert!(
        matches!(
            err.downcast_ref::<TargetError>(),
            Some(TargetError::UnknownConfig { .. })
        ),
        "{err:?}"
    );
    assert!(!repo.path().join(".npuprof").exists());
}
