//! `npuprof relocate`.

use crate::exit::Exit;

/// Arguments of `npuprof relocate`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `npuprof relocate`.
pub fn run(_args: Args) -> anyhow::Result<Exit> {
    anyhow::bail!("`npuprof relocate` is not implemented yet")
}
