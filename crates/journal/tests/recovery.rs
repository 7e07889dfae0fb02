//! What the next command finishes after a kill, through the library: an in-place write of a
//! hard-linked file cut off before it wrote (its intent names the original), and a scratch
//! directory noted under the lock whose probe files outlived their process (see
//! docs/mutants.md).

mod support;

use std::fs;
use std::path::Path;

use npuprof_journal::{
    self as journal, RepoLock, RevertOutcome, Transaction, UndoAction, failpoint,
};
use support::{fail_step, patch, repo_with};

#[test]
fn an_in_place_restore_cut_off_is_finished_from_its_intent_by_the_next_revert() {
    let repo = repo_with(&[("a.py", b"original\n")]);
    let link = repo.path().join("alias.py");
    fs::hard_link(repo.path().join("a.py"), &link).unwrap();
    patch(repo.path(), "patch", &[("a.py", b"patched\n")]);
    assert_eq!(
        fs::read(&link).unwrap(),
        b"patched\n",
        "one file, written in place"
    );
    // The revert's in-place write fails before it writes: its intent is left behind.
    let first = failpoint::with_hook(fail_step("write_in_place"), || {
        journal::revert(repo.path(), false)
    });
    assert!(first.is_err(), "{first:?}");
    assert!(repo.path().join(".npuprof/writing.json").exists());
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"patched\n");
    // The next revert finishes that write first (from the intent), so the file is already its
    // original when the journal's entry is undone.
    match journal::revert(repo.path(), false).unwrap() {
        RevertOutcome::Reverted { actions } => {
            let a: Vec<UndoAction> = actions
                .iter()
                .filter(|a| a.path == Path::new("a.py"))
                .map(|a| a.action)
                .collect();
            assert_eq!(a, [UndoAction::AlreadyOriginal]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"original\n");
    assert_eq!(fs::read(&link).unwrap(), b"original\n");
    assert!(!repo.path().join(".npuprof").exists());
}

/// A pid no process has: a child that has exited and been waited for.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn a_noted_scratch_directory_left_by_a_kill_is_cleaned_by_the_next_command() {
    let repo = repo_with(&[("a.py", b"a\n")]);
    let scratch = repo.path().join("models/m/scratch");
    fs::create_dir_all(&scratch).unwrap();
    let stale = scratch.join(format!(".npuprof-probe-{}", dead_pid()));
    let kept = scratch.join("trace.json");
    fs::write(&stale, b"").unwrap();
    fs::write(&kept, b"{}").unwrap();
    // What a killed command leaves: the lock directory and its note of the scratch directory.
    fs::create_dir(repo.path().join(".npuprof")).unwrap();
    fs::write(repo.path().join(".npuprof/scratch"), b"models/m/scratch").unwrap();
    let tx = Transaction::begin(repo.path(), "collect").unwrap();
    assert!(!stale.exists(), "a dead process's probe file is left");
    assert!(kept.exists(), "a file that is no probe is removed");
    assert!(
        !repo.path().join(".npuprof/scratch").exists(),
        "the note is kept"
    );
    drop(tx);
    drop(RepoLock::acquire(repo.path()).unwrap());
    assert!(!repo.path().join(".npuprof").exists());
}
