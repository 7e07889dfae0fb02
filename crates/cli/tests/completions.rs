//! `npuprof completions SHELL` and `npuprof man [COMMAND]`: the bash script loads and completes,
//! the other shells' scripts have their shell's shape, and every manual page renders with groff
//! without a warning and ends with its examples.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use insta_cmd::get_cargo_bin;

mod support;
use support::workspace_root;

/// The subcommands, as `npuprof --help` lists them.
const SUBCOMMANDS: &[&str] = &[
    "route",
    "plan",
    "patch",
    "inject",
    "lint",
    "verify",
    "relocate",
    "collect",
    "summary",
    "compare",
    "status",
    "revert",
    "skill",
    "completions",
    "man",
];

/// `npuprof <args>` run from the workspace root, without colour.
fn npuprof(args: &[&str]) -> Output {
    Command::new(get_cargo_bin("npuprof"))
        .current_dir(workspace_root())
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("run npuprof")
}

/// The stdout of `npuprof <args>`, which must exit 0.
fn npuprof_stdout(args: &[&str]) -> String {
    let output = npuprof(args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "`npuprof {}`: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// Runs `cmd` with `stdin` as its standard input.
fn run_with_stdin(cmd: &mut Command, stdin: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run {cmd:?}: {err}"));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

/// Runs `bash -c <script>` with `stdin` as its standard input; returns success, stdout, stderr.
fn bash(script: &str, stdin: &str) -> (bool, String, String) {
    let output = run_with_stdin(Command::new("bash").args(["-c", script]), stdin);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn bash_script_parses() {
    let script = npuprof_stdout(&["completions", "bash"]);
    let (ok, _, stderr) = bash("bash -n /dev/stdin", &script);
    assert!(ok, "bash -n: {stderr}");
}

/// Sourced in bash, the script registers a completion function that completes subcommands and
/// a subcommand's flags.
#[test]
fn bash_script_completes_subcommands_and_flags() {
    let script = npuprof_stdout(&["completions", "bash"]);
    let probe = r#"
        source /dev/stdin
        complete -p npuprof
        complete_line() {
            COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
            COMPREPLY=()
            _npuprof npuprof "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            echo "${COMPREPLY[*]}"
        }
        complete_line npuprof ro
        complete_line npuprof patch --decode
        complete_line npuprof completions ''
    "#;
    let (ok, stdout, stderr) = bash(probe, &script);
    assert!(ok, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}\n{stderr}");
    assert!(
        lines[0].contains("_npuprof") && lines[0].ends_with("npuprof"),
        "{stdout}"
    );
    assert_eq!(lines[1], "route");
    assert_eq!(lines[2], "--decode-active --decode-skip-first");
    for shell in ["bash", "zsh", "fish", "powershell"] {
        assert!(
            lines[3].split(' ').any(|word| word == shell),
            "`npuprof completions <TAB>` offers {shell}: {}",
            lines[3]
        );
    }
}

/// zsh, fish and PowerShell may not be installed: their scripts are checked for the shape
/// each shell loads, naming every subcommand.
#[test]
fn other_shells_have_their_shape() {
    let shapes = [
        ("zsh", "#compdef npuprof"),
        ("fish", "complete -c npuprof"),
        (
            "powershell",
            "Register-ArgumentCompleter -Native -CommandName 'npuprof'",
        ),
    ];
    for (shell, marker) in shapes {
        let script = npuprof_stdout(&["completions", shell]);
        assert!(script.contains(marker), "{shell}: no `{marker}`");
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{shell}: `{sub}` missing");
        }
    }
}

/// An unknown shell is a usage error.
#[test]
fn unknown_shell_is_refused() {
    let output = npuprof(&["completions", "tcsh"]);
    assert_eq!(output.status.code(), Some(2));
}

/// Renders roff as `man -l` does: `groff -k` (UTF-8 input through preconv) `-man -Tutf8 -ww` (all warnings); returns the text, failing on any
/// warning.
fn groff(page: &str, name: &str) -> String {
    // groff-base is on a fresh Debian machine; `.ci/run` installs it where it is missing.
    let output = run_with_stdin(
        Command::new("groff")
            .args(["-k", "-man", "-Tutf8", "-ww"])
            .env("GROFF_NO_SGR", "1"),
        page,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stderr.is_empty(),
        "{name}: groff: {stderr}"
    );
    // Without SGR, bold and underline are overstrikes (`c\bc`, `_\bc`): keep the letters.
    let text = String::from_utf8_lossy(&output.stdout);
    let mut plain = String::new();
    for c in text.chars() {
        if c == '\u{8}' {
            plain.pop();
        } else {
            plain.push(c);
        }
    }
    plain
}

#[test]
fn main_page_renders_with_every_command_and_the_examples() {
    let text = groff(&npuprof_stdout(&["man"]), "npuprof(1)");
    for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "SUBCOMMANDS", "EXAMPLES"] {
        assert!(text.contains(section), "npuprof(1): no {section}:\n{text}");
    }
    for sub in SUBCOMMANDS {
        assert!(
            text.contains(&format!("npuprof-{sub}(1)")),
            "npuprof(1) does not list npuprof-{sub}(1)"
        );
    }
    assert!(!text.contains("npuprof-help(1)"), "no page for `help`");
    // NAME is "name - description": the description does not repeat the name.
    let name_line = text
        .lines()
        .skip_while(|line| line.trim() != "NAME")
        .nth(1)
        .unwrap_or_default();
    assert!(
        name_line.trim().starts_with("npuprof - Collect usable"),
        "NAME: {name_line:?}"
    );
    // The examples stay copyable: ASCII hyphen-minus, not typographic hyphens.
    assert!(
        text.contains("npuprof route examples/recipes-mini"),
        "{text}"
    );
    assert!(text.contains("--decode-active 10"), "{text}");
}

#[test]
fn every_command_page_renders_with_options_and_examples() {
    for sub in SUBCOMMANDS {
        let name = format!("npuprof-{sub}(1)");
        let text = groff(&npuprof_stdout(&["man", sub]), &name);
        assert!(text.starts_with(&name), "{name}: title:\n{text}");
        for section in ["SYNOPSIS", "OPTIONS", "EXAMPLES"] {
            assert!(text.contains(section), "{name}: no {section}:\n{text}");
        }
        let (_, examples) = text.split_once("EXAMPLES").expect("EXAMPLES");
        assert!(
            examples.contains(&format!("npuprof {sub}")),
            "{name}: no example of `npuprof {sub}`"
        );
    }
}

#[test]
fn unknown_command_page_is_refused() {
    let output = npuprof(&["man", "nosuch"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no command `nosuch`"));
}

/// Every subcommand's `--help` ends with its examples.
#[test]
fn every_help_ends_with_examples() {
    for sub in SUBCOMMANDS {
        let help = npuprof_stdout(&[sub, "--help"]);
        let (_, examples) = help
            .rsplit_once("Examples:\n")
            .unwrap_or_else(|| panic!("`npuprof {sub} --help` has no examples:\n{help}"));
        let commands = examples
            .lines()
            .filter(|l| {
                let l = l.trim_start();
                // `mkdir -p D && npuprof …` (the completions' lines) counts as an example too.
                l.starts_with("npuprof ")
                    || l.starts_with("mkdir -p ") && l.contains(" && npuprof ")
            })
            .count();
        assert!(
            (2..=3).contains(&commands),
            "`npuprof {sub} --help`: {commands} examples"
        );
    }
}
