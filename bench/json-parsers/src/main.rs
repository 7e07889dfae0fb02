//! `json-parsers MODE FILE`: reads FILE (a top-level JSON array of trace events) with one of
//! the fastest validating JSON readers on crates.io and prints one JSON line to stdout:
//! `{"mode", "events", "complete", "parse_s"}` — `parse_s` is the time of the parse alone (the
//! file is read into memory first, outside it; run on one idle core, it is CPU time).
//!
//! Modes, each validating the whole input's grammar:
//! - `serde-validate`: serde_json into `Vec<IgnoredAny>` (it does not check UTF-8 inside
//!   strings it skips);
//! - `sonic-validate`: sonic-rs into `Vec<IgnoredAny>` (full validation, UTF-8 included);
//! - `serde-fields`, `sonic-fields`: each event's `ph`, `ts` and `dur` taken raw, the rest
//!   validated and skipped, streaming (what advise's host-gap reader needs of each event).

use std::marker::PhantomData;
use std::time::Instant;

use serde::Deserialize;
use serde::de::{IgnoredAny, SeqAccess, Visitor};

#[derive(Deserialize)]
struct SerdeEvent<'a> {
    #[serde(borrow)]
    ph: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    ts: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    dur: Option<&'a serde_json::value::RawValue>,
}

#[derive(Deserialize)]
struct SonicEvent<'a> {
    #[serde(borrow)]
    ph: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    ts: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    dur: Option<sonic_rs::LazyValue<'a>>,
}

/// What the fields modes count: events, complete events, and the bytes of their times.
#[derive(Default)]
struct Count {
    events: u64,
    complete: u64,
    time_bytes: u64,
}

trait Fields {
    fn fields(&self) -> [Option<&str>; 3];
}

impl Fields for SerdeEvent<'_> {
    fn fields(&self) -> [Option<&str>; 3] {
        [self.ph, self.ts, self.dur].map(|v| v.map(|v| v.get()))
    }
}

impl Fields for SonicEvent<'_> {
    fn fields(&self) -> [Option<&str>; 3] {
        [&self.ph, &self.ts, &self.dur].map(|v| v.as_ref().map(|v| v.as_raw_str()))
    }
}

/// The top-level array, read one event at a time.
struct Events<E>(Count, PhantomData<E>);

struct EventsVisitor<E>(PhantomData<E>);

impl<'de, E: Deserialize<'de> + Fields> Visitor<'de> for EventsVisitor<E> {
    type Value = Count;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
        let mut count = Count::default();
        while let Some(event) = seq.next_element::<E>()? {
            let [ph, ts, dur] = event.fields();
            count.events += 1;
            count.complete += u64::from(ph == Some("\"X\""));
            count.time_bytes += (ts.map_or(0, str::len) + dur.map_or(0, str::len)) as u64;
        }
        Ok(count)
    }
}

impl<'de, E: Deserialize<'de> + Fields> Deserialize<'de> for Events<E> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(EventsVisitor::<E>(PhantomData))
            .map(|count| Events(count, PhantomData))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, mode, path] = args.as_slice() else {
        eprintln!("usage: json-parsers MODE FILE");
        std::process::exit(2);
    };
    let bytes = std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("json-parsers: {path}: {e}");
        std::process::exit(2);
    });
    let started = Instant::now();
    let count = match mode.as_str() {
        "serde-validate" => serde_json::from_slice::<Vec<IgnoredAny>>(&bytes)
            .map(|v| Count {
                events: v.len() as u64,
                ..Count::default()
            })
            .map_err(|e| e.to_string()),
        "sonic-validate" => sonic_rs::from_slice::<Vec<IgnoredAny>>(&bytes)
            .map(|v| Count {
                events: v.len() as u64,
                ..Count::default()
            })
            .map_err(|e| e.to_string()),
        "serde-fields" => serde_json::from_slice::<Events<SerdeEvent>>(&bytes)
            .map(|e| e.0)
            .map_err(|e| e.to_string()),
        "sonic-fields" => sonic_rs::from_slice::<Events<SonicEvent>>(&bytes)
            .map(|e| e.0)
            .map_err(|e| e.to_string()),
        other => {
            eprintln!("json-parsers: unknown mode {other}");
            std::process::exit(2);
        }
    };
    let parse_s = started.elapsed().as_secs_f64();
    match count {
        Ok(count) => println!(
            "{{\"mode\": \"{mode}\", \"events\": {}, \"complete\": {}, \"time_bytes\": {}, \"parse_s\": {parse_s:.3}}}",
            count.events, count.complete, count.time_bytes
        ),
        Err(e) => {
            eprintln!("json-parsers: {mode}: {e}");
            std::process::exit(1);
        }
    }
}
