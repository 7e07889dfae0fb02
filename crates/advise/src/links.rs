//! `communication.json` as the rules need it: per link type (HCCS, PCIe, SIO, RDMA) the data
//! moved, its time and its packet sizes; the operators' time and waiting.
//!
//! The `Size Distribution` keys are packet sizes in MB of 10^6 bytes, written to the byte: the
//! real run's `1.937312` is the 1937312-byte `Memcpy` of its trace_view.json's HCCL tasks. So a
//! key is a whole number of bytes, and its 512-byte alignment is known exactly.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::thresholds::{ALIGN_BYTES, MAX_SIZES, RDMA_SMALL_MB, SDMA_SMALL_MB};
use npuprof_summary::comm::each_operator;
use npuprof_summary::{SummaryError, db_export};

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
    /// Data moved in transfers of the small-packet size or more (MB): those that can reach
    /// the link's bandwidth.
    pub large_mb: f64,
    /// Time of those transfers (ms).
    pub large_ms: f64,
    /// Transfers of the small-packet size or more.
    pub large: u64,
    /// `large_mb / large_ms` (GB/s): the bandwidth the link reached; `None` without large
    /// transfers.
    pub large_bandwidth_gb_s: Option<f64>,
    /// Whether transfers over this link are judged for their alignment (the SDMA links).
    pub aligned_judged: bool,
    /// Transfers whose size is not a multiple of [`ALIGN_BYTES`] (SDMA links only).
    pub unaligned: u64,
    /// Time of those transfers (ms).
    pub unaligned_ms: f64,
    /// The unaligned sizes (bytes) with their transfers and time (ms), by size; at most
    /// [`MAX_SIZES`] sizes are listed (the counts above hold them all).
    pub unaligned_sizes: BTreeMap<u64, (u64, f64)>,
    /// Transfers whose size is not a whole number of bytes (alignment not judged).
    pub inexact: u64,
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

/// One communication operator name's unaligned SDMA transfers, summed over the steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnalignedOp {
    /// The operator name (before `@group`).
    pub name: String,
    /// Its SDMA transfers judged for alignment.
    pub transfers: u64,
    /// Those whose size is not a multiple of [`ALIGN_BYTES`].
    pub unaligned: u64,
    /// Their time (ms).
    pub unaligned_ms: f64,
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
    /// Operators with unaligned SDMA transfers, longest unaligned time first (empty from a db
    /// export, whose bandwidth table is read without operator names).
    pub unaligned_ops: Vec<UnalignedOp>,
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

/// The link types whose packets are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LinkKind {
    /// HCCS, PCIe or SIO: the links of SDMA (the aggregate `SDMA` entry is their sum).
    Sdma,
    /// RDMA (RoCE between servers).
    Rdma,
}

impl LinkKind {
    /// The kind of `link` as torch_npu names it; `None` for the aggregate `SDMA` and others.
    fn of(link: &str) -> Option<Self> {
        match link {
            "HCCS" | "PCIE" | "SIO" => Some(Self::Sdma),
            "RDMA" => Some(Self::Rdma),
            _ => None,
        }
    }

    /// The small-packet size (MB).
    fn small_below_mb(self) -> f64 {
        match self {
            Self::Sdma => SDMA_SMALL_MB,
            Self::Rdma => RDMA_SMALL_MB,
        }
    }
}

/// A packet size in MB (10^6 bytes) as a whole number of bytes; `None` when it is not one
/// (then its alignment is not known).
pub fn whole_bytes(size_mb: f64) -> Option<u64> {
    let bytes = size_mb * 1e6;
    let whole = bytes.round();
    (size_mb >= 0.0 && (bytes - whole).abs() <= 1e-3).then_some(whole as u64)
}

/// Reads a `communication.json` (step → `p2p`/`collective` → operator → info) in one
/// streaming pass (summary's [`each_operator`]): memory is bounded by the distinct operator
/// names and link types, not by the steps.
pub fn read_comm(path: &Path) -> Result<Comm, SummaryError> {
    let mut acc = Acc::default();
    acc.comm.steps = each_operator(path, |name, op: OpEntry| acc.add(name, &op))?;
    Ok(acc.finish())
}

/// Reads the communication of a db export's `analysis.db` (`CommAnalyzerTime` and
/// `CommAnalyzerBandwidth`, what `communication.json` holds); `None` without the tables.
pub fn read_db_comm(path: &Path) -> Result<Option<Comm>, SummaryError> {
    let mut acc = Acc::default();
    let steps = db_export::each_comm_time(path, |op| {
        acc.add_times(op.name, op.elapse_ms, op.transit_ms, op.wait_ms);
    })?;
    let Some(steps) = steps else {
        return Ok(None);
    };
    acc.comm.steps = steps;
    db_export::each_link_row(path, |row| {
        if row.first {
            acc.add_link(row.link, row.size_mb, row.time_ms);
        }
        if row.count > 0.0 {
            acc.add_packets(row.link, Some(row.packet_mb), row.count, row.packet_ms);
        }
    })?;
    Ok(Some(acc.finish()))
}

