//! Exact time: trace timestamps as integer nanoseconds, durations as integer picoseconds.
//!
//! torch_npu writes `ts` as a decimal string of µs with 3 decimals (19 significant digits,
//! more than an f64 holds), so timestamps are parsed digit by digit; durations are numbers of
//! µs with up to 8 decimals, kept to the picosecond. Every sum is an integer sum: what is owned
//! plus what is not equals the total exactly.

/// Picoseconds in a µs.
pub const PS_PER_US: f64 = 1_000_000.0;

/// A decimal string of µs (`"1736408883701968.580"`) as integer nanoseconds; digits past the
/// third decimal are rounded half up. `None` for anything but an unsigned decimal.
pub fn parse_ts_ns(text: &str) -> Option<u64> {
    let text = text.trim();
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut ns: u64 = int.parse::<u64>().ok()?.checked_mul(1000)?;
    let digits = frac.as_bytes();
    for (i, scale) in [100u64, 10, 1].iter().enumerate() {
        if let Some(d) = digits.get(i) {
            ns = ns.checked_add(u64::from(d - b'0') * scale)?;
        }
    }
    if digits.get(3).is_some_and(|d| *d >= b'5') {
        ns = ns.checked_add(1)?;
    }
    Some(ns)
}

/// A number of µs as nanoseconds (for a `ts` written as a JSON number: exact to the
/// nanosecond only while the value fits an f64's 15 digits).
pub fn us_f64_to_ns(us: f64) -> Option<u64> {
    (us.is_finite() && us >= 0.0).then(|| (us * 1000.0).round() as u64)
}

/// A duration in µs as picoseconds (rounded).
pub fn us_to_ps(us: f64) -> Option<u64> {
    (us.is_finite() && us >= 0.0).then(|| (us * PS_PER_US).round() as u64)
}

/// Picoseconds as µs.
pub fn ps_to_us(ps: u64) -> f64 {
    ps as f64 / PS_PER_US
}

/// The median and the 95th percentile (nearest rank) of `values`, `None` when empty.
pub fn median_p95(values: &[f64]) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let rank = ((0.95 * n as f64).ceil() as usize).clamp(1, n);
    Some((median, v[rank - 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_keep_every_digit() {
        // 19 significant digits: an f64 would lose the last ones.
        assert_eq!(
            parse_ts_ns("1736408883701968.580"),
            Some(1_736_408_883_701_968_580)
        );
        assert_eq!(parse_ts_ns("12.5"), Some(12_500));
        assert_eq!(parse_ts_ns("12"), Some(12_000));
        assert_eq!(parse_ts_ns("1.0004"), Some(1_000));
        assert_eq!(parse_ts_ns("1.0005"), Some(1_001));
        assert_eq!(
            parse_ts_ns("1736408883704643.212\t"),
            Some(1_736_408_883_704_643_212)
        );
        assert_eq!(parse_ts_ns("-1"), None);
        assert_eq!(parse_ts_ns("1e3"), None);
        assert_eq!(parse_ts_ns(""), None);
    }

    #[test]
    fn durations_are_picoseconds() {
        assert_eq!(us_to_ps(53.741), Some(53_741_000));
        assert_eq!(us_to_ps(15.5003125).map(|ps| ps / 10), Some(1_550_031));
        assert_eq!(us_to_ps(158_553.28), Some(158_553_280_000));
        assert_eq!(us_to_ps(-1.0), None);
        assert_eq!(ps_to_us(1_500_000), 1.5);
    }

    #[test]
    fn median_and_p95_by_nearest_rank() {
        assert_eq!(median_p95(&[]), None);
        assert_eq!(median_p95(&[3.0]), Some((3.0, 3.0)));
        assert_eq!(median_p95(&[4.0, 1.0, 3.0, 2.0]), Some((2.5, 4.0)));
        let many: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(median_p95(&many), Some((10.5, 19.0)));
    }
}
