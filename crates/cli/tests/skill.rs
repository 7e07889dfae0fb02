//! `npuprof skill`: the agent skill's front matter, every command it shows run for real against
//! the bundled examples (under the fake torch_npu), and `--install` through the journal.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use insta_cmd::get_cargo_bin;
use serde_json::Value;

mod support;
use support::{copy_example, source_files, workspace_root};

/// Where `--install` writes the skill.
const INSTALLED: &str = ".agents/skills/npuprof/SKILL.md";

/// `npuprof <args>` run in `dir`, without colour.
fn npuprof(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.current_dir(dir).env("NO_COLOR", "1").args(args);
    cmd
}

fn skill_text() -> String {
    let output = npuprof(&workspace_root(), &["skill"])
        .output()
        .expect("run npuprof skill");
    assert_eq!(output.status.code(), Some(0));
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// The front matter: the skill's name, and a description that names the situations it is for.
#[test]
fn front_matter_names_the_trigger_situations() {
    let text = skill_text();
    let front = text
        .strip_prefix("---\n")
        .and_then(|rest| rest.split_once("\n---\n"))
        .map(|(front, _)| front)
        .expect("a front matter block between `---` lines");
    assert!(front.lines().any(|l| l == "name: npuprof"), "{front}");
    let description = front
        .split_once("description:")
        .map(|(_, d)| {
            d.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        })
        .expect("a description");
    for trigger in [
        "collect",
        "profile",
        "parser failed",
        "truncated",
        "trace_view.json",
    ] {
        assert!(
            description.contains(trigger),
            "the description must mention `{trigger}`"
        );
    }
}

/// One example repository the skill's commands run in, and the values of its placeholders.
struct Example {
    name: &'static str,
    placeholders: &'static [(&'static str, &'static str)],
}

/// Path A: the cann-recipes style example.
const RECIPES: Example = Example {
    name: "recipes-mini",
    placeholders: &[
        ("<MODEL>", "deepseek-mini"),
        ("<CONFIG>", "decode_mtp.yaml"),
        ("<PHASE>", "both"),
        ("<STEPS>", "10"),
        ("<PROFILE_DIR>", "models/deepseek-mini/res"),
    ],
};

/// Path B: the plain inference script.
const PLAIN: Example = Example {
    name: "plain-infer",
    placeholders: &[
        ("<ENTRY>", "infer.py"),
        ("<HARNESS>", "infer_profiled.py"),
        ("<PHASE>", "both"),
        ("<STEPS>", "10"),
    ],
};

/// A command line of the skill, with the section it is in.
struct Shown {
    section: String,
    line: String,
}

/// Every line of every ```sh block, in order, with its `## ` section.
fn shown_commands(skill: &str) -> Vec<Shown> {
    let mut section = String::new();
    let mut in_block = false;
    let mut shown = Vec::new();
    for line in skill.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            section = heading.to_owned();
        } else if line.starts_with("```") {
            in_block = !in_block && line == "```sh";
        } else if in_block && !line.trim().is_empty() {
            shown.push(Shown {
                section: section.clone(),
                line: line.to_owned(),
            });
        }
    }
    shown
}

/// The example a section's commands run in: path B's section in the plain script, the rest in
/// the recipes repository.
fn example_for(section: &str) -> &'static Example {
    if section.contains("Path B") {
        &PLAIN
    } else {
        &RECIPES
    }
}

fn substitute(line: &str, example: &Example) -> String {
    let line = example
        .placeholders
        .iter()
        .fold(line.to_owned(), |line, (name, value)| {
            line.replace(name, value)
        });
    assert!(
        !line.contains('<'),
        "`{line}` has a placeholder with no value for {}",
        example.name
    );
    line
}

/// Runs one shown line with `bash -c` in `repo`, the binary under test first on PATH.
fn run_line(line: &str, repo: &Path, tmp: &Path) -> Output {
    let bin_dir = get_cargo_bin("npuprof")
        .parent()
        .expect("bin dir")
        .to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    Command::new("bash")
        .args(["-c", line])
        .current_dir(repo)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env("TMPDIR", tmp)
        .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run bash")
}

/// Checks an npuprof line ended with a documented code other than 2 and, under `--json`,
/// printed one JSON document with `schema_version`; any other line must succeed.
fn check_shown(line: &str, output: &Output) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output.status.code();
    if !line.starts_with("npuprof ") {
        assert_eq!(code, Some(0), "`{line}` failed:\n{stderr}");
        return;
    }
    assert!(
        matches!(code, Some(0 | 1)),
        "`{line}` exited {code:?} (want 0 or 1):\n{stderr}"
    );
    if line.split_whitespace().any(|word| word == "--json") {
        let document: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|err| panic!("`{line}`: stdout is not JSON ({err})"));
        assert!(
            document["schema_version"].as_u64().is_some_and(|v| v >= 1),
            "`{line}`: no schema_version"
        );
    }
}

