//! `npuprof completions SHELL`: the shell completion script, generated from the command-line
//! definition (clap_complete), on stdout.

use std::io::Write as _;

use crate::exit::Exit;
use crate::output;

/// Arguments of `npuprof completions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Runs `npuprof completions`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    // Generated into memory first: clap_complete panics on a failed write (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut crate::cli(), "npuprof", &mut script);
    output::stdout().write_all(&script)?;
    Ok(Exit::Ok)
}
