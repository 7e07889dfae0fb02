//! Revert's choices per entry, through the library: a directory npuprof created is removed when
//! empty and kept (said so) when it holds a file of the user's; a removal that fails for another
//! reason than "already gone" stops the revert, which a re-run then finishes; a restored file
//! keeps its owner; the revert command in messages (see docs/mutants.md).

mod support;

use std::fs;
use std::path::Path;

use npuprof_journal::{
    self as journal, JournalError, RevertOutcome, Transaction, UndoAction, failpoint,
};
use support::{fail_step, repo_with};

/// A repository where one transaction created `made/new.py` (and so the directory `made`).
fn repo_with_created() -> tempfile::TempDir {
    let repo = repo_with(&[("main.py", b"print(1)\n")]);
    let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
    tx.create_file(Path::new("made/new.py"), b"# new\n".to_vec())
        .unwrap();
    tx.commit().unwrap();
    repo
}

fn actions(outcome: RevertOutcome) -> Vec<(String, UndoAction)> {
    match outcome {
        RevertOutcome::Reverted { actions } => actions
            .into_iter()
            .map(|a| (a.path.display().to_string(), a.action))
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_created_directory_is_removed_when_empty_and_kept_when_it_holds_a_users_file() {
    let repo = repo_with_created();
    assert_eq!(
        actions(journal::revert(repo.path(), false).unwrap()),
        [
            ("made/new.py".to_owned(), UndoAction::Removed),
            ("made".to_owned(), UndoAction::Removed)
        ]
    );
    assert!(!repo.path().join("made").exists());

    let repo = repo_with_created();
    fs::write(repo.path().join("made/notes.txt"), b"mine\n").unwrap();
    assert_eq!(
        actions(journal::revert(repo.path(), false).unwrap()),
        [
            ("made/new.py".to_owned(), UndoAction::Removed),
            ("made".to_owned(), UndoAction::KeptNonEmptyDir)
        ]
    );
    assert_eq!(
        fs::read(repo.path().join("made/notes.txt")).unwrap(),
        b"mine\n"
    );
    assert!(!repo.path().join("made/new.py").exists());
}

#[test]
fn a_removal_that_fails_stops_the_revert_and_a_rerun_finishes_it() {
    for step in ["unlink", "rmdir"] {
        let repo = repo_with_created();
        let err = failpoint::with_hook(fail_step(step), || {
            journal::revert(repo.path(), false).unwrap_err()
        });
        assert!(
            matches!(err, JournalError::RevertStopped { .. }),
            "{step}: {err}"
        );
        assert!(repo.path().join(".npuprof/journal.json").exists(), "{step}");
        let done = actions(journal::revert(repo.path(), false).unwrap());
        assert_eq!(done.len(), 2, "{step}: {done:?}");
        assert!(!repo.path().join("made").exists(), "{step}");
        assert!(!repo.path().join(".npuprof").exists(), "{step}");
    }
}

#[test]
#[allow(clippy::print_stderr, reason = "says why the test is skipped")]
fn a_restored_file_keeps_its_owner() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: changing a file's owner needs root");
        return;
    }
    let repo = repo_with(&[("a.py", b"original\n")]);
    support::patch(repo.path(), "patch", &[("a.py", b"patched\n")]);
    let path = repo.path().join("a.py");
    std::os::unix::fs::chown(&path, Some(4321), Some(4322)).unwrap();
    actions(journal::revert(repo.path(), false).unwrap());
    let meta = fs::metadata(&path).unwrap();
    use std::os::unix::fs::MetadataExt as _;
    assert_eq!((meta.uid(), meta.gid()), (4321, 4322));
    assert_eq!(fs::read(&path).unwrap(), b"original\n");
}

#[test]
fn the_revert_command_names_a_dash_path_as_the_options_value() {
    assert_eq!(
        journal::revert_argv(Path::new("repo")),
        ["npuprof", "revert", "--repo", "repo"]
    );
    assert_eq!(
        journal::revert_argv(Path::new("-odd")),
        ["npuprof", "revert", "--repo=-odd"]
    );
}
