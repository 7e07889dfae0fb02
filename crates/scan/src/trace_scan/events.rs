//! The top-level events of a trace file, each passed as its bytes, read with the scanner that
//! judges the file (memory maps, the SIMD stages, the same grammar): one trace reader for verify
//! and for whatever reads events. Memory stays bounded: the bytes of the pieces are passed in
//! place, and only an event that a piece boundary cuts is copied (see [`MAX_EVENT`]).

use std::fs::File;

use super::{TraceScan, TraceScanner};

/// The longest event passed, in bytes; longer ones are counted in [`TraceEvents::too_long`],
/// so that memory stays bounded whatever the file holds.
pub const MAX_EVENT: usize = 64 << 20;

/// What [`scan_events`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEvents {
    /// The structural verdict on the file (events are passed up to where it ends or breaks).
    pub scan: TraceScan,
    /// Complete top-level events not passed: longer than [`MAX_EVENT`].
    pub too_long: u64,
}

/// Scans `file` as [`TraceScanner::scan_file`] does, passing the bytes of each complete
/// top-level event (from its first byte to its last: `{…}` for torch_npu's events) to
/// `on_event`, in file order. Events before a syntax error or a cut are passed; the verdict
/// says where and why the file ended.
pub fn scan_events(file: &File, mut on_event: impl FnMut(&[u8])) -> std::io::Result<TraceEvents> {
    let mut carry = Carry::default();
    let scan = TraceScanner::new()
        .recording_events()
        .scan_file_pieces(file, |scanner, piece| {
            carry.pass(scanner, piece, &mut on_event)
        })?;
    Ok(TraceEvents {
        scan,
        too_long: carry.too_long,
    })
}

/// The bytes kept from earlier pieces, where an event that the next pieces end may start.
#[derive(Debug, Default)]
struct Carry {
    /// The offset of the next piece.
    offset: u64,
    /// The offset of `bytes`: the end of the last event passed, or the start of the next
    /// piece once more than [`MAX_EVENT`] bytes went by without an event ending.
    base: u64,
    bytes: Vec<u8>,
    /// An event that starts before `base` ends later: it is too long.
    overflowed: bool,
    too_long: u64,
    /// An event put together from `bytes` and a piece.
    joined: Vec<u8>,
}

impl Carry {
    /// Passes the events that ended in `piece` (just fed to `scanner`).
    fn pass(&mut self, scanner: &mut TraceScanner, piece: &[u8], on_event: &mut impl FnMut(&[u8])) {
        let start = self.offset;
        let end = start + piece.len() as u64;
        let at = |offset: u64| (offset - start) as usize;
        let mut last_end = None;
        for (s, e) in scanner.take_events() {
            last_end = Some(e);
            if s >= start {
                on_event(&piece[at(s)..at(e)]);
            } else if self.overflowed || s < self.base || e - s > MAX_EVENT as u64 {
                self.too_long += 1;
            } else {
                self.joined.clear();
                self.joined
                    .extend_from_slice(&self.bytes[(s - self.base) as usize..]);
                self.joined.extend_from_slice(&piece[..at(e)]);
                on_event(&self.joined);
            }
        }
        match last_end {
            Some(e) => {
                self.bytes.clear();
                self.bytes.extend_from_slice(&piece[at(e)..]);
                self.base = e;
                self.overflowed = false;
            }
            None if self.overflowed || self.bytes.len() + piece.len() > MAX_EVENT => {
                self.bytes.clear();
                self.base = end;
                self.overflowed = true;
            }
            None => self.bytes.extend_from_slice(piece),
        }
        self.offset = end;
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::trace_scan::TraceState;

    /// The events `scan_events` passes for `doc`, and its verdict.
    fn events_of(doc: &[u8]) -> (Vec<Vec<u8>>, TraceEvents) {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(doc).expect("write");
        let mut events = Vec::new();
        let reopened = File::open(file.path()).expect("open");
        let found = scan_events(&reopened, |e| events.push(e.to_vec())).expect("scan");
        (events, found)
    }

    /// The top-level events of a valid array, by serde_json.
    fn serde_events(doc: &[u8]) -> Vec<Vec<u8>> {
        let values: Vec<serde_json::Value> = serde_json::from_slice(doc).expect("valid JSON");
        values
            .iter()
            .map(|v| serde_json::to_vec(v).expect("JSON"))
            .collect()
    }

    #[test]
    fn passes_each_event_whole_across_pieces_and_maps() {
        // Events of many lengths, so that the 256 KiB pieces and 4 MiB windows cut some; a
        // file large enough to be mapped.
        let mut doc = b"[".to_vec();
        let mut i = 0u64;
        while doc.len() < 20 << 20 {
            if i > 0 {
                doc.extend_from_slice(b", ");
            }
            let pad = "x".repeat((i * 7919 % 3000) as usize);
            let event = format!(
                r#"{{"ph": "X", "name": "op{i}", "ts": "{i}.5", "args": {{"pad": "{pad}\"", "n": [{i}, -1]}}}}"#
            );
            doc.extend_from_slice(event.as_bytes());
            i += 1;
        }
        doc.push(b']');
        let (events, found) = events_of(&doc);
        assert_eq!(found.scan.state, TraceState::Complete);
        assert_eq!(found.scan.events, i);
        assert_eq!(found.too_long, 0);
        assert_eq!(events.len() as u64, i);
        let reparsed: Vec<Vec<u8>> = events
            .iter()
            .map(|e| {
                let v: serde_json::Value = serde_json::from_slice(e).expect("an event");
                serde_json::to_vec(&v).expect("JSON")
            })
            .collect();
        assert_eq!(reparsed, serde_events(&doc));
    }

    #[test]
    fn passes_the_events_before_a_cut_or_an_error() {
        let doc = br#"[{"a": 1}, {"b": [2, {"c": "}"}]}, 3, "s", {"d": "#;
        let (events, found) = events_of(doc);
        assert_eq!(
            events,
            [
                &br#"{"a": 1}"#[..],
                br#"{"b": [2, {"c": "}"}]}"#,
                b"3",
                br#""s""#
            ]
        );
        let event_start = doc.len() as u64 - 6;
        assert_eq!(found.scan.state, TraceState::CutMidEvent { event_start });
        let doc = br#"[{"a": 1}, {"b": 2,}, {"c": 3}]"#;
        let (events, found) = events_of(doc);
        assert_eq!(events, [&br#"{"a": 1}"#[..]]);
        assert!(matches!(found.scan.state, TraceState::Malformed { .. }));
    }

    #[test]
    fn an_event_longer_than_the_limit_is_counted_not_passed() {
        let long = "y".repeat(MAX_EVENT + 1000);
        let doc = format!(r#"[{{"a": 1}}, {{"long": "{long}"}}, {{"b": 2}}]"#);
        let (events, found) = events_of(doc.as_bytes());
        // (Compared as lengths: a failure does not print the long event.)
        let lens: Vec<usize> = events.iter().map(Vec::len).collect();
        assert_eq!(lens, [8, 8]);
        assert_eq!(events, [&br#"{"a": 1}"#[..], br#"{"b": 2}"#]);
        assert_eq!(found.too_long, 1);
        assert_eq!(found.scan.state, TraceState::Complete);
    }
}
