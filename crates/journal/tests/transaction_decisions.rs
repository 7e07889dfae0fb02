//! The commit's choices per staged change, through the library: npuprof's own symlink pointed
//! at a new target (and only npuprof's), a file that appeared, vanished or was edited between
//! staging and commit refused, one journal entry per created directory and per moved item,
//! only true originals saved, and a rollback of moves and retargets checked on disk (see
//! docs/mutants.md).

mod support;

use std::fs;
use std::path::Path;

use npuprof_journal::{self as journal, ChangeKind, JournalError, Transaction, failpoint};
use support::{check_revert_ok, patch, repo_with, snapshot_tree};

const RES: &str = "models/m/res";
const MOVED: &str = "models/m/res.moved";

/// A repository whose `models/m/res` npuprof moved aside and replaced by a symlink to `first`.
fn relocated(first: &Path) -> tempfile::TempDir {
    let repo = repo_with(&[("models/m/res/run/log_0.log", b"log\n"), ("b.txt", b"b\n")]);
    let mut tx = Transaction::begin(repo.path(), "relocate").unwrap();
    tx.rename(Path::new(RES), Path::new(MOVED)).unwrap();
    tx.symlink(Path::new(RES), first).unwrap();
    tx.commit().unwrap();
    repo
}

/// Commits `tx` with `b.txt`'s write failing as on a full disk (after every other change).
fn commit_failing_at_b(tx: Transaction) -> JournalError {
    failpoint::with_hook(
        |step| {
            if step.name == "write_temp" && step.path == Path::new("b.txt") {
                return Err(std::io::Error::from_raw_os_error(28));
            }
            Ok(())
        },
        || tx.commit().unwrap_err(),
    )
}

/// The kinds of the journal's entries, in order.
fn kinds(repo: &Path) -> Vec<ChangeKind> {
    journal::status(repo)
        .unwrap()
        .unwrap()
        .iter()
        .map(|s| s.kind)
        .collect()
}

#[test]
fn npuprofs_own_symlink_is_pointed_at_a_new_target_and_only_it() {
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let repo = repo_with(&[
        ("models/m/res/run/log_0.log", b"log\n"),
        ("plain.txt", b"p\n"),
    ]);
    std::os::unix::fs::symlink(first.path(), repo.path().join("users_link")).unwrap();
    let before = snapshot_tree(repo.path());
    let mut tx = Transaction::begin(repo.path(), "relocate").unwrap();
    tx.rename(Path::new(RES), Path::new(MOVED)).unwrap();
    tx.symlink(Path::new(RES), first.path()).unwrap();
    tx.commit().unwrap();

    let mut tx = Transaction::begin(repo.path(), "relocate").unwrap();
    assert!(tx.is_own_symlink(Path::new(RES)));
    // The user's link points where npuprof's does; a regular file is no symlink at all.
    assert!(!tx.is_own_symlink(Path::new("users_link")));
    assert!(!tx.is_own_symlink(Path::new("plain.txt")));
    tx.symlink(Path::new(RES), second.path()).unwrap();
    tx.commit().unwrap();
    assert_eq!(fs::read_link(repo.path().join(RES)).unwrap(), second.path());
    assert_eq!(
        kinds(repo.path()),
        [ChangeKind::Renamed, ChangeKind::Symlink]
    );

    let mut tx = Transaction::begin(repo.path(), "relocate").unwrap();
    tx.symlink(Path::new("users_link"), second.path()).unwrap();
    let err = tx.commit().unwrap_err();
    assert!(
        err.to_string().contains("not the symlink npuprof made"),
        "{err}"
    );
    assert_eq!(
        fs::read_link(repo.path().join("users_link")).unwrap(),
        first.path()
    );
    check_revert_ok(repo.path());
    assert_eq!(snapshot_tree(repo.path()), before);
}

