//! What every benchmark needs: the workspace root and a release build of `npuprof`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, ensure};

/// The workspace root (the parent of `xtask/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The target directory (`CARGO_TARGET_DIR`, else `<root>/target`).
pub fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// Builds `npuprof` in release mode and returns the binary's path.
pub fn build_npuprof(root: &Path) -> anyhow::Result<PathBuf> {
    eprintln!("building npuprof (release)...");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .current_dir(root)
        .args([
            "build",
            "--release",
            "-p",
            "npuprof-cli",
            "--bin",
            "npuprof",
        ])
        .status()
        .context("running cargo build")?;
    ensure!(
        status.success(),
        "cargo build --release -p npuprof-cli failed"
    );
    Ok(release_npuprof(root))
}

/// The release `npuprof` a benchmark times: built now, or (`no_build`) the one already there.
pub fn bench_npuprof(root: &Path, no_build: bool) -> anyhow::Result<PathBuf> {
    let npuprof = if no_build {
        release_npuprof(root)
    } else {
        build_npuprof(root)?
    };
    ensure!(
        npuprof.is_file(),
        "{} not found (build it, or drop --no-build)",
        npuprof.display()
    );
    Ok(npuprof)
}

/// Where the release `npuprof` binary is.
fn release_npuprof(root: &Path) -> PathBuf {
    target_dir(root).join("release/npuprof")
}
