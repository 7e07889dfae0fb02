//! The trace scanner against serde_json: on the real sample, on its cut variants, on every
//! prefix cut of generated traces, and on single-byte mutations.

mod common;

use proptest::prelude::*;
use serde::de::IgnoredAny;
use serde_json::Value;

use npuprof_verify::trace_scan::{TraceScanner, TraceState};

fn serde_valid(bytes: &[u8]) -> bool {
    serde_json::from_slice::<IgnoredAny>(bytes).is_ok()
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
    let doc = common::trace_bytes();
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
    let doc = common::trace_bytes();
    let append = common::device_append_offset(&doc);
    // Every cut around the host/device boundary and at the end, and a sweep over the file.
    let mut cuts: Vec<usize> =
        (append.saturating_sub(100)..(append + 100).min(doc.len())).collect();
    cuts.extend(doc.len().saturating_sub(40)..=doc.len());
    cuts.extend((0..doc.len()).step_by(16411));
    for cut in cuts {
        check_prefix(&doc, cut);
    }
    let host = common::trace_host_only();
    let scan = TraceScanner::scan_bytes(&host);
    assert_eq!(
        scan.state,
        TraceState::Unterminated {
            trailing_comma: false
        }
    );
    assert_eq!(scan.last_event_end, host.len() as u64);
    let cut = common::trace_cut_mid_event();
    let scan = TraceScanner::scan_bytes(&cut);
    assert_eq!(
        scan.state,
        TraceState::CutMidEvent {
            event_start: append as u64 + 1
        }
    );
    assert_eq!(scan.bytes, cut.len() as u64);
    let comma = common::trace_trailing_comma();
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
    fn every_prefix_cut_is_classified(doc in trace("[a-zA-Z0-9 :\"\\\\/_.-]{0,10}")) {
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

    /// After one mutated byte the scanner accepts exactly what serde_json accepts (strings
    /// without backslashes: the scanner does not validate escape sequences).
    #[test]
    fn single_byte_mutations_agree_with_serde(
        doc in trace("[a-zA-Z0-9 :\"/_.-]{0,10}").prop_filter("no escapes", |d| !d.contains(&b'\\')),
        pos in any::<prop::sample::Index>(),
        op in 0u8..3,
        byte in prop::sample::select(b"{}[],:\" 0123456789.-+eEaflnrstu".to_vec()),
    ) {
        let mut m = doc;
        let i = pos.index(m.len() + 1);
        match op {
            0 => m.insert(i, byte),
            1 if i < m.len() => m[i] = byte,
            _ if i < m.len() => { m.remove(i); }
            _ => m.push(byte),
        }
        let scan = TraceScanner::scan_bytes(&m);
        let ours = matches!(scan.state, TraceState::Complete | TraceState::NotAnArray);
        prop_assert_eq!(ours, serde_valid(&m), "state {:?} for {:?}", scan.state, String::from_utf8_lossy(&m));
    }
}
