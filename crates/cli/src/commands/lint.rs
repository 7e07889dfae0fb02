//! `npuprof lint`.

use crate::exit::Exit;

/// Arguments of `npuprof lint`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `npuprof lint`.
pub fn run(_args: Args) -> anyhow::Result<Exit> {
    anyhow::bail!("`npuprof lint` is not implemented yet")
}
