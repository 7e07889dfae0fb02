//! The skill's breakdown from its own files (`--structure`, `--rules`), on every step of a run,
//! without its dialogue.
//!
//! 1. **Kernels**, as the skill's Step 1 keeps them: `AI_CPU` rows dropped; an HCCL task
//!    fragment (`AivKernel` on the communication core) dropped when a collective's summary
//!    row of the same step and type covers its start (no double-counted communication).
//! 2. **Windows.** The skill slides user-acked samples over one step; npuprof has no samples,
//!    so a step's layers are the ones layer mode infers ([`crate::layers::cut`]), taken in
//!    order against the structure's layers (phase after phase; a step that runs the structure
//!    `k` times — micro-batches — gives `k` passes). A step whose layer count is not a
//!    multiple of the declared count is left out, said in a note: no layer is made up.
//! 3. **Components.** A layer is split between its composition's components in order, where
//!    the rules' own kernels change: each kernel counts for the component one of whose
//!    non-`catch_all` rules names it, against another component of the layer that names it
//!    and this one does not; the cut with the most such kernels on the right side wins. Among
//!    equal cuts, one at a norm (a pre-norm block starts with its norm; its gradient ends with
//!    the norm's gradient), else the latest (what no rule names stays with the earlier
//!    component).
//! 4. **Arithmetic, the skill's `render.py`.** Per component instance: each kernel goes to the
//!    first cluster one of whose rules it matches (a rule: every condition it gives holds);
//!    a cluster's **wall** is the union of its kernels' intervals, **TOTAL** the instance's
//!    span (last end − first start), **bubble** TOTAL − the union of all its kernels.
//!    Statistics over a step's instances of a component type: median, mean, population
//!    standard deviation, interpolated 95th percentile, min, max; outlier instances by the
//!    rules' `outlier` (IQR with Q1 = `sorted[n/4]`, Q3 = `sorted[3n/4]`, both fences; z-score;
//!    2 or 3 instances: above 1.5 × the median). The share of TOTAL the cluster medians add up
//!    to (the skill warns under 80 %) and the cross-cluster overlap (Σ cluster walls − union;
//!    it warns from 5 % of TOTAL) are reported. Times are exact integers (picoseconds from
//!    the step's first kernel) where the skill adds floats of 16 digits.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::Confidence;
use crate::classes::{Class, class_of};
use crate::kernels::{KernelRow, KernelTable};
use crate::layers::{StepCut, cut};
use crate::skill::{ComponentRules, Op, Outlier, OutlierMethod, Rules, Structure};
use crate::time::ps_to_us;

/// The skill refuses a breakdown that leaves more than this share of the compute kernels
/// outside every component.
pub const UNMATCHED_LIMIT: f64 = 0.05;
/// Under this share of TOTAL, the cluster medians do not explain the component (the skill's
/// red banner).
pub const CLUSTER_SHARE_MIN: f64 = 0.8;
/// From this share of TOTAL, clusters overlap too much to be read as a split (the skill's
/// yellow banner).
pub const OVERLAP_WARN: f64 = 0.05;
/// With 2 or 3 instances, an outlier is above this factor × the median.
pub const SMALL_N_RATIO: f64 = 1.5;

/// Statistics of one row (a cluster, bubble or TOTAL) over a step's instances of a type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// The value of each instance (µs), in the order of [`TypeSection::instances`].
    pub per_instance_us: Vec<f64>,
    /// Median (µs).
    pub median_us: f64,
    /// Mean (µs).
    pub mean_us: f64,
    /// Population standard deviation (µs; 0 for one instance).
    pub std_us: f64,
    /// 95th percentile, linearly interpolated (µs).
    pub p95_us: f64,
    /// Smallest (µs).
    pub min_us: f64,
    /// Largest (µs).
    pub max_us: f64,
    /// Positions (in [`TypeSection::instances`]) of the outlier instances.
    pub outliers: Vec<usize>,
}

/// A cluster's wall over a step's instances.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterRow {
    /// The cluster.
    pub cluster: String,
    /// Its description.
    pub description: String,
    /// Its wall (union of its kernels' intervals) per instance.
    pub wall: Series,
}

/// One component instance: a component of one layer of one pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Instance {
    /// The structure's phase.
    pub phase: String,
    /// The layer over all phases (the skill's `layer_idx`).
    pub layer_idx: usize,
    /// Which run of the structure in the step (0 unless the step runs it several times).
    pub pass: usize,
    /// Position of its first kernel among the step's kernels in start order (after the
    /// skill's Step 1 filter).
    pub first_kernel: usize,
    /// Its kernels.
    pub kernels: usize,
}

