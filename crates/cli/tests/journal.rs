//! `npuprof revert` / `npuprof status` through the binary (setup writes go through the
//! `npuprof-journal` library), and the process-level guarantees of the journal: a kill at every
//! write step of patch, revert and relocate is finished by re-running the command; two
//! processes at once; the repository root found from a subdirectory.

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};
use npuprof_journal::{self as journal, Transaction};

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
