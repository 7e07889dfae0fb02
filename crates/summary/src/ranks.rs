//! Across the ranks of a phase: per-rank step time, the slowest rank and the imbalance, and
//! the straggler told apart from the waiters.
//!
//! The rank with the longest step is not always the one to fix: in a collective every rank
//! waits for the last one, so the rank that *waits* most can have the longest step. The
//! straggler is the rank with the most time of its own per step (computing + free, what
//! `step_trace_time.csv` does not spend in communication); the waiter is the rank with the
//! most wait time in collectives (`communication.json`). Both are named only past
//! [`RANK_SPREAD`], the anchor's 5 % slow-rank threshold; ties go to the lower rank.
//!
//! Ranks are compared within a group ([`comparison_groups`]): where profiler_metadata.json
//! records every rank's parallel groups, the ranks of one data-parallel group, since ranks of
//! different pipeline stages run different layers and differ by design; pipeline stages are
//! compared on their own ([`stage_imbalance`]: the bubble a slower stage causes). Without the
//! groups, all ranks are one group, and reports say so.

use npuprof_runs::profiler_info::ParallelGroups;
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
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
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
    /// Mean computing time per step (step_trace_time's `Computing`).
    pub computing_us: f64,
    /// Mean wait time in collectives per step, from `communication.json`, when recorded.
    pub wait_us: Option<f64>,
    /// Its pipeline stage (its place in its `pp` group), when the run has stages.
    pub stage: Option<u32>,
    /// Its parallel groups (profiler_metadata.json), when recorded (in `runs[].parallel`).
    #[serde(skip)]
    pub parallel: Option<ParallelGroups>,
}

/// How the ranks of a phase were grouped to be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Grouping {
    /// By the parallel groups profiler_metadata.json records: ranks of one data-parallel group
    /// (else of one pipeline stage) are compared with each other.
    Parallel,
    /// All ranks as one group: the parallel groups are not recorded for every rank.
    Flat,
}

/// The straggler of a group of ranks: the one rule summary and advise share ([`straggler`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Straggler {
    /// The rank with the most time of its own per step.
    pub rank: Option<u32>,
    /// Its run directory.
    pub dir: String,
    /// The rank with the least.
    pub fastest_rank: Option<u32>,
    /// Its run directory.
    pub fastest_dir: String,
    /// Its lead per step (µs).
    pub spread_us: f64,
    /// The lead over the least (past [`RANK_SPREAD`]).
    pub spread: f64,
    /// The rank of the group waiting most in collectives, when another rank.
    pub waiter_rank: Option<u32>,
}

/// Ranks compared with each other.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankGroup {
    /// What binds them: `dp`, `dp_cp` (a data-parallel group), `stage` (one pipeline stage) or
    /// `all` (the flat comparison).
    pub kind: String,
    /// The ranks of the group that were recorded.
    pub ranks: Vec<Option<u32>>,
    /// (most own time - least) / least; `None` with fewer than 2 ranks.
    pub own_spread: Option<f64>,
    /// The straggler, past [`RANK_SPREAD`].
    pub straggler: Option<Straggler>,
}

/// One pipeline stage's computing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageTime {
    /// The stage (place in the `pp` groups).
    pub stage: u32,
    /// Its recorded ranks.
    pub ranks: Vec<Option<u32>>,
    /// Mean computing time per step over its ranks (µs).
    pub computing_us: f64,
}

/// The pipeline stages of a phase compared: a stage computing longer makes every other stage
/// wait (the pipeline bubble), whichever rank is "slowest".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageImbalance {
    /// Every stage, by stage.
    pub stages: Vec<StageTime>,
    /// The stage computing longest.
    pub slowest_stage: u32,
    /// The stage computing least.
    pub fastest_stage: u32,
    /// Slowest / fastest computing per step.
    pub ratio: f64,
    /// Whether `ratio` is past 1 + [`RANK_SPREAD`].
    pub imbalanced: bool,
    /// Slowest - fastest computing per step (µs): the time the fastest stage waits for the
    /// slowest each step.
    pub bubble_us: f64,
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
    /// The straggler of the group whose straggler leads most (see `groups`).
    pub straggler_rank: Option<u32>,
    /// The largest own-time spread of any group; `None` without a group of 2 ranks.
    pub own_spread: Option<f64>,
    /// The waiter of that straggler's group, when another rank.
    pub waiter_rank: Option<u32>,
    /// How the ranks were grouped to be compared.
    pub grouping: Grouping,
    /// The groups compared, each with its straggler.
    pub groups: Vec<RankGroup>,
    /// The pipeline stages, when the run has more than one.
    pub stages: Option<StageImbalance>,
}

