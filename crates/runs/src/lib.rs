//! npuprof-runs: the output model of a torch_npu profiling run, what verify, summary, advise and
//! relocate read.
//!
//! Run discovery ([`discover`]), `profiler_info*.json` ([`profiler_info`]) and the build it names
//! ([`build`]), files opened without blocking on FIFOs or devices ([`probe`]), the mount table
//! ([`mounts`]), db exports ([`db`]), torch_npu's logs and task graph ([`logs`],
//! [`parse_tasks`]) and the `analyse(...)` commands that re-parse a run ([`reparse`]). It reads
//! files and never writes or prints; it judges nothing (findings are npuprof-verify's). Unix only:
//! it probes a path's file type before it opens it.

#[cfg(not(unix))]
compile_error!("npuprof-runs needs Unix (it probes FIFOs and devices); on Windows, use WSL");

pub mod build;
pub mod coverage;
pub mod db;
pub mod discover;
pub mod error;
pub mod logs;
pub mod mounts;
pub mod parse_tasks;
pub mod probe;
pub mod profiler_info;
pub mod reparse;

pub use crate::error::VerifyError;

/// The most ranks a run may have: `--ranks`, the size `parallel_group_info` gives and the ranks of a
/// merged report are bounded by it, so that the rank lists verify builds stay small (4 bytes a
/// rank) whatever a flag or a file says. Far above the largest Ascend clusters.
pub const MAX_RANKS: u32 = 1 << 16;
