//! `npuprof mcp`: every command an agent uses as a tool of a Model Context Protocol server on
//! stdin/stdout (`npuprof-mcp`).
//!
//! The tools are described here from the command-line definition itself: each command's flags,
//! walked from its `clap::Command`, are the tool's arguments (snake_case), so the input schema
//! and the command line a call runs come from the one definition the command line parses. The
//! flags a tool leaves out are listed in [`LEFT_OUT`], each with its reason; a unit test holds
//! every flag to being in its tool's schema or there.

use std::any::TypeId;

use anyhow::Context as _;
use clap::ArgAction;
use npuprof_mcp::{Access, Kind, Param, Place, Resource, Server, Tool};

use crate::exit::Exit;

/// Arguments of `npuprof mcp`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// The commands served as tools, in the order of the workflow, each with whether it may change
/// files and, when it may, what it changes.
const TOOLS: &[(&str, Option<&str>)] = &[
    ("route", None),
    ("plan", None),
    (
        "patch",
        Some(
            "the repository's profiler code and run config (journaled: `status` lists the \
             change, `revert` restores every byte); `dry_run` changes nothing and returns the diff.",
        ),
    ),
    (
        "inject",
        Some(
            "writes a profiling harness into the repository (journaled: `revert` removes it); \
             `dry_run` changes nothing.",
        ),
    ),
    ("lint", None),
    ("verify", None),
    (
        "relocate",
        Some(
            "moves the model's output directory to a local disk and leaves a symlink \
             (journaled: `revert` undoes it); `dry_run` changes nothing.",
        ),
    ),
    (
        "collect",
        Some(
            "patches the repository (journaled), runs the model and restores every byte at the \
             end, also when the call is cancelled (as Ctrl-C does), unless `keep_patch`; \
             reports progress as it goes.",
        ),
    ),
    ("summary", None),
    ("compare", None),
    ("advise", None),
    ("breakdown", None),
    ("status", None),
    (
        "revert",
        Some("restores every file npuprof changed in the repository, from its journal."),
    ),
    (
        "skill",
        Some(
            "with `install` only, writes the skill into the repository \
             (`.agents/skills/npuprof/SKILL.md`, journaled: `revert` removes it).",
        ),
    ),
];

/// The flags a tool leaves out, by command (`*`: every command), each with why.
pub const LEFT_OUT: &[(&str, &str, &str)] = &[
    (
        "*",
        "json",
        "always passed: the result is the command's --json document",
    ),
    (
        "*",
        "yes",
        "a tool never asks (stdin is closed and --json implies it): the defaults apply",
    ),
    (
        "lint",
        "fix",
        "the lint tool is read-only: `diff` shows the fixes, the command line applies them",
    ),
    (
        "summary",
        "html",
        "a page for people written to a file; the tool is read-only and returns the JSON",
    ),
    (
        "compare",
        "html",
        "a page for people written to a file; the tool is read-only and returns the JSON",
    ),
    (
        "advise",
        "html",
        "a page for people written to a file; the tool is read-only and returns the JSON",
    ),
    (
        "breakdown",
        "html",
        "a page for people written to a file; the tool is read-only and returns the JSON",
    ),
];

/// The reference pages served as resources (`npuprof://docs/<page>`).
const RESOURCES: &[(&str, &str, &str)] = &[
    (
        "findings.md",
        "Every finding code of verify, advise and lint: severity, meaning, next action.",
        include_str!("../../../../docs/findings.md"),
    ),
    (
        "lint-rules.md",
        "lint's rules and what each cannot see.",
        include_str!("../../../../docs/lint-rules.md"),
    ),
    (
        "json.md",
        "The --json documents every tool returns, by command and schema_version.",
        include_str!("../../../../docs/json.md"),
    ),
];

/// What the server tells a host about itself.
const INSTRUCTIONS: &str = "npuprof's commands as tools, for profiling PyTorch inference on \
Ascend NPUs (route → plan → patch or collect → verify → summary/advise → revert). Each result \
is the command's --json document as structured content (schema_version first; \
npuprof://docs/json.md), after a one-line summary; exit 1 (findings, or changes a dry run \
would make) is a result, not an error. A failure is a tool error carrying the error document \
{code, message, hint}. Relative paths are the server's working directory's. The tools that \
are not read-only say what they change; every repository change is journaled: `status` lists \
it, `revert` restores every byte.";

