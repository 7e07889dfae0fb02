//! The rules: each turns what one run (or one phase's ranks) shows into at most one finding per
//! code. Figures are per step; shares are of the mean step.

use npuprof_summary::units::{duration, fit, percent};
use npuprof_verify::step_outliers;

use crate::RunData;
use crate::codes::Code;
use crate::environment;
use crate::finding::{Evidence, Finding};
use crate::host::{HOST_KEPT, HostEvent};
use crate::profile::Kernel;
use crate::thresholds::{
    DYNAMIC_SHAPES, EXPERT_GROUPS, EXPOSED_COMM_SHARE, GAP_US, IDLE_SHARE, RANK_SPREAD,
    SMALL_PACKET_SHARE, WAIT_SHARE,
};
use crate::transfers;
use npuprof_summary::comm::wait_phrase;
use npuprof_summary::pipe::{Bound, Pipe, busiest};
use npuprof_summary::ranks::{
    Grouping, RankStep, StageImbalance, Straggler, comparison_groups, stage_imbalance, straggler,
};

/// A rank or stage number as said, `?` when unknown.
fn label(n: Option<u32>) -> String {
    n.map_or_else(|| "?".to_owned(), |n| n.to_string())
}

/// The `Accelerator Core` of AI CPU kernels.
const AI_CPU: &str = "AI_CPU";

/// Every per-run finding of `run` (one of the phase `phase` describes), with at most `top`
/// evidence items each.
pub(crate) fn run_findings(run: &RunData, phase: &PhaseRanks, top: usize) -> Vec<Finding> {
    let rules: [fn(&RunData, usize) -> Option<Finding>; 10] = [
        ai_cpu,
        dynamic_shape,
        no_bound,
        memory_bound,
        device_idle,
        small_packets,
        transfers::byte_alignment,
        first_step_outlier,
        environment::launch_blocking,
        environment::debug_logging,
    ];
    rules
        .iter()
        .filter_map(|rule| rule(run, top))
        .chain(communication_exposed(run, phase, top))
        .map(|mut f| {
            f.phase.clone_from(&run.info.phase);
            f.rank = run.info.rank;
            f.dir = Some(run.info.dir.clone());
            f.at_stake_share = run.share(f.at_stake_us);
            f
        })
        .collect()
}

/// The evidence of a kernel: its time and share per step, type, core and rows.
fn kernel_evidence(run: &RunData, kernel: &Kernel, detail: String) -> Evidence {
    let per_step = kernel.total_us / run.kernel_steps();
    Evidence {
        label: kernel.name.clone(),
        detail,
        time_us: Some(per_step),
        share: run.share(per_step),
        count: Some(kernel.count),
        step: None,
        at_us: None,
    }
}

/// `" (x % of the step)"`, or nothing without a step time.
fn of_step(run: &RunData, per_step_us: f64) -> String {
    run.share(per_step_us)
        .map_or_else(String::new, |s| format!(" ({} of the step)", percent(s)))
}

fn ai_cpu(run: &RunData, top: usize) -> Option<Finding> {
    let kernels = run.kernels.as_ref()?;
    let on_cpu: Vec<&Kernel> = kernels
        .kernels
        .iter()
        .filter(|k| k.core == AI_CPU)
        .collect();
    if on_cpu.is_empty() {
        return None;
    }
    let per_step = on_cpu.iter().map(|k| k.total_us).sum::<f64>() / run.kernel_steps();
    let mut finding = Finding::new(
        Code::AiCpu,
        format!(
            "{} operator(s) run on the AI CPU: {} per step{}",
            on_cpu.len(),
            duration(per_step),
            of_step(run, per_step)
        ),
        per_step,
    );
    finding.evidence = on_cpu
        .iter()
        .take(top)
        .map(|k| kernel_evidence(run, k, format!("type {}", k.kind)))
        .collect();
    Some(finding)
}