/// The rank of `ranks` with the largest `key` (`largest`) or the smallest, ties to the lower
/// rank (then directory).
fn extreme<'a>(
    ranks: &[&'a RankStep],
    key: impl Fn(&RankStep) -> f64,
    largest: bool,
) -> Option<&'a RankStep> {
    ranks.iter().copied().reduce(|best, r| {
        let order = key(r).total_cmp(&key(best));
        let better = if largest {
            order.is_gt()
        } else {
            order.is_lt()
        };
        if better { r } else { best }
    })
}

/// The one straggler rule (summary's ranks block, advise's `slow-rank`): among `ranks` (one
/// group), the rank with the most time of its own per step, when it leads the least by more
/// than [`RANK_SPREAD`] of the least, with the rank of the group waiting most in collectives
/// when that is another. Also the spread, `None` with fewer than 2 ranks.
pub fn straggler(ranks: &[&RankStep]) -> (Option<Straggler>, Option<f64>) {
    let most = extreme(ranks, |r| r.own_us, true);
    let least = extreme(ranks, |r| r.own_us, false);
    let (Some(most), Some(least)) = (most, least) else {
        return (None, None);
    };
    if ranks.len() < 2 || least.own_us <= 0.0 {
        return (None, None);
    }
    let spread = (most.own_us - least.own_us) / least.own_us;
    if spread <= RANK_SPREAD {
        return (None, Some(spread));
    }
    let waiting: Vec<&RankStep> = ranks
        .iter()
        .copied()
        .filter(|r| r.wait_us.is_some())
        .collect();
    let waiter = extreme(&waiting, |r| r.wait_us.unwrap_or(0.0), true)
        .filter(|w| w.rank != most.rank)
        .and_then(|w| w.rank);
    let straggler = Straggler {
        rank: most.rank,
        dir: most.dir.clone(),
        fastest_rank: least.rank,
        fastest_dir: least.dir.clone(),
        spread_us: most.own_us - least.own_us,
        spread,
        waiter_rank: waiter,
    };
    (Some(straggler), Some(spread))
}

/// The groups the ranks of a phase are compared in: with every rank's parallel groups
/// recorded, each data-parallel group (`dp`, else `dp_cp`), else each pipeline stage, else all
/// ranks; without, all ranks ([`Grouping::Flat`]). Each group holds indices into `per_rank`.
pub fn comparison_groups(per_rank: &[RankStep]) -> (Grouping, Vec<(String, Vec<usize>)>) {
    let all = || vec![("all".to_owned(), (0..per_rank.len()).collect())];
    let recorded = |r: &RankStep| r.parallel.as_ref().is_some_and(|p| !p.groups.is_empty());
    if per_rank.len() < 2 || !per_rank.iter().all(recorded) {
        return (Grouping::Flat, all());
    }
    let mut groups: Vec<(String, Vec<u32>, Vec<usize>)> = Vec::new();
    for (i, r) in per_rank.iter().enumerate() {
        let parallel = r.parallel.as_ref();
        let key = match parallel.and_then(|p| p.group(&["dp", "dp_cp"])) {
            Some(g) => (g.kind.clone(), g.ranks.clone()),
            None => match r.stage {
                Some(stage) => ("stage".to_owned(), vec![stage]),
                None => ("all".to_owned(), Vec::new()),
            },
        };
        match groups
            .iter_mut()
            .find(|(k, ranks, _)| *k == key.0 && *ranks == key.1)
        {
            Some((_, _, members)) => members.push(i),
            None => groups.push((key.0, key.1, vec![i])),
        }
    }
    let groups = groups
        .into_iter()
        .map(|(kind, _, members)| (kind, members))
        .collect();
    (Grouping::Parallel, groups)
}

