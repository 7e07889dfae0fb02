//! The classification of 64-byte blocks into bitmasks (bit `i` is byte `i` of the block) for
//! the two streaming scanners: JSON ([`crate::trace_scan`]) and CSV ([`crate::csv_rows`]), and
//! the compaction of a block's marked bytes (the JSON scanner's structural "kinds") and of the
//! positions of its set bits (the CSV reader's index). Each has a portable version and vector
//! versions (AVX-512, AVX2, SSE2, or some of them) with `std::arch`, chosen at run time. This
//! is the only module of the workspace that allows `unsafe`, besides the memory maps: unaligned
//! vector loads and stores of arrays and slices and calls of `#[target_feature]` functions after
//! the feature was detected. Each `unsafe` block states why it is sound.
#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m128i, __m256i, __m512i, _mm_clmulepi64_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8,
    _mm_cvtsi64_si128, _mm_cvtsi128_si64, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8,
    _mm_or_si128, _mm_set1_epi8, _mm_sub_epi8, _mm256_and_si256, _mm256_cmpeq_epi8,
    _mm256_cmpgt_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8,
    _mm512_add_epi32, _mm512_add_epi64, _mm512_alignr_epi64, _mm512_and_si512, _mm512_andnot_si512,
    _mm512_castsi512_si128, _mm512_cmpeq_epi8_mask, _mm512_cmplt_epu8_mask,
    _mm512_cmplt_epu64_mask, _mm512_cvtepu8_epi32, _mm512_loadu_si512, _mm512_mask_blend_epi8,
    _mm512_mask_blend_epi64, _mm512_maskz_compress_epi8, _mm512_maskz_permutex2var_epi8,
    _mm512_movepi8_mask, _mm512_or_si512, _mm512_set1_epi8, _mm512_set1_epi32, _mm512_set1_epi64,
    _mm512_slli_epi64, _mm512_srli_epi64, _mm512_storeu_si512, _mm512_sub_epi8,
    _mm512_test_epi8_mask,
};

/// The JSON classes of the bytes of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Masks {
    /// `"`.
    pub quote: u64,
    /// `\`.
    pub backslash: u64,
    /// `{`, `}`, `[`, `]`, `,`, `:`.
    pub op: u64,
    /// The bytes between tokens: space, `\n`, `\r`, `\t`, the structural characters and `"`.
    pub delim: u64,
    /// Below 0x20.
    pub ctrl: u64,
    /// 0x80 and above.
    pub hi: u64,
    /// `0` to `9`.
    pub digit: u64,
    /// `0`.
    pub zero: u64,
    /// `-`.
    pub minus: u64,
    /// `.`.
    pub dot: u64,
    /// `_`.
    pub underscore: u64,
}

/// The bits of the bytes of `block` for which `class` holds.
fn portable_bits(block: &[u8; 64], class: impl Fn(u8) -> bool) -> u64 {
    block
        .iter()
        .enumerate()
        .filter(|(_, b)| class(**b))
        .fold(0, |m, (i, _)| m | (1 << i))
}

/// JSON whitespace.
const fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// JSON's structural characters.
const fn is_op(b: u8) -> bool {
    matches!(b, b'{' | b'}' | b'[' | b']' | b',' | b':')
}

/// A byte between tokens: whitespace, a structural character or a quote.
pub(crate) const fn is_delim(b: u8) -> bool {
    is_ws(b) || is_op(b) || b == b'"'
}

/// A byte that completes an escape sequence right after the backslash (`u` starts a longer one).
pub(crate) const fn is_simple_escape(b: u8) -> bool {
    matches!(b, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't')
}

/// The JSON classification byte by byte (the fallback when there is no vector unit).
pub(crate) fn classify_portable(block: &[u8; 64]) -> Masks {
    Masks {
        quote: portable_bits(block, |b| b == b'"'),
        backslash: portable_bits(block, |b| b == b'\\'),
        op: portable_bits(block, is_op),
        delim: portable_bits(block, is_delim),
        ctrl: portable_bits(block, |b| b < 0x20),
        hi: portable_bits(block, |b| b >= 0x80),
        digit: portable_bits(block, |b| b.is_ascii_digit()),
        zero: portable_bits(block, |b| b == b'0'),
        minus: portable_bits(block, |b| b == b'-'),
        dot: portable_bits(block, |b| b == b'.'),
        underscore: portable_bits(block, |b| b == b'_'),
    }
}

/// Writes the bytes of `block` marked in `mask`, in order, to the start of `out` (the rest of
/// `out` is left unspecified), with the bytes marked in `starts` written as `n` and those in
/// `suspects` as `x` (which wins).
pub(crate) fn kinds_portable(
    block: &[u8; 64],
    mask: u64,
    starts: u64,
    suspects: u64,
    out: &mut [u8; 64],
) {
    let mut coded = *block;
    for (mut bits, code) in [(starts, b'n'), (suspects, b'x')] {
        while bits != 0 {
            coded[bits.trailing_zeros() as usize] = code;
            bits &= bits - 1;
        }
    }
    // Eight at a time, with no branch per byte (simdjson's flattening); a write past the
    // marked bytes is overwritten later or left unspecified.
    let mut bits = mask;
    let count = mask.count_ones() as usize;
    let mut j = 0;
    while j < count {
        for o in out.iter_mut().skip(j).take(8) {
            *o = coded[(bits.trailing_zeros() & 63) as usize];
            bits &= bits.wrapping_sub(1);
        }
        j += 8;
    }
}

/// The CSV classes of the bytes of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct CsvMasks {
    /// `"`.
    pub quote: u64,
    /// `,`.
    pub comma: u64,
    /// `\r` and `\n` (either ends a record).
    pub term: u64,
    /// `\n` (counted for line numbers).
    pub lf: u64,
}

impl CsvMasks {
    /// The masks of a block from `eq(c)`, the bits of its bytes equal to `c`.
    #[inline(always)]
    fn from_eq(eq: impl Fn(u8) -> u64) -> Self {
        let lf = eq(b'\n');
        Self {
            quote: eq(b'"'),
            comma: eq(b','),
            term: lf | eq(b'\r'),
            lf,
        }
    }
}

/// The CSV classification byte by byte.
pub(crate) fn classify_csv_portable(block: &[u8; 64]) -> CsvMasks {
    CsvMasks::from_eq(|c| portable_bits(block, |b| b == c))
}

