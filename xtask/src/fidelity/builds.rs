//! The torch-npu builds the harness checks, and where pip finds each wheel.

/// One torch-npu release on PyPI: its version and the wheel tags pip is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Build {
    /// `torch_npu.__version__`, `.postN` included (`profiler_info.torch_npu_version`).
    pub version: &'static str,
    /// `--python-version` for `pip download`.
    pub python: &'static str,
    /// `--platform` for `pip download`.
    pub platform: &'static str,
}

/// The builds checked by default, oldest build date first (§11 of the torch-npu reference:
/// behaviour follows the build date, so 2.7.1.post11 sits after 2.10.0). To add a build, add a
/// row here and one to `npuprof_lint::torch_npu::BUILDS` (see docs/fidelity.md).
pub const BUILDS: &[Build] = &[
    build("2.1.0.post10", "3.10", "manylinux2014_x86_64"),
    build("2.5.1", "3.10", "manylinux2014_x86_64"),
    build("2.7.1", "3.10", "manylinux_2_28_x86_64"),
    build("2.10.0", "3.10", "manylinux_2_28_x86_64"),
    build("2.7.1.post11", "3.10", "manylinux_2_28_x86_64"),
    build("2.14.0", "3.11", "manylinux_2_28_x86_64"),
];

const fn build(version: &'static str, python: &'static str, platform: &'static str) -> Build {
    Build {
        version,
        python,
        platform,
    }
}

/// The builds named by `--builds` (comma-separated versions), in the order given.
pub fn select(names: Option<&str>) -> anyhow::Result<Vec<Build>> {
    let Some(names) = names else {
        return Ok(BUILDS.to_vec());
    };
    names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|name| {
            BUILDS
                .iter()
                .copied()
                .find(|b| b.version == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = BUILDS.iter().map(|b| b.version).collect();
                    anyhow::anyhow!(
                        "unknown build {name:?}: known builds are {} (add one in xtask/src/fidelity/builds.rs)",
                        known.join(", ")
                    )
                })
        })
        .collect()
}
