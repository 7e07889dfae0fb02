//! The whole-run verdict from per-node reports: a 64–128-rank run spans machines that each hold
//! their ranks on their own disk, so each node runs `npuprof verify --json` and
//! `npuprof verify --merge` joins the reports: every rank present exactly once per phase (runs
//! of unknown rank may stand for missing ones, as on one node), every phase covered, the ranks
//! of a phase recording the same steps.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cross_run::{fmt_ranks, phase_key};
use crate::finding::{Code, Evidence, Finding, Severity};
use crate::report::{SCHEMA_VERSION, VerifyReport};
pub use npuprof_runs::coverage::WorldSizeSource;
use npuprof_runs::error::VerifyError;
use npuprof_runs::probe::{self, FileProblem};

/// The largest report read (a 128-rank node report is well under a MiB).
pub const MAX_REPORT_BYTES: u64 = 16 << 20;

/// Just the schema version, read before the whole report (unknown fields are skipped).
#[derive(serde::Deserialize)]
struct Version {
    schema_version: Option<u64>,
}

/// Findings of the node reports that the merge decides again for the whole run.
const REDECIDED: [Code; 3] = [Code::RankMissing, Code::RankSubset, Code::WorldSizeUnknown];

/// One node's report and where it came from.
#[derive(Debug, Clone)]
pub struct NodeReport {
    /// The report file as given.
    pub path: PathBuf,
    /// Its contents.
    pub report: VerifyReport,
}

/// Reads a `npuprof verify --json` report (bounded, schema checked).
pub fn read_report(path: &Path) -> Result<NodeReport, VerifyError> {
    let bad = |why: String| VerifyError::BadReport(path.to_path_buf(), why);
    let bytes = match probe::read_capped(path, MAX_REPORT_BYTES) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(len)) => {
            return Err(bad(format!(
                "{len} bytes: too large for a verify report (limit {MAX_REPORT_BYTES})"
            )));
        }
        Err(FileProblem::Missing) => return Err(VerifyError::PathNotFound(path.to_path_buf())),
        Err(FileProblem::NotRegular(kind)) => return Err(bad(format!("is {}", kind.describe()))),
        Err(FileProblem::Unreadable { message, .. }) => return Err(bad(message)),
    };
    let version: Version = serde_json::from_slice(&bytes).map_err(|e| {
        bad(format!(
            "not a JSON object: {e} (give the output of `npuprof verify --json`)"
        ))
    })?;
    match version.schema_version {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(v) => {
            return Err(bad(format!(
                "schema_version {v}, this npuprof reads {SCHEMA_VERSION}"
            )));
        }
        None => {
            return Err(bad(
                "no schema_version: not a `npuprof verify --json` report".to_owned(),
            ));
        }
    }
    let report: VerifyReport =
        serde_json::from_slice(&bytes).map_err(|e| bad(format!("not a verify report: {e}")))?;
    let largest = report
        .runs
        .iter()
        .filter_map(|r| r.rank.map(|rank| u64::from(rank) + 1))
        .chain(report.target.expected_ranks.map(u64::from))
        .max();
    if let Some(n) = largest.filter(|n| *n > u64::from(crate::MAX_RANKS)) {
        return Err(bad(format!(
            "it names {n} ranks, more than the {} npuprof handles",
            crate::MAX_RANKS
        )));
    }
    Ok(NodeReport {
        path: path.to_path_buf(),
        report,
    })
}

/// The merged, whole-run verdict.
#[derive(Debug, Clone, Serialize)]
pub struct MergedReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `true` when no finding is an error.
    pub ok: bool,
    /// Ranks of the whole run.
    pub world_size: u32,
    /// Where `world_size` comes from: `--ranks`, `reports` (their expected ranks) or
    /// `highest-rank` (one more than the highest rank seen).
    pub world_size_source: WorldSizeSource,
    /// One entry per node report, in the order given.
    pub nodes: Vec<NodeSummary>,
    /// Rank coverage and step consistency per phase.
    pub phases: Vec<PhaseCoverage>,
    /// The nodes' own findings (each message prefixed with its report) and the whole-run ones,
    /// errors first.
    pub findings: Vec<Finding>,
}

