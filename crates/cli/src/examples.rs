//! The examples at the end of every command's `--help` (and in the man pages), held as data in
//! one place. A unit test parses every example with the real command-line definition.

use clap::builder::StyledStr;

/// One example: what it does and the command line.
#[derive(Debug, Clone, Copy)]
pub struct Example {
    /// What the example does, in a few words.
    pub what: &'static str,
    /// The command line, starting with `npuprof`.
    pub command: &'static str,
}

const fn ex(what: &'static str, command: &'static str) -> Example {
    Example { what, command }
}

/// The examples of the top-level command (the whole workflow).
const TOP: &[Example] = &[
    ex(
        "Which path (A: patch, B: inject)?",
        "npuprof route examples/recipes-mini",
    ),
    ex(
        "Path A in one command: patch, run, verify, revert",
        "npuprof collect --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml --phase both --decode-active 10",
    ),
    ex(
        "Judge the run's output",
        "npuprof verify --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml --json",
    ),
];

/// Each subcommand's examples, by subcommand name.
const SUBCOMMANDS: &[(&str, &[Example])] = &[
    (
        "route",
        &[
            ex(
                "Decide the path for the current repository",
                "npuprof route .",
            ),
            ex(
                "The full report (evidence, run configs) for an agent",
                "npuprof route examples/recipes-mini --json",
            ),
            ex(
                "The profiling target of one model's run config, with file:line",
                "npuprof route --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml",
            ),
        ],
    ),
    (
        "plan",
        &[
            ex(
                "Record 10 decode steps: which steps, and does the window close?",
                "npuprof plan --phase decode --decode-active 10",
            ),
            ex(
                "The token budget a run config needs (MTP-aware)",
                "npuprof plan --decode-active 30 --config examples/recipes-mini/models/deepseek-mini/config/decode_mtp.yaml",
            ),
            ex(
                "What happens if the run stops after 12 step() calls",
                "npuprof plan --decode-active 10 --step-calls 12 --json",
            ),
        ],
    ),
    (
        "patch",
        &[
            ex(
                "Preview the change as a diff (changes nothing)",
                "npuprof patch --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml --decode-active 10 --dry-run",
            ),
            ex(
                "Profile decode only, 30 steps (journaled; undo with `npuprof revert`)",
                "npuprof patch --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml --phase decode --decode-active 30",
            ),
            ex(
                "A config given by path, report as JSON",
                "npuprof patch --config examples/recipes-mini/models/deepseek-mini/config/decode_mtp.yaml --dry-run --json",
            ),
        ],
    ),
    (
        "inject",
        &[
            ex(
                "Preview the harness for an entry script",
                "npuprof inject --repo examples/plain-infer --entry infer.py --dry-run",
            ),
            ex(
                "Prefill and 10 decode steps in one timeline",
                "npuprof inject --repo examples/plain-infer --entry infer.py --phase both --decode-active 10",
            ),
        ],
    ),
    (
        "lint",
        &[
            ex("Check a repository", "npuprof lint examples/plain-infer"),
            ex(
                "Check one file, findings as JSON",
                "npuprof lint examples/recipes-mini/executor/utils/profiler_context.py --json",
            ),
        ],
    ),
    (
        "verify",
        &[
            ex(
                "Judge the newest result of a run config",
                "npuprof verify --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml",
            ),
            ex(
                "A result directory, decode only, as JSON",
                "npuprof verify examples/recipes-mini/models/deepseek-mini/res --phase decode --json",
            ),
            ex(
                "Expect 16 ranks per phase",
                "npuprof verify --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml --ranks 16",
            ),
        ],
    ),
    (
        "relocate",
        &[
            ex(
                "What would move, and where (changes nothing)",
                "npuprof relocate --repo examples/recipes-mini --model deepseek-mini --dry-run",
            ),
            ex(
                "Move the output to a local disk",
                "npuprof relocate --repo examples/recipes-mini --model deepseek-mini --to ../npuprof-res",
            ),
        ],
    ),
    (
        "collect",
        &[
            ex(
                "Prefill and 10 decode steps, repository left as found",
                "npuprof collect --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml --phase both --decode-active 10",
            ),
            ex(
                "A vLLM-Ascend server (here the bundled fake) with 2 ranks, profiled under load",
                "npuprof collect --engine vllm-ascend --requests 16 --output-len 64 --quiet 1 -- tests/fake_vllm/bin/vllm serve fake-model --port 18731 -tp 2",
            ),
            ex(
                "Your own launch command, one JSON document",
                "npuprof collect --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml --json -- bash executor/scripts/infer.sh --model deepseek-mini --yaml decode_mtp.yaml",
            ),
        ],
    ),
    (
        "summary",
        &[
            ex(
                "What the newest decode profile shows, in the terminal",
                "npuprof summary --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml --phase decode",
            ),
            ex(
                "Rank 0 only, as JSON, and an HTML page with charts",
                "npuprof summary --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml --rank 0 --json --html summary.html",
            ),
        ],
    ),
    (
        "advise",
        &[
            ex(
                "What is wrong with the newest decode profile, largest time at stake first",
                "npuprof advise --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml --phase decode",
            ),
            ex(
                "Rank 0 only, as JSON, ten evidence items per finding",
                "npuprof advise --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml --rank 0 --json --top 10",
            ),
        ],
    ),
    (
        "breakdown",
        &[
            ex(
                "The nn.Module tree of a real 2-rank run in the clone, three levels deep, and a page",
                "npuprof breakdown crates/verify/tests/data/runs/msinsight-text-level1 --depth 3 --html breakdown.html",
            ),
            ex(
                "Where the per-step time changed from one run to another, module by module",
                "npuprof breakdown crates/verify/tests/data/runs/msinsight-text-level1/rank0_ascend_pt crates/verify/tests/data/runs/msinsight-text-level1/rank1_ascend_pt --depth 3",
            ),
            ex(
                "The newest decode profile, as JSON (module tree or inferred layers)",
                "npuprof breakdown --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml --phase decode --json",
            ),
        ],
    ),
    (
        "compare",
        &[
            ex(
                "Base run first, new run second (here: two ranks of a real run in the clone)",
                "npuprof compare crates/summary/tests/data/real-2rank/rank0_ascend_pt crates/summary/tests/data/real-2rank/rank1_ascend_pt",
            ),
            ex(
                "As JSON, and an HTML page",
                "npuprof compare crates/summary/tests/data/real-2rank/rank0_ascend_pt crates/summary/tests/data/real-2rank/rank1_ascend_pt --json --html compare.html",
            ),
        ],
    ),
    (
        "status",
        &[
            ex(
                "What npuprof changed in a repository",
                "npuprof status --repo examples/recipes-mini",
            ),
            ex(
                "The same, for an agent",
                "npuprof status --repo examples/recipes-mini --json",
            ),
        ],
    ),
    (
        "revert",
        &[
            ex(
                "Restore every changed file",
                "npuprof revert --repo examples/recipes-mini",
            ),
            ex(
                "Restore even files edited since (their edits are lost)",
                "npuprof revert --repo examples/recipes-mini --force --json",
            ),
        ],
    ),
    (
        "skill",
        &[
            ex("Print the agent skill", "npuprof skill"),
            ex(
                "Install it for agents working in a repository (undo with `npuprof revert`)",
                "npuprof skill --install --repo examples/recipes-mini",
            ),
        ],
    ),
    (
        "completions",
        &[
            ex(
                "bash, for this shell (the directory may not exist on a fresh home)",
                "mkdir -p ~/.local/share/bash-completion/completions && npuprof completions bash > ~/.local/share/bash-completion/completions/npuprof",
            ),
            ex(
                "zsh (add ~/.zfunc to fpath before compinit)",
                "mkdir -p ~/.zfunc && npuprof completions zsh > ~/.zfunc/_npuprof",
            ),
            ex(
                "fish",
                "mkdir -p ~/.config/fish/completions && npuprof completions fish > ~/.config/fish/completions/npuprof.fish",
            ),
        ],
    ),
    (
        "man",
        &[
            ex("Read the manual page", "npuprof man | man -l -"),
            ex("One command's page", "npuprof man verify | man -l -"),
        ],
    ),
    (
        "mcp",
        &[
            ex(
                "Serve every command as a tool on stdin/stdout (what an MCP host starts)",
                "npuprof mcp",
            ),
            ex(
                "The JSON that registers the server with a host",
                "npuprof skill | grep -A 4 mcpServers",
            ),
        ],
    ),
];

