//! The journaled transaction and `npuprof revert` / `npuprof status`: writes go through
//! `Transaction` (compiled from the CLI's source), undo and inspection through the binary.

#[allow(dead_code, unused_imports)]
#[path = "../src/journal/mod.rs"]
mod journal;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};
use journal::Transaction;

/// A temp repository holding `files` (relative path, bytes).
fn repo_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, bytes) in files {
        let path = dir.path().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }
    dir
}

/// Every file under `root` (except `.npuprof/`), with its bytes and mode, sorted.
fn snapshot_tree(root: &Path) -> Vec<(PathBuf, Vec<u8>, u32)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if rel.starts_with(".npuprof") {
                continue;
            }
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                out.push((rel, Vec::new(), meta.permissions().mode()));
                stack.push(path);
            } else if meta.is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.push((rel, target.into_os_string().into_encoded_bytes(), 0));
            } else {
                out.push((rel, fs::read(&path).unwrap(), meta.permissions().mode()));
            }
        }
    }
    out.sort();
    out
}

/// `npuprof <args>` run inside `repo`.
fn npuprof(repo: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.current_dir(repo).args(args).env("NO_COLOR", "1");
    cmd
}

/// Applies `edits` (path, new bytes) through one transaction.
fn patch(repo: &Path, command: &str, edits: &[(&str, &[u8])]) -> journal::CommitReport {
    let mut tx = Transaction::begin(repo, command).unwrap();
    for (rel, bytes) in edits {
        tx.write_file(Path::new(rel), bytes.to_vec()).unwrap();
    }
    tx.commit().unwrap()
}

/// Runs `npuprof revert` in `repo` and checks it succeeded.
fn check_revert_ok(repo: &Path) {
    let output = npuprof(repo, &["revert"]).output().unwrap();
    assert!(
        output.status.success(),
        "revert failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !repo.join(".npuprof").exists(),
        "journal directory left after revert"
    );
}

/// Filters for machine-specific values in CLI output.
fn filters(repo: &Path) -> Vec<(String, &'static str)> {
    let canonical = repo.canonicalize().unwrap();
    vec![
        (regex_escape(&canonical.display().to_string()), "[TMP]"),
        (regex_escape(&repo.display().to_string()), "[TMP]"),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ".to_owned(), "[TIME]"),
    ]
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_ascii_alphanumeric() || c == '/' {
                vec![c]
            } else {
                vec!['\\', c]
            }
        })
        .collect()
}

macro_rules! with_filters {
    ($repo:expr, $body:block) => {{
        let filters = filters($repo);
        let filters: Vec<(&str, &str)> = filters.iter().map(|(a, b)| (a.as_str(), *b)).collect();
        insta::with_settings!({ filters => filters }, $body)
    }};
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
    let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
    let err = tx
        .create_file(Path::new("mine.py"), b"x".to_vec())
        .unwrap_err();
    assert!(
        err.to_string().contains("npuprof did not create it"),
        "{err}"
    );
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
    // b.txt is replaced by a directory after its temp file is ready: the rename onto it fails
    // after a.txt was already replaced.
    tx.before_apply = Some(|repo| {
        fs::remove_file(repo.join("b.txt")).unwrap();
        fs::create_dir(repo.join("b.txt")).unwrap();
    });
    let err = tx.commit().unwrap_err();
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
    tx.before_apply = Some(|repo| {
        fs::remove_file(repo.join("b.txt")).unwrap();
        fs::create_dir(repo.join("b.txt")).unwrap();
    });
    assert!(tx.commit().is_err());
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

#[test]
fn revert_refuses_files_changed_after_the_patch_and_force_restores() {
    let repo = repo_with(&[("a.py", b"original a\n"), ("b.py", b"original b\n")]);
    patch(
        repo.path(),
        "patch",
        &[("a.py", b"patched a\n"), ("b.py", b"patched b\n")],
    );
    fs::write(repo.path().join("b.py"), b"edited by hand\n").unwrap();
    with_filters!(repo.path(), {
        assert_cmd_snapshot!("revert_refuses_changed", npuprof(repo.path(), &["revert"]));
    });
    assert_eq!(
        fs::read(repo.path().join("a.py")).unwrap(),
        b"patched a\n",
        "refusal changed a file"
    );
    with_filters!(repo.path(), {
        assert_cmd_snapshot!("revert_force", npuprof(repo.path(), &["revert", "--force"]));
    });
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"original a\n");
    assert_eq!(fs::read(repo.path().join("b.py")).unwrap(), b"original b\n");
}