/// The prefix XOR of `x`: bit `i` is the XOR of bits `0..=i` (with quote bits: the bytes from
/// an opening quote up to, not including, its closing quote).
#[inline(always)]
pub(crate) fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// Asks the CPU to bring the cache line holding `bytes[at]` into its caches (an address past
/// the end is harmless: a prefetch never faults).
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache; it reads nothing and never faults, whatever the
    // address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            bytes.as_ptr().wrapping_add(at).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

/// The vector unit found at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Simd {
    /// 64 bytes per instruction, with table lookups and byte compaction (AVX-512 BW, VBMI
    /// and VBMI2, with `popcnt`, `bmi1`, `bmi2` and `lzcnt`).
    Avx512,
    /// 32 bytes per instruction (AVX2, with `popcnt`, `bmi1` and `lzcnt`).
    Avx2,
    /// 16 bytes per instruction (every x86_64 has it).
    Sse2,
}

impl Simd {
    /// The best vector unit of this CPU, if the build target has one we use.
    pub(crate) fn detect() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            let bits = std::arch::is_x86_feature_detected!("popcnt")
                && std::arch::is_x86_feature_detected!("bmi1")
                && std::arch::is_x86_feature_detected!("lzcnt")
                && std::arch::is_x86_feature_detected!("pclmulqdq");
            if bits
                && std::arch::is_x86_feature_detected!("bmi2")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vbmi")
                && std::arch::is_x86_feature_detected!("avx512vbmi2")
            {
                return Some(Simd::Avx512);
            }
            if bits && std::arch::is_x86_feature_detected!("avx2") {
                return Some(Simd::Avx2);
            }
            Some(Simd::Sse2)
        }
        #[cfg(not(target_arch = "x86_64"))]
        None
    }

    /// Every vector unit of this CPU, best first (for the tests that compare them).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            let best = Self::detect().unwrap_or(Simd::Sse2);
            [Simd::Avx512, Simd::Avx2, Simd::Sse2]
                .into_iter()
                .skip_while(|s| *s != best)
                .collect()
        }
        #[cfg(not(target_arch = "x86_64"))]
        Vec::new()
    }

    /// Calls the kernel for this vector unit with `arg`, and the unit's classifier.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(crate) fn dispatch_kernel<A>(self, kernels: Kernels<A>, arg: A) {
        match self {
            // SAFETY: a `Simd::Avx512` is only made by `detect` after `is_x86_feature_detected!`
            // found AVX-512 BW, VBMI and VBMI2 and the bit-manipulation extensions, all that
            // `Kernels::avx512` may enable.
            Simd::Avx512 => unsafe { (kernels.avx512)(Avx512(()), arg) },
            // SAFETY: likewise for AVX2.
            Simd::Avx2 => unsafe { (kernels.avx2)(Avx2(()), arg) },
            Simd::Sse2 => (kernels.sse2)(Sse2(()), arg),
        }
    }

    /// Runs `f` compiled with the bit-manipulation instructions that come with this unit
    /// (`popcnt`, `bmi1`, `lzcnt` with AVX2 and AVX-512), so that `count_ones`,
    /// `trailing_zeros` and `leading_zeros` in code inlined into it are one instruction each.
    #[inline(always)]
    pub(crate) fn with_bit_ops<T>(self, f: impl FnOnce() -> T) -> T {
        #[cfg(target_arch = "x86_64")]
        if matches!(self, Simd::Avx512 | Simd::Avx2) {
            // SAFETY: a `Simd::Avx512` or `Simd::Avx2` is only made by `detect` after
            // `is_x86_feature_detected!` found `popcnt`, `bmi1` and `lzcnt` on this CPU.
            return unsafe { with_popcnt(f) };
        }
        f()
    }

    /// Classifies one block for JSON with this unit.
    #[cfg(test)]
    fn classify(self, block: &[u8; 64]) -> Masks {
        #[cfg(target_arch = "x86_64")]
        match self {
            Simd::Avx512 => Avx512(()).classify(block),
            Simd::Avx2 => Avx2(()).classify(block),
            Simd::Sse2 => Sse2(()).classify(block),
        }
        #[cfg(not(target_arch = "x86_64"))]
        classify_portable(block)
    }

    /// Writes `start + 64 × k + i` for each set bit `i` of the `k`-th of `blocks`, in order, to
    /// the start of `out`, and returns their number. Stops at a block when `out` has fewer than
    /// 64 places past the positions written; what `out` holds past them is unspecified.
    #[inline]
    pub(crate) fn positions(
        self,
        blocks: impl Iterator<Item = u64>,
        start: u32,
        out: &mut [u32],
    ) -> usize {
        #[cfg(target_arch = "x86_64")]
        if self == Simd::Avx512 {
            // SAFETY: a `Simd::Avx512` is only made by `detect` after `is_x86_feature_detected!`
            // found AVX-512 BW and VBMI2 and `popcnt` on this CPU.
            return unsafe { positions_avx512(blocks, start, out) };
        }
        positions_portable(blocks, start, out)
    }

    /// Classifies one block for CSV.
    #[inline]
    pub(crate) fn classify_csv(self, block: &[u8; 64]) -> CsvMasks {
        #[cfg(target_arch = "x86_64")]
        return self.dispatch(
            block,
            classify_csv_avx512,
            classify_csv_avx2,
            classify_csv_sse2,
        );
        #[cfg(not(target_arch = "x86_64"))]
        classify_csv_portable(block)
    }

    /// Calls the classifier for this vector unit.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn dispatch<M>(
        self,
        block: &[u8; 64],
        avx512: unsafe fn(&[u8; 64]) -> M,
        avx2: unsafe fn(&[u8; 64]) -> M,
        sse2: unsafe fn(&[u8; 64]) -> M,
    ) -> M {
        match self {
            // SAFETY: a `Simd::Avx512` is only made by `detect` after `is_x86_feature_detected!`
            // found AVX-512 BW (and VBMI2) on this CPU.
            Simd::Avx512 => unsafe { avx512(block) },
            // SAFETY: a `Simd::Avx2` is only made by `detect` after `is_x86_feature_detected!`
            // found AVX2 on this CPU.
            Simd::Avx2 => unsafe { avx2(block) },
            // SAFETY: SSE2 is part of the x86_64 baseline.
            Simd::Sse2 => unsafe { sse2(block) },
        }
    }
}