#[test]
fn a_failed_commit_moves_back_what_it_moved_and_points_back_what_it_retargeted() {
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // A move aside, then a write that fails.
    let repo = repo_with(&[("models/m/res/run/log_0.log", b"log\n"), ("b.txt", b"b\n")]);
    let before = snapshot_tree(repo.path());
    let mut tx = Transaction::begin(repo.path(), "relocate").unwrap();
    tx.rename(Path::new(RES), Path::new(MOVED)).unwrap();
    tx.write_file(Path::new("b.txt"), b"B\n".to_vec()).unwrap();
    let err = commit_failing_at_b(tx);
    assert!(matches!(err, JournalError::RolledBack { .. }), "{err}");
    assert_eq!(snapshot_tree(repo.path()), before);
    assert!(!repo.path().join(".npuprof/journal.json").exists());

    // npuprof's symlink pointed at a new target, then a write that fails.
    let repo = relocated(first.path());
    let journal_before = fs::read(repo.path().join(".npuprof/journal.json")).unwrap();
    let mut tx = Transaction::begin(repo.path(), "relocate").unwrap();
    tx.symlink(Path::new(RES), second.path()).unwrap();
    tx.write_file(Path::new("b.txt"), b"B\n".to_vec()).unwrap();
    let err = commit_failing_at_b(tx);
    assert!(matches!(err, JournalError::RolledBack { .. }), "{err}");
    assert_eq!(fs::read_link(repo.path().join(RES)).unwrap(), first.path());
    assert_eq!(
        fs::read(repo.path().join(".npuprof/journal.json")).unwrap(),
        journal_before
    );
    check_revert_ok(repo.path());
}

#[test]
fn a_failed_commit_after_a_move_and_its_symlink_moves_the_item_back() {
    let local = tempfile::tempdir().unwrap();
    let repo = repo_with(&[("models/m/res/run/log_0.log", b"log\n"), ("b.txt", b"b\n")]);
    let before = snapshot_tree(repo.path());
    let mut tx = Transaction::begin(repo.path(), "relocate").unwrap();
    tx.rename(Path::new(RES), Path::new(MOVED)).unwrap();
    tx.symlink(Path::new(RES), local.path()).unwrap();
    tx.write_file(Path::new("b.txt"), b"B\n".to_vec()).unwrap();
    let err = commit_failing_at_b(tx);
    assert!(matches!(err, JournalError::RolledBack { .. }), "{err}");
    assert_eq!(snapshot_tree(repo.path()), before);
    assert!(!repo.path().join(".npuprof/journal.json").exists());
}

#[test]
fn a_moved_item_whose_destination_is_back_after_its_rollback_keeps_the_journal() {
    let repo = repo_with(&[
        ("a.txt", b"a\n"),
        ("models/m/res/run/log_0.log", b"log\n"),
        ("b.txt", b"b\n"),
    ]);
    let before = snapshot_tree(repo.path());
    let mut tx = Transaction::begin(repo.path(), "relocate").unwrap();
    tx.write_file(Path::new("a.txt"), b"A\n".to_vec()).unwrap();
    tx.rename(Path::new(RES), Path::new(MOVED)).unwrap();
    tx.write_file(Path::new("b.txt"), b"B\n".to_vec()).unwrap();
    // The move is undone before a.txt is; by then something is at the destination again.
    let moved = repo.path().canonicalize().unwrap().join(MOVED);
    let err = failpoint::with_hook(
        move |step| {
            if step.name == "write_temp" && step.path == Path::new("b.txt") {
                return Err(std::io::Error::from_raw_os_error(28));
            }
            if step.name == "rollback" && step.path == Path::new("a.txt") {
                fs::create_dir(&moved)?;
            }
            Ok(())
        },
        || tx.commit().unwrap_err(),
    );
    let message = err.to_string();
    assert!(matches!(err, JournalError::RollbackFailed { .. }), "{err}");
    assert!(message.contains("models/m/res` is not back"), "{message}");
    assert!(repo.path().join(".npuprof/journal.json").is_file());
    fs::remove_dir(repo.path().join(MOVED)).unwrap();
    check_revert_ok(repo.path());
    assert_eq!(snapshot_tree(repo.path()), before);
}

#[test]
fn two_items_moved_aside_in_one_transaction_are_both_journaled_and_moved_back() {
    let repo = repo_with(&[("a/log.txt", b"a\n"), ("b/log.txt", b"b\n")]);
    let before = snapshot_tree(repo.path());
    let mut tx = Transaction::begin(repo.path(), "relocate").unwrap();
    tx.rename(Path::new("a"), Path::new("a.moved")).unwrap();
    tx.rename(Path::new("b"), Path::new("b.moved")).unwrap();
    tx.commit().unwrap();
    assert_eq!(
        kinds(repo.path()),
        [ChangeKind::Renamed, ChangeKind::Renamed]
    );
    check_revert_ok(repo.path());
    assert_eq!(snapshot_tree(repo.path()), before);
}

