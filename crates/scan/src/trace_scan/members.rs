//! The top-level members of one event's bytes, read in one forward walk without a parser: for
//! readers that need a few keys of each event ([`scan_events`](super::scan_events) passes
//! events the scanner has already checked as JSON). A string's end is found 8 bytes at a time
//! in a register (most are short), else with `memchr`; a nested object or array is stepped over
//! bracket by bracket; nothing is allocated or decoded.
//!
//! The walk does not trust its input: on bytes that are not an object's members it stops and
//! [`Members::failed`] says so; the caller then leaves the event to a parser. A string holding
//! a backslash is passed as written with `escaped` set: its text is not its bytes, so a reader
//! that compares it must parse the event instead (an escaped key may spell any key).

use memchr::memchr2;

/// A member's value, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'e> {
    /// A string.
    Str {
        /// The bytes between its quotes.
        raw: &'e [u8],
        /// Whether they hold a backslash.
        escaped: bool,
    },
    /// A number's text.
    Number(&'e [u8]),
    /// An object, from `{` to `}`.
    Object(&'e [u8]),
    /// An array, from `[` to `]`.
    Array(&'e [u8]),
    /// `true`, `false` or `null`.
    Literal(&'e [u8]),
}

impl<'e> Value<'e> {
    /// The text of a string without an escape.
    pub fn text(self) -> Option<&'e str> {
        match self {
            Value::Str {
                raw,
                escaped: false,
            } => std::str::from_utf8(raw).ok(),
            _ => None,
        }
    }

    /// A number's value as serde_json reads it into an `f64` (the readers that take an event
    /// from this walk or from the parser get the same value): up to 15 digits without an
    /// exponent, the significand and its power of ten are exact in an `f64` and serde_json's
    /// one division rounds correctly, as Rust's parse does; anything longer is read by
    /// serde_json itself, whose rounding of long numbers is its own.
    pub fn parsed_f64(self) -> Option<f64> {
        let Value::Number(text) = self else {
            return None;
        };
        let digits = text.iter().filter(|b| b.is_ascii_digit()).count();
        if digits <= 15 && !text.iter().any(|&b| b == b'e' || b == b'E') {
            crate::decimal::parse_f64(text)
        } else {
            serde_json::from_slice(text).ok()
        }
    }

    /// The bytes of a number, written as a number or as a string without an escape (torch_npu
    /// writes `ts` as `"1736408883688177.930"`; ASCII whitespace around it trimmed).
    pub fn number_bytes(self) -> Option<&'e [u8]> {
        match self {
            Value::Number(text) => Some(text),
            Value::Str {
                raw,
                escaped: false,
            } => Some(raw.trim_ascii()),
            _ => None,
        }
    }
}

/// One member: its key as written (between the quotes; `key_escaped` when it holds a
/// backslash) and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member<'e> {
    /// The key's bytes between its quotes.
    pub key: &'e [u8],
    /// Whether they hold a backslash.
    pub key_escaped: bool,
    /// Its value.
    pub value: Value<'e>,
}

/// Where the walk stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the object's `{`.
    Start,
    /// After a member: `,` and a member, or `}`, follow.
    Between,
    /// At the object's `}`.
    Done,
    /// The bytes were not an object's members.
    Failed,
}

/// The members of the object `bytes` holds, in the order written (see the module's doc).
#[derive(Debug, Clone)]
pub struct Members<'e> {
    bytes: &'e [u8],
    at: usize,
    state: State,
}

impl<'e> Members<'e> {
    /// The members of `bytes` (an object, from its `{`; bytes after its `}` are not read).
    pub fn of(bytes: &'e [u8]) -> Self {
        Self {
            bytes,
            at: 0,
            state: State::Start,
        }
    }

    /// Whether the walk met bytes that are not an object's members (the members passed
    /// before them are as written).
    pub fn failed(&self) -> bool {
        self.state == State::Failed
    }

    /// Whether the walk reached the object's closing `}`.
    pub fn done(&self) -> bool {
        self.state == State::Done
    }

    /// At the object's `}`.
    fn end<T>(&mut self) -> Option<T> {
        self.state = State::Done;
        None
    }