/// An operator name without its `@group`.
fn short_name(name: &str) -> &str {
    name.split('@').next().unwrap_or(name)
}

/// What the pass adds up.
#[derive(Default)]
struct Acc {
    comm: Comm,
    links: BTreeMap<String, Link>,
    ops: BTreeMap<String, CommOp>,
    unaligned_ops: BTreeMap<String, UnalignedOp>,
}

/// What one packet size adds to the alignment judgement of its operator.
#[derive(Default)]
struct Alignment {
    judged: u64,
    unaligned: u64,
    unaligned_ms: f64,
}

impl Acc {
    /// Adds one operator.
    fn add(&mut self, name: &str, op: &OpEntry) {
        let time = op.time.as_ref();
        let ms = |f: fn(&TimeInfo) -> f64| time.map_or(0.0, f);
        self.add_times(
            name,
            ms(|t| t.elapse_ms),
            ms(|t| t.transit_ms),
            ms(|t| t.wait_ms),
        );
        let mut alignment = Alignment::default();
        for (kind, info) in op.bandwidth.iter().flatten() {
            self.add_link(kind, info.size_mb, info.time_ms);
            for (size, &(count, ms)) in &info.sizes {
                let added = self.add_packets(kind, size.trim().parse::<f64>().ok(), count, ms);
                alignment.judged += added.judged;
                alignment.unaligned += added.unaligned;
                alignment.unaligned_ms += added.unaligned_ms;
            }
        }
        let short = short_name(name);
        if let Some(entry) = self.unaligned_ops.get_mut(short) {
            entry.transfers += alignment.judged;
            entry.unaligned += alignment.unaligned;
            entry.unaligned_ms += alignment.unaligned_ms;
        } else if alignment.judged > 0 {
            self.unaligned_ops.insert(
                short.to_owned(),
                UnalignedOp {
                    name: short.to_owned(),
                    transfers: alignment.judged,
                    unaligned: alignment.unaligned,
                    unaligned_ms: alignment.unaligned_ms,
                },
            );
        }
    }

    /// Adds one operator's times (ms).
    fn add_times(&mut self, name: &str, elapse_ms: f64, transit_ms: f64, wait_ms: f64) {
        self.comm.elapse_us += elapse_ms * 1000.0;
        self.comm.wait_us += wait_ms * 1000.0;
        self.comm.transit_us += transit_ms * 1000.0;
        let short = short_name(name);
        let entry = self.ops.entry(short.to_owned()).or_insert_with(|| CommOp {
            name: short.to_owned(),
            count: 0,
            elapse_us: 0.0,
            wait_us: 0.0,
        });
        entry.count += 1;
        entry.elapse_us += elapse_ms * 1000.0;
        entry.wait_us += wait_ms * 1000.0;
    }

    /// The judged link `kind` (`None` for the links not judged, e.g. the aggregate `SDMA`).
    fn link(&mut self, kind: &str) -> Option<&mut Link> {
        let link_kind = LinkKind::of(kind)?;
        Some(self.links.entry(kind.to_owned()).or_insert_with(|| Link {
            link: kind.to_owned(),
            size_mb: 0.0,
            time_ms: 0.0,
            bandwidth_gb_s: None,
            transfers: 0,
            small: 0,
            small_ms: 0.0,
            small_below_mb: link_kind.small_below_mb(),
            large_mb: 0.0,
            large_ms: 0.0,
            large: 0,
            large_bandwidth_gb_s: None,
            aligned_judged: link_kind == LinkKind::Sdma,
            unaligned: 0,
            unaligned_ms: 0.0,
            unaligned_sizes: BTreeMap::new(),
            inexact: 0,
        }))
    }

    /// Adds one operator's data and time on link `kind`.
    fn add_link(&mut self, kind: &str, size_mb: f64, time_ms: f64) {
        if let Some(link) = self.link(kind) {
            link.size_mb += size_mb;
            link.time_ms += time_ms;
        }
    }

    /// Adds `count` packets of `size_mb` (`None`: a size that is not a number) taking `ms`;
    /// returns what they add to the alignment judgement.
    fn add_packets(&mut self, kind: &str, size_mb: Option<f64>, count: f64, ms: f64) -> Alignment {
        let mut added = Alignment::default();
        let Some(link) = self.link(kind) else {
            return added;
        };
        let count = count.max(0.0) as u64;
        link.transfers += count;
        let Some(mb) = size_mb else {
            if link.aligned_judged {
                link.inexact += count;
            }
            return added;
        };
        if mb < link.small_below_mb {
            link.small += count;
            link.small_ms += ms;
        } else {
            link.large += count;
            link.large_mb += mb * count as f64;
            link.large_ms += ms;
        }
        if !link.aligned_judged {
            return added;
        }
        match whole_bytes(mb) {
            None => link.inexact += count,
            // A few bytes (flags, a scalar) cannot fill 512: not judged, as the anchor does.
            Some(bytes) if bytes <= ALIGN_BYTES => {}
            Some(bytes) => {
                added.judged = count;
                if bytes % ALIGN_BYTES != 0 {
                    added.unaligned = count;
                    added.unaligned_ms = ms;
                    link.unaligned += count;
                    link.unaligned_ms += ms;
                    let listed = link.unaligned_sizes.len();
                    if let Some(entry) = link.unaligned_sizes.get_mut(&bytes) {
                        entry.0 += count;
                        entry.1 += ms;
                    } else if listed < MAX_SIZES {
                        link.unaligned_sizes.insert(bytes, (count, ms));
                    }
                }
            }
        }
        added
    }