fn dynamic_shape(run: &RunData, top: usize) -> Option<Finding> {
    let kernels = run.kernels.as_ref()?;
    let free_per_step = run.free_per_step();
    let shapes_of = |kind: &str| {
        kernels
            .types
            .iter()
            .find(|t| t.kind == kind)
            .map_or(0, |t| t.shapes)
    };
    let evidence: Vec<Evidence> = if kernels.has_state {
        let dynamic: Vec<&Kernel> = kernels.kernels.iter().filter(|k| k.dynamic > 0).collect();
        if dynamic.is_empty() {
            return None;
        }
        let rows: u64 = dynamic.iter().map(|k| k.dynamic).sum();
        let mut evidence = vec![Evidence {
            label: "OP State dynamic".to_owned(),
            detail: format!("{rows} of {} kernel rows", kernels.rows),
            time_us: None,
            share: None,
            count: Some(rows),
            step: None,
            at_us: None,
        }];
        evidence.extend(dynamic.iter().take(top).map(|k| {
            let detail = format!(
                "type {}, input shapes of the type: {}",
                k.kind,
                shapes_of(&k.kind)
            );
            kernel_evidence(run, k, detail)
        }));
        evidence
    } else {
        let many: Vec<_> = kernels
            .types
            .iter()
            .filter(|t| t.shapes >= DYNAMIC_SHAPES)
            .collect();
        if many.is_empty() {
            return None;
        }
        many.iter()
            .take(top)
            .map(|t| {
                let per_step = t.total_us / run.kernel_steps();
                Evidence {
                    label: t.kind.clone(),
                    detail: format!("{} distinct input shapes (no OP State column)", t.shapes),
                    time_us: Some(per_step),
                    share: run.share(per_step),
                    count: Some(t.count),
                    step: None,
                    at_us: None,
                }
            })
            .collect()
    };
    let operators = if kernels.has_state {
        kernels.kernels.iter().filter(|k| k.dynamic > 0).count()
    } else {
        evidence.len()
    };
    let mut finding = Finding::new(
        Code::DynamicShape,
        format!(
            "{operators} kernel(s) compiled for dynamic shapes; up to {} of free time per step at stake",
            duration(free_per_step)
        ),
        free_per_step,
    );
    finding.evidence = evidence;
    Some(finding)
}

/// The kernels with a verdict ([`Bound::of`], summary's), each with it.
fn bounded(run: &RunData) -> impl Iterator<Item = (&Kernel, Bound)> {
    run.kernels
        .iter()
        .flat_map(|k| &k.kernels)
        .filter_map(|k| Some((k, k.bound?)))
}

fn no_bound(run: &RunData, top: usize) -> Option<Finding> {
    let unbound: Vec<(&Kernel, Pipe, f64)> = bounded(run)
        .filter_map(|(k, b)| match b {
            Bound::Nothing(pipe, ratio) => Some((k, pipe, ratio)),
            Bound::Pipe(..) | Bound::Memory(_) => None,
        })
        .collect();
    if unbound.is_empty() {
        return None;
    }
    let time = unbound.iter().map(|(k, _, _)| k.total_us).sum::<f64>() / run.kernel_steps();
    let idle = unbound
        .iter()
        .map(|(k, _, r)| k.total_us * (1.0 - r))
        .sum::<f64>()
        / run.kernel_steps();
    let mut finding = Finding::new(
        Code::NoBound,
        format!(
            "{} kernel(s) bound by no pipe: {} per step{}, their busiest pipe idle {}",
            unbound.len(),
            duration(time),
            of_step(run, time),
            duration(idle)
        ),
        idle,
    );
    finding.evidence = unbound
        .iter()
        .take(top)
        .map(|(k, pipe, ratio)| {
            let detail = format!("busiest pipe {} at {}", pipe.as_str(), percent(*ratio));
            kernel_evidence(run, k, detail)
        })
        .collect();
    Some(finding)
}

/// Memory-bound: the verdict is a pipe that moves data (at
/// [`BOUND_RATIO`](crate::thresholds::BOUND_RATIO) or more), or the profiler's own
/// `memory_bound` column above [`VENDOR_MEMORY_BOUND`](crate::thresholds::VENDOR_MEMORY_BOUND)
/// where it was written.
fn memory_bound(run: &RunData, top: usize) -> Option<Finding> {
    let memory: Vec<(&Kernel, Bound)> = bounded(run).filter(|(_, b)| b.by_memory()).collect();
    if memory.is_empty() {
        return None;
    }
    let per_step = memory.iter().map(|(k, _)| k.total_us).sum::<f64>() / run.kernel_steps();
    let compute = bounded(run)
        .filter(|(_, b)| matches!(b, Bound::Pipe(..)) && !b.by_memory())
        .map(|(k, _)| k.total_us)
        .sum::<f64>()
        / run.kernel_steps();
    let mut finding = Finding::new(
        Code::MemoryBound,
        format!(
            "{} kernel(s) bound by data movement: {} per step{}; compute-bound kernels {}{}",
            memory.len(),
            duration(per_step),
            of_step(run, per_step),
            duration(compute),
            of_step(run, compute)
        ),
        per_step,
    );
    finding.evidence = memory
        .iter()
        .take(top)
        .map(|(k, bound)| {
            let busiest = k.ratios.as_ref().and_then(busiest).map_or_else(
                || "no pipe metrics".to_owned(),
                |(pipe, ratio)| format!("busiest pipe {} at {}", pipe.as_str(), percent(ratio)),
            );
            let detail = match bound {
                Bound::Memory(value) => {
                    format!("memory_bound {value:.2} in the profiler's own column ({busiest})")
                }
                Bound::Pipe(pipe, ratio) => {
                    format!("bound by {} at {}", pipe.as_str(), percent(*ratio))
                }
                Bound::Nothing(..) => busiest,
            };
            kernel_evidence(run, k, detail)
        })
        .collect();
    Some(finding)
}