#[test]
fn revert_without_journal_has_nothing_to_do() {
    let repo = repo_with(&[("a.py", b"a\n")]);
    with_filters!(repo.path(), {
        assert_cmd_snapshot!("revert_nothing", npuprof(repo.path(), &["revert"]));
    });
}

#[test]
fn revert_resumes_after_an_interruption() {
    let repo = repo_with(&[("a.py", b"a\n"), ("b.py", b"b\n")]);
    let before = snapshot_tree(repo.path());
    patch(repo.path(), "patch", &[("a.py", b"A\n"), ("b.py", b"B\n")]);
    // As if a revert was stopped after restoring b.py only.
    fs::write(repo.path().join("b.py"), b"b\n").unwrap();
    check_revert_ok(repo.path());
    assert_eq!(snapshot_tree(repo.path()), before);
}

/// Writes `journal` as the repository's journal.
fn corrupt_journal(journal: &str) -> tempfile::TempDir {
    let repo = repo_with(&[
        ("a.py", b"a\n"),
        (".npuprof/journal.json", journal.as_bytes()),
    ]);
    fs::create_dir_all(repo.path().join(".npuprof/originals")).unwrap();
    repo
}

fn check_refused_journal(name: &str, journal: &str, expected: &str) {
    let repo = corrupt_journal(journal);
    let err = Transaction::begin(repo.path(), "patch").unwrap_err();
    assert!(format!("{err:#}").contains(expected), "{name}: {err:#}");
    with_filters!(repo.path(), {
        assert_cmd_snapshot!(name, npuprof(repo.path(), &["revert"]));
    });
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"a\n");
}

#[test]
fn bad_journals_are_refused() {
    let entry = |path: &str| {
        format!(
            r#"{{"version": 1, "entries": [{{"path": "{path}", "command": "patch", "time": "t",
            "kind": "created", "patched_sha256": "{}", "mode": 420}}]}}"#,
            "0".repeat(64)
        )
    };
    check_refused_journal(
        "journal_not_json",
        "{\"version\": 1, \"entries\": [",
        "not valid JSON",
    );
    check_refused_journal(
        "journal_unknown_version",
        r#"{"version": 7, "entries": []}"#,
        "unknown journal version 7",
    );
    check_refused_journal(
        "journal_absolute_path",
        &entry("/etc/passwd"),
        "is absolute",
    );
    check_refused_journal(
        "journal_parent_path",
        &entry("../outside.py"),
        "contains `..`",
    );
    check_refused_journal(
        "journal_missing_original",
        &format!(
            r#"{{"version": 1, "entries": [{{"path": "a.py", "command": "patch", "time": "t",
            "kind": "modified", "original_sha256": "{0}", "patched_sha256": "{0}", "mode": 420}}]}}"#,
            "1".repeat(64)
        ),
        "saved original",
    );
}

#[test]
fn journal_path_resolving_outside_through_a_symlink_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    let repo = corrupt_journal(&format!(
        r#"{{"version": 1, "entries": [{{"path": "escape/x.py", "command": "patch", "time": "t",
        "kind": "created", "patched_sha256": "{}", "mode": 420}}]}}"#,
        "0".repeat(64)
    ));
    std::os::unix::fs::symlink(outside.path(), repo.path().join("escape")).unwrap();
    let err = Transaction::begin(repo.path(), "patch").unwrap_err();
    assert!(
        format!("{err:#}").contains("outside the repository"),
        "{err:#}"
    );
}

#[test]
fn status_lists_changes_and_their_state() {
    let repo = repo_with(&[("a.py", b"a\n"), ("b.py", b"b\n")]);
    with_filters!(repo.path(), {
        assert_cmd_snapshot!("status_clean", npuprof(repo.path(), &["status"]));
    });
    patch(repo.path(), "patch", &[("a.py", b"A\n"), ("b.py", b"B\n")]);
    let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
    tx.create_file(Path::new("harness/h.py"), b"h\n".to_vec())
        .unwrap();
    tx.commit().unwrap();
    fs::write(repo.path().join("b.py"), b"edited\n").unwrap();
    with_filters!(repo.path(), {
        assert_cmd_snapshot!("status_human", npuprof(repo.path(), &["status"]));
        assert_cmd_snapshot!("status_json", npuprof(repo.path(), &["status", "--json"]));
    });
}
