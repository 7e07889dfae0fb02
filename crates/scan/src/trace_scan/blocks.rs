//! Stage 1: classify 64 bytes at a time into bitmasks (bit `i` is byte `i` of the block), and
//! derive from them, carrying state from block to block, which quotes are real, which bytes are
//! inside strings, where the structural characters and scalar tokens start, and which bytes
//! stage 2 must not take on trust (see [`Block::suspects`]).

use crate::simd::{
    Before, GroupLanes, JsonBlocks, Masks, Numbers, Simd, name_candidates, run_starts,
};

/// How blocks are classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Classifier {
    /// With the CPU's vector unit.
    Simd(Simd),
    /// Byte by byte.
    Portable,
}

/// What stage 1 found in one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Block {
    /// Opening and closing quotes, structural characters outside strings and the first byte of
    /// each run of other bytes outside strings (scalar tokens and stray bytes).
    pub structurals: u64,
    /// Control characters inside strings.
    pub ctrl_in_string: u64,
    /// Backslashes inside strings that start an escape sequence.
    pub escapes: u64,
    /// The control characters in strings and the escape sequences that the caller must check
    /// byte by byte (`\u`, and a sequence that the end of the block cuts); the others were
    /// checked here.
    pub string_checks: u64,
    /// Bytes 0x80 and above anywhere.
    pub hi: u64,
    /// Bytes outside strings that are not whitespace, structural characters or quotes: the
    /// bytes of scalar tokens (and stray bytes).
    pub other: u64,
    /// The first byte of each scalar token (a subset of `structurals`).
    pub starts: u64,
    /// Bytes that a matched event shape cannot vouch for: in scalar tokens, every byte that is
    /// not part of a plain number (`-`? digits without a leading zero, then `.` and digits at
    /// most once; literals, exponents and stray bytes included), and the closing quote of
    /// every string that may be `"process_name"` (see [`Block::names`]). Conservative: a byte
    /// whose verdict depends on a byte past the piece is suspect.
    pub suspects: u64,
    /// The closing quotes of the strings that are 12 bytes long with `_` at index 7, as
    /// `"process_name"` is (part of `suspects`; the caller may drop those that are not it, see
    /// [`Block::not_names`]).
    pub names: u64,
}

/// The escape sequences that start at `escapes` and need a check byte by byte: `\u`, one
/// whose next byte is not a valid escape, and one that the end of the block cuts. The escape
/// characters are looked up only in a block with escapes (15 % of a real trace's).
#[inline(always)]
fn escape_checks(classifier: impl JsonBlocks, bytes: &[u8; 64], escapes: u64, n: usize) -> u64 {
    if escapes == 0 {
        return 0;
    }
    let (simple, u) = classifier.escape_chars(bytes);
    // The byte after each escape, as a mask of the backslashes.
    let follows_simple = simple >> 1;
    let last = 1u64 << (n - 1);
    escapes & (!follows_simple | (u >> 1) | last)
}

impl Block {
    /// The structural positions stage 2 walks: the structural characters, the quotes, the
    /// token starts, and the suspects (which lie inside tokens or on quotes).
    #[inline(always)]
    pub(super) fn kinds(&self) -> u64 {
        self.structurals | self.suspects
    }

    /// Drops the closing quotes in `names` from the suspects: their strings are not
    /// `"process_name"`.
    #[inline(always)]
    pub(super) fn not_names(&mut self, names: u64) {
        let scalars = self.suspects & !self.names;
        self.names &= !names;
        self.suspects = scalars | self.names;
    }
}

/// What stage 1 finds in a block inside strings (see [`Block`]), and the bytes outside
/// strings that are not whitespace, structural characters or quotes.
#[derive(Debug, Clone, Copy)]
pub(super) struct InString {
    pub other: u64,
    pub ctrl_in_string: u64,
    pub escapes: u64,
    pub string_checks: u64,
    pub hi: u64,
}

/// What stage 1 knows of the bytes after a block's.
#[derive(Debug, Clone, Copy)]
pub(super) enum Next<'a> {
    /// Bit `i` says whether byte `i + 1` of the block (and so the byte after it, for bit 63)
    /// is a digit: the digits of the 64 bytes from the block's second.
    Digits(u64),
    /// The byte after the block's bytes, when known.
    Byte(Option<&'a u8>),
}

