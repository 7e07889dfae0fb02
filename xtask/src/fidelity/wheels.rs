//! Downloading a build's wheel with pip (cached under `target/fidelity/wheels/`) and extracting
//! its `torch_npu/profiler/**`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use super::builds::Build;

/// Why a wheel could not be had: the registry did not answer, or something else failed.
#[derive(Debug)]
pub enum Unavailable {
    /// pip could not download it (unreachable registry, unknown version or tags).
    Download(String),
    /// Anything else (pip missing, extraction failed).
    Other(anyhow::Error),
}

/// The cached wheel of `build` in `dir`, if one was downloaded before.
fn cached(dir: &Path, build: &Build) -> Option<PathBuf> {
    let prefix = format!("torch_npu-{}-", build.version);
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
        })
}

/// The wheel of `build`: the cached one, else downloaded with
/// `pip download --no-deps --only-binary=:all:` (socket timeout 20 s, one retry: never hangs).
pub fn wheel(dir: &Path, build: &Build) -> Result<PathBuf, Unavailable> {
    if let Some(found) = cached(dir, build) {
        return Ok(found);
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating {}", dir.display()))
        .map_err(Unavailable::Other)?;
    eprintln!("downloading torch-npu=={} ...", build.version);
    let out = Command::new("python3")
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
        .args([
            "--platform",
            build.platform,
            "--python-version",
            build.python,
        ])
        .args([
            "--timeout",
            "20",
            "--retries",
            "1",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg(format!("torch-npu=={}", build.version))
        .arg("-d")
        .arg(dir)
        .output()
        .context("running python3 -m pip")
        .map_err(Unavailable::Other)?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(Unavailable::Download(format!(
            "pip download torch-npu=={} failed: {}",
            build.version,
            last.trim()
        )));
    }
    cached(dir, build).ok_or_else(|| {
        Unavailable::Other(anyhow::anyhow!(
            "pip reported success but no torch_npu-{}-*.whl is in {}",
            build.version,
            dir.display()
        ))
    })
}

/// Extracts `torch_npu/profiler/**` of `wheel` into `dest` (replaced whole) with the script's
/// `extract` command.
pub fn extract(script: &Path, wheel: &Path, dest: &Path) -> anyhow::Result<()> {
    let out = Command::new("python3")
        .arg(script)
        .arg("extract")
        .arg(wheel)
        .arg(dest)
        .output()
        .context("running python3")?;
    if !out.status.success() {
        bail!(
            "extracting {}: {}",
            wheel.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
