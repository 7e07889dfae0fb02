//! Two summaries side by side: the step-time delta and the kernel deltas (by name and by type)
//! that explain it, ranked by their effect on the step, with a one-line verdict per phase.
//!
//! Times are per recorded step and per rank: a phase's kernel time is summed over its ranks and
//! divided by the number of steps their kernel tables hold (each rank's distinct `Step Id`s,
//! else its step_trace_time rows), so runs with different step counts or rank counts compare
//! fairly. Summaries to compare must keep every kernel group (`top: None`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use crate::run::RunSummary;
use crate::step_ids::kernel_divisor;
use crate::units;
use crate::warnings::{self, Warning, WarningCode};
use crate::{SCHEMA_VERSION, Summary};

/// Below this many µs per step a change is reported as `unchanged`.
const UNCHANGED_US: f64 = 0.005;

/// The verdict names the types behind a change while it fits this many characters (the first
/// one always).
const VERDICT_WIDTH: usize = 100;

/// A change of the other sign than the step's is named in the verdict from this effect on the
/// step on (1 %): a kernel type that got slower stays visible when the step got faster.
const OPPOSITE_EFFECT: f64 = 0.01;

/// ... or, from [`OPPOSITE_FLOOR`] of the step on, when the type's own time changed by this
/// factor or more (twice or half as long, added or removed): a 3× slower MatMul is named
/// behind a faster all-reduce even when it is a small part of the step.
const OPPOSITE_FACTOR: f64 = 2.0;

/// See [`OPPOSITE_FACTOR`] (0.1 % of the step).
const OPPOSITE_FLOOR: f64 = 0.001;

/// Whether a change of the other sign is named in the verdict.
fn named_opposite(d: &KernelDelta) -> bool {
    let effect = d.effect.map_or(0.0, f64::abs);
    let (low, high) = (d.base_us.min(d.new_us), d.base_us.max(d.new_us));
    let factor = if low > 0.0 { high / low } else { f64::INFINITY };
    effect >= OPPOSITE_EFFECT || (effect >= OPPOSITE_FLOOR && factor >= OPPOSITE_FACTOR)
}

/// How a kernel group changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Only in the new run.
    Added,
    /// Only in the base run.
    Removed,
    /// More time per step.
    Slower,
    /// Less time per step.
    Faster,
    /// The same time per step (within 0.005 µs).
    Unchanged,
}

impl Change {
    /// The name used in reports (as in the JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Slower => "slower",
            Change::Faster => "faster",
            Change::Unchanged => "unchanged",
        }
    }
}

/// One kernel group (a name or a type) in both runs, per step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelDelta {
    /// The kernel name or the type.
    pub key: String,
    /// How it changed.
    pub change: Change,
    /// Base time per step.
    pub base_us: f64,
    /// New time per step.
    pub new_us: f64,
    /// `new_us - base_us`.
    pub delta_us: f64,
    /// Base calls per step.
    pub base_count: f64,
    /// New calls per step.
    pub new_count: f64,
    /// `delta_us` / the base step time: this group's effect on the step.
    pub effect: Option<f64>,
}

/// A time in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delta {
    /// Base value.
    pub base_us: f64,
    /// New value.
    pub new_us: f64,
    /// `new_us - base_us`.
    pub delta_us: f64,
    /// `delta_us / base_us`, when the base is not 0.
    pub delta_ratio: Option<f64>,
}

impl Delta {
    fn new(base_us: f64, new_us: f64) -> Self {
        let delta_us = new_us - base_us;
        Self {
            base_us,
            new_us,
            delta_us,
            delta_ratio: (base_us != 0.0).then(|| delta_us / base_us),
        }
    }
}

