//! The repository lock never leaks into a launched child (it is opened close-on-exec). A test
//! binary of its own: a child forked while another test drops and retakes a lock would hold
//! that lock until it execs, and make that test fail (see docs/mutants.md).

mod support;

use npuprof_journal::RepoLock;
use support::repo_with;

#[test]
fn a_launched_child_does_not_inherit_the_lock() {
    let repo = repo_with(&[("a.py", b"a\n")]);
    let lock = RepoLock::acquire(repo.path()).unwrap();
    let out = std::process::Command::new("ls")
        .args(["-l", "/proc/self/fd/"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let fds = String::from_utf8_lossy(&out.stdout);
    assert!(
        !fds.contains(".npuprof/lock"),
        "the child holds the lock:\n{fds}"
    );
    drop(lock);
}