#[test]
fn a_file_that_appears_after_its_create_was_staged_is_not_overwritten() {
    let repo = repo_with(&[("main.py", b"print(1)\n")]);
    let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
    tx.create_file(Path::new("new.py"), b"# npuprof\n".to_vec())
        .unwrap();
    fs::write(repo.path().join("new.py"), b"# the user's\n").unwrap();
    let err = tx.commit().unwrap_err();
    assert!(
        err.to_string()
            .contains("it already exists and npuprof did not create it"),
        "{err}"
    );
    assert_eq!(
        fs::read(repo.path().join("new.py")).unwrap(),
        b"# the user's\n"
    );
}

#[test]
fn a_file_deleted_after_its_write_was_staged_is_not_made_again() {
    let repo = repo_with(&[("a.py", b"a\n")]);
    let mut tx = Transaction::begin(repo.path(), "patch").unwrap();
    tx.write_file(Path::new("a.py"), b"A\n".to_vec()).unwrap();
    fs::remove_file(repo.path().join("a.py")).unwrap();
    let err = tx.commit().unwrap_err();
    assert!(err.to_string().contains("no longer exists"), "{err}");
    assert!(!repo.path().join("a.py").exists());
    assert!(!repo.path().join(".npuprof/journal.json").exists());
}

#[test]
fn a_patched_file_deleted_since_is_not_created_over_its_original() {
    let repo = repo_with(&[("a.py", b"original\n")]);
    patch(repo.path(), "patch", &[("a.py", b"patched\n")]);
    fs::remove_file(repo.path().join("a.py")).unwrap();
    let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
    tx.create_file(Path::new("a.py"), b"created\n".to_vec())
        .unwrap();
    let err = tx.commit().unwrap_err();
    assert!(
        err.to_string().contains("run `npuprof revert` first"),
        "{err}"
    );
    assert!(!repo.path().join("a.py").exists());
    // The journal still names the original: revert (forced past the deletion) puts it back.
    journal::revert(repo.path(), true).unwrap();
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"original\n");
}

#[test]
fn a_created_file_edited_since_is_not_overwritten() {
    let repo = repo_with(&[("main.py", b"print(1)\n")]);
    let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
    tx.create_file(Path::new("harness.py"), b"# v1\n".to_vec())
        .unwrap();
    tx.commit().unwrap();
    fs::write(repo.path().join("harness.py"), b"# the user's edit\n").unwrap();
    let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
    tx.create_file(Path::new("harness.py"), b"# v2\n".to_vec())
        .unwrap();
    let err = tx.commit().unwrap_err();
    assert!(matches!(err, JournalError::EditedSince { .. }), "{err}");
    assert_eq!(
        fs::read(repo.path().join("harness.py")).unwrap(),
        b"# the user's edit\n"
    );
}

#[test]
fn patching_a_file_again_saves_only_its_true_original() {
    let repo = repo_with(&[("a.py", b"original\n")]);
    patch(repo.path(), "patch", &[("a.py", b"first\n")]);
    patch(repo.path(), "patch", &[("a.py", b"second\n")]);
    let saved: Vec<Vec<u8>> = fs::read_dir(repo.path().join(".npuprof/originals"))
        .unwrap()
        .map(|e| fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(saved, [b"original\n".to_vec()]);
}

#[test]
fn files_created_in_two_new_directories_leave_neither_after_revert() {
    let repo = repo_with(&[("main.py", b"print(1)\n")]);
    let before = snapshot_tree(repo.path());
    let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
    tx.create_file(Path::new("one/a.py"), b"a\n".to_vec())
        .unwrap();
    tx.create_file(Path::new("two/b.py"), b"b\n".to_vec())
        .unwrap();
    tx.commit().unwrap();
    check_revert_ok(repo.path());
    assert_eq!(snapshot_tree(repo.path()), before);
}

#[test]
fn a_created_directory_removed_since_is_journaled_once_when_made_again() {
    let repo = repo_with(&[("main.py", b"print(1)\n")]);
    let before = snapshot_tree(repo.path());
    for _ in 0..2 {
        let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
        tx.create_file(Path::new("made/a.py"), b"a\n".to_vec())
            .unwrap();
        tx.commit().unwrap();
        assert_eq!(
            kinds(repo.path()),
            [ChangeKind::CreatedDir, ChangeKind::Created]
        );
        fs::remove_dir_all(repo.path().join("made")).unwrap();
    }
    check_revert_ok(repo.path());
    assert_eq!(snapshot_tree(repo.path()), before);
}