/// One phase compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseComparison {
    /// The phase (of the new run when the two runs name it differently).
    pub phase: Option<String>,
    /// Mean step time over every rank's recorded steps; `None` when a side has no step times.
    pub step: Option<Delta>,
    /// Summed kernel device time per step.
    pub kernel_time: Delta,
    /// Why `kernel_time` is no measurement, when a side has no kernel table (its zeros are
    /// then not a time).
    pub kernel_time_note: Option<String>,
    /// Kernel groups by exact name that changed, largest effect first.
    pub by_name: Vec<KernelDelta>,
    /// Kernel groups by type that changed, largest effect first.
    pub by_type: Vec<KernelDelta>,
    /// The step-to-step spread (µs): the larger of the two sides' pooled standard deviation
    /// of step totals within a rank; `None` unless both sides have a rank with 2+ steps.
    pub noise_us: Option<f64>,
    /// Whether the step change is within [`PhaseComparison::noise_us`] (`|delta| <= noise`);
    /// `None` when the noise or the step change is unknown.
    pub within_noise: Option<bool>,
    /// Each rank on both sides (or the only rank of each), by rank.
    pub per_rank: Vec<RankComparison>,
    /// One line: how much slower or faster, and the types that explain it.
    pub verdict: String,
}

impl PhaseComparison {
    /// The noise line: `step-to-step spread ±6.10 ms: the step change is within it`; `None`
    /// without a spread.
    pub fn noise_line(&self) -> Option<String> {
        let noise = self.noise_us?;
        let within = if self.within_noise == Some(true) {
            "within"
        } else {
            "beyond"
        };
        Some(format!(
            "step-to-step spread ±{}: the step change is {within} it",
            units::duration(noise)
        ))
    }
}

/// One rank compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankComparison {
    /// The base rank.
    pub base_rank: Option<u32>,
    /// The new rank (the same as the base's unless each side has one rank only).
    pub new_rank: Option<u32>,
    /// Mean step time of the rank; `None` when a side has no step times.
    pub step: Option<Delta>,
    /// Summed kernel device time per step.
    pub kernel_time: Delta,
    /// The kernel type whose time per step changed most on this rank.
    pub largest: Option<KernelDelta>,
}

/// The comparison of two summaries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The base path.
    pub base: PathBuf,
    /// The new path.
    pub new: PathBuf,
    /// Phases present in both.
    pub phases: Vec<PhaseComparison>,
    /// Phases present in only one of the two (e.g. `prefill only in base`).
    pub unmatched: Vec<String>,
    /// What the two runs (or the ranks of a side) do not share, to read before any delta.
    pub warnings: Vec<Warning>,
}

/// A phase of one summary, reduced to per-step figures.
struct PhaseTotals {
    /// The steps its kernel times are divided by: each rank's kernel `Step Id`s when its table
    /// has them, else its recorded steps (at least 1).
    kernel_steps: usize,
    step_time_us: Option<f64>,
    /// Pooled standard deviation of the step totals within each rank (2+ steps needed).
    spread_us: Option<f64>,
    kernel_us: f64,
    /// Runs with a kernel table (kernel_details.csv or a db export's kernels).
    kernel_tables: usize,
    by_name: HashMap<String, (f64, u64)>,
    by_type: HashMap<String, (f64, u64)>,
}

impl PhaseTotals {
    fn of(runs: &[&RunSummary]) -> Self {
        let recorded: usize = runs.iter().map(|r| r.steps.len()).sum();
        let step_sum: f64 = runs.iter().flat_map(|r| &r.steps).map(|s| s.total_us).sum();
        let kernel_steps: usize = runs
            .iter()
            .map(|r| kernel_divisor(r.kernels.as_ref().map(|k| k.steps), r.steps.len()))
            .sum();
        let mut totals = Self {
            kernel_steps,
            step_time_us: (recorded > 0).then(|| step_sum / recorded as f64),
            spread_us: pooled_spread(runs),
            kernel_us: 0.0,
            kernel_tables: runs.iter().filter(|r| r.kernels.is_some()).count(),
            by_name: HashMap::new(),
            by_type: HashMap::new(),
        };
        for run in runs {
            totals.kernel_us += run.kernels.as_ref().map_or(0.0, |k| k.total_us);
            for k in &run.top_kernels {
                add(
                    &mut totals.by_name,
                    &operator_key(&k.name),
                    k.total_us,
                    k.count,
                );
            }
            for t in &run.by_type {
                add(&mut totals.by_type, &t.kind, t.total_us, t.count);
            }
        }
        totals
    }
}

