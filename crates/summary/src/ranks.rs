//! Across the ranks of a phase: per-rank step time, the slowest rank and the imbalance, and
//! the straggler told apart from the waiters.
//!
//! The rank with the longest step is not always the one to fix: in a collective every rank
//! waits for the last one, so the rank that *waits* most can have the longest step. The
//! straggler is the rank with the most time of its own per step (computing + free, what
//! `step_trace_time.csv` does not spend in communication); the waiter is the rank with the
//! most wait time in collectives (`communication.json`). Both are named only past
//! [`RANK_SPREAD`], the anchor's 5 % slow-rank threshold; ties go to the lower rank.

use serde::Serialize;

use crate::run::RunSummary;

/// How a run's rank reads in reports: `rank N`, or, when its profiler_info records none (a
/// process without `RANK` or torch.distributed: torch_npu then writes no `rank_id`), that in
/// words.
pub fn rank_label(rank: Option<u32>) -> String {
    rank.map_or_else(
        || "rank not recorded".to_owned(),
        |rank| format!("rank {rank}"),
    )
}

/// Ranks of a phase whose times differ by more than this share of the shortest are
/// imbalanced: the anchor's (msprof-analyze's) 5 % slow-rank spread.
pub const RANK_SPREAD: f64 = 0.05;

/// One rank's step time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankStep {
    /// The rank, when known.
    pub rank: Option<u32>,
    /// Its run directory (as in `runs[].dir`).
    pub dir: String,
    /// Recorded steps.
    pub steps: usize,
    /// Mean step total.
    pub mean_step_us: f64,
    /// Longest step total.
    pub max_step_us: f64,
    /// Mean time of its own per step: computing + free.
    pub own_us: f64,
    /// Mean wait time in collectives per step, from `communication.json`, when recorded.
    pub wait_us: Option<f64>,
}

/// The ranks of one phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseRanks {
    /// The phase, when known.
    pub phase: Option<String>,
    /// Ranks with step times, by rank.
    pub per_rank: Vec<RankStep>,
    /// The rank with the longest mean step.
    pub slowest_rank: Option<u32>,
    /// The rank with the shortest mean step.
    pub fastest_rank: Option<u32>,
    /// Slowest mean step / fastest mean step (1.0 = balanced); `None` with fewer than 2 ranks.
    pub imbalance_ratio: Option<f64>,
    /// Whether `imbalance_ratio` is past 1 + [`RANK_SPREAD`] (the slowest is marked then only).
    pub imbalanced: bool,
    /// The rank with the most time of its own per step, when its lead over the least is past
    /// [`RANK_SPREAD`] of the least.
    pub straggler_rank: Option<u32>,
    /// (most own time - least) / least; `None` with fewer than 2 ranks.
    pub own_spread: Option<f64>,
    /// The rank waiting most in collectives, when there is a straggler and it is another rank.
    pub waiter_rank: Option<u32>,
}

/// The rank of `ranks` with the largest `key` (`largest`) or the smallest, ties to the lower
/// rank (then directory).
fn extreme(ranks: &[RankStep], key: impl Fn(&RankStep) -> f64, largest: bool) -> Option<&RankStep> {
    ranks.iter().reduce(|best, r| {
        let order = key(r).total_cmp(&key(best));
        let better = if largest {
            order.is_gt()
        } else {
            order.is_lt()
        };
        if better { r } else { best }
    })
}

/// The rank view of each phase of `runs` (in the order phases first appear).
pub fn phase_ranks(runs: &[RunSummary]) -> Vec<PhaseRanks> {
    let mut phases: Vec<Option<String>> = Vec::new();
    for run in runs {
        if !phases.contains(&run.phase) {
            phases.push(run.phase.clone());
        }
    }
    phases
        .into_iter()
        .map(|phase| {
            let mut per_rank: Vec<RankStep> = runs
                .iter()
                .filter(|r| r.phase == phase)
                .filter_map(|r| {
                    let stats = r.step_stats.as_ref()?;
                    let steps = r.steps.len().max(1) as f64;
                    let own: f64 = r.steps.iter().map(|s| s.computing_us + s.free_us).sum();
                    Some(RankStep {
                        rank: r.rank,
                        dir: r.dir.clone(),
                        steps: stats.count,
                        mean_step_us: stats.mean_us,
                        max_step_us: stats.max_us,
                        own_us: own / steps,
                        wait_us: r.communication.as_ref().map(|c| c.wait_us / steps),
                    })
                })
                .collect();
            per_rank.sort_by(|a, b| a.rank.cmp(&b.rank).then(a.dir.cmp(&b.dir)));
            let several = per_rank.len() > 1;
            let slowest = extreme(&per_rank, |r| r.mean_step_us, true);
            let fastest = extreme(&per_rank, |r| r.mean_step_us, false);
            let imbalance_ratio = match (slowest, fastest) {
                (Some(s), Some(f)) if several && f.mean_step_us > 0.0 => {
                    Some(s.mean_step_us / f.mean_step_us)
                }
                _ => None,
            };
            let most = extreme(&per_rank, |r| r.own_us, true);
            let least = extreme(&per_rank, |r| r.own_us, false);
            let own_spread = match (most, least) {
                (Some(m), Some(l)) if several && l.own_us > 0.0 => {
                    Some((m.own_us - l.own_us) / l.own_us)
                }
                _ => None,
            };
            let straggler = most.filter(|_| own_spread.is_some_and(|s| s > RANK_SPREAD));
            let waiter = straggler.and_then(|s| {
                let waiting: Vec<RankStep> = per_rank
                    .iter()
                    .filter(|r| r.wait_us.is_some())
                    .cloned()
                    .collect();
                extreme(&waiting, |r| r.wait_us.unwrap_or(0.0), true)
                    .filter(|w| w.rank != s.rank)
                    .and_then(|w| w.rank)
            });
            PhaseRanks {
                slowest_rank: slowest.and_then(|s| s.rank),
                fastest_rank: fastest.and_then(|f| f.rank),
                imbalanced: imbalance_ratio.is_some_and(|r| r > 1.0 + RANK_SPREAD),
                imbalance_ratio,
                straggler_rank: straggler.and_then(|s| s.rank),
                own_spread,
                waiter_rank: waiter,
                phase,
                per_rank,
            }
        })
        .collect()
}
