//! The journaled transaction and its revert, through the library: byte-exact restoration,
//! confinement, rollback, and the regression cases of "nothing lost, ever".

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use npuprof_journal::{self as journal, Transaction, failpoint};
use support::{check_revert_ok, patch, repo_with, snapshot_tree};

/// Commits `tx`, turning `b.txt` into a directory just before its temp file is written: the
/// rename onto it fails after `a.txt` was already replaced.
fn commit_with_b_turned_into_a_dir(tx: Transaction, repo: &Path) -> journal::JournalError {
    let b = repo.canonicalize().unwrap().join("b.txt");
    failpoint::with_hook(
        move |step| {
            if step.name == "write_temp" && step.path == Path::new("b.txt") {
                fs::remove_file(&b)?;
                fs::create_dir(&b)?;
            }
            Ok(())
        },
        || tx.commit().unwrap_err(),
    )
}

#[test]
fn revert_of_patch_is_byte_identical() {
    let repo = repo_with(&[
        (
            "executor/utils/profiler_context.py",
            b"def f(active=3):\n    pass\n",
        ),
        (
            "models/m/config/a.yaml",
            b"model_config:\n  enable_profiler: False  # x\n",
        ),
        ("untouched.txt", b"same\n"),
    ]);
    let before = snapshot_tree(repo.path());
    let report = patch(
        repo.path(),
        "patch",
        &[
            (
                "executor/utils/profiler_context.py",
                b"def f(active=30):\n    pass\n",
            ),
            (
                "models/m/config/a.yaml",
                b"model_config:\n  enable_profiler: True   # x\n",
            ),
        ],
    );
    assert_eq!(report.changed.len(), 2);
    assert_ne!(snapshot_tree(repo.path()), before);
    assert_eq!(
        fs::read(repo.path().join(".npuprof/.gitignore")).unwrap(),
        b"*\n"
    );
    check_revert_ok(repo.path());
    assert_eq!(snapshot_tree(repo.path()), before);
}

#[test]
fn patching_twice_keeps_the_true_original() {
    let repo = repo_with(&[("a.py", b"original\n")]);
    patch(repo.path(), "patch", &[("a.py", b"first\n")]);
    patch(repo.path(), "patch", &[("a.py", b"second\n")]);
    let status = journal::status(repo.path()).unwrap().unwrap();
    assert_eq!(status.len(), 1, "one entry per file: {status:?}");
    assert!(status[0].matches_post_patch);
    check_revert_ok(repo.path());
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"original\n");
}

#[test]
fn permissions_and_crlf_are_preserved() {
    let repo = repo_with(&[
        ("run.sh", b"#!/bin/sh\r\necho a\r\n"),
        ("b.txt", b"x\r\n\r\n"),
    ]);
    let script = repo.path().join("run.sh");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o751)).unwrap();
    fs::set_permissions(repo.path().join("b.txt"), fs::Permissions::from_mode(0o600)).unwrap();
    let before = snapshot_tree(repo.path());
    patch(
        repo.path(),
        "patch",
        &[("run.sh", b"#!/bin/sh\r\necho b\r\n"), ("b.txt", b"y\r\n")],
    );
    assert_eq!(
        fs::metadata(&script).unwrap().permissions().mode() & 0o7777,
        0o751
    );
    assert_eq!(fs::read(&script).unwrap(), b"#!/bin/sh\r\necho b\r\n");
    check_revert_ok(repo.path());
    assert_eq!(snapshot_tree(repo.path()), before);
}

#[test]
fn unchanged_content_is_skipped_and_leaves_no_journal() {
    let repo = repo_with(&[("a.py", b"same\n")]);
    let report = patch(repo.path(), "patch", &[("a.py", b"same\n")]);
    assert!(report.changed.is_empty());
    assert!(!repo.path().join(".npuprof").exists());
}

