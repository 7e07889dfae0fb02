//! What a YAML scalar is to the engine's loader: PyYAML's `safe_load` resolves plain scalars by
//! the YAML 1.1 rules (`040` is octal 32, `3_2` is 32, `0x20` is 32, `1:20` is 80, `1e309` is a
//! string, `yes` is true), while npuprof's own YAML library follows YAML 1.2. A value the run
//! reads as a number must be read as PyYAML reads it, from the scalar as written.

use std::fmt;

/// A scalar as PyYAML's `SafeLoader` constructs it (only what a token budget needs to tell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PyScalar {
    /// `~`, `null`, `Null`, `NULL` or nothing: Python's `None`.
    Null,
    /// `true`/`false`/`yes`/`no`/`on`/`off` in their three spellings: a Python `bool`.
    Bool(bool),
    /// An integer in any of YAML 1.1's notations, with its value (`None`: beyond 128 bits).
    Int(Option<i128>),
    /// A float (`32.0`, `.inf`, `.nan`, `1.5e+3`).
    Float,
    /// Anything else, quoted or not (`"32"`, `1e309`, `32 tokens`): a Python `str` (dates, which
    /// PyYAML turns into `date` objects, are said to be strings too; neither is a count).
    Str,
}

impl fmt::Display for PyScalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PyScalar::Null => f.write_str("None"),
            PyScalar::Bool(b) => f.write_str(if *b {
                "the bool True"
            } else {
                "the bool False"
            }),
            PyScalar::Int(Some(n)) => write!(f, "the int {n}"),
            PyScalar::Int(None) => f.write_str("an int beyond 128 bits"),
            PyScalar::Float => f.write_str("a float"),
            PyScalar::Str => f.write_str("a string"),
        }
    }
}

/// How PyYAML resolves the plain (unquoted) scalar `text` (already trimmed of surrounding space).
pub fn resolve_plain(text: &str) -> PyScalar {
    if matches!(text, "" | "~" | "null" | "Null" | "NULL") {
        return PyScalar::Null;
    }
    match text {
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return PyScalar::Bool(true);
        }
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return PyScalar::Bool(false);
        }
        _ => {}
    }
    if is_float(text) {
        return PyScalar::Float;
    }
    if is_int(text) {
        return PyScalar::Int(construct_int(text));
    }
    PyScalar::Str
}

/// `s` without its sign, and whether it was negative.
fn unsigned(s: &str) -> (&str, bool) {
    match s.as_bytes().first() {
        Some(b'-') => (&s[1..], true),
        Some(b'+') => (&s[1..], false),
        _ => (s, false),
    }
}

fn all(s: &str, allowed: impl Fn(u8) -> bool) -> bool {
    s.bytes().all(allowed)
}

/// `[0-5]?[0-9]`: one sexagesimal digit group.
fn sexagesimal_part(p: &str) -> bool {
    match p.as_bytes() {
        [d] => d.is_ascii_digit(),
        [a, d] => (b'0'..=b'5').contains(a) && d.is_ascii_digit(),
        _ => false,
    }
}

/// `[1-9][0-9_]*(:[0-5]?[0-9])+` (unsigned).
fn is_sexagesimal_int(u: &str) -> bool {
    let mut parts = u.split(':');
    let head = parts.next().unwrap_or("");
    let mut rest = parts.peekable();
    rest.peek().is_some()
        && head
            .as_bytes()
            .first()
            .is_some_and(|b| (b'1'..=b'9').contains(b))
        && all(head, |b| b.is_ascii_digit() || b == b'_')
        && rest.all(sexagesimal_part)
}

/// PyYAML's int resolver: binary, octal (a leading 0), decimal, hex, sexagesimal; `_` anywhere
/// after the first digit.
fn is_int(text: &str) -> bool {
    let (u, _) = unsigned(text);
    if let Some(bin) = u.strip_prefix("0b") {
        return !bin.is_empty() && all(bin, |b| matches!(b, b'0' | b'1' | b'_'));
    }
    if let Some(hex) = u.strip_prefix("0x") {
        return !hex.is_empty() && all(hex, |b| b.is_ascii_hexdigit() || b == b'_');
    }
    if u == "0" {
        return true;
    }
    if let Some(oct) = u.strip_prefix('0') {
        return !oct.is_empty() && all(oct, |b| matches!(b, b'0'..=b'7' | b'_'));
    }
    if u.contains(':') {
        return is_sexagesimal_int(u);
    }
    u.as_bytes()
        .first()
        .is_some_and(|b| (b'1'..=b'9').contains(b))
        && all(u, |b| b.is_ascii_digit() || b == b'_')
}