/// The examples of a subcommand (`None`: the top-level command); empty when it has none.
pub fn examples(subcommand: Option<&str>) -> &'static [Example] {
    match subcommand {
        None => TOP,
        Some(name) => SUBCOMMANDS
            .iter()
            .find(|(sub, _)| *sub == name)
            .map_or(&[], |(_, examples)| examples),
    }
}

/// Adds each command's examples to the end of its help.
pub fn attach(command: clap::Command) -> clap::Command {
    let command = command.after_help(render(examples(None)));
    SUBCOMMANDS
        .iter()
        .fold(command, |command, (name, examples)| {
            command.mut_subcommand(name, |sub| sub.after_help(render(examples)))
        })
}

/// `Examples:` with each example's description as a comment above its command.
fn render(examples: &[Example]) -> StyledStr {
    let heading = anstyle::Style::new().bold().underline();
    let mut text = format!("{heading}Examples:{heading:#}\n");
    for (index, example) in examples.iter().enumerate() {
        if index > 0 {
            text.push('\n');
        }
        text.push_str(&format!(
            "  # {}\n  {}\n",
            example.what,
            continued(example.command)
        ));
    }
    StyledStr::from(text)
}

/// The widest line of an example command in `--help` (two columns of indent before it): clap
/// wraps longer lines at the terminal's width, and a line wrapped mid-command pastes as two
/// commands, so longer commands are broken by us, before an option, with shell line continuations.
const COMMAND_WIDTH: usize = 76;