fn device_idle(run: &RunData, top: usize) -> Option<Finding> {
    let free = run.free_per_step();
    let share = run.share(free)?;
    if share < IDLE_SHARE {
        return None;
    }
    let mut finding = Finding::new(
        Code::DeviceIdle,
        format!(
            "the device is idle {} per step ({} of the step)",
            duration(free),
            percent(share)
        ),
        free,
    );
    // Where to look at the largest gap, when it is not the run's trace_view.json.
    let look = if run.info.source == Some(npuprof_summary::recorded::Source::Db) {
        // No trace_view.json in a db export: its database holds the timeline.
        Some("open the run's profiler database (ascend_pytorch_profiler*.db)")
    } else if !run.has_trace {
        // A text export always writes it: this copy of the run lacks it.
        Some(
            "copy the run's trace_view.json here (every text export writes it; this run \
             directory has none, so what the host ran in the gaps is not listed) and open it",
        )
    } else {
        None
    };
    if let Some(look) = look {
        finding.action = Code::DeviceIdle
            .def()
            .action
            .replacen("open trace_view.json", look, 1);
    }
    let kernels = run.kernels.as_ref();
    if let Some(k) = kernels.filter(|k| k.gap_count > 0) {
        finding.evidence.push(Evidence {
            label: format!("gaps of {} or more", duration(GAP_US)),
            detail: format!(
                "{} of {} kernels start after one (host-bound dispatch when most do)",
                k.gap_count, k.rows
            ),
            time_us: Some(k.gap_total_us / run.kernel_steps()),
            share: run.share(k.gap_total_us / run.kernel_steps()),
            count: Some(k.gap_count),
            step: None,
            at_us: None,
        });
    }
    finding.evidence.extend(
        kernels
            .iter()
            .flat_map(|k| &k.gaps)
            .take(top)
            .map(|gap| Evidence {
                label: format!("+{} into the step", duration(gap.offset_us)),
                detail: format!(
                    "after {}, before {}{}",
                    fit(&gap.after, 27),
                    fit(&gap.before, 27),
                    host_meanwhile(&gap.host)
                ),
                time_us: Some(gap.gap_us),
                share: run.share(gap.gap_us),
                count: None,
                step: gap.step,
                at_us: Some(gap.start_us),
            }),
    );
    let preparing: Option<f64> = run.step_rows.iter().map(|s| s.preparing_us).sum();
    if let Some(preparing) = preparing.filter(|p| *p > 0.0) {
        let per_step = preparing / run.steps();
        finding.evidence.push(Evidence {
            label: "preparing".to_owned(),
            detail: "before the step's first kernel (host work at the step start)".to_owned(),
            time_us: Some(per_step),
            share: run.share(per_step),
            count: None,
            step: None,
            at_us: None,
        });
    }
    Some(finding)
}