/// The pooled standard deviation of step totals within each run (rank): the square root of
/// the squared deviations from each run's mean over `steps - runs`; `None` without a run of
/// 2+ steps.
fn pooled_spread(runs: &[&RunSummary]) -> Option<f64> {
    let (mut squares, mut freedom) = (0.0, 0_usize);
    for run in runs.iter().filter(|r| r.steps.len() > 1) {
        let n = run.steps.len();
        let mean = run.steps.iter().map(|s| s.total_us).sum::<f64>() / n as f64;
        squares += run
            .steps
            .iter()
            .map(|s| (s.total_us - mean).powi(2))
            .sum::<f64>();
        freedom += n - 1;
    }
    (freedom > 0).then(|| (squares / freedom as f64).sqrt())
}

fn add(map: &mut HashMap<String, (f64, u64)>, key: &str, us: f64, count: u64) {
    let entry = map.entry(key.to_owned()).or_default();
    entry.0 += us;
    entry.1 += count;
}

/// How a side of a comparison is named: the path as given, or, for `.`, `..` and the like,
/// the directory's own name (a bare `.` names no run).
pub fn side_label(path: &std::path::Path) -> String {
    let named = path
        .components()
        .next_back()
        .is_some_and(|c| matches!(c, std::path::Component::Normal(_)));
    if named {
        return path.display().to_string();
    }
    std::fs::canonicalize(path)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| path.display().to_string())
}

/// Compares `new` against `base`, phase by phase.
pub fn compare(base: &Summary, new: &Summary) -> Comparison {
    let base_phases = phases(base);
    let new_phases = phases(new);
    let mut pairs: Vec<(Option<String>, Option<String>)> = base_phases
        .iter()
        .filter(|p| new_phases.contains(p))
        .map(|p| (p.clone(), p.clone()))
        .collect();
    if pairs.is_empty() && base_phases.len() == 1 && new_phases.len() == 1 {
        pairs.push((base_phases[0].clone(), new_phases[0].clone()));
    }
    let mut unmatched = Vec::new();
    for (side, list, paired) in [
        (
            "base",
            &base_phases,
            pairs.iter().map(|p| &p.0).collect::<Vec<_>>(),
        ),
        (
            "new",
            &new_phases,
            pairs.iter().map(|p| &p.1).collect::<Vec<_>>(),
        ),
    ] {
        for phase in list.iter().filter(|p| !paired.contains(p)) {
            unmatched.push(format!("{} only in {side}", label(phase)));
        }
    }
    let mut warnings = Vec::new();
    if !unmatched.is_empty() {
        let detail = format!(
            "base has {}, new has {}",
            phase_list(&base_phases),
            phase_list(&new_phases)
        );
        warnings.push(Warning::new(WarningCode::Phases, None, &detail));
    }
    let phases = pairs
        .into_iter()
        .map(|(b, n)| {
            let base_runs: Vec<&RunSummary> = base.runs.iter().filter(|r| r.phase == b).collect();
            let new_runs: Vec<&RunSummary> = new.runs.iter().filter(|r| r.phase == n).collect();
            let phase = n.clone().or_else(|| b.clone());
            warnings.extend(warnings::between_phase(&phase, &base_runs, &new_runs));
            let mut compared = compare_phase(
                n.or(b),
                &PhaseTotals::of(&base_runs),
                &PhaseTotals::of(&new_runs),
            );
            compared.per_rank = per_rank(&base_runs, &new_runs);
            compared
        })
        .collect();
    Comparison {
        schema_version: SCHEMA_VERSION,
        base: base.path.clone(),
        new: new.path.clone(),
        phases,
        unmatched,
        warnings: warnings
            .into_iter()
            .chain(side_warnings("base", base))
            .chain(side_warnings("new", new))
            .collect(),
    }
}

/// The warnings within one side, each message prefixed with the side.
fn side_warnings(side: &str, summary: &Summary) -> Vec<Warning> {
    let warnings = summary.warnings.iter().map(|w| Warning {
        message: format!("{side}: {}", w.message),
        ..w.clone()
    });
    // A side's profiler_info that could not be used (a FIFO, a link out of the run, not
    // JSON): what it records is then not compared, and compare says so, not only summary.
    let notes = summary.runs.iter().flat_map(|run| {
        run.notes
            .iter()
            .filter(|note| note.ends_with(crate::run::INFO_UNREAD))
            .map(move |note| {
                Warning::new(
                    WarningCode::RunNote,
                    run.phase.clone(),
                    &format!("{side}: {}: {note}", run.dir),
                )
            })
    });
    warnings.chain(notes).collect()
}

