//! The block scanner: stage 1 ([`super::blocks`]) turns a piece of input into one mask of
//! structural positions per 64 bytes, writes their kinds (the byte, `n` for a token, `x` for a
//! suspect) one after another, and finds the first error inside strings (a control character or
//! a bad escape) and in UTF-8. Stage 2 reads the kinds: a run of top-level events whose kinds
//! equal shapes the grammar accepted before ([`super::shapes`]) is taken whole, without a branch
//! per structural character; anything else walks the positions one by one through the grammar,
//! and an event the grammar accepts teaches its shape. Pieces are at most [`PIECE`] bytes, so
//! the masks and kinds stay in the L1 and L2 caches and memory does not grow.

use super::TraceScan;
use super::blocks::{Block, Classifier, Next, Stage1};
use super::grammar::{CAPTURE_LIMIT, Grammar, LexAtEnd};
use super::shapes::Shapes;
use super::tokens::{CLASS, Escape, SCALAR, ScalarDfa};
use super::utf8::Utf8Stream;
#[cfg(target_arch = "x86_64")]
use crate::simd::{Avx2, Avx512, Kernels, Sse2};
use crate::simd::{Before, GroupIn, GroupLanes, GroupOut, JsonBlocks, Portable, prefetch};

/// Bytes classified before stage 2 walks them.
const PIECE: usize = 64 << 10;

/// How far ahead of the block it classifies stage 1 asks for the input's cache lines: a page,
/// so that the lines of the next page are on their way before the block that needs them (the
/// hardware prefetchers do not cross a page; without this, the first load of each line was
/// where stage 1 waited most).
const PREFETCH: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    Normal,
    /// Inside a string that started in an earlier piece (its content so far is captured).
    String,
    Scalar {
        start: u64,
        dfa: ScalarDfa,
    },
}

/// The first error stage 1 found in a piece: its index and why.
#[derive(Debug, Clone, Copy)]
struct Stop {
    at: usize,
    reason: &'static str,
}

/// The scanner built on 64-byte blocks.
#[derive(Debug)]
pub(super) struct BlockScanner {
    classifier: Classifier,
    grammar: Grammar,
    utf8: Utf8Stream,
    offset: u64,
    stage1: Stage1,
    /// An escape sequence that the end of the previous piece cut (stage 1's view).
    escape: Escape,
    lex: Lex,
    /// The content of a string that started in an earlier piece, up to one byte past the limit.
    capture: Vec<u8>,
    /// Stage 1's output for the piece.
    piece: Structure,
    shapes: Shapes,
}

/// Stage 1's view of a piece: where its structural positions are and what they are.
#[derive(Debug)]
struct Structure {
    /// The structural positions, one mask per block.
    masks: Vec<u64>,
    /// `counts[k]`: the structural positions before block `k` (one more entry than blocks).
    counts: Vec<u32>,
    /// The kind of each structural position, in order (with 64 bytes to spare).
    kinds: Vec<u8>,
    /// Stage 1's scalar-token bytes, one mask per block.
    others: Vec<u64>,
}

impl Structure {
    /// The number of structural positions.
    fn len(&self) -> usize {
        self.counts.last().map_or(0, |&n| n as usize)
    }
}

/// Finds the byte index of structural positions asked for in increasing order (the events a
/// recording walk takes): it moves on from the block of the last answer rather than searching
/// the piece's blocks again.
#[derive(Debug, Default)]
struct Locator {
    /// The block the last answer was in.
    k: usize,
}

impl Locator {
    /// The byte index of structural position `q` (which exists, at or after the last one asked
    /// for).
    #[inline(always)]
    fn position(&mut self, s: &Structure, q: usize) -> usize {
        while s.counts[self.k + 1] as usize <= q {
            self.k += 1;
        }
        let mut bits = s.masks[self.k];
        for _ in s.counts[self.k] as usize..q {
            bits &= bits - 1;
        }
        self.k * 64 + bits.trailing_zeros() as usize
    }
}

/// Runs the escape automaton from `state` over `buf[from..]` until the sequence is complete:
/// `Err` with the index of the offending byte, or the state at the end (`Escape::None` when the
/// sequence completed).
#[inline]
fn check_escape(buf: &[u8], from: usize, mut state: Escape) -> Result<Escape, usize> {
    let mut i = from;
    while state != Escape::None {
        let Some(&b) = buf.get(i) else {
            return Ok(state);
        };
        state = state.step(b).ok_or(i)?;
        i += 1;
    }
    Ok(Escape::None)
}

