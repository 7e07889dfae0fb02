//! Which trace events the host-gap reader must parse, decided from their bytes alone: an event
//! that is neither a metadata event nor a complete event overlapping a gap is passed over
//! without serde_json (most of a trace: counters, flows, and complete events between the gaps).
//!
//! Exact by construction: an event is passed over only when its bytes prove that it cannot be
//! listed. Without a `\u` escape a JSON string is spelt literally, so an event without the
//! bytes `"X"` and `"M"` has neither as its `ph`; `ts` and `dur` are read off the bytes only
//! when each key occurs exactly once and its value is a plain number or a number in a string
//! (anything else is parsed). An event passed over is not parsed, so one with unusual field
//! types counts as skipped only when it might have been listed.
//!
//! Speed: `ph` written last (torch_npu's counters and device tasks) is read off the event's
//! last bytes ([`last_string_member`]); otherwise the event is read in one forward walk over its
//! top-level members ([`Members`]) that stops as soon as the decision is made: after `ph` for
//! all but complete events, after `ts` and `dur` for those (torch_npu writes both before
//! `args`). The first occurrence of a key is the one that counts: an event with a key twice is
//! refused by the parser (its struct takes each field once), so it is never listed whatever its
//! second value says. Times are first bounded by their integer digits ([`Bounds`]): the decimal parse runs only for an
//! event whose bounds do not already put it clear of every gap. An event with an escaped key
//! (it may spell `ph`, `ts` or `dur`) is read as before, one search per pattern
//! ([`Sieve::must_parse_escaped`]).

use memchr::memmem::Finder;
use npuprof_scan::decimal::parse_f64;
use npuprof_scan::trace_scan::{Members, Value, last_string_member};

/// What decides, for one gap, whether an event of `start` lasting `dur` µs is listed: how much
/// of the gap it covers, `None` when it does not overlap it or encloses it (longer than
/// [`crate::host::ENCLOSING`] times the gap).
pub(crate) fn overlap(start: f64, dur: f64, (gap_start, gap_end): (f64, f64)) -> Option<f64> {
    let end = start + dur.max(0.0);
    let overlap = end.min(gap_end) - start.max(gap_start);
    let encloses = start <= gap_start
        && end >= gap_end
        && dur > crate::host::ENCLOSING * (gap_end - gap_start);
    (overlap > 0.0 && !encloses).then_some(overlap)
}

/// The byte patterns looked for, built once per trace.
pub(crate) struct Sieve<'g> {
    gaps: &'g [(f64, f64)],
    complete: Finder<'static>,
    metadata: Finder<'static>,
    unicode_escape: Finder<'static>,
    ts: Finder<'static>,
    dur: Finder<'static>,
}