/// Runs `npuprof mcp`: serves until stdin ends.
pub fn run(_args: Args) -> anyhow::Result<Exit> {
    let program = std::env::current_exe().context("cannot find the npuprof binary to run")?;
    let server = Server {
        name: "npuprof".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        instructions: INSTRUCTIONS.into(),
        program,
        tools: tools(&crate::cli()),
        resources: RESOURCES
            .iter()
            .map(|(page, description, text)| Resource {
                uri: format!("npuprof://docs/{page}"),
                name: (*page).to_owned(),
                description: (*description).to_owned(),
                text: (*text).to_owned(),
            })
            .collect(),
        error_schema_version: crate::output::SCHEMA_VERSION,
    };
    npuprof_mcp::run(server, || (tokio::io::stdin(), tokio::io::stdout()))?;
    Ok(Exit::Ok)
}

/// The tools, described from `cli`'s subcommands.
pub fn tools(cli: &clap::Command) -> Vec<Tool> {
    let mut cli = cli.clone();
    cli.build();
    TOOLS
        .iter()
        .filter_map(|(name, writes)| {
            let command = cli.find_subcommand(name)?;
            Some(tool(command, *writes))
        })
        .collect()
}

/// One command as a tool.
fn tool(command: &clap::Command, writes: Option<&str>) -> Tool {
    let name = command.get_name().to_owned();
    let about = command
        .get_about()
        .map(ToString::to_string)
        .unwrap_or_default();
    let about = about.trim_end_matches('.');
    let description = match writes {
        Some(what) => format!("{about}. Changes files: {what}"),
        None => format!("{about}. Read-only."),
    };
    let json = command.get_arguments().any(|arg| arg.get_id() == "json");
    let params = command
        .get_arguments()
        .filter(|arg| !left_out(&name, arg))
        .filter_map(param)
        .collect();
    Tool {
        name,
        description,
        access: if writes.is_some() {
            Access::Writes
        } else {
            Access::ReadOnly
        },
        json,
        params,
    }
}

/// Whether `arg` of `command` is left out of its tool: clap's own help and version, and the
/// flags of [`LEFT_OUT`].
fn left_out(command: &str, arg: &clap::Arg) -> bool {
    let builtin = matches!(
        arg.get_action(),
        ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
    );
    builtin
        || LEFT_OUT
            .iter()
            .any(|(cmd, id, _)| (*cmd == "*" || *cmd == command) && arg.get_id() == *id)
}

/// One flag or positional argument as a tool argument; `None` for a flag without a long name
/// (none has one today: the unit test would name it).
fn param(arg: &clap::Arg) -> Option<Param> {
    let place = if arg.is_last_set() {
        Place::Trailing
    } else if arg.is_positional() {
        Place::Positional
    } else {
        Place::Flag(format!("--{}", arg.get_long()?))
    };
    let name = arg.get_long().map_or_else(
        || arg.get_id().as_str().to_owned(),
        |long| long.replace('-', "_"),
    );
    let action = arg.get_action();
    let kind = if matches!(action, ArgAction::SetTrue) {
        Kind::Switch
    } else if matches!(action, ArgAction::Count) {
        Kind::Integer
    } else if !arg.get_possible_values().is_empty() {
        Kind::Choice(
            arg.get_possible_values()
                .iter()
                .filter(|value| !value.is_hide_set())
                .map(|value| value.get_name().to_owned())
                .collect(),
        )
    } else if is_whole_number(arg) {
        Kind::Integer
    } else {
        Kind::Text
    };
    let multiple = matches!(action, ArgAction::Append)
        || arg
            .get_num_args()
            .is_some_and(|range| range.max_values() > 1);
    let default = (kind != Kind::Switch)
        .then(|| arg.get_default_values().first())
        .flatten()
        .map(|value| value.to_string_lossy().into_owned());
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(ToString::to_string)
        .unwrap_or_default();
    Some(Param {
        name,
        help,
        kind,
        multiple,
        required: arg.is_required_set(),
        default,
        place,
    })
}

