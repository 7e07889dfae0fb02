//! What the host ran during the largest gaps of the device timeline: the `Python` and `CANN`
//! processes' complete events (`"ph":"X"`) of `trace_view.json` that overlap each gap (not
//! those that merely enclose it, see [`ENCLOSING`], nor Python call frames), read in
//! one pass of the scan engine that verify judges the file with ([`scan_events`]: memory maps,
//! SIMD structural scan; one event in memory at a time, per gap at most [`HOST_KEPT`] events per
//! process, of at most [`MAX_PROCESSES`] processes). `ts` is on the clock of
//! kernel_details.csv's `Start Time(us)`, where the gaps are measured. A db export's host calls
//! (`PYTORCH_API`, `CANN_API`) are read the same way from its profiler database
//! ([`during_gaps_db`]), on the clock of its `TASK` rows.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use npuprof_scan::trace_scan::{MAX_EVENT, TraceState, scan_events};
use serde::de::{Deserializer, IgnoredAny, Visitor};
use serde::{Deserialize, Serialize};

use crate::profile::Gap;

/// The timeline file of a run's output directory.
pub const TRACE_VIEW: &str = "trace_view.json";

/// The host processes of a torch_npu trace: Python operators and CANN API calls (the others,
/// `Ascend Hardware`, `HCCL`, `Overlap Analysis`, …, are the device's).
pub const HOST_PROCESSES: [&str; 2] = ["Python", "CANN"];

/// Host event categories not listed: the Python call frames `with_stack` records around the
/// operators (the operators, their queueing and the CANN calls say what ran).
pub const FRAME_CATEGORIES: [&str; 1] = ["python_function"];

/// Host events kept per gap and process (the longest overlaps).
pub const HOST_KEPT: usize = 3;

/// An event that spans a whole gap and lasts more than this many times the gap encloses it (a
/// forward, the `ProfilerStep#N` range, the Python stack around it): context, not what filled
/// the gap, so it is not listed.
pub const ENCLOSING: f64 = 2.0;

/// Processes followed per gap before their names are known (memory bound).
pub const MAX_PROCESSES: usize = 64;

/// One host event overlapping a gap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostEvent {
    /// Its process (`Python`, `CANN`).
    pub process: String,
    /// The event's name (an operator, an API call).
    pub name: String,
    /// How much of the gap it covers (µs).
    pub overlap_us: f64,
}

/// A string borrowed from the event's bytes when it holds no escape.
struct Text<'a>(Cow<'a, str>);

impl std::ops::Deref for Text<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Str<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Str<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(Str(std::marker::PhantomData))
    }
}

/// A number torch_npu writes as a JSON number or a string (`ts`: `"1736408883688177.930"`).
enum Number<'a> {
    Float(f64),
    Text(Text<'a>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Number<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Num<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Num<'a> {
            type Value = Number<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Number<'a>, E> {
                Ok(Number::Float(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Number<'a>, E> {
                Ok(Number::Float(v as f64))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Number<'a>, E> {
                Ok(Number::Float(v as f64))
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Number<'a>, E> {
                Ok(Number::Text(Text(Cow::Borrowed(v))))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Number<'a>, E> {
                Ok(Number::Text(Text(Cow::Owned(v.to_owned()))))
            }
        }
        d.deserialize_any(Num(std::marker::PhantomData))
    }
}

impl Number<'_> {
    fn value(&self) -> Option<f64> {
        match self {
            Number::Float(v) => Some(*v),
            Number::Text(s) => s.trim().parse().ok(),
        }
    }
}

/// A process id, a number or a string.
#[derive(Deserialize, PartialEq, Eq, PartialOrd, Ord, Clone)]
#[serde(untagged)]
enum Pid {
    Int(i64),
    Text(String),
}

/// `args` as far as a `process_name` event goes: its `name`.
#[derive(Deserialize)]
struct Args {
    name: Option<String>,
}

/// The fields of one event read here; the rest is skipped.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow)]
    ph: Option<Text<'a>>,
    #[serde(borrow)]
    cat: Option<Text<'a>>,
    #[serde(borrow)]
    name: Option<Text<'a>>,
    pid: Option<Pid>,
    #[serde(borrow)]
    ts: Option<Number<'a>>,
    #[serde(borrow)]
    dur: Option<Number<'a>>,
}