/// Index of the first byte at or after `i` and before `end` that ends a scalar token, from the
/// stage-1 masks of token bytes (`others`).
#[inline(always)]
fn token_end(others: &[u64], i: usize, end: usize) -> usize {
    let mut k = i / 64;
    let Some(&first) = others.get(k) else {
        return end;
    };
    let mut delims = !first & (u64::MAX << (i % 64));
    while delims == 0 {
        k += 1;
        let Some(&other) = others.get(k) else {
            return end;
        };
        delims = !other;
    }
    (k * 64 + delims.trailing_zeros() as usize).min(end)
}

/// The structural positions of a piece in order, read off the masks, with their index.
struct Cursor<'a> {
    masks: &'a [u64],
    counts: &'a [u32],
    /// Positions at or past it are not taken.
    limit: usize,
    /// The block of the next position and its bits not taken yet.
    k: usize,
    bits: u64,
    /// The index of the next position.
    q: usize,
}

impl<'a> Cursor<'a> {
    /// The positions in `from..limit`.
    fn new(s: &'a Structure, from: usize, limit: usize) -> Self {
        let mut cur = Self {
            masks: &s.masks,
            counts: &s.counts,
            limit,
            k: 0,
            bits: s.masks.first().copied().unwrap_or(0),
            q: 0,
        };
        cur.skip_before(from);
        cur
    }

    /// The next position, without taking it.
    #[inline(always)]
    fn peek(&mut self) -> Option<usize> {
        while self.bits == 0 {
            self.k += 1;
            self.bits = *self.masks.get(self.k)?;
        }
        let i = self.k * 64 + self.bits.trailing_zeros() as usize;
        (i < self.limit).then_some(i)
    }

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        let i = self.peek()?;
        self.bits &= self.bits - 1;
        self.q += 1;
        Some(i)
    }

    /// Drops the positions before `j`.
    #[inline(always)]
    fn skip_before(&mut self, j: usize) {
        while self.peek().is_some_and(|i| i < j) {
            self.bits &= self.bits - 1;
            self.q += 1;
        }
    }

    /// Moves on to the position with index `q` (not before the next one).
    fn seek(&mut self, q: usize) {
        // The last block that starts at or before position `q` (blocks are never skipped past
        // the last one).
        let blocks = self.masks.len();
        self.k += self.counts[self.k + 1..blocks].partition_point(|&c| c as usize <= q);
        self.bits = self.masks[self.k];
        for _ in self.counts[self.k] as usize..q {
            self.bits &= self.bits - 1;
        }
        self.q = q;
    }
}

/// What stage 2 does next.
enum Flow {
    /// Go on with the next structural position.
    Next,
    /// The piece ends here (a string or token continues in the next one).
    End,
    /// The grammar failed.
    Fail,
}

/// [`Flow::Next`] when the grammar accepted the token, else [`Flow::Fail`].
#[inline(always)]
fn flow(ok: bool) -> Flow {
    if ok { Flow::Next } else { Flow::Fail }
}

/// Stage 2 over one piece.
struct Walk<'a> {
    buf: &'a [u8],
    structure: &'a Structure,
    base: u64,
    limit: usize,
    cur: Cursor<'a>,
    grammar: &'a mut Grammar,
    capture: &'a mut Vec<u8>,
    lex: &'a mut Lex,
    /// The kinds of the piece's structural positions (with bytes to spare past `kinds_len`).
    kinds: &'a [u8],
    /// How many there are; 0 when events are not matched against shapes (the piece holds an
    /// error).
    kinds_len: usize,
    shapes: &'a mut Shapes,
    /// The index of the `{` of the top-level event the grammar is reading.
    event: Option<usize>,
    locator: Locator,
}

