//! The block scanner: stage 1 ([`super::blocks`]) turns a piece of input into one structural
//! bitmask per 64 bytes and finds the first error inside strings (a control character or a bad
//! escape) and in UTF-8; stage 2 walks only the set bits and feeds the grammar. Pieces are at
//! most [`PIECE`] bytes, so the bitmasks stay in the L1 cache and memory does not grow.

use super::TraceScan;
use super::blocks::{Classifier, Stage1};
use super::grammar::{CAPTURE_LIMIT, Grammar, LexAtEnd};
use super::tokens::{CLASS, Escape, SCALAR, ScalarDfa};
use super::utf8::Utf8Stream;

/// Bytes classified before stage 2 walks them.
const PIECE: usize = 64 << 10;

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
    structurals: Vec<u64>,
    /// The positions of the set bits of `structurals` (with room to spare for [`flatten`]).
    positions: Vec<u32>,
    /// Stage 1's scalar-token bytes, one mask per block.
    others: Vec<u64>,
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

/// Writes the positions of the set bits of `masks` (block `k` at `64 * k`) into `out`, in
/// order, and returns how many there are. Eight positions are written at a time whatever the
/// count (simdjson's flattening: no branch per bit); `out` must have 72 slots to spare past
/// the last position.
fn flatten(masks: &[u64], out: &mut [u32]) -> usize {
    let mut n = 0;
    for (k, &mask) in masks.iter().enumerate() {
        let base = (k * 64) as u32;
        let count = mask.count_ones() as usize;
        let mut bits = mask;
        let mut written = 0;
        while written < count {
            let Some(dst) = out.get_mut(n + written..n + written + 8) else {
                return n;
            };
            for d in dst {
                *d = base + bits.trailing_zeros();
                bits &= bits.wrapping_sub(1);
            }
            written += 8;
        }
        n += count;
    }
    n
}

/// The structural positions of a piece, in order.
struct Cursor<'a> {
    positions: &'a [u32],
    /// The next one.
    p: usize,
}

impl<'a> Cursor<'a> {
    /// The positions in `from..limit`, from all the positions of the piece.
    fn new(positions: &'a [u32], from: usize, limit: usize) -> Self {
        let end = positions.partition_point(|&x| (x as usize) < limit);
        let positions = &positions[..end];
        let p = positions.partition_point(|&x| (x as usize) < from);
        Self { positions, p }
    }

    /// The next position, without taking it.
    #[inline(always)]
    fn peek(&mut self) -> Option<usize> {
        self.positions.get(self.p).map(|&x| x as usize)
    }

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        let i = *self.positions.get(self.p)?;
        self.p += 1;
        Some(i as usize)
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
    others: &'a [u64],
    base: u64,
    limit: usize,
    cur: Cursor<'a>,
    grammar: &'a mut Grammar,
    capture: &'a mut Vec<u8>,
    lex: &'a mut Lex,
}

impl Walk<'_> {
    /// `false` once the grammar failed.
    fn run(&mut self) -> bool {
        while let Some(i) = self.cur.next() {
            let at = self.base + i as u64;
            let flow = match self.buf[i] {
                b'"' => self.string(i),
                b'{' => flow(self.grammar.open(at, true)),
                b'[' => flow(self.grammar.open(at, false)),
                b'}' => flow(self.grammar.close(at, true)),
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
        let j = token_end(self.others, i + 1, self.limit);
        let dfa = ScalarDfa::new().feed(&self.buf[i..j]);
        if j == self.limit {
            *self.lex = Lex::Scalar { start: at, dfa };
            return Flow::End;
        }
        let ok = self
            .grammar
            .scalar_end(at, self.base + j as u64 - 1, dfa.accepts());
        flow(ok)
    }
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
            structurals: Vec::with_capacity(PIECE / 64),
            positions: vec![0; PIECE + 72],
            others: Vec::with_capacity(PIECE / 64),
        }
    }

    pub(super) fn failed(&self) -> bool {
        self.grammar.failed()
    }

    pub(super) fn feed(&mut self, buf: &[u8]) {
        for piece in buf.chunks(PIECE) {
            if self.grammar.failed() {
                self.offset += piece.len() as u64;
            } else {
                self.piece(piece);
            }
        }
    }

    fn piece(&mut self, buf: &[u8]) {
        let base = self.offset;
        self.offset += buf.len() as u64;
        let (stop, hi) = self.stage1(buf);
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

    /// Classifies `buf` into `self.structurals`; returns the first error inside a string and
    /// whether any byte is 0x80 or above.
    fn stage1(&mut self, buf: &[u8]) -> (Option<Stop>, bool) {
        self.structurals.clear();
        self.others.clear();
        let mut stop: Option<Stop> = None;
        let mut hi = 0u64;
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
        let mut chunks = buf.chunks_exact(64);
        let mut index = 0usize;
        for chunk in &mut chunks {
            let block: &[u8; 64] = chunk.try_into().unwrap_or(&[b' '; 64]);
            let b = self.stage1.block(self.classifier, block, 64);
            self.structurals.push(b.structurals);
            self.others.push(b.other);
            hi |= b.hi;
            if (b.ctrl_in_string | b.escapes) != 0 {
                self.string_errors(buf, index, b.ctrl_in_string, b.escapes, &mut stop);
            }
            index += 64;
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut block = [b' '; 64];
            block[..rest.len()].copy_from_slice(rest);
            let b = self.stage1.block(self.classifier, &block, rest.len());
            self.structurals.push(b.structurals);
            self.others.push(b.other);
            hi |= b.hi;
            if (b.ctrl_in_string | b.escapes) != 0 {
                self.string_errors(buf, index, b.ctrl_in_string, b.escapes, &mut stop);
            }
        }
        (stop, hi != 0)
    }

    /// Checks the escape sequences and control characters of the block at `index`, keeping
    /// the earliest error in `stop` (an escape error before a control character at one byte).
    #[cold]
    fn string_errors(
        &mut self,
        buf: &[u8],
        index: usize,
        ctrl: u64,
        mut escapes: u64,
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
                Ok(state) => self.escape = state,
                Err(at) => keep(at, "invalid escape sequence", stop),
            }
        }
        if ctrl != 0 {
            keep(
                index + ctrl.trailing_zeros() as usize,
                "control character in string",
                stop,
            );
        }
    }

    /// Walks the structural bits before `limit`; `false` once the grammar failed.
    fn stage2(&mut self, buf: &[u8], base: u64, limit: usize) -> bool {
        let count = flatten(&self.structurals, &mut self.positions);
        let mut from = 0usize;
        if let Lex::Scalar { start, dfa } = self.lex {
            let j = token_end(&self.others, 0, limit);
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
        let mut w = Walk {
            buf,
            others: &self.others,
            base,
            limit,
            cur: Cursor::new(&self.positions[..count], from, limit),
            grammar: &mut self.grammar,
            capture: &mut self.capture,
            lex: &mut self.lex,
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