/// What a `process_name` metadata event adds: `args.name` (read only from such events, so that
/// no other event's `args` is buffered).
#[derive(Deserialize)]
struct Metadata {
    #[serde(default, deserialize_with = "args_name")]
    args: Option<String>,
}

/// `args.name` when `args` is an object holding a string `name`; anything else is skipped.
fn args_name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Maybe {
        Args(Args),
        Other(IgnoredAny),
    }
    Ok(match Maybe::deserialize(d)? {
        Maybe::Args(a) => a.name,
        Maybe::Other(_) => None,
    })
}

/// What the pass keeps: process names, and per gap the candidates of each process.
struct Collect<'a> {
    gaps: &'a [(f64, f64)],
    names: BTreeMap<Pid, String>,
    per_gap: Vec<BTreeMap<Pid, Vec<(String, f64)>>>,
}

impl Collect<'_> {
    fn is_host(&self, pid: &Pid) -> Option<bool> {
        self.names
            .get(pid)
            .map(|n| HOST_PROCESSES.contains(&n.as_str()))
    }

    /// Takes `event`, read from `bytes`.
    fn take(&mut self, event: Event<'_>, bytes: &[u8]) {
        let (Some(ph), Some(pid)) = (event.ph.as_deref(), event.pid) else {
            return;
        };
        if ph == "M" {
            if event.name.as_deref() == Some("process_name")
                && let Ok(Metadata { args: Some(name) }) = serde_json::from_slice(bytes)
            {
                self.names.insert(pid, name);
            }
            return;
        }
        if ph != "X"
            || self.is_host(&pid) == Some(false)
            || event
                .cat
                .as_deref()
                .is_some_and(|c| FRAME_CATEGORIES.contains(&c))
        {
            return;
        }
        let (Some(start), Some(dur)) = (
            event.ts.as_ref().and_then(Number::value),
            event.dur.as_ref().and_then(Number::value),
        ) else {
            return;
        };
        self.keep(&pid, event.name.as_deref().unwrap_or_default(), start, dur);
    }

    /// Keeps a host event of process `pid` named `name`, of `start` lasting `dur` µs, for
    /// each gap it overlaps.
    fn keep(&mut self, pid: &Pid, name: &str, start: f64, dur: f64) {
        for (k, &gap) in self.gaps.iter().enumerate() {
            let Some(overlap) = crate::sieve::overlap(start, dur, gap) else {
                continue;
            };
            let per = &mut self.per_gap[k];
            if !per.contains_key(pid) && per.len() >= MAX_PROCESSES {
                continue;
            }
            let kept = per.entry(pid.clone()).or_default();
            kept.push((name.to_owned(), overlap));
            if kept.len() > 2 * HOST_KEPT {
                longest_first(kept);
                kept.truncate(HOST_KEPT);
            }
        }
    }

    /// Per gap, the events kept of the host processes, longest overlap first, at most
    /// [`HOST_KEPT`] per process.
    fn finish(self) -> Vec<Vec<HostEvent>> {
        self.per_gap
            .into_iter()
            .map(|per| {
                let mut events: Vec<HostEvent> = Vec::new();
                for (pid, mut kept) in per {
                    let Some(process) = self.names.get(&pid) else {
                        continue;
                    };
                    if !HOST_PROCESSES.contains(&process.as_str()) {
                        continue;
                    }
                    longest_first(&mut kept);
                    events.extend(kept.into_iter().take(HOST_KEPT).map(|(name, overlap_us)| {
                        HostEvent {
                            process: process.clone(),
                            name,
                            overlap_us,
                        }
                    }));
                }
                events.sort_by(|a, b| {
                    b.overlap_us
                        .total_cmp(&a.overlap_us)
                        .then_with(|| a.name.cmp(&b.name))
                        .then_with(|| a.process.cmp(&b.process))
                });
                events
            })
            .collect()
    }
}

/// The gaps as `[start, end)` µs.
fn spans(gaps: &[Gap]) -> Vec<(f64, f64)> {
    gaps.iter()
        .map(|g| (g.start_us, g.start_us + g.gap_us))
        .collect()
}

