//! What exact mode reads of `trace_view.json`: the `nn.Module` call events, the host operators
//! (steps, optimizer calls, the backward operators), the `async_npu` launch flows, the
//! `fwdbwd` forward → backward flows, the device tasks and the process names.
//!
//! One pass of npuprof-scan's trace scanner ([`scan_events`]: memory maps, SIMD structural
//! scan). Counters are passed over by their tail (`"ph": "C"` written last). Every other event
//! is read from its top-level members without a parser (`plain_event`) when its fields are
//! plain, which is nearly every event of a real trace; the rest (escaped strings, repeated
//! keys, unusual types) goes through a byte sieve (counters and Python call frames that are not
//! modules are skipped) and serde_json, so each event gets exactly the parser's reading. Memory
//! holds the events kept (a few words each, names interned), never the file.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;

use memchr::memmem;
use npuprof_scan::decimal::parse_u64;
use npuprof_scan::trace_scan::{Members, TraceState, Value, last_string_member, scan_events};
use npuprof_summary::SummaryError;
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use crate::Map;
use crate::time::{parse_ts_ns, us_f64_to_ns, us_to_ps};

/// The timeline file of a run's output directory.
pub const TRACE_VIEW: &str = "trace_view.json";

/// The name prefix of a module call event (`nn.Module: Conv2d_0`).
pub const MODULE_PREFIX: &str = "nn.Module: ";

/// The name prefix of a step range (`ProfilerStep#50`).
pub const STEP_PREFIX: &str = "ProfilerStep#";

/// The name prefix of an optimizer call (`Optimizer.step#SGD.step`), a top-level node as
/// msprof-analyze makes it.
pub const OPTIMIZER_PREFIX: &str = "Optimizer.";

/// The device process whose tasks are the kernels.
pub const DEVICE_PROCESS: &str = "Ascend Hardware";

/// A process or thread id as written (a number, or a string hashed to one).
pub type Id = u64;

/// A host thread: (pid, tid).
pub type Thread = (Id, Id);

/// An interval on one thread, in ns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Its thread.
    pub thread: Thread,
    /// Start (ns).
    pub start: u64,
    /// End (ns, inclusive).
    pub end: u64,
}

/// A module call: `nn.Module: <Class>_<n>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleCall {
    /// When and where it ran.
    pub span: Span,
    /// `<Class>_<n>`.
    pub name: String,
}

/// What a host operator is to the breakdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpRole {
    /// `ProfilerStep#N`.
    Step(u64),
    /// An optimizer call (its whole name).
    Optimizer(String),
    /// Any other operator (a backward operator when a `fwdbwd` flow ends at it).
    Other,
}

impl OpRole {
    /// The role of an operator named `name`.
    pub fn of(name: &str) -> Self {
        if let Some(n) = name.strip_prefix(STEP_PREFIX) {
            n.trim().parse().map_or(OpRole::Other, OpRole::Step)
        } else if name.starts_with(OPTIMIZER_PREFIX) {
            OpRole::Optimizer(name.to_owned())
        } else {
            OpRole::Other
        }
    }
}

/// A host operator (`cat: cpu_op`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    /// When and where it ran.
    pub span: Span,
    /// What it is.
    pub role: OpRole,
}

/// A point on a thread: one end of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Point {
    /// Its process and thread.
    pub thread: Thread,
    /// Its time (ns).
    pub ts: u64,
}

/// A device task (an `X` event of a device process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Process (the device) and thread (the stream).
    pub at: Point,
    /// Duration (ps).
    pub dur_ps: u64,
    /// Name, interned in [`Trace::names`].
    pub name: u32,
    /// `args["Task Type"]`, interned in [`Trace::names`] (`u32::MAX` when absent).
    pub task_type: u32,
    /// A collective's task, known as such by its source (a db export's communication stream);
    /// a text export's are known by their task type.
    pub communication: bool,
}

/// Both ends of the flows of one category, by flow id.
#[derive(Debug, Default, Clone)]
pub struct Flows {
    /// `ph: s` ends.
    pub starts: Map<Id, Point>,
    /// `ph: f` ends.
    pub ends: Map<Id, Point>,
}

