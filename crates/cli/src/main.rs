//! The `npuprof` command-line tool: the only part of npuprof that prints or touches files.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod commands;
mod exit;
mod journal;
mod output;

use std::process::ExitCode;

use clap::Parser;

use crate::commands::Command;
use crate::exit::Exit;

/// Collect usable torch_npu profiles of PyTorch inference on Ascend NPUs.
///
/// Exit codes: 0 ok; 1 findings or changes (verify/lint found errors, a dry run has changes);
/// 2 npuprof itself could not run (bad arguments, unreadable input, refused edit).
#[derive(Debug, Parser)]
#[command(name = "npuprof", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // clap prints help/version on stdout with exit 0 and usage errors with exit 2.
            let _ = err.print();
            return if err.use_stderr() {
                Exit::Error.into()
            } else {
                Exit::Ok.into()
            };
        }
    };
    match cli.command.run() {
        Ok(exit) => exit.into(),
        Err(err) => {
            anstream::eprintln!("npuprof: error: {err:#}");
            Exit::Error.into()
        }
    }
}
