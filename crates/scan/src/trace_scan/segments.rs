//! One large trace scanned in segments on all cores.
//!
//! A segment starts at the `{` of a top-level event: a boundary is a `{` that follows a `,`
//! that follows a `}` (whitespace between them allowed), found near each multiple of the
//! segment size. Each segment after the first is scanned as the array `[` + its bytes, so that
//! an ordinary scanner judges it, and its offsets are made the file's.
//!
//! The joins are checked in file order: every segment but the last must end as an unterminated
//! array right after a comma, that is, at an event boundary of the top level, which makes the
//! next segment's start true. The first segment that stops at an error, or the last one, gives
//! the verdict (an error, a cut, a trailing comma, or a valid end). A boundary inside a string
//! or a nested object fails the check; the caller then scans the file in one pass. Pieces are
//! cut where a single pass cuts them, so that even the bytes read before an error agree. The
//! segments' facts are added in file order: the result equals the one-pass scan's (the
//! differential tests hold it to that).

use std::fs::File;
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;

use crate::file_ranges::{in_file_order, read_full_at};

use super::grammar::MAX_PROCESS_NAMES;
use super::{TraceScan, TraceScanner, TraceState};

/// Bytes read around each multiple of the segment size to find a boundary.
const SEARCH: usize = 64 << 10;
/// Bytes passed to a scanner at a time: a single pass's pieces.
const PIECE: usize = super::READ;
/// Bytes mapped at a time: half of a one-pass scan's window, as several scanners map at once.
#[cfg(target_os = "linux")]
const WINDOW: usize = crate::mapped::WINDOW / 2;

/// Scans `file` (`len` bytes) in segments of about `segment` bytes, a few per core at a time;
/// `None` when it must be scanned in one pass: no boundary was found, a join failed or a
/// segment is not a valid trace.
pub(super) fn scan(
    file: &File,
    len: u64,
    segment: u64,
    on_bytes: &(dyn Fn(u64) + Sync),
) -> std::io::Result<Option<TraceScan>> {
    let starts = boundaries(file, len, segment.max(1))?;
    if starts.len() < 2 {
        return Ok(None);
    }
    let mut whole: Option<TraceScan> = None;
    let taken = in_file_order(
        &starts,
        len,
        |start, end| scan_range(file, start, end, on_bytes),
        |start, end, part| {
            let part = match part {
                Ok(part) => part,
                Err(e) => return ControlFlow::Break(Err(e)),
            };
            let failed = matches!(part.state, TraceState::Malformed { .. });
            // Every segment but the last ends after a comma at the top level; one that stops at
            // an error read only up to it.
            let joined = match part.state {
                TraceState::Unterminated {
                    trailing_comma: true,
                } => true,
                _ => end == len || failed,
            };
            let read_all = failed || part.bytes == end - start;
            // A segment that filled its list of process names may have dropped one that a
            // single pass keeps.
            if !joined || !read_all || part.process_names.len() >= MAX_PROCESS_NAMES {
                return ControlFlow::Break(Ok(None));
            }
            let mut so_far = match whole.take() {
                None => part,
                Some(before) => join(before, part),
            };
            if failed {
                // A single pass reads on to the end of the piece that holds the error, where
                // the segment's end may have cut it.
                so_far.bytes = so_far.bytes.next_multiple_of(PIECE as u64).min(len);
            }
            if failed || end == len {
                return ControlFlow::Break(Ok(Some(so_far)));
            }
            whole = Some(so_far);
            ControlFlow::Continue(())
        },
    );
    // The last segment ends at `len`, so `take` breaks on it at the latest.
    taken.unwrap_or(Ok(None))
}

