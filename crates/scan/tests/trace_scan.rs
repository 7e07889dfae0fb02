//! The trace scanner against serde_json: on the real sample, on its cut variants, on every
//! prefix cut of generated traces, and on single-byte mutations; and its engines against each
//! other (differential tests): the SIMD and portable block scanners must give exactly the
//! reference scanner's result (verdict, error offset and reason, events, process names) on every
//! input and however the input is split into chunks.

#[path = "../../verify/tests/common/samples.rs"]
mod samples;

use proptest::prelude::*;
use serde::de::IgnoredAny;
use serde_json::Value;

use npuprof_scan::trace_scan::{Engine, TraceScan, TraceScanner, TraceState};

fn serde_valid(bytes: &[u8]) -> bool {
    serde_json::from_slice::<IgnoredAny>(bytes).is_ok()
}

/// Valid JSON text: UTF-8 (serde_json does not check it in strings it ignores) and valid to
/// serde_json.
fn json_valid(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok() && serde_valid(bytes)
}

/// Scans `doc` with `engine`, fed in chunks of `size` bytes; with where each complete top-level
/// event lies.
fn scan_recording(doc: &[u8], engine: Engine, size: usize) -> (TraceScan, Vec<(u64, u64)>) {
    let mut s = TraceScanner::with_engine(engine).recording_events();
    let mut spans = Vec::new();
    for chunk in doc.chunks(size.max(1)) {
        s.feed(chunk);
        spans.extend(s.take_events());
    }
    (s.finish(), spans)
}

/// Every engine, whole and in chunks of each size, gives the reference's whole-document result
/// (which is returned) and finds the top-level events where the reference does.
fn check_engines(doc: &[u8], sizes: &[usize]) -> TraceScan {
    let want = scan_recording(doc, Engine::Reference, doc.len());
    assert_eq!(want.1.len() as u64, want.0.events);
    for engine in [Engine::Simd, Engine::Portable, Engine::Reference] {
        for &size in sizes.iter().chain([doc.len()].iter()) {
            let got = scan_recording(doc, engine, size);
            assert_eq!(
                got,
                want,
                "{engine:?} in chunks of {size} on {:?}",
                String::from_utf8_lossy(&doc[..doc.len().min(300)])
            );
        }
    }
    want.0
}

/// The reference accepts exactly valid JSON.
fn check_validity(doc: &[u8], scan: &TraceScan) {
    let ours = matches!(scan.state, TraceState::Complete | TraceState::NotAnArray);
    assert_eq!(
        ours,
        json_valid(doc),
        "state {:?} for {:?}",
        scan.state,
        String::from_utf8_lossy(doc)
    );
}

/// The classification of a strict prefix of a valid trace, decided with serde_json alone:
/// closing it with `]` (after dropping a trailing comma) gives valid JSON exactly when the cut
/// fell between events.
fn oracle(prefix: &[u8]) -> TraceState {
    let trimmed = prefix.trim_ascii_end();
    if trimmed.trim_ascii().is_empty() {
        return TraceState::Empty;
    }
    let mut closed = trimmed.to_vec();
    closed.push(b']');
    if serde_valid(&closed) {
        return TraceState::Unterminated {
            trailing_comma: false,
        };
    }
    if let Some(without) = trimmed.strip_suffix(b",") {
        let mut closed = without.to_vec();
        closed.push(b']');
        if serde_valid(&closed) {
            return TraceState::Unterminated {
                trailing_comma: true,
            };
        }
    }
    TraceState::CutMidEvent { event_start: 0 }
}

/// Compares with the oracle, ignoring the event start offset of cut events.
fn same_kind(got: &TraceState, want: &TraceState) -> bool {
    match (got, want) {
        (TraceState::CutMidEvent { .. }, TraceState::CutMidEvent { .. }) => true,
        _ => got == want,
    }
}