/// Kernels of a type's instances that no cluster takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unmatched {
    /// The kernel type.
    pub op_name: String,
    /// Kernels.
    pub count: usize,
}

/// One component type's breakdown in one step (the skill's table of a component type).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeSection {
    /// The component type.
    pub component: String,
    /// Whether the rules have clusters for it (else bubble and TOTAL only).
    pub has_rules: bool,
    /// Its instances in running order.
    pub instances: Vec<Instance>,
    /// Per cluster, in the rules' order.
    pub clusters: Vec<ClusterRow>,
    /// TOTAL − the union of all its kernels per instance.
    pub bubble: Series,
    /// The instance's span: last kernel end − first kernel start.
    pub total: Series,
    /// Kernels no cluster takes, by type.
    pub unmatched: Vec<Unmatched>,
    /// The cluster medians' sum over the TOTAL median (`None` without clusters).
    pub cluster_share: Option<f64>,
    /// Median over instances of Σ cluster walls − the union of all kernels (µs).
    pub overlap_us: f64,
    /// That over the TOTAL median.
    pub overlap_share: f64,
}

/// One step broken down by the structure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepSections {
    /// The `Step Id`, when the table has one.
    pub step: Option<u64>,
    /// How many times the step runs the structure.
    pub passes: usize,
    /// Kernels of the step after the skill's Step 1 filter.
    pub kernels: usize,
    /// Kernels in no component instance (the skill's pre, post and inter-layer regions).
    pub outside: usize,
    /// Of the kernels not on the communication core, the share in no component instance
    /// (the skill refuses above [`UNMATCHED_LIMIT`]).
    pub outside_compute_share: f64,
    /// Per component type: the rules' order, then the others by name.
    pub sections: Vec<TypeSection>,
}

/// A row of a type over the steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryRow {
    /// The cluster, `bubble` or `TOTAL`.
    pub name: String,
    /// Median over the steps of the step's median (µs).
    pub median_us: f64,
    /// Median over the steps of the step's 95th percentile (µs).
    pub p95_us: f64,
    /// The instances an outlier in some step, with the steps they were one in.
    pub outliers: Vec<OutlierCount>,
}

/// An instance that was an outlier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutlierCount {
    /// Its phase.
    pub phase: String,
    /// Its layer.
    pub layer_idx: usize,
    /// Its pass.
    pub pass: usize,
    /// Steps it was an outlier in.
    pub steps: usize,
}

/// A component type over the steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeSummary {
    /// The component type.
    pub component: String,
    /// Instances per step.
    pub instances: usize,
    /// Its clusters, then `bubble`, then `TOTAL`.
    pub rows: Vec<SummaryRow>,
}

/// The run broken down by the skill's files.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StructureBreakdown {
    /// The rules' `model_name`, when rules were given.
    pub model_name: Option<String>,
    /// How outliers were told.
    pub outlier: Outlier,
    /// Layers the structure declares (over its phases).
    pub layers_declared: usize,
    /// How sure the windows are (never above layer mode's).
    pub confidence: Confidence,
    /// Kernels the skill's Step 1 leaves out: `AI_CPU` rows.
    pub dropped_ai_cpu: usize,
    /// Kernels the skill's Step 1 leaves out: HCCL fragments a collective's row covers.
    pub dropped_fragments: usize,
    /// Every step broken down (a step whose layers do not fit the structure is in a note).
    pub steps: Vec<StepSections>,
    /// Per component type over those steps.
    pub summary: Vec<TypeSummary>,
    /// What could not be done, and what to beware of.
    pub notes: Vec<String>,
}

const MISSING_IDS: [&str; 5] = ["", "N/A", "NA", "NONE", "NULL"];

fn missing_id(text: &str) -> bool {
    MISSING_IDS.iter().any(|m| text.eq_ignore_ascii_case(m))
}

fn hccl(ty: &str) -> bool {
    let lower = ty.to_ascii_lowercase();
    lower.starts_with("hcom") || lower.contains("hccl")
}

/// An interval in picoseconds since the epoch.
type Span = (u128, u128);

