//! `communication.json` (multi-card runs): communication time and how much of it was waiting.
//!
//! The file is `{"step<N>": {"p2p"|"collective": {"<op>@<group>": {"Communication Time Info":
//! {…(ms)}, "Communication Bandwidth Info": {…}}, "Total Op Info": {…}}}}`. The operators are
//! summed (the vendor's `Total Op Info` entries are skipped, they repeat the sum).
//!
//! Waiting is said as time and as a share of the time in collectives ([`wait_phrase`]), never
//! as `wait / (wait + transit)`: torch_npu 2.7.1 writes `Transit Time(ms)` 0 for every operator
//! (the transit is only under `Communication Bandwidth Info`), so that ratio reads 98–100 %
//! where a rank waits 0.84 ms of 261.5 ms.

use std::marker::PhantomData;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::error::SummaryError;
use crate::units::{duration, percent};

/// The vendor's per-category total, left out of the sums.
const TOTAL_OP_INFO: &str = "Total Op Info";

/// Communication of one run, summed over steps and operators, in µs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Communication {
    /// Communication operators (collective and point-to-point), over every step.
    pub ops: u64,
    /// Summed `Elapse Time`.
    pub elapse_us: f64,
    /// Summed `Transit Time`: data actually moving. Where every operator's time section says 0
    /// and the bandwidth section has transfers, the bandwidth section's transit time (RDMA and
    /// the `SDMA` aggregate of HCCS, PCIe and SIO): see `transit_from_bandwidth`.
    pub transit_us: f64,
    /// Summed `Wait Time`: waiting for the other ranks.
    pub wait_us: f64,
    /// Summed `Synchronization Time`.
    pub synchronization_us: f64,
    /// Summed `Idle Time`.
    pub idle_us: f64,
    /// `wait / (wait + transit)` (the vendor's `Wait Time Ratio`), when there is any. Kept for
    /// the JSON's readers; reports say `wait_share` instead (this ratio ignores the idle time).
    pub wait_ratio: Option<f64>,
    /// `wait / elapse`: the share of the time in collectives spent waiting for other ranks.
    pub wait_share: Option<f64>,
    /// Whether `transit_us` comes from the bandwidth section (the time section recorded none).
    pub transit_from_bandwidth: bool,
    /// Summed bandwidth-section transit time (µs), before the choice above.
    #[serde(skip)]
    pub(crate) bandwidth_transit_us: f64,
}

/// `"waits W, P of its time in collectives"`: a run's or an operator's wait in words, the one
/// wording of summary, advise and the HTML pages (`wait_us` and `elapse_us` of the same span).
pub fn wait_phrase(wait_us: f64, elapse_us: f64) -> String {
    if elapse_us > 0.0 {
        format!(
            "waits {}, {} of its time in collectives",
            duration(wait_us),
            percent(wait_us / elapse_us)
        )
    } else {
        format!("waits {}", duration(wait_us))
    }
}

/// The note a report gives when the transit time came from the bandwidth section.
pub const TRANSIT_NOTE: &str = "communication.json records no transit time per operator (torch_npu      2.7.1 writes 0); the transit shown is the bandwidth section's (RDMA and SDMA links)";

#[derive(Deserialize)]
struct OpEntry {
    #[serde(rename = "Communication Time Info")]
    time: Option<TimeInfo>,
    #[serde(rename = "Communication Bandwidth Info", default)]
    bandwidth: Option<std::collections::HashMap<String, LinkTime>>,
}

/// One link's transit time in the bandwidth section.
#[derive(Deserialize, Default)]
struct LinkTime {
    #[serde(rename = "Transit Time(ms)", default)]
    time_ms: f64,
}

/// The transit time (ms) of one operator's bandwidth section: RDMA and the `SDMA` aggregate
/// (which sums HCCS, PCIe and SIO; those three where it is absent).
fn bandwidth_transit_ms(links: &std::collections::HashMap<String, LinkTime>) -> f64 {
    let time = |name: &str| links.get(name).map(|l| l.time_ms);
    let sdma = time("SDMA")
        .unwrap_or_else(|| ["HCCS", "PCIE", "SIO"].iter().filter_map(|l| time(l)).sum());
    time("RDMA").unwrap_or(0.0) + sdma
}

