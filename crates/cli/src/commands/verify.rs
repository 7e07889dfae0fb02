//! `npuprof verify`.

use crate::exit::Exit;

/// Arguments of `npuprof verify`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `npuprof verify`.
pub fn run(_args: Args) -> anyhow::Result<Exit> {
    anyhow::bail!("`npuprof verify` is not implemented yet")
}
