//! The SIMD classification of 64-byte blocks (AVX2, else SSE2) with `std::arch`, chosen at run
//! time. This is the only module of the workspace that allows `unsafe`: unaligned vector loads
//! from a `&[u8; 64]` and calls of `#[target_feature]` functions after the feature was detected.
//! Each `unsafe` block states why it is sound.
#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m128i, __m256i, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
    _mm_or_si128, _mm_set1_epi8, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8, _mm256_loadu_si256,
    _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8,
};

use super::blocks::Masks;

/// The vector unit found at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Simd {
    /// 32 bytes per instruction.
    Avx2,
    /// 16 bytes per instruction (every x86_64 has it).
    Sse2,
}

impl Simd {
    /// The best vector unit of this CPU, if the build target has one we use.
    pub(super) fn detect() -> Option<Self> {
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

    /// Classifies one block.
    #[inline]
    pub(super) fn classify(self, block: &[u8; 64]) -> Masks {
        #[cfg(target_arch = "x86_64")]
        match self {
            // SAFETY: a `Simd::Avx2` is only made by `detect` after `is_x86_feature_detected!`
            // found AVX2 on this CPU.
            Simd::Avx2 => unsafe { classify_avx2(block) },
            // SAFETY: SSE2 is part of the x86_64 baseline.
            Simd::Sse2 => unsafe { classify_sse2(block) },
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = self;
            super::blocks::classify_portable(block)
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn classify_avx2(block: &[u8; 64]) -> Masks {
    // SAFETY: `block` holds 64 readable bytes; the loads are unaligned loads of bytes 0..32 and
    // 32..64.
    let (a, b) = unsafe {
        (
            _mm256_loadu_si256(block.as_ptr().cast::<__m256i>()),
            _mm256_loadu_si256(block.as_ptr().add(32).cast::<__m256i>()),
        )
    };
    #[target_feature(enable = "avx2")]
    fn bits(a: __m256i, b: __m256i) -> u64 {
        u64::from(_mm256_movemask_epi8(a) as u32)
            | (u64::from(_mm256_movemask_epi8(b) as u32) << 32)
    }
    #[target_feature(enable = "avx2")]
    fn eq(a: __m256i, b: __m256i, c: u8) -> u64 {
        let c = _mm256_set1_epi8(c as i8);
        bits(_mm256_cmpeq_epi8(a, c), _mm256_cmpeq_epi8(b, c))
    }
    let curly = _mm256_set1_epi8(0x20);
    let (ca, cb) = (_mm256_or_si256(a, curly), _mm256_or_si256(b, curly));
    let below_space = _mm256_set1_epi8(0x20);
    let hi = bits(a, b);
    Masks {
        quote: eq(a, b, b'"'),
        backslash: eq(a, b, b'\\'),
        // Only `[` and `{` give `{` when ORed with 0x20, only `]` and `}` give `}`.
        op: (eq(a, b, b':') | eq(a, b, b',') | eq(ca, cb, b'{') | eq(ca, cb, b'}')),
        ws: eq(a, b, b' ') | eq(a, b, b'\n') | eq(a, b, b'\r') | eq(a, b, b'\t'),
        // Signed compare: bytes >= 0x80 are negative and come out too; `hi` removes them.
        ctrl: bits(
            _mm256_cmpgt_epi8(below_space, a),
            _mm256_cmpgt_epi8(below_space, b),
        ) & !hi,
        hi,
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn classify_sse2(block: &[u8; 64]) -> Masks {
    // SAFETY: `block` holds 64 readable bytes; each load reads 16 of them, unaligned.
    let v: [__m128i; 4] = unsafe {
        let p = block.as_ptr().cast::<__m128i>();
        [
            _mm_loadu_si128(p),
            _mm_loadu_si128(p.add(1)),
            _mm_loadu_si128(p.add(2)),
            _mm_loadu_si128(p.add(3)),
        ]
    };
    #[target_feature(enable = "sse2")]
    fn bits(m: [__m128i; 4]) -> u64 {
        m.iter()
            .enumerate()
            .map(|(i, &x)| u64::from(_mm_movemask_epi8(x) as u16) << (16 * i))
            .fold(0, |acc, x| acc | x)
    }
    #[target_feature(enable = "sse2")]
    fn eq(v: [__m128i; 4], c: u8) -> u64 {
        let c = _mm_set1_epi8(c as i8);
        bits(v.map(|x| _mm_cmpeq_epi8(x, c)))
    }
    let curly = _mm_set1_epi8(0x20);
    let cv = v.map(|x| _mm_or_si128(x, curly));
    let hi = bits(v);
    Masks {
        quote: eq(v, b'"'),
        backslash: eq(v, b'\\'),
        op: eq(v, b':') | eq(v, b',') | eq(cv, b'{') | eq(cv, b'}'),
        ws: eq(v, b' ') | eq(v, b'\n') | eq(v, b'\r') | eq(v, b'\t'),
        ctrl: bits(v.map(|x| _mm_cmpgt_epi8(curly, x))) & !hi,
        hi,
    }
}
