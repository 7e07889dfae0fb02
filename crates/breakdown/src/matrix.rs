//! Across the ranks of a phase: each node (module path, or layer index) × rank, and the slowest
//! rank per node — where one rank loses time against the others.

use crate::Map;

use serde::Serialize;

use crate::{Method, RunBreakdown};

/// One node's time on each rank.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatrixRow {
    /// The module path, or `layer <index>`.
    pub node: String,
    /// Depth in the module tree (layers: 1).
    pub depth: usize,
    /// Time per rank, in the order of [`Matrix::ranks`] (µs; module: `total_us`; layer:
    /// `median_us`); `None` where the rank has no such node.
    pub us: Vec<Option<f64>>,
    /// The rank with the most time on this node.
    pub slowest_rank: Option<u32>,
    /// Slowest minus fastest (µs) over the ranks that have the node.
    pub spread_us: f64,
}

/// The node × rank matrix of one phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Matrix {
    /// The phase, when known.
    pub phase: Option<String>,
    /// What the rows are.
    pub method: Method,
    /// The ranks, one column each.
    pub ranks: Vec<Option<u32>>,
    /// One row per node, in the first rank's order (nodes only other ranks have after).
    pub rows: Vec<MatrixRow>,
}

/// The matrices of the phases with two runs or more broken down by one method (runs sorted by
/// phase, then rank).
pub fn matrices(runs: &[RunBreakdown]) -> Vec<Matrix> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < runs.len() {
        let phase = &runs[start].phase;
        let end = start
            + runs[start..]
                .iter()
                .take_while(|r| &r.phase == phase)
                .count();
        let group = &runs[start..end];
        start = end;
        let method = group[0].method;
        if group.len() < 2 || method == Method::None || group.iter().any(|r| r.method != method) {
            continue;
        }
        let columns: Vec<Vec<(String, usize, f64)>> = group
            .iter()
            .map(|run| match method {
                Method::Modules => run
                    .modules
                    .iter()
                    .map(|m| (m.path.clone(), m.depth, m.total_us))
                    .collect(),
                _ => run.layers.as_ref().map_or_else(Vec::new, |l| {
                    l.items
                        .iter()
                        .map(|it| (format!("layer {}", it.index), 1, it.median_us))
                        .collect()
                }),
            })
            .collect();
        let mut order: Vec<(String, usize)> = Vec::new();
        let mut index: Map<String, usize> = Map::default();
        for column in &columns {
            for (node, depth, _) in column {
                if !index.contains_key(node) {
                    index.insert(node.clone(), order.len());
                    order.push((node.clone(), *depth));
                }
            }
        }
        let mut cells: Vec<Vec<Option<f64>>> = vec![vec![None; group.len()]; order.len()];
        for (c, column) in columns.iter().enumerate() {
            for (node, _, us) in column {
                cells[index[node]][c] = Some(*us);
            }
        }
        let rows = order
            .into_iter()
            .zip(cells)
            .map(|((node, depth), us)| {
                let present: Vec<(usize, f64)> = us
                    .iter()
                    .enumerate()
                    .filter_map(|(c, v)| v.map(|v| (c, v)))
                    .collect();
                let slowest = present.iter().max_by(|a, b| a.1.total_cmp(&b.1));
                let fastest = present.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
                MatrixRow {
                    node,
                    depth,
                    slowest_rank: slowest.and_then(|s| group[s.0].rank),
                    spread_us: slowest.map_or(0.0, |s| s.1 - fastest),
                    us,
                }
            })
            .collect();
        out.push(Matrix {
            phase: phase.clone(),
            method,
            ranks: group.iter().map(|r| r.rank).collect(),
            rows,
        });
    }
    out
}