/// `command` as shell lines of at most `COMMAND_WIDTH` columns where it can be (an option and
/// its value stay together), each but the last ending in ` \`, the rest indented by 4.
fn continued(command: &str) -> String {
    let mut groups: Vec<String> = Vec::new();
    for word in command.split(' ') {
        match groups.last_mut() {
            // A value joins the option before it.
            Some(group)
                if group.starts_with('-') && !group.contains(' ') && !word.starts_with('-') =>
            {
                group.push(' ');
                group.push_str(word);
            }
            _ => groups.push(word.to_owned()),
        }
    }
    let mut lines: Vec<String> = Vec::new();
    for group in groups {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + group.len() + 2 <= COMMAND_WIDTH => {
                line.push(' ');
                line.push_str(&group);
            }
            _ => lines.push(group),
        }
    }
    lines.join(" \\\n      ")
}

#[cfg(test)]
mod tests {
    use super::{COMMAND_WIDTH, SUBCOMMANDS, TOP, continued, examples};

    #[test]
    fn long_commands_are_continued_before_an_option() {
        let long = "npuprof collect --repo examples/recipes-mini --model deepseek-mini --yaml decode_mtp.yaml --phase both --decode-active 10";
        let text = continued(long);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() > 1, "{text}");
        for line in &lines {
            assert!(line.trim_start().len() <= COMMAND_WIDTH, "{line:?}");
        }
        assert_eq!(text.replace(" \\\n      ", " "), long);
        assert!(lines[1].trim_start().starts_with("--"), "{text}");
        assert_eq!(continued("npuprof route ."), "npuprof route .");
    }

    /// Every subcommand has 2–3 examples, and every example parses with the real definition.
    #[test]
    fn every_subcommand_has_examples_that_parse() {
        let cli = crate::cli();
        for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
            let count = examples(Some(sub.get_name())).len();
            assert!(
                (2..=3).contains(&count),
                "`npuprof {}` has {count} examples, want 2 or 3",
                sub.get_name()
            );
        }
        let all = TOP
            .iter()
            .chain(SUBCOMMANDS.iter().flat_map(|(_, e)| e.iter()));
        for example in all {
            // A line that makes a directory first (`mkdir -p D && npuprof …`): its npuprof part.
            let command = example.command.rsplit(" && ").next().unwrap_or_default();
            let command = command.split(" | ").next().unwrap_or_default();
            let command = command.split(" > ").next().unwrap_or_default();
            let words: Vec<&str> = command.split_whitespace().collect();
            assert_eq!(words.first(), Some(&"npuprof"), "{}", example.command);
            if let Err(err) = crate::cli().try_get_matches_from(&words) {
                panic!("example `{}` does not parse: {err}", example.command);
            }
        }
    }
}