/// What exact mode read of one trace.
#[derive(Debug, Default)]
pub struct Trace {
    /// Process names by pid (`process_name` metadata).
    pub processes: Map<Id, String>,
    /// Module calls, in file order.
    pub modules: Vec<ModuleCall>,
    /// Host operators.
    pub ops: Vec<Op>,
    /// Device tasks (every process; [`DEVICE_PROCESS`]'s are the kernels).
    pub tasks: Vec<Task>,
    /// Kernel launches: `async_npu` flows (start at the launching operator, end at the kernel).
    pub launches: Flows,
    /// Forward → backward: `fwdbwd` flows (start at a forward operator, end at its backward).
    pub backward: Flows,
    /// Interned task names and types.
    pub names: Vec<String>,
    /// Events that could not be read (not JSON objects of the expected shape).
    pub unreadable: u64,
    /// Timestamps written as JSON numbers (exact only to an f64's digits).
    pub numeric_ts: u64,
}

impl Trace {
    /// An interned name.
    pub fn name(&self, index: u32) -> &str {
        self.names.get(index as usize).map_or("", String::as_str)
    }
}

/// A JSON scalar id or number as written.
#[derive(Debug, PartialEq)]
enum Scalar<'a> {
    U(u64),
    I(i64),
    F(f64),
    S(Cow<'a, str>),
}

/// Reads a [`Scalar`] straight from the token (an untagged enum would buffer every value
/// first: a third of the time of a whole trace).
struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number or a string")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Scalar::U(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Scalar::I(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Scalar::F(v))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::S(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::S(Cow::Owned(v.to_owned())))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Scalar<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

impl Scalar<'_> {
    /// As an id: integers as they are, strings parsed or hashed (FNV-1a).
    fn id(&self) -> Id {
        match self {
            Scalar::U(u) => *u,
            Scalar::I(i) => *i as u64,
            Scalar::F(f) => f.to_bits(),
            Scalar::S(s) => s.trim().parse::<u64>().unwrap_or_else(|_| {
                s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                })
            }),
        }
    }

    /// As a time in ns (strings exactly; numbers through an f64).
    fn ns(&self, numeric: &mut u64) -> Option<u64> {
        match self {
            Scalar::S(s) => parse_ts_ns(s),
            Scalar::U(u) => u.checked_mul(1000),
            Scalar::I(i) => u64::try_from(*i).ok()?.checked_mul(1000),
            Scalar::F(f) => {
                *numeric += 1;
                us_f64_to_ns(*f)
            }
        }
    }

    /// As a duration in ps.
    fn ps(&self) -> Option<u64> {
        match self {
            Scalar::S(s) => s.trim().parse::<f64>().ok().and_then(us_to_ps),
            Scalar::U(u) => us_to_ps(*u as f64),
            Scalar::I(i) => us_to_ps(*i as f64),
            Scalar::F(f) => us_to_ps(*f),
        }
    }
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Args<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "Task Type")]
    task_type: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Event<'a> {
    #[serde(borrow, default)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pid: Option<Scalar<'a>>,
    #[serde(borrow, default)]
    tid: Option<Scalar<'a>>,
    #[serde(borrow, default)]
    ts: Option<Scalar<'a>>,
    #[serde(borrow, default)]
    dur: Option<Scalar<'a>>,
    #[serde(borrow, default)]
    id: Option<Scalar<'a>>,
    #[serde(borrow, default)]
    args: Option<Args<'a>>,
}

