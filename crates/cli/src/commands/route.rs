//! `npuprof route`.

use std::path::PathBuf;

use crate::exit::Exit;

/// Arguments of `npuprof route`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Repository to scan.
    #[arg(default_value = ".")]
    pub path: PathBuf,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `npuprof route`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    anyhow::bail!("route is not implemented yet ({})", args.path.display())
}