impl<'g> Sieve<'g> {
    pub(crate) fn new(gaps: &'g [(f64, f64)]) -> Self {
        Self {
            gaps,
            complete: Finder::new(br#""X""#),
            metadata: Finder::new(br#""M""#),
            unicode_escape: Finder::new(br"\u"),
            ts: Finder::new(br#""ts""#),
            dur: Finder::new(br#""dur""#),
        }
    }

    /// Whether `event` (one object's bytes) may matter: `false` only when its bytes prove it
    /// is not a metadata event and not a complete event overlapping a gap.
    pub(crate) fn must_parse(&mut self, event: &[u8]) -> bool {
        // `ph` written last (torch_npu's counters and device tasks) is read off the tail.
        let last = last_string_member(event).filter(|(key, _)| *key == b"ph");
        let mut complete = false;
        if let Some((_, phase)) = last {
            match phase {
                b"X" => complete = true,
                b"M" => return true,
                _ => return false,
            }
        }
        let (mut ts, mut dur) = (None, None);
        let mut members = Members::of(event);
        for member in members.by_ref() {
            if member.key_escaped {
                return self.must_parse_escaped(event);
            }
            match member.key {
                // (Read off the tail: another `ph` before it is left to the parser.)
                b"ph" if last.is_some() => continue,
                b"ph" if !complete => match member.value {
                    Value::Str { raw: b"X", .. } => complete = true,
                    // An escape may spell `X` or `M`.
                    Value::Str { raw: b"M", .. } | Value::Str { escaped: true, .. } => {
                        return true;
                    }
                    // Another phase, or not a string: never listed.
                    _ => return false,
                },
                // A second `ph`: the parser refuses the event.
                b"ph" => return false,
                b"ts" if ts.is_none() => ts = Some(member.value),
                b"dur" if dur.is_none() => dur = Some(member.value),
                _ => continue,
            }
            if let (true, Some(ts), Some(dur)) = (complete, ts, dur) {
                return self.times_may_overlap(ts, dur);
            }
        }
        // Without a `ph`, not listed; a complete event without both times, or bytes the walk
        // could not read, are left to the parser.
        complete || members.failed()
    }

    /// Whether a complete event with these `ts` and `dur` values may be listed: `false` only
    /// when both are numbers that put it clear of every gap.
    fn times_may_overlap(&self, ts: Value<'_>, dur: Value<'_>) -> bool {
        let (Some(ts_text), Some(dur_text)) = (ts.number_bytes(), dur.number_bytes()) else {
            return true;
        };
        if let (Some(ts), Some(dur)) = (Bounds::of(ts_text), Bounds::of(dur_text))
            && self.gaps.iter().all(|&gap| !ts.may_overlap(dur, gap))
        {
            return false;
        }
        self.may_overlap(parsed(ts), parsed(dur))
    }

    /// [`Sieve::must_parse`] for an event whose bytes hold a backslash: its strings may hold
    /// escaped quotes, so each pattern is searched for in the bytes.
    fn must_parse_escaped(&self, event: &[u8]) -> bool {
        if self.unicode_escape.find(event).is_some() || self.metadata.find(event).is_some() {
            return true;
        }
        if self.complete.find(event).is_none() {
            return false;
        }
        self.may_overlap(value(&self.ts, event), value(&self.dur, event))
    }

    /// Whether a complete event of `start` lasting `dur` (as read; `None` when its bytes did
    /// not give one) may be listed: unread times leave it to the parser.
    fn may_overlap(&self, start: Option<f64>, dur: Option<f64>) -> bool {
        match (start, dur) {
            (Some(start), Some(dur)) => self
                .gaps
                .iter()
                .any(|&gap| overlap(start, dur, gap).is_some()),
            _ => true,
        }
    }
}

/// The number after the only occurrence of the key `finder` looks for (`"ts": 12.5` or
/// `"ts": "12.5"`), read as the parser reads it; `None` when the key is absent or repeated, or
/// its value is anything else.
fn value(finder: &Finder<'_>, event: &[u8]) -> Option<f64> {
    let mut found = finder.find_iter(event);
    let at = found.next()?;
    if found.next().is_some() {
        return None;
    }
    let rest = &event[at + finder.needle().len()..];
    let text = value_text(rest)?;
    let quoted = rest
        .trim_ascii_start()
        .strip_prefix(b":")?
        .trim_ascii_start()
        .starts_with(b"\"");
    if quoted {
        parse_f64(text.as_bytes())
    } else {
        Value::Number(text.as_bytes()).parsed_f64()
    }
}

/// A time as the parser reads it: a number as serde_json does, a string with Rust's parse.
fn parsed(value: Value<'_>) -> Option<f64> {
    match value {
        Value::Number(_) => value.parsed_f64(),
        _ => parse_f64(value.number_bytes()?),
    }
}

/// The text of the number that `rest` (the bytes after a key's closing quote) gives the key:
/// `: 12.5` or `: "12.5"` (trimmed as the parser's `Number::Text` is); `None` for anything else.
fn value_text(rest: &[u8]) -> Option<&str> {
    let rest = rest.trim_ascii_start();
    let rest = rest.strip_prefix(b":")?.trim_ascii_start();
    let text = match rest.strip_prefix(b"\"") {
        Some(quoted) => {
            let end = memchr::memchr2(b'"', b'\\', quoted)?;
            if quoted[end] != b'"' {
                return None;
            }
            // Trimmed as the parser's `Number::Text` is.
            std::str::from_utf8(&quoted[..end]).ok()?.trim()
        }
        None => {
            let end = rest
                .iter()
                .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))?;
            let after = rest[end..].trim_ascii_start().first();
            if end == 0 || !matches!(after, Some(b',' | b'}')) {
                return None;
            }
            std::str::from_utf8(&rest[..end]).ok()?
        }
    };
    Some(text)
}

/// A non-negative number bounded by its integer digits: `lo ≤ value < lo + 1`, for a value
/// written as plain decimal digits (no sign, no exponent) below 2^52, where every integer and
/// its neighbours are exact in an `f64` and the parser's rounding moves a value by less than
/// a quarter.
#[derive(Clone, Copy)]
struct Bounds {
    lo: f64,
}

impl Bounds {
    fn of(text: &[u8]) -> Option<Self> {
        let mut bytes = text.iter().copied();
        let (mut lo, mut digits) = (0u64, 0);
        for b in bytes.by_ref() {
            match b {
                b'0'..=b'9' if digits < 16 => {
                    lo = lo * 10 + u64::from(b - b'0');
                    digits += 1;
                }
                b'.' => break,
                _ => return None,
            }
        }
        let fraction = bytes.all(|b| b.is_ascii_digit());
        (digits > 0 && fraction && lo < 1 << 52).then_some(Self { lo: lo as f64 })
    }

    /// Whether an event starting at `self` and lasting `dur` may overlap `gap`: `false` only
    /// when its end is at least a µs before the gap's start or its start a µs after the gap's
    /// end, a margin far wider than any rounding of these magnitudes.
    fn may_overlap(self, dur: Bounds, (gap_start, gap_end): (f64, f64)) -> bool {
        let latest_end = self.lo + 1.0 + dur.lo + 1.0;
        !(latest_end + 1.0 <= gap_start || self.lo >= gap_end + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::{Bounds, Sieve, overlap, parse_f64, value};

    fn must_parse(event: &str) -> bool {
        Sieve::new(&[(100.0, 200.0)]).must_parse(event.as_bytes())
    }

    #[test]
    fn only_metadata_and_complete_events_in_a_gap_are_parsed() {
        assert!(must_parse(
            r#"{"ph": "M", "name": "process_name", "pid": 1}"#
        ));
        assert!(!must_parse(
            r#"{"ph": "C", "name": "Xmem", "pid": 1, "ts": 150}"#
        ));
        assert!(!must_parse(r#"{"ph":"s","id":"X1","ts":150}"#));
        assert!(must_parse(
            r#"{"ph": "X", "pid": 1, "ts": "150.0", "dur": 20}"#
        ));
        assert!(must_parse(r#"{"ph": "X", "pid": 1, "ts": 90, "dur": 20}"#));
        assert!(!must_parse(r#"{"ph": "X", "pid": 1, "ts": 50, "dur": 20}"#));
        assert!(!must_parse(
            r#"{"ph": "X", "pid": 1, "ts": " 250 ", "dur": 20}"#
        ));
        // Enclosing the gap: context, not listed.
        assert!(!must_parse(
            r#"{"ph": "X", "pid": 1, "ts": 0, "dur": 1000}"#
        ));
    }

    #[test]
    fn an_event_overlaps_a_gap_by_more_than_nothing_and_encloses_it_only_over_twice_its_length() {
        let gap = (100.0, 200.0);
        // Ending at the gap's start, or starting at its end: no overlap.
        assert_eq!(overlap(80.0, 20.0, gap), None);
        assert_eq!(overlap(200.0, 5.0, gap), None);
        assert_eq!(overlap(190.0, 20.0, gap), Some(10.0));
        // Over the whole gap: listed up to twice the gap's length, context beyond it.
        assert_eq!(overlap(50.0, 200.0, gap), Some(100.0));
        assert_eq!(overlap(50.0, 201.0, gap), None);
        // Longer than that but starting inside the gap: it does not enclose it.
        assert_eq!(overlap(150.0, 1000.0, gap), Some(50.0));
    }

    #[test]
    fn a_key_written_twice_is_read_once_and_a_second_ph_refuses_the_event() {
        // The parser refuses an event with a key twice, so the first `ts` or `dur` decides,
        // and a second `ph` passes it over.
        assert!(!must_parse(
            r#"{"ph": "X", "ts": 50, "ts": 150, "dur": 20}"#
        ));
        assert!(!must_parse(r#"{"ph": "X", "dur": 1, "dur": 20, "ts": 90}"#));
        assert!(!must_parse(
            r#"{"ph": "X", "ph": "X", "ts": 150, "dur": 20}"#
        ));
        // `ph` read off the tail is not read again by the walk: a complete event without
        // `dur` is parsed.
        assert!(must_parse(r#"{"ts": 150, "ph": "X"}"#));
        // A string written last under another key is not the phase.
        assert!(must_parse(
            r#"{"ph": "X", "ts": 150, "dur": 20, "cat": "cpu_op"}"#
        ));
    }

    #[test]
    fn an_event_with_an_escaped_key_is_decided_by_its_patterns() {
        // Neither `"M"` nor `"X"` nor `\u`: passed over; `"M"`, or a `\u` that may spell a
        // phase: parsed; `"X"`: by its times.
        assert!(!must_parse(r#"{"a\\b": 1, "ph": "C", "ts": 150}"#));
        assert!(must_parse(r#"{"a\\b": 1, "ph": "M", "x": 1}"#));
        assert!(must_parse(r#"{"p\u0068": "C", "ts": 150}"#));
        assert!(!must_parse(
            r#"{"a\\b": 1, "ph": "X", "ts": 50, "dur": 20}"#
        ));
        assert!(must_parse(
            r#"{"a\\b": 1, "ph": "X", "ts": 150, "dur": 20}"#
        ));
    }

    #[test]
    fn times_the_bounds_cannot_settle_are_read_as_the_parser_reads_them() {
        // An exponent has no integer bounds: the value decides.
        assert!(!must_parse(r#"{"ph": "X", "ts": 5e1, "dur": 20}"#));
        assert!(must_parse(r#"{"ph": "X", "ts": 1.5e2, "dur": 20}"#));
        // Shorter than a µs, inside the gap: listed.
        assert!(must_parse(r#"{"ph": "X", "ts": 150, "dur": 0.5}"#));
        // Within the bounds' margin of the gap: 99.5 + 0.4 ends before it.
        assert!(!must_parse(r#"{"ph": "X", "ts": 99.5, "dur": 0.4}"#));
        // A number is read as serde_json reads it: 1736409590499237.872 is ...238.0 to
        // serde_json (Rust's parse: ...237.75), so the event starts at the gap's end.
        let gap_end = 1_736_409_590_499_238.0;
        let gaps = [(gap_end - 100.0, gap_end)];
        let mut sieve = Sieve::new(&gaps);
        assert!(!sieve.must_parse(br#"{"ph": "X", "ts": 1736409590499237.872, "dur": 0.5}"#));
        assert!(sieve.must_parse(br#"{"ph": "X", "ts": 1736409590499237.625, "dur": 0.5}"#));
    }

    #[test]
    fn the_top_level_members_decide_not_strings_inside_them() {
        // `args` and other values are never taken for `ph`, `ts` or `dur`, in any key order;
        // an event with a key twice is refused by the parser, so only its first one counts.
        assert!(!must_parse(r#"{"ph": "C", "name": "X", "ts": 150}"#));
        assert!(!must_parse(
            r#"{"args": {"ph": "M", "ts": 150}, "ph": "X", "ts": 50, "dur": 20}"#
        ));
        assert!(must_parse(
            r#"{"args": {"ts": 50, "x": "\"}"}, "dur": 20, "ph": "X", "ts": 150}"#
        ));
        assert!(!must_parse(r#"{"ph": "C", "ph": "M", "x": 1}"#));
        assert!(!must_parse(
            r#"{"ph": "X", "ts": 50, "dur": 20, "ts": 150}"#
        ));
        assert!(!must_parse(r#"{"pid": 1, "ts": 150}"#));
        // `ph` last: read off the tail, whatever comes before it.
        assert!(!must_parse(
            r#"{"name": "HBM", "ts": "150", "args": {"ph": "X"}, "ph": "C"}"#
        ));
        assert!(must_parse(
            r#"{"name": "k", "ts": "150", "dur": 1, "args": {}, "ph": "X"}"#
        ));
        assert!(!must_parse(
            r#"{"name": "k", "ts": "50", "dur": 1, "args": {}, "ph": "X"}"#
        ));
        assert!(must_parse(r#"{"name": "process_name", "ph": "M"}"#));
        // Bytes that are not an object's members go to the parser.
        assert!(must_parse(r#"{"pid": 1 "ph": "C"}"#));
    }

    #[test]
    fn what_the_bytes_cannot_prove_is_parsed() {
        // An escape could spell `X`, an escaped key `ts`; a value of another shape, or a
        // missing key leave it to the parser.
        assert!(must_parse(r#"{"ph": "\u0058", "ts": 50, "dur": 20}"#));
        assert!(must_parse(r#"{"ph": "X", "t\u0073": 50, "dur": 20}"#));
        assert!(must_parse(r#"{"ph": "X", "ts": [50], "dur": 20}"#));
        assert!(must_parse(r#"{"ph": "X", "ts": "5\"0", "dur": 20}"#));
        assert!(must_parse(r#"{"ph": "X", "dur": 20}"#));
        assert!(must_parse(r#"{"ph": "X", "ts": 50, "dur": true}"#));
    }

    #[test]
    fn the_integer_bounds_never_pass_over_an_event_that_overlaps() {
        // Times around a gap at torch_npu's magnitudes (µs since the epoch, three decimals),
        // stepped by a thousandth of a µs across the margins on both sides.
        let gap = (1_736_408_883_688_177.930, 1_736_408_883_688_277.125);
        let mut passed_over = 0;
        for start_ns in (-30_000_i64..30_000).step_by(7) {
            for (edge, dur) in [(gap.0, "1.5"), (gap.0, "0.000"), (gap.1, "12")] {
                let start = edge + start_ns as f64 / 1000.0;
                let ts = format!("{start:.3}");
                let (Some(bounds), Some(length)) =
                    (Bounds::of(ts.as_bytes()), Bounds::of(dur.as_bytes()))
                else {
                    panic!("{ts} {dur} are plain decimals");
                };
                let listed = overlap(
                    parse_f64(ts.as_bytes()).unwrap(),
                    parse_f64(dur.as_bytes()).unwrap(),
                    gap,
                )
                .is_some();
                if !bounds.may_overlap(length, gap) {
                    passed_over += 1;
                    assert!(!listed, "{ts} + {dur} overlaps {gap:?}");
                }
            }
        }
        assert!(passed_over > 1000, "{passed_over}");
        for text in [
            "-1",
            "1e3",
            "+1",
            "",
            ".5",
            "1.2.3",
            "12345678901234567",
            "123456789012345678901234567890",
            "5000000000000000",
            "4503599627370496",
        ] {
            assert!(Bounds::of(text.as_bytes()).is_none(), "{text}");
        }
        assert_eq!(Bounds::of(b"0012.50").map(|b| b.lo), Some(12.0));
        // Up to 2^52, exclusive.
        assert_eq!(
            Bounds::of(b"4503599627370495.5").map(|b| b.lo),
            Some(4503599627370495.0)
        );
    }

    #[test]
    fn values_are_read_as_the_parser_reads_them() {
        let ts = memchr::memmem::Finder::new(br#""ts""#);
        let read = |event: &str| value(&ts, event.as_bytes());
        assert_eq!(
            read(r#"{"ts": 1736408883688177.930}"#),
            Some(1736408883688177.930)
        );
        assert_eq!(
            read(r#"{"ts":"1736408883688177.930","dur":1}"#),
            Some(1736408883688177.930)
        );
        assert_eq!(read(r#"{"ts" : 12 }"#), Some(12.0));
        assert_eq!(read(r#"{"ts": 1e3}"#), Some(1000.0));
        assert_eq!(read(r#"{"ts": 12"#), None);
        assert_eq!(read(r#"{"ts": nope}"#), None);
        assert_eq!(read(r#"{"ts": 12 x}"#), None);
    }
}
