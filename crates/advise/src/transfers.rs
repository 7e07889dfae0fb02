//! The rules on communication.json's transfers beyond their size: byte alignment (one run) and
//! slow links (one phase's ranks), and what the transfers cannot prove (a run's notes).

use std::collections::BTreeMap;

use npuprof_summary::units::{duration, percent};

use crate::RunData;
use crate::codes::Code;
use crate::finding::{Evidence, Finding};
use crate::links::Link;
use crate::thresholds::{ALIGN_BYTES, SLOW_LINK_SHARE, UNALIGNED_TIME_SHARE};

/// A link's bandwidths, for evidence: over all its data, and over the transfers large enough
/// to reach the link's bandwidth.
pub(crate) fn bandwidths(link: &Link) -> String {
    let all = link.bandwidth_gb_s.map_or_else(
        || "unknown bandwidth".to_owned(),
        |b| format!("{b:.1} GB/s"),
    );
    let large = link.large_bandwidth_gb_s.map_or_else(
        || format!("no transfer of {} MB or more", link.small_below_mb),
        |b| {
            format!(
                "≥ {} MB transfers: {:.1} MB at {b:.1} GB/s",
                link.small_below_mb, link.large_mb
            )
        },
    );
    format!("{:.1} MB at {all}; {large}", link.size_mb)
}

/// SDMA transfers whose size is not a multiple of [`ALIGN_BYTES`], past
/// [`UNALIGNED_TIME_SHARE`] of their link's time.
pub(crate) fn byte_alignment(run: &RunData, top: usize) -> Option<Finding> {
    let comm = run.comm.as_ref()?;
    let links: Vec<&Link> = comm
        .links
        .iter()
        .filter(|l| {
            l.aligned_judged
                && l.unaligned > 0
                && l.time_ms > 0.0
                && l.unaligned_ms >= UNALIGNED_TIME_SHARE * l.time_ms
        })
        .collect();
    if links.is_empty() {
        return None;
    }
    let comm_steps = comm.steps.max(1) as f64;
    let per_step_us = |ms: f64| ms * 1000.0 / comm_steps;
    let at_stake = links.iter().map(|l| per_step_us(l.unaligned_ms)).sum();
    let unaligned: u64 = links.iter().map(|l| l.unaligned).sum();
    let transfers: u64 = links.iter().map(|l| l.transfers).sum();
    let names: Vec<&str> = links.iter().map(|l| l.link.as_str()).collect();
    let mut finding = Finding::new(
        Code::ByteAlignment,
        format!(
            "{unaligned} of {transfers} transfers on {} not a multiple of {ALIGN_BYTES} B: {} per step{}",
            names.join(", "),
            duration(at_stake),
            run.share(at_stake)
                .map_or_else(String::new, |s| format!(" ({} of the step)", percent(s)))
        ),
        at_stake,
    );
    finding
        .evidence
        .extend(comm.unaligned_ops.iter().take(top).map(|op| Evidence {
            label: op.name.clone(),
            detail: format!(
                "{} of its {} SDMA transfers unaligned",
                op.unaligned, op.transfers
            ),
            time_us: Some(per_step_us(op.unaligned_ms)),
            share: run.share(per_step_us(op.unaligned_ms)),
            count: Some(op.unaligned),
            step: None,
            at_us: None,
        }));
    let mut sizes: Vec<(&Link, u64, u64, f64)> = links
        .iter()
        .flat_map(|l| {
            l.unaligned_sizes
                .iter()
                .map(move |(bytes, (count, ms))| (*l, *bytes, *count, *ms))
        })
        .collect();
    sizes.sort_by(|a, b| b.3.total_cmp(&a.3).then(a.1.cmp(&b.1)));
    finding.evidence.extend(
        sizes
            .iter()
            .take(top)
            .map(|(link, bytes, count, ms)| Evidence {
                label: format!("{} {bytes} B", link.link),
                detail: format!(
                    "{} × {ALIGN_BYTES} B + {} B",
                    bytes / ALIGN_BYTES,
                    bytes % ALIGN_BYTES
                ),
                time_us: Some(per_step_us(*ms)),
                share: run.share(per_step_us(*ms)),
                count: Some(*count),
                step: None,
                at_us: None,
            }),
    );
    Some(finding)
}

/// One rank's measured bandwidth on one link type.
struct Measured<'a> {
    run: &'a RunData,
    rank: u32,
    link: &'a Link,
    /// The bandwidth over the large transfers (GB/s).
    gb_s: f64,
}

impl Measured<'_> {
    /// The large transfers' extra time per step (µs) over what `best_gb_s` would take.
    fn extra_us(&self, best_gb_s: f64) -> f64 {
        let steps = self.run.comm.as_ref().map_or(1, |c| c.steps.max(1)) as f64;
        (self.link.large_ms - self.link.large_mb / best_gb_s).max(0.0) * 1000.0 / steps
    }
}

