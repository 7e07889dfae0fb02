//! `npuprof revert` / `npuprof status` through the binary (setup writes go through the
//! `npuprof-journal` library), and the process-level guarantees of the journal: a kill at every
//! write step of patch, inject and revert is finished by re-running the command (relocate's in
//! relocate.rs); two processes at once; the repository root found from a subdirectory; a run
//! config past tree-sitter-yaml's row limit.

mod support;

use std::fs;
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
    let before = check_files(repo.path());
    patch(repo.path(), "patch", &[("a.py", b"A\n"), ("b.py", b"B\n")]);
    // As if a revert was stopped after restoring b.py only.
    fs::write(repo.path().join("b.py"), b"b\n").unwrap();
    check_revert_ok(repo.path());
    check_same(&check_files(repo.path()), &before, "revert resumed");
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

// ---- Process-level guarantees (issue 13) ----

const PATCH_ARGS: [&str; 7] = [
    "patch",
    "--model",
    "deepseek-mini",
    "--yaml",
    "decode_mtp.yaml",
    "--decode-active",
    "30",
];

/// Runs `npuprof <args>` in `repo`, aborting at the `n`-th write step when `n` is given;
/// returns whether it was killed by the failpoint.
fn run_killed_at(repo: &Path, args: &[&str], n: Option<u64>) -> bool {
    let mut cmd = npuprof(repo, args);
    if let Some(n) = n {
        cmd.env(journal::failpoint::FAILPOINT_ENV, format!("any:{n}"));
    }
    let output = cmd.output().unwrap();
    if output.status.code().is_none() {
        return true;
    }
    assert!(
        output.status.success(),
        "`npuprof {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    false
}

type Files = std::collections::BTreeMap<PathBuf, Vec<u8>>;

/// Every file of `root` outside `.npuprof/` with its bytes, after checking that no npuprof
/// temp or probe file is left anywhere (`.npuprof/` included).
fn check_files(root: &Path) -> Files {
    let mut files = support::all_files(root);
    let stray: Vec<&PathBuf> = files
        .keys()
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with(".npuprof-tmp-") || name.starts_with(".npuprof-probe-")
        })
        .collect();
    assert!(stray.is_empty(), "left behind: {stray:?}");
    files.retain(|path, _| !path.starts_with(".npuprof"));
    files
}

/// Asserts `actual == expected`, naming the paths that differ.
fn check_same(actual: &Files, expected: &Files, context: &str) {
    let differing: Vec<&PathBuf> = actual
        .keys()
        .chain(expected.keys())
        .filter(|path| actual.get(*path) != expected.get(*path))
        .collect();
    assert!(
        differing.is_empty(),
        "{context}: these differ: {differing:?}"
    );
}

/// Kills `command` at its 1st, 2nd, ... write step (each time in a fresh copy of `example`
/// prepared by `setup`), checks that `status` still works, then that re-running `command` ends
/// in `expected` and that a final revert gives back `pristine`. Returns how many kill points
/// were checked.
fn check_every_kill_point(
    example: &str,
    setup: impl Fn(&Path),
    command: &[&str],
    expected: &Files,
    pristine: &Files,
) -> u64 {
    for n in 1.. {
        let repo = support::copy_example(example);
        setup(repo.path());
        if !run_killed_at(repo.path(), command, Some(n)) {
            return n - 1;
        }
        run_killed_at(repo.path(), &["status"], None);
        run_killed_at(repo.path(), command, None);
        let context = format!(
            "killed at write step {n}, then `{}` again",
            command.join(" ")
        );
        check_same(&check_files(repo.path()), expected, &context);
        run_killed_at(repo.path(), &["revert"], None);
        check_same(
            &check_files(repo.path()),
            pristine,
            &format!("{context}, then revert"),
        );
        assert!(
            !repo.path().join(".npuprof").exists(),
            "{context}: journal left"
        );
    }
    unreachable!()
}

#[test]
fn kill_at_every_write_step_of_patch_is_finished_by_rerunning_patch() {
    let reference = support::copy_example("recipes-mini");
    let pristine = check_files(reference.path());
    run_killed_at(reference.path(), &PATCH_ARGS, None);
    let patched = check_files(reference.path());
    assert_ne!(patched, pristine);
    let points = check_every_kill_point("recipes-mini", |_| {}, &PATCH_ARGS, &patched, &pristine);
    assert!(points >= 8, "only {points} write steps seen");
}

