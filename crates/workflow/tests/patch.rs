//! `patch::run`, the pipeline patch and collect share: the target is resolved once, inside the
//! transaction, and from the true originals when the repository was patched before; a
//! resolution error stays the `TargetError` it is (with route's `inject` command when the
//! repository has no built-in profiler) and leaves nothing behind.

use std::path::Path;
use std::process::Command;

use npuprof_patch::target::{PatchRequest, TokenBudget};
use npuprof_repository::{Request, TargetError};
use npuprof_schedule::{PhaseSelection, Window};
use npuprof_workflow::WorkflowError;
use npuprof_workflow::patch::{Mode, run};

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

/// Patches `yaml` of deepseek-mini with a decode window of `active` steps (the budget raised as
/// needed); returns the run config's budget the resolved target had.
fn patch(repo: &Path, yaml: &str, active: u64) -> Result<u64, WorkflowError> {
    patch_model(repo, "deepseek-mini", yaml, active)
}

/// Patches `yaml` of `model` as [`patch`] does.
fn patch_model(repo: &Path, model: &str, yaml: &str, active: u64) -> Result<u64, WorkflowError> {
    let request = npuprof_workflow::patch::Request {
        target: Request {
            repo,
            model,
            yaml,
            mode: None,
        },
        window: PatchRequest {
            phases: PhaseSelection::Both,
            window: Window::new(1, None).expect("window"),
            max_new_tokens: TokenBudget::Set(1),
            modules: false,
        },
    };
    let mut seen = None;
    run(&request, Mode::Write, |target, window| {
        seen = Some(target.profiled().expect("settable").config.effective_budget);
        *window = PatchRequest {
            phases: PhaseSelection::Decode,
            window: Window::new(active, None).expect("window"),
            max_new_tokens: TokenBudget::Auto,
            modules: false,
        };
        Ok::<_, WorkflowError>(())
    })?;
    Ok(seen.expect("settled"))
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
            err,
            WorkflowError::Target(TargetError::UnknownConfig { .. })
        ),
        "{err:?}"
    );
    assert_eq!(err.code(), npuprof_severity::ErrorCode::NotFound);
    assert!(!repo.path().join(".npuprof").exists());
}

/// The window the caller settles is the one patched (the request's own is only the default),
/// and the one [`Patched`](npuprof_workflow::patch::Patched) returns.
#[test]
fn the_settled_window_is_the_one_patched() {
    let repo = recipes_mini();
    let window = |active| PatchRequest {
        phases: PhaseSelection::Decode,
        window: Window::new(active, None).expect("window"),
        max_new_tokens: TokenBudget::Auto,
        modules: false,
    };
    let request = npuprof_workflow::patch::Request {
        target: Request {
            repo: repo.path(),
            model: "deepseek-mini",
            yaml: "decode_mtp.yaml",
            mode: None,
        },
        window: window(3),
    };
    let patched = run(&request, Mode::DryRun, |_, settled| {
        *settled = window(7);
        Ok::<_, WorkflowError>(())
    })
    .expect("patched");
    let actives: Vec<u64> = patched
        .report
        .plan
        .phases
        .iter()
        .map(|p| p.active)
        .collect();
    assert_eq!(actives, [7]);
    assert_eq!(patched.window.window, window(7).window);
}

/// A repository without a built-in profiler (route: path B) gets route's `inject` command in
/// the error, the resolution error kept as its cause (and its code).
#[test]
fn a_repository_without_a_profiler_is_told_to_inject() {
    let repo = tempfile::tempdir().expect("temp dir");
    let config = repo.path().join("models/m/config");
    std::fs::create_dir_all(&config).expect("dirs");
    std::fs::write(
        config.join("run.yaml"),
        "model_config:\n  enable_profiler: False\n",
    )
    .expect("config");
    let err = patch_model(repo.path(), "m", "run.yaml", 5).expect_err("nothing to patch");
    let WorkflowError::NoProfiler(no_profiler) = &err else {
        panic!("expected the path-B hint, got {err:?}");
    };
    assert!(
        no_profiler.next.contains("npuprof inject"),
        "{no_profiler:?}"
    );
    assert!(
        err.to_string()
            .starts_with("this repository has no built-in profiler to patch (route: path B)"),
        "{err}"
    );
    let cause = std::error::Error::source(&err).expect("the resolution error is the cause");
    assert!(cause.downcast_ref::<TargetError>().is_some(), "{cause:?}");
    assert!(!repo.path().join(".npuprof").exists());
}

/// A resolution error in a repository that has a profiler gets no path-B hint.
#[test]
fn a_framework_repository_gets_no_inject_hint() {
    let repo = recipes_mini();
    let err = patch(repo.path(), "nope.yaml", 5).expect_err("no such config");
    assert!(matches!(err, WorkflowError::Target(_)), "{err:?}");
}