impl Walk<'_> {
    /// `false` once the grammar failed.
    fn run(&mut self) -> bool {
        while let Some(i) = self.cur.next() {
            let at = self.base + i as u64;
            let flow = match self.buf[i] {
                b'"' => self.string(i),
                b'{' => self.object(i),
                b'[' => flow(self.grammar.open(at, false)),
                b'}' => self.close_object(at),
                b']' => flow(self.grammar.close(at, false)),
                b',' => flow(self.grammar.comma(at)),
                b':' => flow(self.grammar.colon(at)),
                _ => self.scalar(i),
            };
            match flow {
                Flow::Next => {}
                Flow::End => return true,
                Flow::Fail => return false,
            }
        }
        true
    }

    /// A `{` at `i`: the events from there that have known shapes are taken whole; the grammar
    /// reads the rest.
    #[inline(always)]
    fn object(&mut self, i: usize) -> Flow {
        let mut at = self.base + i as u64;
        if self.kinds_len > 0 && self.grammar.at_event_slot() {
            let q = self.cur.q - 1;
            let next = self.known_events(q);
            if next != q {
                // Taken up to index `next`: the grammar goes on from there.
                self.cur.seek(next);
                if next >= self.kinds_len || self.kinds[next] != b'{' {
                    return Flow::Next;
                }
                // A `,` was taken and the event after it has a new shape.
                let Some(j) = self.cur.next() else {
                    return Flow::Next;
                };
                at = self.base + j as u64;
            }
            self.event = Some(self.cur.q - 1);
        }
        flow(self.grammar.open(at, true))
    }

    /// The offset in the file of structural position `q` (asked for in increasing order).
    #[inline(always)]
    fn at(&mut self, q: usize) -> u64 {
        self.base + self.locator.position(self.structure, q) as u64
    }

    /// Takes the run of events with known shapes from the `{` with index `q`, each with the `,`
    /// after it when an event follows; returns the index of the first position not taken.
    #[inline(always)]
    fn known_events(&mut self, q: usize) -> usize {
        let mut next = q;
        let mut events = 0;
        let mut last = 0;
        let mut comma = None;
        while let Some(len) = self.shapes.find(self.kinds, next, self.kinds_len) {
            events += 1;
            last = next + len - 1;
            if self.grammar.recording() {
                let start = self.at(next);
                let end = self.at(last) + 1;
                self.grammar.record(start, end);
            }
            next += len;
            comma = None;
            if next + 2 > self.kinds_len || self.kinds[next..next + 2] != *b",{" {
                break;
            }
            comma = Some(next);
            next += 1;
        }
        if events > 0 {
            let last = self.at(last);
            let comma = comma.map(|q| self.at(q));
            self.grammar.skip_events(events, last, comma);
        }
        next
    }

    /// A `}` at `at`; when it ends an event the grammar read from its `{`, the event's shape is
    /// learnt.
    #[inline(always)]
    fn close_object(&mut self, at: u64) -> Flow {
        if !self.grammar.close(at, true) {
            return Flow::Fail;
        }
        if let Some(start) = self.event
            && self.grammar.after_event()
        {
            self.shapes.learn(&self.kinds[start..self.cur.q]);
            self.event = None;
        }
        Flow::Next
    }

    /// A string opening at `i`; after a key, also the usual `:` and a string or scalar value.
    #[inline(always)]
    fn string(&mut self, i: usize) -> Flow {
        match self.string_body(i) {
            Flow::Next => {}
            other => return other,
        }
        if !self.grammar.expects_colon() {
            return Flow::Next;
        }
        // The key's closing quote was the last position taken; `:` usually follows at once.
        let Some(c) = self.cur.peek() else {
            return Flow::Next;
        };
        if self.buf[c] != b':' {
            return Flow::Next;
        }
        let _ = self.cur.next();
        self.grammar.colon(self.base + c as u64);
        let Some(v) = self.cur.peek() else {
            return Flow::Next;
        };
        match self.buf[v] {
            b'"' => {
                let _ = self.cur.next();
                self.string_body(v)
            }
            b'0'..=b'9' | b'-' => {
                let _ = self.cur.next();
                self.scalar(v)
            }
            _ => Flow::Next,
        }
    }

    /// The string whose opening quote is at `i`: the next position is its closing quote.
    #[inline(always)]
    fn string_body(&mut self, i: usize) -> Flow {
        if !self.grammar.string_open(self.base + i as u64) {
            return Flow::Fail;
        }
        let Some(c) = self.cur.next() else {
            let end = self.limit.min(i + 2 + CAPTURE_LIMIT);
            self.capture.clear();
            self.capture.extend_from_slice(&self.buf[i + 1..end]);
            *self.lex = Lex::String;
            return Flow::End;
        };
        self.grammar
            .string_close(&self.buf[i + 1..c], self.base + c as u64);
        Flow::Next
    }

    /// A scalar token or a stray byte at `i`.
    #[inline(always)]
    fn scalar(&mut self, i: usize) -> Flow {
        let at = self.base + i as u64;
        if CLASS[usize::from(self.buf[i])] != SCALAR {
            self.grammar.fail(at, "unexpected byte");
            return Flow::Fail;
        }
        if !self.grammar.scalar_start(at) {
            return Flow::Fail;
        }
        let j = token_end(&self.structure.others, i + 1, self.limit);
        let dfa = ScalarDfa::new().feed(&self.buf[i..j]);
        if j == self.limit {
            *self.lex = Lex::Scalar { start: at, dfa };
            return Flow::End;
        }
        // Suspects inside the token are structural positions too.
        self.cur.skip_before(j);
        let ok = self
            .grammar
            .scalar_end(at, self.base + j as u64 - 1, dfa.accepts());
        flow(ok)
    }
}

