//! What the CLI's integration tests share: where the workspace is, private copies of the bundled
//! examples, and the file contents of a repository for before/after comparisons.
#![allow(dead_code, reason = "each test binary uses its own subset")]

pub mod server;
pub mod sglang_checkout;
pub mod vllm_checkout;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The workspace root (the examples and the fake torch_npu are relative to it).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A private copy of `examples/<name>` in a new temp directory (its root is the copy).
pub fn copy_example(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_tree(&workspace_root().join("examples").join(name), dir.path());
    dir
}

/// Copies `from` into `to`, leaving out what a run or npuprof leaves behind.
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create dir");
    for entry in fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("dir entry");
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().expect("file type");
        if kind.is_dir() {
            if !is_left_behind(&source) {
                copy_tree(&source, &target);
            }
        } else if kind.is_file() {
            fs::copy(&source, &target).expect("copy file");
        }
    }
}

/// Every regular file under `root` with its bytes, by relative path (only `__pycache__` is
/// left out).
pub fn all_files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    files_where(root, |path| {
        path.file_name().is_some_and(|n| n == "__pycache__")
    })
}

/// The repository's own files with their bytes, by relative path: without the journal, run
/// output (`models/<model>/res*`), inject's output directory, the fake's bad-disk marker and
/// caches — what must be byte-identical before a patch and after its revert.
pub fn source_files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    files_where(root, is_left_behind)
}

/// Whether `path` is something a run or npuprof leaves behind rather than a source file.
fn is_left_behind(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let in_model_dir = path
        .parent()
        .and_then(Path::parent)
        .is_some_and(|models| models.ends_with("models"));
    matches!(
        name.as_ref(),
        "__pycache__"
            | ".npuprof"
            | ".fake_torch_npu_bad_disk"
            | "npuprof_prof"
            | "npuprof_structure"
    ) || (in_model_dir && name.starts_with("res"))
}

fn files_where(root: &Path, skip: fn(&Path) -> bool) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("dir entry").path();
            if skip(&path) {
                continue;
            }
            let meta = fs::symlink_metadata(&path).expect("metadata");
            if meta.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(root).expect("under root").to_path_buf();
                files.insert(rel, fs::read(&path).unwrap_or_default());
            }
        }
    }
    files
}

/// Appends a copy of `create_profiler` (its default `active=3` made `active=7`) to the
/// example's engine: Python uses the last of two top-level definitions.
pub fn append_second_create_profiler(repo: &Path) {
    let path = repo.join("executor/utils/profiler_context.py");
    let text = fs::read_to_string(&path).expect("read");
    let start = text.find("def create_profiler(").expect("the factory");
    let end = start + text[start..].find("\n\n\n").expect("its end");
    let second = text[start..end].replace("active=3", "active=7");
    assert_ne!(second, text[start..end], "the copy differs from the first");
    fs::write(&path, format!("{text}\n\n{second}\n")).expect("write");
}

/// The words a POSIX shell makes of `line` (run as arguments of `printf` in `cwd`): what a
/// program would get if the line were pasted into a shell.
pub fn shell_words(line: &str, cwd: &Path) -> Vec<String> {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("printf '%s\\0' {line}"))
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(output.status.success(), "{line}");
    let mut words: Vec<String> = output
        .stdout
        .split(|b| *b == 0)
        .map(|w| String::from_utf8(w.to_vec()).unwrap())
        .collect();
    words.pop();
    words
}

/// A clone-like copy under `tmp/clone` of what the help examples and the README name:
/// `examples/`, the fake torch_npu and the vendored real runs; `tmp/home` is its private HOME.
pub fn clone_copy(tmp: &Path) -> PathBuf {
    let root = tmp.join("clone");
    for tree in [
        "examples",
        "tests/fake_torch_npu",
        // The fake vLLM server that `collect --engine`'s example starts.
        "tests/fake_vllm",
        "crates/summary/tests/data/real-2rank",
        // The run recorded with module events that `breakdown`'s examples break down.
        "crates/verify/tests/data/runs/msinsight-text-level1",
    ] {
        copy_tree(&workspace_root().join(tree), &root.join(tree));
    }
    fs::create_dir_all(tmp.join("home")).expect("home");
    root
}

/// `sh` in the clone copy `root` (from [`clone_copy`]) as a user's shell: `npuprof` first on
/// PATH, the private HOME beside the copy, no colour. The caller adds `-c` and the script.
pub fn user_shell(root: &Path) -> std::process::Command {
    let bin = insta_cmd::get_cargo_bin("npuprof");
    let bin_dir = bin.parent().expect("the binary's directory");
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    let mut cmd = std::process::Command::new("sh");
    cmd.current_dir(root)
        .env("PATH", path)
        .env("HOME", root.join("../home"))
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("PYTHONPATH");
    cmd
}