/// `args.name` of every process_name metadata event, via serde_json.
fn serde_process_names(doc: &[u8]) -> Vec<String> {
    let events: Vec<Value> = serde_json::from_slice(doc).unwrap_or_default();
    let mut names: Vec<String> = Vec::new();
    for e in &events {
        if e.get("ph").and_then(Value::as_str) == Some("M")
            && e.get("name").and_then(Value::as_str) == Some("process_name")
            && let Some(n) = e.pointer("/args/name").and_then(Value::as_str)
            && !names.iter().any(|x| x == n)
        {
            names.push(n.to_owned());
        }
    }
    names
}

fn check_prefix(doc: &[u8], cut: usize) {
    let prefix = &doc[..cut];
    let got = TraceScanner::scan_bytes(prefix);
    if cut == doc.len() {
        assert_eq!(got.state, TraceState::Complete);
        return;
    }
    assert!(!serde_valid(prefix) || prefix.trim_ascii().is_empty());
    let want = oracle(prefix);
    assert!(
        same_kind(&got.state, &want),
        "cut at {cut}: got {:?}, want {:?}; tail {:?}",
        got.state,
        want,
        String::from_utf8_lossy(&prefix[cut.saturating_sub(40)..])
    );
}

#[test]
fn real_sample_matches_serde_json() {
    let doc = samples::trace_bytes();
    assert!(serde_valid(&doc));
    let scan = TraceScanner::scan_bytes(&doc);
    assert_eq!(scan.state, TraceState::Complete);
    let events: Vec<IgnoredAny> = serde_json::from_slice(&doc).unwrap_or_default();
    assert_eq!(scan.events, events.len() as u64);
    assert_eq!(scan.events, 3670);
    assert_eq!(scan.last_event_end, doc.len() as u64 - 1);
    assert_eq!(scan.process_names, serde_process_names(&doc));
    assert_eq!(
        scan.process_names,
        ["Python", "Ascend Hardware", "CANN", "Overlap Analysis"]
    );
}

#[test]
fn real_sample_cut_variants() {
    let doc = samples::trace_bytes();
    let append = samples::device_append_offset(&doc);
    // Every cut around the host/device boundary and at the end, and a sweep over the file.
    let mut cuts: Vec<usize> =
        (append.saturating_sub(100)..(append + 100).min(doc.len())).collect();
    cuts.extend(doc.len().saturating_sub(40)..=doc.len());
    cuts.extend((0..doc.len()).step_by(16411));
    for cut in cuts {
        check_prefix(&doc, cut);
    }
    let host = samples::trace_host_only();
    let scan = TraceScanner::scan_bytes(&host);
    assert_eq!(
        scan.state,
        TraceState::Unterminated {
            trailing_comma: false
        }
    );
    assert_eq!(scan.last_event_end, host.len() as u64);
    let cut = samples::trace_cut_mid_event();
    let scan = TraceScanner::scan_bytes(&cut);
    assert_eq!(
        scan.state,
        TraceState::CutMidEvent {
            event_start: append as u64 + 1
        }
    );
    assert_eq!(scan.bytes, cut.len() as u64);
    let comma = samples::trace_trailing_comma();
    assert!(!serde_valid(&comma));
    let scan = TraceScanner::scan_bytes(&comma);
    assert_eq!(
        scan.state,
        TraceState::TrailingCommaClose {
            comma: comma.len() as u64 - 2
        }
    );
}

#[test]
fn sixty_four_bit_ids_and_string_ts_are_normal() {
    let doc = br#"[{"ph": "s", "id": 18446744073709551615, "pid": 4376751100, "ts": "1704161511431704.105", "dur": 1.5e3}]"#;
    assert_eq!(TraceScanner::scan_bytes(doc).state, TraceState::Complete);
}

fn leaf(strings: &'static str) -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1.0e6f64..1.0e6).prop_map(Value::from),
        strings.prop_map(Value::from),
    ]
}