/// verify's first-step decision over step_trace_time's step totals.
fn first_step_outlier(run: &RunData, _top: usize) -> Option<Finding> {
    let outlier = step_outliers::first_step_outlier(
        run.step_rows
            .iter()
            .filter_map(|s| Some((s.step?, s.total_us))),
    )?;
    let at_stake = outlier.excess_us() / run.steps();
    let mut finding = Finding::new(
        Code::FirstStepOutlier,
        format!(
            "the first recorded step {} takes {}, {:.1}× the median {} of the other {} step(s)",
            outlier.step,
            duration(outlier.duration_us),
            outlier.ratio(),
            duration(outlier.median_us),
            outlier.others
        ),
        at_stake,
    );
    finding.evidence.push(Evidence {
        label: format!("step {}", outlier.step),
        detail: format!(
            "{} beyond the median; per-step figures include it",
            duration(outlier.excess_us())
        ),
        time_us: Some(outlier.duration_us),
        share: run.share(outlier.duration_us),
        count: None,
        step: Some(outlier.step),
        at_us: None,
    });
    finding.evidence.push(Evidence {
        label: "median of the others".to_owned(),
        detail: format!("{} step(s)", outlier.others),
        time_us: Some(outlier.median_us),
        share: run.share(outlier.median_us),
        count: Some(outlier.others as u64),
        step: None,
        at_us: None,
    });
    Some(finding)
}

/// `"; host meanwhile: name (process) time, …"`, or nothing when the host is not known.
fn host_meanwhile(host: &[HostEvent]) -> String {
    if host.is_empty() {
        return String::new();
    }
    let events: Vec<String> = host
        .iter()
        .take(HOST_KEPT)
        .map(|e| {
            format!(
                "{} ({}) {}",
                fit(&e.name, 40),
                e.process,
                duration(e.overlap_us)
            )
        })
        .collect();
    format!("; host meanwhile: {}", events.join(", "))
}

/// What the straggler rule says of each rank's comparison group in one phase, and whether the
/// phase's pipeline stages are imbalanced: the one verdict the wait advice defers to.
pub(crate) struct PhaseRanks {
    /// The ranks of the phase as summary reads them.
    ranks: Vec<RankStep>,
    /// How they are grouped.
    grouping: Grouping,
    /// Each comparison group and its verdict.
    groups: Vec<Group>,
    /// The pipeline stages, when imbalanced.
    stages: Option<StageImbalance>,
}

/// One comparison group of a phase and what the straggler rule says of it.
struct Group {
    /// What binds its ranks (`dp`, `stage`, `all`).
    kind: String,
    /// Its ranks: indices into [`PhaseRanks::ranks`].
    members: Vec<usize>,
    /// Its straggler, when one.
    straggler: Option<Straggler>,
    /// Its spread, with two ranks or more.
    spread: Option<f64>,
}

impl PhaseRanks {
    /// The verdicts of `runs` (one phase), by summary's rules, computed once: `slow-rank` and
    /// `stage-imbalance` are stated from them, and the wait advice defers to them.
    pub(crate) fn of(runs: &[RunData]) -> Self {
        let ranks = rank_steps(runs);
        let (grouping, groups) = comparison_groups(&ranks);
        let groups = groups
            .into_iter()
            .map(|(kind, members)| {
                let group: Vec<&RankStep> = members.iter().filter_map(|&i| ranks.get(i)).collect();
                let (straggler, spread) = straggler(&group);
                Group {
                    kind,
                    members,
                    straggler,
                    spread,
                }
            })
            .collect();
        let stages = stage_imbalance(&ranks).filter(|s| s.imbalanced);
        Self {
            ranks,
            grouping,
            groups,
            stages,
        }
    }

    /// The ranks of a group.
    fn members(&self, members: &[usize]) -> Vec<&RankStep> {
        members.iter().filter_map(|&i| self.ranks.get(i)).collect()
    }

    /// The straggler and spread of the group `dir` is compared in; `None` when it is in none
    /// (no rank, or no step times).
    fn group_of(&self, dir: &str) -> Option<(Option<&Straggler>, Option<f64>)> {
        self.groups
            .iter()
            .find(|g| self.members(&g.members).iter().any(|r| r.dir == dir))
            .map(|g| (g.straggler.as_ref(), g.spread))
    }
}

