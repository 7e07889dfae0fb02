//! The classification of 64-byte blocks into bitmasks (bit `i` is byte `i` of the block) for
//! the two streaming scanners: JSON ([`crate::trace_scan`]) and CSV ([`crate::csv_rows`]). Each
//! has a portable byte-by-byte version and a vector version (AVX2, else SSE2) with `std::arch`,
//! chosen at run time. This is the only module of the workspace that allows `unsafe`: unaligned
//! vector loads from a `&[u8; 64]` and calls of `#[target_feature]` functions after the feature
//! was detected. Each `unsafe` block states why it is sound.
#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m128i, __m256i, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
    _mm_or_si128, _mm_set1_epi8, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8, _mm256_loadu_si256,
    _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8,
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
    /// Space, `\n`, `\r`, `\t`.
    pub ws: u64,
    /// Below 0x20.
    pub ctrl: u64,
    /// 0x80 and above.
    pub hi: u64,
}

/// The bits of the bytes of `block` for which `class` holds.
fn portable_bits(block: &[u8; 64], class: impl Fn(u8) -> bool) -> u64 {
    block
        .iter()
        .enumerate()
        .filter(|(_, b)| class(**b))
        .fold(0, |m, (i, _)| m | (1 << i))
}

/// The JSON classification byte by byte (the fallback when there is no vector unit).
pub(crate) fn classify_portable(block: &[u8; 64]) -> Masks {
    Masks {
        quote: portable_bits(block, |b| b == b'"'),
        backslash: portable_bits(block, |b| b == b'\\'),
        op: portable_bits(block, |b| {
            matches!(b, b'{' | b'}' | b'[' | b']' | b',' | b':')
        }),
        ws: portable_bits(block, |b| matches!(b, b' ' | b'\n' | b'\r' | b'\t')),
        ctrl: portable_bits(block, |b| b < 0x20),
        hi: portable_bits(block, |b| b >= 0x80),
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
}

/// The CSV classification byte by byte.
pub(crate) fn classify_csv_portable(block: &[u8; 64]) -> CsvMasks {
    CsvMasks {
        quote: portable_bits(block, |b| b == b'"'),
        comma: portable_bits(block, |b| b == b','),
        term: portable_bits(block, |b| matches!(b, b'\r' | b'\n')),
    }
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

/// The vector unit found at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Simd {
    /// 32 bytes per instruction.
    Avx2,
    /// 16 bytes per instruction (every x86_64 has it).
    Sse2,
}

impl Simd {
    /// The best vector unit of this CPU, if the build target has one we use.
    pub(crate) fn detect() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                return Some(Simd::Avx2);
            }
            Some(Simd::Sse2)
        }
        #[cfg(not(target_arch = "x86_64"))]
        None
    }

    /// Classifies one block for JSON.
    #[inline]
    pub(crate) fn classify(self, block: &[u8; 64]) -> Masks {
        #[cfg(target_arch = "x86_64")]
        return self.dispatch(block, classify_avx2, classify_sse2);
        #[cfg(not(target_arch = "x86_64"))]
        classify_portable(block)
    }

    /// Classifies one block for CSV.
    #[inline]
    pub(crate) fn classify_csv(self, block: &[u8; 64]) -> CsvMasks {
        #[cfg(target_arch = "x86_64")]
        return self.dispatch(block, classify_csv_avx2, classify_csv_sse2);
        #[cfg(not(target_arch = "x86_64"))]
        classify_csv_portable(block)
    }

    /// Calls the classifier for this vector unit.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn dispatch<M>(
        self,
        block: &[u8; 64],
        avx2: unsafe fn(&[u8; 64]) -> M,
        sse2: unsafe fn(&[u8; 64]) -> M,
    ) -> M {
        match self {
            // SAFETY: a `Simd::Avx2` is only made by `detect` after `is_x86_feature_detected!`
            // found AVX2 on this CPU.
            Simd::Avx2 => unsafe { avx2(block) },
            // SAFETY: SSE2 is part of the x86_64 baseline.
            Simd::Sse2 => unsafe { sse2(block) },
        }
    }
}

/// The two 32-byte halves of a block.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
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
fn bits_avx2(a: __m256i, b: __m256i) -> u64 {
    u64::from(_mm256_movemask_epi8(a) as u32) | (u64::from(_mm256_movemask_epi8(b) as u32) << 32)
}

/// The bytes equal to `c`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
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
fn classify_avx2(block: &[u8; 64]) -> Masks {
    let (a, b) = load_avx2(block);
    let eq = |c| eq_avx2(a, b, c);
    let curly = _mm256_set1_epi8(0x20);
    let (ca, cb) = (_mm256_or_si256(a, curly), _mm256_or_si256(b, curly));
    let hi = bits_avx2(a, b);
    Masks {
        quote: eq(b'"'),
        backslash: eq(b'\\'),
        // Only `[` and `{` give `{` when ORed with 0x20, only `]` and `}` give `}`.
        op: eq(b':') | eq(b',') | eq_avx2(ca, cb, b'{') | eq_avx2(ca, cb, b'}'),
        ws: eq(b' ') | eq(b'\n') | eq(b'\r') | eq(b'\t'),
        // Signed compare: bytes >= 0x80 are negative and come out too; `hi` removes them.
        ctrl: bits_avx2(_mm256_cmpgt_epi8(curly, a), _mm256_cmpgt_epi8(curly, b)) & !hi,
        hi,
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn classify_sse2(block: &[u8; 64]) -> Masks {
    let v = load_sse2(block);
    let eq = |c| eq_sse2(v, c);
    let curly = _mm_set1_epi8(0x20);
    let cv = v.map(|x| _mm_or_si128(x, curly));
    let hi = bits_sse2(v);
    Masks {
        quote: eq(b'"'),
        backslash: eq(b'\\'),
        op: eq(b':') | eq(b',') | eq_sse2(cv, b'{') | eq_sse2(cv, b'}'),
        ws: eq(b' ') | eq(b'\n') | eq(b'\r') | eq(b'\t'),
        ctrl: bits_sse2(v.map(|x| _mm_cmpgt_epi8(curly, x))) & !hi,
        hi,
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn classify_csv_avx2(block: &[u8; 64]) -> CsvMasks {
    let (a, b) = load_avx2(block);
    let eq = |c| eq_avx2(a, b, c);
    CsvMasks {
        quote: eq(b'"'),
        comma: eq(b','),
        term: eq(b'\n') | eq(b'\r'),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn classify_csv_sse2(block: &[u8; 64]) -> CsvMasks {
    let v = load_sse2(block);
    let eq = |c| eq_sse2(v, c);
    CsvMasks {
        quote: eq(b'"'),
        comma: eq(b','),
        term: eq(b'\n') | eq(b'\r'),
    }
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
        let Some(simd) = Simd::detect() else {
            return;
        };
        for unit in [simd, Simd::Sse2] {
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
}
