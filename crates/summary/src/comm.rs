//! `communication.json` (multi-card runs): communication time and how much of it was waiting.
//!
//! The file is `{"step<N>": {"p2p"|"collective": {"<op>@<group>": {"Communication Time Info":
//! {…(ms)}, "Communication Bandwidth Info": {…}}, "Total Op Info": {…}}}}`. The operators are
//! summed (the vendor's `Total Op Info` entries are skipped, they repeat the sum).

use std::marker::PhantomData;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::error::SummaryError;

/// The vendor's per-category total, left out of the sums.
const TOTAL_OP_INFO: &str = "Total Op Info";

/// Communication of one run, summed over steps and operators, in µs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Communication {
    /// Communication operators (collective and point-to-point), over every step.
    pub ops: u64,
    /// Summed `Elapse Time`.
    pub elapse_us: f64,
    /// Summed `Transit Time`: data actually moving.
    pub transit_us: f64,
    /// Summed `Wait Time`: waiting for the other ranks.
    pub wait_us: f64,
    /// Summed `Synchronization Time`.
    pub synchronization_us: f64,
    /// Summed `Idle Time`.
    pub idle_us: f64,
    /// `wait / (wait + transit)` (the vendor's `Wait Time Ratio`), when there is any.
    pub wait_ratio: Option<f64>,
}

#[derive(Deserialize)]
struct OpEntry {
    #[serde(rename = "Communication Time Info")]
    time: Option<TimeInfo>,
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
    each_operator(path, |_, op: OpEntry| sum.add(op.time.as_ref()))?;
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
        let comm = comm.map(|c| (c.ops, c.elapse_us, c.wait_us, c.wait_ratio));
        assert_eq!(comm.ok(), Some((2, 3000.0, 1500.0, Some(0.6))));
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
