//! The `npuprof` command-line tool: the only part of npuprof that prints or touches files.

/// `eprintln!` that never panics: a line on stderr through [`output::stderr_write`].
macro_rules! errln {
    () => {
        $crate::output::stderr_write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::stderr_write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that never panics (see [`errln!`]).
macro_rules! errprint {
    ($($arg:tt)*) => {
        $crate::output::stderr_write(format_args!($($arg)*))
    };
}

mod args;
mod ask;
mod commands;
mod examples;
mod exit;
mod failure;
mod output;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _, Parser};

use crate::commands::Command;
use crate::exit::Exit;
use crate::failure::{Failure, is_broken_pipe};

/// Collect usable torch_npu profiles of PyTorch inference on Ascend NPUs.
///
/// Exit codes: 0 ok; 1 findings or changes (verify/lint found errors, a dry run has changes);
/// 2 npuprof itself could not run (bad arguments, unreadable input, refused edit). With `--json`,
/// a failure prints `{"schema_version", "ok": false, "error": {"code", "message", "hint"}}`.
#[derive(Debug, Parser)]
#[command(name = "npuprof", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The whole command-line definition: the derived one with every command's examples.
pub fn cli() -> clap::Command {
    examples::attach(Cli::command())
}

fn main() -> ExitCode {
    let json = json_requested(std::env::args_os());
    let parsed = cli()
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(err) => return clap_exit(&err, json),
    };
    // Fault injection is honoured by every build: say so, since it breaks writes on purpose.
    if let Some(notice) = npuprof_journal::failpoint::env_notice() {
        errln!("npuprof: warning: {notice}");
    }
    let code = match cli.command.run() {
        Ok(exit) => exit.into(),
        Err(err) => error_exit(&err, json),
    };
    // A message that could not be written is a failure too (its work is finished first).
    if output::stderr_failed() {
        return Exit::Error.into();
    }
    code
}

/// Whether the command line asks for JSON (`--json` before any `--`); read from the raw
/// arguments so that a command line clap rejects still gets a JSON error.
fn json_requested(args: impl IntoIterator<Item = OsString>) -> bool {
    args.into_iter()
        .skip(1)
        .take_while(|arg| arg != "--")
        .any(|arg| arg == "--json")
}

/// Help and version go to stdout with exit 0; usage errors to stderr (and, with `--json`, an
/// error document to stdout) with exit 2.
fn clap_exit(err: &clap::Error, json: bool) -> ExitCode {
    let _ = err.print();
    if !err.use_stderr() {
        return Exit::Ok.into();
    }
    if json {
        let _ = output::print_json_error(&Failure::from_clap(err));
    }
    Exit::Error.into()
}

/// A command's error: on stderr (with its hint when that is more than the generic one), and with `--json` also as an error document on stdout. A
/// reader that went away ends the command quietly.
fn error_exit(err: &anyhow::Error, json: bool) -> ExitCode {
    if is_broken_pipe(err) {
        return Exit::Error.into();
    }
    let failure = Failure::from_error(err);
    errln!("npuprof: error: {}", failure.message());
    if let Some(hint) = failure.specific_hint() {
        errln!("  hint: {hint}");
    }
    if json {
        let _ = output::print_json_error(&failure);
    }
    Exit::Error.into()
}

#[cfg(test)]
mod tests {
    use super::json_requested;

    fn args(line: &str) -> Vec<std::ffi::OsString> {
        line.split_whitespace().map(Into::into).collect()
    }

    #[test]
    fn json_is_read_before_the_launch_command_only() {
        assert!(json_requested(args("npuprof route . --json")));
        assert!(!json_requested(args("npuprof route .")));
        assert!(!json_requested(args(
            "npuprof collect --model m --yaml f -- run.sh --json"
        )));
    }
}