/// One node report.
#[derive(Debug, Clone, Serialize)]
pub struct NodeSummary {
    /// The report file.
    pub report: String,
    /// The path that node verified.
    pub target: String,
    /// That node's own verdict.
    pub ok: bool,
    /// Ranks found on that node (all phases).
    pub ranks: Vec<u32>,
}

/// One phase across the nodes.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseCoverage {
    /// Phase name, or null for runs outside a phase directory.
    pub phase: Option<String>,
    /// Ranks present.
    pub ranks_present: Vec<u32>,
    /// Ranks of `0..world_size` absent.
    pub ranks_missing: Vec<u32>,
    /// Ranks reported by more than one node.
    pub ranks_duplicated: Vec<u32>,
    /// Run directories whose rank is unknown (no rank in their profiler_info or
    /// profiler_metadata): they may be some of `ranks_missing`.
    pub runs_of_unknown_rank: usize,
    /// Groups of ranks by the `Step Id`s their kernel_details.csv holds, largest group first.
    pub step_groups: Vec<StepGroup>,
}

/// Ranks that recorded the same steps.
#[derive(Debug, Clone, Serialize)]
pub struct StepGroup {
    /// The steps.
    pub steps: Vec<u64>,
    /// The ranks.
    pub ranks: Vec<u32>,
}

/// Per rank: the indexes of the reports it is in, and the steps recorded there.
type ByRank = BTreeMap<u32, (BTreeSet<usize>, Vec<u64>)>;

/// What the reports hold of one phase.
#[derive(Default)]
struct PhaseSeen {
    phase: Option<String>,
    by_rank: ByRank,
    /// Runs whose rank is unknown.
    unknown: usize,
}

/// Per phase (in phase order), what the reports hold of it.
type Seen = BTreeMap<(u8, String), PhaseSeen>;

fn collect_seen(nodes: &[NodeReport]) -> Seen {
    let mut seen: Seen = BTreeMap::new();
    for (i, node) in nodes.iter().enumerate() {
        for run in &node.report.runs {
            let entry = seen
                .entry(phase_key(run.phase.as_deref()))
                .or_insert_with(|| PhaseSeen {
                    phase: run.phase.clone(),
                    ..PhaseSeen::default()
                });
            let Some(rank) = run.rank else {
                entry.unknown += 1;
                continue;
            };
            let slot = entry.by_rank.entry(rank).or_default();
            slot.0.insert(i);
            if slot.1.is_empty() {
                slot.1.clone_from(&run.steps.kernel_details);
            }
        }
    }
    seen
}

/// The whole run's world size, by the rule every merge uses
/// ([`npuprof_runs::coverage::world_size`]): `--ranks`, else the largest the reports record,
/// else one more than the highest rank they hold.
fn world_size(nodes: &[NodeReport], ranks: Option<u32>, seen: &Seen) -> (u32, WorldSizeSource) {
    npuprof_runs::coverage::world_size(
        ranks,
        nodes.iter().filter_map(|n| n.report.target.expected_ranks),
        seen.values()
            .flat_map(|phase| phase.by_rank.keys().copied()),
    )
}

/// Merges node reports into the whole-run verdict; `ranks` is `--ranks`.
pub fn merge(nodes: &[NodeReport], ranks: Option<u32>) -> MergedReport {
    let seen = collect_seen(nodes);
    let (world, source) = world_size(nodes, ranks, &seen);
    let mut findings = node_findings(nodes);
    let phases: Vec<PhaseCoverage> = seen
        .values()
        .map(|seen| phase_coverage(seen, world, nodes, &mut findings))
        .collect();
    findings.sort_by_key(|f| (f.severity, f.code));
    MergedReport {
        schema_version: SCHEMA_VERSION,
        ok: !findings.iter().any(|f| f.severity == Severity::Error),
        world_size: world,
        world_size_source: source,
        nodes: nodes.iter().map(node_summary).collect(),
        phases,
        findings,
    }
}

fn node_summary(node: &NodeReport) -> NodeSummary {
    let ranks: BTreeSet<u32> = node.report.runs.iter().filter_map(|r| r.rank).collect();
    NodeSummary {
        report: node.path.display().to_string(),
        target: node.report.target.path.clone(),
        ok: node.report.ok,
        ranks: ranks.into_iter().collect(),
    }
}