fn value(strings: &'static str) -> impl Strategy<Value = Value> {
    leaf(strings).prop_recursive(3, 16, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-m]{1,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// One event's text: either a generic event or a process_name metadata event with its keys
/// in a random order.
fn event(strings: &'static str) -> impl Strategy<Value = String> {
    let generic = prop::collection::vec(("[a-m]{1,4}", value(strings)), 0..5).prop_map(|kv| {
        let mut seen = std::collections::BTreeSet::new();
        let fields: Vec<String> = kv
            .into_iter()
            .filter(|(k, _)| seen.insert(k.clone()))
            .map(|(k, v)| format!("{}: {}", json(&Value::from(k)), json(&v)))
            .collect();
        format!("{{{}}}", fields.join(", "))
    });
    let names = prop_oneof![
        Just("Python".to_owned()),
        Just("CANN".to_owned()),
        Just("Ascend Hardware".to_owned()),
        strings.prop_map(|s| s),
    ];
    let meta = (names, any::<u64>(), prop::bool::ANY)
        .prop_flat_map(|(name, pid, is_meta)| {
            let fields = vec![
                format!("\"ph\": \"{}\"", if is_meta { "M" } else { "X" }),
                "\"name\": \"process_name\"".to_owned(),
                format!("\"pid\": {pid}"),
                format!("\"args\": {{\"name\": {}}}", json(&Value::from(name))),
            ];
            Just(fields).prop_shuffle()
        })
        .prop_map(|fields| format!("{{{}}}", fields.join(", ")));
    prop_oneof![3 => generic, 1 => meta]
}

fn trace(strings: &'static str) -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(event(strings), 0..8),
        prop_oneof![Just(","), Just(", "), Just(",\n  ")],
        prop_oneof![Just(""), Just("\n")],
    )
        .prop_map(|(events, sep, pad)| format!("{pad}[{}]{pad}", events.join(sep)).into_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    /// Every prefix cut of a small valid trace is classified as serde_json implies.
    #[test]
    fn every_prefix_cut_is_classified(doc in trace(STRINGS)) {
        prop_assert!(serde_valid(&doc));
        let full = TraceScanner::scan_bytes(&doc);
        let events: Vec<IgnoredAny> = serde_json::from_slice(&doc).unwrap_or_default();
        prop_assert_eq!(full.events, events.len() as u64);
        prop_assert_eq!(&full.process_names, &serde_process_names(&doc));
        let end = doc.trim_ascii_end().len();
        for cut in 0..end {
            check_prefix(&doc, cut);
        }
        // Chunked feeding gives the same answer.
        let mut s = TraceScanner::new();
        for chunk in doc.chunks(7) {
            s.feed(chunk);
        }
        prop_assert_eq!(s.finish(), full);
    }

    /// After one mutated byte the scanner accepts exactly what serde_json accepts, and every
    /// engine agrees with the reference on the verdict, the offset and the facts.
    #[test]
    fn single_byte_mutations_agree_with_serde(
        doc in trace(STRINGS),
        pos in any::<prop::sample::Index>(),
        op in 0u8..3,
        byte in prop::sample::select(MUTATION_BYTES.to_vec()),
    ) {
        let at = pos.index(doc.len() + 1);
        let m = mutated(doc, at, op, byte);
        let scan = check_engines(&m, &[1, 3, 64]);
        check_validity(&m, &scan);
        check_segments(&m, &[8, 50]);
    }
}

/// `doc` with `byte` inserted (`op` 0), written (1) or the byte removed (2) at index `i` (at
/// the end, `byte` is appended).
fn mutated(mut doc: Vec<u8>, i: usize, op: u8, byte: u8) -> Vec<u8> {
    match op {
        0 => doc.insert(i, byte),
        1 if i < doc.len() => doc[i] = byte,
        _ if i < doc.len() => {
            doc.remove(i);
        }
        _ => doc.push(byte),
    }
    doc
}

/// A trace that repeats a few events many times, as torch_npu's traces do, so that the block
/// scanner takes most of them by the shapes it learnt.
fn repeated_trace(strings: &'static str) -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(event(strings), 1..4),
        prop::collection::vec(any::<prop::sample::Index>(), 8..80),
    )
        .prop_map(|(events, picks)| {
            let seq: Vec<&str> = picks.iter().map(|i| i.get(&events).as_str()).collect();
            format!("[{}]", seq.join(", ")).into_bytes()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Events taken by their shape are judged exactly as the reference judges them: on the valid
    /// trace, and after one byte is changed, inserted or removed in a later copy of an event.
    #[test]
    fn repeated_events_with_one_change_agree_with_the_reference(
        doc in repeated_trace(STRINGS),
        pos in any::<prop::sample::Index>(),
        op in 0u8..3,
        byte in prop::sample::select(MUTATION_BYTES.to_vec()),
    ) {
        let scan = check_engines(&doc, &[64, 1000]);
        prop_assert_eq!(scan.state, TraceState::Complete);
        prop_assert_eq!(&scan.process_names, &serde_process_names(&doc));
        // In the last two thirds: after the first copies taught their shapes.
        let at = doc.len() / 3 + pos.index(doc.len() - doc.len() / 3);
        let m = mutated(doc, at, op, byte);
        let scan = check_engines(&m, &[64, 1000]);
        check_validity(&m, &scan);
    }
}

/// String contents for generated traces: serde_json writes `"`, `\`, newlines, tabs and control
/// bytes as escapes (`\"`, `\\`, `\n`, `\t`, `\u0001`) and the rest as UTF-8 of 1 to 4 bytes.
const STRINGS: &str = "[a-zA-Z0-9 :\"\\\\/_.\n\t\u{1}é€😀-]{0,10}";

/// Bytes a mutation inserts or writes: structure, number and literal bytes, escapes, control
/// bytes, and UTF-8 lead, continuation and invalid bytes.
const MUTATION_BYTES: &[u8] =
    b"{}[],:\" 0123456789.-+eEaflnrstu\\/bAF\x01\n\x1f\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\xff\x80";

/// Snippets that are hard at a block or chunk boundary, each placed at every offset around a
/// 64-byte boundary inside an otherwise valid trace (and a broken variant of each).
const EDGE_SNIPPETS: &[&str] = &[
    r#""a\"b""#,
    r#""\\""#,
    r#""\\\"""#,
    r#""\\\\\\\\""#,
    r#""x\\\\\"\\\\""#,
    r#""\u00e9\u20AC""#,
    r#""é€😀""#,
    r#""\/\b\f\n\r\t""#,
    "1704161511431704",
    "-0.5e-3",
    "true",
    "null",
    r#"{"name": "process_name", "ph": "M", "args": {"name": "Ascend Hardware"}}"#,
];

/// Ways to break a snippet: a bad escape, a raw control byte, bad UTF-8 and a cut sequence,
/// a bad token.
fn broken(snippet: &str) -> Vec<Vec<u8>> {
    let s = snippet.as_bytes();
    let mid = s.len() / 2;
    let mut out = Vec::new();
    for insert in [
        &b"\\x"[..],
        b"\\u12G4",
        b"\n",
        b"\xc3(",
        b"\xe2\x82",
        b"\xff",
        b"\\",
    ] {
        let mut m = s.to_vec();
        m.splice(mid..mid, insert.iter().copied());
        out.push(m);
    }
    out
}

/// `snippet` as the value of an event's field, with `pad` bytes of padding before it in a
/// string (so that every snippet byte meets the 64-byte boundaries).
fn placed(snippet: &[u8], pad: usize) -> Vec<u8> {
    let mut doc = br#"[{"ph": "X", "pad": ""#.to_vec();
    doc.extend(std::iter::repeat_n(b'p', pad));
    doc.extend_from_slice(br#"", "v": "#);
    doc.extend_from_slice(snippet);
    doc.extend_from_slice(br#"}, {"ph": "M", "name": "process_name", "args": {"name": "CANN"}}]"#);
    doc
}

#[test]
fn engines_agree_at_block_boundaries() {
    for snippet in EDGE_SNIPPETS {
        let variants = std::iter::once(snippet.as_bytes().to_vec()).chain(broken(snippet));
        for (n, s) in variants.enumerate() {
            for pad in 0..130 {
                let doc = placed(&s, pad);
                let scan = check_engines(&doc, &[64, 1 + pad % 67]);
                check_validity(&doc, &scan);
                if n == 0 {
                    assert_eq!(scan.state, TraceState::Complete, "{snippet} at {pad}");
                    assert_eq!(scan.process_names, ["CANN"]);
                }
            }
        }
    }
}

#[test]
fn engines_agree_on_every_split_of_escape_runs() {
    // Runs of 0..=9 backslashes before a quote, then more text: every chunk split point.
    for run in 0..10 {
        let mut doc = br#"[{"k": "ab"#.to_vec();
        doc.extend(std::iter::repeat_n(b'\\', run));
        doc.extend_from_slice(r#"", "é": "\u00e9x"}, 1]"#.as_bytes());
        let want = check_engines(&doc, &[1, 2, 63, 64, 65]);
        check_validity(&doc, &want);
        for cut in 1..doc.len() {
            let mut s = TraceScanner::with_engine(Engine::Simd);
            s.feed(&doc[..cut]);
            s.feed(&doc[cut..]);
            assert_eq!(s.finish(), want, "{run} backslashes, split at {cut}");
        }
    }
}

#[test]
fn error_reasons_and_offsets() {
    let cases: [(&[u8], u64, &str); 7] = [
        (br#"["a\qb"]"#, 4, "invalid escape sequence"),
        (br#"["\u12"]"#, 6, "invalid escape sequence"),
        (b"[\"a\tb\"]", 3, "control character in string"),
        (b"[\"a\xc3(\"]", 3, "invalid UTF-8"),
        (b"[\xc3\xa9]", 1, "unexpected byte"),
        (b"[1\xff]", 2, "invalid UTF-8"),
        (b"[tru ]", 1, "invalid number or literal"),
    ];
    for (doc, offset, reason) in cases {
        let scan = check_engines(doc, &[1, 2]);
        assert_eq!(
            scan.state,
            TraceState::Malformed { offset, reason },
            "{:?}",
            String::from_utf8_lossy(doc)
        );
    }
}

/// A large trace: `events` repeated until it passes `min_len` bytes (several 64 KiB pieces).
fn large(events: &[String], min_len: usize) -> Vec<u8> {
    let mut doc = b"[".to_vec();
    let mut i = 0;
    while doc.len() < min_len {
        if i > 0 {
            doc.extend_from_slice(b", ");
        }
        doc.extend_from_slice(events[i % events.len()].as_bytes());
        i += 1;
    }
    doc.push(b']');
    doc
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Large generated traces (over 200 KB, several pieces of the block scanner), valid and
    /// with one mutated byte anywhere: every engine and chunking gives the reference's result.
    #[test]
    fn engines_agree_on_large_inputs(
        events in prop::collection::vec(event(STRINGS), 1..6),
        pos in any::<prop::sample::Index>(),
        byte in prop::sample::select(MUTATION_BYTES.to_vec()),
    ) {
        let doc = large(&events, 200_000);
        let scan = check_engines(&doc, &[4096, 65_537]);
        prop_assert_eq!(&scan.state, &TraceState::Complete);
        prop_assert_eq!(&scan.process_names, &serde_process_names(&doc));
        check_segments(&doc, &[4096, 65_537]);
        let mut m = doc;
        let i = pos.index(m.len());
        m[i] = byte;
        let scan = check_engines(&m, &[4096, 65_537]);
        check_validity(&m, &scan);
        check_segments(&m, &[4096, 65_537]);
    }
}

/// Scans `doc` written to a file with [`TraceScanner::scan_file`] (memory maps for a large
/// file, then reads) and checks it against the scan of the bytes read from memory; returns the
/// file's scan.
fn check_file(doc: &[u8]) -> TraceScan {
    let mut file = tempfile::tempfile().expect("temp file");
    std::io::Write::write_all(&mut file, doc).expect("write");
    std::io::Seek::rewind(&mut file).expect("rewind");
    let mut seen = 0;
    let got = TraceScanner::scan_file(&file, |n| seen += n).expect("scan");
    let want = TraceScanner::scan_reader(doc, |_| {}).expect("scan");
    assert_eq!(got, want);
    // Progress reaches the end unless the scan stopped at an error.
    if matches!(got.state, TraceState::Complete) {
        assert_eq!(seen, doc.len() as u64);
    }
    got
}

/// Scans `doc` written to a file in segments of each of `sizes` bytes
/// ([`TraceScanner::scan_file_in_segments`]) and checks the result against the one-pass scan
/// of the bytes; the progress reported never passes the file's length, and reaches it for a
/// valid trace.
fn check_segments(doc: &[u8], sizes: &[u64]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let mut file = tempfile::tempfile().expect("temp file");
    std::io::Write::write_all(&mut file, doc).expect("write");
    let want = TraceScanner::scan_reader(doc, |_| {}).expect("scan");
    for &size in sizes {
        // As opened: the one-pass fallback reads from the file's offset.
        std::io::Seek::rewind(&mut file).expect("rewind");
        let seen = AtomicU64::new(0);
        let got = TraceScanner::scan_file_in_segments(&file, size, |n| {
            seen.fetch_add(n, Ordering::Relaxed);
        })
        .expect("scan");
        assert_eq!(got, want, "segments of {size}");
        let seen = seen.into_inner();
        assert!(seen <= doc.len() as u64, "progress {seen} of {}", doc.len());
        if got.state == TraceState::Complete {
            // Also when a join failed and the file was scanned again in one pass.
            assert_eq!(seen, doc.len() as u64, "progress in segments of {size}");
        }
    }
}

#[test]
fn segments_join_only_at_top_level_events() {
    // `},{` inside strings and in nested arrays of objects, at every distance from a boundary.
    let events = [
        r#"{"name": "a},{b", "args": {"list": [{"x": 1},{"y": 2}]}}"#,
        r#"{"ph": "M", "name": "process_name", "args": {"name": "CANN"}}"#,
        r#"{"name": "},\n{", "ts": "1"}"#,
    ];
    let events: Vec<String> = events.iter().map(|e| (*e).to_owned()).collect();
    let doc = large(&events, 3000);
    check_segments(&doc, &(40..140).collect::<Vec<_>>());
    // Cut, unterminated, with a trailing comma close, broken late: one-pass results.
    for variant in [
        doc[..doc.len() - 1].to_vec(),
        doc[..doc.len() - 10].to_vec(),
        [&doc[..doc.len() - 1], b",]"].concat(),
        [&doc[..doc.len() - 1], b", {\"x\": tru}]"].concat(),
    ] {
        check_segments(&variant, &[50, 97, 400]);
    }
}

/// A real trace repeated past 20 MB (several mapped windows and a read tail), whole, with a
/// byte changed in a late window, and cut mid-event: the file scan (through maps) gives the
/// byte scan's result.
#[test]
fn large_files_read_through_maps_agree_with_reads() {
    let sample = samples::trace_bytes();
    let events = sample
        .trim_ascii()
        .strip_prefix(b"[")
        .and_then(|s| s.strip_suffix(b"]"))
        .expect("an array");
    let mut doc = b"[".to_vec();
    while doc.len() < 20_500_000 {
        if doc.len() > 1 {
            doc.extend_from_slice(b",\n");
        }
        doc.extend_from_slice(events);
    }
    doc.push(b']');
    assert_eq!(check_file(&doc).state, TraceState::Complete);
    // A digit in a late window turned into a letter: an error at that byte.
    let at = 18_000_000
        + doc[18_000_000..]
            .iter()
            .position(u8::is_ascii_digit)
            .expect("a digit");
    let mut broken = doc.clone();
    broken[at] = b'x';
    let scan = check_file(&broken);
    assert!(
        matches!(scan.state, TraceState::Malformed { offset, .. } if offset == at as u64),
        "{:?}",
        scan.state
    );
    // Cut in the middle of an event in the read tail.
    let scan = check_file(&doc[..doc.len() - 1000]);
    assert!(
        !matches!(scan.state, TraceState::Complete),
        "{:?}",
        scan.state
    );
    // In segments (mapped from inside a page): the same results.
    check_segments(&doc, &[3_000_001, 8 << 20]);
    check_segments(&broken, &[3_000_001]);
    check_segments(&doc[..doc.len() - 1000], &[3_000_001]);
}