/// What to do about a material wait in collectives (`wait` per step, `share` of the step), by
/// the verdicts the phase's findings state: a rank outside the slowest of imbalanced pipeline
/// stages waits for that stage (`stage-imbalance`); else a rank waits for its group's straggler
/// (`slow-rank`), or is it; else no rank is slow and the wait is launch skew.
fn wait_action(run: &RunData, phase: &PhaseRanks, wait: f64, share: f64) -> String {
    let waits = format!(
        "the rank waits {} per step ({} of the step)",
        duration(wait),
        percent(share)
    );
    let stage = run
        .parallel
        .as_ref()
        .and_then(|p| p.stage())
        .map(|(s, _)| s);
    let slowest_stage = phase.stages.as_ref().map(|s| s.slowest_stage);
    let cause = match (slowest_stage, phase.group_of(&run.info.dir)) {
        (Some(slowest), _) if stage.is_some_and(|s| s != slowest) => format!(
            ": balance the pipeline stages first (stage-imbalance: stage {slowest} computes \
             longer and this rank's stage {} waits for it)",
            label(stage)
        ),
        (_, Some((Some(s), _))) if s.rank == run.info.rank => {
            "; it is its group's straggler (slow-rank): its own computing and free time, not the \
             wait, is what to shorten first"
                .to_owned()
        }
        (_, Some((Some(s), _))) => format!(
            ": fix rank {}, its group's straggler, first (slow-rank)",
            label(s.rank)
        ),
        (_, Some((None, Some(spread)))) => format!(
            ", yet no rank of its group is a straggler (computing + free time within {} across \
             the ranks, threshold {}): the ranks reach the collectives at different moments \
             (launch skew), no slow rank to fix",
            percent(spread),
            percent(RANK_SPREAD)
        ),
        _ => "; no other rank of its group is here to tell a slow rank from launch skew: \
              summarise every rank (`npuprof summary` on their parent directory)"
            .to_owned(),
    };
    format!(
        "{waits}{cause}; then overlap collectives with compute (a second stream, async \
         all-reduce) or fuse them (fewer, larger collectives)"
    )
}

fn communication_exposed(run: &RunData, phase: &PhaseRanks, top: usize) -> Option<Finding> {
    let exposed = run
        .step_rows
        .iter()
        .map(|s| s.communication_not_overlapped_us)
        .sum::<f64>()
        / run.steps();
    let share = run.share(exposed)?;
    if share < EXPOSED_COMM_SHARE {
        return None;
    }
    // The wait per step, and the time in collectives it is a share of.
    let wait = run.comm.as_ref().map(|c| {
        let steps = c.steps.max(1) as f64;
        (c.wait_us / steps, c.elapse_us / steps)
    });
    let mut finding = Finding::new(
        Code::CommunicationExposed,
        format!(
            "communication not overlapped: {} per step ({} of the step){}",
            duration(exposed),
            percent(share),
            wait.map_or_else(String::new, |(w, e)| format!(
                "; per step the rank {}",
                wait_phrase(w, e)
            ))
        ),
        exposed,
    );
    finding.action = match wait {
        Some((w, _)) if run.share(w).is_some_and(|s| s >= WAIT_SHARE) => {
            wait_action(run, phase, w, run.share(w).unwrap_or(0.0))
        }
        Some((w, _)) => format!(
            "the wait ({} per step) is not what costs: overlap collectives with compute (a second \
             stream, async all-reduce) or fuse them (fewer, larger collectives)",
            duration(w)
        ),
        // No communication.json (Level0), or one without its wait times.
        None => "the wait in collectives is not recorded here (communication.json, written from \
                 Level1, holds it), so a slow rank is not told from the collectives' own time: \
                 overlap collectives with compute (a second stream, async all-reduce) or fuse \
                 them (fewer, larger collectives)"
            .to_owned(),
    };
    finding.evidence = exposed_collectives(run, top);
    if let Some(comm) = &run.comm {
        let comm_steps = comm.steps.max(1) as f64;
        if finding.evidence.is_empty() {
            finding
                .evidence
                .extend(comm.ops.iter().take(top).map(|op| Evidence {
                    label: op.name.clone(),
                    detail: format!("waiting {} per step", duration(op.wait_us / comm_steps)),
                    time_us: Some(op.elapse_us / comm_steps),
                    share: run.share(op.elapse_us / comm_steps),
                    count: Some(op.count),
                    step: None,
                    at_us: None,
                }));
        }
        finding
            .evidence
            .extend(comm.links.iter().map(|link| Evidence {
                label: link.link.clone(),
                detail: transfers::bandwidths(link),
                time_us: Some(link.time_ms * 1000.0 / comm_steps),
                share: run.share(link.time_ms * 1000.0 / comm_steps),
                count: None,
                step: None,
                at_us: None,
            }));
    }
    Some(finding)
}

