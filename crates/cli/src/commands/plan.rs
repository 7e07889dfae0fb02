//! `npuprof plan`.

use crate::exit::Exit;

/// Arguments of `npuprof plan`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `npuprof plan`.
pub fn run(_args: Args) -> anyhow::Result<Exit> {
    anyhow::bail!("`npuprof plan` is not implemented yet")
}
