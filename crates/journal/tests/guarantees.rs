//! Issue 13 "nothing lost, ever": one regression test per case, named after it, through the
//! library (the process-level cases — kills, two processes, subdirectories — are in the CLI's
//! tests).

mod support;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use npuprof_journal::{
    self as journal, JournalError, RestoreCheck, RevertOutcome, State, Transaction, failpoint,
};
use support::{check_revert_ok, patch, repo_with, snapshot_tree};

#[test]
fn user_edit_between_two_patches_is_never_silently_discarded() {
    let repo = repo_with(&[("a.py", b"original\n")]);
    patch(repo.path(), "patch", &[("a.py", b"patched once\n")]);
    fs::write(repo.path().join("a.py"), b"patched once\n# my edit\n").unwrap();
    let mut tx = Transaction::begin(repo.path(), "patch").unwrap();
    tx.write_file(Path::new("a.py"), b"patched twice\n".to_vec())
        .unwrap();
    let err = tx.commit().unwrap_err();
    assert!(
        matches!(err, JournalError::EditedSince { ref path } if path == Path::new("a.py")),
        "{err}"
    );
    assert_eq!(
        fs::read(repo.path().join("a.py")).unwrap(),
        b"patched once\n# my edit\n",
        "the refused patch changed the file"
    );
    // revert refuses too; only --force discards the edit, and says so.
    let outcome = journal::revert(repo.path(), false).unwrap();
    assert!(
        matches!(outcome, RevertOutcome::Refused { .. }),
        "{outcome:?}"
    );
    let outcome = journal::revert(repo.path(), true).unwrap();
    let RevertOutcome::Reverted { actions } = outcome else {
        panic!("forced revert did not revert: {outcome:?}")
    };
    assert!(actions[0].forced);
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"original\n");
}

#[test]
fn deleted_journal_with_saved_originals_is_refused_and_never_records_patched_bytes() {
    let repo = repo_with(&[("a.py", b"original\n")]);
    patch(repo.path(), "patch", &[("a.py", b"patched\n")]);
    fs::remove_file(repo.path().join(".npuprof/journal.json")).unwrap();
    let originals = fs::read_dir(repo.path().join(".npuprof/originals"))
        .unwrap()
        .count();
    let begin = Transaction::begin(repo.path(), "patch").unwrap_err();
    assert!(
        matches!(begin, JournalError::OrphanedOriginals { count: 1, .. }),
        "{begin}"
    );
    assert!(begin.to_string().contains("will not record patched bytes"));
    let revert = journal::revert(repo.path(), false).unwrap_err();
    assert!(
        matches!(revert, JournalError::OrphanedOriginals { .. }),
        "{revert}"
    );
    assert!(matches!(
        journal::status(repo.path()).unwrap_err(),
        JournalError::OrphanedOriginals { .. }
    ));
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"patched\n");
    assert_eq!(
        fs::read_dir(repo.path().join(".npuprof/originals"))
            .unwrap()
            .count(),
        originals,
        "a saved original was removed or added"
    );
}

#[test]
fn hard_links_stay_one_file_through_patch_and_revert() {
    let repo = repo_with(&[("a.py", b"original\n")]);
    let (file, link) = (repo.path().join("a.py"), repo.path().join("alias.py"));
    fs::hard_link(&file, &link).unwrap();
    let inode = fs::metadata(&file).unwrap().ino();
    patch(repo.path(), "patch", &[("a.py", b"patched\n")]);
    assert_eq!(fs::metadata(&file).unwrap().ino(), inode);
    assert_eq!(fs::read(&link).unwrap(), b"patched\n");
    check_revert_ok(repo.path());
    assert_eq!(fs::metadata(&file).unwrap().ino(), inode);
    assert_eq!(fs::read(&link).unwrap(), b"original\n");
}