/// The communication kernels by their time no computing kernel overlapped, largest first, with
/// their elapsed time and (from communication.json) their waiting; empty without that time.
fn exposed_collectives(run: &RunData, top: usize) -> Vec<Evidence> {
    let Some(kernels) = &run.kernels else {
        return Vec::new();
    };
    let mut exposed: Vec<(&Kernel, f64)> = kernels
        .kernels
        .iter()
        .filter_map(|k| Some((k, k.exposed_us.filter(|e| *e > 0.0)?)))
        .collect();
    exposed.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.name.cmp(&b.0.name)));
    let wait_of = |name: &str| {
        let comm = run.comm.as_ref()?;
        let op = comm.ops.iter().find(|op| op.name == name)?;
        Some(op.wait_us / comm.steps.max(1) as f64)
    };
    exposed
        .iter()
        .take(top)
        .map(|(k, us)| {
            let per_step = us / run.kernel_steps();
            let wait =
                wait_of(&k.name).map_or_else(String::new, |w| format!("; waiting {}", duration(w)));
            Evidence {
                label: k.name.clone(),
                detail: format!(
                    "not overlapped of its {}{wait}",
                    duration(k.total_us / run.kernel_steps())
                ),
                time_us: Some(per_step),
                share: run.share(per_step),
                count: Some(k.count),
                step: None,
                at_us: None,
            }
        })
        .collect()
}

fn small_packets(run: &RunData, _top: usize) -> Option<Finding> {
    let comm = run.comm.as_ref()?;
    let small: Vec<_> = comm
        .links
        .iter()
        .filter(|l| l.transfers > 0 && l.small as f64 >= SMALL_PACKET_SHARE * l.transfers as f64)
        .collect();
    if small.is_empty() {
        return None;
    }
    let comm_steps = comm.steps.max(1) as f64;
    let per_step = small.iter().map(|l| l.small_ms * 1000.0).sum::<f64>() / comm_steps;
    let mut finding = Finding::new(
        Code::SmallPackets,
        format!(
            "small transfers on {}: {} per step{}",
            small
                .iter()
                .map(|l| l.link.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            duration(per_step),
            of_step(run, per_step)
        ),
        per_step,
    );
    finding.evidence = small
        .iter()
        .map(|l| Evidence {
            label: l.link.clone(),
            detail: format!(
                "{} of {} transfers under {} MB",
                l.small, l.transfers, l.small_below_mb
            ),
            time_us: Some(l.small_ms * 1000.0 / comm_steps),
            share: run.share(l.small_ms * 1000.0 / comm_steps),
            count: Some(l.small),
            step: None,
            at_us: None,
        })
        .collect();
    Some(finding)
}

/// The ranks of one phase's runs as summary reads them (per step: own time, computing,
/// waiting; stage and parallel groups), for summary's one straggler rule.
fn rank_steps(runs: &[RunData]) -> Vec<RankStep> {
    runs.iter()
        .filter(|r| r.info.rank.is_some() && !r.step_rows.is_empty())
        .map(|run| {
            let per_step = |f: fn(&npuprof_summary::steps::Step) -> f64| {
                run.step_rows.iter().map(f).sum::<f64>() / run.steps()
            };
            RankStep {
                rank: run.info.rank,
                dir: run.info.dir.clone(),
                steps: run.step_rows.len(),
                mean_step_us: per_step(|s| s.total_us),
                max_step_us: run.step_rows.iter().map(|s| s.total_us).fold(0.0, f64::max),
                own_us: per_step(|s| s.computing_us + s.free_us),
                computing_us: per_step(|s| s.computing_us),
                wait_us: run.comm.as_ref().map(|c| c.wait_us / c.steps.max(1) as f64),
                stage: run
                    .parallel
                    .as_ref()
                    .and_then(|p| p.stage())
                    .map(|(s, _)| s),
                parallel: run.parallel.clone(),
            }
        })
        .collect()
}

/// The straggler of each group of one phase's ranks (summary's [`straggler`] rule, within the
/// groups summary compares), and the pipeline stages' imbalance.
pub(crate) fn slow_rank(runs: &[RunData], phase: &PhaseRanks, top: usize) -> Vec<Finding> {
    let run_of = |step: &RankStep| runs.iter().find(|r| r.info.dir == step.dir);
    let mut findings = Vec::new();
    for Group {
        kind,
        members,
        straggler,
        ..
    } in &phase.groups
    {
        let group = phase.members(members);
        let Some(s) = straggler else {
            continue;
        };
        let Some(slow) = group.iter().find(|r| r.dir == s.dir) else {
            continue;
        };
        let members: Vec<String> = group.iter().map(|r| label(r.rank)).collect();
        let within = match phase.grouping {
            Grouping::Parallel => format!(" of its {kind} group (ranks {})", members.join(", ")),
            Grouping::Flat => " (all ranks compared as one group: profiler_metadata.json records \
                 no parallel groups for every rank)"
                .to_owned(),
        };
        let mut finding = Finding::new(
            Code::SlowRank,
            format!(
                "rank {} is the straggler{within}: {} more computing and free time per step than rank {} ({} more){}",
                label(s.rank),
                duration(s.spread_us),
                label(s.fastest_rank),
                percent(s.spread),
                s.waiter_rank
                    .map_or_else(String::new, |w| format!("; rank {w} waits most"))
            ),
            s.spread_us,
        );
        let slow_run = run_of(slow);
        finding.phase = slow_run.and_then(|r| r.info.phase.clone());
        finding.rank = s.rank;
        finding.at_stake_share = slow_run.and_then(|r| r.share(s.spread_us));
        finding.action = format!(
            "`npuprof compare {} {}` to see what rank {} runs longer; {}",
            s.fastest_dir,
            s.dir,
            label(s.rank),
            Code::SlowRank.def().action
        );
        let mut ordered = group.clone();
        ordered.sort_by(|a, b| b.own_us.total_cmp(&a.own_us).then(a.rank.cmp(&b.rank)));
        finding.evidence = ordered
            .iter()
            .take(top.max(2))
            .map(|t| Evidence {
                label: format!("rank {}", label(t.rank)),
                detail: format!(
                    "computing {}, free {}{}",
                    duration(t.computing_us),
                    duration(t.own_us - t.computing_us),
                    t.wait_us.map_or_else(String::new, |w| format!(
                        ", waiting in collectives {}",
                        duration(w)
                    ))
                ),
                time_us: Some(t.own_us),
                share: run_of(t).and_then(|r| r.share(t.own_us)),
                count: None,
                step: None,
                at_us: None,
            })
            .collect();
        findings.push(finding);
    }
    findings.extend(stage_finding(runs, phase));
    findings.extend(expert_imbalance(runs, top));
    findings
}

/// An expert-parallel group: its kind (`ep`, `exp`) and its global ranks.
type ExpertGroup = (String, Vec<u32>);

/// A rank running experts and its experts per step.
type Busy<'r> = (&'r RunData, Experts);

