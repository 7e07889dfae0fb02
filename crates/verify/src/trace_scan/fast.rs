//! The block scanner: stage 1 ([`super::blocks`]) turns a piece of input into one structural
//! bitmask per 64 bytes and finds the first error inside strings (a control character or a bad
//! escape) and in UTF-8; stage 2 walks only the set bits and feeds the grammar. Pieces are at
//! most [`PIECE`] bytes, so the bitmasks stay in the L1 cache and memory does not grow.

use super::TraceScan;
use super::blocks::{Classifier, Stage1};
use super::grammar::{CAPTURE_LIMIT, Grammar, LexAtEnd};
use super::tokens::{CLASS, DELIM, Escape, SCALAR, ScalarDfa};
use super::utf8::Utf8Stream;

/// Bytes classified before stage 2 walks them.
const PIECE: usize = 64 << 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    Normal,
    /// Inside a string; `open` is the index of its opening quote in the current piece.
    String {
        open: Option<usize>,
    },
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
}

/// How far the escape sequence that starts with the backslash at `p` reads, from `state`: the
/// index of the offending byte, or the state at the end of `buf`.
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

/// Index of the first byte at or after `i` and before `end` that ends a scalar token.
#[inline(always)]
fn token_end(buf: &[u8], mut i: usize, end: usize) -> usize {
    while i < end && CLASS[usize::from(buf[i])] != DELIM {
        i += 1;
    }
    i
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
        let mut i = 0usize;
        match self.lex {
            Lex::Scalar { start, dfa } => {
                let j = token_end(buf, 0, limit);
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
                i = j;
            }
            Lex::String { .. } => self.lex = Lex::String { open: None },
            Lex::Normal => {}
        }
        let blocks = limit.div_ceil(64);
        for k in i / 64..blocks {
            let mut bits = self.structurals[k];
            if k == i / 64 {
                bits &= u64::MAX.checked_shl((i % 64) as u32).unwrap_or(0);
            }
            if k + 1 == blocks && !limit.is_multiple_of(64) {
                bits &= (1u64 << (limit % 64)) - 1;
            }
            while bits != 0 {
                let i = k * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let at = base + i as u64;
                let ok = match buf[i] {
                    b'"' => match self.lex {
                        Lex::String { open } => {
                            self.lex = Lex::Normal;
                            match open {
                                Some(o) => self.grammar.string_close(&buf[o + 1..i], at),
                                None => {
                                    self.capture_more(&buf[..i]);
                                    self.grammar.string_close(&self.capture, at);
                                }
                            }
                            true
                        }
                        _ => {
                            self.lex = Lex::String { open: Some(i) };
                            self.grammar.string_open(at)
                        }
                    },
                    b'{' => self.grammar.open(at, true),
                    b'[' => self.grammar.open(at, false),
                    b'}' => self.grammar.close(at, true),
                    b']' => self.grammar.close(at, false),
                    b',' => self.grammar.comma(at),
                    b':' => self.grammar.colon(at),
                    b if CLASS[usize::from(b)] == SCALAR => {
                        if !self.grammar.scalar_start(at) {
                            return false;
                        }
                        let j = token_end(buf, i + 1, limit);
                        let dfa = ScalarDfa::new().feed(&buf[i..j]);
                        if j == limit {
                            self.lex = Lex::Scalar { start: at, dfa };
                            return true;
                        }
                        self.grammar
                            .scalar_end(at, base + j as u64 - 1, dfa.accepts())
                    }
                    _ => self.grammar.fail(at, "unexpected byte"),
                };
                if !ok {
                    return false;
                }
            }
        }
        // A string still open at the end of the piece keeps its content for the next one.
        match self.lex {
            Lex::String { open: Some(o) } => {
                self.capture.clear();
                self.capture_more(&buf[o + 1..limit]);
                self.lex = Lex::String { open: None };
            }
            Lex::String { open: None } => self.capture_more(&buf[..limit]),
            _ => {}
        }
        true
    }

    /// Appends to the captured string content, up to one byte past the limit.
    fn capture_more(&mut self, part: &[u8]) {
        let room = (CAPTURE_LIMIT + 1).saturating_sub(self.capture.len());
        self.capture
            .extend_from_slice(&part[..part.len().min(room)]);
    }

    pub(super) fn finish(self) -> TraceScan {
        let lex = match self.lex {
            Lex::Normal => LexAtEnd::Normal,
            Lex::String { .. } => LexAtEnd::String,
            Lex::Scalar { start, dfa } => LexAtEnd::Scalar {
                start,
                valid: dfa.accepts(),
            },
        };
        self.grammar.finish(lex, self.offset)
    }
}