/// A JSON block classifier. The vector ones are tokens that prove that the CPU has their unit
/// ([`Simd::dispatch_kernel`] makes them), so that code generic over the classifier compiles to
/// one version per unit, with no choice left per block.
pub(crate) trait JsonBlocks: Copy {
    /// The classes of the bytes of `block`.
    fn classify(self, block: &[u8; 64]) -> Masks;
    /// [`kinds_portable`], with byte compaction where the unit has it.
    #[inline(always)]
    fn kinds(self, block: &[u8; 64], mask: u64, starts: u64, suspects: u64, out: &mut [u8; 64]) {
        kinds_portable(block, mask, starts, suspects, out);
    }
    /// The digits of `block` (its [`Masks::digit`] alone).
    #[inline(always)]
    fn digits(self, block: &[u8; 64]) -> u64 {
        portable_bits(block, |b| b.is_ascii_digit())
    }
    /// The bytes that may follow a backslash in a JSON string: `"\\/bfnrt` (`simple`), and `u`.
    #[inline(always)]
    fn escape_chars(self, block: &[u8; 64]) -> (u64, u64) {
        escape_chars_portable(block)
    }
    /// [`prefix_xor`], with one carry-less multiplication where the unit has it (a shorter
    /// dependency chain: every block waits for it).
    #[inline(always)]
    fn prefix_xor(self, x: u64) -> u64 {
        prefix_xor(x)
    }
    /// Whether stage 1 takes blocks 8 at a time and finds what carries from block to block
    /// outside strings with [`JsonBlocks::group`] (one block at a time otherwise).
    const GROUPS: bool = false;
    /// What carries from block to block outside strings in 8 consecutive blocks, after
    /// `before` ([`group_portable`], on the vector unit where it has 64-bit lanes); returns
    /// what the last block leaves.
    #[inline(always)]
    fn group(self, group: GroupIn<'_>, before: Before, out: &mut GroupOut) -> Before {
        group_portable(group, before, out)
    }
}

/// The token bytes of a block and their classes, for its number suspects.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Numbers {
    /// The bytes of scalar tokens.
    pub tokens: u64,
    /// The first byte of each token.
    pub starts: u64,
    /// The digits, `.`, `-` and `0` among `tokens`.
    pub digit: u64,
    pub dot: u64,
    pub minus: u64,
    pub zero: u64,
}

/// How the digits and `.` of a block continue those of the block before.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Walk {
    /// The digits, shifted up by one byte (the previous block's last in bit 0).
    pub prev_digit: u64,
    /// The `.`, shifted likewise, with the carry of the walk after a `.` from the previous
    /// block in bit 0.
    pub after_dot: u64,
    /// `after_dot + digit`: from each `.`, a carry runs up through the digits after it and
    /// lands on the first byte that is not one.
    pub sum: u64,
    /// The carry out of that sum.
    pub carry: bool,
}

impl Numbers {
    /// The walk of this block after one whose last byte is a token digit (`digit_in`, 0 or 1)
    /// or a token `.` or where the walk after a `.` ran out (`dot_in`).
    #[inline(always)]
    pub(crate) fn walk(&self, (digit_in, dot_in): (u64, u64)) -> Walk {
        let after_dot = (self.dot << 1) | dot_in;
        let (sum, carry) = after_dot.overflowing_add(self.digit);
        Walk {
            prev_digit: (self.digit << 1) | digit_in,
            after_dot,
            sum,
            carry,
        }
    }

    /// The token bytes that are not part of a plain number, when bit 63 of `next_digit` says
    /// whether the byte after the block is a digit (bit `i`, byte `i + 1`), and that of
    /// `unknown` whether that byte is unknown (it counts as a digit in one place and as not one
    /// in the other, whichever makes a suspect).
    #[inline(always)]
    pub(crate) fn verdict(&self, w: &Walk, next_digit: u64, unknown: u64) -> u64 {
        (self.tokens & !(self.digit | self.dot | self.minus))
            | (self.minus & !(self.starts & next_digit))
            | (self.dot & !(w.prev_digit & next_digit))
            // A second `.` where the walk after a `.` lands: two in one token.
            | (w.sum & !self.digit & self.dot)
            // A leading zero before a digit: one after neither a digit nor a `.` (at the
            // token's start, after its `-`, or after a byte that is a suspect already).
            | (self.zero & !(w.prev_digit | w.after_dot) & (next_digit | unknown))
    }
}

/// The masks of the block before a group that its first block's continue, each the whole
/// block's (the digits and `.` of its tokens only, and in bit 63 of `dot` also the carry out of
/// its walk after a `.`, see [`Walk`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Before {
    pub other: u64,
    pub quotes: u64,
    pub underscore: u64,
    pub digit: u64,
    pub dot: u64,
}

/// Stage 1's masks of 8 consecutive whole blocks, one lane per block, for [`JsonBlocks::group`]:
/// the structural characters outside strings with the real quotes (`ops`), the real quotes,
/// and the whole block's `_`, digits, `.`, `-` and `0` (not only its tokens'); `after` is 1
/// when the byte after the last block is a digit.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
pub(crate) struct GroupLanes {
    pub ops: [u64; 8],
    pub quotes: [u64; 8],
    pub underscore: [u64; 8],
    pub digit: [u64; 8],
    pub dot: [u64; 8],
    pub minus: [u64; 8],
    pub zero: [u64; 8],
    pub after: u64,
}

/// The input of [`JsonBlocks::group`]: the blocks' masks and their scalar-token bytes.
pub(crate) type GroupIn<'a> = (&'a GroupLanes, &'a [u64; 8]);

/// What [`JsonBlocks::group`] finds, one lane per block: the structural positions, the token
/// starts, the suspects (numbers and names) and the `"process_name"` candidates among them.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
pub(crate) struct GroupOut {
    pub mask: [u64; 8],
    pub starts: [u64; 8],
    pub suspects: [u64; 8],
    pub names: [u64; 8],
}

/// The first byte of each run of `other` bytes, after a block whose are `before`.
#[inline(always)]
pub(crate) fn run_starts(other: u64, before: u64) -> u64 {
    other & !((other << 1) | (before >> 63))
}

/// The closing quotes of strings that are 12 bytes long with `_` at index 7, as
/// `"process_name"` is, after a block whose quotes and `_` are `before`'s.
#[inline(always)]
pub(crate) fn name_candidates(quotes: u64, underscore: u64, before: &Before) -> u64 {
    quotes
        & ((underscore << 5) | (before.underscore >> (64 - 5)))
        & ((quotes << 13) | (before.quotes >> (64 - 13)))
}

