//! Every example line of every `--help` runs, as a user pastes it, from a copy of the clone's
//! bundled examples (the fake torch_npu standing in for an NPU): none may fail to start, and
//! none may exit 2 (npuprof could not run).
//!
//! The lines are read from the help text itself, not from the source, so what is tested is what
//! a user sees. They run in one workspace-like directory, in the order of the workflow (a patch
//! before its revert, a collect before the verify and summary of its result).

use std::path::Path;
use std::process::Command;

use insta_cmd::get_cargo_bin;

mod support;
use support::{clone_copy, user_shell};

/// The commands in the order a user meets them; each one's examples run in their help's order.
const ORDER: &[&str] = &[
    "route",
    "plan",
    "patch",
    "status",
    "revert",
    "inject",
    "lint",
    "collect",
    "verify",
    "summary",
    "advise",
    "breakdown",
    "compare",
    "relocate",
    "skill",
    "completions",
    "man",
    "mcp",
];

/// The example command lines of `npuprof [sub] --help` (the lines under `Examples:` that start
/// with `npuprof`, or make a directory first, as the completions' examples do on a fresh home).
fn help_examples(sub: Option<&str>) -> Vec<String> {
    let mut cmd = Command::new(get_cargo_bin("npuprof"));
    cmd.args(sub).arg("--help").env("NO_COLOR", "1");
    let out = cmd.output().expect("run npuprof --help");
    assert!(out.status.success(), "{sub:?} --help failed");
    let text = String::from_utf8(out.stdout).expect("UTF-8 help");
    let (_, examples) = text.split_once("Examples:").expect("an Examples section");
    // A long command is continued over lines ending in ` \`, as a shell reads it.
    let mut commands: Vec<String> = Vec::new();
    let mut open = false;
    for line in examples.lines().map(str::trim) {
        if open {
            let last = commands.last_mut().expect("a command is open");
            last.push(' ');
            last.push_str(line);
        } else if line.starts_with("npuprof ")
            || line.starts_with("mkdir -p ") && line.contains(" && npuprof ")
        {
            commands.push(line.to_owned());
        } else {
            continue;
        }
        let last = commands.last_mut().expect("a command");
        open = last.ends_with(" \\");
        if open {
            last.truncate(last.len() - 2);
        }
    }
    commands
}

/// Runs `line` with `sh -c` in `root`, with `npuprof` on PATH, a private HOME and the fake
/// torch_npu importable; returns the exit code and the output for messages.
fn run_line(root: &Path, line: &str) -> (i32, String) {
    let line = free_port(line);
    let out = user_shell(root)
        .arg("-c")
        .arg(format!("set -e; {line}"))
        .env("PYTHONPATH", root.join("tests/fake_torch_npu"))
        .output()
        .expect("run sh");
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// `line` with the fixed `--port N` of a serving example replaced by a port free now, so that
/// two test runs on one machine do not answer each other's requests.
fn free_port(line: &str) -> String {
    let Some((head, tail)) = line.split_once("--port ") else {
        return line.to_owned();
    };
    let rest = tail.split_once(' ').map_or("", |(_, rest)| rest);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    let port = listener.local_addr().expect("its address").port();
    format!("{head}--port {port} {rest}")
}

/// Whether a program other than npuprof that the line pipes into is missing here.
fn needs_missing_program(line: &str) -> Option<&'static str> {
    let has = |program: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .output()
            .is_ok_and(|out| out.status.success())
    };
    (line.contains("| man ") && !has("man")).then_some("man")
}

/// The commands whose examples read a collected result: a copy for them first runs the
/// top-level help's `collect` example, as a user would have.
const NEED_A_RESULT: &[&str] = &["verify", "summary", "advise", "breakdown", "relocate"];

/// Runs each line in `root`; a failure (exit other than 0 or 1) is added to `failures`.
#[allow(clippy::print_stderr, reason = "says which pager half was not run")]
fn run_lines(root: &Path, lines: &[String], failures: &mut Vec<String>) {
    for line in lines {
        if let Some(program) = needs_missing_program(line) {
            // The npuprof half still runs; the pager half needs a program this machine lacks.
            let head = line.split(" | ").next().unwrap_or_default();
            #[allow(
                clippy::print_stderr,
                reason = "a test's note in its captured output, not the binary's stderr"
            )]
            {
                eprintln!("`{program}` is not installed: running `{head}` alone");
            }
            let (code, text) = run_line(root, head);
            if code != 0 {
                failures.push(format!("`{head}` exited {code}\n{text}"));
            }
            continue;
        }
        let (code, text) = run_line(root, line);
        // 0 ok, 1 findings or changes (a dry run's diff); 2 means npuprof could not run.
        if !matches!(code, 0 | 1) {
            failures.push(format!("`{line}` exited {code}\n{text}"));
        }
    }
}

