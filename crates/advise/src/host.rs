//! What the host ran during the largest gaps of the device timeline: the `Python` and `CANN`
//! processes' complete events (`"ph":"X"`) of `trace_view.json` that overlap each gap (not
//! those that merely enclose it, see [`ENCLOSING`], nor Python call frames), read in
//! one streaming pass (one event in memory at a time; per gap at most [`HOST_KEPT`] events per
//! process, of at most [`MAX_PROCESSES`] processes). `ts` is on the clock of
//! kernel_details.csv's `Start Time(us)`, where the gaps are measured.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
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

/// A number torch_npu writes as a JSON number or a string (`ts`: `"1736408883688177.930"`).
#[derive(Deserialize)]
#[serde(untagged)]
enum Number {
    Float(f64),
    Text(String),
}

impl Number {
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
struct Event {
    ph: Option<String>,
    cat: Option<String>,
    name: Option<String>,
    pid: Option<Pid>,
    ts: Option<Number>,
    dur: Option<Number>,
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

    fn take(&mut self, event: Event) {
        let (Some(ph), Some(pid)) = (event.ph.as_deref(), event.pid) else {
            return;
        };
        if ph == "M" {
            if event.name.as_deref() == Some("process_name")
                && let Some(name) = event.args
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
        let end = start + dur.max(0.0);
        let name = event.name.unwrap_or_default();
        for (k, &(gap_start, gap_end)) in self.gaps.iter().enumerate() {
            let overlap = end.min(gap_end) - start.max(gap_start);
            let encloses =
                start <= gap_start && end >= gap_end && dur > ENCLOSING * (gap_end - gap_start);
            if overlap <= 0.0 || encloses {
                continue;
            }
            let per = &mut self.per_gap[k];
            if !per.contains_key(&pid) && per.len() >= MAX_PROCESSES {
                continue;
            }
            let kept = per.entry(pid.clone()).or_default();
            kept.push((name.clone(), overlap));
            if kept.len() > 2 * HOST_KEPT {
                longest_first(kept);
                kept.truncate(HOST_KEPT);
            }
        }
    }
}

/// Longest overlap first, then name.
fn longest_first(kept: &mut [(String, f64)]) {
    kept.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

struct Events<'a, 'g>(&'a mut Collect<'g>);

impl<'de> Visitor<'de> for Events<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON array of trace events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(event) = seq.next_element::<Event>()? {
            self.0.take(event);
        }
        Ok(())
    }
}

/// The host events overlapping each gap of `gaps` (same order), longest overlap first, at
/// most [`HOST_KEPT`] per host process; and a note when the file could not be read whole
/// (an unterminated or cut file gives what came before the cut).
pub fn during_gaps(trace: &Path, gaps: &[Gap]) -> (Vec<Vec<HostEvent>>, Option<String>) {
    let spans: Vec<(f64, f64)> = gaps
        .iter()
        .map(|g| (g.start_us, g.start_us + g.gap_us))
        .collect();
    let mut collect = Collect {
        gaps: &spans,
        names: BTreeMap::new(),
        per_gap: vec![BTreeMap::new(); spans.len()],
    };
    let note = match File::open(trace) {
        Err(e) => Some(format!("{}: cannot read: {e}", trace.display())),
        Ok(file) => {
            let mut de = serde_json::Deserializer::from_reader(BufReader::new(file));
            de.deserialize_seq(Events(&mut collect)).err().map(|e| {
                let what = if e.is_eof() {
                    "ends before the array closes (host activity read up to there)"
                } else {
                    "is not a readable trace (host activity read up to there)"
                };
                format!("{}: {what}: {e}", trace.display())
            })
        }
    };
    let host = collect
        .per_gap
        .into_iter()
        .map(|per| {
            let mut events: Vec<HostEvent> = Vec::new();
            for (pid, mut kept) in per {
                let Some(process) = collect.names.get(&pid) else {
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
        .collect();
    (host, note)
}