/// [`JsonBlocks::group`] one block after the other.
fn group_portable((l, tokens): GroupIn<'_>, mut before: Before, out: &mut GroupOut) -> Before {
    for (k, &other) in tokens.iter().enumerate() {
        let starts = run_starts(other, before.other);
        let names = name_candidates(l.quotes[k], l.underscore[k], &before);
        let x = Numbers {
            tokens: other,
            starts,
            digit: l.digit[k] & other,
            dot: l.dot[k] & other,
            minus: l.minus[k] & other,
            zero: l.zero[k] & other,
        };
        let w = x.walk((before.digit >> 63, before.dot >> 63));
        // Bit `i`: byte `i + 1` is a digit.
        let next_bit = l.digit.get(k + 1).map_or(l.after, |d| d & 1);
        let next = (l.digit[k] >> 1) | (next_bit << 63);
        let suspects = x.verdict(&w, next, 0) | names;
        out.mask[k] = l.ops[k] | starts | suspects;
        out.starts[k] = starts;
        out.suspects[k] = suspects;
        out.names[k] = names;
        before = Before {
            other,
            quotes: l.quotes[k],
            underscore: l.underscore[k],
            digit: x.digit,
            dot: x.dot | (u64::from(w.carry) << 63),
        };
    }
    before
}

/// [`JsonBlocks::escape_chars`] byte by byte.
fn escape_chars_portable(block: &[u8; 64]) -> (u64, u64) {
    (
        portable_bits(block, is_simple_escape),
        portable_bits(block, |b| b == b'u'),
    )
}

/// Byte by byte.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Portable;

impl JsonBlocks for Portable {
    // Byte by byte, the grouped stage 1 that AVX-512 runs (so that it is tested on every CPU).
    const GROUPS: bool = true;

    #[inline(always)]
    fn classify(self, block: &[u8; 64]) -> Masks {
        classify_portable(block)
    }
}

/// AVX-512 BW, VBMI and VBMI2 (with `popcnt`, `bmi1`, `bmi2`, `lzcnt` and `pclmulqdq`) were
/// detected.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Avx512(());

#[cfg(target_arch = "x86_64")]
impl JsonBlocks for Avx512 {
    #[inline(always)]
    fn classify(self, block: &[u8; 64]) -> Masks {
        // SAFETY: an `Avx512` token is only made after AVX-512 BW and VBMI were detected.
        unsafe { classify_avx512(block) }
    }

    #[inline(always)]
    fn kinds(self, block: &[u8; 64], mask: u64, starts: u64, suspects: u64, out: &mut [u8; 64]) {
        // SAFETY: an `Avx512` token is only made after AVX-512 BW and VBMI2 were detected.
        unsafe { kinds_avx512(block, mask, starts, suspects, out) }
    }

    #[inline(always)]
    fn prefix_xor(self, x: u64) -> u64 {
        // SAFETY: an `Avx512` token is only made after PCLMULQDQ was detected.
        unsafe { prefix_xor_clmul(x) }
    }

    #[inline(always)]
    fn escape_chars(self, block: &[u8; 64]) -> (u64, u64) {
        // SAFETY: an `Avx512` token is only made after AVX-512 BW and VBMI were detected.
        unsafe { escape_chars_avx512(block) }
    }

    #[inline(always)]
    fn digits(self, block: &[u8; 64]) -> u64 {
        // SAFETY: an `Avx512` token is only made after AVX-512 BW was detected.
        unsafe { digits_avx512(block) }
    }

    const GROUPS: bool = true;

    #[inline(always)]
    fn group(self, group: GroupIn<'_>, before: Before, out: &mut GroupOut) -> Before {
        // SAFETY: an `Avx512` token is only made after AVX-512 BW (so F) was detected.
        unsafe { group_avx512(group, before, out) }
    }
}

/// AVX2 (with `popcnt`, `bmi1`, `lzcnt` and `pclmulqdq`) was detected.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Avx2(());

#[cfg(target_arch = "x86_64")]
impl JsonBlocks for Avx2 {
    #[inline(always)]
    fn classify(self, block: &[u8; 64]) -> Masks {
        // SAFETY: an `Avx2` token is only made after AVX2 was detected.
        unsafe { classify_avx2(block) }
    }

    #[inline(always)]
    fn prefix_xor(self, x: u64) -> u64 {
        // SAFETY: an `Avx2` token is only made after PCLMULQDQ was detected.
        unsafe { prefix_xor_clmul(x) }
    }

    #[inline(always)]
    fn digits(self, block: &[u8; 64]) -> u64 {
        // SAFETY: an `Avx2` token is only made after AVX2 was detected.
        unsafe { digits_avx2_block(block) }
    }
}

/// SSE2, which every x86_64 CPU has.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sse2(());

#[cfg(target_arch = "x86_64")]
impl JsonBlocks for Sse2 {
    #[inline(always)]
    fn classify(self, block: &[u8; 64]) -> Masks {
        // SAFETY: SSE2 is part of the x86_64 baseline.
        unsafe { classify_sse2(block) }
    }

    #[inline(always)]
    fn digits(self, block: &[u8; 64]) -> u64 {
        // SAFETY: SSE2 is part of the x86_64 baseline.
        unsafe { digits_sse2_block(block) }
    }
}

/// One function compiled for each vector unit, called with the unit's classifier: each is a
/// `#[target_feature]` function around the same `#[inline(always)]` code generic over
/// [`JsonBlocks`], so that the classification inlined into it uses the unit's instructions and
/// the bit-manipulation extensions that come with it. [`Simd::dispatch_kernel`] calls the one
/// for the unit found.
#[cfg(target_arch = "x86_64")]
pub(crate) struct Kernels<A> {
    /// May enable `avx512bw,avx512vbmi,avx512vbmi2,popcnt,bmi1,bmi2,lzcnt,pclmulqdq`, no more.
    pub avx512: unsafe fn(Avx512, A),
    /// May enable `avx2,popcnt,bmi1,lzcnt,pclmulqdq`, no more.
    pub avx2: unsafe fn(Avx2, A),
    /// Enables nothing.
    pub sse2: fn(Sse2, A),
}

/// Calls `f`, inlined here and compiled with `popcnt`, `bmi1` and `lzcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt,bmi1,lzcnt")]
#[inline]
fn with_popcnt<T>(f: impl FnOnce() -> T) -> T {
    f()
}