#[test]
fn created_files_and_directories_are_removed_by_revert() {
    let repo = repo_with(&[("main.py", b"print(1)\n")]);
    let before = snapshot_tree(repo.path());
    let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
    tx.create_file(
        Path::new("npuprof_harness/profiling.py"),
        b"# harness\n".to_vec(),
    )
    .unwrap();
    tx.write_file(
        Path::new("main.py"),
        b"import npuprof_harness\nprint(1)\n".to_vec(),
    )
    .unwrap();
    tx.commit().unwrap();
    assert_eq!(
        fs::read(repo.path().join("npuprof_harness/profiling.py")).unwrap(),
        b"# harness\n"
    );

    // A file npuprof created may be rewritten by a later run.
    let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
    tx.create_file(
        Path::new("npuprof_harness/profiling.py"),
        b"# harness v2\n".to_vec(),
    )
    .unwrap();
    tx.commit().unwrap();

    check_revert_ok(repo.path());
    assert_eq!(snapshot_tree(repo.path()), before);
}

#[test]
fn create_refuses_an_existing_file_npuprof_did_not_create() {
    let repo = repo_with(&[("mine.py", b"user code\n")]);
    // Refused without a journal, and beside a file npuprof did create.
    for created in [false, true] {
        let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
        let err = tx
            .create_file(Path::new("mine.py"), b"x".to_vec())
            .unwrap_err();
        assert!(
            err.to_string().contains("npuprof did not create it"),
            "created: {created}: {err}"
        );
        tx.create_file(Path::new("harness.py"), b"# harness\n".to_vec())
            .unwrap();
        tx.commit().unwrap();
    }
}

