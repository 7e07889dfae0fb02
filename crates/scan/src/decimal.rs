//! Numbers in CSV fields, read as `str::parse` reads them but without its general algorithm
//! for the decimals torch_npu writes (durations, timestamps, ratios, step numbers). `verify`
//! and `summary` both convert their CSV numbers here.

/// The powers of ten that are exact in an `f64`.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A plain decimal (`-`? digits, `.` and digits) whose digits fit in 53 bits and with at most
/// 22 decimals, converted exactly as `str::parse` does: both the integer of its digits and the
/// power of ten are exact doubles, so one correctly rounded division gives the correctly
/// rounded value (Clinger's fast path). `None` for anything else.
fn plain_decimal(text: &[u8]) -> Option<f64> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, text),
    };
    let (mut mantissa, mut decimals, mut seen) = (0_u64, None::<usize>, false);
    for &b in digits {
        match b {
            b'0'..=b'9' => {
                mantissa = mantissa.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
                seen = true;
                if let Some(d) = decimals.as_mut() {
                    *d += 1;
                }
            }
            b'.' if decimals.is_none() => decimals = Some(0),
            _ => return None,
        }
    }
    let power = *POW10.get(decimals.unwrap_or(0))?;
    if !seen || mantissa > 1 << 53 {
        return None;
    }
    let value = mantissa as f64 / power;
    Some(if negative { -value } else { value })
}

/// A decimal as torch_npu writes durations and ratios (digits, then optionally `.` and
/// digits; at most 19 bytes, so the digits cannot overflow): the value [`plain_decimal`] gives,
/// in one pass without its checks. `None` for anything else.
#[inline]
pub fn short_decimal(field: &[u8]) -> Option<f64> {
    if (4..=8).contains(&field.len()) {
        return eight_bytes(field);
    }
    if field.len() > 19 {
        return None;
    }
    let (mut mantissa, mut rest) = (0_u64, field);
    while let [digit @ b'0'..=b'9', tail @ ..] = rest {
        mantissa = mantissa * 10 + u64::from(digit - b'0');
        rest = tail;
    }
    if rest.len() == field.len() {
        return None;
    }
    let decimals = match rest {
        [] => 0,
        [b'.', fraction @ ..] => {
            for &digit in fraction {
                if !digit.is_ascii_digit() {
                    return None;
                }
                mantissa = mantissa * 10 + u64::from(digit - b'0');
            }
            fraction.len()
        }
        _ => return None,
    };
    if mantissa > 1 << 53 {
        return None;
    }
    Some(mantissa as f64 / POW10[decimals])
}

/// A field's first eight bytes as a little-endian word, zero past its end: what
/// [`Record::get_word`](crate::csv_rows::Record::get_word) gives.
pub fn word(field: &[u8]) -> u64 {
    let mut bytes = [0; 8];
    let n = field.len().min(8);
    bytes[..n].copy_from_slice(&field[..n]);
    u64::from_le_bytes(bytes)
}