    fn fail<T>(&mut self) -> Option<T> {
        self.state = State::Failed;
        None
    }

    /// The next byte that is not JSON whitespace (`at` moves to it).
    #[inline(always)]
    fn token(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes.get(self.at) {
            if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(b);
            }
            self.at += 1;
        }
        None
    }

    /// The member whose key's opening quote is at `self.at`.
    #[inline(always)]
    fn member(&mut self) -> Option<Member<'e>> {
        let bytes = self.bytes;
        let Some((end, key_escaped)) = string_end(bytes, self.at + 1) else {
            return self.fail();
        };
        let key = &bytes[self.at + 1..end];
        self.at = end + 1;
        if self.token() != Some(b':') {
            return self.fail();
        }
        self.at += 1;
        let Some(first) = self.token() else {
            return self.fail();
        };
        let start = self.at;
        // (Tests in the order of their odds, not a jump table.)
        let value = if first == b'"' {
            let Some((end, escaped)) = string_end(bytes, start + 1) else {
                return self.fail();
            };
            self.at = end + 1;
            Value::Str {
                raw: &bytes[start + 1..end],
                escaped,
            }
        } else if first.is_ascii_digit() || first == b'-' {
            self.at = token_end(bytes, start, |b| {
                matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
            });
            Value::Number(&bytes[start..self.at])
        } else if first == b'{' || first == b'[' {
            let Some(end) = nested_end(bytes, start) else {
                return self.fail();
            };
            self.at = end;
            let whole = &bytes[start..end];
            if first == b'{' {
                Value::Object(whole)
            } else {
                Value::Array(whole)
            }
        } else {
            self.at = token_end(bytes, start, |b| b.is_ascii_lowercase());
            let word = &bytes[start..self.at];
            if !matches!(word, b"true" | b"false" | b"null") {
                return self.fail();
            }
            Value::Literal(word)
        };
        self.state = State::Between;
        Some(Member {
            key,
            key_escaped,
            value,
        })
    }
}

impl<'e> Iterator for Members<'e> {
    type Item = Member<'e>;

    #[inline]
    fn next(&mut self) -> Option<Member<'e>> {
        // (Tests in the order of their odds, not a jump table: a walk is mostly `Between`.)
        if self.state == State::Between {
            match self.token() {
                Some(b',') => self.at += 1,
                Some(b'}') => return self.end(),
                _ => return self.fail(),
            }
        } else if self.state == State::Start {
            if self.token() != Some(b'{') {
                return self.fail();
            }
            self.at += 1;
            if self.token() == Some(b'}') {
                return self.end();
            }
        } else {
            return None;
        }
        match self.token() {
            Some(b'"') => self.member(),
            _ => self.fail(),
        }
    }
}

/// The key and value of the last member of the object `bytes` (from its `{` to its `}`, which
/// the scanner accepted as JSON) when that member is a string without a backslash under a key
/// without one, read from its last bytes alone (torch_npu writes `"ph"` last in most events).
/// `None` when the tail is anything else.
///
/// Exact on valid JSON: the closing `}` is structural, so the `"` before it (through
/// whitespace) closes a string; the quote before that, with no backslash between and none just
/// before it, is unescaped, so it opens that string; the `:` before it is then outside strings,
/// and the key before it is read the same way. No bracket lies between the member and the
/// object's `}`: the member is the object's own, not a nested one's.
pub fn last_string_member(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let rest = bytes.trim_ascii_end().strip_suffix(b"}")?;
    let (rest, value) = last_plain_string(rest)?;
    let rest = rest.trim_ascii_end().strip_suffix(b":")?;
    let (rest, key) = last_plain_string(rest)?;
    matches!(rest.trim_ascii_end().last(), Some(b',' | b'{')).then_some((key, value))
}

/// `bytes` ending (through whitespace) with a string without a backslash whose opening quote
/// is not preceded by one: the bytes before the string and its content.
fn last_plain_string(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let rest = bytes.trim_ascii_end().strip_suffix(b"\"")?;
    let open = memchr::memrchr2(b'"', b'\\', rest)?;
    if rest[open] != b'"' || open.checked_sub(1).is_some_and(|i| rest[i] == b'\\') {
        return None;
    }
    Some((&rest[..open], &rest[open + 1..]))
}