    /// The links with data, with their bandwidth, and the operators by elapsed time.
    fn finish(self) -> Comm {
        let mut comm = self.comm;
        comm.links = self
            .links
            .into_values()
            .filter(|l| l.size_mb > 0.0 || l.transfers > 0)
            .map(|mut l| {
                l.bandwidth_gb_s = (l.time_ms > 0.0).then(|| l.size_mb / l.time_ms);
                l.large_bandwidth_gb_s = (l.large_ms > 0.0).then(|| l.large_mb / l.large_ms);
                l
            })
            .collect();
        comm.ops = self.ops.into_values().collect();
        comm.unaligned_ops = self
            .unaligned_ops
            .into_values()
            .filter(|op| op.unaligned > 0)
            .collect();
        comm.unaligned_ops.sort_by(|a, b| {
            b.unaligned_ms
                .total_cmp(&a.unaligned_ms)
                .then(a.name.cmp(&b.name))
        });
        comm.ops.sort_by(|a, b| {
            b.elapse_us
                .total_cmp(&a.elapse_us)
                .then(a.name.cmp(&b.name))
        });
        comm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comm_of(json: &str) -> Result<Comm, SummaryError> {
        let dir = tempfile::tempdir().map_err(|source| SummaryError::Io {
            path: "tempdir".into(),
            source,
        })?;
        let path = dir.path().join("communication.json");
        std::fs::write(&path, json).map_err(|source| SummaryError::Io {
            path: path.clone(),
            source,
        })?;
        read_comm(&path)
    }

    #[test]
    fn steps_operators_links_and_small_packets_add_up() {
        let op = |ms: f64| {
            format!(
                r#"{{"Communication Time Info": {{"Elapse Time(ms)": {ms}, "Wait Time(ms)": 0.5, "Transit Time(ms)": 0.25}},
                "Communication Bandwidth Info": {{
                  "HCCS": {{"Transit Size(MB)": 20, "Transit Time(ms)": 2, "Size Distribution": {{"2.0": [3, 0.75], "32.0": [1, 1.0]}}}},
                  "SDMA": {{"Transit Size(MB)": 20, "Transit Time(ms)": 2, "Size Distribution": {{}}}},
                  "RDMA": {{"Transit Size(MB)": 0, "Transit Time(ms)": 0, "Size Distribution": {{}}}}}}}}"#
            )
        };
        let json = format!(
            r#"{{"step1": {{"p2p": {{}}, "collective": {{"hcom_allReduce__1_0_1@g": {}, "Total Op Info": {{}}}}}},
                "step2": {{"collective": {{"hcom_allReduce__1_0_1@g": {}}}}}}}"#,
            op(1.0),
            op(3.0)
        );
        let comm = comm_of(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(comm.steps, 2);
        assert_eq!(
            (comm.elapse_us, comm.wait_us, comm.transit_us),
            (4000.0, 1000.0, 500.0)
        );
        assert_eq!(comm.ops.len(), 1);
        assert_eq!(
            (comm.ops[0].name.as_str(), comm.ops[0].count),
            ("hcom_allReduce__1_0_1", 2)
        );
        // SDMA (the sum of its links) is left out; RDMA without data too.
        assert_eq!(comm.links.len(), 1);
        let hccs = &comm.links[0];
        assert_eq!(
            (hccs.link.as_str(), hccs.transfers, hccs.small),
            ("HCCS", 8, 6)
        );
        assert_eq!((hccs.small_ms, hccs.bandwidth_gb_s), (1.5, Some(10.0)));
    }

    #[test]
    fn sizes_in_mb_are_whole_bytes_or_not_judged() {
        // The real run's keys (its trace's HCCL tasks give the same sizes in bytes).
        assert_eq!(whole_bytes(1.937312), Some(1_937_312));
        assert_eq!(whole_bytes(18.890752), Some(18_890_752));
        assert_eq!(whole_bytes("9.6e-05".parse().unwrap_or_default()), Some(96));
        assert_eq!(whole_bytes(0.333_333_3), None);
        assert_eq!(whole_bytes(-1.0), None);
    }

    #[test]
    fn a_cut_or_misshapen_file_is_an_error() {
        for json in [
            r#"{"step1": {"collective": {"#,
            r#"{"step1": []}"#,
            r#"{} trailing"#,
        ] {
            let message = comm_of(json)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                message.contains("not a torch_npu communication.json"),
                "{json}: {message}"
            );
        }
    }
}
