//! `cargo xtask bench route`.

/// Options of the route benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the route benchmark.
pub fn run(_args: &Args) -> anyhow::Result<()> {
    anyhow::bail!("bench route is not implemented yet")
}
