//! A purpose-built streaming scanner for `trace_view.json`.
//!
//! torch_npu writes the timeline as a bare JSON array of Chrome trace events, in two phases
//! (host events first, without the closing `]`; device events appended and the array closed only
//! when device parsing succeeds). The scanner classifies a file in one pass with constant memory:
//! complete, unterminated after a clean event boundary, cut in the middle of an event, closed
//! with a trailing comma (`},]`), or malformed elsewhere — with byte offsets.
//!
//! It validates all of JSON: containers, keys, colons, commas, numbers and literals, escape
//! sequences and control characters in strings, and UTF-8. It works the way simdjson does:
//! stage 1 ([`blocks`], with `simd.rs`) classifies 64 bytes at a time into bitmasks (quotes,
//! backslashes, structural characters, whitespace) and derives where strings and tokens are;
//! stage 2 ([`fast`]) visits only the structural positions and feeds the [`grammar`], which also
//! recognises `process_name` metadata events (`"ph":"M"`, `"name":"process_name"`, `args.name`).
//! [`reference`] is the same scanner one byte at a time, kept as the specification: the
//! differential tests check that every [`Engine`] gives the same [`TraceScan`] on every input.
//! A large file can be scanned in segments on all cores (`segments`), with the same result.

use std::fs::File;
use std::io::Read;

mod blocks;
mod events;
mod fast;
mod grammar;
mod members;
mod reference;
mod segments;
mod shapes;
mod tokens;
mod utf8;

pub use events::{MAX_EVENT, TraceEvents, scan_events};
use fast::BlockScanner;
pub use members::{Member, Members, Value, last_string_member};
use reference::ReferenceScanner;

/// Bytes passed to a scanner at a time when a file is scanned, from its start (the copy of a
/// read stays in the cache). Segments cut their pieces at the same offsets.
const READ: usize = 256 << 10;

/// How a trace file ends, as far as its JSON structure goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceState {
    /// A complete JSON array.
    Complete,
    /// The file is empty or holds only whitespace.
    Empty,
    /// Valid JSON, but the top level is an object rather than torch_npu's bare array.
    NotAnArray,
    /// The array was never closed; the file ends cleanly after an event (or a comma after one).
    Unterminated {
        /// Whether a `,` follows the last complete event.
        trailing_comma: bool,
    },
    /// The file ends inside an event (or inside a token).
    CutMidEvent {
        /// Byte offset where the unfinished event starts.
        event_start: u64,
    },
    /// The array closes right after a comma (`},]`): the appended device timeline was empty.
    TrailingCommaClose {
        /// Byte offset of the offending comma.
        comma: u64,
    },
    /// A syntax error before the end of the file.
    Malformed {
        /// Byte offset of the offending byte.
        offset: u64,
        /// What was expected there.
        reason: &'static str,
    },
}

/// The result of scanning one trace file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceScan {
    /// The structural verdict.
    pub state: TraceState,
    /// Bytes read (the EOF offset when the whole file was read).
    pub bytes: u64,
    /// Complete top-level events.
    pub events: u64,
    /// Byte offset just past the last complete top-level event (0 when there is none).
    pub last_event_end: u64,
    /// `args.name` of every `"ph":"M"`, `"name":"process_name"` event, in order of first sight.
    pub process_names: Vec<String>,
}

impl TraceScan {
    /// Whether a `process_name` metadata event names this process.
    pub fn has_process(&self, name: &str) -> bool {
        self.process_names.iter().any(|n| n == name)
    }
}

/// Which implementation scans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// 64-byte blocks classified with the CPU's vector unit (AVX2 or SSE2, detected at run
    /// time); the portable classification where there is none.
    #[default]
    Simd,
    /// 64-byte blocks classified byte by byte (the fallback).
    Portable,
    /// One byte at a time: the specification the others are tested against.
    Reference,
}

#[derive(Debug)]
enum Inner {
    Blocks(Box<BlockScanner>),
    Reference(Box<ReferenceScanner>),
}

/// The incremental scanner: feed chunks, then [`TraceScanner::finish`].
#[derive(Debug)]
pub struct TraceScanner {
    inner: Inner,
}

impl Default for TraceScanner {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceScanner {
    /// The fastest scanner for this CPU, at offset 0.
    pub fn new() -> Self {
        Self::with_engine(Engine::Simd)
    }