/// One operator's times, in ms.
#[derive(Deserialize, Default)]
pub(crate) struct TimeInfo {
    #[serde(rename = "Elapse Time(ms)", default)]
    pub(crate) elapse_ms: f64,
    #[serde(rename = "Transit Time(ms)", default)]
    pub(crate) transit_ms: f64,
    #[serde(rename = "Wait Time(ms)", default)]
    pub(crate) wait_ms: f64,
    #[serde(rename = "Synchronization Time(ms)", default)]
    pub(crate) synchronization_ms: f64,
    #[serde(rename = "Idle Time(ms)", default)]
    pub(crate) idle_ms: f64,
}

/// Reads and sums a `communication.json` in one streaming pass: each operator is added as it is
/// read, so memory does not grow with the number of steps or operators.
pub fn read_communication(path: &Path) -> Result<Communication, SummaryError> {
    let mut sum = Communication::default();
    each_operator(path, |_, op: OpEntry| {
        sum.add(op.time.as_ref());
        sum.bandwidth_transit_us +=
            op.bandwidth.as_ref().map_or(0.0, bandwidth_transit_ms) * 1000.0;
    })?;
    Ok(sum.finished())
}

/// Streams a `communication.json`: `each(name, operator)` for every operator of every step and
/// category as it is read (the vendor's `Total Op Info` left out), each read as a `T`; returns
/// the number of steps. Memory does not grow with the file.
pub fn each_operator<T, F>(path: &Path, mut each: F) -> Result<usize, SummaryError>
where
    T: DeserializeOwned,
    F: FnMut(&str, T),
{
    let file = crate::input::open(path, crate::input::Input::Json)?;
    let mut reader = serde_json::Deserializer::from_reader(std::io::BufReader::new(file));
    let json = |source| SummaryError::Json {
        path: path.to_path_buf(),
        source,
    };
    let mut steps = 0;
    Walk {
        level: Level::Steps,
        each: &mut each,
        steps: &mut steps,
        operator: PhantomData,
    }
    .deserialize(&mut reader)
    .map_err(json)?;
    reader.end().map_err(json)?;
    Ok(steps)
}

impl Communication {
    /// The sums with their wait ratio.
    pub(crate) fn finished(mut self) -> Self {
        if self.transit_us <= 0.0 && self.bandwidth_transit_us > 0.0 {
            self.transit_us = self.bandwidth_transit_us;
            self.transit_from_bandwidth = true;
        }
        self.wait_share = (self.elapse_us > 0.0).then(|| self.wait_us / self.elapse_us);
        let moving = self.wait_us + self.transit_us;
        self.wait_ratio = (moving > 0.0).then(|| self.wait_us / moving);
        self
    }

    /// Adds one operator's times (in ms).
    pub(crate) fn add(&mut self, time: Option<&TimeInfo>) {
        let ms = |f: fn(&TimeInfo) -> f64| time.map_or(0.0, f) * 1000.0;
        self.ops += 1;
        self.elapse_us += ms(|t| t.elapse_ms);
        self.transit_us += ms(|t| t.transit_ms);
        self.wait_us += ms(|t| t.wait_ms);
        self.synchronization_us += ms(|t| t.synchronization_ms);
        self.idle_us += ms(|t| t.idle_ms);
    }
}

/// The nesting of the file: step → category (`p2p`, `collective`) → operator → times.
#[derive(Debug, Clone, Copy)]
enum Level {
    Steps,
    Categories,
    Operators,
}

/// Reads one level of the file's maps, handing every operator below it to `each`.
struct Walk<'w, T, F> {
    level: Level,
    each: &'w mut F,
    steps: &'w mut usize,
    operator: PhantomData<fn() -> T>,
}

impl<T, F> Walk<'_, T, F> {
    fn below(&mut self, level: Level) -> Walk<'_, T, F> {
        Walk {
            level,
            each: &mut *self.each,
            steps: &mut *self.steps,
            operator: PhantomData,
        }
    }
}