/// The pipeline stages of `per_rank` compared, when every rank has one and there are 2 or more.
pub fn stage_imbalance(per_rank: &[RankStep]) -> Option<StageImbalance> {
    let mut stages: Vec<(u32, Vec<&RankStep>)> = Vec::new();
    for r in per_rank {
        let stage = r.stage?;
        match stages.iter_mut().find(|(s, _)| *s == stage) {
            Some((_, ranks)) => ranks.push(r),
            None => stages.push((stage, vec![r])),
        }
    }
    if stages.len() < 2 {
        return None;
    }
    stages.sort_by_key(|(s, _)| *s);
    let stages: Vec<StageTime> = stages
        .into_iter()
        .map(|(stage, ranks)| StageTime {
            stage,
            ranks: ranks.iter().map(|r| r.rank).collect(),
            computing_us: ranks.iter().map(|r| r.computing_us).sum::<f64>() / ranks.len() as f64,
        })
        .collect();
    let by_computing = |a: &&StageTime, b: &&StageTime| a.computing_us.total_cmp(&b.computing_us);
    let slowest = stages.iter().max_by(by_computing)?;
    let fastest = stages.iter().min_by(by_computing)?;
    let ratio = if fastest.computing_us > 0.0 {
        slowest.computing_us / fastest.computing_us
    } else {
        f64::INFINITY
    };
    Some(StageImbalance {
        slowest_stage: slowest.stage,
        fastest_stage: fastest.stage,
        ratio,
        imbalanced: ratio > 1.0 + RANK_SPREAD,
        bubble_us: slowest.computing_us - fastest.computing_us,
        stages,
    })
}

/// The rank view of ranks already read: their groups, stragglers and stages.
pub fn rank_layout(per_rank: &[RankStep]) -> (Grouping, Vec<RankGroup>, Option<StageImbalance>) {
    let (grouping, groups) = comparison_groups(per_rank);
    let groups = groups
        .into_iter()
        .map(|(kind, members)| {
            let ranks: Vec<&RankStep> = members.iter().filter_map(|&i| per_rank.get(i)).collect();
            let (straggler, own_spread) = straggler(&ranks);
            RankGroup {
                kind,
                ranks: ranks.iter().map(|r| r.rank).collect(),
                own_spread,
                straggler,
            }
        })
        .collect();
    (grouping, groups, stage_imbalance(per_rank))
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
            let per_rank: Vec<RankStep> = runs
                .iter()
                .filter(|r| r.phase == phase)
                .filter_map(|r| {
                    let stats = r.step_stats.as_ref()?;
                    let steps = r.steps.len().max(1) as f64;
                    let sum =
                        |f: fn(&crate::steps::Step) -> f64| r.steps.iter().map(f).sum::<f64>();
                    Some(RankStep {
                        rank: r.rank,
                        dir: r.dir.clone(),
                        steps: stats.count,
                        mean_step_us: stats.mean_us,
                        max_step_us: stats.max_us,
                        own_us: sum(|s| s.computing_us + s.free_us) / steps,
                        computing_us: sum(|s| s.computing_us) / steps,
                        wait_us: r.communication.as_ref().map(|c| c.wait_us / steps),
                        stage: r.parallel.as_ref().and_then(|p| p.stage()).map(|(s, _)| s),
                        parallel: r.parallel.clone(),
                    })
                })
                .collect();
            phase_view(phase, per_rank)
        })
        .collect()
}

