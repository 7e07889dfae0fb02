//! `communication_matrix.json` (multi-card runs): per communication operator, what went from
//! which rank to which, how fast.
//!
//! The file is `{"step<N>": {"p2p"|"collective": {"<op>-<part>@<group>": {"<src>-<dst>":
//! {"Transport Type", "Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)", "Op Name"}}}}}`
//! where `<part>` is `total` (the operator type's sum) or one of the vendor's picks (`top1`,
//! `middle`, `bottom1`…, single calls). Only the `total` entries are read, summed over steps;
//! a link's bandwidth is then its summed size over its summed time. Streamed (one operator at a
//! time), at most [`MAX_LINKS`] links kept.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::SummaryError;

/// The file, in [`crate::run::OUTPUT_DIR`].
pub const COMMUNICATION_MATRIX: &str = "communication_matrix.json";

/// Links kept over all operators; the rest are counted in [`CommMatrix::dropped_links`].
pub const MAX_LINKS: usize = 100_000;

/// The part of an operator key that is the operator type's sum.
const TOTAL_PART: &str = "total";

/// A run's communication matrix.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CommMatrix {
    /// Steps in the file.
    pub steps: usize,
    /// Per operator type and group, its links; by operator, then group.
    pub ops: Vec<MatrixOp>,
    /// Links past [`MAX_LINKS`], not kept.
    pub dropped_links: u64,
}

/// One operator type's links in one communication group, summed over steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatrixOp {
    /// The operator type (`allreduce`, `allgather`, `batchsendrecv`, …).
    pub op: String,
    /// The communication group (the part after `@`).
    pub group: String,
    /// Its links, by source then destination rank.
    pub links: Vec<Link>,
}

/// What went from one rank to another.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    /// The sending rank.
    pub src: String,
    /// The receiving rank.
    pub dst: String,
    /// `Transport Type` (`HCCS`, `RDMA`, `LOCAL`, `PCIE`, `SIO`…).
    pub transport: String,
    /// Summed `Transit Size(MB)`.
    pub size_mb: f64,
    /// Summed `Transit Time(ms)`.
    pub time_ms: f64,
    /// `size_mb / time_ms` (GB/s, as the vendor's `Bandwidth(GB/s)`); 0 without time.
    pub bandwidth_gbps: f64,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "Transport Type", default)]
    transport: String,
    #[serde(rename = "Transit Size(MB)", default)]
    size_mb: f64,
    #[serde(rename = "Transit Time(ms)", default)]
    time_ms: f64,
}

/// Reads a `communication_matrix.json` in one streaming pass.
pub fn read_matrix(path: &Path) -> Result<CommMatrix, SummaryError> {
    // (op, group) → (src, dst) → (transport, size, time)
    type Links = BTreeMap<(String, String), (String, f64, f64)>;
    let mut ops: BTreeMap<(String, String), Links> = BTreeMap::new();
    let mut kept = 0usize;
    let mut dropped = 0u64;
    let steps = crate::comm::each_operator(path, |key, links: BTreeMap<String, Entry>| {
        let Some((op, group)) = total_entry(key) else {
            return;
        };
        let into = ops.entry((op.to_owned(), group.to_owned())).or_default();
        for (pair, entry) in links {
            let (src, dst) = pair.split_once('-').unwrap_or((&pair, ""));
            let link = (src.to_owned(), dst.to_owned());
            if !into.contains_key(&link) {
                if kept >= MAX_LINKS {
                    dropped += 1;
                    continue;
                }
                kept += 1;
            }
            let sums = into
                .entry(link)
                .or_insert_with(|| (entry.transport.clone(), 0.0, 0.0));
            sums.1 += entry.size_mb;
            sums.2 += entry.time_ms;
        }
    })?;
    let ops = ops
        .into_iter()
        .map(|((op, group), links)| {
            let mut links: Vec<Link> = links
                .into_iter()
                .map(|((src, dst), (transport, size_mb, time_ms))| Link {
                    bandwidth_gbps: if time_ms > 0.0 {
                        size_mb / time_ms
                    } else {
                        0.0
                    },
                    src,
                    dst,
                    transport,
                    size_mb,
                    time_ms,
                })
                .collect();
            links.sort_by(|a, b| rank_order(&a.src, &b.src).then(rank_order(&a.dst, &b.dst)));
            MatrixOp { op, group, links }
        })
        .collect();
    Ok(CommMatrix {
        steps,
        ops,
        dropped_links: dropped,
    })
}

/// `(op, group)` of an operator key `<op>-total@<group>`; `None` for the other parts.
fn total_entry(key: &str) -> Option<(&str, &str)> {
    let (name, group) = key.split_once('@').unwrap_or((key, ""));
    let (op, part) = name.rsplit_once('-')?;
    (part == TOTAL_PART).then_some((op, group))
}

/// Ranks in numeric order where they are numbers, else as text.
pub fn rank_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_are_summed_over_steps_and_picks_left_out() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(COMMUNICATION_MATRIX);
        let link = |size: f64, time: f64| {
            format!(
                r#"{{"1-0": {{"Transport Type": "HCCS", "Transit Size(MB)": {size}, "Transit Time(ms)": {time}, "Bandwidth(GB/s)": 1}}}}"#
            )
        };
        let step = |size: f64| {
            format!(
                r#"{{"p2p": {{}}, "collective": {{"allreduce-top1@g": {}, "allreduce-total@g": {}}}}}"#,
                link(100.0, 1.0),
                link(size, 2.0)
            )
        };
        let json = format!(r#"{{"step1": {}, "step2": {}}}"#, step(10.0), step(30.0));
        std::fs::write(&path, json).unwrap_or_else(|e| panic!("{e}"));
        let matrix = read_matrix(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(matrix.steps, 2);
        assert_eq!(matrix.ops.len(), 1);
        let op = &matrix.ops[0];
        assert_eq!((op.op.as_str(), op.group.as_str()), ("allreduce", "g"));
        let l = &op.links[0];
        assert_eq!(
            (
                l.src.as_str(),
                l.dst.as_str(),
                l.size_mb,
                l.time_ms,
                l.bandwidth_gbps
            ),
            ("1", "0", 40.0, 4.0, 10.0)
        );
        assert_eq!(total_entry("a-b-total@x@y"), Some(("a-b", "x@y")));
        assert_eq!(total_entry("allreduce-middle@g"), None);
    }
}
