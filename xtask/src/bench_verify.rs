//! `cargo xtask bench verify`.

/// Options of the verify benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the verify benchmark.
pub fn run(_args: &Args) -> anyhow::Result<()> {
    anyhow::bail!("bench verify is not implemented yet")
}
