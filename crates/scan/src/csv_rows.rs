//! Splitting CSV into records and fields at memory speed, with exactly the csv crate's reading
//! (its defaults: `,`, `"` with doubled quotes, any of `\r`, `\n`, `\r\n` ending a record, blank
//! lines skipped, flexible record lengths). `verify` and `summary` both read their CSV files
//! through [`CsvRows`].
//!
//! The fast path works as the trace scanner does: stage 1 classifies 64 bytes at a time into
//! quote, comma and line-end bitmasks (`simd.rs`), finds the bytes inside quotes with a
//! prefix XOR of the quotes, and keeps per block the separators and the line ends outside
//! quotes, the separators followed by a quoted field and every `\n` (line numbers are their
//! popcounts); records and fields are then read off the set bits, and only the fields asked
//! for are split. The first ones are split a bit at a time and the rest counted a block's
//! popcount at a time. Fields at given columns are read off an index: stage 1's separators
//! flattened into their positions (one compaction per block with AVX-512), and the positions of
//! the line ends among them, so that a record's field count and each field's bounds are a few
//! reads whatever the column. A buffer grown past a few reads
//! for a long record is not indexed: its separators are passed a block's popcount at a time.
//! This stage is compiled with `popcnt` where the vector unit comes with it. Quotes are judged
//! on the way: the quote parity agrees with the csv crate as long as every quoted field is
//! `"…"` from separator to separator with only doubled quotes inside, which is how torch_npu
//! writes them. From the first quote that
//! breaks this rule, the rest of the buffer is read by `csv_core` (the csv crate's own parser,
//! [`CsvEngine::Scalar`]), which is also the path for the last record of a file. The
//! differential tests check that every engine gives the csv crate's records, fields, line
//! numbers and byte offsets on every input, however it is split by reads.
//!
//! Memory is bounded: the buffer holds at most one record (up to the limit given to
//! [`CsvRows::new`]) plus one read; the index, four bytes per separator of a few reads at most.

use std::io::Read;

use crate::decimal;
use crate::simd::{Simd, classify_csv_portable, positions_portable, prefix_xor};

/// Bytes asked of the reader at a time.
const CHUNK: usize = 256 << 10;
/// Marks a field span that points into the scratch buffer (a decoded field).
const SCRATCH: u32 = 1 << 31;

/// Which implementation splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CsvEngine {
    /// 64-byte blocks classified with the CPU's vector unit (AVX2 or SSE2), the portable
    /// classification where there is none.
    #[default]
    Simd,
    /// 64-byte blocks classified byte by byte.
    Portable,
    /// `csv_core`, a byte at a time: the specification the others are tested against.
    Scalar,
}

/// Why reading stopped.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    /// The reader failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A record (from the end of the previous one to its line end) is longer than the limit:
    /// binary data, a missing line ending, or a quote that never closes.
    #[error("a CSV record longer than {limit} bytes starts at byte {byte}")]
    TooLarge {
        /// Byte offset where the record starts (just past the end of the previous one).
        byte: u64,
        /// The limit given to [`CsvRows::new`].
        limit: usize,
    },
}

/// One record: its fields, where it starts and on which line.
#[derive(Debug)]
pub struct Record<'a> {
    buf: &'a [u8],
    scratch: &'a [u8],
    spans: &'a [(u32, u32)],
    len: usize,
    byte: u64,
    /// The `\n` bytes of the file before `buf[0]`.
    lines: u64,
    /// Stage 1's masks of `buf` from its start (empty without a stage 1), and the index in
    /// `buf` where the record's reading starts: the rest of its line number.
    masks: &'a [Seps],
    start: usize,
}

