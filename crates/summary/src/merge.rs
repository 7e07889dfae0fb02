//! The whole run's rank view from per-node summaries: a job of hundreds or thousands of ranks
//! spans machines that each hold their ranks' output, so each node runs `npuprof summary
//! --json` and `npuprof summary --merge` joins the documents — the ranks of every node compared
//! within their parallel groups (the one straggler rule, [`crate::ranks::straggler`]), the
//! pipeline stages across nodes, and which ranks of the world are missing or reported twice —
//! without copying any profile to one machine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use npuprof_runs::coverage::WorldSizeSource;
use npuprof_runs::probe::{self, FileProblem};
use npuprof_runs::profiler_info::ParallelGroups;
use serde::{Deserialize, Serialize};

use crate::SCHEMA_VERSION;
use crate::error::SummaryError;
use crate::ranks::{PhaseRanks, RankStep, phase_view};

/// The largest node summary read (a node's summary with its kernel tables is a few MB; the
/// merge reads only its runs' places and its ranks' step times).
pub const MAX_NODE_SUMMARY_BYTES: u64 = 256 << 20;

/// The parts of a node's `summary --json` the merge reads (other fields are skipped).
#[derive(Deserialize)]
struct NodeDocument {
    schema_version: Option<u64>,
    path: PathBuf,
    runs: Vec<NodeRun>,
    ranks: Vec<NodePhase>,
}

/// A run of a node summary: where it sits in the parallel groups.
#[derive(Deserialize)]
struct NodeRun {
    phase: Option<String>,
    dir: String,
    parallel: Option<ParallelGroups>,
}

/// A phase of a node summary: its ranks' step times.
#[derive(Deserialize)]
struct NodePhase {
    phase: Option<String>,
    per_rank: Vec<RankStep>,
}

/// One node's summary as read.
#[derive(Debug, Clone)]
pub struct NodeSummary {
    /// The document as given.
    pub report: PathBuf,
    /// The path that node summarised.
    pub path: PathBuf,
    /// Its ranks' step times per phase, each with its parallel groups.
    phases: Vec<(Option<String>, Vec<RankStep>)>,
}

/// Reads a `npuprof summary --json` document (bounded, schema checked).
pub fn read_node(report: &Path) -> Result<NodeSummary, SummaryError> {
    let bad = |reason: String| SummaryError::Unusable {
        path: report.to_path_buf(),
        reason,
    };
    let bytes = match probe::read_capped(report, MAX_NODE_SUMMARY_BYTES) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(len)) => {
            return Err(bad(format!(
                "{len} bytes: too large for a summary document (limit {MAX_NODE_SUMMARY_BYTES}; \
                 `summary --top` makes it smaller)"
            )));
        }
        Err(FileProblem::Missing) => return Err(bad("no such file".to_owned())),
        Err(FileProblem::NotRegular(kind)) => return Err(bad(format!("is {}", kind.describe()))),
        Err(FileProblem::Unreadable { message, .. }) => return Err(bad(message)),
    };
    let document: NodeDocument = serde_json::from_slice(&bytes).map_err(|e| {
        bad(format!(
            "not a `npuprof summary --json` document: {e} (give each node's summary --json)"
        ))
    })?;
    match document.schema_version {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(v) => {
            return Err(bad(format!(
                "schema_version {v}, this npuprof reads {SCHEMA_VERSION}"
            )));
        }
        None => return Err(bad("no schema_version: not a summary document".to_owned())),
    }
    let highest = document
        .ranks
        .iter()
        .flat_map(|p| p.per_rank.iter().filter_map(|r| r.rank))
        .max();
    if let Some(rank) = highest.filter(|r| *r >= npuprof_runs::MAX_RANKS) {
        return Err(bad(format!(
            "it names rank {rank}, more than the {} ranks npuprof handles",
            npuprof_runs::MAX_RANKS
        )));
    }
    let label = report.display().to_string();
    let phases = document
        .ranks
        .into_iter()
        .map(|phase| {
            let per_rank = phase
                .per_rank
                .into_iter()
                .map(|mut r| {
                    r.parallel = document
                        .runs
                        .iter()
                        .find(|run| run.phase == phase.phase && run.dir == r.dir)
                        .and_then(|run| run.parallel.clone());
                    r.dir = format!("{label}:{}", r.dir);
                    r
                })
                .collect();
            (phase.phase, per_rank)
        })
        .collect();
    Ok(NodeSummary {
        report: report.to_path_buf(),
        path: document.path,
        phases,
    })
}

/// The merged rank view of the whole run.
#[derive(Debug, Clone, Serialize)]
pub struct MergedSummary {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// One entry per node document, in the order given.
    pub nodes: Vec<MergedNode>,
    /// Per phase: the rank view of all nodes' ranks together, as `summary` computes it for
    /// the ranks of one machine (`per_rank[].dir` is `<document>:<run directory>`).
    pub ranks: Vec<PhaseRanks>,
    /// Per phase: which ranks of the world are there, missing, or reported twice.
    pub coverage: Vec<Coverage>,
}