#[test]
fn kill_at_every_write_step_of_patch_keeps_hard_links_and_ends_byte_exact() {
    // A second name for the file patch rewrites: written in place, under an intent record.
    let link = |repo: &Path| {
        let utils = repo.join("executor/utils");
        fs::hard_link(utils.join("profiler_context.py"), utils.join("alias.py")).unwrap();
    };
    let reference = support::copy_example("recipes-mini");
    link(reference.path());
    let pristine = check_files(reference.path());
    run_killed_at(reference.path(), &PATCH_ARGS, None);
    let patched = check_files(reference.path());
    let alias = Path::new("executor/utils/alias.py");
    assert_ne!(patched[alias], pristine[alias], "the hard link was split");
    check_every_kill_point("recipes-mini", link, &PATCH_ARGS, &patched, &pristine);
}

#[test]
fn kill_at_every_write_step_of_revert_never_wedges_the_repository() {
    let pristine = check_files(support::copy_example("recipes-mini").path());
    let patch = |repo: &Path| {
        run_killed_at(repo, &PATCH_ARGS, None);
    };
    let points = check_every_kill_point("recipes-mini", patch, &["revert"], &pristine, &pristine);
    assert!(points >= 5, "only {points} write steps seen");
    // patch, too, works after a revert killed at any point.
    for n in 1..=points {
        let repo = support::copy_example("recipes-mini");
        patch(repo.path());
        let patched = check_files(repo.path());
        assert!(run_killed_at(repo.path(), &["revert"], Some(n)));
        run_killed_at(repo.path(), &PATCH_ARGS, None);
        check_same(
            &check_files(repo.path()),
            &patched,
            &format!("revert killed at {n}, then patch"),
        );
    }
}

const INJECT_ARGS: [&str; 7] = [
    "inject",
    "--entry",
    "infer.py",
    "--phase",
    "separate",
    "--decode-steps", // the older name of --decode-active, kept as a hidden alias
    "4",
];

#[test]
fn kill_at_every_write_step_of_inject_is_finished_by_rerunning_inject() {
    let reference = support::copy_example("plain-infer");
    let pristine = check_files(reference.path());
    run_killed_at(reference.path(), &INJECT_ARGS, None);
    let injected = check_files(reference.path());
    assert!(injected.contains_key(Path::new("infer_profiled.py")));
    let points = check_every_kill_point("plain-infer", |_| {}, &INJECT_ARGS, &injected, &pristine);
    assert!(points >= 6, "only {points} write steps seen");
}

#[test]
fn kill_at_every_write_step_of_the_revert_of_inject_is_finished_by_rerunning_revert() {
    let pristine = check_files(support::copy_example("plain-infer").path());
    let inject = |repo: &Path| {
        run_killed_at(repo, &INJECT_ARGS, None);
    };
    let points = check_every_kill_point("plain-infer", inject, &["revert"], &pristine, &pristine);
    assert!(points >= 6, "only {points} write steps seen");
    // inject, too, works after a revert killed at any point.
    for n in 1..=points {
        let repo = support::copy_example("plain-infer");
        inject(repo.path());
        let injected = check_files(repo.path());
        assert!(run_killed_at(repo.path(), &["revert"], Some(n)));
        run_killed_at(repo.path(), &INJECT_ARGS, None);
        check_same(
            &check_files(repo.path()),
            &injected,
            &format!("revert of inject killed at {n}, then inject"),
        );
    }
}

