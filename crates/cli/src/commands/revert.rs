//! `npuprof revert`.

use crate::exit::Exit;

/// Arguments of `npuprof revert`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `npuprof revert`.
pub fn run(_args: Args) -> anyhow::Result<Exit> {
    anyhow::bail!("`npuprof revert` is not implemented yet")
}