    /// A scanner with the given implementation, at offset 0.
    pub fn with_engine(engine: Engine) -> Self {
        let inner = match engine {
            Engine::Simd => Inner::Blocks(Box::new(BlockScanner::new(
                crate::simd::Simd::detect()
                    .map_or(blocks::Classifier::Portable, blocks::Classifier::Simd),
            ))),
            Engine::Portable => {
                Inner::Blocks(Box::new(BlockScanner::new(blocks::Classifier::Portable)))
            }
            Engine::Reference => Inner::Reference(Box::new(ReferenceScanner::new())),
        };
        Self { inner }
    }

    /// This scanner, noting from now on where each complete top-level event lies (see
    /// [`TraceScanner::take_events`]).
    pub fn recording_events(mut self) -> Self {
        self.grammar().record_events();
        self
    }

    /// The byte ranges (`start..end`, from the event's first byte to just past its last) of
    /// the complete top-level events found since the last call, in file order; empty unless
    /// made with [`TraceScanner::recording_events`].
    pub fn take_events(&mut self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.grammar().take_events()
    }

    fn grammar(&mut self) -> &mut grammar::Grammar {
        match &mut self.inner {
            Inner::Blocks(s) => s.grammar(),
            Inner::Reference(s) => s.grammar(),
        }
    }

    /// Whether a syntax error has been found (further input is ignored).
    pub fn failed(&self) -> bool {
        match &self.inner {
            Inner::Blocks(s) => s.failed(),
            Inner::Reference(s) => s.failed(),
        }
    }

    /// Feeds the next chunk.
    pub fn feed(&mut self, buf: &[u8]) {
        match &mut self.inner {
            Inner::Blocks(s) => s.feed(buf),
            Inner::Reference(s) => s.feed(buf),
        }
    }

    /// Classifies the input seen so far as a whole file.
    pub fn finish(self) -> TraceScan {
        match self.inner {
            Inner::Blocks(s) => s.finish(),
            Inner::Reference(s) => s.finish(),
        }
    }

    /// Scans every chunk of `reader` (256 KiB at a time, so the copy stays in cache), calling
    /// `on_bytes` after each chunk.
    pub fn scan_reader<R: Read>(
        reader: R,
        on_bytes: impl FnMut(u64),
    ) -> std::io::Result<TraceScan> {
        Self::new().scan_all(reader, on_bytes)
    }

    /// Scans a whole file from its start, as [`TraceScanner::scan_reader`] does: a large
    /// regular file through read-only memory maps, a window of a few MiB at a time (no copy
    /// into a buffer), then with reads from where the windows ended (bytes appended meanwhile
    /// included). A file that shrinks while mapped is an error.
    pub fn scan_file(file: &File, mut on_bytes: impl FnMut(u64)) -> std::io::Result<TraceScan> {
        Self::new().scan_file_pieces(file, |_, piece| on_bytes(piece.len() as u64))
    }

    /// Scans a whole file from its start as [`TraceScanner::scan_file`] does, calling `each`
    /// with the scanner and each piece of the file (consecutive, at most 256 KiB) once it is
    /// fed.
    // The scanner and the callback are used mutably by the maps only.
    #[cfg_attr(not(target_os = "linux"), allow(unused_mut))]
    fn scan_file_pieces(
        mut self,
        mut file: &File,
        mut each: impl FnMut(&mut Self, &[u8]),
    ) -> std::io::Result<TraceScan> {
        #[cfg(target_os = "linux")]
        {
            use std::io::{Seek, SeekFrom};
            let meta = file.metadata()?;
            if meta.is_file() && meta.len() >= crate::mapped::MIN_LEN {
                let passed = crate::mapped::for_each_window(
                    file,
                    0,
                    meta.len(),
                    crate::mapped::WINDOW,
                    |window| {
                        for piece in window.chunks(READ) {
                            self.feed(piece);
                            each(&mut self, piece);
                            if self.failed() {
                                return false;
                            }
                        }
                        true
                    },
                )
                .map_err(|shrunk| {
                    std::io::Error::other(format!(
                        "the file shrank while it was being read (from {} bytes, under the \
                         window at byte {}): run verify again once it is written",
                        meta.len(),
                        shrunk.offset
                    ))
                })?;
                if self.failed() {
                    return Ok(self.finish());
                }
                file.seek(SeekFrom::Start(passed))?;
            }
        }
        self.read_all(&mut file, each)
    }

    /// [`TraceScanner::scan_file`] of a large file (128 MiB or more) in segments of at most
    /// 64 MiB ([`parallel_segment_size`](crate::file_ranges::parallel_segment_size)), a few per
    /// core at a time, with the same result: segments start at top-level events and their joins
    /// are checked; a boundary that is not one sends the file to one pass (with more than one
    /// thread in rayon's pool; else one pass, which is as fast on one core). `on_bytes` is
    /// called from several threads.
    pub fn scan_file_parallel(
        file: &File,
        on_bytes: impl Fn(u64) + Sync,
    ) -> std::io::Result<TraceScan> {
        match crate::file_ranges::parallel_segment_size(file)? {
            Some(segment) => Self::scan_file_in_segments(file, segment, on_bytes),
            None => Self::scan_file(file, on_bytes),
        }
    }