/// [`prefix_xor`] as the carry-less product of `x` and all ones (simdjson's way).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq")]
#[inline]
fn prefix_xor_clmul(x: u64) -> u64 {
    let product = _mm_clmulepi64_si128(_mm_cvtsi64_si128(x as i64), _mm_set1_epi8(-1), 0);
    _mm_cvtsi128_si64(product) as u64
}

/// The two 32-byte halves of a block.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn load_avx2(block: &[u8; 64]) -> (__m256i, __m256i) {
    // SAFETY: `block` holds 64 readable bytes; the loads are unaligned loads of bytes 0..32 and
    // 32..64.
    unsafe {
        (
            _mm256_loadu_si256(block.as_ptr().cast::<__m256i>()),
            _mm256_loadu_si256(block.as_ptr().add(32).cast::<__m256i>()),
        )
    }
}

/// The top bits of the bytes of both halves.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn bits_avx2(a: __m256i, b: __m256i) -> u64 {
    u64::from(_mm256_movemask_epi8(a) as u32) | (u64::from(_mm256_movemask_epi8(b) as u32) << 32)
}

/// The bytes equal to `c`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn eq_avx2(a: __m256i, b: __m256i, c: u8) -> u64 {
    let c = _mm256_set1_epi8(c as i8);
    bits_avx2(_mm256_cmpeq_epi8(a, c), _mm256_cmpeq_epi8(b, c))
}

/// The four 16-byte quarters of a block.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn load_sse2(block: &[u8; 64]) -> [__m128i; 4] {
    // SAFETY: `block` holds 64 readable bytes; each load reads 16 of them, unaligned.
    unsafe {
        let p = block.as_ptr().cast::<__m128i>();
        [
            _mm_loadu_si128(p),
            _mm_loadu_si128(p.add(1)),
            _mm_loadu_si128(p.add(2)),
            _mm_loadu_si128(p.add(3)),
        ]
    }
}

/// The top bits of the bytes of the quarters.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn bits_sse2(m: [__m128i; 4]) -> u64 {
    m.iter()
        .enumerate()
        .map(|(i, &x)| u64::from(_mm_movemask_epi8(x) as u16) << (16 * i))
        .fold(0, |acc, x| acc | x)
}

/// The bytes equal to `c`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn eq_sse2(v: [__m128i; 4], c: u8) -> u64 {
    let c = _mm_set1_epi8(c as i8);
    bits_sse2(v.map(|x| _mm_cmpeq_epi8(x, c)))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
// Inlined into the stage-1 kernel, it compiled to byte-by-byte vector inserts, and the scan ran
// at half the speed (measured: 1.6 against 0.8 s per GB).
#[inline(never)]
fn classify_avx2(block: &[u8; 64]) -> Masks {
    let (a, b) = load_avx2(block);
    let eq = |c| eq_avx2(a, b, c);
    let curly = _mm256_set1_epi8(0x20);
    let (ca, cb) = (_mm256_or_si256(a, curly), _mm256_or_si256(b, curly));
    let hi = bits_avx2(a, b);
    // Only `[` and `{` give `{` when ORed with 0x20, only `]` and `}` give `}`.
    let op = eq(b':') | eq(b',') | eq_avx2(ca, cb, b'{') | eq_avx2(ca, cb, b'}');
    let quote = eq(b'"');
    Masks {
        quote,
        backslash: eq(b'\\'),
        op,
        delim: eq(b' ') | eq(b'\n') | eq(b'\r') | eq(b'\t') | quote | op,
        // Signed compare: bytes >= 0x80 are negative and come out too; `hi` removes them.
        ctrl: bits_avx2(_mm256_cmpgt_epi8(curly, a), _mm256_cmpgt_epi8(curly, b)) & !hi,
        hi,
        digit: bits_avx2(digits_avx2(a), digits_avx2(b)),
        zero: eq(b'0'),
        minus: eq(b'-'),
        dot: eq(b'.'),
        underscore: eq(b'_'),
    }
}

/// All ones in the bytes that are ASCII digits (signed compares: bytes >= 0x80 are negative).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn digits_avx2(x: __m256i) -> __m256i {
    _mm256_and_si256(
        _mm256_cmpgt_epi8(x, _mm256_set1_epi8(b'0' as i8 - 1)),
        _mm256_cmpgt_epi8(_mm256_set1_epi8(b'9' as i8 + 1), x),
    )
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn classify_sse2(block: &[u8; 64]) -> Masks {
    let v = load_sse2(block);
    let eq = |c| eq_sse2(v, c);
    let curly = _mm_set1_epi8(0x20);
    let cv = v.map(|x| _mm_or_si128(x, curly));
    let hi = bits_sse2(v);
    let op = eq(b':') | eq(b',') | eq_sse2(cv, b'{') | eq_sse2(cv, b'}');
    let quote = eq(b'"');
    Masks {
        quote,
        backslash: eq(b'\\'),
        op,
        delim: eq(b' ') | eq(b'\n') | eq(b'\r') | eq(b'\t') | quote | op,
        ctrl: bits_sse2(v.map(|x| _mm_cmpgt_epi8(curly, x))) & !hi,
        hi,
        digit: digits_sse2(v),
        zero: eq(b'0'),
        minus: eq(b'-'),
        dot: eq(b'.'),
        underscore: eq(b'_'),
    }
}

/// The ASCII digits of the quarters: the bytes that are at most 9 after subtracting `0`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn digits_sse2(v: [__m128i; 4]) -> u64 {
    let (zero, nine) = (_mm_set1_epi8(b'0' as i8), _mm_set1_epi8(9));
    bits_sse2(v.map(|x| {
        let d = _mm_sub_epi8(x, zero);
        _mm_cmpeq_epi8(_mm_min_epu8(d, nine), d)
    }))
}

/// [`JsonBlocks::digits`] with SSE2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn digits_sse2_block(block: &[u8; 64]) -> u64 {
    digits_sse2(load_sse2(block))
}

/// [`JsonBlocks::digits`] with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn digits_avx2_block(block: &[u8; 64]) -> u64 {
    let (a, b) = load_avx2(block);
    bits_avx2(digits_avx2(a), digits_avx2(b))
}

/// [`JsonBlocks::digits`] with one subtraction and one compare.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
#[inline]
fn digits_avx512(block: &[u8; 64]) -> u64 {
    let shifted = _mm512_sub_epi8(load_avx512(block), _mm512_set1_epi8(b'0' as i8));
    _mm512_cmplt_epu8_mask(shifted, _mm512_set1_epi8(10))
}

