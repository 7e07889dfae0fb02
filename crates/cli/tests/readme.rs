//! Every shell line of the README runs, in the README's order, in one shell, as a reader pastes
//! them from the clone root: in a clone-like copy of what they name (`examples/`, the fake
//! torch_npu, the vendored real run), so what they write stays in the copy.
//!
//! The blocks run are the fenced `sh` and `console` blocks. In a `console` block, a line
//! starting with `$ ` is a command and the lines after it are the output shown: each shown line
//! must be a line of the command's stdout, in that order (`…` stands for lines left out). A
//! block that cannot run here (it needs an NPU, or installs the binary) is preceded by the
//! comment `<!-- readme-test: skip: <reason> -->`; it is skipped and the reason printed.
//!
//! A command must exit 0; 1 ("there are changes", "findings") only when it is a `--dry-run` or
//! its block is preceded by `<!-- readme-test: exit 1 -->`.

use std::fs;

mod support;
use support::{clone_copy, user_shell, workspace_root};

/// The comment that marks the next block as not run, with why.
const SKIP: &str = "<!-- readme-test: skip: ";
/// The comment that lets the next block's commands exit 1.
const MAY_EXIT_1: &str = "<!-- readme-test: exit 1 -->";

/// One command of the README with the output it shows.
#[derive(Debug)]
struct Line {
    /// The command as written.
    command: String,
    /// The stdout lines the README shows after it (console blocks).
    shown: Vec<String>,
    /// Whether exit code 1 is what the README says it does.
    may_exit_1: bool,
}

/// The runnable lines of `readme`, in order, and the skipped blocks' reasons.
fn readme_lines(readme: &str) -> (Vec<Line>, Vec<String>) {
    let mut lines: Vec<Line> = Vec::new();
    let mut skipped = Vec::new();
    let mut marker: Option<&str> = None;
    let mut block: Option<(&str, bool)> = None; // (kind, run it)
    let mut may_exit_1 = false;
    for text in readme.lines() {
        if let Some((kind, run)) = block {
            if text.starts_with("```") {
                block = None;
                continue;
            }
            if !run {
                continue;
            }
            match kind {
                "sh" => {
                    let command = text.trim();
                    if !command.is_empty() && !command.starts_with('#') {
                        lines.push(Line {
                            command: command.to_owned(),
                            shown: Vec::new(),
                            may_exit_1,
                        });
                    }
                }
                _ => match text.strip_prefix("$ ") {
                    Some(command) => lines.push(Line {
                        command: command.to_owned(),
                        shown: Vec::new(),
                        may_exit_1,
                    }),
                    None => {
                        let last = lines.last_mut().expect("output after a `$ ` command");
                        last.shown.push(text.to_owned());
                    }
                },
            }
            continue;
        }
        if let Some(fence) = text.strip_prefix("```") {
            let kind = fence.trim();
            if kind == "sh" || kind == "console" {
                let skip = marker.and_then(|m| m.strip_prefix(SKIP));
                if let Some(reason) = skip {
                    skipped.push(reason.trim_end_matches("-->").trim().to_owned());
                }
                may_exit_1 = marker == Some(MAY_EXIT_1);
                block = Some((if kind == "sh" { "sh" } else { "console" }, skip.is_none()));
            } else {
                block = Some((kind, false));
            }
            marker = None;
        } else if text.starts_with("<!-- readme-test:") {
            marker = Some(text.trim());
        } else if !text.trim().is_empty() {
            marker = None;
        }
    }
    (lines, skipped)
}

/// `shown` (with `…` for lines left out) appears in `stdout`, line by line, in order.
fn shows(stdout: &str, shown: &[String]) -> bool {
    let mut actual = stdout.lines();
    shown
        .iter()
        .filter(|line| line.trim() != "…")
        .all(|want| actual.any(|got| got == want))
}

#[test]
#[allow(
    clippy::print_stderr,
    reason = "names the blocks the test does not run, and why"
)]
fn every_readme_shell_line_runs_on_the_bundled_examples() {
    let readme = fs::read_to_string(workspace_root().join("README.md")).expect("README.md");
    let (lines, skipped) = readme_lines(&readme);
    for reason in &skipped {
        eprintln!("README block not run: {reason}");
    }
    assert!(lines.len() >= 10, "only {} README lines found", lines.len());
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = clone_copy(tmp.path());
    let out = tmp.path().join("out");
    fs::create_dir_all(&out).expect("out dir");
    // One shell for all of them, as a reader's: an `export` or `cd` holds for what follows.
    let mut script = String::new();
    for (i, line) in lines.iter().enumerate() {
        script.push_str(&format!(
            "{{ {}\n}} >'{dir}/{i}.out' 2>'{dir}/{i}.err'; echo $? >'{dir}/{i}.rc'\n",
            line.command,
            dir = out.display()
        ));
    }
    let status = user_shell(&root)
        .arg("-c")
        .arg(&script)
        .status()
        .expect("run sh");
    assert!(status.success(), "the script itself failed: {status}");
    let mut failures = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let read =
            |ext: &str| fs::read_to_string(out.join(format!("{i}.{ext}"))).unwrap_or_default();
        let code: i32 = read("rc").trim().parse().unwrap_or(-1);
        let allowed =
            code == 0 || (code == 1 && (line.may_exit_1 || line.command.contains("--dry-run")));
        let stdout = read("out");
        if !allowed {
            failures.push(format!(
                "`{}` exited {code}\nstdout:\n{stdout}\nstderr:\n{}",
                line.command,
                read("err")
            ));
        } else if !shows(&stdout, &line.shown) {
            failures.push(format!(
                "`{}` does not print what the README shows:\n{}\nstdout:\n{stdout}",
                line.command,
                line.shown.join("\n")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} README lines failed:\n\n{}",
        failures.len(),
        lines.len(),
        failures.join("\n\n")
    );
}

/// The parser reads what the convention says: sh and console blocks, `$ ` commands with their
/// output, the skip and exit-1 markers; other blocks are not run.
#[test]
fn the_readme_convention_is_read_as_documented() {
    let text = "intro\n\n<!-- readme-test: skip: needs an NPU -->\n```sh\nnpuprof collect\n```\n\n\
                ```sh\n# a comment\nnpuprof route .\n```\n\n<!-- readme-test: exit 1 -->\n```console\n\
                $ npuprof plan\n…\nmin max_new_tokens: 34\n```\n\n```text\n$ not run\n```\n";
    let (lines, skipped) = readme_lines(text);
    assert_eq!(skipped, ["needs an NPU"]);
    let commands: Vec<&str> = lines.iter().map(|l| l.command.as_str()).collect();
    assert_eq!(commands, ["npuprof route .", "npuprof plan"]);
    assert_eq!(lines[1].shown, ["…", "min max_new_tokens: 34"]);
    assert!(!lines[0].may_exit_1 && lines[1].may_exit_1);
    assert!(shows("a\nmin max_new_tokens: 34\n", &lines[1].shown));
    assert!(!shows("a\nmin max_new_tokens: 35\n", &lines[1].shown));
}
