//! `npuprof patch`.

use crate::exit::Exit;

/// Arguments of `npuprof patch`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `npuprof patch`.
pub fn run(_args: Args) -> anyhow::Result<Exit> {
    anyhow::bail!("`npuprof patch` is not implemented yet")
}