/// [`Event`] read from the event's top-level members ([`Members`]) without a parser, for the
/// events whose every field read is plain: keys without escapes, each once; strings without
/// escapes; numbers that are unsigned integers or decimals; `args` an object whose `name` and
/// `Task Type` are such strings. `None` for anything else: the parser reads the event, so that
/// every event gets exactly the parser's reading (its refusals included).
fn plain_event(bytes: &[u8]) -> Option<Event<'_>> {
    let mut event = Event::default();
    let mut members = Members::of(bytes);
    for member in members.by_ref() {
        if member.key_escaped {
            return None;
        }
        let value = member.value;
        match member.key {
            b"ph" => once(&mut event.ph, plain_text(value)?)?,
            b"name" => once(&mut event.name, plain_text(value)?)?,
            b"cat" => once(&mut event.cat, plain_text(value)?)?,
            b"pid" => once(&mut event.pid, plain_scalar(value)?)?,
            b"tid" => once(&mut event.tid, plain_scalar(value)?)?,
            b"ts" => once(&mut event.ts, plain_scalar(value)?)?,
            b"dur" => once(&mut event.dur, plain_scalar(value)?)?,
            b"id" => once(&mut event.id, plain_scalar(value)?)?,
            b"args" => once(&mut event.args, plain_args(value)?)?,
            _ => {}
        }
    }
    members.done().then_some(event)
}

/// `args` as [`plain_event`] takes it.
fn plain_args(value: Value<'_>) -> Option<Args<'_>> {
    let Value::Object(bytes) = value else {
        return None;
    };
    let mut args = Args::default();
    let mut members = Members::of(bytes);
    for member in members.by_ref() {
        if member.key_escaped {
            return None;
        }
        match member.key {
            b"name" => once(&mut args.name, plain_text(member.value)?)?,
            b"Task Type" => once(&mut args.task_type, plain_text(member.value)?)?,
            _ => {}
        }
    }
    members.done().then_some(args)
}

/// Sets a field read for the first time (`None` on a second: the parser refuses the event).
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    slot.is_none().then(|| *slot = Some(value))
}

