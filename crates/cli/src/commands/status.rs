//! `npuprof status`.

use crate::exit::Exit;

/// Arguments of `npuprof status`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `npuprof status`.
pub fn run(_args: Args) -> anyhow::Result<Exit> {
    anyhow::bail!("`npuprof status` is not implemented yet")
}