/// A second npuprof is refused while one holds the lock; under `--json` with the `refused`
/// error document (a mutation that changed that code survived every suite before this check).
#[test]
fn a_second_npuprof_is_refused_while_one_works_here() {
    let repo = support::copy_example("recipes-mini");
    let before = check_files(repo.path());
    let lock = journal::RepoLock::acquire(repo.path()).unwrap();
    let collect = [
        "collect",
        "--model",
        "deepseek-mini",
        "--yaml",
        "decode_mtp.yaml",
    ];
    let relocate = ["relocate", "--model", "deepseek-mini"];
    for args in [&PATCH_ARGS[..], &["revert"], &relocate, &collect] {
        let output = npuprof(repo.path(), args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "another npuprof is working here (pid {})",
                std::process::id()
            )),
            "{args:?}: {stderr}"
        );
        // Under `--json`: the error document's `refused` code with its hint.
        let args = [args, &["--json"]].concat();
        let output = npuprof(repo.path(), &args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let document: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: stdout is no JSON document: {e}"));
        let error = &document["error"];
        assert_eq!(error["code"], "refused", "{args:?}: {document}");
        assert!(
            error["hint"]
                .as_str()
                .is_some_and(|h| h.contains("another npuprof is changing this repository")),
            "{args:?}: {document}"
        );
    }
    drop(lock);
    assert_eq!(check_files(repo.path()), before);
}

#[test]
fn two_patches_at_once_keep_journal_and_files_in_step() {
    let repo = support::copy_example("recipes-mini");
    let pristine = check_files(repo.path());
    let other = ["--decode-active", "12"];
    for round in 0..8 {
        let mut first = npuprof(repo.path(), &PATCH_ARGS);
        let mut second = npuprof(repo.path(), &PATCH_ARGS[..5]);
        second.args(other);
        for cmd in [&mut first, &mut second] {
            cmd.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
        }
        let (a, b) = (first.spawn().unwrap(), second.spawn().unwrap());
        let outputs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
        for output in &outputs {
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                output.status.success() || stderr.contains("another npuprof is working here"),
                "round {round}: {stderr}"
            );
        }
        let status = journal::status(repo.path()).unwrap().unwrap();
        assert!(
            status.iter().all(|s| s.matches_post_patch),
            "round {round}: journal and files disagree: {status:?}"
        );
    }
    run_killed_at(repo.path(), &["revert"], None);
    assert_eq!(check_files(repo.path()), pristine);
}

#[test]
fn revert_and_status_from_a_subdirectory_find_the_repository_root() {
    let repo = support::copy_example("recipes-mini");
    let pristine = check_files(repo.path());
    run_killed_at(repo.path(), &PATCH_ARGS, None);
    let sub = repo.path().join("models/deepseek-mini");
    let status = npuprof(&sub, &["status", "--json"]).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(
        report["patched"], true,
        "status from a subdirectory missed the patch"
    );
    run_killed_at(&sub, &["revert"], None);
    assert_eq!(check_files(repo.path()), pristine);
}

