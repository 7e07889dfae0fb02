//! What the journal's tests share: temp repositories, a tree snapshot, and one-call patch and
//! revert.
#![allow(dead_code, reason = "each test binary uses its own subset")]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use npuprof_journal::{CommitReport, RevertOutcome, Transaction};

/// A temp repository holding `files` (relative path, bytes).
pub fn repo_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, bytes) in files {
        let path = dir.path().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }
    dir
}

/// Every path under `root` (except `.npuprof/`), with its bytes (files), target (symlinks)
/// and mode, sorted.
pub fn snapshot_tree(root: &Path) -> Vec<(PathBuf, Vec<u8>, u32)> {
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

/// Applies `edits` (path, new bytes) through one transaction.
pub fn patch(repo: &Path, command: &str, edits: &[(&str, &[u8])]) -> CommitReport {
    let mut tx = Transaction::begin(repo, command).unwrap();
    for (rel, bytes) in edits {
        tx.write_file(Path::new(rel), bytes.to_vec()).unwrap();
    }
    tx.commit().unwrap()
}

/// Reverts `repo` and checks everything was undone and the journal directory removed.
pub fn check_revert_ok(repo: &Path) {
    let outcome = npuprof_journal::revert(repo, false).unwrap();
    assert!(
        matches!(outcome, RevertOutcome::Reverted { .. }),
        "revert did not finish: {outcome:?}"
    );
    assert!(
        !repo.join(".npuprof").exists(),
        "journal directory left after revert"
    );
}

/// A failpoint hook that fails every step named `name` with ENOSPC (a full disk).
pub fn fail_step(
    name: &'static str,
) -> impl FnMut(npuprof_journal::failpoint::Step<'_>) -> std::io::Result<()> {
    move |step| {
        if step.name == name {
            Err(std::io::Error::from_raw_os_error(28))
        } else {
            Ok(())
        }
    }
}
