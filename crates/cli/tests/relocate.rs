//! `npuprof relocate` and its revert, on a temp copy of a tiny model directory, with a
//! deterministic mount table (`NPUPROF_MOUNTINFO`) putting the repository on NFS.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

/// A temp repository with `models/tiny/config/run.yaml` and the given `res` files.
struct Fixture {
    repo: tempfile::TempDir,
    local: tempfile::TempDir,
    mountinfo: PathBuf,
}

fn fixture(res_files: &[&str]) -> Fixture {
    let repo = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let model = repo.path().join("models/tiny");
    fs::create_dir_all(model.join("config")).unwrap();
    fs::write(
        model.join("config/run.yaml"),
        "model_config:\n  enable_profiler: True\n",
    )
    .unwrap();
    for rel in res_files {
        let path = model.join("res").join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, format!("{rel}\n")).unwrap();
    }
    // The repository's `models/` and `<local>/nfs` live on NFS; everything else (the local
    // target) on ext4.
    let mountinfo = local.path().join("mountinfo");
    fs::write(
        &mountinfo,
        format!(
            "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
             50 27 0:60 / {} rw,relatime shared:9 - nfs4 storage:/export/models rw,vers=4.1\n\
             51 27 0:61 / {} rw,relatime - nfs4 storage:/export/scratch rw,vers=4.1\n",
            repo.path().canonicalize().unwrap().join("models").display(),
            local.path().canonicalize().unwrap().join("nfs").display()
        ),
    )
    .unwrap();
    Fixture {
        repo,
        local,
        mountinfo,
    }
}

impl Fixture {
    fn target(&self) -> PathBuf {
        self.local.path().canonicalize().unwrap().join("res-local")
    }

    fn npuprof(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(get_cargo_bin("npuprof"));
        cmd.current_dir(self.repo.path())
            .args(args)
            .env("NO_COLOR", "1")
            .env("NPUPROF_MOUNTINFO", &self.mountinfo);
        cmd
    }

    fn relocate(&self, extra: &[&str]) -> Command {
        let target = self.target();
        let mut args = vec![
            "relocate",
            "--model",
            "tiny",
            "--to",
            target.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.npuprof(&args)
    }

    fn filters(&self) -> Vec<(String, &'static str)> {
        let repo = self.repo.path().canonicalize().unwrap();
        let local = self.local.path().canonicalize().unwrap();
        vec![
            (escape(&repo.display().to_string()), "[REPO]"),
            (escape(&local.display().to_string()), "[LOCAL]"),
            (
                r"npuprof-moved-\d{8}T\d{6}Z".to_owned(),
                "npuprof-moved-[TS]",
            ),
            (r"\d+(\.\d)? (B|KiB|MiB|GiB|TiB)".to_owned(), "[SIZE]"),
            (
                r#""free_bytes": \d+"#.to_owned(),
                r#""free_bytes": [BYTES]"#,
            ),
            (r"uid \d+".to_owned(), "uid [UID]"),
            (
                r#""(owner_uid|your_uid)": \d+"#.to_owned(),
                r#""$1": [UID]"#,
            ),
        ]
    }
}

fn escape(text: &str) -> String {
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
    ($fixture:expr, $body:block) => {{
        let filters = $fixture.filters();
        let filters: Vec<(&str, &str)> = filters.iter().map(|(a, b)| (a.as_str(), *b)).collect();
        insta::with_settings!({ filters => filters }, $body)
    }};
}

/// Every path under `root` with its bytes (files), target (symlinks) or nothing (dirs), and mode.
fn tree(root: &Path) -> Vec<(PathBuf, String, u32)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let meta = fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode();
            if meta.is_symlink() {
                out.push((
                    rel,
                    format!("-> {}", fs::read_link(&path).unwrap().display()),
                    0,
                ));
            } else if meta.is_dir() {
                out.push((rel, String::new(), mode));
                stack.push(path);
            } else {
                out.push((rel, fs::read_to_string(&path).unwrap(), mode));
            }
        }
    }
    out.sort();
    out
}