#[test]
fn modes_are_preserved_by_patch_and_revert() {
    let repo = repo_with(&[("run.sh", b"echo a\n")]);
    let script = repo.path().join("run.sh");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o750)).unwrap();
    patch(repo.path(), "patch", &[("run.sh", b"echo b\n")]);
    assert_eq!(fs::metadata(&script).unwrap().mode() & 0o7777, 0o750);
    check_revert_ok(repo.path());
    assert_eq!(fs::metadata(&script).unwrap().mode() & 0o7777, 0o750);
}

#[test]
fn leftover_temp_files_are_cleaned_by_the_next_command() {
    let repo = repo_with(&[("src/a.py", b"a\n")]);
    patch(repo.path(), "patch", &[("src/a.py", b"A\n")]);
    // What a kill between a temp file's write and its rename leaves.
    for leftover in [
        "src/.npuprof-tmp-999-0",
        ".npuprof/originals/.npuprof-tmp-999-1",
    ] {
        fs::write(repo.path().join(leftover), b"a full copy\n").unwrap();
    }
    let before = snapshot_tree(repo.path());
    check_revert_ok(repo.path());
    assert!(!repo.path().join("src/.npuprof-tmp-999-0").exists());
    assert_eq!(before.len(), snapshot_tree(repo.path()).len() + 1);
}

/// A repository with `sub/a.py` patched, and a directory outside it.
fn swapped_fixture() -> (tempfile::TempDir, tempfile::TempDir) {
    let repo = repo_with(&[("sub/a.py", b"original\n")]);
    patch(repo.path(), "patch", &[("sub/a.py", b"patched\n")]);
    let outside = repo_with(&[("a.py", b"outside\n")]);
    (repo, outside)
}

#[test]
fn directory_swapped_for_a_symlink_mid_revert_writes_nothing_outside() {
    let (repo, outside) = swapped_fixture();
    let outside_before = snapshot_tree(outside.path());
    let (sub, aside, target) = (
        repo.path().join("sub"),
        repo.path().join("sub.real"),
        outside.path().to_path_buf(),
    );
    // After revert checked `sub/a.py`, just before it writes it: `sub` becomes a symlink out.
    let result = failpoint::with_hook(
        move |step| {
            if step.name == "write_temp" && step.path == Path::new("sub/a.py") {
                fs::rename(&sub, &aside)?;
                std::os::unix::fs::symlink(&target, &sub)?;
            }
            Ok(())
        },
        || journal::revert(repo.path(), false),
    );
    assert!(result.is_err(), "revert wrote through the swapped symlink");
    assert_eq!(snapshot_tree(outside.path()), outside_before);
    // Put the directory back: revert resumes and restores.
    fs::remove_file(repo.path().join("sub")).unwrap();
    fs::rename(repo.path().join("sub.real"), repo.path().join("sub")).unwrap();
    check_revert_ok(repo.path());
    assert_eq!(
        fs::read(repo.path().join("sub/a.py")).unwrap(),
        b"original\n"
    );
}

#[test]
fn revert_killed_mid_cleanup_is_finished_by_the_next_revert() {
    let repo = repo_with(&[("a.py", b"a\n")]);
    patch(repo.path(), "patch", &[("a.py", b"A\n")]);
    // Stopped after the journal was retired, before the originals were removed.
    let result = failpoint::with_hook(
        |step| {
            if step.path.starts_with(".npuprof/originals") && step.name == "unlink" {
                return Err(std::io::Error::other("killed"));
            }
            Ok(())
        },
        || journal::revert(repo.path(), false),
    );
    assert!(result.is_err());
    assert!(journal::status(repo.path()).unwrap().is_none());
    let outcome = journal::revert(repo.path(), false).unwrap();
    assert!(
        matches!(outcome, RevertOutcome::NothingToRevert),
        "{outcome:?}"
    );
    assert!(!repo.path().join(".npuprof").exists());
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"a\n");
}