/// Every command the skill shows, in the order shown, on copies of the bundled examples; the
/// examples' sources are as they were at the end (the skill ends each path with a revert).
#[test]
fn every_shown_command_runs_against_the_examples() {
    let shown = shown_commands(&skill_text());
    assert!(
        shown.len() >= 10,
        "only {} command lines found",
        shown.len()
    );
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut repos: BTreeMap<&str, (tempfile::TempDir, BTreeMap<PathBuf, Vec<u8>>)> =
        BTreeMap::new();
    for Shown { section, line } in &shown {
        let example = example_for(section);
        let (repo, _) = repos.entry(example.name).or_insert_with(|| {
            let repo = copy_example(example.name);
            let before = source_files(repo.path());
            (repo, before)
        });
        let line = substitute(line, example);
        let output = run_line(&line, repo.path(), tmp.path());
        check_shown(&line, &output);
    }
    assert_eq!(repos.len(), 2, "both paths must be shown");
    for (name, (repo, before)) in &repos {
        let mut after = source_files(repo.path());
        // Path B's run leaves the harness's output; the harness itself was reverted.
        after.retain(|path, _| !path.starts_with("npuprof_prof"));
        assert_eq!(&after, before, "{name}: the sources changed");
        assert!(
            !repo.path().join(".npuprof").exists(),
            "{name}: journal left"
        );
    }
}

/// `--install` writes the skill through the journal: status lists it, installing again changes
/// nothing, and revert removes it with the directories it created.
#[test]
fn install_is_journaled_and_reverted() {
    let repo = copy_example("recipes-mini");
    let before = support::all_files(repo.path());
    let install = npuprof(repo.path(), &["skill", "--install"])
        .output()
        .expect("install");
    assert_eq!(install.status.code(), Some(0), "{install:?}");
    let installed = fs::read_to_string(repo.path().join(INSTALLED)).expect("installed skill");
    assert_eq!(installed, skill_text());

    let status = npuprof(repo.path(), &["status", "--json"])
        .output()
        .expect("status");
    let status: Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    let created: Vec<&str> = status["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["kind"] == "created")
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert_eq!(created, [INSTALLED]);

    let again = npuprof(repo.path(), &["skill", "--install", "--repo", "."])
        .output()
        .expect("install again");
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already installed"));

    let revert = npuprof(repo.path(), &["revert"]).output().expect("revert");
    assert_eq!(revert.status.code(), Some(0), "{revert:?}");
    assert!(!repo.path().join(".agents").exists(), ".agents left behind");
    let mut after = support::all_files(repo.path());
    after.retain(|path, _| !path.starts_with(".npuprof"));
    assert_eq!(after, before);
}

/// A SKILL.md the user wrote is never overwritten.
#[test]
fn install_refuses_a_file_it_did_not_create() {
    let repo = copy_example("recipes-mini");
    let target = repo.path().join(INSTALLED);
    fs::create_dir_all(target.parent().expect("parent")).expect("create dir");
    fs::write(&target, "mine\n").expect("write");
    let output = npuprof(repo.path(), &["skill", "--install"])
        .output()
        .expect("install");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(fs::read_to_string(&target).expect("read"), "mine\n");
}

/// `--install` into a directory that does not exist, or into a file, is an error that names it
/// and says why.
#[test]
fn install_into_a_missing_repository_fails() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let output = npuprof(tmp.path(), &["skill", "--install", "--repo", "missing"])
        .output()
        .expect("install");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("cannot open the repository `missing`: No such file or directory"),
        "{output:?}"
    );
    fs::write(tmp.path().join("file"), "").expect("write");
    let output = npuprof(tmp.path(), &["skill", "--install", "--repo", "file"])
        .output()
        .expect("install");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("file`: Not a directory"),
        "{output:?}"
    );
}

#[test]
fn the_undo_line_of_install_is_shell_quoted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = "x;touch PWNED;y $(id)";
    fs::create_dir(tmp.path().join(dir)).unwrap();
    let output = npuprof(tmp.path(), &["skill", "--install", "--repo", dir])
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(output.status.success(), "{stderr}");
    let undo = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("undo: "))
        .unwrap_or_else(|| panic!("no undo line: {stderr}"));
    assert_eq!(
        support::shell_words(undo, tmp.path()),
        ["npuprof", "revert", "--repo", dir],
        "{undo}"
    );
    assert!(!tmp.path().join("PWNED").exists());
}

/// advise is in the skill: its command is shown (and run by the test above), and every advice
/// code the skill names (before `title` in its advise sentence) is one of the registry's; the
/// registry's codes at the time of writing are all named.
#[test]
fn the_skill_shows_advise_with_its_codes() {
    let text = skill_text();
    assert!(
        text.lines().any(|l| l.starts_with("npuprof advise ")),
        "no advise command in the skill"
    );
    let paragraph = text
        .split("\n\n")
        .find(|p| p.contains("`advise` says what is wrong"))
        .and_then(|p| p.split_once("`advise` says what is wrong"))
        .and_then(|(_, rest)| rest.split_once("`title`"))
        .map(|(codes, _)| codes)
        .expect("the advise sentence, its codes before `title`");
    let known: Vec<&str> = npuprof_advise::Code::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    let named: Vec<&str> = paragraph
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| w.contains('-') && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'))
        .collect();
    for code in &named {
        assert!(
            known.contains(code),
            "the skill names `{code}`, no advise code"
        );
    }
    for code in [
        "slow-rank",
        "communication-exposed",
        "device-idle",
        "no-bound",
        "memory-bound",
        "ai-cpu-operators",
        "dynamic-shape",
        "small-packets",
        "first-step-outlier",
        "launch-blocking",
    ] {
        assert!(named.contains(&code), "the skill does not name `{code}`");
    }
}
