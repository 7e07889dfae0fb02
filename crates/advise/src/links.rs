//! `communication.json` as the rules need it: per link type (HCCS, PCIe, SIO, RDMA, …) the data
//! moved, its time and its packet sizes; the operators' time and waiting.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::thresholds::{RDMA_SMALL_MB, SDMA_SMALL_MB};
use npuprof_summary::SummaryError;

/// One link type's transfers, summed over the steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    /// The link type as torch_npu names it (`HCCS`, `PCIE`, `SIO`, `RDMA`).
    pub link: String,
    /// Data moved (MB).
    pub size_mb: f64,
    /// Transfer time (ms).
    pub time_ms: f64,
    /// `size_mb / time_ms` (GB/s); `None` without transfer time.
    pub bandwidth_gb_s: Option<f64>,
    /// Transfers counted in the size distribution.
    pub transfers: u64,
    /// Transfers smaller than the link's small-packet size.
    pub small: u64,
    /// Time of the small transfers (ms).
    pub small_ms: f64,
    /// The small-packet size of this link (MB).
    pub small_below_mb: f64,
}

/// One communication operator name, summed over the steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommOp {
    /// The operator name (before `@group`).
    pub name: String,
    /// Calls.
    pub count: u64,
    /// Elapsed time (µs).
    pub elapse_us: f64,
    /// Waiting for the other ranks (µs).
    pub wait_us: f64,
}

/// A run's communication.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Comm {
    /// Steps in the file.
    pub steps: usize,
    /// Summed operator wait (µs).
    pub wait_us: f64,
    /// Summed operator transit (µs).
    pub transit_us: f64,
    /// Summed operator elapse (µs).
    pub elapse_us: f64,
    /// The SDMA links (HCCS, PCIE, SIO) and RDMA with any data; the aggregate `SDMA` entry is
    /// left out (its packets are those of its links).
    pub links: Vec<Link>,
    /// Operators by elapsed time, longest first.
    pub ops: Vec<CommOp>,
}

#[derive(Deserialize)]
struct OpEntry {
    #[serde(rename = "Communication Time Info", default)]
    time: Option<TimeInfo>,
    #[serde(rename = "Communication Bandwidth Info", default)]
    bandwidth: Option<HashMap<String, LinkInfo>>,
}

#[derive(Deserialize, Default)]
struct TimeInfo {
    #[serde(rename = "Elapse Time(ms)", default)]
    elapse_ms: f64,
    #[serde(rename = "Transit Time(ms)", default)]
    transit_ms: f64,
    #[serde(rename = "Wait Time(ms)", default)]
    wait_ms: f64,
}

#[derive(Deserialize, Default)]
struct LinkInfo {
    #[serde(rename = "Transit Size(MB)", default)]
    size_mb: f64,
    #[serde(rename = "Transit Time(ms)", default)]
    time_ms: f64,
    /// Packet size (MB, as text) → [count, time (ms)].
    #[serde(rename = "Size Distribution", default)]
    sizes: HashMap<String, (f64, f64)>,
}

/// The link types whose packets are judged, and their small-packet size (MB).
fn small_below(link: &str) -> Option<f64> {
    match link {
        "HCCS" | "PCIE" | "SIO" => Some(SDMA_SMALL_MB),
        "RDMA" => Some(RDMA_SMALL_MB),
        _ => None,
    }
}

/// The key torch_npu gives the per-step totals of every operator.
const TOTAL_OP_INFO: &str = "Total Op Info";

/// Reads a `communication.json` (step → `p2p`/`collective` → operator → info).
pub fn read_comm(path: &Path) -> Result<Comm, SummaryError> {
    let json = |source| SummaryError::Json {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(|source| SummaryError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    type Steps = BTreeMap<String, BTreeMap<String, BTreeMap<String, OpEntry>>>;
    let steps: Steps = serde_json::from_reader(std::io::BufReader::new(file)).map_err(json)?;
    let mut comm = Comm {
        steps: steps.len(),
        ..Comm::default()
    };
    let mut links: BTreeMap<String, Link> = BTreeMap::new();
    let mut ops: BTreeMap<String, CommOp> = BTreeMap::new();
    for (name, op) in steps
        .values()
        .flat_map(BTreeMap::values)
        .flat_map(BTreeMap::iter)
    {
        if name == TOTAL_OP_INFO {
            continue;
        }
        let time = op.time.as_ref();
        let ms = |f: fn(&TimeInfo) -> f64| time.map_or(0.0, f) * 1000.0;
        comm.elapse_us += ms(|t| t.elapse_ms);
        comm.wait_us += ms(|t| t.wait_ms);
        comm.transit_us += ms(|t| t.transit_ms);
        let short = name.split('@').next().unwrap_or(name);
        let entry = ops.entry(short.to_owned()).or_insert_with(|| CommOp {
            name: short.to_owned(),
            count: 0,
            elapse_us: 0.0,
            wait_us: 0.0,
        });
        entry.count += 1;
        entry.elapse_us += ms(|t| t.elapse_ms);
        entry.wait_us += ms(|t| t.wait_ms);
        for (kind, info) in op.bandwidth.iter().flatten() {
            let Some(below) = small_below(kind) else {
                continue;
            };
            let link = links.entry(kind.clone()).or_insert_with(|| Link {
                link: kind.clone(),
                size_mb: 0.0,
                time_ms: 0.0,
                bandwidth_gb_s: None,
                transfers: 0,
                small: 0,
                small_ms: 0.0,
                small_below_mb: below,
            });
            link.size_mb += info.size_mb;
            link.time_ms += info.time_ms;
            for (size, &(count, ms)) in &info.sizes {
                let count = count.max(0.0) as u64;
                link.transfers += count;
                if size.trim().parse::<f64>().is_ok_and(|mb| mb < below) {
                    link.small += count;
                    link.small_ms += ms;
                }
            }
        }
    }
    comm.links = links
        .into_values()
        .filter(|l| l.size_mb > 0.0 || l.transfers > 0)
        .map(|mut l| {
            l.bandwidth_gb_s = (l.time_ms > 0.0).then(|| l.size_mb / l.time_ms);
            l
        })
        .collect();
    comm.ops = ops.into_values().collect();
    comm.ops.sort_by(|a, b| {
        b.elapse_us
            .total_cmp(&a.elapse_us)
            .then(a.name.cmp(&b.name))
    });
    Ok(comm)
}