/// Whether `arg` parses into an unsigned whole number.
fn is_whole_number(arg: &clap::Arg) -> bool {
    let parsed = arg.get_value_parser().type_id();
    [
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
    ]
    .iter()
    .any(|id| parsed == *id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commands that are not tools, each with why.
    const NOT_TOOLS: &[(&str, &str)] = &[
        (
            "completions",
            "a shell's completion script is for people's shells",
        ),
        (
            "man",
            "the manual page is for people; the tools' descriptions are the agent's",
        ),
        ("mcp", "the server itself"),
    ];

    /// Every flag of a tool's command is in its schema or deliberately left out, every command
    /// is a tool or deliberately not one, and every reason to leave one out still applies.
    #[test]
    fn every_flag_is_in_its_tools_schema_or_left_out_with_a_reason() {
        let mut cli = crate::cli();
        cli.build();
        let tools = tools(&cli);
        for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
            let name = sub.get_name();
            let Some(tool) = tools.iter().find(|t| t.name == name) else {
                assert!(
                    NOT_TOOLS.iter().any(|(cmd, _)| *cmd == name),
                    "`npuprof {name}` is neither a tool nor in NOT_TOOLS"
                );
                continue;
            };
            let schema = tool.input_schema();
            let properties = schema["properties"].as_object().unwrap();
            for arg in sub.get_arguments() {
                let long = arg.get_long().map(|l| l.replace('-', "_"));
                let in_schema =
                    properties.contains_key(long.as_deref().unwrap_or(arg.get_id().as_str()));
                assert!(
                    in_schema || left_out(name, arg),
                    "`npuprof {name}`: flag `{}` is neither in the tool's schema nor in LEFT_OUT",
                    arg.get_id()
                );
                assert!(
                    !(in_schema && left_out(name, arg)),
                    "`npuprof {name}`: flag `{}` is both",
                    arg.get_id()
                );
            }
        }
        for (cmd, id, _) in LEFT_OUT {
            let used = cli.get_subcommands().any(|sub| {
                (*cmd == "*" || sub.get_name() == *cmd)
                    && TOOLS.iter().any(|(t, _)| *t == sub.get_name())
                    && sub.get_arguments().any(|arg| arg.get_id() == *id)
            });
            assert!(used, "LEFT_OUT's ({cmd}, {id}) names no flag of a tool");
        }
        for (cmd, _) in NOT_TOOLS {
            assert!(
                cli.find_subcommand(cmd).is_some(),
                "NOT_TOOLS names no command `{cmd}`"
            );
        }
        assert_eq!(tools.len(), TOOLS.len(), "a tool names no command");
    }

    #[test]
    fn flags_become_typed_arguments() {
        let tools = tools(&crate::cli());
        let schema = |name: &str| {
            serde_json::Value::Object(
                tools
                    .iter()
                    .find(|t| t.name == name)
                    .unwrap()
                    .input_schema(),
            )
        };
        let patch = schema("patch");
        let properties = &patch["properties"];
        assert_eq!(properties["dry_run"]["type"], "boolean");
        assert_eq!(properties["decode_active"]["type"], "integer");
        assert_eq!(
            properties["phase"]["enum"],
            serde_json::json!(["both", "mm_encode", "prefill", "decode"])
        );
        assert_eq!(properties["max_new_tokens"]["default"], "auto");
        assert!(properties.get("json").is_none() && properties.get("yes").is_none());
        let collect = schema("collect");
        assert_eq!(collect["properties"]["launch"]["type"], "array");
        let compare = schema("compare");
        assert_eq!(compare["required"], serde_json::json!(["base"]));
        let verify = schema("verify");
        assert_eq!(verify["properties"]["merge"]["type"], "array");
        let by_name = |name: &str| tools.iter().find(|t| t.name == name).unwrap();
        assert_eq!(by_name("verify").access, Access::ReadOnly);
        assert_eq!(by_name("collect").access, Access::Writes);
        assert!(!by_name("skill").json && by_name("status").json);
    }
}