#[test]
fn write_interrupted_before_its_rename_is_not_mistaken_for_a_user_edit() {
    let repo = repo_with(&[("a.py", b"original\n")]);
    patch(repo.path(), "patch", &[("a.py", b"first\n")]);
    let result = failpoint::with_hook(
        |step| {
            if step.name == "rename" && step.path == Path::new("a.py") {
                return Err(std::io::Error::other("killed"));
            }
            Ok(())
        },
        || {
            let mut tx = Transaction::begin(repo.path(), "patch").unwrap();
            tx.write_file(Path::new("a.py"), b"second\n".to_vec())
                .unwrap();
            tx.commit()
        },
    );
    assert!(result.is_err());
    let status = journal::status(repo.path()).unwrap().unwrap();
    assert!(!status[0].is_conflict(), "{status:?}");
    patch(repo.path(), "patch", &[("a.py", b"second\n")]);
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"second\n");
    check_revert_ok(repo.path());
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"original\n");
}

#[test]
fn relocation_interrupted_between_move_and_symlink_is_finished_by_a_rerun() {
    let repo = repo_with(&[("models/m/res/run/log_0.log", b"log\n")]);
    let local = tempfile::tempdir().unwrap();
    let before = snapshot_tree(repo.path());
    let relocate = |to: &str| {
        let mut tx = Transaction::begin(repo.path(), "relocate").unwrap();
        if repo.path().join("models/m/res").is_dir() {
            tx.rename(Path::new("models/m/res"), Path::new(to)).unwrap();
        }
        tx.symlink(Path::new("models/m/res"), local.path()).unwrap();
        tx.commit()
    };
    let killed = failpoint::with_hook(
        |step| match step.name {
            "symlink" => Err(std::io::Error::other("killed")),
            _ => Ok(()),
        },
        || relocate("models/m/res.moved-1"),
    );
    assert!(killed.is_err());
    // Rolled back (an error, not a kill): the moved directory is back.
    assert!(repo.path().join("models/m/res").is_dir());
    relocate("models/m/res.moved-2").unwrap();
    let status = journal::status(repo.path()).unwrap().unwrap();
    assert!(
        status.iter().all(|s| s.state == State::Applied),
        "{status:?}"
    );
    check_revert_ok(repo.path());
    assert_eq!(snapshot_tree(repo.path()), before);
}

#[test]
fn restore_check_lists_files_not_back_to_their_original() {
    let repo = repo_with(&[("a.py", b"a\n"), ("b.py", b"b\n")]);
    let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
    tx.write_file(Path::new("a.py"), b"A\n".to_vec()).unwrap();
    tx.create_file(Path::new("h/new.py"), b"new\n".to_vec())
        .unwrap();
    tx.commit().unwrap();
    let check = RestoreCheck::capture(repo.path()).unwrap().unwrap();
    let mut unrestored = check.unrestored();
    unrestored.sort();
    assert_eq!(
        unrestored,
        [PathBuf::from("a.py"), "h".into(), "h/new.py".into()]
    );
    // The launched command deletes the journal: the check still knows what must be restored.
    fs::remove_dir_all(repo.path().join(".npuprof")).unwrap();
    assert_eq!(check.unrestored().len(), 3);
    fs::write(repo.path().join("a.py"), b"a\n").unwrap();
    fs::remove_dir_all(repo.path().join("h")).unwrap();
    assert!(check.unrestored().is_empty());
}

#[test]
fn the_lock_is_shared_within_one_process_and_removed_when_idle() {
    let repo = repo_with(&[("a.py", b"a\n")]);
    let lock = journal::RepoLock::acquire(repo.path()).unwrap();
    let pid = fs::read_to_string(repo.path().join(".npuprof/lock")).unwrap();
    assert_eq!(pid.trim(), std::process::id().to_string());
    // A transaction in the same process (collect running patch) shares it.
    patch(repo.path(), "patch", &[("a.py", b"A\n")]);
    check_revert_ok_while_locked(repo.path());
    drop(lock);
    assert!(
        !repo.path().join(".npuprof").exists(),
        "idle lock left behind"
    );
}

/// Reverts while the caller holds the lock: everything but the lock itself is gone.
fn check_revert_ok_while_locked(repo: &Path) {
    let outcome = journal::revert(repo, false).unwrap();
    assert!(
        matches!(outcome, RevertOutcome::Reverted { .. }),
        "{outcome:?}"
    );
    assert!(!repo.join(".npuprof/journal.json").exists());
    assert_eq!(fs::read(repo.join("a.py")).unwrap(), b"a\n");
}