fn check_relocate_then_revert(fixture: &Fixture) {
    let before = tree(fixture.repo.path());
    let output = fixture.relocate(&[]).output().unwrap();
    assert!(
        output.status.success(),
        "relocate failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let res = fixture.repo.path().join("models/tiny/res");
    assert_eq!(fs::read_link(&res).unwrap(), fixture.target());
    assert!(fixture.target().is_dir());
    let output = fixture.npuprof(&["revert"]).output().unwrap();
    assert!(
        output.status.success(),
        "revert failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        tree(fixture.repo.path()),
        before,
        "revert did not restore the layout"
    );
}

#[test]
fn relocate_existing_res_dir_then_revert() {
    let fixture = fixture(&[
        "20261129/tiny_run/log_0.log",
        "20261129/tiny_run/prof/decode/w_1_ascend_pt/profiler_info_0.json",
    ]);
    check_relocate_then_revert(&fixture);
}

#[test]
fn relocate_moves_the_old_output_aside_and_never_deletes_it() {
    let fixture = fixture(&["20261129/tiny_run/log_0.log"]);
    let output = fixture.relocate(&["--json"]).output().unwrap();
    assert!(output.status.success());
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let moved = report["actions"][1]["to"].as_str().unwrap();
    assert_eq!(
        fs::read_to_string(
            fixture
                .repo
                .path()
                .join(moved)
                .join("20261129/tiny_run/log_0.log")
        )
        .unwrap(),
        "20261129/tiny_run/log_0.log\n"
    );
}

#[test]
fn relocate_missing_res_then_revert() {
    let fixture = fixture(&[]);
    check_relocate_then_revert(&fixture);
}

#[test]
fn relocate_res_already_a_symlink_then_revert() {
    let fixture = fixture(&[]);
    let elsewhere = fixture.local.path().join("old-res");
    fs::create_dir_all(elsewhere.join("20261129")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, fixture.repo.path().join("models/tiny/res")).unwrap();
    check_relocate_then_revert(&fixture);
    assert!(
        elsewhere.join("20261129").is_dir(),
        "the old symlink target was touched"
    );
}

#[test]
fn relocate_twice_is_a_no_op() {
    let fixture = fixture(&["a/log_0.log"]);
    assert!(fixture.relocate(&[]).status().unwrap().success());
    let journal = fs::read(fixture.repo.path().join(".npuprof/journal.json")).unwrap();
    let output = fixture.relocate(&["--dry-run"]).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(fixture.relocate(&[]).status().unwrap().success());
    assert_eq!(
        fs::read(fixture.repo.path().join(".npuprof/journal.json")).unwrap(),
        journal
    );
}

#[test]
fn dry_run_changes_nothing_and_exits_1() {
    let fixture = fixture(&["20261129/tiny_run/prof/decode/w_1_ascend_pt/profiler_info_0.json"]);
    let before = tree(fixture.repo.path());
    with_filters!(fixture, {
        assert_cmd_snapshot!("relocate_dry_run", fixture.relocate(&["--dry-run"]));
    });
    assert_eq!(tree(fixture.repo.path()), before);
    assert!(!fixture.target().exists(), "dry run created the target");
}

#[test]
fn preflight_report_json() {
    let fixture = fixture(&["20261129/tiny_run/prof/decode/w_1_ascend_pt/profiler_info_0.json"]);
    with_filters!(fixture, {
        assert_cmd_snapshot!("relocate_json", fixture.relocate(&["--json"]));
    });
}

#[test]
fn a_network_target_is_refused() {
    let fixture = fixture(&["a/log_0.log"]);
    let before = tree(fixture.repo.path());
    let nfs = fixture.local.path().canonicalize().unwrap().join("nfs");
    fs::create_dir(&nfs).unwrap();
    let target = nfs.join("res");
    let output = fixture
        .npuprof(&[
            "relocate",
            "--model",
            "tiny",
            "--to",
            target.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not a safe output location"));
    assert_eq!(tree(fixture.repo.path()), before);
}

/// Runs `npuprof relocate --model tiny --to <to>` from `cwd` and checks it is refused with
/// `reason`, changing nothing in the repository.
fn check_target_refused(fixture: &Fixture, cwd: &Path, to: &Path, reason: &str) {
    let before = tree(fixture.repo.path());
    for extra in [&[][..], &["--dry-run"][..]] {
        let output = fixture
            .npuprof(&["relocate", "--model", "tiny", "--to"])
            .arg(to)
            .args(extra)
            .arg("--repo")
            .arg(fixture.repo.path())
            .current_dir(cwd)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{to:?} {extra:?}: {stderr}");
        assert!(stderr.contains(reason), "{to:?}: {stderr}");
        assert_eq!(
            tree(fixture.repo.path()),
            before,
            "{to:?} changed the repository"
        );
    }
}

#[test]
fn relocate_refuses_the_filesystem_root() {
    let fixture = fixture(&["a/log_0.log"]);
    check_target_refused(
        &fixture,
        fixture.repo.path(),
        Path::new("/"),
        "filesystem root",
    );
}

#[test]
fn relocate_refuses_the_repository_root() {
    let fixture = fixture(&["a/log_0.log"]);
    let repo = fixture.repo.path().canonicalize().unwrap();
    check_target_refused(&fixture, &repo, &repo, "inside the repository");
    check_target_refused(&fixture, &repo, Path::new("."), "inside the repository");
}

#[test]
fn a_relative_to_inside_the_repository_is_refused_and_leaves_no_directory() {
    let fixture = fixture(&["a/log_0.log"]);
    let repo = fixture.repo.path().canonicalize().unwrap();
    check_target_refused(
        &fixture,
        &repo.join("models"),
        Path::new("out"),
        "inside the repository",
    );
    assert!(!repo.join("models/out").exists());
}

#[test]
fn relocate_refuses_the_parent_of_res_and_its_ancestors_outside_the_repository() {
    let fixture = fixture(&["a/log_0.log"]);
    let repo = fixture.repo.path().canonicalize().unwrap();
    // The parent of `res` is inside the repository; moving `res` there would be a cycle too.
    let parent = repo.join("models/tiny");
    check_target_refused(&fixture, &repo, &parent, "inside the repository");
    check_target_refused(&fixture, &parent, Path::new("."), "inside the repository");
    check_target_refused(&fixture, &repo, repo.parent().unwrap(), "a cycle");
}

#[test]
fn relocate_refuses_a_non_empty_target() {
    let fixture = fixture(&["a/log_0.log"]);
    let busy = fixture.local.path().join("busy");
    fs::create_dir(&busy).unwrap();
    fs::write(busy.join("keep.txt"), "other data\n").unwrap();
    check_target_refused(&fixture, fixture.repo.path(), &busy, "non-empty directory");
    assert_eq!(
        fs::read_to_string(busy.join("keep.txt")).unwrap(),
        "other data\n"
    );
}

#[test]
fn relocate_probe_leaves_nothing_behind_even_on_dry_run() {
    let fixture = fixture(&["a/log_0.log"]);
    let res = fixture.repo.path().join("models/tiny/res");
    let before = tree(fixture.repo.path());
    // What a relocate killed mid-probe leaves (a pid that cannot be running).
    fs::write(res.join(".npuprof-probe-4194303"), "").unwrap();
    let output = fixture.relocate(&["--dry-run"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(tree(fixture.repo.path()), before, "a probe file was left");
    assert!(!fixture.repo.path().join(".npuprof").exists());
}

#[test]
fn bad_model_names_are_refused() {
    let fixture = fixture(&[]);
    for model in ["../tiny", "missing", "a/b"] {
        let output = fixture
            .npuprof(&["relocate", "--model", model])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{model}");
    }
}

#[test]
fn symlinks_on_the_way_to_the_target_are_reported_and_resolved() {
    let fixture = fixture(&[]);
    let local = fixture.local.path().canonicalize().unwrap();
    fs::create_dir(local.join("real")).unwrap();
    std::os::unix::fs::symlink(local.join("real"), local.join("link")).unwrap();
    let to = local.join("link/res");
    let output = fixture
        .npuprof(&[
            "relocate",
            "--model",
            "tiny",
            "--to",
            to.to_str().unwrap(),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        report["target"]["symlinks"][0]["path"],
        local.join("link").to_str().unwrap()
    );
    assert_eq!(report["target"]["problems"][0]["code"], "symlink_in_path");
    let res = fixture.repo.path().join("models/tiny/res");
    assert_eq!(fs::read_link(res).unwrap(), local.join("real/res"));
}

/// Runs `npuprof <args>` and checks it succeeded.
fn check_ok(fixture: &Fixture, args: &[&OsStr], context: &str) {
    let output = fixture.npuprof(&[]).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{context}, then {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Relocates with an abort at write step `n`; returns whether the failpoint was reached.
fn relocate_killed_at(fixture: &Fixture, n: u64) -> bool {
    let output = fixture
        .relocate(&[])
        .env("NPUPROF_FAILPOINT", format!("any:{n}"))
        .output()
        .unwrap();
    let finished = output.status.code().is_some();
    assert!(
        !finished || output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    !finished
}

#[test]
fn kill_at_every_write_step_of_relocate_is_finished_by_rerunning_relocate() {
    let files = [
        "20261129/tiny_run/log_0.log",
        "20261129/tiny_run/prof/x.json",
    ];
    for n in 1.. {
        let fixture = fixture(&files);
        let before = tree(fixture.repo.path());
        if !relocate_killed_at(&fixture, n) {
            assert!(n > 5, "only {} write steps seen", n - 1);
            break;
        }
        let context = format!("relocate killed at write step {n}");
        let target = fixture.target();
        let relocate = ["relocate", "--model", "tiny", "--to"].map(OsStr::new);
        check_ok(&fixture, &[OsStr::new("status")], &context);
        check_ok(
            &fixture,
            &[&relocate[..], &[target.as_os_str()]].concat(),
            &context,
        );
        let res = fixture.repo.path().join("models/tiny/res");
        assert_eq!(fs::read_link(&res).unwrap(), target, "{context}");
        check_ok(&fixture, &[OsStr::new("revert")], &context);
        assert_eq!(
            tree(fixture.repo.path()),
            before,
            "{context}: not byte-exact"
        );

        // A revert straight after the kill restores the layout too.
        let fixture = self::fixture(&files);
        assert!(relocate_killed_at(&fixture, n));
        check_ok(&fixture, &[OsStr::new("revert")], &context);
        assert_eq!(tree(fixture.repo.path()), before, "{context}, then revert");
        assert!(!fixture.repo.path().join(".npuprof").exists());
    }
}

#[test]
fn relocate_from_inside_the_model_directory_finds_the_repository() {
    // Like every command that takes --repo: without it, the repository is the nearest
    // directory at or above the current one with the recipes layout (`executor/` and `models/`).
    let fixture = fixture(&["20261129/tiny_run/log_0.log"]);
    fs::create_dir_all(fixture.repo.path().join("executor")).unwrap();
    let model_dir = fixture.repo.path().join("models/tiny");
    let output = fixture
        .relocate(&[])
        .current_dir(&model_dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "relocate from models/tiny failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let res = fixture.repo.path().join("models/tiny/res");
    assert_eq!(fs::read_link(&res).unwrap(), fixture.target());
    let output = fixture
        .npuprof(&["revert"])
        .current_dir(&model_dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "revert from models/tiny failed");
    assert!(fs::symlink_metadata(&res).unwrap().is_dir());
}

/// `relocate --to <dir>` of the fixture's model.
fn relocate_to(fixture: &Fixture, to: &Path) -> Command {
    let mut cmd = fixture.npuprof(&[]);
    cmd.args(["relocate", "--model", "tiny", "--to"]).arg(to);
    cmd
}

fn check_success(cmd: &mut Command, context: &str) -> std::process::Output {
    let output = cmd.output().unwrap();
    assert!(
        output.status.success(),
        "{context}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn relocating_again_to_other_targets_is_unwound_by_one_revert() {
    for force in [false, true] {
        let fixture = fixture(&["20261129/tiny_run/log_0.log"]);
        let before = tree(fixture.repo.path());
        let res = fixture.repo.path().join("models/tiny/res");
        let targets: Vec<PathBuf> = ["first", "second", "third"]
            .iter()
            .map(|name| fixture.local.path().canonicalize().unwrap().join(name))
            .collect();
        for target in &targets {
            let output = check_success(
                relocate_to(&fixture, target).arg("--json"),
                &format!("relocate to {}", target.display()),
            );
            assert_eq!(fs::read_link(&res).unwrap(), *target);
            let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            let kinds: Vec<&str> = report["actions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["action"].as_str().unwrap())
                .collect();
            let expected: &[&str] = if target == &targets[0] {
                &["create_dir", "move_aside", "symlink"]
            } else {
                &["create_dir", "relink"]
            };
            assert_eq!(kinds, expected, "{}", target.display());
        }
        let status = check_success(&mut fixture.npuprof(&["status"]), "status");
        assert!(
            !String::from_utf8_lossy(&status.stdout).contains("CHANGED"),
            "{}",
            String::from_utf8_lossy(&status.stdout)
        );
        let revert: &[&str] = if force {
            &["revert", "--force"]
        } else {
            &["revert"]
        };
        check_success(
            &mut fixture.npuprof(revert),
            "revert after three relocations",
        );
        assert_eq!(
            tree(fixture.repo.path()),
            before,
            "force {force}: not restored"
        );
        assert!(!fixture.repo.path().join(".npuprof").exists());
        for target in &targets {
            assert!(
                target.is_dir(),
                "a target outside the repository was removed"
            );
        }
    }
}

#[test]
fn kill_at_every_write_step_of_a_second_relocation_is_finished_by_rerunning_it() {
    let files = ["20261129/tiny_run/log_0.log"];
    for n in 1.. {
        let fixture = fixture(&files);
        let before = tree(fixture.repo.path());
        let first = fixture.local.path().canonicalize().unwrap().join("first");
        let second = fixture.local.path().canonicalize().unwrap().join("second");
        check_success(&mut relocate_to(&fixture, &first), "first relocation");
        let output = relocate_to(&fixture, &second)
            .env("NPUPROF_FAILPOINT", format!("any:{n}"))
            .output()
            .unwrap();
        if output.status.code().is_some() {
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(n > 3, "only {} write steps seen", n - 1);
            break;
        }
        let context = format!("second relocation killed at write step {n}");
        check_ok(&fixture, &[OsStr::new("status")], &context);
        check_success(&mut relocate_to(&fixture, &second), &context);
        let res = fixture.repo.path().join("models/tiny/res");
        assert_eq!(fs::read_link(&res).unwrap(), second, "{context}");
        check_ok(&fixture, &[OsStr::new("revert")], &context);
        assert_eq!(tree(fixture.repo.path()), before, "{context}: not restored");
    }
}

/// A relocation that is refused after it chose its target leaves no directory behind: a
/// journal it cannot read is refused before anything is made outside the repository, and a
/// write that fails mid-commit (a full disk at the symlink) removes the directories it made.
#[test]
fn a_refused_relocation_leaves_no_target_directory() {
    let fixture = fixture(&["20260101/run.txt"]);
    let deep = fixture.local.path().canonicalize().unwrap().join("new/a/b");
    // A full disk at the symlink: rolled back, the new directories removed again.
    let failed = relocate_to(&fixture, &deep)
        .env("NPUPROF_FAILPOINT", "symlink:1:enospc")
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(2), "{failed:?}");
    assert!(
        !fixture.local.path().join("new").exists(),
        "the target's directories were left"
    );
    assert!(
        fixture
            .repo
            .path()
            .join("models/tiny/res/20260101/run.txt")
            .is_file()
    );
    // A journal that cannot be read: refused before the target is made.
    let journal = fixture.repo.path().join(".npuprof");
    fs::create_dir_all(&journal).unwrap();
    fs::write(journal.join("journal.json"), "{ not json").unwrap();
    let refused = relocate_to(&fixture, &deep).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(
        !fixture.local.path().join("new").exists(),
        "the target's directories were made"
    );
}

/// A `--to` that is a symbolic link loop is said as such, not as "File exists".
#[test]
fn a_target_that_is_a_link_loop_is_named() {
    let fixture = fixture(&["20260101/run.txt"]);
    let local = fixture.local.path().canonicalize().unwrap();
    std::os::unix::fs::symlink(local.join("loop"), local.join("loop")).unwrap();
    let out = relocate_to(&fixture, &local.join("loop")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("File exists"), "{stderr}");
    assert!(
        stderr.contains("loop")
            && (stderr.contains("resolves to no directory") || stderr.contains("symbolic link")),
        "{stderr}"
    );
}
