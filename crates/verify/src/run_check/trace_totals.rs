//! trace_view.json's `Overlap Analysis` lane against step_trace_time.csv: the lane's
//! `Computing` events sum to the step table's `Computing` (8873.756 µs in both on the 2-rank
//! AlexNet run's rank 0). A trace re-closed after part of its events (`]` appended at an event
//! boundary) passes every structural check and loses part of the lane.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::{Ctx, disp};
use crate::finding::{Code, Evidence, Finding};
use npuprof_runs::probe;
use npuprof_scan::kernel_csv::{KernelScan, StepTraceRow};
use npuprof_scan::trace_scan::scan_events;

/// The largest trace read for the check (a second pass of the trace scanner: the structural
/// scan does not parse events).
const TRACE_CAP: u64 = 512 << 20;

/// The lane's process name.
const LANE: &str = "Overlap Analysis";

#[derive(Deserialize)]
struct Event {
    #[serde(default)]
    ph: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    pid: Option<Value>,
    #[serde(default)]
    dur: Option<Value>,
    #[serde(default)]
    ts: Option<Value>,
    #[serde(default)]
    args: Option<Args>,
}

#[derive(Deserialize)]
struct Args {
    #[serde(default)]
    name: Option<Value>,
}

/// Per pid: its `process_name`, and its summed `Computing` durations.
#[derive(Default)]
struct Sums {
    names: HashMap<String, String>,
    computing: HashMap<String, f64>,
    /// Per pid: when its `Computing` events start (earliest, latest), in µs.
    range: HashMap<String, (f64, f64)>,
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl Sums {
    fn add(&mut self, e: Event) {
        let Some(pid) = e.pid.as_ref().and_then(text) else {
            return;
        };
        match (e.ph.as_deref(), e.name.as_deref()) {
            (Some("M"), Some("process_name")) => {
                if let Some(name) = e.args.and_then(|a| a.name).as_ref().and_then(text) {
                    self.names.insert(pid, name);
                }
            }
            (Some("X"), Some("Computing")) => {
                let dur = e
                    .dur
                    .as_ref()
                    .and_then(text)
                    .and_then(|d| d.parse::<f64>().ok())
                    .unwrap_or(0.0);
                let ts =
                    e.ts.as_ref()
                        .and_then(text)
                        .and_then(|t| t.parse::<f64>().ok());
                if let Some(ts) = ts {
                    let mut range = self.range.get(&pid).copied();
                    npuprof_scan::kernel_csv::widen(&mut range, ts, ts);
                    if let Some(range) = range {
                        self.range.insert(pid.clone(), range);
                    }
                }
                *self.computing.entry(pid).or_default() += dur;
            }
            _ => {}
        }
    }

    /// The lane's summed `Computing` and when its events start, when the trace names the
    /// lane and it has events.
    fn lane(&self) -> Option<(f64, (f64, f64))> {
        let pid = self.names.iter().find(|(_, n)| *n == LANE)?.0;
        Some((
            self.computing.get(pid).copied()?,
            self.range.get(pid).copied()?,
        ))
    }
}

/// Whether an event's bytes may be one the check reads: a `process_name` or a `Computing` event
/// (the others are not parsed).
fn wanted(event: &[u8]) -> bool {
    let has = |needle: &[u8]| event.windows(needle.len()).any(|w| w == needle);
    has(b"\"Computing\"") || has(b"\"process_name\"")
}

/// The lane's summed `Computing` (µs) of the trace at `path` and when its events start;
/// `None` when the trace is not read (too large, unreadable) or has no lane. The events come
/// from npuprof-scan's trace scanner (each event's bytes, as verify's structural check reads
/// the file); only the events that may matter are parsed.
fn lane_computing(path: &Path) -> Option<(f64, (f64, f64))> {
    let opened = probe::open_regular(path).ok()?;
    if opened.len > TRACE_CAP {
        return None;
    }
    let mut sums = Sums::default();
    scan_events(&opened.file, |event| {
        if wanted(event)
            && let Ok(event) = serde_json::from_slice::<Event>(event)
        {
            sums.add(event);
        }
    })
    .ok()?;
    sums.lane()
}

/// The lane against step_trace_time's `Computing`: a finding when the trace holds less.
pub(super) fn trace_totals_findings(
    ctx: &mut Ctx<'_>,
    out: &Path,
    step_rows: Option<&[StepTraceRow]>,
    kernels: Option<&KernelScan>,
) {
    // The kernels' time span tells the trace of this run from another's.
    let whole = |k: &&KernelScan| k.corruption.is_none() && k.ragged_rows == 0;
    let Some((first, last)) = kernels.filter(whole).and_then(|k| k.start_range) else {
        return;
    };
    let Some(recorded) = step_rows
        .filter(|rows| !rows.is_empty())
        .and_then(|rows| rows.iter().map(|r| r.computing_us).sum::<Option<f64>>())
    else {
        return;
    };
    let trace = out.join("trace_view.json");
    let Some((lane, (low, high))) = lane_computing(&trace) else {
        return;
    };
    if high < first || low > last {
        return;
    }
    if recorded - lane <= super::consistency::tolerance(recorded, lane) {
        return;
    }
    ctx.push(Finding::new(
        Code::TraceTotalsDisagree,
        format!(
            "{}'s {LANE} lane holds {lane:.3} µs of Computing; {} records {recorded:.3} µs: the \
             trace lost events (cut and re-closed, or rewritten)",
            disp(&trace),
            disp(&out.join("step_trace_time.csv"))
        ),
        Evidence::path(disp(&trace)),
        ctx.reparse(),
    ));
}