#[test]
fn paths_outside_the_repository_are_refused() {
    let outside = repo_with(&[("secret.txt", b"secret\n")]);
    let repo = repo_with(&[("a.py", b"a\n")]);
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        repo.path().join("link.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.path().join("linkdir")).unwrap();
    let mut tx = Transaction::begin(repo.path(), "patch").unwrap();
    let reasons = [
        tx.read(Path::new("link.txt")).unwrap_err(),
        tx.write_file(Path::new("link.txt"), b"x".to_vec())
            .unwrap_err(),
        tx.write_file(Path::new("../a.py"), b"x".to_vec())
            .unwrap_err(),
        tx.write_file(&outside.path().join("secret.txt"), b"x".to_vec())
            .unwrap_err(),
        tx.create_file(Path::new("linkdir/new.py"), b"x".to_vec())
            .unwrap_err(),
        tx.create_file(Path::new(".npuprof/journal.json"), b"x".to_vec())
            .unwrap_err(),
    ];
    let reasons: Vec<String> = reasons.iter().map(|e| format!("{e:#}")).collect();
    for (reason, expected) in reasons.iter().zip([
        "outside the repository",
        "outside the repository",
        "contains `..`",
        "is absolute",
        "outside the repository",
        "npuprof's own",
    ]) {
        assert!(
            reason.contains(expected),
            "{reason:?} does not say {expected:?}"
        );
    }
    assert_eq!(
        fs::read(outside.path().join("secret.txt")).unwrap(),
        b"secret\n"
    );
}

#[test]
fn failure_mid_commit_leaves_no_file_changed() {
    let repo = repo_with(&[("a.txt", b"a original\n"), ("b.txt", b"b original\n")]);
    let before = snapshot_tree(repo.path());
    let mut tx = Transaction::begin(repo.path(), "patch").unwrap();
    tx.write_file(Path::new("a.txt"), b"a new\n".to_vec())
        .unwrap();
    tx.write_file(Path::new("b.txt"), b"b new\n".to_vec())
        .unwrap();
    let err = commit_with_b_turned_into_a_dir(tx, repo.path());
    assert!(format!("{err:#}").contains("rolled back"), "{err:#}");
    fs::remove_dir(repo.path().join("b.txt")).unwrap();
    fs::write(repo.path().join("b.txt"), b"b original\n").unwrap();
    assert_eq!(
        snapshot_tree(repo.path()),
        before,
        "a file stayed changed, or a temp file was left"
    );
    assert!(
        !repo.path().join(".npuprof").exists(),
        "journal left behind after rollback"
    );
}

#[test]
fn failure_in_a_later_transaction_keeps_the_earlier_journal() {
    let repo = repo_with(&[("a.txt", b"one\n"), ("b.txt", b"two\n")]);
    let before = snapshot_tree(repo.path());
    patch(repo.path(), "patch", &[("a.txt", b"one patched\n")]);
    let journal_before = fs::read(repo.path().join(".npuprof/journal.json")).unwrap();

    let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
    tx.write_file(Path::new("a.txt"), b"one patched twice\n".to_vec())
        .unwrap();
    tx.create_file(Path::new("new/harness.py"), b"print()\n".to_vec())
        .unwrap();
    tx.write_file(Path::new("b.txt"), b"two patched\n".to_vec())
        .unwrap();
    commit_with_b_turned_into_a_dir(tx, repo.path());
    assert_eq!(
        fs::read(repo.path().join("a.txt")).unwrap(),
        b"one patched\n"
    );
    assert!(
        !repo.path().join("new").exists(),
        "created directory left behind"
    );
    assert_eq!(
        fs::read(repo.path().join(".npuprof/journal.json")).unwrap(),
        journal_before
    );

    fs::remove_dir(repo.path().join("b.txt")).unwrap();
    fs::write(repo.path().join("b.txt"), b"two\n").unwrap();
    check_revert_ok(repo.path());
    assert_eq!(snapshot_tree(repo.path()), before);
}

#[test]
fn a_file_turned_into_a_directory_before_commit_is_refused() {
    let repo = repo_with(&[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    let mut tx = Transaction::begin(repo.path(), "patch").unwrap();
    tx.write_file(Path::new("a.txt"), b"A\n".to_vec()).unwrap();
    tx.write_file(Path::new("b.txt"), b"B\n".to_vec()).unwrap();
    fs::remove_file(repo.path().join("b.txt")).unwrap();
    fs::create_dir(repo.path().join("b.txt")).unwrap();
    let err = tx.commit().unwrap_err();
    assert!(
        err.to_string().contains("no longer a regular file"),
        "{err}"
    );
    assert_eq!(fs::read(repo.path().join("a.txt")).unwrap(), b"a\n");
    assert!(!repo.path().join(".npuprof").exists());
}

#[test]
fn renames_and_symlinks_are_undone_in_reverse_order() {
    let repo = repo_with(&[("models/m/res/run1/log_0.log", b"log\n")]);
    let local = tempfile::tempdir().unwrap();
    let before = snapshot_tree(repo.path());
    let mut tx = Transaction::begin(repo.path(), "relocate").unwrap();
    tx.rename(Path::new("models/m/res"), Path::new("models/m/res.moved"))
        .unwrap();
    tx.symlink(Path::new("models/m/res"), local.path()).unwrap();
    tx.commit().unwrap();
    assert_eq!(
        fs::read_link(repo.path().join("models/m/res")).unwrap(),
        local.path()
    );
    assert!(
        repo.path()
            .join("models/m/res.moved/run1/log_0.log")
            .is_file()
    );
    check_revert_ok(repo.path());
    assert_eq!(snapshot_tree(repo.path()), before);
}

/// `originals` gives the true original of each file `command` wrote last, however many times it
/// wrote it, and leaves out files another command wrote since and files back to their original.
#[test]
fn originals_are_the_true_ones_of_the_files_the_command_wrote_last() {
    let repo = repo_with(&[("a.py", b"a0\n"), ("b.py", b"b0\n"), ("c.py", b"c0\n")]);
    let root = repo.path();
    patch(
        root,
        "patch",
        &[("a.py", b"a1\n"), ("b.py", b"b1\n"), ("c.py", b"c1\n")],
    );
    patch(root, "patch", &[("a.py", b"a2\n")]);
    patch(root, "lint --fix", &[("b.py", b"b2\n")]);
    patch(root, "patch", &[("c.py", b"c0\n")]);
    let tx = Transaction::preview(root, "patch").unwrap();
    let originals = tx.originals("patch").unwrap();
    assert_eq!(
        originals,
        [(Path::new("a.py").to_path_buf(), b"a0\n".to_vec())]
    );
    let lint = tx.originals("lint --fix").unwrap();
    assert_eq!(lint, [(Path::new("b.py").to_path_buf(), b"b0\n".to_vec())]);
    check_revert_ok(root);
}

/// The error a full disk gives.
fn no_space() -> std::io::Error {
    std::io::Error::from_raw_os_error(28)
}

/// Commits `tx` with `b.txt`'s write failing as on a full disk, and `hook` run at every step.
fn commit_with_b_failing(
    tx: Transaction,
    mut hook: impl FnMut(failpoint::Step<'_>) -> std::io::Result<()> + 'static,
) -> String {
    let err = failpoint::with_hook(
        move |step| {
            if step.name == "write_temp" && step.path == Path::new("b.txt") {
                return Err(no_space());
            }
            hook(step)
        },
        || tx.commit().unwrap_err(),
    );
    format!("{err:#}")
}

/// Checks that a failed rollback kept the journal and the saved originals, said how to finish,
/// and that `revert` then restores every file.
fn check_kept_for_revert(
    repo: &Path,
    message: &str,
    before: &[(std::path::PathBuf, Vec<u8>, u32)],
) {
    assert!(message.contains("ROLLBACK FAILED"), "{message}");
    assert!(message.contains("npuprof revert"), "{message}");
    assert!(
        message.len() < 1000 && !message.contains(", 10"),
        "the message prints file bytes: {message}"
    );
    assert!(
        repo.join(".npuprof/journal.json").is_file(),
        "journal deleted"
    );
    assert!(
        fs::read_dir(repo.join(".npuprof/originals"))
            .unwrap()
            .count()
            > 0,
        "saved originals deleted"
    );
    check_revert_ok(repo);
    assert_eq!(snapshot_tree(repo), before);
}

#[test]
fn a_failed_rollback_keeps_the_journal_and_the_originals() {
    let big = b"a original line\n".repeat(200);
    let repo = repo_with(&[("a.txt", &big), ("b.txt", b"b original\n")]);
    let before = snapshot_tree(repo.path());
    let mut tx = Transaction::begin(repo.path(), "patch").unwrap();
    tx.write_file(Path::new("a.txt"), b"a new\n".to_vec())
        .unwrap();
    tx.write_file(Path::new("b.txt"), b"b new\n".to_vec())
        .unwrap();
    // The undo of a.txt needs space too (its old inode is still held): its temp file fails.
    let mut a_writes = 0;
    let message = commit_with_b_failing(tx, move |step| {
        if step.name == "write_temp" && step.path == Path::new("a.txt") {
            a_writes += 1;
            if a_writes == 2 {
                return Err(no_space());
            }
        }
        Ok(())
    });
    assert_eq!(fs::read(repo.path().join("a.txt")).unwrap(), b"a new\n");
    check_kept_for_revert(repo.path(), &message, &before);
}

#[test]
fn a_rollback_whose_result_is_not_found_on_disk_keeps_the_journal() {
    let repo = repo_with(&[("a.txt", b"a original\n"), ("b.txt", b"b original\n")]);
    let before = snapshot_tree(repo.path());
    let mut tx = Transaction::begin(repo.path(), "patch").unwrap();
    tx.write_file(Path::new("a.txt"), b"a new\n".to_vec())
        .unwrap();
    tx.create_file(Path::new("c.txt"), b"c\n".to_vec()).unwrap();
    tx.write_file(Path::new("b.txt"), b"b new\n".to_vec())
        .unwrap();
    // Every undo works, but c.txt (removed first) is back by the time a.txt is restored.
    let c = repo.path().canonicalize().unwrap().join("c.txt");
    let message = commit_with_b_failing(tx, move |step| {
        if step.name == "rollback" && step.path == Path::new("a.txt") {
            fs::write(&c, b"c\n")?;
        }
        Ok(())
    });
    assert!(message.contains("c.txt` is not back"), "{message}");
    check_kept_for_revert(repo.path(), &message, &before);
}

#[test]
fn a_journal_of_two_relocations_made_the_old_way_is_unwound_by_revert() {
    let repo = repo_with(&[("models/m/res/run/log_0.log", b"log\n")]);
    let before = snapshot_tree(repo.path());
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let res = Path::new("models/m/res");
    // The first relocation, then a second that moves npuprof's symlink aside too (what relocate
    // did before it retargeted its own symlink): the symlink entry is reused for the new link.
    for (target, moved) in [
        (&first, "models/m/res.moved-1"),
        (&second, "models/m/res.moved-2"),
    ] {
        let mut tx = Transaction::begin(repo.path(), "relocate").unwrap();
        tx.rename(res, Path::new(moved)).unwrap();
        tx.symlink(res, target.path()).unwrap();
        tx.commit().unwrap();
    }
    assert_eq!(fs::read_link(repo.path().join(res)).unwrap(), second.path());
    check_revert_ok(repo.path());
    assert_eq!(snapshot_tree(repo.path()), before);
}