impl<'a> Record<'a> {
    /// Number of fields.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the record has no fields (never true for a record read from a file).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Field `i`, unquoted (`None` past the fields split: see [`CsvRows::next_record_split`]);
    /// of a record read by [`CsvRows::next_record_columns`], the field at its `i`-th column.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        // As `located` but written out: through it, summary's reading ran about 20 more
        // instructions per row (callgrind).
        let &(start, end) = self.spans.get(i)?;
        Some(if start & SCRATCH != 0 {
            &self.scratch[(start & !SCRATCH) as usize..end as usize]
        } else {
            &self.buf[start as usize..end as usize]
        })
    }

    /// [`Record::get`] and the field's first eight bytes as [`decimal::word`] gives them: one
    /// load where the buffer holds eight bytes from the field's start.
    #[inline]
    pub fn get_word(&self, i: usize) -> Option<(&'a [u8], u64)> {
        let (from, start, end) = self.located(i)?;
        let field = &from[start..end];
        let word = match from.get(start..start + 8) {
            Some(eight) => {
                let keep = u64::MAX.checked_shr(64 - 8 * field.len().min(8) as u32);
                u64::from_le_bytes(eight.try_into().unwrap_or_default()) & keep.unwrap_or(0)
            }
            None => decimal::word(field),
        };
        Some((field, word))
    }

    /// The bytes that hold field `i` (the buffer, or the scratch buffer for a decoded field)
    /// and its bounds in them.
    #[inline(always)]
    fn located(&self, i: usize) -> Option<(&'a [u8], usize, usize)> {
        let &(start, end) = self.spans.get(i)?;
        Some(if start & SCRATCH != 0 {
            (self.scratch, (start & !SCRATCH) as usize, end as usize)
        } else {
            (self.buf, start as usize, end as usize)
        })
    }

    /// The fields split, in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        (0..self.spans.len()).filter_map(|i| self.get(i))
    }

    /// Byte offset where the record's reading starts: just past the first line-end byte of the
    /// previous record (the csv crate's `Position::byte`).
    pub fn byte(&self) -> u64 {
        self.byte
    }

    /// The 1-based line of the record's first byte: 1 + the `\n` before it. Unlike the csv
    /// crate's `Position::line`, which counts only up to [`Record::byte`], the line ends the
    /// reading starts on (the `\n` of a CRLF, blank lines) are counted, so a CRLF file's
    /// numbers are the editor's.
    pub fn line(&self) -> u64 {
        self.lines
            + 1
            + lf_before(self.buf, self.masks, self.start)
            + leading_lf(self.buf, self.start)
    }
}

/// The `\n` bytes among the line-end bytes (`\r`, `\n`) that `buf[start..]` begins with.
fn leading_lf(buf: &[u8], start: usize) -> u64 {
    let ends = buf.get(start..).unwrap_or_default();
    let run = ends.iter().take_while(|&&b| b == b'\r' || b == b'\n');
    run.filter(|&&b| b == b'\n').count() as u64
}

/// The `\n` bytes in `buf[..end]`: stage 1 counted them when its `masks` (those of `buf` from
/// its start) reach `end`, else they are counted here.
#[inline(always)]
fn lf_before(buf: &[u8], masks: &[Seps], end: usize) -> u64 {
    let (whole, rest) = (end / 64, end % 64);
    let Some(counted) = masks.get(..whole) else {
        return memchr::memchr_iter(b'\n', &buf[..end]).count() as u64;
    };
    let mut n: u64 = counted.iter().map(|m| u64::from(m.lf.count_ones())).sum();
    if rest > 0 {
        match masks.get(whole) {
            Some(last) => n += u64::from((last.lf & ((1 << rest) - 1)).count_ones()),
            None => n += memchr::memchr_iter(b'\n', &buf[whole * 64..end]).count() as u64,
        }
    }
    n
}

/// Stage 1's masks of one block.
#[derive(Debug, Clone, Copy, Default)]
struct Seps {
    /// Commas and line ends outside quotes.
    all: u64,
    /// Line ends outside quotes.
    terms: u64,
    /// Separators followed by an opening quote (the next field is quoted).
    quoted_next: u64,
    /// `\n` bytes, inside quotes or not (the line numbers count them all).
    lf: u64,
}

/// Appends a block's masks and completes the previous block's `quoted_next` (its last bit
/// needed this block's first byte).
#[inline(always)]
fn push_block(seps: &mut Vec<Seps>, masks: Seps, prev_quoted_next: u64) {
    if let Some(prev) = seps.last_mut() {
        prev.quoted_next = prev_quoted_next;
    }
    seps.push(masks);
}

/// How the next record is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// From the stage-1 bitmasks.
    Fast,
    /// With csv_core until the buffer is refilled (after a quote the bitmasks cannot judge).
    ScalarUntilRefill,
    /// With csv_core always.
    Scalar,
}

/// What a reading attempt found.
enum Step {
    /// A record whose reading started at this buffer index.
    Record(usize),
    /// The buffer ends inside the record.
    NeedMore,
    /// Hand over to csv_core.
    Scalar,
    /// No more records.
    End,
}

/// Which fields of a record are split.
#[derive(Debug, Clone, Copy)]
enum Pick<'c> {
    /// The first ones.
    First(usize),
    /// Those at these columns.
    Columns(&'c [usize]),
}

/// What [`CsvRows::split_columns`] found.
enum Split {
    /// The record's line end and number of fields.
    Found(usize, usize),
    /// The bitmasks end inside the record.
    OutOfBits,
    /// A record the column jumps do not handle: split it field by field.
    Irregular,
}