fn phase_list(phases: &[Option<String>]) -> String {
    phases.iter().map(label).collect::<Vec<_>>().join(", ")
}

fn phases(summary: &Summary) -> Vec<Option<String>> {
    let mut out: Vec<Option<String>> = Vec::new();
    for run in &summary.runs {
        if !out.contains(&run.phase) {
            out.push(run.phase.clone());
        }
    }
    out
}

fn label(phase: &Option<String>) -> &str {
    phase.as_deref().unwrap_or("run")
}

/// The ranks present on both sides, by rank (or the only rank of each side).
fn per_rank(base: &[&RunSummary], new: &[&RunSummary]) -> Vec<RankComparison> {
    let mut pairs: Vec<(&RunSummary, &RunSummary)> = base
        .iter()
        .filter_map(|b| {
            Some((
                *b,
                *new.iter().find(|n| n.rank == b.rank && b.rank.is_some())?,
            ))
        })
        .collect();
    if pairs.is_empty() && base.len() == 1 && new.len() == 1 {
        pairs.push((base[0], new[0]));
    }
    pairs.sort_by_key(|(b, _)| b.rank);
    pairs
        .into_iter()
        .map(|(b, n)| {
            let compared = compare_phase(None, &PhaseTotals::of(&[b]), &PhaseTotals::of(&[n]));
            RankComparison {
                base_rank: b.rank,
                new_rank: n.rank,
                step: compared.step,
                kernel_time: compared.kernel_time,
                largest: compared.by_type.into_iter().next(),
            }
        })
        .collect()
}

fn compare_phase(phase: Option<String>, base: &PhaseTotals, new: &PhaseTotals) -> PhaseComparison {
    let step = match (base.step_time_us, new.step_time_us) {
        (Some(b), Some(n)) => Some(Delta::new(b, n)),
        _ => None,
    };
    let kernel_time = Delta::new(
        base.kernel_us / base.kernel_steps as f64,
        new.kernel_us / new.kernel_steps as f64,
    );
    let kernel_time_note = match (base.kernel_tables, new.kernel_tables) {
        (0, 0) => {
            Some("neither run has a kernel table (kernel_details.csv or a db export's kernels)")
        }
        (0, _) => {
            Some("the base run has no kernel table (kernel_details.csv or a db export's kernels)")
        }
        (_, 0) => {
            Some("the new run has no kernel table (kernel_details.csv or a db export's kernels)")
        }
        _ => None,
    }
    .map(str::to_owned);
    let reference = step.as_ref().map_or(kernel_time.base_us, |s| s.base_us);
    let by_name = deltas(
        &base.by_name,
        base.kernel_steps,
        &new.by_name,
        new.kernel_steps,
        reference,
    );
    let by_type = deltas(
        &base.by_type,
        base.kernel_steps,
        &new.by_type,
        new.kernel_steps,
        reference,
    );
    let noise_us = match (base.spread_us, new.spread_us) {
        (Some(b), Some(n)) => Some(b.max(n)),
        _ => None,
    };
    let within_noise = noise_us
        .zip(step.as_ref())
        .map(|(noise, step)| step.delta_us.abs() <= noise);
    let noise = noise_us.zip(within_noise);
    let verdict = verdict(&phase, step.as_ref(), &kernel_time, &by_type, noise);
    PhaseComparison {
        phase,
        step,
        kernel_time,
        kernel_time_note,
        by_name,
        by_type,
        noise_us,
        within_noise,
        per_rank: Vec::new(),
        verdict,
    }
}

