//! `npuprof collect`.

use crate::exit::Exit;

/// Arguments of `npuprof collect`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `npuprof collect`.
pub fn run(_args: Args) -> anyhow::Result<Exit> {
    anyhow::bail!("`npuprof collect` is not implemented yet")
}