/// Keeps the spans of the fields at `columns`, in that order, up to the first one missing.
fn keep_columns(spans: &mut Vec<(u32, u32)>, columns: &[usize]) {
    if columns.iter().enumerate().all(|(j, &c)| c >= j) {
        // In place: `spans[c]` is read before anything at `c` or past it is written.
        let mut kept = 0;
        for &c in columns {
            let Some(&span) = spans.get(c) else { break };
            spans[kept] = span;
            kept += 1;
        }
        spans.truncate(kept);
    } else {
        *spans = columns
            .iter()
            .map_while(|&c| spans.get(c).copied())
            .collect();
    }
}

/// Stage 1's separators flattened, for reading records by columns: each field's bounds are
/// then two reads, whatever its column (simdjson's structural index).
#[derive(Debug, Default)]
struct Index {
    /// Whether records are read by columns (then every stage 1 builds the index).
    wanted: bool,
    /// Whether the index covers the bitmasks of the last stage 1: not when they cover more
    /// than [`INDEX_CHUNKS`] reads (a buffer grown for a long record).
    built: bool,
    /// The buffer index of each separator outside quotes from `stage_start`, in order: the
    /// first `len` (the rest is room for a block's writes; it grows, never shrinks).
    seps: Vec<u32>,
    len: usize,
    /// The positions in `seps` of the line ends.
    terms: Vec<u32>,
    /// The positions in `seps` and in `terms` of the first separator and line end at or after
    /// `pos`, when the last record was read from the index.
    cursor: Option<(usize, usize)>,
}

/// The index is built over at most this many reads' worth of bitmasks (so its memory, four
/// bytes per separator, stays bounded).
const INDEX_CHUNKS: usize = 4;

impl Index {
    /// Flattens `masks`, the bitmasks of the bytes from buffer index `stage_start`.
    #[inline(always)]
    fn build(&mut self, simd: Option<Simd>, masks: &[Seps], stage_start: usize, limit: usize) {
        self.cursor = None;
        self.built = self.wanted && masks.len() * 64 <= limit;
        if !self.built {
            return;
        }
        self.terms.clear();
        let mut before = 0;
        for block in masks {
            let mut terms = block.terms;
            while terms != 0 {
                let below = (terms & terms.wrapping_neg()) - 1;
                self.terms.push(before + (block.all & below).count_ones());
                terms &= terms - 1;
            }
            before += block.all.count_ones();
        }
        // Room for the last block's writes past the separators.
        let room = before as usize + 64;
        if self.seps.len() < room {
            self.seps.resize(room, 0);
        }
        let blocks = masks.iter().map(|block| block.all);
        let start = stage_start as u32;
        self.len = match simd {
            Some(simd) => simd.positions(blocks, start, &mut self.seps),
            None => positions_portable(blocks, start, &mut self.seps),
        };
    }

    /// The positions in `seps` and `terms` of the first separator and line end at or after
    /// buffer index `pos`.
    fn locate(&self, pos: usize) -> (usize, usize) {
        let sep = self.seps[..self.len].partition_point(|&at| (at as usize) < pos);
        let term = self.terms.partition_point(|&t| (t as usize) < sep);
        (sep, term)
    }
}

/// A streaming CSV reader: [`CsvRows::next_record`] until `None`.
#[derive(Debug)]
pub struct CsvRows<R> {
    reader: R,
    classifier: Option<Simd>,
    mode: Mode,
    max_record: usize,
    chunk: usize,
    buf: Vec<u8>,
    len: usize,
    /// Where the next record's reading starts.
    pos: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// Stage 1, one set of masks per 64 bytes from `stage_start`.
    seps: Vec<Seps>,
    index: Index,
    stage_start: usize,
    /// Buffer index of the first quote stage 1 cannot judge (`usize::MAX` when none).
    first_bad: usize,
    spans: Vec<(u32, u32)>,
    /// Fields of the last record (split or not).
    fields: usize,
    /// Indices of the spans that open with a quote.
    quoted: Vec<u32>,
    scratch: Vec<u8>,
    ends: Vec<usize>,
    /// The `\n` bytes of the file before `buf[0]` (those after are counted when needed).
    lines: u64,
}

impl<R: Read> CsvRows<R> {
    /// A reader of `reader` with `engine`; a record longer than `max_record` bytes (at most
    /// 1 GiB) is an error.
    pub fn new(reader: R, engine: CsvEngine, max_record: usize) -> Self {
        Self::with_chunk(reader, engine, max_record, CHUNK)
    }

    /// [`CsvRows::new`] asking the reader for `chunk` bytes at a time (small in tests, to
    /// exercise records cut by reads).
    pub fn with_chunk(reader: R, engine: CsvEngine, max_record: usize, chunk: usize) -> Self {
        let max_record = max_record.min(1 << 30);
        let (classifier, mode) = match engine {
            CsvEngine::Simd => (Simd::detect(), Mode::Fast),
            CsvEngine::Portable => (None, Mode::Fast),
            CsvEngine::Scalar => (None, Mode::Scalar),
        };
        Self {
            reader,
            classifier,
            mode,
            max_record,
            chunk: chunk.max(1),
            buf: Vec::new(),
            len: 0,
            pos: 0,
            base: 0,
            eof: false,
            seps: Vec::new(),
            index: Index::default(),
            stage_start: 0,
            first_bad: usize::MAX,
            spans: Vec::new(),
            fields: 0,
            quoted: Vec::new(),
            scratch: Vec::new(),
            ends: Vec::new(),
            lines: 0,
        }
    }

