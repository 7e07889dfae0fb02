//! Stage 1: classify 64 bytes at a time into bitmasks (bit `i` is byte `i` of the block), and
//! derive from them, carrying state from block to block, which quotes are real, which bytes are
//! inside strings, and where the structural characters and scalar tokens start.

use crate::simd::{Masks, Simd, classify_portable, prefix_xor};

/// How blocks are classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Classifier {
    /// With the CPU's vector unit.
    Simd(Simd),
    /// Byte by byte.
    Portable,
}

impl Classifier {
    #[inline]
    fn classify(self, block: &[u8; 64]) -> Masks {
        match self {
            Classifier::Simd(simd) => simd.classify(block),
            Classifier::Portable => classify_portable(block),
        }
    }
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
    /// Bytes 0x80 and above anywhere.
    pub hi: u64,
    /// Bytes outside strings that are not whitespace, structural characters or quotes: the
    /// bytes of scalar tokens (and stray bytes).
    pub other: u64,
}

/// The state stage 1 carries from one block to the next.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Stage1 {
    /// All ones when the previous block ended inside a string.
    in_string: u64,
    /// The first byte of the next block is escaped by a backslash.
    escaped_next: bool,
    /// The previous block ended inside a run of other bytes.
    other_prev: bool,
}

impl Stage1 {
    /// The bytes escaped by a backslash among the first `n` bytes; updates the carry for
    /// the byte after them. Backslashes are rare in traces: a loop over them is enough.
    #[inline(always)]
    fn escaped(&mut self, backslash: u64, n: usize) -> u64 {
        let mut escaped = u64::from(self.escaped_next);
        self.escaped_next = false;
        let mut rest = backslash & !escaped;
        while rest != 0 {
            let p = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            if escaped & (1 << p) != 0 {
                continue;
            }
            if p + 1 == n {
                self.escaped_next = true;
            } else {
                escaped |= 1 << (p + 1);
                rest &= !(1 << (p + 1));
            }
        }
        escaped
    }

    /// Stage 1 of a block whose first `n` bytes are real (the rest are spaces).
    #[inline(always)]
    pub(super) fn block(&mut self, classifier: Classifier, bytes: &[u8; 64], n: usize) -> Block {
        let m = classifier.classify(bytes);
        let escaped = if m.backslash == 0 && !self.escaped_next {
            0
        } else {
            self.escaped(m.backslash, n)
        };
        let quotes = m.quote & !escaped;
        let in_string = prefix_xor(quotes) ^ self.in_string;
        self.in_string = ((in_string as i64) >> 63) as u64;
        let content = in_string & !quotes;
        let other = !(m.ws | m.op | m.quote) & !in_string;
        let other_start = other & !((other << 1) | u64::from(self.other_prev));
        self.other_prev = (other >> (n - 1)) & 1 == 1;
        Block {
            structurals: (m.op & !in_string) | quotes | other_start,
            ctrl_in_string: m.ctrl & content,
            escapes: m.backslash & !escaped & content,
            hi: m.hi,
            other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_runs_of_backslashes() {
        // In a string, `\\\"` then `\\"`: the first quote is escaped, the second is not.
        let text = br#""a\\\"b\\"c"#;
        let mut block = [b' '; 64];
        block[..text.len()].copy_from_slice(text);
        let mut s = Stage1::default();
        let b = s.block(Classifier::Portable, &block, 64);
        let quote_bits: Vec<u32> = (0..64).filter(|i| b.structurals & (1 << i) != 0).collect();
        // The opening quote, the closing quote at 9, then `c` starts a run of other bytes.
        assert_eq!(quote_bits, vec![0, 9, 10]);
    }
}
