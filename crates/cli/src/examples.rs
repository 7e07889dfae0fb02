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
    ex("Which path (A: patch, B: inject)?", "npuprof route ."),
    ex(
        "Path A in one command: patch, run, verify, revert",
        "npuprof collect --model deepseek-v3 --yaml decode.yaml --phase both --decode-active 10",
    ),
    ex(
        "Judge a run's output",
        "npuprof verify models/deepseek-v3/res --json",
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
                "npuprof route --model deepseek-v3 --yaml decode.yaml",
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
                "npuprof plan --decode-active 30 --config models/deepseek-v3/config/decode.yaml",
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
                "npuprof patch --model deepseek-v3 --yaml decode.yaml --decode-active 10 --dry-run",
            ),
            ex(
                "Profile decode only, 30 steps (journaled; undo with `npuprof revert`)",
                "npuprof patch --model deepseek-v3 --yaml decode.yaml --phase decode --decode-active 30",
            ),
            ex(
                "A config given by path, report as JSON",
                "npuprof patch --repo . --config models/deepseek-v3/config/decode.yaml --json",
            ),
        ],
    ),
    (
        "inject",
        &[
            ex(
                "Preview the harness for an entry script",
                "npuprof inject --entry infer.py --dry-run",
            ),
            ex(
                "Prefill and 10 decode steps in one timeline",
                "npuprof inject --entry infer.py --phase both --decode-steps 10",
            ),
        ],
    ),
    (
        "lint",
        &[
            ex("Check the current repository", "npuprof lint ."),
            ex(
                "Check one file, findings as JSON",
                "npuprof lint executor/utils/profiler_context.py --json",
            ),
        ],
    ),
    (
        "verify",
        &[
            ex(
                "Judge the newest result of a run config",
                "npuprof verify --model deepseek-v3 --yaml decode.yaml",
            ),
            ex(
                "One run directory, decode only, as JSON",
                "npuprof verify models/deepseek-v3/res --phase decode --json",
            ),
            ex(
                "Expect 16 ranks per phase",
                "npuprof verify --model deepseek-v3 --yaml decode.yaml --ranks 16",
            ),
        ],
    ),
    (
        "relocate",
        &[
            ex(
                "What would move, and where (changes nothing)",
                "npuprof relocate --model deepseek-v3 --dry-run",
            ),
            ex(
                "Move the output to a local disk",
                "npuprof relocate --model deepseek-v3 --to /data/npuprof-res",
            ),
        ],
    ),
    (
        "collect",
        &[
            ex(
                "Prefill and 10 decode steps, repository left as found",
                "npuprof collect --model deepseek-v3 --yaml decode.yaml --phase both --decode-active 10",
            ),
            ex(
                "Decode only, keep the patch, stop a run after an hour",
                "npuprof collect --config models/deepseek-v3/config/decode.yaml --phase decode --keep-patch --timeout 3600",
            ),
            ex(
                "Your own launch command, one JSON document",
                "npuprof collect --model deepseek-v3 --yaml decode.yaml --json -- bash run.sh --yaml decode.yaml",
            ),
        ],
    ),
    (
        "summary",
        &[
            ex(
                "What the newest decode profile shows, in the terminal",
                "npuprof summary models/deepseek-v3/res --phase decode",
            ),
            ex(
                "Rank 0 only, as JSON, and an HTML page with charts",
                "npuprof summary models/deepseek-v3/res --rank 0 --json --html summary.html",
            ),
        ],
    ),
    (
        "advise",
        &[
            ex(
                "What is wrong with the newest decode profile, largest time at stake first",
                "npuprof advise models/deepseek-v3/res --phase decode",
            ),
            ex(
                "Rank 0 only, as JSON, ten evidence items per finding",
                "npuprof advise models/deepseek-v3/res --rank 0 --json --top 10",
            ),
        ],
    ),
    (
        "compare",
        &[
            ex(
                "Did the change help? Base run first, new run second",
                "npuprof compare before/res after/res",
            ),
            ex(
                "Decode only, as JSON, and an HTML page",
                "npuprof compare before/res after/res --phase decode --json --html compare.html",
            ),
        ],
    ),
    (
        "status",
        &[
            ex("What npuprof changed here", "npuprof status"),
            ex("The same, for an agent", "npuprof status --repo . --json"),
        ],
    ),
    (
        "revert",
        &[
            ex("Restore every changed file", "npuprof revert"),
            ex(
                "Restore even files edited since (their edits are lost)",
                "npuprof revert --repo . --force --json",
            ),
        ],
    ),
    (
        "skill",
        &[
            ex("Print the agent skill", "npuprof skill"),
            ex(
                "Install it for agents working in a repository (undo with `npuprof revert`)",
                "npuprof skill --install --repo .",
            ),
        ],
    ),
    (
        "completions",
        &[
            ex(
                "bash, for this shell",
                "npuprof completions bash > ~/.local/share/bash-completion/completions/npuprof",
            ),
            ex("zsh", "npuprof completions zsh > ~/.zfunc/_npuprof"),
            ex(
                "fish",
                "npuprof completions fish > ~/.config/fish/completions/npuprof.fish",
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
        text.push_str(&format!("  # {}\n  {}\n", example.what, example.command));
    }
    StyledStr::from(text)
}

#[cfg(test)]
mod tests {
    use super::{SUBCOMMANDS, TOP, examples};

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
            let command = example.command.split(" | ").next().unwrap_or_default();
            let command = command.split(" > ").next().unwrap_or_default();
            let words: Vec<&str> = command.split_whitespace().collect();
            assert_eq!(words.first(), Some(&"npuprof"), "{}", example.command);
            if let Err(err) = crate::cli().try_get_matches_from(&words) {
                panic!("example `{}` does not parse: {err}", example.command);
            }
        }
    }
}