/// Where stage 1 writes a piece's blocks (their masks and counts go to the [`Slots`] of each).
struct Out<'a> {
    kinds: &'a mut [u8],
    /// Kinds so far.
    count: usize,
    /// The bytes 0x80 and above so far.
    hi: u64,
}

impl Out<'_> {
    /// Writes a block, its masks and count to `slots`; returns whether it holds a control
    /// character or an escape in a string.
    #[inline(always)]
    fn push(
        &mut self,
        classifier: impl JsonBlocks,
        block: &[u8; 64],
        b: &Block,
        (mask_slot, other_slot, count_slot): Slots<'_>,
    ) -> bool {
        let mask = b.kinds();
        self.kinds(classifier, block, (mask, b.starts, b.suspects));
        *mask_slot = mask;
        *other_slot = b.other;
        *count_slot = self.count as u32;
        self.hi |= b.hi;
        b.string_checks != 0
    }
}

impl Out<'_> {
    /// Writes the kinds of the positions `mask` of `block` (with its token starts and suspects).
    #[inline(always)]
    fn kinds(
        &mut self,
        classifier: impl JsonBlocks,
        block: &[u8; 64],
        (mask, starts, suspects): (u64, u64, u64),
    ) {
        // A piece has at most one kind per byte and the buffer 64 bytes to spare.
        if mask != 0 {
            let out = self.kinds[self.count..][..64].as_mut_array::<64>();
            classifier.kinds(block, mask, starts, suspects, out.expect("64 bytes"));
            self.count += mask.count_ones() as usize;
        }
    }
}

/// Where one block's structural mask, token mask and running count of kinds go.
type Slots<'a> = (&'a mut u64, &'a mut u64, &'a mut u32);

/// Stage 1's carries and outputs over a piece, in locals (which no store through the scanner
/// can alias).
struct Pass<'a> {
    stage1: Stage1,
    out: Out<'a>,
    /// Where an escape sequence cut by the end of the piece stands.
    escape: &'a mut Escape,
    /// The first error in a string.
    stop: Option<Stop>,
}

