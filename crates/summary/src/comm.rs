//! `communication.json` (multi-card runs): communication time and how much of it was waiting.
//!
//! The file is `{"step<N>": {"p2p"|"collective": {"<op>@<group>": {"Communication Time Info":
//! {…(ms)}, "Communication Bandwidth Info": {…}}, "Total Op Info": {…}}}}`. The operators are
//! summed (the vendor's `Total Op Info` entries are skipped, they repeat the sum).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::SummaryError;

/// The vendor's per-category total, left out of the sums.
const TOTAL_OP_INFO: &str = "Total Op Info";

/// Communication of one run, summed over steps and operators, in µs.
#[derive(Debug, Clone, PartialEq, Serialize)]
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

#[derive(Deserialize, Default)]
struct TimeInfo {
    #[serde(rename = "Elapse Time(ms)", default)]
    elapse_ms: f64,
    #[serde(rename = "Transit Time(ms)", default)]
    transit_ms: f64,
    #[serde(rename = "Wait Time(ms)", default)]
    wait_ms: f64,
    #[serde(rename = "Synchronization Time(ms)", default)]
    synchronization_ms: f64,
    #[serde(rename = "Idle Time(ms)", default)]
    idle_ms: f64,
}

/// step → category (`p2p`, `collective`) → operator → times.
type CommFile = BTreeMap<String, BTreeMap<String, BTreeMap<String, OpEntry>>>;

/// Reads and sums a `communication.json`.
pub fn read_communication(path: &Path) -> Result<Communication, SummaryError> {
    let file = std::fs::File::open(path).map_err(|source| SummaryError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let parsed: CommFile =
        serde_json::from_reader(std::io::BufReader::new(file)).map_err(|source| {
            SummaryError::Json {
                path: path.to_path_buf(),
                source,
            }
        })?;
    let mut sum = Communication {
        ops: 0,
        elapse_us: 0.0,
        transit_us: 0.0,
        wait_us: 0.0,
        synchronization_us: 0.0,
        idle_us: 0.0,
        wait_ratio: None,
    };
    let ops = parsed
        .values()
        .flat_map(BTreeMap::values)
        .flat_map(|ops| ops.iter())
        .filter(|(name, _)| name.as_str() != TOTAL_OP_INFO);
    for (_, op) in ops {
        let time = op.time.as_ref();
        let ms = |f: fn(&TimeInfo) -> f64| time.map_or(0.0, f) * 1000.0;
        sum.ops += 1;
        sum.elapse_us += ms(|t| t.elapse_ms);
        sum.transit_us += ms(|t| t.transit_ms);
        sum.wait_us += ms(|t| t.wait_ms);
        sum.synchronization_us += ms(|t| t.synchronization_ms);
        sum.idle_us += ms(|t| t.idle_ms);
    }
    let moving = sum.wait_us + sum.transit_us;
    sum.wait_ratio = (moving > 0.0).then(|| sum.wait_us / moving);
    Ok(sum)
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
}
