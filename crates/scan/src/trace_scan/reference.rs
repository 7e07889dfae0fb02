//! The reference lexer: one byte at a time, as simple as it can be. It is the scalar fallback's
//! specification: the block lexer must give the same [`TraceScan`] on every input, which the
//! differential tests check.

use super::TraceScan;
use super::grammar::{CAPTURE_LIMIT, Grammar, LexAtEnd};
use super::tokens::{CLASS, DELIM, Escape, SCALAR, ScalarDfa};
use super::utf8::Utf8Stream;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    Normal,
    String(Escape),
    Scalar { start: u64, dfa: ScalarDfa },
}

/// The byte-at-a-time scanner.
#[derive(Debug)]
pub(super) struct ReferenceScanner {
    grammar: Grammar,
    utf8: Utf8Stream,
    offset: u64,
    lex: Lex,
    /// The content of the open string, up to one byte past [`CAPTURE_LIMIT`].
    capture: Vec<u8>,
}

impl ReferenceScanner {
    pub(super) fn new() -> Self {
        Self {
            grammar: Grammar::new(),
            utf8: Utf8Stream::default(),
            offset: 0,
            lex: Lex::Normal,
            capture: Vec::with_capacity(CAPTURE_LIMIT + 1),
        }
    }

    pub(super) fn failed(&self) -> bool {
        self.grammar.failed()
    }

    pub(super) fn grammar(&mut self) -> &mut Grammar {
        &mut self.grammar
    }

    pub(super) fn feed(&mut self, buf: &[u8]) {
        let base = self.offset;
        if self.grammar.failed() {
            self.offset += buf.len() as u64;
            return;
        }
        let bad_utf8 = self.utf8.check(buf, base);
        // Bytes up to and including the first invalid one: a grammar error there comes first.
        let end = bad_utf8.map_or(buf.len(), |at| {
            ((at + 1).saturating_sub(base) as usize).min(buf.len())
        });
        for (i, &b) in buf[..end].iter().enumerate() {
            if !self.byte(b, base + i as u64) {
                break;
            }
        }
        self.offset += buf.len() as u64;
        if let Some(at) = bad_utf8 {
            self.grammar.fail(at, "invalid UTF-8");
        }
    }

    /// One byte at `at`; `false` once the input is malformed.
    fn byte(&mut self, b: u8, at: u64) -> bool {
        match self.lex {
            Lex::String(escape) => self.string_byte(escape, b, at),
            Lex::Scalar { start, dfa } => {
                if CLASS[usize::from(b)] == DELIM {
                    self.lex = Lex::Normal;
                    self.grammar.scalar_end(start, at - 1, dfa.accepts()) && self.normal(b, at)
                } else {
                    self.lex = Lex::Scalar {
                        start,
                        dfa: dfa.step(b),
                    };
                    true
                }
            }
            Lex::Normal => self.normal(b, at),
        }
    }

    fn normal(&mut self, b: u8, at: u64) -> bool {
        match b {
            b' ' | b'\n' | b'\r' | b'\t' => true,
            b'"' => {
                self.capture.clear();
                self.lex = Lex::String(Escape::None);
                self.grammar.string_open(at)
            }
            b'{' | b'[' => self.grammar.open(at, b == b'{'),
            b'}' | b']' => self.grammar.close(at, b == b'}'),
            b',' => self.grammar.comma(at),
            b':' => self.grammar.colon(at),
            _ if CLASS[usize::from(b)] == SCALAR => {
                self.lex = Lex::Scalar {
                    start: at,
                    dfa: ScalarDfa::new().step(b),
                };
                self.grammar.scalar_start(at)
            }
            _ => self.grammar.fail(at, "unexpected byte"),
        }
    }

    fn string_byte(&mut self, escape: Escape, b: u8, at: u64) -> bool {
        let next = if escape != Escape::None {
            match escape.step(b) {
                Some(e) => e,
                None => return self.grammar.fail(at, "invalid escape sequence"),
            }
        } else if b == b'"' {
            self.lex = Lex::Normal;
            self.grammar.string_close(&self.capture, at);
            return true;
        } else if b == b'\\' {
            Escape::Backslash
        } else if b < 0x20 {
            return self.grammar.fail(at, "control character in string");
        } else {
            Escape::None
        };
        self.lex = Lex::String(next);
        if self.capture.len() <= CAPTURE_LIMIT {
            self.capture.push(b);
        }
        true
    }

    pub(super) fn finish(self) -> TraceScan {
        let lex = match self.lex {
            Lex::Normal => LexAtEnd::Normal,
            Lex::String(_) => LexAtEnd::String,
            Lex::Scalar { start, dfa } => LexAtEnd::Scalar {
                start,
                valid: dfa.accepts(),
            },
        };
        self.grammar.finish(lex, self.offset)
    }
}