/// A string without an escape.
fn plain_text(value: Value<'_>) -> Option<Cow<'_, str>> {
    value.text().map(Cow::Borrowed)
}

/// A [`Scalar`] as the parser makes it, for a string without an escape, an unsigned integer
/// that fits a u64 or a decimal read as the parser reads it (the parser reads a negative or
/// longer integer its own way).
fn plain_scalar(value: Value<'_>) -> Option<Scalar<'_>> {
    match value {
        Value::Number(text) if text.first() == Some(&b'-') => None,
        Value::Number(text) => match parse_u64(text) {
            Some(n) => Some(Scalar::U(n)),
            None if text.iter().all(u8::is_ascii_digit) => None,
            None => value.parsed_f64().map(Scalar::F),
        },
        _ => plain_text(value).map(Scalar::S),
    }
}

/// Host categories: their `X` events are not device tasks.
const HOST_CATEGORIES: [&str; 4] = ["cpu_op", "python_function", "enqueue", "dequeue"];

/// Which events' bytes can be skipped unparsed: counters, and Python call frames that are not
/// module calls. Its byte patterns are built once per trace.
struct Skip {
    counter: memmem::Finder<'static>,
    counter_spaced: memmem::Finder<'static>,
    frame: memmem::Finder<'static>,
    module: memmem::Finder<'static>,
}

impl Skip {
    fn new() -> Self {
        Self {
            counter: memmem::Finder::new(b"\"ph\":\"C\""),
            counter_spaced: memmem::Finder::new(b"\"ph\": \"C\""),
            frame: memmem::Finder::new(b"\"python_function\""),
            module: memmem::Finder::new(MODULE_PREFIX.trim_end().as_bytes()),
        }
    }

    /// Whether `bytes` (one event) can be skipped unparsed.
    fn skip(&self, bytes: &[u8]) -> bool {
        let counter =
            self.counter_spaced.find(bytes).is_some() || self.counter.find(bytes).is_some();
        let frame = self.frame.find(bytes).is_some() && self.module.find(bytes).is_none();
        counter || frame
    }
}

/// Interns `name` in `names` (`index` finds it again).
pub(crate) fn intern(names: &mut Vec<String>, index: &mut Map<String, u32>, name: &str) -> u32 {
    if let Some(&i) = index.get(name) {
        return i;
    }
    let i = names.len() as u32;
    names.push(name.to_owned());
    index.insert(name.to_owned(), i);
    i
}

/// Reads `path` in one pass.
pub fn read(path: &Path) -> Result<Trace, SummaryError> {
    let io = |source| SummaryError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Through the probe: a FIFO or a device is refused without blocking, a link out of the
    // run directory is not followed.
    let file = npuprof_runs::probe::open_regular(path)
        .map(|opened| opened.file)
        .map_err(|problem| SummaryError::Unusable {
            path: path.to_path_buf(),
            reason: problem.describe(),
        })?;
    let mut trace = Trace::default();
    let mut index: Map<String, u32> = Map::default();
    let sieve = Skip::new();
    let read = scan_events(&file, |bytes| {
        // A counter (torch_npu writes its `ph` last; nearly half a trace's events) is passed
        // over before any walk, as the sieve passes it over.
        if last_string_member(bytes) == Some((b"ph", b"C")) {
            return;
        }
        if let Some(event) = plain_event(bytes) {
            return take(&mut trace, &mut index, event);
        }
        if sieve.skip(bytes) {
            return;
        }
        match serde_json::from_slice::<Event<'_>>(bytes) {
            Ok(event) => take(&mut trace, &mut index, event),
            Err(_) => trace.unreadable += 1,
        }
    })
    .map_err(io)?;
    let problem = match &read.scan.state {
        TraceState::Complete => return Ok(trace),
        TraceState::Empty => "empty".to_owned(),
        TraceState::NotAnArray => "not torch_npu's JSON array of events".to_owned(),
        TraceState::Unterminated { .. } => "the array is never closed (a cut file?)".to_owned(),
        TraceState::CutMidEvent { event_start } => {
            format!("the file ends inside an event (from byte {event_start}; a cut file?)")
        }
        TraceState::TrailingCommaClose { comma } => {
            format!("a comma before the closing bracket (byte {comma})")
        }
        TraceState::Malformed { offset, reason } => {
            format!("malformed JSON at byte {offset}: {reason}")
        }
    };
    Err(SummaryError::Unusable {
        path: path.to_path_buf(),
        reason: format!("{problem}: cannot break it down"),
    })
}

fn take(trace: &mut Trace, index: &mut Map<String, u32>, event: Event<'_>) {
    let numeric = &mut trace.numeric_ts;
    let (Some(ph), Some(pid)) = (event.ph.as_deref(), event.pid.as_ref()) else {
        return;
    };
    let pid = pid.id();
    let tid = event.tid.as_ref().map_or(0, Scalar::id);
    let thread = (pid, tid);
    let name = event.name.as_deref().unwrap_or("");
    let cat = event.cat.as_deref().unwrap_or("");
    match ph {
        "M" if name == "process_name" => {
            if let Some(n) = event.args.as_ref().and_then(|a| a.name.as_deref()) {
                trace.processes.insert(pid, n.to_owned());
            }
        }
        "s" | "f" => {
            let flows = match cat {
                "async_npu" => &mut trace.launches,
                "fwdbwd" => &mut trace.backward,
                _ => return,
            };
            let (Some(id), Some(ts)) = (event.id.as_ref(), event.ts.as_ref()) else {
                return;
            };
            let Some(ts) = ts.ns(numeric) else { return };
            let point = Point { thread, ts };
            if ph == "s" {
                flows.starts.insert(id.id(), point);
            } else {
                flows.ends.insert(id.id(), point);
            }
        }
        "X" => {
            let Some(start) = event.ts.as_ref().and_then(|t| t.ns(numeric)) else {
                return;
            };
            let dur_ps = event.dur.as_ref().and_then(Scalar::ps).unwrap_or(0);
            let span = Span {
                thread,
                start,
                end: start + dur_ps.div_ceil(1000),
            };
            match cat {
                "python_function" => {
                    if let Some(module) = name.strip_prefix(MODULE_PREFIX) {
                        trace.modules.push(ModuleCall {
                            span,
                            name: module.trim().to_owned(),
                        });
                    }
                }
                "cpu_op" => trace.ops.push(Op {
                    span,
                    role: OpRole::of(name),
                }),
                c if HOST_CATEGORIES.contains(&c) => {}
                _ => {
                    let name = intern(&mut trace.names, index, name);
                    let task_type = event
                        .args
                        .as_ref()
                        .and_then(|a| a.task_type.as_deref())
                        .map_or(u32::MAX, |t| intern(&mut trace.names, index, t));
                    trace.tasks.push(Task {
                        at: Point { thread, ts: start },
                        dur_ps,
                        name,
                        task_type,
                        communication: false,
                    });
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sieve_skips_counters_and_frames_only() {
        let sieve = Skip::new();
        let skip = |bytes: &[u8]| sieve.skip(bytes);
        assert!(skip(br#"{"ph": "C", "name": "HBM"}"#));
        assert!(skip(br#"{"ph":"X","cat":"python_function","name":"f"}"#));
        assert!(!skip(
            br#"{"ph":"X","cat":"python_function","name":"nn.Module: Conv2d_0"}"#
        ));
        assert!(!skip(br#"{"ph":"X","cat":"cpu_op","name":"aten::add"}"#));
    }

    /// The plain reading of an event, compared with the parser's.
    fn check_plain(bytes: &[u8]) -> bool {
        let parsed = serde_json::from_slice::<Event<'_>>(bytes).ok();
        match plain_event(bytes) {
            Some(plain) => {
                assert_eq!(
                    Some(&plain),
                    parsed.as_ref(),
                    "{}",
                    String::from_utf8_lossy(bytes)
                );
                true
            }
            None => false,
        }
    }

    #[test]
    fn the_plain_reading_is_the_parsers_on_every_event_of_the_real_runs() {
        let runs = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../verify/tests/data/runs/msinsight-text-level1");
        for rank in ["rank0_ascend_pt", "rank1_ascend_pt"] {
            let path = runs
                .join(rank)
                .join("ASCEND_PROFILER_OUTPUT")
                .join(TRACE_VIEW);
            let file = std::fs::File::open(&path).expect("the vendored trace");
            let (mut plain, mut all) = (0, 0);
            let read = scan_events(&file, |bytes| {
                all += 1;
                plain += u32::from(check_plain(bytes));
            })
            .expect("read");
            assert_eq!(read.scan.state, TraceState::Complete);
            // Nearly every event is read without the parser (the rest: escaped strings).
            assert!(all > 9_000 && plain * 100 > all * 95, "{plain} of {all}");
        }
    }

    #[test]
    fn what_the_plain_reading_does_not_take_is_left_to_the_parser() {
        for event in [
            // A key twice, an escape, a negative or huge integer, a null, args as an array,
            // a number where a string belongs.
            r#"{"ph": "X", "ph": "X"}"#,
            r#"{"ph": "X", "name": "a\"b"}"#,
            r#"{"p\u0068": "X"}"#,
            r#"{"ph": "X", "ts": -5}"#,
            r#"{"ph": "X", "id": 123456789012345678901234567890}"#,
            r#"{"ph": "X", "name": null}"#,
            r#"{"ph": "X", "args": ["a", "b"]}"#,
            r#"{"ph": "X", "args": {"name": 5}}"#,
            r#"{"ph": "X", "args": {"name": "a", "name": "b"}}"#,
            r#"{"ph": 1}"#,
        ] {
            assert!(!check_plain(event.as_bytes()), "{event}");
        }
        for event in [
            r#"{"ph": "X", "ts": "17.5", "dur": 0.1, "id": 7, "pid": "p", "x": [1, {"y": null}]}"#,
            r#"{"args": {"Task Type": "AI_CORE", "name": "n", "z": -1}, "ph": "X", "dur": 1e-3}"#,
        ] {
            assert!(check_plain(event.as_bytes()), "{event}");
        }
    }

    #[test]
    fn integers_are_read_by_the_scanners_u64_reading() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"3096504"), Some(3_096_504));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        // Overflowing, empty, or holding anything but the ten digits (`:` is the byte after
        // `9`, `/` the one before `0`).
        for text in ["18446744073709551616", "", "1.5", "1e3", "-1", "1:", "/1"] {
            assert_eq!(parse_u64(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn ids_from_numbers_and_strings() {
        assert_eq!(Scalar::U(7).id(), 7);
        assert_eq!(Scalar::S("12".into()).id(), 12);
        assert_ne!(Scalar::S("a".into()).id(), Scalar::S("b".into()).id());
    }
}