fn node_findings(nodes: &[NodeReport]) -> Vec<Finding> {
    nodes
        .iter()
        .flat_map(|node| {
            node.report
                .findings
                .iter()
                .filter(|f| !REDECIDED.contains(&f.code))
                .map(|f| {
                    let mut f = f.clone();
                    f.message = format!("{}: {}", node.path.display(), f.message);
                    f
                })
        })
        .collect()
}

fn report_names(nodes: &[NodeReport], indexes: &BTreeSet<usize>) -> String {
    indexes
        .iter()
        .map(|i| nodes[*i].path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn phase_coverage(
    seen: &PhaseSeen,
    world: u32,
    nodes: &[NodeReport],
    findings: &mut Vec<Finding>,
) -> PhaseCoverage {
    let (phase, by_rank) = (seen.phase.as_deref(), &seen.by_rank);
    let in_phase = phase.map(|p| format!("phase {p}: ")).unwrap_or_default();
    let present: Vec<u32> = by_rank.keys().copied().collect();
    let missing = npuprof_runs::coverage::missing_ranks(world, |r| by_rank.contains_key(&r));
    // Runs of unknown rank may be the missing ones (as verify counts them on one node): only
    // what they cannot be is an error.
    if missing.len() > seen.unknown {
        let unknown = match seen.unknown {
            0 => String::new(),
            n => format!(" ({n} run director(ies) of unknown rank may be some of them)"),
        };
        findings.push(
            Finding::new(
                Code::RankMissing,
                format!(
                    "{in_phase}rank(s) {} of {world} are in none of the {} node report(s){unknown}",
                    fmt_ranks(&missing),
                    nodes.len()
                ),
                Evidence::default(),
                "verify the node(s) that hold those ranks and add their reports; if a rank's run directory is absent there, read its log for a crash or a parser failure",
            )
            .at(phase, None),
        );
    }
    let duplicated: Vec<u32> = by_rank
        .iter()
        .filter(|(_, (reports, _))| reports.len() > 1)
        .map(|(r, _)| *r)
        .collect();
    for rank in &duplicated {
        let reports = &by_rank[rank].0;
        findings.push(
            Finding::new(
                Code::RankDuplicate,
                format!(
                    "{in_phase}rank {rank} is in {} node reports ({}): the same rank ran twice, or one report was given twice",
                    reports.len(),
                    report_names(nodes, reports)
                ),
                Evidence::default(),
                "give each node's report once; if two nodes really ran the same rank, fix the launcher's rank assignment and re-run",
            )
            .at(phase, Some(*rank)),
        );
    }
    let step_groups = step_groups(by_rank);
    if let [majority, others @ ..] = step_groups.as_slice()
        && !others.is_empty()
    {
        let odd: Vec<String> = others
            .iter()
            .map(|g| {
                format!(
                    "rank(s) {} recorded step(s) {:?}",
                    fmt_ranks(&g.ranks),
                    g.steps
                )
            })
            .collect();
        findings.push(
            Finding::new(
                Code::StepsInconsistent,
                format!(
                    "{in_phase}ranks disagree on the recorded steps: {} rank(s) recorded {:?}, but {}",
                    majority.ranks.len(),
                    majority.steps,
                    odd.join("; ")
                ),
                Evidence::default(),
                "every rank must run the same schedule and call prof.step() the same number of times; check those ranks' configuration and logs",
            )
            .at(phase, None),
        );
    }
    PhaseCoverage {
        phase: phase.map(str::to_owned),
        ranks_present: present,
        ranks_missing: missing,
        ranks_duplicated: duplicated,
        runs_of_unknown_rank: seen.unknown,
        step_groups,
    }
}

fn step_groups(by_rank: &ByRank) -> Vec<StepGroup> {
    let mut groups: BTreeMap<&[u64], Vec<u32>> = BTreeMap::new();
    for (rank, (_, steps)) in by_rank {
        groups.entry(steps.as_slice()).or_default().push(*rank);
    }
    let mut groups: Vec<StepGroup> = groups
        .into_iter()
        .map(|(steps, ranks)| StepGroup {
            steps: steps.to_vec(),
            ranks,
        })
        .collect();
    groups.sort_by(|a, b| {
        b.ranks
            .len()
            .cmp(&a.ranks.len())
            .then(a.steps.cmp(&b.steps))
    });
    groups
}