/// The rank view of one phase from its ranks' step times (a summary's, or the per-node
/// summaries a merge joins): the slowest and fastest rank, the groups compared with their
/// stragglers, and the pipeline stages.
pub fn phase_view(phase: Option<String>, mut per_rank: Vec<RankStep>) -> PhaseRanks {
    per_rank.sort_by(|a, b| a.rank.cmp(&b.rank).then(a.dir.cmp(&b.dir)));
    let several = per_rank.len() > 1;
    let all: Vec<&RankStep> = per_rank.iter().collect();
    let slowest = extreme(&all, |r| r.mean_step_us, true);
    let fastest = extreme(&all, |r| r.mean_step_us, false);
    let imbalance_ratio = match (slowest, fastest) {
        (Some(s), Some(f)) if several && f.mean_step_us > 0.0 => {
            Some(s.mean_step_us / f.mean_step_us)
        }
        _ => None,
    };
    let (slowest_rank, fastest_rank) = (slowest.and_then(|s| s.rank), fastest.and_then(|f| f.rank));
    let (grouping, groups, stages) = rank_layout(&per_rank);
    let own_spread = groups
        .iter()
        .filter_map(|g| g.own_spread)
        .max_by(f64::total_cmp);
    let lead = groups
        .iter()
        .filter_map(|g| g.straggler.as_ref())
        .max_by(|a, b| a.spread.total_cmp(&b.spread));
    PhaseRanks {
        slowest_rank,
        fastest_rank,
        imbalanced: imbalance_ratio.is_some_and(|r| r > 1.0 + RANK_SPREAD),
        imbalance_ratio,
        straggler_rank: lead.and_then(|s| s.rank),
        own_spread,
        waiter_rank: lead.and_then(|s| s.waiter_rank),
        grouping,
        phase,
        per_rank,
        groups,
        stages,
    }
}

/// `ranks 0, 1`.
fn rank_list(ranks: &[Option<u32>]) -> String {
    let names: Vec<String> = ranks
        .iter()
        .map(|r| r.map_or_else(|| "?".to_owned(), |r| r.to_string()))
        .collect();
    format!("ranks {}", names.join(", "))
}

/// What the ranks of a phase show, in sentences: how they were grouped, each group's
/// straggler (or that there is none) and the pipeline stages. The one wording of the terminal
/// report and the HTML page.
pub fn rank_sentences(phase: &PhaseRanks) -> Vec<String> {
    let threshold = crate::units::percent(RANK_SPREAD);
    let wait_of = |rank: Option<u32>| {
        phase
            .per_rank
            .iter()
            .find(|r| r.rank.is_some() && r.rank == rank)
            .and_then(|r| r.wait_us)
            .map_or_else(String::new, |us| {
                format!(" ({} per step)", crate::units::duration(us))
            })
    };
    let mut lines = Vec::new();
    let several = phase.per_rank.len() > 1;
    if several && phase.grouping == Grouping::Flat {
        lines.push(
            "all ranks compared as one group: profiler_metadata.json records no parallel groups \
             for every rank"
                .to_owned(),
        );
    }
    for group in &phase.groups {
        let Some(spread) = group.own_spread else {
            continue;
        };
        let lead = if group.kind == "all" {
            String::new()
        } else {
            format!("{} group ({}): ", group.kind, rank_list(&group.ranks))
        };
        let text = match &group.straggler {
            Some(s) => {
                let waiter = s.waiter_rank.map_or_else(String::new, |w| {
                    format!("; rank {w} waits most in collectives{}", wait_of(Some(w)))
                });
                format!(
                    "{lead}straggler {}: {} more computing + free time than the least (past {threshold}){waiter}",
                    rank_label(s.rank),
                    crate::units::percent(spread)
                )
            }
            None => format!(
                "{lead}no straggler: computing + free time within {} across ranks (threshold {threshold})",
                crate::units::percent(spread)
            ),
        };
        lines.push(text);
    }
    if let Some(stages) = &phase.stages {
        let stage = |n: u32| stages.stages.iter().find(|s| s.stage == n);
        if let (Some(slow), Some(fast)) = (stage(stages.slowest_stage), stage(stages.fastest_stage))
        {
            let what = format!(
                "pipeline stage {} ({}) computes {} per step, stage {} ({}) {}",
                slow.stage,
                rank_list(&slow.ranks),
                crate::units::duration(slow.computing_us),
                fast.stage,
                rank_list(&fast.ranks),
                crate::units::duration(fast.computing_us)
            );
            lines.push(if stages.imbalanced {
                format!(
                    "stage imbalance: {what} ({:.2}×): stage {} waits about {} per step for it \
                     (the pipeline bubble); ranks of different stages are not compared",
                    stages.ratio,
                    fast.stage,
                    crate::units::duration(stages.bubble_us)
                )
            } else {
                format!("pipeline stages balanced (threshold {threshold}): {what}")
            });
        }
    }
    lines
}