/// The scan of the bytes `start..end` of `file`, as the array `[` + those bytes when `start`
/// is not 0; its offsets and `bytes` are made the file's.
fn scan_range(
    file: &File,
    start: u64,
    end: u64,
    on_bytes: &(dyn Fn(u64) + Sync),
) -> std::io::Result<TraceScan> {
    let mut scanner = TraceScanner::new();
    if start > 0 {
        scanner.feed(b"[");
    }
    #[cfg(not(target_os = "linux"))]
    let at = start;
    #[cfg(target_os = "linux")]
    let at = {
        // Windows from a piece's start: a piece never spans two windows.
        let from = start - start % PIECE as u64;
        let mut at = from;
        crate::mapped::for_each_window(file, from, end, WINDOW, |window| {
            let skip = usize::try_from(start.saturating_sub(at))
                .map_or(window.len(), |s| s.min(window.len()));
            let go_on = feed(&mut scanner, on_bytes, at + skip as u64, &window[skip..]);
            at += window.len() as u64;
            go_on
        })
        .map_err(|shrunk| {
            std::io::Error::other(format!(
                "the file shrank while it was being read (under the window at byte {}): run \
                 verify again once it is written",
                shrunk.offset
            ))
        })?
        .max(start)
    };
    // What the windows did not cover (a window could not be mapped), read.
    let mut at = at;
    let mut buf = vec![0; PIECE];
    while at < end && !scanner.failed() {
        let want =
            (PIECE - (at % PIECE as u64) as usize).min(usize::try_from(end - at).unwrap_or(PIECE));
        let n = match file.read_at(&mut buf[..want], at) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        feed(&mut scanner, on_bytes, at, &buf[..n]);
        at += n as u64;
    }
    let mut scan = scanner.finish();
    if start > 0 {
        // The scanner's offset 0 is the `[` put before `start`.
        let moved = |offset: u64| offset + start - 1;
        scan.bytes -= 1;
        if scan.last_event_end > 0 {
            scan.last_event_end = moved(scan.last_event_end);
        }
        scan.state = match scan.state {
            TraceState::CutMidEvent { event_start } => TraceState::CutMidEvent {
                event_start: moved(event_start),
            },
            TraceState::TrailingCommaClose { comma } => TraceState::TrailingCommaClose {
                comma: moved(comma),
            },
            TraceState::Malformed { offset, reason } => TraceState::Malformed {
                offset: moved(offset),
                reason,
            },
            state => state,
        };
    }
    Ok(scan)
}

/// Feeds `bytes`, which start at offset `at` of the file, in pieces that end where a single
/// pass's end (multiples of [`PIECE`] from the file's start), so that a scan stopped by an
/// error has read as far as a single pass; `false` once the scanner failed.
fn feed(
    scanner: &mut TraceScanner,
    on_bytes: &(dyn Fn(u64) + Sync),
    mut at: u64,
    mut bytes: &[u8],
) -> bool {
    while !bytes.is_empty() && !scanner.failed() {
        let n = (PIECE - (at % PIECE as u64) as usize).min(bytes.len());
        scanner.feed(&bytes[..n]);
        on_bytes(n as u64);
        (at, bytes) = (at + n as u64, &bytes[n..]);
    }
    !scanner.failed()
}

/// The facts of a file from those of its first part (`before`) and of the part that follows.
fn join(mut before: TraceScan, after: TraceScan) -> TraceScan {
    before.state = after.state;
    before.bytes += after.bytes;
    before.events += after.events;
    if after.last_event_end > 0 {
        before.last_event_end = after.last_event_end;
    }
    for name in after.process_names {
        if before.process_names.len() < MAX_PROCESS_NAMES && !before.process_names.contains(&name) {
            before.process_names.push(name);
        }
    }
    before
}

/// 0, then an event boundary (see the module doc) at or after each multiple of `segment`
/// (one with no boundary in the [`SEARCH`] bytes after it is dropped).
fn boundaries(file: &File, len: u64, segment: u64) -> std::io::Result<Vec<u64>> {
    let mut starts = vec![0];
    let mut window = vec![0; SEARCH];
    let mut at = segment;
    while at < len {
        let want = usize::try_from(len - at).map_or(SEARCH, |rest| rest.min(SEARCH));
        let n = read_full_at(file, &mut window[..want], at)?;
        if let Some(i) = event_start(&window[..n])
            && starts.last().is_some_and(|&last| at + i as u64 > last)
        {
            starts.push(at + i as u64);
        }
        at += segment;
    }
    Ok(starts)
}

/// The index of the first `{` in `bytes` preceded by `}` `,` (whitespace between them allowed).
fn event_start(bytes: &[u8]) -> Option<usize> {
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    memchr::memchr_iter(b'{', bytes).find(|&i| {
        let mut before = bytes[..i].iter().rev().skip_while(|b| blank(b));
        before.next() == Some(&b',') && before.find(|b| !blank(b)) == Some(&b'}')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_starts_follow_a_closed_object_and_a_comma() {
        assert_eq!(event_start(b"x\":1},{\"a\""), Some(6));
        assert_eq!(event_start(b"1} ,\r\n {\"a\""), Some(7));
        // A `{` after `:` or `[`, or after a comma not preceded by `}`, is no event start.
        assert_eq!(event_start(b"\"a\":{\"b\":[{1,{"), None);
        assert_eq!(event_start(b"{"), None);
    }
}
