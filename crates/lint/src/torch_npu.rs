//! What lint's rules rely on of the real torch_npu, per build: read in the wheels' Python
//! (`torch_npu/profiler/experimental_config.py`, `profiler.py`); `cargo xtask fidelity` holds
//! these tables to the wheels.

/// One torch_npu build and the behaviour of it that a rule's message depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Build {
    /// `torch_npu.__version__` (`profiler_info.torch_npu_version`), `.postN` included.
    pub version: &'static str,
    /// `_ExperimentalConfig` replaces `AiCMetrics.AiCoreNone` by `PipeUtilization` at Level1 and
    /// Level2 (the builds before 2026 do; 2.10.0, 2.7.1.post11 and 2.14.0 keep AiCoreNone, so
    /// no pipe metrics are collected).
    pub promotes_aicore_none: bool,
}

/// The builds whose behaviour lint knows, oldest build date first.
pub const BUILDS: &[Build] = &[
    build("2.1.0.post10", true),
    build("2.5.1", true),
    build("2.7.1", true),
    build("2.10.0", false),
    build("2.7.1.post11", false),
    build("2.14.0", false),
];

const fn build(version: &'static str, promotes_aicore_none: bool) -> Build {
    Build {
        version,
        promotes_aicore_none,
    }
}

/// The methods of torch_npu's `profile` that save results without a trace handler (real
/// `profile` has no `key_averages`: reading results in-process is not one).
pub const TRACE_HANDLER_ALTERNATIVES: &[&str] = &["export_chrome_trace"];

/// The versions of [`BUILDS`] with `promotes_aicore_none` equal to `promotes`, comma-separated.
pub(crate) fn versions(promotes: bool) -> String {
    BUILDS
        .iter()
        .filter(|b| b.promotes_aicore_none == promotes)
        .map(|b| b.version)
        .collect::<Vec<_>>()
        .join(", ")
}