    /// The next record, `None` at the end of the input.
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, CsvError> {
        self.next_record_split(usize::MAX)
    }

    /// The next record with only its first `want` fields split (at least one): the others are
    /// counted in [`Record::len`] but [`Record::get`] gives `None` for them (they may be split
    /// all the same). Faster when only the first columns are needed.
    pub fn next_record_split(&mut self, want: usize) -> Result<Option<Record<'_>>, CsvError> {
        self.next_picked(Pick::First(want))
    }

    /// The next record with only the fields at `columns` split: [`Record::get`]`(j)` is the
    /// field at `columns[j]`, and `None` from the first of `columns` past the record's fields;
    /// [`Record::len`] is the record's number of fields. With increasing `columns`, the
    /// separators between them are skipped a popcount at a time instead of one by one: faster
    /// than [`CsvRows::next_record_split`] when the columns wanted are few and far apart.
    pub fn next_record_columns(
        &mut self,
        columns: &[usize],
    ) -> Result<Option<Record<'_>>, CsvError> {
        self.next_picked(Pick::Columns(columns))
    }

    fn next_picked(&mut self, pick: Pick<'_>) -> Result<Option<Record<'_>>, CsvError> {
        if matches!(pick, Pick::Columns(_)) && !self.index.wanted {
            self.index.wanted = true;
            if self.mode == Mode::Fast {
                self.build_index();
            }
        }
        let start = loop {
            let step = match self.mode {
                Mode::Fast => self.fast_record(pick)?,
                Mode::ScalarUntilRefill | Mode::Scalar => {
                    self.index.cursor = None;
                    let step = self.scalar_record()?;
                    if let (Step::Record(_), Pick::Columns(columns)) = (&step, pick) {
                        keep_columns(&mut self.spans, columns);
                    }
                    step
                }
            };
            match step {
                Step::Record(start) => break start,
                Step::NeedMore => self.refill()?,
                Step::Scalar => self.mode = Mode::ScalarUntilRefill,
                Step::End => return Ok(None),
            }
        };
        Ok(Some(Record {
            buf: &self.buf,
            scratch: &self.scratch,
            spans: &self.spans,
            len: self.fields,
            byte: self.base + start as u64,
            lines: self.lines,
            masks: self.masks_from_start(),
            start,
        }))
    }

    /// Keeps the unread part of the buffer, reads at least one chunk more (or to the end), and
    /// runs stage 1 over it.
    fn refill(&mut self) -> Result<(), CsvError> {
        if self.len - self.pos > self.max_record {
            return Err(self.too_large());
        }
        let (buf, masks, pos) = (&self.buf, self.masks_from_start(), self.pos);
        self.lines += match self.classifier {
            Some(simd) => simd.with_bit_ops(
                #[inline(always)]
                || lf_before(buf, masks, pos),
            ),
            None => lf_before(buf, masks, pos),
        };
        self.buf.copy_within(self.pos..self.len, 0);
        self.base += self.pos as u64;
        self.len -= self.pos;
        self.pos = 0;
        let want = self.len + self.chunk;
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        while self.len < want {
            match self.reader.read(&mut self.buf[self.len..want]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        if self.mode == Mode::ScalarUntilRefill {
            self.mode = Mode::Fast;
        }
        self.index.built = false;
        if self.mode == Mode::Fast {
            self.stage1();
        }
        Ok(())
    }

    /// Stage 1's masks when they are those of the buffer from its start (empty else).
    fn masks_from_start(&self) -> &[Seps] {
        match (self.mode, self.stage_start) {
            (Mode::Fast | Mode::ScalarUntilRefill, 0) => &self.seps,
            _ => &[],
        }
    }

    fn too_large(&self) -> CsvError {
        CsvError::TooLarge {
            byte: self.base + self.pos as u64,
            limit: self.max_record,
        }
    }

    /// Classifies `buf[pos..len]` (`pos` is the start of a record, outside quotes).
    fn stage1(&mut self) {
        self.seps.clear();
        self.stage_start = self.pos;
        self.first_bad = usize::MAX;
        let data = &self.buf[self.pos..self.len];
        let mut state = Quotes::default();
        let mut blocks = data.chunks_exact(64);
        let mut at = self.pos;
        for block in &mut blocks {
            let block: &[u8; 64] = block.try_into().unwrap_or(&[0; 64]);
            let masks = state.block(self.classify(block), u64::MAX, at == self.stage_start);
            push_block(&mut self.seps, masks, state.prev_quoted_next);
            if let Some(bad) = state.bad {
                self.first_bad = self.first_bad.min(at + bad - 64);
            }
            at += 64;
        }
        let rest = blocks.remainder();
        let mut n = 64;
        if !rest.is_empty() {
            n = rest.len();
            let mut block = [0u8; 64];
            block[..n].copy_from_slice(rest);
            let masks = state.block(self.classify(&block), (1 << n) - 1, at == self.stage_start);
            push_block(&mut self.seps, masks, state.prev_quoted_next);
            if let Some(bad) = state.bad {
                self.first_bad = self.first_bad.min(at + bad - 64);
            }
            at += 64;
        }
        if let Some(bad) = state.last(n) {
            self.first_bad = self.first_bad.min(at + bad - 64);
        }
        self.build_index();
    }

    /// Builds the index of the last stage 1 when it is wanted, with the CPU's bit operations.
    fn build_index(&mut self) {
        let (index, masks, start) = (&mut self.index, &self.seps[..], self.stage_start);
        let limit = INDEX_CHUNKS * self.chunk;
        match self.classifier {
            Some(simd) => simd.with_bit_ops(
                #[inline(always)]
                || index.build(Some(simd), masks, start, limit),
            ),
            None => index.build(None, masks, start, limit),
        }
    }

    #[inline(always)]
    fn classify(&self, block: &[u8; 64]) -> crate::simd::CsvMasks {
        match self.classifier {
            Some(simd) => simd.classify_csv(block),
            None => classify_csv_portable(block),
        }
    }

    /// Reads the record at `pos` from the bitmasks, splitting the fields `pick` asks for.
    fn fast_record(&mut self, pick: Pick<'_>) -> Result<Step, CsvError> {
        match self.classifier {
            Some(simd) => simd.with_bit_ops(
                #[inline(always)]
                || self.read_record(pick),
            ),
            None => self.read_record(pick),
        }
    }

    /// [`CsvRows::fast_record`], inlined into its callers.
    #[inline(always)]
    fn read_record(&mut self, pick: Pick<'_>) -> Result<Step, CsvError> {
        let pos = self.pos;
        // Taken out of `self`, so the loop keeps lengths and pointers in registers.
        let mut spans = std::mem::take(&mut self.spans);
        let mut quoted = std::mem::take(&mut self.quoted);
        spans.clear();
        quoted.clear();
        let mut cursor = None;
        let (found, compact) = match pick {
            Pick::First(want) => (self.split(pos, want.max(1), &mut spans, &mut quoted), None),
            Pick::Columns(columns) => {
                let split = if self.index.built {
                    let (split, next) = self.index_columns(pos, columns, &mut spans, &mut quoted);
                    cursor = next;
                    split
                } else {
                    self.split_columns(pos, columns, &mut spans, &mut quoted)
                };
                match split {
                    Split::Found(end, fields) => (Some((end, fields)), None),
                    Split::OutOfBits => (None, None),
                    Split::Irregular => {
                        // A blank line or a short record: split the usual way, then pick.
                        spans.clear();
                        quoted.clear();
                        let want = columns.iter().max().map_or(1, |c| c.saturating_add(1));
                        let found = self.split(pos, want, &mut spans, &mut quoted);
                        (found, Some(columns))
                    }
                }
            }
        };
        self.index.cursor = None;
        let step = match found {
            None => Ok(self.out_of_bits()),
            Some((end, _)) if end >= self.first_bad => Ok(Step::Scalar),
            Some((end, _)) if end - pos > self.max_record => Err(self.too_large()),
            Some((end, fields)) => {
                self.pos = end + 1;
                self.fields = fields;
                self.index.cursor = cursor;
                self.unquote(&mut spans, &quoted);
                if let Some(columns) = compact {
                    keep_columns(&mut spans, columns);
                }
                Ok(Step::Record(pos))
            }
        };
        self.spans = spans;
        self.quoted = quoted;
        step
    }

    /// Splits the first `want` fields of the record whose reading starts at `pos` into `spans`
    /// (the indices of those that open with a quote into `quoted`) and counts the rest; returns
    /// the index of its line end and its number of fields, `None` when the bitmasks end first.
    #[inline(always)]
    fn split(
        &self,
        pos: usize,
        want: usize,
        spans: &mut Vec<(u32, u32)>,
        quoted: &mut Vec<u32>,
    ) -> Option<(usize, usize)> {
        let (buf, masks, stage_start) = (&self.buf[..self.len], &self.seps[..], self.stage_start);
        let mut field = pos;
        let mut field_quoted = buf.get(pos) == Some(&b'"');
        let rel = pos - stage_start;
        let mut k = rel / 64;
        let mut block = masks.get(k).copied().unwrap_or_default();
        let mut bits = block.all & (u64::MAX << (rel % 64));
        loop {
            while bits == 0 {
                k += 1;
                block = *masks.get(k)?;
                bits = block.all;
            }
            let low = bits & bits.wrapping_neg();
            bits ^= low;
            let i = stage_start + k * 64 + low.trailing_zeros() as usize;
            let term = block.terms & low != 0;
            let next_quoted = block.quoted_next & low != 0;
            if term && spans.is_empty() && i == field {
                // A blank line.
                field = i + 1;
                field_quoted = next_quoted;
                continue;
            }
            if field_quoted {
                quoted.push(spans.len() as u32);
            }
            spans.push((field as u32, i as u32));
            if term {
                return Some((i, spans.len()));
            }
            field = i + 1;
            field_quoted = next_quoted;
            if spans.len() == want {
                break;
            }
        }
        // Count the remaining fields without splitting them: commas up to the line end.
        let mut fields = spans.len() + 1;
        loop {
            let terms = block.terms & bits;
            if terms != 0 {
                let below = terms & terms.wrapping_neg();
                fields += (bits & (below - 1)).count_ones() as usize;
                return Some((
                    stage_start + k * 64 + terms.trailing_zeros() as usize,
                    fields,
                ));
            }
            fields += bits.count_ones() as usize;
            k += 1;
            block = *masks.get(k)?;
            bits = block.all;
        }
    }

    /// [`CsvRows::split_columns`] read off the index, in any order of `columns`; also the
    /// index's cursor past the record.
    #[inline(always)]
    fn index_columns(
        &self,
        pos: usize,
        columns: &[usize],
        spans: &mut Vec<(u32, u32)>,
        quoted: &mut Vec<u32>,
    ) -> (Split, Option<(usize, usize)>) {
        let (buf, index) = (&self.buf[..self.len], &self.index);
        let seps = &index.seps[..index.len];
        let (mut first, mut term) = index.cursor.unwrap_or_else(|| index.locate(pos));
        let mut start = pos;
        let last = loop {
            let Some(&last) = index.terms.get(term) else {
                return (Split::OutOfBits, None);
            };
            let last = last as usize;
            // A blank line (the `\n` of a CRLF among them) before the record.
            if last == first && seps[first] as usize == start {
                (start, first, term) = (start + 1, first + 1, term + 1);
                continue;
            }
            break last;
        };
        let fields = last - first + 1;
        for (j, &column) in columns.iter().enumerate() {
            if column >= fields {
                return (Split::Irregular, None);
            }
            let from = match column {
                0 => start,
                _ => seps[first + column - 1] as usize + 1,
            };
            // A field that opens with a quote is quoted (stage 1 checked the quotes' places).
            if buf.get(from) == Some(&b'"') {
                quoted.push(j as u32);
            }
            spans.push((from as u32, seps[first + column]));
        }
        let end = seps[last] as usize;
        (Split::Found(end, fields), Some((last + 1, term + 1)))
    }

    /// Splits the fields at `columns` of the record whose reading starts at `pos` into `spans`
    /// (the indices of those that open with a quote into `quoted`), jumping over the
    /// separators between them with popcounts; returns the index of its line end and its number
    /// of fields. [`Split::Irregular`] when `columns` do not increase or when a line end comes
    /// before the last of them (a blank line, a short record).
    #[inline(always)]
    fn split_columns(
        &self,
        pos: usize,
        columns: &[usize],
        spans: &mut Vec<(u32, u32)>,
        quoted: &mut Vec<u32>,
    ) -> Split {
        let (buf, masks, stage_start) = (&self.buf[..self.len], &self.seps[..], self.stage_start);
        let rel = pos - stage_start;
        let mut k = rel / 64;
        let mut block = masks.get(k).copied().unwrap_or_default();
        let mut bits = block.all & (u64::MAX << (rel % 64));
        // Moves to the next block with separators, or returns: the bitmasks end in the record.
        macro_rules! next_block {
            () => {
                while bits == 0 {
                    k += 1;
                    let Some(next) = masks.get(k) else {
                        return Split::OutOfBits;
                    };
                    block = *next;
                    bits = block.all;
                }
            };
        }
        // The field `next` starts at `start`.
        let (mut next, mut start) = (0_usize, pos);
        let mut start_quoted = buf.get(pos) == Some(&b'"');
        loop {
            // Blank lines (the `\n` of a CRLF among them) before the record.
            next_block!();
            let low = bits & bits.wrapping_neg();
            if block.terms & low == 0
                || stage_start + k * 64 + low.trailing_zeros() as usize != start
            {
                break;
            }
            bits ^= low;
            start += 1;
            start_quoted = block.quoted_next & low != 0;
        }
        for &column in columns {
            let Some(mut skip) = column.checked_sub(next) else {
                return Split::Irregular;
            };
            // Pass the `skip` separators that end the fields before `column`: whole blocks by
            // their popcount, then the rest of them a bit at a time.
            while skip > 0 {
                next_block!();
                // The last separator passed in this block, and all those passed up to it.
                let (last, passed) = if bits.count_ones() as usize <= skip {
                    skip -= bits.count_ones() as usize;
                    (1 << (63 - bits.leading_zeros()), std::mem::take(&mut bits))
                } else {
                    let mut rest = bits;
                    for _ in 1..skip {
                        rest &= rest - 1;
                    }
                    skip = 0;
                    let last = rest & rest.wrapping_neg();
                    let passed = bits & (last | (last - 1));
                    bits = rest ^ last;
                    (last, passed)
                };
                if block.terms & passed != 0 {
                    return Split::Irregular;
                }
                if skip == 0 {
                    start = stage_start + k * 64 + last.trailing_zeros() as usize + 1;
                    start_quoted = block.quoted_next & last != 0;
                }
            }
            next_block!();
            let low = bits & bits.wrapping_neg();
            bits ^= low;
            let end = stage_start + k * 64 + low.trailing_zeros() as usize;
            if start_quoted {
                quoted.push(spans.len() as u32);
            }
            spans.push((start as u32, end as u32));
            next = column + 1;
            start = end + 1;
            start_quoted = block.quoted_next & low != 0;
            if block.terms & low != 0 {
                return if spans.len() == columns.len() {
                    Split::Found(end, next)
                } else {
                    Split::Irregular
                };
            }
        }
        // Count the remaining fields: separators up to the line end.
        let mut fields = next + 1;
        loop {
            let terms = block.terms & bits;
            if terms != 0 {
                let below = terms & terms.wrapping_neg();
                fields += (bits & (below - 1)).count_ones() as usize;
                return Split::Found(
                    stage_start + k * 64 + terms.trailing_zeros() as usize,
                    fields,
                );
            }
            fields += bits.count_ones() as usize;
            bits = 0;
            next_block!();
        }
    }

    /// The bitmasks ran out inside a record: read more, or let csv_core end the file.
    fn out_of_bits(&self) -> Step {
        if self.eof {
            Step::Scalar
        } else {
            Step::NeedMore
        }
    }

    /// Replaces each quoted field's span by its content, decoded into the scratch buffer when
    /// it holds doubled quotes.
    fn unquote(&mut self, spans: &mut [(u32, u32)], quoted: &[u32]) {
        self.scratch.clear();
        let buf = &self.buf[..self.len];
        for &q in quoted {
            let span = &mut spans[q as usize];
            let (start, end) = (span.0 as usize, span.1 as usize);
            // Stage 1 checked the shape: `"`, content with doubled quotes only, `"`.
            let content = &buf[start + 1..end - 1];
            if memchr::memchr(b'"', content).is_none() {
                *span = (start as u32 + 1, end as u32 - 1);
                continue;
            }
            let from = self.scratch.len();
            let mut rest = content;
            while let Some(q) = memchr::memchr(b'"', rest) {
                self.scratch.extend_from_slice(&rest[..=q]);
                rest = &rest[q + 2..];
            }
            self.scratch.extend_from_slice(rest);
            *span = (from as u32 | SCRATCH, self.scratch.len() as u32);
        }
    }

    /// Reads the record at `pos` with csv_core.
    fn scalar_record(&mut self) -> Result<Step, CsvError> {
        let mut rdr = csv_core::Reader::new();
        let (mut nin, mut nout, mut nend) = (0, 0, 0);
        if self.scratch.len() < 1024 {
            self.scratch.resize(1024, 0);
        }
        if self.ends.len() < 64 {
            self.ends.resize(64, 0);
        }
        loop {
            let input = &self.buf[self.pos + nin..self.len];
            if input.is_empty() && !self.eof {
                return Ok(Step::NeedMore);
            }
            let (res, i, o, e) =
                rdr.read_record(input, &mut self.scratch[nout..], &mut self.ends[nend..]);
            nin += i;
            nout += o;
            nend += e;
            match res {
                csv_core::ReadRecordResult::InputEmpty => {
                    if !self.eof {
                        return Ok(Step::NeedMore);
                    }
                }
                csv_core::ReadRecordResult::OutputFull => {
                    let n = self.scratch.len() * 2;
                    self.scratch.resize(n, 0);
                }
                csv_core::ReadRecordResult::OutputEndsFull => {
                    let n = self.ends.len() * 2;
                    self.ends.resize(n, 0);
                }
                csv_core::ReadRecordResult::Record => {
                    if nin > self.max_record + 1 {
                        return Err(self.too_large());
                    }
                    let start = self.pos;
                    self.pos += nin;
                    self.spans.clear();
                    let mut from = 0;
                    for &end in &self.ends[..nend] {
                        self.spans.push((from as u32 | SCRATCH, end as u32));
                        from = end;
                    }
                    self.fields = nend;
                    return Ok(Step::Record(start));
                }
                csv_core::ReadRecordResult::End => return Ok(Step::End),
            }
        }
    }
}

/// The quote state stage 1 carries from block to block, and the check that the quotes are
/// where the csv crate reads them as the parity does.
#[derive(Debug, Default)]
struct Quotes {
    /// All ones when the previous block ended inside quotes.
    inside: u64,
    /// The previous block's separators, opening and closing quotes.
    prev: (u64, u64, u64),
    /// The bit of the first misplaced quote found by the last call (in the previous block for
    /// a closing quote, else in this one), relative to the previous block's start.
    bad: Option<usize>,
    /// The previous block's separators followed by an opening quote, set by the last call.
    prev_quoted_next: u64,
}

impl Quotes {
    /// The separators and the line ends outside quotes of a block whose real bytes are `valid`;
    /// `first` when the block starts a record. Sets `bad` (an offset from the previous block's
    /// start).
    #[inline(always)]
    fn block(&mut self, m: crate::simd::CsvMasks, valid: u64, first: bool) -> Seps {
        let quote = m.quote & valid;
        let inside = prefix_xor(quote) ^ self.inside;
        self.inside = ((inside as i64) >> 63) as u64;
        let open = quote & inside;
        let close = quote & !inside;
        let seps = (m.comma | m.term) & !inside & valid;
        let (p_seps, p_open, p_close) = self.prev;
        // A closing quote is followed by a separator or an opening quote (a doubled quote).
        let after = (p_seps >> 1) | (seps << 63) | (p_open >> 1) | (open << 63);
        let bad_close = p_close & !after;
        // An opening quote follows a separator, a closing quote or the start of the record.
        let before =
            (seps << 1) | (p_seps >> 63) | (close << 1) | (p_close >> 63) | u64::from(first);
        let bad_open = open & !before;
        self.bad = if bad_close != 0 {
            Some(bad_close.trailing_zeros() as usize)
        } else if bad_open != 0 {
            Some(64 + bad_open.trailing_zeros() as usize)
        } else {
            None
        };
        self.prev_quoted_next = p_seps & ((p_open >> 1) | (open << 63));
        self.prev = (seps, open, close);
        Seps {
            all: seps,
            terms: m.term & !inside & valid,
            // Completed by the next block (see `prev_quoted_next`).
            quoted_next: seps & (open >> 1),
            lf: m.lf & valid,
        }
    }

    /// The misplaced closing quote of the last block, whose first `n` bytes are real (the byte
    /// after them is unknown or the end of the file: either may end a field). Relative to that
    /// block's start.
    fn last(&self, n: usize) -> Option<usize> {
        let (seps, open, close) = self.prev;
        let after = (seps >> 1) | (open >> 1) | (1 << (n - 1));
        let bad = close & !after;
        (bad != 0).then(|| bad.trailing_zeros() as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &[u8], engine: CsvEngine) -> Vec<(Vec<Vec<u8>>, u64, u64)> {
        let mut rows = CsvRows::with_chunk(text, engine, 1 << 20, 7);
        let mut out = Vec::new();
        while let Ok(Some(r)) = rows.next_record() {
            out.push((r.iter().map(<[u8]>::to_vec).collect(), r.line(), r.byte()));
        }
        out
    }

    #[test]
    fn torch_npu_quoting_takes_the_fast_path() {
        let text = b"a,b\r\n1,\"\"\"32,3\"\"\"\r\n\r\n2,\"x\ny\"\n";
        let mut rows = CsvRows::new(&text[..], CsvEngine::Portable, 1 << 20);
        let mut fields = Vec::new();
        while let Ok(Some(r)) = rows.next_record() {
            fields.push(r.iter().map(<[u8]>::to_vec).collect::<Vec<_>>());
        }
        assert_eq!(rows.first_bad, usize::MAX);
        let want: Vec<Vec<&[u8]>> = vec![
            vec![b"a", b"b"],
            vec![b"1", b"\"32,3\""],
            vec![b"2", b"x\ny"],
        ];
        assert_eq!(fields, want);
    }

    #[test]
    fn misplaced_quotes_read_as_the_csv_crate_does() {
        for text in [&b"a\"b,c\"\nd,e\n"[..], b"\"a\"b,c\n", b"\"open,x\ny"] {
            let want = records(text, CsvEngine::Scalar);
            assert_eq!(records(text, CsvEngine::Portable), want);
        }
    }
}
