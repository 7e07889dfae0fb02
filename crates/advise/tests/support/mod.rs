//! What the advise tests share: advising a path with the options a test needs, and reading a
//! rank's run out of the advice.
#![allow(dead_code, reason = "each test binary uses its own subset")]

use std::path::Path;

use npuprof_advise::{Advice, Options, RunInfo, advise};

/// The advice on every run under `path` (of `rank` only when given), `top` evidence items per
/// finding; panics naming the path when it cannot be read.
pub fn advised(path: &Path, rank: Option<u32>, top: usize) -> Advice {
    let options = Options {
        phase: None,
        rank,
        top,
    };
    advise(path, &options).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The run of rank `rank` in `advice`; panics when there is none.
pub fn run_of(advice: &Advice, rank: u32) -> &RunInfo {
    advice
        .runs
        .iter()
        .find(|r| r.rank == Some(rank))
        .unwrap_or_else(|| panic!("no run of rank {rank}"))
}