fn deltas(
    base: &HashMap<String, (f64, u64)>,
    base_steps: usize,
    new: &HashMap<String, (f64, u64)>,
    new_steps: usize,
    reference_us: f64,
) -> Vec<KernelDelta> {
    let mut keys: Vec<&String> = base.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    let per_step = |v: Option<&(f64, u64)>, steps: usize| {
        v.map_or((0.0, 0.0), |(us, n)| {
            (us / steps as f64, *n as f64 / steps as f64)
        })
    };
    let mut out: Vec<KernelDelta> = keys
        .into_iter()
        .map(|key| {
            let (b, n) = (base.get(key), new.get(key));
            let (base_us, base_count) = per_step(b, base_steps);
            let (new_us, new_count) = per_step(n, new_steps);
            let delta_us = new_us - base_us;
            let change = match (b, n) {
                (None, _) => Change::Added,
                (_, None) => Change::Removed,
                _ if delta_us >= UNCHANGED_US => Change::Slower,
                _ if delta_us <= -UNCHANGED_US => Change::Faster,
                _ => Change::Unchanged,
            };
            KernelDelta {
                key: key.clone(),
                change,
                base_us,
                new_us,
                delta_us,
                base_count,
                new_count,
                effect: (reference_us > 0.0).then(|| delta_us / reference_us),
            }
        })
        .filter(|d| d.change != Change::Unchanged || d.base_count != d.new_count)
        .collect();
    out.sort_by(|a, b| {
        b.delta_us
            .abs()
            .total_cmp(&a.delta_us.abs())
            .then(a.key.cmp(&b.key))
    });
    out
}

/// The verdict line; `noise` is the step-to-step spread and whether the step change is
/// within it.
fn verdict(
    phase: &Option<String>,
    step: Option<&Delta>,
    kernel_time: &Delta,
    by_type: &[KernelDelta],
    noise: Option<(f64, bool)>,
) -> String {
    let (what, delta) = match step {
        Some(step) => ("step", step),
        None => ("kernel time per step", kernel_time),
    };
    let name = label(phase);
    let Some(ratio) = delta.delta_ratio else {
        return format!("{name} {what}: no base time to compare with");
    };
    let pct = ratio.abs() * 100.0;
    let direction = if pct < 0.05 {
        return format!(
            "{name} {what} unchanged ({})",
            units::signed(delta.delta_us)
        );
    } else if ratio > 0.0 {
        "slower"
    } else {
        "faster"
    };
    let mut line = format!(
        "{name} {what} {pct:.1}% {direction} ({})",
        units::signed(delta.delta_us)
    );
    if let Some((spread, true)) = noise.filter(|_| step.is_some()) {
        let _ = write!(
            line,
            ", within noise (step-to-step spread ±{})",
            units::duration(spread)
        );
    }
    let causes = by_type
        .iter()
        .filter(|d| d.delta_us.signum() == delta.delta_us.signum())
        .take(3)
        .map(|d| format!("{} in {}", units::signed(d.delta_us), d.key));
    for (index, cause) in causes.enumerate() {
        let separator = if index == 0 { ": " } else { ", " };
        let width = line.chars().count() + separator.len() + cause.chars().count();
        if index > 0 && width > VERDICT_WIDTH {
            break;
        }
        line.push_str(separator);
        line.push_str(&cause);
    }
    let opposite = by_type
        .iter()
        .filter(|d| d.delta_us.signum() == -delta.delta_us.signum())
        .find(|d| named_opposite(d));
    if let Some(d) = opposite {
        let _ = write!(line, "; yet {} in {}", units::signed(d.delta_us), d.key);
    }
    line
}

