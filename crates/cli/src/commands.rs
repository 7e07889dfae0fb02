//! One module per subcommand; each has an `Args` struct and a `run` function.

mod route;

use clap::Subcommand;

use crate::exit::Exit;

/// The subcommands, in the order of the workflow.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Step 0: decide whether a repository's built-in profiler can be used (path A) or one must be injected (path B).
    Route(route::Args),
}

impl Command {
    /// Runs the subcommand.
    pub fn run(self) -> anyhow::Result<Exit> {
        match self {
            Command::Route(args) => route::run(args),
        }
    }
}