/// [`group_portable`] with the 8 blocks as the 64-bit lanes of a register: the bits carried
/// from a block to the next by a lane shift, the carries of the walks after a `.` as one
/// addition across the lanes (each lane's carry out computed with and without a carry in).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn group_avx512((l, tokens): GroupIn<'_>, before: Before, out: &mut GroupOut) -> Before {
    // SAFETY: each array holds 64 readable bytes; the loads are unaligned.
    let load = |a: &[u64; 8]| unsafe { _mm512_loadu_si512(a.as_ptr().cast()) };
    let (and, or, andnot) = (_mm512_and_si512, _mm512_or_si512, _mm512_andnot_si512);
    let other = load(tokens);
    let (quotes, underscore, digits) = (load(&l.quotes), load(&l.underscore), load(&l.digit));
    // Bit `i` of lane `k`: byte `i + 1` of block `k` is a digit (lane `k + 1`'s first byte,
    // then the byte after the group, shifted into bit 63).
    let following = _mm512_alignr_epi64::<1>(_mm512_set1_epi64(l.after as i64), digits);
    let next = _mm512_or_si512(
        _mm512_srli_epi64::<1>(digits),
        _mm512_slli_epi64::<63>(following),
    );
    let digit = and(digits, other);
    let dot = and(load(&l.dot), other);
    let minus = and(load(&l.minus), other);
    let zero = and(load(&l.zero), other);
    // Lane `k` of `alignr(v, w, 7)` is lane `k - 1` of `v`, lane 0 is lane 7 of `w`: each
    // lane's previous block's mask.
    let prev = |v, first: u64| _mm512_alignr_epi64::<7>(v, _mm512_set1_epi64(first as i64));
    let starts = andnot(
        or(
            _mm512_slli_epi64::<1>(other),
            _mm512_srli_epi64::<63>(prev(other, before.other)),
        ),
        other,
    );
    let names = and(
        and(
            quotes,
            or(
                _mm512_slli_epi64::<5>(underscore),
                _mm512_srli_epi64::<59>(prev(underscore, before.underscore)),
            ),
        ),
        or(
            _mm512_slli_epi64::<13>(quotes),
            _mm512_srli_epi64::<51>(prev(quotes, before.quotes)),
        ),
    );
    let prev_digit = or(
        _mm512_slli_epi64::<1>(digit),
        _mm512_srli_epi64::<63>(prev(digit, before.digit)),
    );
    let dot_up = or(
        _mm512_slli_epi64::<1>(dot),
        _mm512_srli_epi64::<63>(prev(dot, 0)),
    );
    let dot_up1 = or(dot_up, _mm512_set1_epi64(1));
    let (sum0, sum1) = (
        _mm512_add_epi64(dot_up, digit),
        _mm512_add_epi64(dot_up1, digit),
    );
    // Each lane's carry out without a carry in (`g`) and with one (`g | p`): their sum with
    // the carry into lane 0 carries from lane to lane as the walks do; bit `k` of `carries` is
    // the carry into lane `k` (bit 8, out of lane 7).
    let g = u32::from(_mm512_cmplt_epu64_mask(sum0, dot_up));
    let gp = u32::from(_mm512_cmplt_epu64_mask(sum1, dot_up1));
    let carries = g ^ gp ^ (g + gp + (before.dot >> 63) as u32);
    let carry_in = carries as u8;
    let after_dot = _mm512_mask_blend_epi64(carry_in, dot_up, dot_up1);
    let sum = _mm512_mask_blend_epi64(carry_in, sum0, sum1);
    let numbers = or(
        or(
            andnot(or(or(digit, dot), minus), other),
            andnot(and(starts, next), minus),
        ),
        or(
            or(
                andnot(and(prev_digit, next), dot),
                and(andnot(digit, sum), dot),
            ),
            and(andnot(or(prev_digit, after_dot), zero), next),
        ),
    );
    let suspects = or(numbers, names);
    let mask = or(or(load(&l.ops), starts), suspects);
    let store = |a: &mut [u64; 8], v| {
        // SAFETY: each array holds 64 writable bytes; the stores are unaligned.
        unsafe { _mm512_storeu_si512(a.as_mut_ptr().cast(), v) }
    };
    store(&mut out.mask, mask);
    store(&mut out.starts, starts);
    store(&mut out.suspects, suspects);
    store(&mut out.names, names);
    let carry = u64::from((carries >> 8) & 1);
    Before {
        other: tokens[7],
        quotes: l.quotes[7],
        underscore: l.underscore[7],
        digit: l.digit[7] & tokens[7],
        dot: (l.dot[7] & tokens[7]) | (carry << 63),
    }
}

/// A block in one register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
#[inline]
fn load_avx512(block: &[u8; 64]) -> __m512i {
    // SAFETY: `block` holds 64 readable bytes; the load is unaligned.
    unsafe { _mm512_loadu_si512(block.as_ptr().cast::<__m512i>()) }
}

/// The bytes equal to `c`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
#[inline]
fn eq_avx512(v: __m512i, c: u8) -> u64 {
    _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(c as i8))
}

/// The class bits of the ASCII bytes, for [`classify_avx512`]'s table lookup.
const CLASS_QUOTE: u8 = 1;
const CLASS_BACKSLASH: u8 = 2;
const CLASS_OP: u8 = 4;
const CLASS_DELIM: u8 = 8;
const CLASS_DIGIT: u8 = 16;
const CLASS_MINUS: u8 = 32;
const CLASS_DOT: u8 = 64;
const CLASS_UNDERSCORE: u8 = 128;

/// `class` when `on`, else 0.
const fn bit(on: bool, class: u8) -> u8 {
    if on { class } else { 0 }
}

/// The class bits of each ASCII byte.
static ASCII_CLASSES: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = bit(c == b'"', CLASS_QUOTE)
            | bit(c == b'\\', CLASS_BACKSLASH)
            | bit(is_op(c), CLASS_OP)
            | bit(is_delim(c), CLASS_DELIM)
            | bit(c.is_ascii_digit(), CLASS_DIGIT)
            | bit(c == b'-', CLASS_MINUS)
            | bit(c == b'.', CLASS_DOT)
            | bit(c == b'_', CLASS_UNDERSCORE);
        b += 1;
    }
    t
};