/// The index of the quote that ends the string whose content starts at `from`, and whether the
/// string holds a backslash. Most strings of an event are short (keys, names, times) and plain:
/// their first bytes are searched 8 at a time in a register. A string with a backslash (a call
/// stack's `\r\n`s) is searched for its quotes alone with `memchr`, each quote checked by the
/// backslashes just before it (an odd number escapes it).
#[inline(always)]
fn string_end(bytes: &[u8], from: usize) -> Option<(usize, bool)> {
    let first = match quote_or_backslash_near(bytes, from) {
        Some(i) => i,
        None => from + 32 + memchr2(b'"', b'\\', bytes.get(from + 32..)?)?,
    };
    if bytes[first] == b'"' {
        return Some((first, false));
    }
    let mut at = first + 1;
    loop {
        let quote = at + memchr::memchr(b'"', bytes.get(at..)?)?;
        let backslashes = bytes[first..quote]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if backslashes % 2 == 0 {
            return Some((quote, true));
        }
        at = quote + 1;
    }
}

/// The first `"` or `\` in `bytes[from..from + 32]` (fewer at the end of `bytes`: then its
/// whole rest), or `None` when there is none there.
#[inline(always)]
fn quote_or_backslash_near(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // The high bit of each byte of `w` equal to `byte`; exact up to the first such byte (a
    // borrow may mark bytes after it), which is all that is read.
    let marks = |w: u64, byte: u8| {
        let x = w ^ (ONES * u64::from(byte));
        x.wrapping_sub(ONES) & !x & HIGHS
    };
    let mut at = from;
    for _ in 0..4 {
        let Some(word) = bytes.get(at..at + 8) else {
            let rest = bytes.get(at..)?;
            return memchr2(b'"', b'\\', rest).map(|n| at + n);
        };
        let w = u64::from_le_bytes(word.try_into().ok()?);
        let found = marks(w, b'"') | marks(w, b'\\');
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    None
}

/// The index just past the `}` or `]` that closes the object or array opening at `start`.
fn nested_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    loop {
        match *bytes.get(i)? {
            b'"' => i = string_end(bytes, i + 1)?.0,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// The index of the first byte at or after `start` that `inside` does not take.
#[inline(always)]
fn token_end(bytes: &[u8], start: usize, inside: impl Fn(u8) -> bool) -> usize {
    bytes[start..]
        .iter()
        .position(|&b| !inside(b))
        .map_or(bytes.len(), |n| start + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(doc: &str) -> (Vec<(String, Value<'_>)>, bool) {
        let mut walk = Members::of(doc.as_bytes());
        let found = walk
            .by_ref()
            .map(|m| (String::from_utf8_lossy(m.key).into_owned(), m.value))
            .collect();
        (found, walk.done())
    }

    #[test]
    fn reads_each_kind_of_value_and_steps_over_nested_ones() {
        let doc = r#" { "ph" : "X", "ts": "17.5", "dur":-0.25e1, "args": {"a": [1, "]}", {"b": "}"}], "c": "\"{"}, "l": [ ], "t": true, "n": null } trailing"#;
        let (found, done) = members(doc);
        assert!(done);
        let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["ph", "ts", "dur", "args", "l", "t", "n"]);
        assert_eq!(found[0].1.text(), Some("X"));
        assert_eq!(found[1].1.number_bytes(), Some(&b"17.5"[..]));
        assert_eq!(found[2].1, Value::Number(b"-0.25e1"));
        assert_eq!(
            found[3].1,
            Value::Object(br#"{"a": [1, "]}", {"b": "}"}], "c": "\"{"}"#)
        );
        assert_eq!(found[4].1, Value::Array(b"[ ]"));
        assert_eq!(found[5].1, Value::Literal(b"true"));
        assert_eq!(found[6].1, Value::Literal(b"null"));
    }

    #[test]
    fn numbers_are_read_as_serde_json_reads_them() {
        for text in [
            "0",
            "-0",
            "145.57",
            "0.000123",
            "123456789012345",
            "1234567890123456789",
            "18446744073709551616",
            "1.7976931348623157e308",
            "2.2250738585072014e-308",
            "0.30000000000000004",
            "9007199254740993",
            "1e23",
            "-12.5E-3",
            "1736408883688177.930",
            "3.9113781875",
        ] {
            let ours = Value::Number(text.as_bytes()).parsed_f64();
            let theirs: f64 = serde_json::from_str(text).expect("a number");
            assert_eq!(ours.map(f64::to_bits), Some(theirs.to_bits()), "{text}");
        }
        // Where serde_json's rounding is its own, the reading is serde_json's, not Rust's parse:
        // a long decimal (its 19-digit significand is rounded to an f64 before the division by
        // 1000: ...238 against ...237.75) and a short one with an exponent (1 / 1e30, and 1e30 is
        // not exact in an f64).
        for text in ["1736409590499237.872", "1e-30", "-1e-30"] {
            let ours = Value::Number(text.as_bytes()).parsed_f64();
            let theirs: f64 = serde_json::from_str(text).expect("a number");
            let rust: f64 = text.parse().expect("a number");
            assert_ne!(theirs.to_bits(), rust.to_bits(), "{text}");
            assert_eq!(ours.map(f64::to_bits), Some(theirs.to_bits()), "{text}");
        }
        assert_eq!(Value::Literal(b"null").parsed_f64(), None);
    }

    #[test]
    fn a_plain_string_is_its_text_and_an_escaped_one_is_not() {
        let plain = Value::Str {
            raw: b"ph",
            escaped: false,
        };
        assert_eq!(plain.text(), Some("ph"));
        let escaped = Value::Str {
            raw: b"ph",
            escaped: true,
        };
        assert_eq!(escaped.text(), None);
        assert_eq!(Value::Number(b"1").text(), None);
        // Bytes that are not UTF-8 have no text.
        let not_utf8 = Value::Str {
            raw: b"\xff",
            escaped: false,
        };
        assert_eq!(not_utf8.text(), None);
    }

    #[test]
    fn a_number_is_its_bytes_written_bare_or_in_a_plain_string() {
        assert_eq!(
            Value::Number(b"-0.25e1").number_bytes(),
            Some(&b"-0.25e1"[..])
        );
        let spaced = Value::Str {
            raw: b" 250.5\t",
            escaped: false,
        };
        assert_eq!(spaced.number_bytes(), Some(&b"250.5"[..]));
        let escaped = Value::Str {
            raw: br"2\u0035",
            escaped: true,
        };
        assert_eq!(escaped.number_bytes(), None);
        assert_eq!(Value::Literal(b"null").number_bytes(), None);
        assert_eq!(Value::Array(b"[1]").number_bytes(), None);
    }

    #[test]
    fn escapes_are_marked_not_decoded() {
        let doc = r#"{"p\u0068": "a\"b", "k": "\\"}"#;
        let mut walk = Members::of(doc.as_bytes());
        let first = walk.next().expect("a member");
        assert!(first.key_escaped);
        assert_eq!(first.key, br"p\u0068");
        assert_eq!(
            first.value,
            Value::Str {
                raw: br#"a\"b"#,
                escaped: true
            }
        );
        assert_eq!(first.value.text(), None);
        let second = walk.next().expect("a member");
        assert_eq!(second.value.text(), None);
        assert!(walk.next().is_none() && walk.done());
    }

    #[test]
    fn the_last_member_is_read_from_the_tail_only_when_the_bytes_prove_it() {
        let last = |doc: &str| {
            last_string_member(doc.as_bytes()).map(|(k, v)| {
                (
                    String::from_utf8_lossy(k).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
        };
        let pair = |k: &str, v: &str| Some((k.to_owned(), v.to_owned()));
        assert_eq!(
            last(r#"{"name": "HBM", "args": {"a": 1}, "ph": "C"}"#),
            pair("ph", "C")
        );
        assert_eq!(last(r#"{"ph":"X"}"#), pair("ph", "X"));
        assert_eq!(last("{\"a\": 1,\n \"ph\" :\t\"\" }\n"), pair("ph", ""));
        // A member of a nested object, an escaped quote or key, a value that is not a string.
        for doc in [
            r#"{"args": {"ph": "C"}}"#,
            r#"{"a": "x\", \"ph\": \"C"}"#,
            r#"{"a": "x", "p\h": "C"}"#,
            r#"{"a": "x", "ph": "\u0043"}"#,
            r#"{"ph": 1}"#,
            r#"{"ph": ["C"]}"#,
            // An escaped key whose backslash follows a comma (`,\n`): a backslash, not a
            // quote, is the last one before the key's end.
            r#"{",\n": "C"}"#,
            r#"["ph", "C"]"#,
            "",
        ] {
            assert_eq!(last(doc), None, "{doc}");
        }
        // Whatever the tail, it agrees with a parser on valid objects.
        for doc in [
            r#"{"a": "\\", "ph": "C"}"#,
            r#"{"a": ["\"ph\": \"M\"", {"ph": "M"}], "ph": "C"}"#,
        ] {
            let parsed: serde_json::Value = serde_json::from_str(doc).expect("valid");
            assert_eq!(last(doc), pair("ph", parsed["ph"].as_str().expect("ph")));
        }
    }

    #[test]
    fn what_is_not_an_object_fails_without_panicking() {
        for doc in [
            "",
            "[1]",
            "{",
            r#"{"a""#,
            r#"{"a" 1}"#,
            r#"{"a": }"#,
            r#"{"a": 1 "b": 2}"#,
            r#"{"a": "x}"#,
            r#"{"a": {"b": 1}"#,
            r#"{"a": tru}"#,
            r#"{"a": 1,}"#,
            r#"{"a": "\"#,
            r#"{"a": x}"#,
            r#"{1: 2}"#,
        ] {
            let mut walk = Members::of(doc.as_bytes());
            walk.by_ref().for_each(drop);
            assert!(walk.failed() && !walk.done(), "{doc:?}");
        }
        let (found, done) = members("{}");
        assert!(found.is_empty() && done);
    }

    #[test]
    fn agrees_with_serde_json_on_every_member() {
        // Members of valid objects, compared value by value with what serde_json makes of them.
        let docs = [
            r#"{"ph": "X", "name": "aten::add", "pid": 3096504, "tid": "3096504", "ts": "1736408883688177.930", "dur": 145.57, "cat": "cpu_op", "args": {"Call stack": "a.py(1): f;\r\nb.py(2): g", "Sequence number": -1}}"#,
            r#"{"args":{"name":"Python"},"name":"process_name","ph":"M","pid":3096504,"tid":0}"#,
            "{\"a\":\t[[[]]],\n\"b\" :{\"c\":{}} , \"d\":1E+5}",
            // Strings longer than the 32 bytes searched in a register, with and without a
            // backslash past them.
            r#"{"name": "nn.Module: TransformerDecoderLayer_12", "args": {"Call stack": "/usr/lib/python3.10/site-packages/torch/nn/modules/module.py(1532): _call_impl;\r\nmodel.py(40): forward"}, "a key longer than thirty-two bytes, plain": 1, "ph": "X"}"#,
        ];
        for doc in docs {
            let parsed: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(doc).expect("valid");
            let mut walk = Members::of(doc.as_bytes());
            let mut n = 0;
            for m in walk.by_ref() {
                n += 1;
                let key = std::str::from_utf8(m.key).expect("a key");
                let value = &parsed[key];
                let raw = match m.value {
                    Value::Str { raw, .. } => [&b"\""[..], raw, b"\""].concat(),
                    Value::Number(t) | Value::Object(t) | Value::Array(t) | Value::Literal(t) => {
                        t.to_vec()
                    }
                };
                let reparsed: serde_json::Value = serde_json::from_slice(&raw).expect("a value");
                assert_eq!(&reparsed, value, "{key}");
            }
            assert_eq!(n, parsed.len());
            assert!(walk.done() && !walk.failed());
        }
    }
}