/// One node document.
#[derive(Debug, Clone, Serialize)]
pub struct MergedNode {
    /// The document as given.
    pub report: String,
    /// The path that node summarised.
    pub path: String,
    /// Its ranks with step times (all phases).
    pub ranks: Vec<u32>,
}

/// Which ranks of one phase the nodes reported.
#[derive(Debug, Clone, Serialize)]
pub struct Coverage {
    /// The phase, when known.
    pub phase: Option<String>,
    /// The run's ranks, by verify `--merge`'s rule ([`npuprof_runs::coverage::world_size`]):
    /// the largest the documents record (the parallel groups: one more than the highest rank
    /// of any group), else one more than the highest rank of any document, any phase.
    pub world_size: u32,
    /// Where `world_size` comes from: `reports` (recorded) or `highest-rank`.
    pub world_size_source: WorldSizeSource,
    /// Ranks present, once each.
    pub ranks_present: Vec<u32>,
    /// Ranks of `0..world_size` no node reported.
    pub ranks_missing: Vec<u32>,
    /// Ranks more than one document reported (the first document's is compared).
    pub ranks_duplicated: Vec<u32>,
}

impl MergedSummary {
    /// Whether some rank is missing or reported twice (the merge then needs another look).
    pub fn incomplete(&self) -> bool {
        self.coverage
            .iter()
            .any(|c| !c.ranks_missing.is_empty() || !c.ranks_duplicated.is_empty())
    }
}

/// Joins node summaries: per phase, every node's ranks compared as one run.
pub fn merge(nodes: &[NodeSummary]) -> MergedSummary {
    let mut phases: Vec<Option<String>> = Vec::new();
    for node in nodes {
        for (phase, _) in &node.phases {
            if !phases.contains(phase) {
                phases.push(phase.clone());
            }
        }
    }
    // One world for every phase, as verify `--merge` has it.
    let all_steps = || nodes.iter().flat_map(|n| &n.phases).flat_map(|(_, s)| s);
    let (world_size, world_size_source) = npuprof_runs::coverage::world_size(
        None,
        all_steps().filter_map(|r| r.parallel.as_ref()?.world_size),
        all_steps().filter_map(|r| r.rank),
    );
    let mut ranks = Vec::new();
    let mut coverage = Vec::new();
    for phase in phases {
        let mut seen: BTreeSet<u32> = BTreeSet::new();
        let mut duplicated: BTreeSet<u32> = BTreeSet::new();
        let mut per_rank: Vec<RankStep> = Vec::new();
        let of_phase = nodes
            .iter()
            .flat_map(|n| n.phases.iter().filter(|(p, _)| *p == phase))
            .flat_map(|(_, steps)| steps);
        for step in of_phase {
            if let Some(rank) = step.rank
                && !seen.insert(rank)
            {
                duplicated.insert(rank);
                continue;
            }
            per_rank.push(step.clone());
        }
        let ranks_missing =
            npuprof_runs::coverage::missing_ranks(world_size, |r| seen.contains(&r));
        coverage.push(Coverage {
            phase: phase.clone(),
            world_size,
            world_size_source,
            ranks_present: seen.into_iter().collect(),
            ranks_missing,
            ranks_duplicated: duplicated.into_iter().collect(),
        });
        ranks.push(phase_view(phase, per_rank));
    }
    let nodes = nodes
        .iter()
        .map(|n| {
            let ranks: BTreeSet<u32> = n
                .phases
                .iter()
                .flat_map(|(_, steps)| steps.iter().filter_map(|r| r.rank))
                .collect();
            MergedNode {
                report: n.report.display().to_string(),
                path: n.path.display().to_string(),
                ranks: ranks.into_iter().collect(),
            }
        })
        .collect();
    MergedSummary {
        schema_version: SCHEMA_VERSION,
        nodes,
        ranks,
        coverage,
    }
}

/// `0-3, 7` for a sorted list of ranks.
pub fn rank_ranges(ranks: &[u32]) -> String {
    let mut runs: BTreeMap<u32, u32> = BTreeMap::new();
    let mut last: Option<(u32, u32)> = None;
    for &r in ranks {
        last = match last {
            Some((start, end)) if r == end + 1 => Some((start, r)),
            Some((start, end)) => {
                runs.insert(start, end);
                Some((r, r))
            }
            None => Some((r, r)),
        };
    }
    if let Some((start, end)) = last {
        runs.insert(start, end);
    }
    let parts: Vec<String> = runs
        .into_iter()
        .map(|(s, e)| {
            if s == e {
                s.to_string()
            } else {
                format!("{s}-{e}")
            }
        })
        .collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::rank_ranges;

    #[test]
    fn ranks_are_written_as_ranges() {
        assert_eq!(rank_ranges(&[]), "");
        assert_eq!(rank_ranges(&[3]), "3");
        assert_eq!(rank_ranges(&[0, 1, 2, 3, 7, 9, 10]), "0-3, 7, 9-10");
    }
}