/// A rank's MoE experts' kernel time per step ([`crate::profile::is_expert`]), when it ran
/// any, with their input rows per step (the token rows routed to its experts, once per call)
/// when `Input Shapes` were recorded.
fn experts_per_step(run: &RunData) -> Option<Experts> {
    let kernels: Vec<&Kernel> = run
        .kernels
        .as_ref()?
        .kernels
        .iter()
        .filter(|k| crate::profile::is_expert(k.name.as_bytes(), &k.kind))
        .collect();
    let total: f64 = kernels.iter().map(|k| k.total_us).sum();
    let steps = run.kernel_steps();
    let rows: Option<u64> = kernels.iter().map(|k| k.input_rows).sum();
    (total > 0.0).then(|| Experts {
        us: total / steps,
        rows: rows.map(|r| r as f64 / steps),
    })
}

/// A rank's MoE experts per step: their kernels' time and input rows.
#[derive(Clone, Copy)]
struct Experts {
    us: f64,
    rows: Option<f64>,
}

/// The MoE experts' balance across the ranks of one phase: within each expert-parallel group
/// ([`EXPERT_GROUPS`]) when every rank running experts records one, else all of them as one
/// group; past [`RANK_SPREAD`] of the least busy rank, a finding.
fn expert_imbalance(runs: &[RunData], top: usize) -> Vec<Finding> {
    let busy: Vec<Busy<'_>> = runs
        .iter()
        .filter_map(|r| Some((r, experts_per_step(r)?)))
        .collect();
    if busy.len() < 2 {
        return Vec::new();
    }
    let group_of = |run: &RunData| {
        let group = run.parallel.as_ref()?.group(&EXPERT_GROUPS)?;
        Some((group.kind.clone(), group.ranks.clone()))
    };
    let recorded = busy.iter().all(|(r, _)| group_of(r).is_some());
    let mut groups: Vec<(Option<ExpertGroup>, Vec<Busy<'_>>)> = Vec::new();
    for &(run, us) in &busy {
        let key = if recorded { group_of(run) } else { None };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push((run, us)),
            None => groups.push((key, vec![(run, us)])),
        }
    }
    let mut findings = Vec::new();
    for (key, mut members) in groups {
        members.sort_by(|a, b| {
            b.1.us
                .total_cmp(&a.1.us)
                .then(a.0.info.rank.cmp(&b.0.info.rank))
        });
        let (Some(&(most, most_experts)), Some(&(least, least_experts))) =
            (members.first(), members.last())
        else {
            continue;
        };
        let (most_us, least_us) = (most_experts.us, least_experts.us);
        if members.len() < 2 || least_us <= 0.0 || (most_us - least_us) / least_us <= RANK_SPREAD {
            continue;
        }
        let within = match &key {
            Some((kind, ranks)) => {
                let ranks: Vec<String> = ranks.iter().map(u32::to_string).collect();
                format!(" of its {kind} group (ranks {})", ranks.join(", "))
            }
            None => " (the ranks running experts compared as one group: profiler_metadata.json \
                 records no expert-parallel group for each)"
                .to_owned(),
        };
        let spread_us = most_us - least_us;
        let tokens = match (most_experts.rows, least_experts.rows) {
            (Some(most_rows), Some(least_rows)) => format!(
                "; their input rows per step {most_rows:.0} and {least_rows:.0} ({})",
                if most_rows > least_rows {
                    "more tokens routed to the busier rank"
                } else {
                    "not more tokens: the busier rank is slower per token"
                }
            ),
            _ => String::new(),
        };
        let mut finding = Finding::new(
            Code::ExpertImbalance,
            format!(
                "rank {}'s MoE experts run {} per step{within}, rank {}'s {} ({} more){tokens}",
                label(most.info.rank),
                duration(most_us),
                label(least.info.rank),
                duration(least_us),
                percent(spread_us / least_us)
            ),
            spread_us,
        );
        finding.phase = most.info.phase.clone();
        finding.rank = most.info.rank;
        finding.at_stake_share = most.share(spread_us);
        finding.evidence = members
            .iter()
            .take(top.max(2))
            .map(|&(run, experts)| Evidence {
                label: format!("rank {}", label(run.info.rank)),
                detail: experts.rows.map_or_else(
                    || "grouped-matmul (experts) time per step".to_owned(),
                    |rows| format!("grouped-matmul (experts) time per step; {rows:.0} input rows"),
                ),
                time_us: Some(experts.us),
                share: run.share(experts.us),
                count: None,
                step: None,
                at_us: None,
            })
            .collect();
        findings.push(finding);
    }
    findings
}

