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

use memchr::memmem::Finder;

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
    pub(crate) fn must_parse(&self, event: &[u8]) -> bool {
        if self.unicode_escape.find(event).is_some() || self.metadata.find(event).is_some() {
            return true;
        }
        if self.complete.find(event).is_none() {
            return false;
        }
        match (value(&self.ts, event), value(&self.dur, event)) {
            (Some(start), Some(dur)) => self
                .gaps
                .iter()
                .any(|&gap| overlap(start, dur, gap).is_some()),
            _ => true,
        }
    }
}

/// The number after the only occurrence of the key `finder` looks for (`"ts": 12.5` or
/// `"ts": "12.5"`); `None` when the key is absent or repeated, or its value is anything else.
fn value(finder: &Finder<'_>, event: &[u8]) -> Option<f64> {
    let mut found = finder.find_iter(event);
    let at = found.next()?;
    if found.next().is_some() {
        return None;
    }
    let rest = event[at + finder.needle().len()..].trim_ascii_start();
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
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{Sieve, value};

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
    fn what_the_bytes_cannot_prove_is_parsed() {
        // An escape could spell `X`; a key twice (also inside `args`), a value of another
        // shape, or a missing key leave it to the parser.
        assert!(must_parse(r#"{"ph": "\u0058", "ts": 50, "dur": 20}"#));
        assert!(must_parse(
            r#"{"ph": "X", "ts": 50, "dur": 20, "args": {"ts": 1}}"#
        ));
        assert!(must_parse(r#"{"ph": "X", "ts": [50], "dur": 20}"#));
        assert!(must_parse(r#"{"ph": "X", "ts": "5\"0", "dur": 20}"#));
        assert!(must_parse(r#"{"ph": "X", "dur": 20}"#));
        assert!(must_parse(r#"{"ph": "C", "name": "X", "ts": 50}"#));
        assert!(must_parse(r#"{"ph": "X", "ts": 50, "dur": true}"#));
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
    }
}
