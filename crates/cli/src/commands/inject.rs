//! `npuprof inject`.

use crate::exit::Exit;

/// Arguments of `npuprof inject`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `npuprof inject`.
pub fn run(_args: Args) -> anyhow::Result<Exit> {
    anyhow::bail!("`npuprof inject` is not implemented yet")
}