#[test]
fn find_root_walks_up_to_the_journal_like_git() {
    let repo = repo_with(&[("deep/er/a.py", b"a\n")]);
    patch(repo.path(), "patch", &[("deep/er/a.py", b"A\n")]);
    let root = journal::find_root(&repo.path().join("deep/er")).unwrap();
    assert_eq!(root, repo.path().canonicalize().unwrap());
    let plain = repo_with(&[]);
    assert_eq!(
        journal::find_root(plain.path()).unwrap(),
        plain.path().canonicalize().unwrap()
    );
}

/// A small tmpfs mounted on a temp directory, unmounted on drop; `None` (the test is skipped)
/// when this process may not mount (not root, or no mount permission in this container).
struct Tmpfs {
    dir: tempfile::TempDir,
}

/// Says on the stderr handle itself (the harness captures `eprintln!`) that a test was skipped.
fn skipped(why: &str) {
    let notice = format!("\n!!!!!!!! SKIPPED the tmpfs disk-full test: {why} !!!!!!!!\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), notice.as_bytes());
}

impl Tmpfs {
    fn mount() -> Option<Self> {
        if !rustix::process::geteuid().is_root() {
            skipped("mounting a tmpfs needs root");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            skipped("`mount -t tmpfs` is not permitted here");
            return None;
        }
        Some(Self { dir })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

/// Writes `path` until the filesystem is full.
fn fill(path: &Path) {
    use std::io::Write;
    let mut file = fs::File::create(path).unwrap();
    let chunk = vec![0u8; 4096];
    while file.write_all(&chunk).is_ok() {}
    let _ = file.write_all(b"x");
}

#[test]
fn disk_full_with_the_old_inode_held_keeps_the_journal_until_revert_can_finish() {
    let Some(tmpfs) = Tmpfs::mount() else { return };
    let repo = tmpfs.dir.path().join("repo");
    fs::create_dir(&repo).unwrap();
    fs::write(repo.join("a.txt"), b"a original\n".repeat(2000)).unwrap();
    fs::write(repo.join("b.txt"), b"b original\n").unwrap();
    let before = snapshot_tree(&repo);
    // An editor (or `tail`, a backup) holds a.txt's inode: replacing it frees nothing.
    let held = fs::File::open(repo.join("a.txt")).unwrap();
    let filler = tmpfs.dir.path().join("filler");
    let mut tx = Transaction::begin(&repo, "patch").unwrap();
    tx.write_file(Path::new("a.txt"), b"a new\n".repeat(2000))
        .unwrap();
    tx.write_file(Path::new("b.txt"), b"b new\n".to_vec())
        .unwrap();
    // The disk fills up once a.txt is replaced: b.txt and the undo of a.txt both hit ENOSPC.
    let fill_at = filler.clone();
    let err = failpoint::with_hook(
        move |step| {
            if step.name == "write_temp" && step.path == Path::new("b.txt") {
                fill(&fill_at);
            }
            Ok(())
        },
        || tx.commit().unwrap_err(),
    );
    let message = format!("{err:#}");
    assert!(message.contains("No space left on device"), "{message}");
    assert!(message.contains("ROLLBACK FAILED"), "{message}");
    assert!(
        message.len() < 1000,
        "the message prints file bytes: {message}"
    );
    assert_eq!(
        fs::read(repo.join("a.txt")).unwrap(),
        b"a new\n".repeat(2000)
    );
    assert!(
        repo.join(".npuprof/journal.json").is_file(),
        "journal deleted"
    );
    // Space is freed: revert finishes the job.
    drop(held);
    fs::remove_file(&filler).unwrap();
    check_revert_ok(&repo);
    assert_eq!(snapshot_tree(&repo), before);
}

/// Replaces `.npuprof/<name>` of a patched repository by `make(path)` and checks that every
/// entry point refuses it as not a regular file, changing nothing.
fn check_own_file_of_the_wrong_type_is_refused(name: &str, what: &str, make: impl Fn(&Path)) {
    let repo = repo_with(&[("a.py", b"original\n")]);
    patch(repo.path(), "patch", &[("a.py", b"patched\n")]);
    let dir = repo.path().join(".npuprof");
    let journal = fs::read(dir.join("journal.json")).unwrap();
    fs::remove_file(dir.join("journal.json")).unwrap();
    make(&dir.join(name));
    let before = snapshot_tree(repo.path());
    let refused = |err: JournalError| {
        let text = err.to_string();
        assert!(
            matches!(err, JournalError::BadJournal { .. })
                && text.contains(&format!("it is {what} instead of a regular file")),
            "{name} as {what}: {text}"
        );
    };
    refused(Transaction::begin(repo.path(), "patch").unwrap_err());
    refused(Transaction::preview(repo.path(), "patch").unwrap_err());
    refused(journal::revert(repo.path(), true).unwrap_err());
    refused(journal::status(repo.path()).unwrap_err());
    assert_eq!(
        snapshot_tree(repo.path()),
        before,
        "{name} as {what}: changed"
    );
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"patched\n");
    // Repaired as the message says: revert works again.
    let path = dir.join(name);
    if path.is_dir() && !path.is_symlink() {
        fs::remove_dir(&path).unwrap();
    } else {
        fs::remove_file(&path).unwrap();
    }
    fs::write(dir.join("journal.json"), journal).unwrap();
    check_revert_ok(repo.path());
}

#[test]
fn a_journal_that_is_not_a_regular_file_is_refused_never_taken_for_none() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("journal.json");
    fs::write(&target, br#"{"version": 1, "entries": []}"#).unwrap();
    for name in ["journal.json", "reverted.json"] {
        check_own_file_of_the_wrong_type_is_refused(name, "a symlink", |p| {
            std::os::unix::fs::symlink(&target, p).unwrap();
        });
        check_own_file_of_the_wrong_type_is_refused(name, "a symlink", |p| {
            std::os::unix::fs::symlink("nowhere", p).unwrap();
        });
        check_own_file_of_the_wrong_type_is_refused(name, "a directory", |p| {
            fs::create_dir(p).unwrap();
        });
        check_own_file_of_the_wrong_type_is_refused(name, "a FIFO, socket or device", |p| {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                p,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o644),
                0,
            )
            .unwrap();
        });
    }
}

