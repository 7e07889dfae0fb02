//! What the advise tests share: advising a path with the options a test needs.

use std::path::Path;

use npuprof_advise::{Advice, Options, advise};

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