/// The state stage 1 carries from one block to the next.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Stage1 {
    /// All ones when the previous block ended inside a string.
    in_string: u64,
    /// The first byte of the next block is escaped by a backslash.
    escaped_next: bool,
    /// The other bytes and token digits of the previous block, shifted so that its last byte
    /// is bit 63 (a shift in, not a bit out and back, per block).
    prev_other: u64,
    prev_digit: u64,
    /// The token `.` of the previous block, shifted likewise, and in bit 63 also the carry out
    /// of its walk over the digits after a `.` (one carry for both: the walk runs out of a
    /// block through its last byte only when that is a digit, or a `.` after a `.`, which is a
    /// suspect already).
    prev_dot: u64,
    /// The quotes and `_` of the previous block, shifted so that its last byte is bit 63.
    prev_quotes: u64,
    prev_underscore: u64,
}

impl Stage1 {
    /// The bytes escaped by a backslash among the first `n` bytes; updates the carry for
    /// the byte after them. Without a branch per backslash (simdjson's escape scanner): a
    /// backslash that starts a run escapes the byte after each backslash at an even distance
    /// from it, which a subtraction from the odd bits finds for every run at once; a block
    /// without one (most) only passes the carry on.
    #[inline(always)]
    fn escaped(&mut self, backslash: u64, n: usize) -> u64 {
        const ODD: u64 = 0xAAAA_AAAA_AAAA_AAAA;
        let carry = u64::from(self.escaped_next);
        if backslash == 0 {
            self.escaped_next = false;
            return carry;
        }
        let potential = backslash & !carry;
        let codes = (((potential << 1) | ODD).wrapping_sub(potential)) ^ ODD;
        self.escaped_next = (codes & backslash) >> (n - 1) & 1 == 1;
        codes ^ (backslash | carry)
    }

    /// Stage 1 of a block whose first `n` bytes are real (the rest are spaces), followed by
    /// `next`.
    #[inline(always)]
    pub(super) fn block(
        &mut self,
        classifier: impl JsonBlocks,
        bytes: &[u8; 64],
        n: usize,
        next: Next<'_>,
    ) -> Block {
        let m = classifier.classify(bytes);
        // No quote, and inside a string from the start (one test: `in_string` is all ones or 0).
        if m.quote | !self.in_string == 0 {
            return self.inside_string(classifier, bytes, &m, n);
        }
        self.mixed(classifier, bytes, &m, n, next)
    }

    /// Stage 1 of a whole block, lane `k` of a group of 8, as far as it goes inside strings:
    /// what carries from block to block outside them is for [`JsonBlocks::group`] of `lanes`
    /// after [`Stage1::before`] (taken before the group), then [`Stage1::set_before`].
    #[inline(always)]
    pub(super) fn grouped(
        &mut self,
        classifier: impl JsonBlocks,
        bytes: &[u8; 64],
        lanes: &mut GroupLanes,
        k: usize,
    ) -> InString {
        let m = classifier.classify(bytes);
        lanes.underscore[k] = m.underscore;
        lanes.digit[k] = m.digit;
        lanes.dot[k] = m.dot;
        lanes.minus[k] = m.minus;
        lanes.zero[k] = m.zero;
        if m.quote | !self.in_string == 0 {
            lanes.ops[k] = 0;
            lanes.quotes[k] = 0;
            return self.spanned(classifier, bytes, &m, 64);
        }
        let (s, quotes, in_string) = self.strings_only(classifier, bytes, &m, 64);
        lanes.ops[k] = (m.op & !in_string) | quotes;
        lanes.quotes[k] = quotes;
        s
    }

    /// The masks the block before the next continues (see [`Before`]).
    pub(super) fn before(&self) -> Before {
        Before {
            other: self.prev_other,
            quotes: self.prev_quotes,
            underscore: self.prev_underscore,
            digit: self.prev_digit,
            dot: self.prev_dot,
        }
    }

    /// Sets [`Stage1::before`] (after a group).
    pub(super) fn set_before(&mut self, b: Before) {
        self.prev_other = b.other;
        self.prev_quotes = b.quotes;
        self.prev_underscore = b.underscore;
        self.prev_digit = b.digit;
        self.prev_dot = b.dot;
    }

