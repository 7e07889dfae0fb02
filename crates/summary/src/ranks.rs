//! Across the ranks of a phase: per-rank step time, the slowest rank and the imbalance.

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
                    Some(RankStep {
                        rank: r.rank,
                        dir: r.dir.clone(),
                        steps: stats.count,
                        mean_step_us: stats.mean_us,
                        max_step_us: stats.max_us,
                    })
                })
                .collect();
            per_rank.sort_by(|a, b| a.rank.cmp(&b.rank).then(a.dir.cmp(&b.dir)));
            let by_mean = |a: &&RankStep, b: &&RankStep| a.mean_step_us.total_cmp(&b.mean_step_us);
            let slowest = per_rank.iter().max_by(by_mean);
            let fastest = per_rank.iter().min_by(by_mean);
            let imbalance_ratio = match (slowest, fastest) {
                (Some(s), Some(f)) if per_rank.len() > 1 && f.mean_step_us > 0.0 => {
                    Some(s.mean_step_us / f.mean_step_us)
                }
                _ => None,
            };
            PhaseRanks {
                slowest_rank: slowest.and_then(|s| s.rank),
                fastest_rank: fastest.and_then(|f| f.rank),
                imbalance_ratio,
                phase,
                per_rank,
            }
        })
        .collect()
}