    /// [`TraceScanner::scan_file_parallel`] with segments of `segment` bytes (small in tests).
    pub fn scan_file_in_segments(
        file: &File,
        segment: u64,
        on_bytes: impl Fn(u64) + Sync,
    ) -> std::io::Result<TraceScan> {
        crate::file_ranges::in_segments_or_one_pass(
            file,
            segment,
            on_bytes,
            |len, counted| segments::scan(file, len, segment, counted),
            |progress| Self::scan_file(file, progress),
        )
    }

    /// Scans the rest of `reader` with this scanner (see [`TraceScanner::scan_reader`]).
    pub fn scan_all<R: Read>(
        self,
        reader: R,
        mut on_bytes: impl FnMut(u64),
    ) -> std::io::Result<TraceScan> {
        self.read_all(reader, |_, piece| on_bytes(piece.len() as u64))
    }

    /// Scans the rest of `reader` 256 KiB at a time, calling `each` with the scanner and each
    /// piece once it is fed.
    fn read_all<R: Read>(
        mut self,
        mut reader: R,
        mut each: impl FnMut(&mut Self, &[u8]),
    ) -> std::io::Result<TraceScan> {
        // Page-aligned: the kernel copies into it faster.
        let mut storage = vec![0u8; READ + 4096];
        let skip = storage.as_ptr().align_offset(4096).min(4096);
        let buf = &mut storage[skip..skip + READ];
        loop {
            let n = match reader.read(buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.feed(&buf[..n]);
            each(&mut self, &buf[..n]);
            if self.failed() {
                break;
            }
        }
        Ok(self.finish())
    }

    /// Scans a complete in-memory document.
    pub fn scan_bytes(bytes: &[u8]) -> TraceScan {
        let mut scanner = Self::new();
        scanner.feed(bytes);
        scanner.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(s: &str) -> TraceState {
        TraceScanner::scan_bytes(s.as_bytes()).state
    }

    #[test]
    fn classifies_basic_shapes() {
        assert_eq!(state("[]"), TraceState::Complete);
        assert_eq!(state("[{\"a\":1}]"), TraceState::Complete);
        assert_eq!(state(""), TraceState::Empty);
        assert_eq!(state("  \n"), TraceState::Empty);
        assert_eq!(state("{\"a\":[1]}"), TraceState::NotAnArray);
        assert_eq!(
            state("[{\"a\":1}"),
            TraceState::Unterminated {
                trailing_comma: false
            }
        );
        assert_eq!(
            state("[{\"a\":1},"),
            TraceState::Unterminated {
                trailing_comma: true
            }
        );
        assert_eq!(
            state("[{\"a\":1},]"),
            TraceState::TrailingCommaClose { comma: 8 }
        );
        assert_eq!(
            state("[{\"a\":1},{\"b\""),
            TraceState::CutMidEvent { event_start: 9 }
        );
        assert_eq!(
            state("[{\"a\":1}]x"),
            TraceState::Malformed {
                offset: 9,
                reason: "unexpected token"
            }
        );
    }

    #[test]
    fn chunking_does_not_change_the_result() {
        let doc = br#"[{"ph": "M", "name": "process_name", "pid": 800, "args": {"name": "Ascend \"Hard\"ware"}}, {"ph":"X","ts":"17.5","id":1704161511433816104,"dur":-1.5e3,"args":{"k":[true,null,{}]}}]"#;
        let whole = TraceScanner::scan_bytes(doc);
        assert_eq!(whole.state, TraceState::Complete);
        assert_eq!(whole.events, 2);
        assert_eq!(whole.process_names, vec!["Ascend \"Hard\"ware".to_owned()]);
        for size in 1..doc.len() {
            let mut s = TraceScanner::new();
            for chunk in doc.chunks(size) {
                s.feed(chunk);
            }
            assert_eq!(s.finish(), whole, "chunk size {size}");
        }
    }

    #[test]
    fn process_name_needs_metadata_phase() {
        let doc = br#"[{"name": "process_name", "ph": "X", "args": {"name": "CANN"}}, {"args": {"name": "Ascend Hardware"}, "name": "process_name", "ph": "M"}]"#;
        let scan = TraceScanner::scan_bytes(doc);
        assert_eq!(scan.process_names, vec!["Ascend Hardware".to_owned()]);
    }
}