/// `table[b]` for each byte `b` of `v`, 0 for the bytes 0x80 and above.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw,avx512vbmi")]
#[inline]
fn lookup_avx512(v: __m512i, table: &[u8; 128]) -> __m512i {
    // SAFETY: `table` holds 128 readable bytes; the loads read 0..64 and 64..128.
    let (low, high) = unsafe {
        let p = table.as_ptr();
        (
            _mm512_loadu_si512(p.cast::<__m512i>()),
            _mm512_loadu_si512(p.add(64).cast::<__m512i>()),
        )
    };
    _mm512_maskz_permutex2var_epi8(!_mm512_movepi8_mask(v), low, v, high)
}

/// One table lookup gives every byte's class bits (bytes 0x80 and above get none), then one
/// test per class.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw,avx512vbmi")]
#[inline]
fn classify_avx512(block: &[u8; 64]) -> Masks {
    let v = load_avx512(block);
    let hi = _mm512_movepi8_mask(v);
    let classes = lookup_avx512(v, &ASCII_CLASSES);
    let class = |bit: u8| _mm512_test_epi8_mask(classes, _mm512_set1_epi8(bit as i8));
    Masks {
        quote: class(CLASS_QUOTE),
        backslash: class(CLASS_BACKSLASH),
        op: class(CLASS_OP),
        delim: class(CLASS_DELIM),
        ctrl: _mm512_cmplt_epu8_mask(v, _mm512_set1_epi8(0x20)),
        hi,
        digit: class(CLASS_DIGIT),
        zero: eq_avx512(v, b'0'),
        minus: class(CLASS_MINUS),
        dot: class(CLASS_DOT),
        underscore: class(CLASS_UNDERSCORE),
    }
}

/// The escape class bits of each ASCII byte: 1 for `"\\/bfnrt`, 2 for `u`.
static ASCII_ESCAPES: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = if is_simple_escape(c) {
            1
        } else if c == b'u' {
            2
        } else {
            0
        };
        b += 1;
    }
    t
};

/// [`JsonBlocks::escape_chars`] with one table lookup.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw,avx512vbmi")]
#[inline]
fn escape_chars_avx512(block: &[u8; 64]) -> (u64, u64) {
    let classes = lookup_avx512(load_avx512(block), &ASCII_ESCAPES);
    (
        _mm512_test_epi8_mask(classes, _mm512_set1_epi8(1)),
        _mm512_test_epi8_mask(classes, _mm512_set1_epi8(2)),
    )
}

