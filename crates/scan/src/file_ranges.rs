//! Work on the ranges of one file, a few per core at a time, taken in file order: how verify
//! scans a large trace or CSV and summary reads a large CSV in segments; where a CSV's
//! segments start; reading at an offset.

use std::fs::File;
use std::io::Read;
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;

use rayon::prelude::*;

/// Bytes searched after a multiple of the segment size for a segment's start.
const SEARCH: usize = 64 << 10;

/// The largest segment of a file read in segments (a file of less than two is read in one
/// pass).
pub const MAX_SEGMENT: u64 = 64 << 20;

/// The number of segments of a file read in segments is a multiple of this.
const SEGMENTS_MULTIPLE: u64 = 16;

/// The segment size for a file of `len` bytes: as many segments of [`MAX_SEGMENT`] as it
/// takes, rounded up to a multiple of 16, so that 2, 4, 8 or 16 cores, taking two segments
/// each at a time (see [`in_file_order`]), finish together. [`MAX_SEGMENT`] for a file of fewer
/// than two such segments. It depends on the file's size alone, as the result's sums do.
pub fn segment_size(len: u64) -> u64 {
    if len < 2 * MAX_SEGMENT {
        return MAX_SEGMENT;
    }
    len.div_ceil(
        len.div_ceil(MAX_SEGMENT)
            .next_multiple_of(SEGMENTS_MULTIPLE),
    )
}

/// The [`segment_size`] of `file` when rayon has more than one thread to read its segments;
/// `None` on one, where one pass is as fast.
pub fn parallel_segment_size(file: &File) -> std::io::Result<Option<u64>> {
    if rayon::current_num_threads() < 2 {
        return Ok(None);
    }
    Ok(Some(segment_size(file.metadata()?.len())))
}

/// 0, then just past the first `\n` at or after each multiple of `segment` (a multiple with no
/// `\n` in the 64 KiB after it is dropped): where the segments of a CSV of `len` bytes start.
/// A `\n` inside a quoted field starts no record: callers check that each segment ends where
/// the next one starts.
pub fn line_starts(file: &File, len: u64, segment: u64) -> std::io::Result<Vec<u64>> {
    let mut starts = vec![0];
    let mut window = vec![0; SEARCH];
    let segment = segment.max(1);
    let mut at = segment;
    while at < len {
        let want = usize::try_from(len - at).map_or(SEARCH, |rest| rest.min(SEARCH));
        let n = read_full_at(file, &mut window[..want], at)?;
        if let Some(i) = memchr::memchr(b'\n', &window[..n]) {
            let start = at + i as u64 + 1;
            if start < len && starts.last().is_some_and(|&last| start > last) {
                starts.push(start);
            }
        }
        at += segment;
    }
    Ok(starts)
}

/// Reads `buf.len()` bytes at `offset`, fewer at the end of the file; the number read. The
/// file's offset stays where it is.
pub fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The bytes of a file from an offset on, read at their offsets (see [`read_full_at`]), so
/// that several readers share one open file; `on_bytes` is told of those read before `end`.
pub struct ReadAt<'f, F> {
    file: &'f File,
    at: u64,
    end: u64,
    on_bytes: F,
}

impl<'f, F: Fn(u64)> ReadAt<'f, F> {
    /// A reader of `file` from `start`, reporting the bytes up to `end`.
    pub fn new(file: &'f File, start: u64, end: u64, on_bytes: F) -> Self {
        Self {
            file,
            at: start,
            end,
            on_bytes,
        }
    }
}

impl<F: Fn(u64)> Read for ReadAt<'_, F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        let inside = (self.at + n as u64).min(self.end).saturating_sub(self.at);
        if inside > 0 {
            (self.on_bytes)(inside);
        }
        self.at += n as u64;
        Ok(n)
    }
}

/// `segmented(len, counted)` of `file`, a regular file of at least two segments of `segment`
/// bytes, with `counted` passing the progress on to `on_bytes`; when that gives `None` (or the
/// file is smaller), `one_pass(progress)`, whose progress `on_bytes` is told of only past the
/// bytes the segments reported.
pub fn in_segments_or_one_pass<T>(
    file: &File,
    segment: u64,
    on_bytes: impl Fn(u64) + Sync,
    segmented: impl FnOnce(u64, &(dyn Fn(u64) + Sync)) -> std::io::Result<Option<T>>,
    one_pass: impl FnOnce(&mut dyn FnMut(u64)) -> std::io::Result<T>,
) -> std::io::Result<T> {
    let meta = file.metadata()?;
    let mut before = 0;
    if meta.is_file() && meta.len() >= segment.saturating_mul(2) {
        let reported = std::sync::atomic::AtomicU64::new(0);
        let counted = |n: u64| {
            reported.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            on_bytes(n);
        };
        if let Some(done) = segmented(meta.len(), &counted)? {
            return Ok(done);
        }
        before = reported.into_inner();
    }
    one_pass(&mut progress_past(before, on_bytes))
}

/// The progress of a pass over a file that segments read in part before: `on_bytes` is told
/// only of the bytes past the first `before`.
fn progress_past(before: u64, on_bytes: impl Fn(u64)) -> impl FnMut(u64) {
    let mut read = 0_u64;
    move |n| {
        let new = (read + n).saturating_sub(read.max(before));
        read += n;
        if new > 0 {
            on_bytes(new);
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_come_in_sixteens_of_at_most_the_largest() {
        const MIB: u64 = 1 << 20;
        for len in [
            128 * MIB,
            335_561_287,
            693_049_756,
            1_000_000_007,
            2 << 30,
            1 << 40,
        ] {
            let segment = segment_size(len);
            let segments = len.div_ceil(segment);
            assert!(segment <= MAX_SEGMENT, "{len}: {segment}");
            assert_eq!(
                segments,
                len.div_ceil(64 * MIB).next_multiple_of(16),
                "{len}: {segment}"
            );
        }
        // Fewer than two segments: the largest, so that the file is read in one pass.
        assert_eq!(segment_size(128 * MIB - 1), MAX_SEGMENT);
        assert_eq!(segment_size(0), MAX_SEGMENT);
    }
}