/// PyYAML's float resolver (YAML 1.1): a `.` is required, an exponent needs its sign.
fn is_float(text: &str) -> bool {
    let (u, _) = unsigned(text);
    if matches!(u, ".inf" | ".Inf" | ".INF") || matches!(text, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let (mantissa, exponent) = match u.find(['e', 'E']) {
        Some(at) => (&u[..at], Some(&u[at + 1..])),
        None => (u, None),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let (digits, _) = unsigned(e);
        e.starts_with(['+', '-']) && !digits.is_empty() && all(digits, |b| b.is_ascii_digit())
    });
    let Some((whole, fraction)) = mantissa.split_once('.') else {
        return false;
    };
    let fraction_ok = all(fraction, |b| b.is_ascii_digit() || b == b'_');
    if whole.is_empty() {
        // `.[0-9_]+`, unsigned only.
        return !text.starts_with(['+', '-']) && !fraction.is_empty() && fraction_ok && exponent_ok;
    }
    if whole.contains(':') {
        // `[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*`, no exponent.
        let mut parts = whole.split(':');
        let head = parts.next().unwrap_or("");
        return exponent.is_none()
            && head.as_bytes().first().is_some_and(u8::is_ascii_digit)
            && all(head, |b| b.is_ascii_digit() || b == b'_')
            && parts.all(sexagesimal_part)
            && fraction_ok;
    }
    whole.as_bytes().first().is_some_and(u8::is_ascii_digit)
        && all(whole, |b| b.is_ascii_digit() || b == b'_')
        && fraction_ok
        && exponent_ok
}

/// PyYAML's `construct_yaml_int` of a scalar [`is_int`] accepted.
fn construct_int(text: &str) -> Option<i128> {
    let cleaned: String = text.chars().filter(|&c| c != '_').collect();
    let (u, negative) = unsigned(&cleaned);
    let magnitude = if u == "0" {
        Some(0)
    } else if let Some(bin) = u.strip_prefix("0b") {
        i128::from_str_radix(bin, 2).ok()
    } else if let Some(hex) = u.strip_prefix("0x") {
        i128::from_str_radix(hex, 16).ok()
    } else if let Some(oct) = u.strip_prefix('0') {
        i128::from_str_radix(oct, 8).ok()
    } else if u.contains(':') {
        u.split(':').try_fold(0i128, |acc, part| {
            acc.checked_mul(60)?.checked_add(part.parse::<i128>().ok()?)
        })
    } else {
        u.parse::<i128>().ok()
    };
    magnitude.map(|m| if negative { -m } else { m })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each scalar with what `yaml.safe_load` (PyYAML 6.0.3) gives for `k: <scalar>`, checked
    /// against PyYAML when these cases were written.
    #[test]
    fn plain_scalars_resolve_as_pyyaml_safe_load_does() {
        let cases: &[(&str, PyScalar)] = &[
            ("32", PyScalar::Int(Some(32))),
            ("+32", PyScalar::Int(Some(32))),
            ("-1", PyScalar::Int(Some(-1))),
            ("0", PyScalar::Int(Some(0))),
            ("040", PyScalar::Int(Some(32))),
            ("3_2", PyScalar::Int(Some(32))),
            ("0x20", PyScalar::Int(Some(32))),
            ("0b100000", PyScalar::Int(Some(32))),
            ("1:20", PyScalar::Int(Some(80))),
            ("09", PyScalar::Str),
            ("0o40", PyScalar::Str),
            ("32.0", PyScalar::Float),
            ("32.", PyScalar::Float),
            (".5", PyScalar::Float),
            (".inf", PyScalar::Float),
            ("-.inf", PyScalar::Float),
            (".nan", PyScalar::Float),
            ("1.5e+3", PyScalar::Float),
            ("1e309", PyScalar::Str),
            ("1.0e3", PyScalar::Str),
            ("1:20.5", PyScalar::Float),
            ("null", PyScalar::Null),
            ("~", PyScalar::Null),
            ("", PyScalar::Null),
            ("yes", PyScalar::Bool(true)),
            ("Off", PyScalar::Bool(false)),
            ("32 tokens", PyScalar::Str),
            ("2001-12-14", PyScalar::Str),
            ("1_000_000", PyScalar::Int(Some(1_000_000))),
            ("0_", PyScalar::Int(Some(0))),
            ("-0x_1", PyScalar::Int(Some(-1))),
            ("+.5", PyScalar::Str),
            ("0b", PyScalar::Str),
        ];
        for (text, expected) in cases {
            assert_eq!(&resolve_plain(text), expected, "{text:?}");
        }
    }

    #[test]
    fn an_int_past_128_bits_is_an_int_without_a_value() {
        assert_eq!(resolve_plain(&"9".repeat(60)), PyScalar::Int(None));
    }
}