/// [`kinds_portable`] with one compaction instruction.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw,avx512vbmi2")]
#[inline]
fn kinds_avx512(block: &[u8; 64], mask: u64, starts: u64, suspects: u64, out: &mut [u8; 64]) {
    let v = load_avx512(block);
    let v = _mm512_mask_blend_epi8(starts, v, _mm512_set1_epi8(b'n' as i8));
    let v = _mm512_mask_blend_epi8(suspects, v, _mm512_set1_epi8(b'x' as i8));
    // SAFETY: `out` holds 64 writable bytes; the store is unaligned.
    unsafe {
        _mm512_storeu_si512(
            out.as_mut_ptr().cast::<__m512i>(),
            _mm512_maskz_compress_epi8(mask, v),
        );
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn classify_csv_avx2(block: &[u8; 64]) -> CsvMasks {
    let (a, b) = load_avx2(block);
    CsvMasks::from_eq(|c| eq_avx2(a, b, c))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
fn classify_csv_avx512(block: &[u8; 64]) -> CsvMasks {
    let v = load_avx512(block);
    CsvMasks::from_eq(|c| eq_avx512(v, c))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn classify_csv_sse2(block: &[u8; 64]) -> CsvMasks {
    let v = load_sse2(block);
    CsvMasks::from_eq(|c| eq_sse2(v, c))
}

/// [`Simd::positions`] a bit at a time: sixteen writes per block whatever its count (most
/// blocks have fewer set bits), so that the loop has no branch to mispredict.
#[inline(always)]
pub(crate) fn positions_portable(
    blocks: impl Iterator<Item = u64>,
    start: u32,
    out: &mut [u32],
) -> usize {
    let (mut n, mut at) = (0, start);
    for bits in blocks {
        let Some(out) = out.get_mut(n..n + 64) else {
            break;
        };
        let count = bits.count_ones() as usize;
        let mut rest = bits;
        for slot in out.iter_mut().take(count.max(16)) {
            *slot = at + rest.trailing_zeros();
            rest &= rest.wrapping_sub(1);
        }
        n += count;
        at += 64;
    }
    n
}

/// Bytes 0 to 63, in order.
#[cfg(target_arch = "x86_64")]
const BYTE_INDICES: [u8; 64] = {
    let mut indices = [0; 64];
    let mut i = 0;
    while i < 64 {
        indices[i] = i as u8;
        i += 1;
    }
    indices
};

/// [`Simd::positions`] with one compaction of the bit indices per block, widened sixteen at a
/// time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw,avx512vbmi2,popcnt")]
fn positions_avx512(blocks: impl Iterator<Item = u64>, start: u32, out: &mut [u32]) -> usize {
    let indices = load_avx512(&BYTE_INDICES);
    let (mut n, mut at) = (0, start);
    for bits in blocks {
        let Some(out) = out.get_mut(n..n + 64) else {
            break;
        };
        let packed = _mm512_maskz_compress_epi8(bits, indices);
        let base = _mm512_set1_epi32(at as i32);
        let count = bits.count_ones() as usize;
        let first = _mm512_add_epi32(base, _mm512_cvtepu8_epi32(_mm512_castsi512_si128(packed)));
        // SAFETY: `out` holds 64 writable `u32`s, sixteen are written; the store is unaligned.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast::<__m512i>(), first) };
        if count > 16 {
            let mut bytes = [0u8; 64];
            // SAFETY: `bytes` holds 64 writable bytes; the store is unaligned.
            unsafe { _mm512_storeu_si512(bytes.as_mut_ptr().cast::<__m512i>(), packed) };
            let lanes = out.chunks_exact_mut(16).zip(bytes.chunks_exact(16));
            for (slots, indices) in lanes.take(count.div_ceil(16)).skip(1) {
                // SAFETY: `indices` holds 16 readable bytes, `slots` 16 writable `u32`s; the
                // load and the store are unaligned.
                unsafe {
                    let wide = _mm512_cvtepu8_epi32(_mm_loadu_si128(indices.as_ptr().cast()));
                    _mm512_storeu_si512(
                        slots.as_mut_ptr().cast::<__m512i>(),
                        _mm512_add_epi32(base, wide),
                    );
                }
            }
        }
        n += count;
        at += 64;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value, in each position of a block.
    fn blocks() -> impl Iterator<Item = [u8; 64]> {
        (0..256).step_by(64).map(|start| {
            let mut block = [0u8; 64];
            for (i, b) in block.iter_mut().enumerate() {
                *b = (start + i) as u8;
            }
            block
        })
    }

    #[test]
    fn vector_and_portable_classification_agree() {
        for block in blocks() {
            #[cfg(target_arch = "x86_64")]
            if Simd::detect() == Some(Simd::Avx512) {
                assert_eq!(
                    Avx512(()).escape_chars(&block),
                    escape_chars_portable(&block)
                );
            }
            assert_eq!(Portable.escape_chars(&block), escape_chars_portable(&block));
            let digits = classify_portable(&block).digit;
            assert_eq!(Portable.digits(&block), digits);
            #[cfg(target_arch = "x86_64")]
            {
                assert_eq!(Sse2(()).digits(&block), digits);
                if Simd::available().contains(&Simd::Avx2) {
                    assert_eq!(Avx2(()).digits(&block), digits);
                }
                if Simd::detect() == Some(Simd::Avx512) {
                    assert_eq!(Avx512(()).digits(&block), digits);
                }
            }
        }
        for unit in Simd::available() {
            for block in blocks() {
                assert_eq!(unit.classify(&block), classify_portable(&block), "{unit:?}");
                assert_eq!(
                    unit.classify_csv(&block),
                    classify_csv_portable(&block),
                    "{unit:?}"
                );
            }
        }
    }

    /// The compacted bytes of a block, by the simplest loop.
    fn kinds_by_hand(block: &[u8; 64], mask: u64, starts: u64, suspects: u64) -> Vec<u8> {
        (0..64)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| match (suspects >> i & 1, starts >> i & 1) {
                (1, _) => b'x',
                (_, 1) => b'n',
                _ => block[i],
            })
            .collect()
    }

    /// A xorshift generator from `seed`.
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    #[test]
    fn compaction_keeps_the_marked_bytes_in_order() {
        let mut random = xorshift(0x9E37_79B9_7F4A_7C15);
        for block in blocks() {
            for _ in 0..200 {
                let mask = random() & random();
                let (starts, suspects) = (mask & random(), mask & random() & random());
                let want = kinds_by_hand(&block, mask, starts, suspects);
                let mut out = [0u8; 64];
                kinds_portable(&block, mask, starts, suspects, &mut out);
                assert_eq!(out[..want.len()], want[..]);
                #[cfg(target_arch = "x86_64")]
                if Simd::detect() == Some(Simd::Avx512) {
                    let mut out = [0u8; 64];
                    Avx512(()).kinds(&block, mask, starts, suspects, &mut out);
                    assert_eq!(out[..want.len()], want[..]);
                }
            }
            let mut out = [0u8; 64];
            kinds_portable(&block, u64::MAX, 0, 0, &mut out);
            assert_eq!(out, block);
        }
    }

    /// Groups of 8 blocks on the vector unit come out as one block after the other: random
    /// masks, with runs of digits and `.` across lanes (the walks' carries from lane to lane).
    #[test]
    fn groups_on_the_vector_unit_agree_with_one_block_at_a_time() {
        #[cfg(target_arch = "x86_64")]
        if Simd::detect() == Some(Simd::Avx512) {
            let mut random = xorshift(0x2545_F491_4F6C_DD1D);
            let mut mask = |r: u64| match r % 6 {
                0 => 0,
                1 => u64::MAX,
                2 => random() & random(),
                3 => random() | random(),
                4 => u64::MAX << (random() % 64),
                _ => random(),
            };
            for _ in 0..200_000 {
                let mut lanes = GroupLanes::default();
                let mut tokens = [0; 8];
                for (k, token) in tokens.iter_mut().enumerate() {
                    *token = mask(k as u64 + 1);
                    lanes.ops[k] = mask(2);
                    lanes.quotes[k] = mask(2) & !*token;
                    lanes.underscore[k] = mask(3);
                    lanes.digit[k] = mask(k as u64 * 7 + 1);
                    lanes.dot[k] = mask(k as u64 * 3) & !lanes.digit[k];
                    lanes.minus[k] = mask(2) & !(lanes.digit[k] | lanes.dot[k]);
                    lanes.zero[k] = lanes.digit[k] & mask(3);
                }
                lanes.after = mask(5) & 1;
                let before = Before {
                    other: mask(5),
                    quotes: mask(2),
                    underscore: mask(3),
                    digit: mask(1),
                    dot: mask(4),
                };
                let (mut want, mut got) = (GroupOut::default(), GroupOut::default());
                let want_after = group_portable((&lanes, &tokens), before, &mut want);
                let got_after = Avx512(()).group((&lanes, &tokens), before, &mut got);
                assert_eq!(
                    format!("{got:?} {got_after:?}"),
                    format!("{want:?} {want_after:?}")
                );
            }
        }
    }

    /// Every unit writes the positions of the set bits a loop over them gives.
    #[test]
    fn positions_are_the_set_bits_in_order() {
        let mut random = xorshift(0x2545_f491_4f6c_dd1d);
        let blocks: Vec<u64> = (0..400)
            .map(|i| match i % 5 {
                0 => 0,
                1 => u64::MAX,
                2 => random() & random() & random(),
                _ => random(),
            })
            .collect();
        let want: Vec<u32> = blocks
            .iter()
            .enumerate()
            .flat_map(|(k, &bits)| {
                (0..64)
                    .filter(move |i| bits >> i & 1 == 1)
                    .map(move |i| 7 + 64 * k as u32 + i)
            })
            .collect();
        let mut units: Vec<Option<Simd>> = Simd::available().into_iter().map(Some).collect();
        units.push(None);
        for unit in units {
            let mut out = vec![0; blocks.len() * 64 + 64];
            let n = match unit {
                Some(simd) => simd.positions(blocks.iter().copied(), 7, &mut out),
                None => positions_portable(blocks.iter().copied(), 7, &mut out),
            };
            assert_eq!(out[..n], want[..], "{unit:?}");
            // Without room for the last block, it stops before it.
            let before_last = want.len() - blocks[blocks.len() - 1].count_ones() as usize;
            let mut short = vec![0; before_last + 63];
            let n = match unit {
                Some(simd) => simd.positions(blocks.iter().copied(), 7, &mut short),
                None => positions_portable(blocks.iter().copied(), 7, &mut short),
            };
            assert_eq!(short[..n], want[..before_last], "{unit:?}");
        }
    }
}
