//! The repository lock's decisions, in one process: a lock held through another open file is
//! refused with its holder's pid, a free one is claimed (our pid, the `.gitignore`), one lock per
//! repository is shared however often it is taken and dropped, a failure to make the journal
//! directory is reported as such, and a scratch directory noted under the lock is forgotten when
//! its note is dropped (see docs/mutants.md).

mod support;

use std::fs;
use std::path::Path;

use npuprof_journal::{self as journal, JournalError, RepoLock, Transaction, failpoint};
use support::{fail_step, repo_with};

fn lock_path(repo: &Path) -> std::path::PathBuf {
    repo.join(".npuprof/lock")
}

#[test]
fn a_lock_held_through_another_open_file_is_refused_with_its_holders_pid() {
    let repo = repo_with(&[("a.py", b"a\n")]);
    fs::create_dir(repo.path().join(".npuprof")).unwrap();
    let path = lock_path(repo.path());
    fs::write(&path, b"4242\n").unwrap();
    let holder = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    holder.try_lock().unwrap();
    let locked = |err: JournalError| match err {
        JournalError::Locked { pid } => pid,
        other => panic!("not a lock conflict: {other}"),
    };
    assert_eq!(
        locked(Transaction::begin(repo.path(), "patch").unwrap_err()),
        "4242"
    );
    assert_eq!(locked(RepoLock::acquire(repo.path()).unwrap_err()), "4242");
    assert_eq!(
        fs::read(&path).unwrap(),
        b"4242\n",
        "the holder's pid is left"
    );
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"a\n");
    // A holder that has not written its pid yet.
    fs::write(&path, b"").unwrap();
    assert_eq!(
        locked(RepoLock::acquire(repo.path()).unwrap_err()),
        "unknown"
    );
    // Released: ours, with our pid and the directory's .gitignore.
    drop(holder);
    let lock = RepoLock::acquire(repo.path()).unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        format!("{}\n", std::process::id())
    );
    assert_eq!(
        fs::read(repo.path().join(".npuprof/.gitignore")).unwrap(),
        b"*\n"
    );
    drop(lock);
}

#[test]
fn a_gitignore_already_there_is_kept() {
    let repo = repo_with(&[("a.py", b"a\n"), (".npuprof/.gitignore", b"* # mine\n")]);
    let lock = RepoLock::acquire(repo.path()).unwrap();
    assert_eq!(
        fs::read(repo.path().join(".npuprof/.gitignore")).unwrap(),
        b"* # mine\n"
    );
    drop(lock);
}

#[test]
fn the_lock_is_shared_after_an_earlier_one_was_dropped() {
    let repo = repo_with(&[("a.py", b"a\n")]);
    drop(RepoLock::acquire(repo.path()).unwrap());
    let first = RepoLock::acquire(repo.path()).unwrap();
    // The dropped lock's entry must not hide the live one: this is the same lock, not a second
    // open file that would conflict with the first.
    let second = RepoLock::acquire(repo.path()).unwrap();
    let mut tx = Transaction::begin(repo.path(), "patch").unwrap();
    tx.write_file(Path::new("a.py"), b"A\n".to_vec()).unwrap();
    tx.commit().unwrap();
    drop((first, second));
    assert!(matches!(
        journal::revert(repo.path(), false).unwrap(),
        journal::RevertOutcome::Reverted { .. }
    ));
}

#[test]
fn a_journal_directory_that_cannot_be_made_is_reported_as_such() {
    let repo = repo_with(&[("a.py", b"a\n")]);
    let err = failpoint::with_hook(fail_step("mkdir"), || {
        RepoLock::acquire(repo.path()).unwrap_err()
    });
    match err {
        JournalError::Io { action, path, .. } => {
            assert_eq!(action, "create");
            assert!(path.ends_with(".npuprof"), "{}", path.display());
        }
        other => panic!("{other}"),
    }
    assert!(!repo.path().join(".npuprof").exists());
}

#[test]
fn a_scratch_directory_noted_under_the_lock_is_forgotten_with_its_note() {
    let repo = repo_with(&[("a.py", b"a\n")]);
    let lock = RepoLock::acquire(repo.path()).unwrap();
    let root = lock.repo_path().to_path_buf();
    let note = lock
        .note_scratch(&root.join("models/m/.npuprof-scratch"))
        .unwrap()
        .expect("a directory in the repository is noted");
    let scratch = repo.path().join(".npuprof/scratch");
    assert_eq!(fs::read(&scratch).unwrap(), b"models/m/.npuprof-scratch");
    drop(note);
    assert!(!scratch.exists(), "the note outlives its scratch directory");
    let outside = tempfile::tempdir().unwrap();
    assert!(lock.note_scratch(outside.path()).unwrap().is_none());
    assert!(!scratch.exists());
    drop(lock);
}