/// The table the skill's Step 1 keeps, and how many rows it drops (AI_CPU, fragments).
fn step1(table: &KernelTable) -> (KernelTable, usize, usize) {
    let core = |i: usize| table.detail(i, |d| d.core).to_ascii_uppercase();
    let name = |i: usize| table.detail(i, |d| d.name);
    let ids_missing = |i: usize| {
        missing_id(table.detail(i, |d| d.stream)) && missing_id(table.detail(i, |d| d.task))
    };
    let ty = |i: usize| table.types[table.rows[i].ty as usize].as_str();
    let start_ps = |r: &KernelRow| u128::from(r.start_ns) * 1000;
    let has_steps = table.rows.iter().any(|r| r.step.is_some());
    // Collective summary rows: (step, type) → intervals.
    let mut summaries: BTreeMap<(Option<u64>, u32), Vec<Span>> = BTreeMap::new();
    for (i, r) in table.rows.iter().enumerate() {
        if core(i) == "COMMUNICATION" && name(i) != "AivKernel" && ids_missing(i) && hccl(ty(i)) {
            let s = start_ps(r);
            summaries
                .entry((r.step, r.ty))
                .or_default()
                .push((s, s + u128::from(r.dur_ps)));
        }
    }
    let mut kept = KernelTable {
        types: table.types.clone(),
        texts: table.texts.clone(),
        ..KernelTable::default()
    };
    let (mut ai_cpu, mut fragments) = (0, 0);
    for (i, r) in table.rows.iter().enumerate() {
        if has_steps && r.step.is_none() {
            continue;
        }
        let c = core(i);
        if c == "AI_CPU" || c == "AICPU" {
            ai_cpu += 1;
            continue;
        }
        if c == "COMMUNICATION" && name(i) == "AivKernel" && !ids_missing(i) && hccl(ty(i)) {
            // The skill's eps: 1e-3 µs.
            let s = start_ps(r);
            let covered = summaries
                .get(&(r.step, r.ty))
                .is_some_and(|ivs| ivs.iter().any(|&(lo, hi)| lo <= s + 1000 && s <= hi + 1000));
            if covered {
                fragments += 1;
                continue;
            }
        }
        kept.rows.push(*r);
        kept.details.extend(table.details.get(i));
    }
    (kept, ai_cpu, fragments)
}