/// The pipeline stages' imbalance (summary's [`stage_imbalance`]), past the threshold.
fn stage_finding(runs: &[RunData], phase: &PhaseRanks) -> Option<Finding> {
    let stages = phase.stages.as_ref()?;
    let stage = |n: u32| stages.stages.iter().find(|s| s.stage == n);
    let (slow, fast) = (stage(stages.slowest_stage)?, stage(stages.fastest_stage)?);
    let list = |ranks: &[Option<u32>]| {
        let names: Vec<String> = ranks.iter().map(|&r| label(r)).collect();
        names.join(", ")
    };
    let mut finding = Finding::new(
        Code::StageImbalance,
        format!(
            "pipeline stage {} (ranks {}) computes {} per step, stage {} (ranks {}) {} ({:.2}×): \
             stage {} waits about {} per step",
            slow.stage,
            list(&slow.ranks),
            duration(slow.computing_us),
            fast.stage,
            list(&fast.ranks),
            duration(fast.computing_us),
            stages.ratio,
            fast.stage,
            duration(stages.bubble_us)
        ),
        stages.bubble_us,
    );
    let first = phase.ranks.iter().find(|r| r.stage == Some(fast.stage));
    let run = first.and_then(|f| runs.iter().find(|r| r.info.dir == f.dir));
    finding.phase = run.and_then(|r| r.info.phase.clone());
    finding.at_stake_share = run.and_then(|r| r.share(stages.bubble_us));
    finding.evidence = stages
        .stages
        .iter()
        .map(|s| Evidence {
            label: format!("stage {}", s.stage),
            detail: format!("ranks {}: mean computing per step", list(&s.ranks)),
            time_us: Some(s.computing_us),
            share: None,
            count: Some(s.ranks.len() as u64),
            step: None,
            at_us: None,
        })
        .collect();
    Some(finding)
}