#[test]
fn a_run_config_of_more_than_32767_lines_is_patched_and_reverted_byte_exact() {
    let repo = support::copy_example("recipes-mini");
    let config = repo
        .path()
        .join("models/deepseek-mini/config/decode_mtp.yaml");
    let pad =
        |side: &str| -> String { (0..16_400).map(|i| format!("{side}_{i}: {i}\n")).collect() };
    let original = fs::read_to_string(&config).unwrap();
    fs::write(
        &config,
        format!("{}{original}{}", pad("before"), pad("after")),
    )
    .unwrap();
    let pristine = check_files(repo.path());
    let old = fs::read_to_string(&config).unwrap();
    assert!(old.lines().count() > 32_767);

    run_killed_at(repo.path(), &PATCH_ARGS, None);
    let new = fs::read_to_string(&config).unwrap();
    let changed: Vec<(&str, &str)> = old
        .lines()
        .zip(new.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(old.lines().count(), new.lines().count());
    assert_eq!(
        changed
            .iter()
            .map(|(_, b)| b.split('#').next().unwrap().trim())
            .collect::<Vec<_>>(),
        ["enable_profiler: True", "max_new_tokens: 34"],
        "{changed:?}"
    );
    check_revert_ok(repo.path());
    assert_eq!(check_files(repo.path()), pristine);
}

/// Runs every command at once in `repo`; each must succeed or be refused by the lock.
fn run_at_once(repo: &Path, commands: &[Vec<String>], round: usize) {
    let children: Vec<_> = commands
        .iter()
        .map(|args| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            npuprof(repo, &args)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (child, args) in children.into_iter().zip(commands) {
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success() || stderr.contains("another npuprof is working here"),
            "round {round}, {args:?}: {stderr}"
        );
    }
}

#[test]
fn patch_and_relocate_at_once_keep_every_entry_and_revert_restores_res() {
    let repo = support::copy_example("recipes-mini");
    let outside = tempfile::tempdir().unwrap();
    let pristine = check_files(repo.path());
    let res = repo.path().join("models/deepseek-mini/res");
    for round in 0..6 {
        let target = outside.path().join(format!("res{round}"));
        let relocate: Vec<String> = ["relocate", "--model", "deepseek-mini", "--to"]
            .iter()
            .map(|s| s.to_string())
            .chain([target.display().to_string()])
            .collect();
        let patch: Vec<String> = PATCH_ARGS.iter().map(|s| s.to_string()).collect();
        run_at_once(repo.path(), &[patch, relocate], round);
        let status = journal::status(repo.path()).unwrap().unwrap();
        assert!(
            status.iter().all(|s| s.matches_post_patch),
            "round {round}: journal and files disagree: {status:?}"
        );
        let symlinked = fs::symlink_metadata(&res).is_ok_and(|m| m.file_type().is_symlink());
        let recorded = status
            .iter()
            .any(|s| s.path == Path::new("models/deepseek-mini/res"));
        assert_eq!(
            symlinked, recorded,
            "round {round}: relocation entry lost: {status:?}"
        );
        check_revert_ok(repo.path());
        assert!(
            !res.exists() && fs::symlink_metadata(&res).is_err(),
            "round {round}: res left"
        );
        assert_eq!(check_files(repo.path()), pristine, "round {round}");
    }
}

/// `patch` on a full disk at its n-th temp file, with the rollback failing too
/// (`NPUPROF_FAILPOINT` effects): every failed rollback keeps the journal and its originals and
/// says how to finish; `revert` then restores the pristine files.
#[test]
fn a_failed_rollback_of_patch_keeps_the_journal_for_revert() {
    let reference = support::copy_example("recipes-mini");
    let pristine = check_files(reference.path());
    let mut kept = 0;
    for n in 1.. {
        let repo = support::copy_example("recipes-mini");
        let output = npuprof(repo.path(), &PATCH_ARGS)
            .env(
                journal::failpoint::FAILPOINT_ENV,
                format!("write_temp:{n}:enospc,rollback:1:enospc"),
            )
            .output()
            .unwrap();
        if output.status.success() {
            break;
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "write {n}: {stderr}");
        assert!(
            stderr.contains("No space left on device"),
            "write {n}: {stderr}"
        );
        assert!(
            !stderr.contains(", 10, "),
            "write {n}: a file printed as bytes: {stderr}"
        );
        if stderr.contains("ROLLBACK FAILED") {
            kept += 1;
            assert!(stderr.contains("npuprof revert"), "write {n}: {stderr}");
            assert!(
                repo.path().join(".npuprof/journal.json").is_file(),
                "write {n}: the journal was deleted by a failed rollback"
            );
            check_revert_ok(repo.path());
        }
        check_same(
            &check_files(repo.path()),
            &pristine,
            &format!("write {n} failed on a full disk, rollback failed, then revert"),
        );
        assert!(
            !repo.path().join(".npuprof").exists(),
            "write {n}: journal left"
        );
    }
    assert!(kept > 0, "no write step left a failed rollback behind");
}

/// A set `NPUPROF_FAILPOINT` is said on stderr by every build (it breaks writes on purpose),
/// with the specs it ignores; an unset or empty one says nothing.
#[test]
fn an_armed_failpoint_is_said_on_stderr() {
    let run = |value: Option<&str>| {
        let mut cmd = Command::new(get_cargo_bin("npuprof"));
        cmd.args(["status", "--json"])
            .env_remove("NPUPROF_FAILPOINT");
        if let Some(value) = value {
            cmd.env("NPUPROF_FAILPOINT", value);
        }
        let out = cmd.output().expect("run");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let said = run(Some("rename:2:enospc,nonsense"));
    assert!(
        said.contains("npuprof: warning: NPUPROF_FAILPOINT=rename:2:enospc,nonsense is set")
            && said.contains("at rename:2:enospc")
            && said.contains("(ignored, not `<step>:<n>[:abort|enospc]`: nonsense)"),
        "{said}"
    );
    assert!(!run(None).contains("NPUPROF_FAILPOINT"));
    assert!(!run(Some("")).contains("NPUPROF_FAILPOINT"));
}