impl Pass<'_> {
    /// Stage 1 of the block at `index` of `buf` (`block`, its first `n` bytes real), followed
    /// by `next`.
    #[inline(always)]
    fn block(
        &mut self,
        classifier: impl JsonBlocks,
        (buf, index): (&[u8], usize),
        (block, n, next): (&[u8; 64], usize, Next<'_>),
        slot: Slots<'_>,
    ) {
        let mut b = self.stage1.block(classifier, block, n, next);
        if b.names != 0 {
            b.not_names(not_process_names(buf, index, b.names));
        }
        if self.out.push(classifier, block, &b, slot) {
            let masks = (b.escapes, b.ctrl_in_string);
            string_errors(buf, index, masks, self.escape, &mut self.stop);
        }
    }

    /// Stage 1 of the group of 8 blocks from block `k` of `buf` (`blocks`, a byte after them
    /// in `buf`) inside strings, into `lanes` and `others` (the rest is for [`Pass::numbers`]).
    #[inline(always)]
    fn group(
        &mut self,
        classifier: impl JsonBlocks,
        (buf, k, blocks): (&[u8], usize, &[u8; 512]),
        lanes: &mut GroupLanes,
        others: &mut [u64; 8],
    ) {
        // (In a local: the carries stay in registers from block to block.)
        let mut stage1 = self.stage1;
        let mut hi = 0;
        let blocks = blocks.as_chunks::<64>().0;
        for (j, (block, other)) in blocks.iter().zip(others).enumerate() {
            let b = stage1.grouped(classifier, block, lanes, j);
            *other = b.other;
            hi |= b.hi;
            if b.string_checks != 0 {
                let masks = (b.escapes, b.ctrl_in_string);
                string_errors(buf, 64 * (k + j), masks, self.escape, &mut self.stop);
            }
        }
        self.out.hi |= hi;
        self.stage1 = stage1;
        lanes.after = u64::from(buf[64 * (k + 8)].is_ascii_digit());
    }

    /// The rest of stage 1 of a [`Pass::group`] from block `k` of `buf` (`blocks`, classified
    /// as `group`: its lanes and token masks) after `before`: the group's kinds, structural masks
    /// and counts.
    #[inline(always)]
    fn numbers(
        &mut self,
        classifier: impl JsonBlocks,
        (buf, k, blocks): (&[u8], usize, &[u8; 512]),
        group: GroupIn<'_>,
        before: &mut Before,
        (masks, counts): (&mut [u64; 8], &mut [u32; 8]),
    ) {
        let mut out = GroupOut::default();
        *before = classifier.group(group, *before, &mut out);
        for (j, block) in blocks.as_chunks::<64>().0.iter().enumerate() {
            let mut suspects = out.suspects[j];
            if out.names[j] != 0 {
                suspects &= !not_process_names(buf, 64 * (k + j), out.names[j]);
            }
            let mask = out.mask[j];
            self.out
                .kinds(classifier, block, (mask, out.starts[j], suspects));
            masks[j] = mask;
            counts[j] = self.out.count as u32;
        }
    }
}

/// The closing quotes among `names` (of the block at `index` of `buf`) whose strings are not
/// `"process_name"`, as far as `buf` shows (a string that starts before it may be).
#[cold]
fn not_process_names(buf: &[u8], index: usize, names: u64) -> u64 {
    let mut bits = names;
    let mut not = 0;
    while bits != 0 {
        let bit = bits & bits.wrapping_neg();
        bits &= bits - 1;
        let end = index + bit.trailing_zeros() as usize;
        if end
            .checked_sub(12)
            .is_some_and(|start| buf[start..end] != *b"process_name")
        {
            not |= bit;
        }
    }
    not
}

/// Checks the escape sequences (`escapes`) and control characters in strings
/// (`ctrl_in_string`) of the block at `index` of `buf` (masks by value: a reference would make
/// the block's masks go through memory), keeping the earliest error in `stop` (an escape error
/// before a control character at one byte); `escape` is where an escape sequence cut by the end
/// of `buf` stands.
#[cold]
fn string_errors(
    buf: &[u8],
    index: usize,
    (mut escapes, ctrl_in_string): (u64, u64),
    escape: &mut Escape,
    stop: &mut Option<Stop>,
) {
    let keep = |at: usize, reason: &'static str, stop: &mut Option<Stop>| {
        if stop.is_none_or(|s| at < s.at) {
            *stop = Some(Stop { at, reason });
        }
    };
    while escapes != 0 {
        let p = index + escapes.trailing_zeros() as usize;
        escapes &= escapes - 1;
        if stop.is_some_and(|s| s.at <= p) {
            break;
        }
        match check_escape(buf, p + 1, Escape::Backslash) {
            Ok(state) => *escape = state,
            Err(at) => keep(at, "invalid escape sequence", stop),
        }
    }
    if ctrl_in_string != 0 {
        keep(
            index + ctrl_in_string.trailing_zeros() as usize,
            "control character in string",
            stop,
        );
    }
}