#[test]
fn a_lock_that_is_not_npuprofs_own_file_is_refused_and_left_alone() {
    let outside = tempfile::tempdir().unwrap();
    let precious = outside.path().join("precious.txt");
    type Make<'a> = &'a dyn Fn(&Path);
    let cases: [(&str, Make<'_>); 4] = [
        ("another hard link", &|lock| {
            fs::write(&precious, b"precious\n").unwrap();
            fs::hard_link(&precious, lock).unwrap();
        }),
        ("not a regular file", &|lock| {
            std::os::unix::fs::symlink(&precious, lock).unwrap();
        }),
        ("not a regular file", &|lock| fs::create_dir(lock).unwrap()),
        ("not a regular file", &|lock| {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                lock,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o644),
                0,
            )
            .unwrap();
        }),
    ];
    for (problem, make) in cases {
        let repo = repo_with(&[("a.py", b"a\n")]);
        fs::create_dir(repo.path().join(".npuprof")).unwrap();
        make(&repo.path().join(".npuprof/lock"));
        let before = snapshot_tree(repo.path());
        let err = Transaction::begin(repo.path(), "patch").unwrap_err();
        assert!(
            matches!(err, JournalError::Refused(_)) && err.to_string().contains(problem),
            "{problem}: {err}"
        );
        assert!(journal::revert(repo.path(), false).is_err(), "{problem}");
        assert_eq!(snapshot_tree(repo.path()), before, "{problem}");
        if precious.exists() {
            assert_eq!(fs::read(&precious).unwrap(), b"precious\n", "{problem}");
        }
    }
}