/// The key a kernel name is matched by across runs: HCCL's per-run number in
/// `hcom_allReduce__586_1_1` (`__<run>_<i>_<j>` at the end) becomes `*`, so the same
/// collective of two runs is one operator.
pub fn operator_key(name: &str) -> std::borrow::Cow<'_, str> {
    let Some((head, tail)) = name.rsplit_once("__") else {
        return name.into();
    };
    let parts: Vec<&str> = tail.split('_').collect();
    let numeric = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if parts.len() == 3 && parts.iter().all(numeric) {
        format!("{head}__*_{}_{}", parts[1], parts[2]).into()
    } else {
        name.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(items: &[(&str, f64, u64)]) -> HashMap<String, (f64, u64)> {
        items
            .iter()
            .map(|(k, us, n)| ((*k).to_owned(), (*us, *n)))
            .collect()
    }

    #[test]
    fn deltas_classify_and_rank_by_effect() {
        let base = map(&[
            ("MatMul", 200.0, 4),
            ("Cast", 20.0, 2),
            ("Gone", 10.0, 2),
            ("Same", 4.0, 2),
        ]);
        let new = map(&[
            ("MatMul", 100.0, 2),
            ("Cast", 10.0, 1),
            ("New", 50.0, 1),
            ("Same", 2.0, 1),
        ]);
        // base recorded 2 steps, new 1: per step MatMul 100 → 100, Cast 10 → 10, Same 2 → 2.
        let out = deltas(&base, 2, &new, 1, 1000.0);
        let got: Vec<_> = out
            .iter()
            .map(|d| (d.key.as_str(), d.change, d.delta_us))
            .collect();
        assert_eq!(
            got,
            [
                ("New", Change::Added, 50.0),
                ("Gone", Change::Removed, -5.0)
            ]
        );
        assert_eq!(out[0].effect, Some(0.05));
    }

    #[test]
    fn verdict_names_the_types_that_explain_the_change() {
        let step = Delta::new(10_000.0, 11_240.0);
        let types = vec![
            KernelDelta {
                key: "MatMulV3".to_owned(),
                change: Change::Slower,
                base_us: 5000.0,
                new_us: 6100.0,
                delta_us: 1100.0,
                base_count: 1.0,
                new_count: 1.0,
                effect: Some(0.11),
            },
            KernelDelta {
                key: "Cast".to_owned(),
                change: Change::Faster,
                base_us: 250.0,
                new_us: 200.0,
                delta_us: -50.0,
                base_count: 1.0,
                new_count: 1.0,
                effect: Some(-0.005),
            },
        ];
        let line = verdict(&Some("decode".to_owned()), Some(&step), &step, &types, None);
        assert_eq!(
            line,
            "decode step 12.4% slower (+1.24 ms): +1.10 ms in MatMulV3"
        );
    }

    #[test]
    fn a_change_of_the_other_sign_is_named_past_one_percent() {
        // The step is 1 ms faster because collectives got 3 ms faster, while MatMulV3 took 3×
        // its 1 ms: the slower type must not vanish from the headline.
        let step = Delta::new(10_000.0, 9_000.0);
        let delta = |key: &str, base_us: f64, new_us: f64| KernelDelta {
            key: key.to_owned(),
            change: if new_us > base_us {
                Change::Slower
            } else {
                Change::Faster
            },
            base_us,
            new_us,
            delta_us: new_us - base_us,
            base_count: 1.0,
            new_count: 1.0,
            effect: Some((new_us - base_us) / 10_000.0),
        };
        let types = vec![
            delta("hcom_allReduce_", 4000.0, 1000.0),
            delta("MatMulV3", 1000.0, 3000.0),
            delta("Cast", 100.0, 150.0),
        ];
        let line = verdict(&Some("decode".to_owned()), Some(&step), &step, &types, None);
        assert_eq!(
            line,
            "decode step 10.0% faster (-1.00 ms): -3.00 ms in hcom_allReduce_; yet +2.00 ms in MatMulV3"
        );
        // Under 1 % of the step (Cast: +50 µs of 10 ms) it is left out.
        let line = verdict(&None, Some(&step), &step, &types[..1], None);
        assert!(!line.contains("yet"), "{line}");
        let small = [types[0].clone(), types[2].clone()];
        assert!(!verdict(&None, Some(&step), &step, &small, None).contains("yet"));
    }

    #[test]
    fn hccl_names_match_across_runs_without_their_run_number() {
        assert_eq!(
            operator_key("hcom_allReduce__586_1_1"),
            "hcom_allReduce__*_1_1"
        );
        assert_eq!(
            operator_key("hcom_allReduce__271_1_1"),
            operator_key("hcom_allReduce__586_1_1")
        );
        assert_eq!(
            operator_key("hcom_allReduce__586_0_1"),
            "hcom_allReduce__*_0_1"
        );
        for plain in [
            "MatMulV2",
            "a__b",
            "x__1_2",
            "x__1_2_y",
            "trans_TransData_0",
        ] {
            assert_eq!(operator_key(plain), plain);
        }
    }
}