/// Longest overlap first, then name.
fn longest_first(kept: &mut [(String, f64)]) {
    kept.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

/// The host events overlapping each gap of `gaps` (same order), longest overlap first, at
/// most [`HOST_KEPT`] per host process; and a note when the file could not be read whole
/// (an unterminated or cut file gives what came before the cut).
pub fn during_gaps(trace: &Path, gaps: &[Gap]) -> (Vec<Vec<HostEvent>>, Option<String>) {
    let spans = spans(gaps);
    let mut collect = Collect {
        gaps: &spans,
        names: BTreeMap::new(),
        per_gap: vec![BTreeMap::new(); spans.len()],
    };
    let note = match npuprof_runs::probe::open_regular(trace).map(|opened| opened.file) {
        Err(problem) => Some(format!("{}: {}", trace.display(), problem.describe())),
        Ok(file) => {
            let mut unreadable = 0u64;
            let mut sieve = crate::sieve::Sieve::new(&spans);
            let read = scan_events(&file, |bytes| {
                if !sieve.must_parse(bytes) {
                    return;
                }
                match serde_json::from_slice::<Event>(bytes) {
                    Ok(event) => collect.take(event, bytes),
                    Err(_) => unreadable += 1,
                }
            });
            match read {
                Err(e) => Some(format!("{}: cannot read: {e}", trace.display())),
                Ok(read) => {
                    let skipped = unreadable + read.too_long;
                    ending_note(&read.scan.state, skipped)
                        .map(|n| format!("{}: {n}", trace.display()))
                }
            }
        }
    };
    let host = collect.finish();
    (host, note)
}

/// The name trace_view.json gives a `CANN_API` call of API type `kind` (`AscendCL@aclrtMemcpyAsync`,
/// `Node@launch`: the type's label, then the name).
fn cann_name(kind: &str, name: &str) -> String {
    let label = match kind {
        "acl" => "AscendCL",
        "node" => "Node",
        "runtime" => "Runtime",
        "hccl" => "Hccl",
        "model" => "Model",
        other => other,
    };
    format!("{label}@{name}")
}

/// [`during_gaps`] for a db export: the host calls of its profiler database (`PYTORCH_API`
/// operators and queueing, `CANN_API` calls; [`npuprof_summary::db_export::each_host_call`]),
/// named as trace_view.json names them (`aten::conv2d`, `Dequeue@Conv2D`,
/// `AscendCL@aclopCompileAndExecute`), with the same overlap, enclosing and ranking rules; and a
/// note when the database cannot be read.
pub fn during_gaps_db(db: &Path, gaps: &[Gap]) -> (Vec<Vec<HostEvent>>, Option<String>) {
    let spans = spans(gaps);
    let mut collect = Collect {
        gaps: &spans,
        names: HOST_PROCESSES
            .iter()
            .map(|&p| (Pid::Text(p.to_owned()), p.to_owned()))
            .collect(),
        per_gap: vec![BTreeMap::new(); spans.len()],
    };
    let read = npuprof_summary::db_export::each_host_call(db, |call| {
        let pid = Pid::Text(call.process.to_owned());
        if call.process == "CANN" {
            let name = cann_name(call.kind, call.name);
            collect.keep(&pid, &name, call.start_us, call.duration_us);
        } else {
            collect.keep(&pid, call.name, call.start_us, call.duration_us);
        }
    });
    let note = read
        .err()
        .map(|e| format!("host calls not read from {}: {e}", db.display()));
    (collect.finish(), note)
}

/// What the note says of a trace that was not read whole (`None` when it was): how it ends,
/// and the events skipped (`skipped`: not objects with the fields' usual types, or longer than
/// [`MAX_EVENT`] bytes).
fn ending_note(state: &TraceState, skipped: u64) -> Option<String> {
    const READ_UP_TO: &str = "host activity read up to there";
    let ending = match state {
        TraceState::Complete => None,
        TraceState::Unterminated { .. } => Some(format!(
            "ends before the array closes ({READ_UP_TO}): unterminated after the last event"
        )),
        TraceState::CutMidEvent { event_start } => Some(format!(
            "ends before the array closes ({READ_UP_TO}): cut inside the event at byte {event_start}"
        )),
        TraceState::TrailingCommaClose { comma } => Some(format!(
            "closes right after a comma at byte {comma} (every event read)"
        )),
        TraceState::Malformed { offset, reason } => Some(format!(
            "is not a readable trace ({READ_UP_TO}): {reason} at byte {offset}"
        )),
        TraceState::Empty => Some("is empty: no host activity".to_owned()),
        TraceState::NotAnArray => {
            Some("is not a trace (not a JSON array): no host activity".to_owned())
        }
    };
    let skipped = (skipped > 0).then(|| {
        format!(
            "{skipped} event(s) skipped (not an object with the usual field types, or longer than {MAX_EVENT} bytes)"
        )
    });
    match (ending, skipped) {
        (None, None) => None,
        (Some(e), None) => Some(e),
        (None, Some(s)) => Some(s),
        (Some(e), Some(s)) => Some(format!("{e}; {s}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gap(start_us: f64, gap_us: f64) -> Gap {
        Gap {
            step: None,
            start_us,
            offset_us: 0.0,
            gap_us,
            after: String::new(),
            before: String::new(),
            host: Vec::new(),
        }
    }

    /// The host events and note for `trace` and one gap at 100..200 µs.
    fn read(trace: &str) -> (Vec<Vec<HostEvent>>, Option<String>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(TRACE_VIEW);
        std::fs::write(&path, trace).expect("write trace");
        during_gaps(&path, &[gap(100.0, 100.0)])
    }

    const META: &str =
        r#"{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "Python"}}"#;

    #[test]
    fn an_event_with_unusual_field_types_is_skipped_and_the_rest_read() {
        let trace = format!(
            r#"[{META}, {{"ph": "X", "name": "odd", "pid": 1.5, "ts": 120, "dur": 10}}, {{"ph": "X", "name": "aten::mm", "pid": 1, "ts": "150.0", "dur": 20}}]"#
        );
        let (host, note) = read(&trace);
        assert_eq!(
            host[0],
            [HostEvent {
                process: "Python".to_owned(),
                name: "aten::mm".to_owned(),
                overlap_us: 20.0
            }]
        );
        let note = note.expect("a note");
        assert!(note.ends_with(&format!(
            "{TRACE_VIEW}: 1 event(s) skipped (not an object with the usual field types, or longer than {MAX_EVENT} bytes)"
        )), "{note}");
    }

    /// On the vendored real trace, with gaps inside a spread of its complete events: every
    /// event the sieve passes over is, once parsed, neither metadata nor listed in a gap.
    #[test]
    fn the_sieve_passes_over_only_events_that_cannot_be_listed() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/trace-view/rank0_trace_view.json");
        let file = std::fs::File::open(&path).expect("the vendored trace");
        let mut events: Vec<Vec<u8>> = Vec::new();
        scan_events(&file, |bytes| events.push(bytes.to_vec())).expect("read");
        let parsed: Vec<Option<Event<'_>>> = events
            .iter()
            .map(|bytes| serde_json::from_slice(bytes).ok())
            .collect();
        let span = |e: &Event<'_>| Some((e.ts.as_ref()?.value()?, e.dur.as_ref()?.value()?));
        let gaps: Vec<(f64, f64)> = parsed
            .iter()
            .flatten()
            .filter(|e| e.ph.as_deref() == Some("X"))
            .filter_map(span)
            .step_by(97)
            .map(|(start, dur)| (start + dur / 2.0, start + dur / 2.0 + 50.0))
            .collect();
        assert!(gaps.len() > 20, "{} gaps", gaps.len());
        let mut sieve = crate::sieve::Sieve::new(&gaps);
        let mut passed_over = 0;
        for (bytes, event) in events.iter().zip(&parsed) {
            if sieve.must_parse(bytes) {
                continue;
            }
            passed_over += 1;
            let Some(event) = event else { continue };
            let text = String::from_utf8_lossy(bytes);
            assert_ne!(event.ph.as_deref(), Some("M"), "{text}");
            if event.ph.as_deref() == Some("X")
                && let Some((start, dur)) = span(event)
            {
                let listed = gaps
                    .iter()
                    .any(|&gap| crate::sieve::overlap(start, dur, gap).is_some());
                assert!(!listed, "{text}");
            }
        }
        // Counters, flows and most complete events are passed over.
        assert!(
            passed_over * 10 > events.len() * 8,
            "{passed_over} of {}",
            events.len()
        );
    }

    #[test]
    fn a_malformed_trace_is_read_up_to_the_error_and_the_note_says_where() {
        let trace = format!(
            r#"[{META}, {{"ph": "X", "name": "aten::mm", "pid": 1, "ts": 150, "dur": 20}}, {{"ph": "X",, }}]"#
        );
        let (host, note) = read(&trace);
        assert_eq!(host[0].len(), 1);
        let offset = trace.find(",,").expect("the error") + 1;
        let note = note.expect("a note");
        assert!(
            note.ends_with(&format!(
                "is not a readable trace (host activity read up to there): unexpected comma at byte {offset}"
            )),
            "{note}"
        );
    }

    /// The vendored db export (`crates/summary/tests/data/db-level1`, MindStudio Insight's
    /// `test/data/pytorch/db/level1`, rank 1): the host calls named in each of its largest device
    /// gaps are those SQLite itself finds overlapping the gap (`PYTORCH_API` operators and queue
    /// events, `CANN_API` calls, with the overlap computed in SQL), the longest per process, and
    /// named as the text export names them. The first gap's are the text export's of the same
    /// workload (`Dequeue@Conv2D`, `AscendCL@aclopCompileAndExecute`, `aten::conv2d`).
    #[test]
    fn a_db_export_names_the_host_calls_in_its_gaps_as_sqlite_finds_them() {
        let db = Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "../summary/tests/data/db-level1/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/\
             ascend_pytorch_profiler_1.db",
        );
        let kernels = crate::profile::read_db_kernels(&db).expect("the vendored db");
        assert!(kernels.gaps.len() >= 5, "{}", kernels.gaps.len());
        let (host, note) = during_gaps_db(&db, &kernels.gaps);
        assert_eq!(note, None);
        let conn =
            rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .expect("open");
        // Per process, the overlaps SQLite computes (µs), longest first, as the reader keeps
        // them (an enclosing call, more than ENCLOSING × the gap, left out).
        let sql = "SELECT p, n, ov FROM ( \
             SELECT 'Python' AS p, s.value AS n, \
               (MIN(CAST(c.endNs AS INTEGER), ?2) - MAX(CAST(c.startNs AS INTEGER), ?1)) / 1000.0 AS ov, \
               CAST(c.startNs AS INTEGER) AS b, CAST(c.endNs AS INTEGER) AS e \
             FROM PYTORCH_API c JOIN STRING_IDS s ON s.id = c.name \
             JOIN ENUM_API_TYPE t ON t.id = c.type WHERE t.name IN ('op', 'queue') \
           UNION ALL \
             SELECT 'CANN', CASE t.name WHEN 'acl' THEN 'AscendCL' WHEN 'node' THEN 'Node' \
               WHEN 'runtime' THEN 'Runtime' WHEN 'hccl' THEN 'Hccl' WHEN 'model' THEN 'Model' \
               ELSE t.name END || '@' || s.value, \
               (MIN(c.endNs, ?2) - MAX(c.startNs, ?1)) / 1000.0, c.startNs, c.endNs \
             FROM CANN_API c JOIN STRING_IDS s ON s.id = c.name \
             JOIN ENUM_API_TYPE t ON t.id = c.type) \
           WHERE ov > 0 AND NOT (b <= ?1 AND e >= ?2 AND (e - b) > ?3) \
           ORDER BY p, ov DESC, n";
        let mut statement = conn.prepare(sql).expect("prepare");
        for (gap, found) in kernels.gaps.iter().zip(&host) {
            let (start, end) = (
                (gap.start_us * 1000.0).round() as i64,
                ((gap.start_us + gap.gap_us) * 1000.0).round() as i64,
            );
            let enclosing = (ENCLOSING * gap.gap_us * 1000.0).round() as i64;
            let rows: Vec<(String, String, f64)> = statement
                .query_map((start, end, enclosing), |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .expect("query")
                .map(|r| r.expect("row"))
                .collect();
            let mut want: Vec<(String, String, f64)> = Vec::new();
            for process in HOST_PROCESSES {
                want.extend(
                    rows.iter()
                        .filter(|(p, _, _)| p == process)
                        .take(HOST_KEPT)
                        .cloned(),
                );
            }
            want.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.1.cmp(&b.1)));
            let got: Vec<(String, String, f64)> = found
                .iter()
                .map(|e| (e.process.clone(), e.name.clone(), e.overlap_us))
                .collect();
            assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!((&g.0, &g.1), (&w.0, &w.1), "{got:?} vs {want:?}");
                // An f64 of µs since the epoch (1.7e15) holds a quarter µs: the reader's
                // overlaps, like the text export's, are within that of SQLite's exact ns.
                assert!((g.2 - w.2).abs() <= 0.26, "{got:?} vs {want:?}");
            }
        }
        let first: Vec<&str> = host[0].iter().take(3).map(|e| e.name.as_str()).collect();
        assert_eq!(
            first,
            [
                "Dequeue@Conv2D",
                "AscendCL@aclopCompileAndExecute",
                "aten::conv2d"
            ]
        );
    }
}
