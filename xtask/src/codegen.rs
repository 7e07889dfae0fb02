//! `cargo xtask codegen [--check]`: writes the reference pages under `docs/` from the code, or
//! (`--check`) exits 1 naming the pages that are stale. The pages are rendered by
//! [`pages`], which npuprof-cli's `tests/docs.rs` runs inside `cargo test` too.

pub mod pages;

use std::path::Path;
use std::process::{Command, ExitCode};

use anyhow::{Context as _, anyhow, ensure};

use crate::build::{target_dir, workspace_root};

/// Arguments of `cargo xtask codegen`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write nothing; exit 1 when a page differs from what the code renders.
    #[arg(long)]
    check: bool,
}

/// Runs `cargo xtask codegen`.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let root = workspace_root();
    let npuprof = build_debug_npuprof(&root)?;
    let pages = pages::all(&root, &npuprof).map_err(|e| anyhow!(e))?;
    let stale = pages::stale(&root, &pages);
    if args.check {
        for path in &stale {
            eprintln!("stale: {path} (run `cargo xtask codegen`)");
        }
        return Ok(if stale.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    for page in pages.iter().filter(|page| stale.contains(&page.path)) {
        let path = root.join(page.path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&path, &page.text).with_context(|| format!("writing {}", page.path))?;
        eprintln!("wrote {}", page.path);
    }
    if stale.is_empty() {
        eprintln!("docs/ is up to date");
    }
    Ok(ExitCode::SUCCESS)
}

/// Builds the debug `npuprof` (the one `cargo test` builds too) and returns its path: its help
/// is what `docs/commands.md` shows.
fn build_debug_npuprof(root: &Path) -> anyhow::Result<std::path::PathBuf> {
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .current_dir(root)
        .args(["build", "--quiet", "-p", "npuprof-cli", "--bin", "npuprof"])
        .status()
        .context("running cargo build")?;
    ensure!(status.success(), "cargo build -p npuprof-cli failed");
    let npuprof = target_dir(root).join("debug/npuprof");
    ensure!(npuprof.is_file(), "{} not found", npuprof.display());
    Ok(npuprof)
}