#[test]
fn every_help_example_runs_on_the_bundled_examples() {
    let top = help_examples(None);
    let collect = top
        .iter()
        .find(|line| line.starts_with("npuprof collect "))
        .expect("the top-level help has a collect example")
        .clone();
    let mut failures = Vec::new();
    let mut count = top.len();
    // Each command's examples in a fresh copy, in the order of its help; the top level's too.
    for sub in ORDER.iter().map(|sub| Some(*sub)).chain([None]) {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = clone_copy(tmp.path());
        if sub.is_some_and(|sub| NEED_A_RESULT.contains(&sub)) {
            run_lines(&root, std::slice::from_ref(&collect), &mut failures);
        }
        let lines = help_examples(sub);
        assert!(!lines.is_empty(), "{sub:?}: no examples");
        count += lines.len();
        run_lines(&root, &lines, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} of {count} help examples failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_order_holds_every_command() {
    let out = Command::new(get_cargo_bin("npuprof"))
        .arg("--help")
        .env("NO_COLOR", "1")
        .output()
        .expect("run npuprof --help");
    let text = String::from_utf8(out.stdout).expect("UTF-8 help");
    let (_, commands) = text.split_once("Commands:").expect("a Commands section");
    let listed: Vec<&str> = commands
        .lines()
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        // A command's name is indented by two; its wrapped description by more.
        .filter(|line| !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    let mut ours = ORDER.to_vec();
    ours.sort_unstable();
    let mut listed_sorted = listed.clone();
    listed_sorted.sort_unstable();
    assert_eq!(ours, listed_sorted, "ORDER must name every command once");
}

#[test]
fn help_examples_name_only_what_the_clone_has() {
    // No placeholder model or run config that the bundled examples lack.
    for sub in ORDER.iter().map(|sub| Some(*sub)).chain([None]) {
        for line in help_examples(sub) {
            for placeholder in ["deepseek-v3", "decode.yaml", "before/res", "/data/npuprof"] {
                assert!(
                    !line.contains(placeholder),
                    "`{line}` names `{placeholder}`"
                );
            }
        }
    }
}

/// `npuprof <sub> --help` as a user reads it.
fn help_text(sub: &str) -> String {
    let out = Command::new(get_cargo_bin("npuprof"))
        .args([sub, "--help"])
        .env("NO_COLOR", "1")
        .output()
        .expect("run npuprof --help");
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// One name per concept across every command's help: the decode window is `--decode-active`
/// (the older names are hidden aliases), `--repo` takes a `<DIR>`, and summary and compare
/// share one `--top` default.
#[test]
fn every_command_names_a_concept_alike() {
    let mut tops = Vec::new();
    for sub in ORDER {
        let help = help_text(sub);
        for old in ["--decode-steps", "--expect-active"] {
            assert!(!help.contains(old), "`{sub} --help` shows {old}");
        }
        for line in help
            .lines()
            .filter(|l| l.trim_start().starts_with("--repo "))
        {
            assert!(line.contains("--repo <DIR>"), "`{sub} --help`: {line}");
        }
        // advise's --top counts evidence per finding, another concept.
        if !["summary", "compare"].contains(sub) {
            continue;
        }
        if let Some(top) = help.split("--top <N>").nth(1) {
            // The flag's own description ends where the next flag begins.
            let own = top.split("\n  -").next().unwrap_or_default();
            let own = own.split_whitespace().collect::<Vec<_>>().join(" ");
            let default = own
                .split("[default: ")
                .nth(1)
                .and_then(|d| d.split(']').next());
            tops.push((*sub, default.map(str::to_owned)));
        }
    }
    assert_eq!(tops.len(), 2, "{tops:?}");
    assert_eq!(tops[0].1, tops[1].1, "{tops:?}");
    assert!(tops[0].1.is_some(), "{tops:?}");
}