impl<'de, T: DeserializeOwned, F: FnMut(&str, T)> DeserializeSeed<'de> for Walk<'_, T, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: DeserializeOwned, F: FnMut(&str, T)> Visitor<'de> for Walk<'_, T, F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.level {
            Level::Steps => "an object of steps",
            Level::Categories => "an object of communication categories",
            Level::Operators => "an object of communication operators",
        })
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match self.level {
                Level::Steps => {
                    map.next_value_seed(self.below(Level::Categories))?;
                    *self.steps += 1;
                }
                Level::Categories => map.next_value_seed(self.below(Level::Operators))?,
                Level::Operators if key == TOTAL_OP_INFO => {
                    map.next_value::<IgnoredAny>()?;
                }
                Level::Operators => {
                    let op: T = map.next_value()?;
                    (self.each)(&key, op);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comm_of(json: &str) -> Result<Communication, SummaryError> {
        let dir = tempfile::tempdir().map_err(|source| SummaryError::Io {
            path: "tempdir".into(),
            source,
        })?;
        let path = dir.path().join("communication.json");
        std::fs::write(&path, json).map_err(|source| SummaryError::Io {
            path: path.clone(),
            source,
        })?;
        read_communication(&path)
    }

    #[test]
    fn operators_are_summed_and_the_vendor_total_skipped() {
        let comm = comm_of(
            r#"{"step1": {"p2p": {}, "collective": {
                "a@g": {"Communication Time Info": {"Elapse Time(ms)": 2.0, "Transit Time(ms)": 0.5, "Wait Time(ms)": 1.5}},
                "b@g": {"Communication Time Info": {"Elapse Time(ms)": 1.0, "Transit Time(ms)": 0.5, "Wait Time(ms)": 0.0},
                        "Communication Bandwidth Info": {"HCCS": {"Bandwidth(GB/s)": 3}}},
                "Total Op Info": {"Communication Time Info": {"Elapse Time(ms)": 3.0}}}}}"#,
        );
        let comm = comm.map(|c| (c.ops, c.elapse_us, c.wait_us, c.wait_ratio, c.wait_share));
        assert_eq!(comm.ok(), Some((2, 3000.0, 1500.0, Some(0.6), Some(0.5))));
    }

    #[test]
    fn a_transit_of_zero_is_taken_from_the_bandwidth_section() {
        let op = |transit: f64| {
            format!(
                r#"{{"step1": {{"collective": {{"a@g": {{"Communication Time Info": {{"Elapse Time(ms)": 4.0, "Transit Time(ms)": {transit}, "Wait Time(ms)": 1.0}},
                "Communication Bandwidth Info": {{"RDMA": {{"Transit Time(ms)": 0.5}}, "HCCS": {{"Transit Time(ms)": 2.0}}, "SDMA": {{"Transit Time(ms)": 2.0}}}}}}}}}}}}"#
            )
        };
        let zero =
            comm_of(&op(0.0)).map(|c| (c.transit_us, c.transit_from_bandwidth, c.wait_share));
        assert_eq!(zero.ok(), Some((2500.0, true, Some(0.25))));
        let recorded = comm_of(&op(1.0)).map(|c| (c.transit_us, c.transit_from_bandwidth));
        assert_eq!(recorded.ok(), Some((1000.0, false)));
        assert_eq!(
            wait_phrase(5941.0, 105_992.0),
            "waits 5.94 ms, 5.6% of its time in collectives"
        );
        assert_eq!(wait_phrase(0.0, 0.0), "waits 0.0 µs");
    }

    #[test]
    fn a_truncated_file_is_an_error() {
        let err = comm_of(r#"{"step1": {"collective": {"#).map(|_| ());
        let message = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("not a torch_npu communication.json"),
            "{message}"
        );
    }

    #[test]
    fn operators_of_every_step_are_summed_and_a_wrong_shape_is_an_error() {
        let op = r#""a@g": {"Communication Time Info": {"Elapse Time(ms)": 1.0, "Wait Time(ms)": 0.25}}"#;
        let steps: Vec<String> = (0..50)
            .map(|i| format!(r#""step{i}": {{"collective": {{{op}}}, "p2p": {{}}}}"#))
            .collect();
        let comm = comm_of(&format!("{{{}}}", steps.join(",")));
        let comm = comm.map(|c| (c.ops, c.elapse_us, c.wait_us));
        assert_eq!(comm.ok(), Some((50, 50_000.0, 12_500.0)));
        assert!(comm_of(r#"{"step1": ["not", "an", "object"]}"#).is_err());
        assert!(comm_of(r#"{"step1": {}} trailing"#).is_err());
    }
}