/// Whether a component may start at `t` by the norm rule: a forward norm at `t`, or a norm's
/// gradient just before it.
fn at_norm(ops: &[Op<'_>], t: usize) -> bool {
    let norm = |i: usize| class_of(ops[i].name) == Class::Norm;
    (t < ops.len() && norm(t) && !ops[t].name.ends_with("Grad"))
        || (t > 0 && norm(t - 1) && ops[t - 1].name.ends_with("Grad"))
}

/// Where a layer's kernels are split between its components: `ends[j]` is the end
/// (exclusive, position in `ops`) of component `j`.
fn split(ops: &[Op<'_>], components: &[Option<&ComponentRules>]) -> Vec<usize> {
    let m = components.len();
    let n = ops.len();
    if m == 1 {
        return vec![n];
    }
    let norm_at: Vec<bool> = (0..=n).map(|t| at_norm(ops, t)).collect();
    // claims[j][i]: component j's own rules name kernel i.
    let claims: Vec<Vec<bool>> = components
        .iter()
        .map(|c| {
            ops.iter()
                .map(|op| c.is_some_and(|c| c.claims(op)))
                .collect()
        })
        .collect();
    let score = |j: usize, i: usize| -> i64 {
        if claims[j][i] {
            1
        } else if (0..m).any(|o| claims[o][i]) {
            -1
        } else {
            0
        }
    };
    // prefix[j][i]: score of kernels 0..i given to component j.
    let prefix: Vec<Vec<i64>> = (0..m)
        .map(|j| {
            let mut p = vec![0i64; n + 1];
            for i in 0..n {
                p[i + 1] = p[i] + score(j, i);
            }
            p
        })
        .collect();
    // best[j][i]: best score of kernels 0..i split among components 0..=j; from[j][i]: where
    // component j starts then.
    let mut best = vec![vec![i64::MIN; n + 1]; m];
    let mut from = vec![vec![0usize; n + 1]; m];
    for i in 0..=n {
        best[0][i] = prefix[0][i];
    }
    for j in 1..m {
        let (mut run, mut at) = (i64::MIN, 0usize);
        for i in 0..=n {
            // Component j may start at i: among equals, at a norm, else the latest.
            let candidate = best[j - 1][i] - prefix[j][i];
            if candidate > run || (candidate == run && (norm_at[i] || !norm_at[at])) {
                run = candidate;
                at = i;
            }
            best[j][i] = run + prefix[j][i];
            from[j][i] = at;
        }
    }
    let mut ends = vec![0usize; m];
    let mut end = n;
    for j in (0..m).rev() {
        ends[j] = end;
        if j > 0 {
            end = from[j][end];
        }
    }
    ends
}

/// The union and the span of intervals (ps); empty intervals left out, as the skill does.
fn wall_span(mut ivs: Vec<(u64, u64)>) -> (u64, u64) {
    ivs.retain(|(lo, hi)| hi > lo);
    if ivs.is_empty() {
        return (0, 0);
    }
    ivs.sort_unstable();
    let span = ivs.iter().map(|iv| iv.1).max().unwrap_or(0) - ivs[0].0;
    let (mut wall, mut cur) = (0u64, ivs[0]);
    for &(lo, hi) in &ivs[1..] {
        if lo > cur.1 {
            wall += cur.1 - cur.0;
            cur = (lo, hi);
        } else {
            cur.1 = cur.1.max(hi);
        }
    }
    (wall + cur.1 - cur.0, span)
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    match n {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The skill's `detect_outliers`.
pub fn outliers(values: &[f64], outlier: Outlier) -> Vec<usize> {
    let n = values.len();
    if n < 2 {
        return Vec::new();
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let pick = |keep: &dyn Fn(f64) -> bool| -> Vec<usize> {
        (0..n).filter(|&i| keep(values[i])).collect()
    };
    if n < 4 {
        let med = median(&sorted);
        if med <= 0.0 {
            return Vec::new();
        }
        return pick(&|v| v > med * SMALL_N_RATIO);
    }
    let k = outlier.k;
    match outlier.method {
        OutlierMethod::Z => {
            let mean = values.iter().sum::<f64>() / n as f64;
            let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            if sd <= 0.0 {
                return Vec::new();
            }
            pick(&|v| (v - mean).abs() / sd > k)
        }
        OutlierMethod::Iqr => {
            let (q1, q3) = (sorted[n / 4], sorted[3 * n / 4]);
            let iqr = q3 - q1;
            if iqr <= 0.0 {
                return pick(&|v| v < q1 || v > q3);
            }
            let (lo, hi) = (q1 - k * iqr, q3 + k * iqr);
            pick(&|v| v < lo || v > hi)
        }
    }
}

/// The skill's `series_metrics` (in µs) with its outliers.
pub fn series(values_ps: &[u64], outlier: Outlier) -> Series {
    let values: Vec<f64> = values_ps.iter().map(|&ps| ps_to_us(ps)).collect();
    let n = values.len();
    let mut sorted = values.clone();
    sorted.sort_by(f64::total_cmp);
    let mean = if n == 0 {
        0.0
    } else {
        values.iter().sum::<f64>() / n as f64
    };
    let std = if n > 1 {
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt()
    } else {
        0.0
    };
    let p95 = match n {
        0 => 0.0,
        1 => sorted[0],
        _ => {
            let rank = 0.95 * (n - 1) as f64;
            let lo = rank as usize;
            let hi = (lo + 1).min(n - 1);
            let frac = rank - lo as f64;
            sorted[lo] * (1.0 - frac) + sorted[hi] * frac
        }
    };
    Series {
        median_us: median(&sorted),
        mean_us: mean,
        std_us: std,
        p95_us: p95,
        min_us: sorted.first().copied().unwrap_or(0.0),
        max_us: sorted.last().copied().unwrap_or(0.0),
        outliers: outliers(&values, outlier),
        per_instance_us: values,
    }
}

/// A component instance's kernels (rows of the filtered table).
struct Found {
    component: String,
    instance: Instance,
    rows: Vec<usize>,
}

fn op_of<'a>(table: &'a KernelTable, row: usize) -> Op<'a> {
    Op {
        name: &table.types[table.rows[row].ty as usize],
        input_shapes: table.detail(row, |d| d.input_shapes),
        output_shapes: table.detail(row, |d| d.output_shapes),
    }
}

/// Cuts one step into component instances; `None` (with a note) when its layers do not fit.
fn instances(
    table: &KernelTable,
    step: &StepCut,
    structure: &Structure,
    rules: Option<&Rules>,
    notes: &mut Vec<String>,
) -> Option<(usize, Vec<Found>)> {
    let step_name = step
        .step
        .map_or_else(|| "the table".to_owned(), |s| format!("step {s}"));
    let declared = structure.layer_count();
    let found = step.layers.len();
    if found == 0 {
        notes.push(format!(
            "{step_name}: no layers inferred from its kernel stream: not broken down"
        ));
        return None;
    }
    if !found.is_multiple_of(declared) {
        notes.push(format!(
            "{step_name}: its kernel stream shows {found} layers, the structure declares \
             {declared}: not broken down (no layer is made up)"
        ));
        return None;
    }
    let schedule = structure.schedule();
    let mut out = Vec::new();
    let mut empty: BTreeMap<&str, usize> = BTreeMap::new();
    for (k, range) in step.layers.iter().enumerate() {
        let layer = &schedule[k % declared];
        let rows = &step.rows[range.clone()];
        let ops: Vec<Op<'_>> = rows.iter().map(|&r| op_of(table, r)).collect();
        let component_rules: Vec<Option<&ComponentRules>> = layer
            .components
            .iter()
            .map(|c| rules.and_then(|r| r.of(c)))
            .collect();
        let ends = split(&ops, &component_rules);
        let mut start = 0;
        for (j, component) in layer.components.iter().enumerate() {
            let end = ends[j];
            if end > start {
                out.push(Found {
                    component: component.clone(),
                    instance: Instance {
                        phase: layer.phase.to_owned(),
                        layer_idx: layer.layer_idx,
                        pass: k / declared,
                        first_kernel: range.start + start,
                        kernels: end - start,
                    },
                    rows: rows[start..end].to_vec(),
                });
            } else {
                *empty.entry(component).or_default() += 1;
            }
            start = end;
        }
    }
    for (component, layers) in empty {
        notes.push(format!(
            "{step_name}: component {component} has no kernel in {layers} layer(s) (its rules \
             name none of the layer's kernels)"
        ));
    }
    Some((found / declared, out))
}

/// One type's section over its instances of a step.
fn section(
    table: &KernelTable,
    origin_ns: u64,
    component: &str,
    found: &[&Found],
    rules: Option<&ComponentRules>,
    outlier: Outlier,
) -> TypeSection {
    let clusters = rules.map_or(0, |r| r.clusters.len());
    let mut walls: Vec<Vec<u64>> = vec![Vec::with_capacity(found.len()); clusters];
    let (mut totals, mut bubbles, mut gaps) = (Vec::new(), Vec::new(), Vec::new());
    let mut unmatched: BTreeMap<String, usize> = BTreeMap::new();
    for f in found {
        let mut by_cluster: Vec<Vec<(u64, u64)>> = vec![Vec::new(); clusters];
        let mut all = Vec::with_capacity(f.rows.len());
        for &row in &f.rows {
            let r = &table.rows[row];
            let lo = (r.start_ns - origin_ns) * 1000;
            let iv = (lo, lo + r.dur_ps);
            all.push(iv);
            let op = op_of(table, row);
            match rules.map(|c| c.classify(&op)) {
                Some(Some(c)) => by_cluster[c].push(iv),
                Some(None) => *unmatched.entry(op.name.to_owned()).or_default() += 1,
                None => {}
            }
        }
        let (wall, span) = wall_span(all);
        let mut sum = 0u64;
        for (c, ivs) in by_cluster.into_iter().enumerate() {
            let (w, _) = wall_span(ivs);
            walls[c].push(w);
            sum += w;
        }
        totals.push(span);
        bubbles.push(span.saturating_sub(wall));
        gaps.push(sum.saturating_sub(wall));
    }
    let total = series(&totals, outlier);
    let cluster_rows: Vec<ClusterRow> = rules.map_or_else(Vec::new, |r| {
        r.clusters
            .iter()
            .zip(&walls)
            .map(|(c, w)| ClusterRow {
                cluster: c.name.clone(),
                description: c.description.clone(),
                wall: series(w, outlier),
            })
            .collect()
    });
    let share = |x: f64| {
        if total.median_us > 0.0 {
            x / total.median_us
        } else {
            0.0
        }
    };
    let mut gap_sorted: Vec<f64> = gaps.iter().map(|&g| ps_to_us(g)).collect();
    gap_sorted.sort_by(f64::total_cmp);
    let overlap_us = median(&gap_sorted);
    TypeSection {
        component: component.to_owned(),
        has_rules: rules.is_some(),
        instances: found.iter().map(|f| f.instance.clone()).collect(),
        cluster_share: (!cluster_rows.is_empty() && total.median_us > 0.0)
            .then(|| share(cluster_rows.iter().map(|c| c.wall.median_us).sum())),
        clusters: cluster_rows,
        bubble: series(&bubbles, outlier),
        overlap_share: share(overlap_us),
        overlap_us,
        total,
        unmatched: unmatched
            .into_iter()
            .map(|(op_name, count)| Unmatched { op_name, count })
            .collect(),
    }
}

/// The component types in the skill's report order: the rules' order, then by name.
fn type_order<'a>(structure: &'a Structure, rules: Option<&'a Rules>) -> Vec<&'a str> {
    let used = structure.component_types();
    let mut order: Vec<&str> = rules
        .map(|r| {
            r.components
                .iter()
                .map(|c| c.component.as_str())
                .filter(|c| used.contains(c))
                .collect()
        })
        .unwrap_or_default();
    for c in used {
        if !order.contains(&c) {
            order.push(c);
        }
    }
    order
}

fn summarize(steps: &[StepSections]) -> Vec<TypeSummary> {
    let Some(first) = steps.first() else {
        return Vec::new();
    };
    first
        .sections
        .iter()
        .enumerate()
        .map(|(t, sec)| {
            let of_steps = |pick: &dyn Fn(&TypeSection) -> &Series, name: &str| {
                let mut medians: Vec<f64> = steps
                    .iter()
                    .map(|s| pick(&s.sections[t]).median_us)
                    .collect();
                let mut p95s: Vec<f64> =
                    steps.iter().map(|s| pick(&s.sections[t]).p95_us).collect();
                medians.sort_by(f64::total_cmp);
                p95s.sort_by(f64::total_cmp);
                let mut counts: BTreeMap<(usize, usize, String), usize> = BTreeMap::new();
                for s in steps {
                    let section = &s.sections[t];
                    for &i in &pick(section).outliers {
                        let inst = &section.instances[i];
                        *counts
                            .entry((inst.pass, inst.layer_idx, inst.phase.clone()))
                            .or_default() += 1;
                    }
                }
                SummaryRow {
                    name: name.to_owned(),
                    median_us: median(&medians),
                    p95_us: median(&p95s),
                    outliers: counts
                        .into_iter()
                        .map(|((pass, layer_idx, phase), steps)| OutlierCount {
                            phase,
                            layer_idx,
                            pass,
                            steps,
                        })
                        .collect(),
                }
            };
            let mut rows: Vec<SummaryRow> = sec
                .clusters
                .iter()
                .enumerate()
                .map(|(c, row)| of_steps(&|s: &TypeSection| &s.clusters[c].wall, &row.cluster))
                .collect();
            rows.push(of_steps(&|s: &TypeSection| &s.bubble, "bubble"));
            rows.push(of_steps(&|s: &TypeSection| &s.total, "TOTAL"));
            TypeSummary {
                component: sec.component.clone(),
                instances: sec.instances.len(),
                rows,
            }
        })
        .collect()
}

/// Breaks a detailed kernel table ([`crate::kernels::read_detailed`]) down by the skill's
/// structure and, when given, its cluster rules.
pub fn apply(
    table: &KernelTable,
    structure: &Structure,
    rules: Option<&Rules>,
) -> StructureBreakdown {
    let outlier = rules.map(|r| r.outlier).unwrap_or_default();
    let (kept, dropped_ai_cpu, dropped_fragments) = step1(table);
    let mut notes = vec![
        "component windows: the layers inferred from the kernel stream, in order against the \
         structure's layers, each split between its components where the rules' own kernels \
         change (the skill's acked samples are not used)"
            .to_owned(),
    ];
    let mut confidence = Confidence::High;
    let order = type_order(structure, rules);
    if let Some(r) = rules {
        for c in &r.components {
            if !order.contains(&c.component.as_str()) {
                notes.push(format!(
                    "the rules' component type {} is in no layer of the structure",
                    c.component
                ));
            }
        }
    }
    for phase in &structure.phases {
        for c in phase.layers.iter().filter(|l| l.len() > 1).flatten() {
            if !rules
                .and_then(|r| r.of(c))
                .is_some_and(ComponentRules::has_specific_rules)
            {
                notes.push(format!(
                    "component {c} shares layers with others but has no rule other than \
                     catch_all: where it starts in a layer is a guess"
                ));
                confidence = Confidence::Low;
                break;
            }
        }
    }
    notes.dedup();
    let mut steps = Vec::new();
    for step in cut(&kept) {
        let Some((passes, found)) = instances(&kept, &step, structure, rules, &mut notes) else {
            continue;
        };
        let origin_ns = step
            .rows
            .iter()
            .map(|&r| kept.rows[r].start_ns)
            .min()
            .unwrap_or(0);
        let mut inside = vec![false; step.rows.len()];
        for f in &found {
            let a = f.instance.first_kernel;
            inside[a..a + f.instance.kernels].fill(true);
        }
        let comm = |pos: usize| {
            let core = kept.detail(step.rows[pos], |d| d.core);
            core.eq_ignore_ascii_case("COMMUNICATION") || core.eq_ignore_ascii_case("HCCL")
        };
        let compute = (0..step.rows.len()).filter(|&p| !comm(p)).count();
        let compute_outside = (0..step.rows.len())
            .filter(|&p| !comm(p) && !inside[p])
            .count();
        let sections: Vec<TypeSection> = order
            .iter()
            .map(|&c| {
                let of: Vec<&Found> = found.iter().filter(|f| f.component == c).collect();
                section(
                    &kept,
                    origin_ns,
                    c,
                    &of,
                    rules.and_then(|r| r.of(c)),
                    outlier,
                )
            })
            .collect();
        let outside_compute_share = if compute == 0 {
            0.0
        } else {
            compute_outside as f64 / compute as f64
        };
        if outside_compute_share > UNMATCHED_LIMIT {
            confidence = Confidence::Low;
        }
        steps.push(StepSections {
            step: step.step,
            passes,
            kernels: step.rows.len(),
            outside: inside.iter().filter(|i| !**i).count(),
            outside_compute_share,
            sections,
        });
    }
    let over_limit = steps
        .iter()
        .filter(|s| s.outside_compute_share > UNMATCHED_LIMIT)
        .count();
    if over_limit > 0 {
        notes.push(format!(
            "{over_limit} step(s) leave more than {:.0} % of the compute kernels outside every \
             component (the skill would refuse them: a component may be missing from the \
             structure)",
            UNMATCHED_LIMIT * 100.0
        ));
    }
    if steps.is_empty() {
        confidence = Confidence::None;
    }
    StructureBreakdown {
        model_name: rules.map(|r| r.model_name.clone()),
        outlier,
        layers_declared: structure.layer_count(),
        confidence,
        dropped_ai_cpu,
        dropped_fragments,
        summary: summarize(&steps),
        steps,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_and_span_leave_out_empty_intervals() {
        assert_eq!(
            wall_span(vec![(0, 10), (5, 15), (20, 30), (40, 40)]),
            (25, 30)
        );
        assert_eq!(wall_span(vec![]), (0, 0));
    }

    #[test]
    fn outliers_as_the_skill_tells_them() {
        let iqr = Outlier::default();
        // n = 10: Q1 = sorted[2], Q3 = sorted[7]; both fences.
        let mut v: Vec<f64> = (0..10).map(|i| 10.0 + f64::from(i % 3)).collect();
        assert!(outliers(&v, iqr).is_empty());
        v[4] = 30.0;
        v[6] = 0.5;
        assert_eq!(outliers(&v, iqr), [4, 6]);
        // IQR 0: anything off the quartiles.
        assert_eq!(outliers(&[5.0, 5.0, 5.0, 5.0, 6.0], iqr), [4]);
        // 2 or 3 values: above 1.5 × the median.
        assert_eq!(outliers(&[10.0, 10.0, 16.0], iqr), [2]);
        let z = Outlier {
            method: OutlierMethod::Z,
            k: 1.5,
        };
        assert_eq!(outliers(&[1.0, 1.0, 1.0, 1.0, 9.0], z), [4]);
    }

    #[test]
    fn series_as_the_skill_computes_it() {
        let s = series(
            &[4_000_000, 1_000_000, 3_000_000, 2_000_000],
            Outlier::default(),
        );
        assert_eq!(
            (s.median_us, s.mean_us, s.min_us, s.max_us),
            (2.5, 2.5, 1.0, 4.0)
        );
        assert!((s.p95_us - 3.85).abs() < 1e-12);
        assert!((s.std_us - 1.25f64.sqrt()).abs() < 1e-12);
    }
}
