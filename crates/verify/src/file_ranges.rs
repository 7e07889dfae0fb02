//! Work on the ranges of one file, a few per core at a time, taken in file order: how verify
//! scans a large trace and summary reads a large CSV in segments.

use std::ops::ControlFlow;

use rayon::prelude::*;

/// Runs `work` on each range `starts[i]..starts[i + 1]` (the last one to `len`), two per core
/// at a time, and passes the results to `take` in file order until it breaks. A batch is taken
/// before the next one starts, so memory grows with the cores, not with the file. `None` when
/// `take` took every range without breaking.
pub fn in_file_order<T: Send, B>(
    starts: &[u64],
    len: u64,
    work: impl Fn(u64, u64) -> T + Sync,
    mut take: impl FnMut(u64, u64, T) -> ControlFlow<B>,
) -> Option<B> {
    let ends = starts.iter().skip(1).copied().chain([len]);
    let ranges: Vec<(u64, u64)> = starts.iter().copied().zip(ends).collect();
    for batch in ranges.chunks(2 * rayon::current_num_threads().max(1)) {
        let done: Vec<T> = batch
            .par_iter()
            .with_max_len(1)
            .map(|&(start, end)| work(start, end))
            .collect();
        for (&(start, end), result) in batch.iter().zip(done) {
            if let ControlFlow::Break(b) = take(start, end, result) {
                return Some(b);
            }
        }
    }
    None
}
