//! Byte classes and the two small automata both lexers share: one for scalar tokens (JSON
//! numbers and the literals `true`, `false`, `null`), one for escape sequences in strings. Both
//! take a byte at a time, so a token or escape split across chunks needs no buffer.

use crate::simd::{is_delim, is_simple_escape};

/// A byte between tokens: whitespace, a structural character or a quote.
pub(super) const DELIM: u8 = 1;
/// A byte that may start a scalar token (alphanumeric, `.`, `+`, `-`).
pub(super) const SCALAR: u8 = 2;

/// [`DELIM`] or [`SCALAR`] for each byte (0 for any other byte).
pub(super) static CLASS: [u8; 256] = class_table();

const fn class_table() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut b = 0usize;
    while b < 256 {
        let c = b as u8;
        t[b] = match c {
            _ if is_delim(c) => DELIM,
            _ if c.is_ascii_alphanumeric() || c == b'.' || c == b'+' || c == b'-' => SCALAR,
            _ => 0,
        };
        b += 1;
    }
    t
}

/// The state of the scalar-token automaton. A token is a maximal run of bytes that are not
/// [`DELIM`]; it is valid when it is a JSON number or literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ScalarDfa(u8);

// Number states.
const START: u8 = 0;
const MINUS: u8 = 1;
const ZERO: u8 = 2;
const INT: u8 = 3;
const DOT: u8 = 4;
const FRAC: u8 = 5;
const EXP: u8 = 6;
const EXP_SIGN: u8 = 7;
const EXP_DIGITS: u8 = 8;
const DEAD: u8 = 9;
/// Literal states: `LIT + 16 * literal + matched bytes`.
const LIT: u8 = 16;
const LITERALS: [&[u8]; 3] = [b"true", b"false", b"null"];

impl ScalarDfa {
    /// At the start of a token.
    pub(super) const fn new() -> Self {
        Self(START)
    }

    /// Consumes one more byte of the token.
    #[inline]
    pub(super) fn step(self, b: u8) -> Self {
        let digit = b.is_ascii_digit();
        Self(match self.0 {
            START => match b {
                b'-' => MINUS,
                b'0' => ZERO,
                b'1'..=b'9' => INT,
                b't' => LIT + 1,
                b'f' => LIT + 16 + 1,
                b'n' => LIT + 32 + 1,
                _ => DEAD,
            },
            MINUS => match b {
                b'0' => ZERO,
                b'1'..=b'9' => INT,
                _ => DEAD,
            },
            ZERO | INT | FRAC => match b {
                _ if digit && self.0 != ZERO => self.0,
                b'.' if self.0 != FRAC => DOT,
                b'e' | b'E' => EXP,
                _ => DEAD,
            },
            DOT => {
                if digit {
                    FRAC
                } else {
                    DEAD
                }
            }
            EXP => match b {
                b'+' | b'-' => EXP_SIGN,
                _ if digit => EXP_DIGITS,
                _ => DEAD,
            },
            EXP_SIGN | EXP_DIGITS => {
                if digit {
                    EXP_DIGITS
                } else {
                    DEAD
                }
            }
            s if s >= LIT => {
                let lit = LITERALS[usize::from((s - LIT) / 16)];
                let i = usize::from((s - LIT) % 16);
                if lit.get(i) == Some(&b) { s + 1 } else { DEAD }
            }
            _ => DEAD,
        })
    }

    /// Consumes a run of token bytes.
    #[inline(always)]
    pub(super) fn feed(self, bytes: &[u8]) -> Self {
        if self.0 == START
            && let Some(state) = plain_number(bytes)
        {
            // The usual tokens: integers (ids, pids, tids) and plain decimals (durations).
            return Self(state);
        }
        self.feed_each(bytes)
    }

    fn feed_each(mut self, bytes: &[u8]) -> Self {
        for &b in bytes {
            self = self.step(b);
            if self.0 == DEAD {
                break;
            }
        }
        self
    }