    /// The strings of a block classified as `m`: what they hold, the real quotes and the bytes
    /// inside strings.
    #[inline(always)]
    fn strings_only(
        &mut self,
        classifier: impl JsonBlocks,
        bytes: &[u8; 64],
        m: &Masks,
        n: usize,
    ) -> (InString, u64, u64) {
        let escaped = self.escaped(m.backslash, n);
        let quotes = m.quote & !escaped;
        let in_string = classifier.prefix_xor(quotes) ^ self.in_string;
        self.in_string = ((in_string as i64) >> 63) as u64;
        let content = in_string & !quotes;
        let escapes = m.backslash & !escaped & content;
        let ctrl_in_string = m.ctrl & content;
        let s = InString {
            other: !m.delim & !in_string,
            ctrl_in_string,
            escapes,
            string_checks: ctrl_in_string | escape_checks(classifier, bytes, escapes, n),
            hi: m.hi,
        };
        (s, quotes, in_string)
    }

    /// [`Stage1::block`] of any block, classified as `m`.
    #[inline(always)]
    fn mixed(
        &mut self,
        classifier: impl JsonBlocks,
        bytes: &[u8; 64],
        m: &Masks,
        n: usize,
        next: Next<'_>,
    ) -> Block {
        let (mut b, numbers) = self.strings(classifier, bytes, m, n);
        b.suspects |= self.scalar_suspects(&numbers, n, next);
        b
    }

    /// [`Stage1::mixed`] but for the number suspects (`suspects` holds the name candidates
    /// only), and the block's [`Numbers`].
    #[inline(always)]
    fn strings(
        &mut self,
        classifier: impl JsonBlocks,
        bytes: &[u8; 64],
        m: &Masks,
        n: usize,
    ) -> (Block, Numbers) {
        let (s, quotes, in_string) = self.strings_only(classifier, bytes, m, n);
        let other = s.other;
        let other_start = run_starts(other, self.prev_other);
        self.prev_other = other << (64 - n);
        let names = self.name_candidates(quotes, m.underscore, n);
        let numbers = Numbers {
            tokens: other,
            starts: other_start,
            digit: m.digit & other,
            dot: m.dot & other,
            minus: m.minus & other,
            zero: m.zero & other,
        };
        let block = Block {
            structurals: (m.op & !in_string) | quotes | other_start,
            ctrl_in_string: s.ctrl_in_string,
            escapes: s.escapes,
            string_checks: s.string_checks,
            hi: s.hi,
            other,
            starts: other_start,
            suspects: names,
            names,
        };
        (block, numbers)
    }

    /// [`Stage1::block`] of a block that a string spans from end to end (long strings, such as
    /// call stacks, have many): no quote, so no token, only escapes to find.
    #[inline(always)]
    fn inside_string(
        &mut self,
        classifier: impl JsonBlocks,
        bytes: &[u8; 64],
        m: &Masks,
        n: usize,
    ) -> Block {
        let s = self.spanned(classifier, bytes, m, n);
        // The carries as the general path leaves them after such a block.
        self.prev_other = 0;
        self.prev_digit = 0;
        self.prev_dot = 0;
        self.prev_quotes = 0;
        self.prev_underscore = m.underscore << (64 - n);
        Block {
            structurals: 0,
            ctrl_in_string: s.ctrl_in_string,
            escapes: s.escapes,
            string_checks: s.string_checks,
            hi: s.hi,
            other: 0,
            starts: 0,
            suspects: 0,
            names: 0,
        }
    }

    /// What a block that a string spans from end to end, classified as `m`, holds: its escapes
    /// and control characters, all inside the string.
    #[inline(always)]
    fn spanned(
        &mut self,
        classifier: impl JsonBlocks,
        bytes: &[u8; 64],
        m: &Masks,
        n: usize,
    ) -> InString {
        let escapes = m.backslash & !self.escaped(m.backslash, n);
        InString {
            other: 0,
            ctrl_in_string: m.ctrl,
            escapes,
            string_checks: m.ctrl | escape_checks(classifier, bytes, escapes, n),
            hi: m.hi,
        }
    }

    /// The token bytes of `x` that are not part of a plain number; `next` says what follows
    /// the block's `n` bytes.
    #[inline(always)]
    fn scalar_suspects(&mut self, x: &Numbers, n: usize, next: Next<'_>) -> u64 {
        let last = n - 1;
        let w = x.walk((self.prev_digit >> 63, self.prev_dot >> 63));
        let shift = 64 - n;
        self.prev_digit = x.digit << shift;
        self.prev_dot = (x.dot << shift) | (u64::from(w.carry) << 63);
        let byte = match next {
            // A digit after a token byte continues the token (outside strings, then).
            Next::Digits(after) => return x.verdict(&w, after, 0),
            Next::Byte(byte) => byte,
        };
        // First as if the byte after the block were unknown: it counts as not a digit in one
        // place and as a digit in the other, whichever makes a suspect, so only the last byte
        // can come out suspect where the byte would have cleared it; only then is it read.
        let suspects = x.verdict(&w, x.digit >> 1, 1 << last);
        match byte {
            Some(b) if (suspects >> last) & 1 == 1 => {
                let next_digit = (x.digit >> 1) | (u64::from(b.is_ascii_digit()) << last);
                x.verdict(&w, next_digit, 0)
            }
            _ => suspects,
        }
    }