/// Per rank, the link types whose bandwidth is [`SLOW_LINK_SHARE`] or more below the best
/// rank's same link: one finding per slow rank.
pub(crate) fn slow_links(runs: &[RunData], top: usize) -> Vec<Finding> {
    let mut by_link: BTreeMap<&str, Vec<Measured>> = BTreeMap::new();
    for run in runs {
        let (Some(rank), Some(comm)) = (run.info.rank, &run.comm) else {
            continue;
        };
        for link in &comm.links {
            if let Some(gb_s) = link.large_bandwidth_gb_s.filter(|b| *b > 0.0) {
                by_link.entry(&link.link).or_default().push(Measured {
                    run,
                    rank,
                    link,
                    gb_s,
                });
            }
        }
    }
    let mut slow: BTreeMap<u32, Vec<(&Measured, &Measured)>> = BTreeMap::new();
    for measured in by_link.values().filter(|m| m.len() >= 2) {
        let Some(best) = measured
            .iter()
            .max_by(|a, b| a.gb_s.total_cmp(&b.gb_s).then(b.rank.cmp(&a.rank)))
        else {
            continue;
        };
        for m in measured {
            if m.gb_s < (1.0 - SLOW_LINK_SHARE) * best.gb_s {
                slow.entry(m.rank).or_default().push((m, best));
            }
        }
    }
    slow.into_values()
        .filter_map(|mut links| {
            links.sort_by(|a, b| {
                b.0.extra_us(b.1.gb_s)
                    .total_cmp(&a.0.extra_us(a.1.gb_s))
                    .then(a.0.link.link.cmp(&b.0.link.link))
            });
            let (first, best) = links.first()?;
            let run = first.run;
            let at_stake: f64 = links.iter().map(|(m, b)| m.extra_us(b.gb_s)).sum();
            let more = match links.len() {
                1 => String::new(),
                n => format!("; {} more slow link(s)", n - 1),
            };
            let mut finding = Finding::new(
                Code::SlowLink,
                format!(
                    "rank {}'s {} reaches {:.1} GB/s, {} below rank {}'s {:.1} GB/s: {} more transfer time per step{more}",
                    first.rank,
                    first.link.link,
                    first.gb_s,
                    percent(1.0 - first.gb_s / best.gb_s),
                    best.rank,
                    best.gb_s,
                    duration(first.extra_us(best.gb_s)),
                ),
                at_stake,
            );
            finding.phase.clone_from(&run.info.phase);
            finding.rank = Some(first.rank);
            finding.dir = Some(run.info.dir.clone());
            finding.at_stake_share = run.share(at_stake);
            finding.evidence = links
                .iter()
                .take(top)
                .map(|(m, b)| {
                    let extra = m.extra_us(b.gb_s);
                    Evidence {
                        label: format!("{} rank {}", m.link.link, m.rank),
                        detail: format!(
                            "{:.1} GB/s over {:.1} MB in transfers of {} MB or more; rank {} reaches {:.1} GB/s ({})",
                            m.gb_s,
                            m.link.large_mb,
                            m.link.small_below_mb,
                            b.rank,
                            b.gb_s,
                            b.run.info.dir
                        ),
                        time_us: Some(extra),
                        share: run.share(extra),
                        count: Some(m.link.large),
                        step: None,
                        at_us: None,
                    }
                })
                .collect();
            Some(finding)
        })
        .collect()
}

/// Adds to each run's notes what its transfers cannot prove: packets without a size
/// distribution, sizes that are not whole bytes, links without large transfers, and slow links
/// when the phase has one rank with links.
pub(crate) fn note_unjudged(runs: &mut [RunData]) {
    let with_links = runs
        .iter()
        .filter(|r| r.comm.as_ref().is_some_and(|c| !c.links.is_empty()))
        .count();
    for run in runs.iter_mut() {
        let Some(comm) = &run.comm else {
            continue;
        };
        let mut notes = Vec::new();
        for link in &comm.links {
            let name = &link.link;
            if link.transfers == 0 {
                notes.push(format!(
                    "{name}: no size distribution in communication.json: its packets, alignment and bandwidth not judged"
                ));
                continue;
            }
            if link.inexact > 0 {
                notes.push(format!(
                    "{name}: {} transfer(s) of a size that is not a whole number of bytes: their alignment not judged",
                    link.inexact
                ));
            }
            if link.large == 0 {
                notes.push(format!(
                    "{name}: no transfer of {} MB or more, where the link reaches its bandwidth: slow link not judged",
                    link.small_below_mb
                ));
            }
        }
        if with_links == 1 && !comm.links.is_empty() {
            notes.push(
                "one rank with links among the phase's runs advised: slow links across ranks not judged"
                    .to_owned(),
            );
        }
        run.info.notes.extend(notes);
    }
}