    /// Whether the bytes so far form a complete number or literal.
    pub(super) fn accepts(self) -> bool {
        match self.0 {
            ZERO | INT | FRAC | EXP_DIGITS => true,
            s if s >= LIT => {
                let lit = LITERALS[usize::from((s - LIT) / 16)];
                usize::from((s - LIT) % 16) == lit.len()
            }
            _ => false,
        }
    }
}

/// The state after a whole token that is `-`?, an integer without a leading zero, then
/// optionally `.` and digits; `None` for any other token.
#[inline(always)]
fn plain_number(bytes: &[u8]) -> Option<u8> {
    let digits = |b: &[u8]| b.iter().take_while(|c| c.is_ascii_digit()).count();
    let unsigned = bytes.strip_prefix(b"-").unwrap_or(bytes);
    let int = digits(unsigned);
    let state = match unsigned {
        [b'0', ..] if int == 1 => ZERO,
        [b'1'..=b'9', ..] => INT,
        _ => return None,
    };
    match &unsigned[int..] {
        [] => Some(state),
        [b'.', frac @ ..] if !frac.is_empty() && digits(frac) == frac.len() => Some(FRAC),
        _ => None,
    }
}

/// Where an escape sequence is: `\` then one of `"\/bfnrt`, or `u` and four hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Escape {
    /// Not in an escape sequence.
    None,
    /// After the backslash.
    Backslash,
    /// After `\u`, this many hex digits still to come.
    Hex(u8),
}

impl Escape {
    /// Consumes the next byte of an escape sequence; `None` when `b` cannot come here.
    #[inline]
    pub(super) fn step(self, b: u8) -> Option<Self> {
        match self {
            Escape::None => Some(Escape::None),
            Escape::Backslash => match b {
                _ if is_simple_escape(b) => Some(Escape::None),
                b'u' => Some(Escape::Hex(4)),
                _ => None,
            },
            Escape::Hex(n) => b.is_ascii_hexdigit().then_some(if n == 1 {
                Escape::None
            } else {
                Escape::Hex(n - 1)
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid_scalar(tok: &[u8]) -> bool {
        ScalarDfa::new().feed(tok).accepts()
    }

    #[test]
    fn validates_scalars() {
        for ok in [
            "0", "-1", "1.5", "1e5", "1E+5", "-0.0e-3", "true", "false", "null", "10", "0.25",
        ] {
            assert!(valid_scalar(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "01", "1.", ".5", "-", "1e", "tru", "nul1", "+1", "1x", "truee", "", "1.2.3", "-0x",
            "1e+", "00",
        ] {
            assert!(!valid_scalar(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn the_plain_number_shortcut_ends_in_the_automaton_s_state() {
        for tok in [
            "0",
            "-0",
            "7",
            "-12",
            "0.5",
            "-0.25",
            "10.0",
            "01",
            "00",
            "-",
            "1.",
            ".5",
            "1.2.3",
            "1e5",
            "0x1",
            "-01.5",
            "1234567890123456789",
            "5.",
            "-.5",
        ] {
            assert_eq!(
                ScalarDfa::new().feed(tok.as_bytes()),
                ScalarDfa::new().feed_each(tok.as_bytes()),
                "{tok}"
            );
        }
    }

    #[test]
    fn split_tokens_validate_alike() {
        for tok in ["1704161511431704", "-0.0e-3", "false", "1.", "nul"] {
            let whole = valid_scalar(tok.as_bytes());
            for cut in 0..tok.len() {
                let (a, b) = tok.as_bytes().split_at(cut);
                assert_eq!(
                    ScalarDfa::new().feed(a).feed(b).accepts(),
                    whole,
                    "{tok} at {cut}"
                );
            }
        }
    }

    #[test]
    fn escapes() {
        let run = |s: &[u8]| {
            s.iter()
                .try_fold(Escape::Backslash, |e, &b| e.step(b))
                .map(|e| e == Escape::None)
        };
        for ok in [&b"n"[..], b"\"", b"\\", b"/", b"u00e9", b"uABCD"] {
            assert_eq!(run(ok), Some(true), "{ok:?}");
        }
        assert_eq!(run(b"u12"), Some(false));
        for bad in [&b"x"[..], b"u12G4", b"U0000", b"'"] {
            assert_eq!(run(bad), None, "{bad:?}");
        }
    }
}