    /// The closing quotes of strings that are 12 bytes long with `_` at index 7, as
    /// `"process_name"` is.
    #[inline(always)]
    fn name_candidates(&mut self, quotes: u64, underscore: u64, n: usize) -> u64 {
        let cand = name_candidates(quotes, underscore, &self.before());
        // Keep the previous block's bytes as if it were a whole block ending at byte `n - 1`.
        let shift = 64 - n;
        self.prev_quotes = quotes << shift;
        self.prev_underscore = underscore << shift;
        cand
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The escaped bytes, one backslash at a time.
    fn escaped_by_hand(carry: bool, backslash: u64, n: usize) -> (u64, bool) {
        let mut escaped = u64::from(carry);
        let mut next = false;
        for p in 0..n {
            if backslash & (1 << p) != 0 && escaped & (1 << p) == 0 {
                if p + 1 == n {
                    next = true;
                } else {
                    escaped |= 1 << (p + 1);
                }
            }
        }
        (escaped & (u64::MAX >> (64 - n)), next)
    }

    #[test]
    fn escapes_without_a_branch_agree_with_one_backslash_at_a_time() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for i in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Dense and sparse backslashes, with runs.
            let backslash = if i % 2 == 0 {
                x
            } else {
                x & (x >> 3) & (x >> 5)
            };
            let n = if i % 3 == 0 {
                1 + (x >> 58) as usize
            } else {
                64
            };
            let backslash = backslash & (u64::MAX >> (64 - n));
            for carry in [false, true] {
                let mut s = Stage1 {
                    escaped_next: carry,
                    ..Stage1::default()
                };
                let escaped = s.escaped(backslash, n) & (u64::MAX >> (64 - n));
                assert_eq!(
                    (escaped, s.escaped_next),
                    escaped_by_hand(carry, backslash, n)
                );
            }
        }
    }

    #[test]
    fn a_block_inside_a_string_is_read_as_the_general_path_reads_it() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        // No quote: the fast path is for blocks without one.
        let alphabet = b"ab_09.-e \t\x01\xc3\xa9:,{}[]\\\\\\nu/";
        for i in 0..40_000 {
            let mut block = [b' '; 64];
            for b in block.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = alphabet[(x % alphabet.len() as u64) as usize];
            }
            let n = if i % 4 == 0 {
                1 + (x >> 58) as usize
            } else {
                64
            };
            block[n..].fill(b' ');
            // After a block that ended inside a string, with an underscore in its tail, or
            // with a backslash that escapes this block's first byte.
            let mut before = [b'_'; 64];
            before[0] = b'"';
            if i % 2 == 1 {
                before[63] = b'\\';
            }
            let mut start = Stage1::default();
            let _ = start.block(crate::simd::Portable, &before, 64, Next::Byte(None));
            assert_eq!(start.in_string, u64::MAX);
            assert_eq!(start.escaped_next, i % 2 == 1);
            let m = crate::simd::classify_portable(&block);
            let (mut fast, mut general) = (start, start);
            let got = fast.inside_string(crate::simd::Portable, &block, &m, n);
            let want = general.mixed(
                crate::simd::Portable,
                &block,
                &m,
                n,
                Next::Byte(Some(&b'7')),
            );
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&block));
            assert_eq!(format!("{fast:?}"), format!("{general:?}"));
        }
    }

    #[test]
    fn escaped_runs_of_backslashes() {
        // In a string, `\\\"` then `\\"`: the first quote is escaped, the second is not.
        let text = br#""a\\\"b\\"c"#;
        let mut block = [b' '; 64];
        block[..text.len()].copy_from_slice(text);
        let mut s = Stage1::default();
        let b = s.block(crate::simd::Portable, &block, 64, Next::Byte(None));
        let quote_bits: Vec<u32> = (0..64).filter(|i| b.structurals & (1 << i) != 0).collect();
        // The opening quote, the closing quote at 9, then `c` starts a run of other bytes.
        assert_eq!(quote_bits, vec![0, 9, 10]);
    }
}