/// [`BlockScanner::piece`] compiled for each vector unit (see [`Kernels`]): everything it
/// calls down to the classification and compaction is `#[inline(always)]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw,avx512vbmi,avx512vbmi2,popcnt,bmi1,bmi2,lzcnt,pclmulqdq")]
fn piece_avx512(classifier: Avx512, (scanner, buf): (&mut BlockScanner, &[u8])) {
    scanner.piece(classifier, buf);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,bmi1,lzcnt,pclmulqdq")]
fn piece_avx2(classifier: Avx2, (scanner, buf): (&mut BlockScanner, &[u8])) {
    scanner.piece(classifier, buf);
}

#[cfg(target_arch = "x86_64")]
fn piece_sse2(classifier: Sse2, (scanner, buf): (&mut BlockScanner, &[u8])) {
    scanner.piece(classifier, buf);
}

impl BlockScanner {
    pub(super) fn new(classifier: Classifier) -> Self {
        Self {
            classifier,
            grammar: Grammar::new(),
            utf8: Utf8Stream::default(),
            offset: 0,
            stage1: Stage1::default(),
            escape: Escape::None,
            lex: Lex::Normal,
            capture: Vec::with_capacity(CAPTURE_LIMIT + 1),
            piece: Structure {
                masks: Vec::with_capacity(PIECE / 64),
                counts: Vec::with_capacity(PIECE / 64 + 1),
                kinds: vec![0; PIECE + 64],
                others: Vec::with_capacity(PIECE / 64),
            },
            shapes: Shapes::default(),
        }
    }

    pub(super) fn failed(&self) -> bool {
        self.grammar.failed()
    }

    pub(super) fn grammar(&mut self) -> &mut Grammar {
        &mut self.grammar
    }

    pub(super) fn feed(&mut self, buf: &[u8]) {
        for piece in buf.chunks(PIECE) {
            if self.grammar.failed() {
                self.offset += piece.len() as u64;
            } else {
                match self.classifier {
                    #[cfg(target_arch = "x86_64")]
                    Classifier::Simd(simd) => simd.dispatch_kernel(
                        Kernels {
                            avx512: piece_avx512,
                            avx2: piece_avx2,
                            sse2: piece_sse2,
                        },
                        (self, piece),
                    ),
                    _ => self.piece(Portable, piece),
                }
            }
        }
    }

    #[inline(always)]
    fn piece(&mut self, classifier: impl JsonBlocks, buf: &[u8]) {
        let base = self.offset;
        self.offset += buf.len() as u64;
        let (stop, hi) = self.stage1(classifier, buf);
        // (where stage 2 stops, the error offset, why)
        let mut end = stop.map(|s| (s.at, base + s.at as u64, s.reason));
        if (hi || self.utf8.pending())
            && let Some(u) = self.utf8.check(buf, base)
            && end.is_none_or(|(_, at, _)| u < at)
        {
            // As in the reference lexer: a grammar error at the invalid byte comes first, so
            // stage 2 reads up to and including it (an earlier piece may hold it).
            let limit = ((u + 1).saturating_sub(base) as usize).min(buf.len());
            end = Some((limit, u, "invalid UTF-8"));
        }
        let limit = end.map_or(buf.len(), |e| e.0);
        if self.stage2(buf, base, limit)
            && let Some((_, at, reason)) = end
        {
            self.grammar.fail(at, reason);
        }
    }

    /// Classifies `buf` into `self.piece`; returns the first error inside a string and whether
    /// any byte is 0x80 or above.
    #[inline(always)]
    fn stage1<C: JsonBlocks>(&mut self, classifier: C, buf: &[u8]) -> (Option<Stop>, bool) {
        let mut stop: Option<Stop> = None;
        if self.escape != Escape::None {
            match check_escape(buf, 0, self.escape) {
                Ok(state) => self.escape = state,
                Err(at) => {
                    stop = Some(Stop {
                        at,
                        reason: "invalid escape sequence",
                    });
                    self.escape = Escape::None;
                }
            }
        }
        let blocks = buf.len().div_ceil(64);
        let piece = &mut self.piece;
        piece.masks.resize(blocks, 0);
        piece.others.resize(blocks, 0);
        piece.counts.resize(blocks + 1, 0);
        let out = Out {
            kinds: &mut piece.kinds,
            count: 0,
            hi: 0,
        };
        let mut pass = Pass {
            stage1: self.stage1,
            out,
            escape: &mut self.escape,
            stop,
        };
        let mut k = 0;
        if C::GROUPS {
            // 8 blocks at a time while a byte after them is in `buf`;
            // what carries from block to block outside strings in a group after the next
            // group's strings, so that its vector loads do not wait for the lanes' stores (a
            // percent or two, see BENCHMARKS.md).
            let groups = buf.as_chunks::<512>().0;
            let masks = piece.masks.as_chunks_mut::<8>().0;
            let others = piece.others.as_chunks_mut::<8>().0;
            let counts = piece.counts[1..].as_chunks_mut::<8>().0;
            let mut before = pass.stage1.before();
            let mut lanes = [GroupLanes::default(); 2];
            let n = buf.len().saturating_sub(1) / 512;
            for g in 0..=n {
                if g < n {
                    for j in 0..8 {
                        prefetch(buf, 64 * (8 * g + j) + PREFETCH);
                    }
                    let at = (buf, 8 * g, &groups[g]);
                    pass.group(classifier, at, &mut lanes[g % 2], &mut others[g]);
                }
                if let Some(p) = g.checked_sub(1) {
                    let at = (buf, 8 * p, &groups[p]);
                    let group = (&lanes[p % 2], &others[p]);
                    let slots = (&mut masks[p], &mut counts[p]);
                    pass.numbers(classifier, at, group, &mut before, slots);
                }
            }
            k = 8 * n;
            pass.stage1.set_before(before);
        }
        // One slot per block, zipped with the blocks: no index to check per block.
        let mut slots = piece.masks[k..]
            .iter_mut()
            .zip(piece.others[k..].iter_mut())
            .zip(piece.counts[1 + k..].iter_mut())
            .map(|((mask, other), count)| (mask, other, count));
        let mut chunks = buf[64 * k..].chunks_exact(64);
        // The blocks with 64 bytes after their first: the digits there are classified with
        // them, for the suspects of their last bytes. Then the last whole block, with the byte
        // after it, and the rest.
        let afters = buf.get(64 * k + 1..).unwrap_or_default().chunks_exact(64);
        // (`afters` first: it ends first, and a zip polls its second side only after its first.)
        for ((after, chunk), slot) in afters.zip(&mut chunks).zip(&mut slots) {
            let block: &[u8; 64] = chunk.try_into().unwrap_or(&[b' '; 64]);
            prefetch(buf, 64 * k + PREFETCH);
            let after = after.try_into().unwrap_or(block);
            let next = Next::Digits(classifier.digits(after));
            pass.block(classifier, (buf, 64 * k), (block, 64, next), slot);
            k += 1;
        }
        for (chunk, slot) in (&mut chunks).zip(&mut slots) {
            let block: &[u8; 64] = chunk.try_into().unwrap_or(&[b' '; 64]);
            let next = Next::Byte(buf.get(64 * k + 64));
            pass.block(classifier, (buf, 64 * k), (block, 64, next), slot);
            k += 1;
        }
        let rest = chunks.remainder();
        if !rest.is_empty()
            && let Some(slot) = slots.next()
        {
            let mut block = [b' '; 64];
            block[..rest.len()].copy_from_slice(rest);
            let at = (&block, rest.len(), Next::Byte(None));
            pass.block(classifier, (buf, 64 * k), at, slot);
        }
        self.stage1 = pass.stage1;
        (pass.stop, pass.out.hi != 0)
    }

    /// Walks the structural positions before `limit`; `false` once the grammar failed.
    fn stage2(&mut self, buf: &[u8], base: u64, limit: usize) -> bool {
        let mut from = 0usize;
        if let Lex::Scalar { start, dfa } = self.lex {
            let j = token_end(&self.piece.others, 0, limit);
            let dfa = dfa.feed(&buf[..j]);
            if j == limit {
                self.lex = Lex::Scalar { start, dfa };
                return true;
            }
            self.lex = Lex::Normal;
            if !self
                .grammar
                .scalar_end(start, base + j as u64 - 1, dfa.accepts())
            {
                return false;
            }
            from = j;
        }
        let kinds_len = if limit == buf.len() {
            self.piece.len()
        } else {
            0
        };
        let mut w = Walk {
            buf,
            structure: &self.piece,
            base,
            limit,
            cur: Cursor::new(&self.piece, from, limit),
            grammar: &mut self.grammar,
            capture: &mut self.capture,
            lex: &mut self.lex,
            kinds: &self.piece.kinds,
            kinds_len,
            shapes: &mut self.shapes,
            event: None,
            locator: Locator::default(),
        };
        if *w.lex == Lex::String {
            // A string that started in an earlier piece: its closing quote comes first.
            let end = w.cur.next();
            let part = &buf[..end.unwrap_or(limit)];
            let room = (CAPTURE_LIMIT + 1).saturating_sub(w.capture.len());
            w.capture.extend_from_slice(&part[..part.len().min(room)]);
            let Some(c) = end else {
                return true;
            };
            *w.lex = Lex::Normal;
            w.grammar.string_close(w.capture, base + c as u64);
        }
        w.run()
    }

    pub(super) fn finish(self) -> TraceScan {
        let lex = match self.lex {
            Lex::Normal => LexAtEnd::Normal,
            Lex::String => LexAtEnd::String,
            Lex::Scalar { start, dfa } => LexAtEnd::Scalar {
                start,
                valid: dfa.accepts(),
            },
        };
        self.grammar.finish(lex, self.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace_scan::reference::ReferenceScanner;

    /// Scans `doc` in one piece with each classifier (every vector unit of this CPU, and byte
    /// by byte); checks the result against the reference scanner's and returns the events
    /// matched by shape.
    fn matched(doc: &[u8]) -> Vec<u64> {
        let mut reference = ReferenceScanner::new();
        reference.feed(doc);
        let want = reference.finish();
        let classifiers = crate::simd::Simd::available()
            .into_iter()
            .map(Classifier::Simd)
            .chain([Classifier::Portable]);
        classifiers
            .map(|c| {
                let mut s = BlockScanner::new(c);
                s.feed(doc);
                let matched = s.shapes.matched;
                assert_eq!(s.finish(), want, "{c:?}");
                matched
            })
            .collect()
    }

    fn event(value: &str) -> String {
        format!(
            r#"{{"ph": "X", "name": "aten::add", "ts": "17.5", "dur": -0.25, "args": {{"id": {value}}}}}"#
        )
    }

    #[test]
    fn repeated_events_are_matched_by_shape() {
        let doc = format!("[{}]", vec![event("10"); 100].join(", "));
        for matched in matched(doc.as_bytes()) {
            // The first event teaches the shape; the others match it.
            assert_eq!(matched, 99);
        }
    }

    #[test]
    fn an_event_with_a_token_that_is_not_a_plain_number_is_read_by_the_grammar() {
        for value in [
            "true", "null", "1e5", "-0.5E-3", "01", "-01", "00", "1.2.3", "1.", "-", ".5", "1-2",
            "0x1", "+1", "--1", "1..2", "'a'",
        ] {
            let doc = format!(
                "[{}]",
                [event("1"), event("1"), event(value), event("2")].join(",")
            );
            for matched in matched(doc.as_bytes()) {
                let valid = serde_json::from_str::<serde_json::Value>(value).is_ok();
                // The second event matches; the fourth after a valid third.
                assert_eq!(matched, if valid { 2 } else { 1 }, "{value}");
            }
        }
    }

    #[test]
    fn a_number_that_a_block_end_cuts_is_matched_by_shape() {
        // Each event with its comma fills two blocks, and the `-`, `.` or leading `0` of its
        // number is the last byte of a block: the first byte of the next one clears it.
        for (number, at) in [("-3", 0), ("1.5", 1), ("0.5", 0)] {
            let head = r#"{"ph": "C", "args": {"v": "#;
            let pad = " ".repeat(62 - at - head.len());
            let mut event = format!("{head}{pad}{number}}}}}");
            event.push_str(&" ".repeat(127 - event.len()));
            let doc = format!("[{}]", vec![event; 20].join(","));
            for matched in matched(doc.as_bytes()) {
                assert_eq!(matched, 19, "{number}");
            }
        }
    }

    #[test]
    fn process_name_events_are_read_by_the_grammar() {
        let meta = |name: &str| {
            format!(r#"{{"ph": "M", "name": "process_name", "args": {{"name": "{name}"}}}}"#)
        };
        let doc = format!(
            "[{}]",
            [meta("A"), meta("B"), meta("A"), meta("C")].join(",")
        );
        for matched in matched(doc.as_bytes()) {
            assert_eq!(matched, 0);
        }
        let mut s = BlockScanner::new(Classifier::Portable);
        s.feed(doc.as_bytes());
        assert_eq!(s.finish().process_names, ["A", "B", "C"]);
    }
}