/// [`short_decimal`] of a field of 4 to 8 bytes, read as one word (SWAR): the bytes are
/// checked at once, the `.` taken out, and the digits added up with three multiplications.
#[inline]
fn eight_bytes(field: &[u8]) -> Option<f64> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    /// The high bit of each zero byte of `v`, and of no other.
    fn zero_bytes(v: u64) -> u64 {
        !(((v & !HIGH) + !HIGH) | v | !HIGH)
    }
    let len = field.len();
    let half = |at: usize| {
        let mut word = [0; 4];
        word.copy_from_slice(&field[at..at + 4]);
        u64::from(u32::from_le_bytes(word))
    };
    // Two overlapping loads: the bytes they share are the same.
    let x = half(0) | half(len - 4) << (8 * (len - 4));
    let valid = HIGH >> (8 * (8 - len));
    let dots = zero_bytes(x ^ (ONES * u64::from(b'.'))) & valid;
    let not_digit = (x & 0xf0f0_f0f0_f0f0_f0f0) ^ (ONES * 0x30)
        | ((x & 0x0f0f_0f0f_0f0f_0f0f) + ONES * 6) & 0xf0f0_f0f0_f0f0_f0f0;
    let not_digits = !zero_bytes(not_digit) & valid;
    // Digits, and at most one `.`, which is not the first byte.
    if not_digits != dots || dots.count_ones() > 1 || dots & 0x80 != 0 {
        return None;
    }
    let values = x & 0x0f0f_0f0f_0f0f_0f0f;
    let (digits, count, decimals) = if dots == 0 {
        (values, len, 0)
    } else {
        let at = (dots.trailing_zeros() / 8) as usize;
        let before = values & ((1 << (8 * at)) - 1);
        let after = values >> (8 * at) >> 8;
        (before | after << (8 * at), len - 1, len - 1 - at)
    };
    // Leading zeros up to eight digits, then pairs, fours and eights (first digit lowest).
    let mut n = digits << (8 * (8 - count));
    n = n.wrapping_mul(10 << 8 | 1) >> 8;
    n = (n & 0x00ff_00ff_00ff_00ff).wrapping_mul(100 << 16 | 1) >> 16;
    n = (n & 0x0000_ffff_0000_ffff).wrapping_mul(10_000 << 32 | 1) >> 32;
    Some(n as f64 / POW10[decimals])
}

/// `str::parse::<f64>` of the field's text: `None` when it is not UTF-8 or not a number.
#[inline]
pub fn parse_f64(field: &[u8]) -> Option<f64> {
    short_decimal(field)
        .or_else(|| plain_decimal(field))
        .or_else(|| std::str::from_utf8(field).ok()?.parse().ok())
}

/// `str::parse::<u64>` of the field's text: `None` when it is not UTF-8 or not such a number.
#[inline]
pub fn parse_u64(field: &[u8]) -> Option<u64> {
    if (1..=19).contains(&field.len()) && field.iter().all(u8::is_ascii_digit) {
        return Some(
            field
                .iter()
                .fold(0, |n, &digit| n * 10 + u64::from(digit - b'0')),
        );
    }
    std::str::from_utf8(field).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The fast paths give what `str::parse` gives.
        #[test]
        fn fast_paths_agree_with_str_parse(
            digits in "-?[0-9]{0,22}(\\.[0-9]{0,22})?",
            // The one-word path, with the bytes on either side of the digits.
            word in "[0-9./:]{4,8}",
            bytes in prop::collection::vec(
                prop::sample::select(&b"ab.09-+eE \t\r\n\xc2\xa0\xff"[..]),
                0..24,
            ),
        ) {
            for field in [digits.as_bytes(), word.as_bytes(), &bytes] {
                let text = std::str::from_utf8(field).ok();
                let want = text.and_then(|t| t.parse::<f64>().ok());
                if let Some(fast) = short_decimal(field) {
                    prop_assert_eq!(Some(fast), want);
                }
                prop_assert_eq!(parse_f64(field), want);
                prop_assert_eq!(parse_u64(field), text.and_then(|t| t.parse::<u64>().ok()));
            }
        }
    }

    #[test]
    fn plain_decimals_parse_exactly_as_str_parse() {
        for text in [
            "0",
            "-0",
            "53.741",
            "0.186",
            "1736408883704643.212",
            "9007199254740993",
            "0.1",
            "123456789.123456789",
            "1.",
            ".5",
            "-2.5",
            "0.0000000000000000000001",
            "42",
            "3.14159265358979",
            "99999999999999999999",
            "1e5",
            "+1",
            "1.2.3",
            "-",
            "inf",
            "",
        ] {
            assert_eq!(
                parse_f64(text.as_bytes()),
                text.parse::<f64>().ok(),
                "{text}"
            );
        }
        for text in [
            "0",
            "18446744073709551615",
            "18446744073709551616",
            "+7",
            "-1",
            "1.0",
            "",
        ] {
            assert_eq!(
                parse_u64(text.as_bytes()),
                text.parse::<u64>().ok(),
                "{text}"
            );
        }
    }
}
