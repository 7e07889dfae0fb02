//! Layer mode: the layers of each step inferred from its kernel stream (kernel_details.csv),
//! when the trace holds no module calls.
//!
//! 1. **Anchor.** The first of [`ANCHORS`] (attention core, then MoE gate, then norm) whose
//!    occurrences in the step have a dominant gap: at least [`MIN_DOMINANCE`] of the gaps (in
//!    kernels) between consecutive occurrences take a value that repeats, the most frequent of
//!    them at least [`MIN_PERIOD`] kernels. Never the most
//!    regular kernel as such: an optimizer's per-parameter loop is as regular as it gets.
//! 2. **Blocks.** The kernels from one anchor to the next, grouped by their kernel-type
//!    multiset (weighted Jaccard ≥ [`JACCARD`]); consecutive blocks of one group are a
//!    periodic run.
//! 3. **Layers.** Each run's anchors are moved back to the earliest position whose kernel type
//!    is the same before all of them (where a layer starts: its norm, its projections); each
//!    such start opens a layer, the run's last one as long as the block before it when its
//!    kernels match the run's. An anchor in no run opens a layer of its own, sized by the
//!    longest run, extended back to just after a head/sampling kernel before it (the start of
//!    a second model invocation, as an MTP layer is).
//! 4. **Kinds and runs.** Layers are grouped into kinds by kernel-type multiset (Jaccard ≥
//!    [`JACCARD`]); adjacent layers of one kind are a run (a forward or backward pass, a
//!    micro-batch, an MTP layer). What lies outside the layers is a region (before, between,
//!    after); a long send/receive in a region is a pipeline wait.
//! 5. **Over steps.** Per layer index, the median and 95th percentile of its span (first
//!    kernel's start to last kernel's end) over the steps that have the same layer count;
//!    outlier layers by IQR within their kind (k = [`IQR_K`]; with 3 layers or fewer, more
//!    than [`SMALL_N_FACTOR`] × the kind's median).
//!
//! Every result says it is inferred and how sure it is; no layer is made up where no anchor
//! occurs.

use std::collections::BTreeMap;

use crate::Map;

use serde::Serialize;

use crate::Confidence;
use crate::classes::{Class, class_of};
use crate::kernels::KernelTable;
use crate::time::{median_p95, ps_to_us};

/// The layer-defining classes, in the order they are tried.
pub const ANCHORS: [Class; 3] = [Class::AttentionCore, Class::MoeGate, Class::Norm];

/// The fewest kernels between anchors (the dominant gap) that make a layer: attention alone,
/// or attention and a norm, repeated back to back is not a layer of a model.
pub const MIN_PERIOD: usize = 4;

/// The share of anchor gaps that must take a repeated value.
pub const MIN_DOMINANCE: f64 = 0.5;

/// From this share on (and with no layer on its own), the result is of high confidence.
pub const HIGH_DOMINANCE: f64 = 0.8;

/// Two kernel-type multisets are of one kind from this weighted Jaccard similarity on.
pub const JACCARD: f64 = 0.9;

/// The IQR fence factor for outlier layers.
pub const IQR_K: f64 = 1.5;

/// With this many layers of a kind or fewer, an outlier is above this factor × the median.
pub const SMALL_N_FACTOR: f64 = 1.5;

/// The most layers a kind may have for [`SMALL_N_FACTOR`] to apply.
pub const SMALL_N: usize = 3;

/// A kernel of one step, in start order.
#[derive(Debug, Clone, Copy)]
struct Kernel {
    row: usize,
    ty: u32,
    class: Class,
    start: u64,
    end: u64,
    dur_ps: u64,
}

/// Which way a layer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Its anchor kernel is a forward kernel.
    Forward,
    /// Its anchor kernel is a gradient (`…Grad`) kernel.
    Backward,
}

/// Where a region lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RegionRole {
    /// Before the first layer (embedding, input preparation).
    Before,
    /// Between two layers that are not adjacent (head, loss, sampler, pipeline waits, the
    /// start of another micro-batch).
    Between,
    /// After the last layer (head, sampler, optimizer, gradient synchronisation).
    After,
}

/// The anchor the layers were cut by.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Anchor {
    /// Its class.
    pub class: Class,
    /// The kernel types of that class in the step, in order of first occurrence.
    pub types: Vec<String>,
    /// Occurrences in the step.
    pub occurrences: usize,
    /// The most frequent gap between consecutive occurrences, in kernels.
    pub period: usize,
    /// The share of gaps that take a repeated value.
    pub dominance: f64,
}

/// Time per class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassTime {
    /// The class.
    pub class: Class,
    /// Kernel time (µs; for a layer, the median over steps).
    pub us: f64,
}

/// A kind of layer: layers whose kernel-type multisets are alike.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Kind {
    /// Its number (`kind` of the layers), in order of first occurrence.
    pub id: usize,
    /// Forward or backward.
    pub direction: Direction,
    /// Layers of this kind in a step.
    pub layers: usize,
    /// Kernels of its first layer.
    pub kernels: usize,
    /// The classes of its first layer, most time first.
    pub classes: Vec<ClassTime>,
}

/// Adjacent layers of one kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// The kind.
    pub kind: usize,
    /// Forward or backward.
    pub direction: Direction,
    /// Index of its first layer.
    pub first_layer: usize,
    /// Layers in it.
    pub layers: usize,
    /// How many runs of the same kind come before it (a micro-batch's number).
    pub occurrence: usize,
}

/// One layer instance of a step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerItem {
    /// 0-based, in start order.
    pub index: usize,
    /// Its kind.
    pub kind: usize,
    /// 0-based position of its first kernel among the step's kernels in start-time order (in
    /// the first step of the modal layer count).
    pub first_kernel: usize,
    /// Its kernels.
    pub kernels: usize,
    /// Median over steps of its span, first kernel's start to last kernel's end (µs).
    pub median_us: f64,
    /// 95th percentile (nearest rank) of the same.
    pub p95_us: f64,
    /// Median over steps of its kernels' summed time (µs).
    pub kernel_us: f64,
    /// Its time by class (medians over steps), most time first.
    pub classes: Vec<ClassTime>,
    /// Opened by an anchor in no periodic run (sized by the longest run).
    pub single: bool,
}

/// A long send/receive outside the layers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Wait {
    /// Position of the kernel among the step's kernels.
    pub kernel: usize,
    /// Its type.
    pub kernel_type: String,
    /// Its duration (µs).
    pub us: f64,
}

/// Kernels outside the layers, between two layer boundaries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Region {
    /// Where it lies.
    pub role: RegionRole,
    /// Position of its first kernel among the step's kernels.
    pub first_kernel: usize,
    /// Its kernels.
    pub kernels: usize,
    /// The layer before it, when there is one.
    pub after_layer: Option<usize>,
    /// Its kernel time (µs).
    pub us: f64,
    /// Its time by class, most time first.
    pub classes: Vec<ClassTime>,
    /// Pipeline waits: send/receive kernels longer than the median layer.
    pub waits: Vec<Wait>,
}

/// Layer mode's result for one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Layers {
    /// Layer instances in a step.
    pub count: usize,
    /// How sure the result is.
    pub confidence: Confidence,
    /// The anchor (of the first step of the modal layer count).
    pub anchor: Option<Anchor>,
    /// The kinds of layer.
    pub kinds: Vec<Kind>,
    /// Runs of adjacent layers of one kind.
    pub runs: Vec<Run>,
    /// The layers.
    pub items: Vec<LayerItem>,
    /// Indices of the outlier layers.
    pub outliers: Vec<usize>,
    /// What lies outside the layers (first step of the modal layer count).
    pub regions: Vec<Region>,
    /// Steps the medians are over.
    pub steps: usize,
    /// Share of the table's kernel time inside layers (all steps).
    pub coverage: f64,
    /// The same without communication kernels (of the computing time, the share in layers).
    pub compute_coverage: f64,
    /// The table's kernel time (µs, all steps).
    pub kernel_us: f64,
    /// What the inference could not settle.
    pub notes: Vec<String>,
}

/// The layers of one step: `[start, end)` kernel ranges and whether each is single.
#[derive(Debug, Clone)]
struct StepLayers {
    anchor: Anchor,
    layers: Vec<(usize, usize, bool)>,
}

/// A multiset of kernel types.
type Multiset = Map<u32, u32>;

fn multiset(kernels: &[Kernel]) -> Multiset {
    let mut m = Multiset::default();
    for k in kernels {
        *m.entry(k.ty).or_default() += 1;
    }
    m
}

/// Weighted Jaccard similarity of two multisets.
fn jaccard(a: &Multiset, b: &Multiset) -> f64 {
    let (mut min, mut max) = (0u32, 0u32);
    for (t, &x) in a {
        let y = b.get(t).copied().unwrap_or(0);
        min += x.min(y);
        max += x.max(y);
    }
    for (t, &y) in b {
        if !a.contains_key(t) {
            max += y;
        }
    }
    if max == 0 {
        1.0
    } else {
        f64::from(min) / f64::from(max)
    }
}

/// The index of the group `m` joins (a new one when none is alike).
fn group(reps: &mut Vec<Multiset>, m: Multiset) -> usize {
    match reps.iter().position(|r| jaccard(r, &m) >= JACCARD) {
        Some(i) => i,
        None => {
            reps.push(m);
            reps.len() - 1
        }
    }
}

/// The anchor of a step: positions of the first class of [`ANCHORS`] with a dominant gap.
fn anchor(kernels: &[Kernel], types: &[String]) -> Option<(Anchor, Vec<usize>)> {
    for class in ANCHORS {
        let at: Vec<usize> = (0..kernels.len())
            .filter(|&i| kernels[i].class == class)
            .collect();
        if at.len() < 3 {
            continue;
        }
        let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
        for w in at.windows(2) {
            *counts.entry(w[1] - w[0]).or_default() += 1;
        }
        let gaps = at.len() - 1;
        let repeated: usize = counts.values().filter(|&&n| n >= 2).sum();
        let dominance = repeated as f64 / gaps as f64;
        if dominance < MIN_DOMINANCE {
            continue;
        }
        let period = counts
            .iter()
            .max_by_key(|(gap, n)| (**n, std::cmp::Reverse(**gap)))
            .map_or(0, |(gap, _)| *gap);
        if period < MIN_PERIOD {
            continue;
        }
        let mut seen: Vec<u32> = Vec::new();
        for &i in &at {
            if !seen.contains(&kernels[i].ty) {
                seen.push(kernels[i].ty);
            }
        }
        return Some((
            Anchor {
                class,
                types: seen.iter().map(|&t| types[t as usize].clone()).collect(),
                occurrences: at.len(),
                period,
                dominance,
            },
            at,
        ));
    }
    None
}

/// A periodic run of blocks: its anchors, back-shift and block length.
struct PeriodicRun {
    anchors: Vec<usize>,
    shift: usize,
    length: usize,
}

/// The layers of one step.
fn step_layers(kernels: &[Kernel], types: &[String]) -> Option<StepLayers> {
    let (anchor, at) = anchor(kernels, types)?;
    let n = kernels.len();
    // Blocks and their groups.
    let mut reps: Vec<Multiset> = Vec::new();
    let groups: Vec<usize> = at
        .windows(2)
        .map(|w| group(&mut reps, multiset(&kernels[w[0]..w[1]])))
        .collect();
    // Periodic runs: two blocks or more of one group in a row.
    let mut runs: Vec<PeriodicRun> = Vec::new();
    let mut covered = vec![false; at.len()];
    let mut floor = 0usize;
    let mut i = 0;
    while i < groups.len() {
        let mut j = i;
        while j + 1 < groups.len() && groups[j + 1] == groups[i] {
            j += 1;
        }
        if j > i {
            let anchors: Vec<usize> = at[i..=j + 1].to_vec();
            let min_len = (i..=j).map(|b| at[b + 1] - at[b]).min().unwrap_or(1);
            let mut shift = 0;
            while shift + 1 < min_len && anchors[0] > floor + shift {
                let m = shift + 1;
                let ty = kernels[anchors[0] - m].ty;
                if anchors.iter().all(|&a| kernels[a - m].ty == ty) {
                    shift = m;
                } else {
                    break;
                }
            }
            let length = at[j + 1] - at[j];
            let start = anchors[anchors.len() - 1] - shift;
            let end = (start + length).min(n);
            // The run's last layer: kept when its kernels match the run's blocks.
            let rep = &reps[groups[i]];
            let mut anchors = anchors;
            if jaccard(rep, &multiset(&kernels[start..end])) < JACCARD {
                anchors.pop();
                floor = anchors[anchors.len() - 1] - shift + length;
            } else {
                floor = end;
            }
            for (k, c) in covered.iter_mut().enumerate().take(j + 2).skip(i) {
                *c = anchors.contains(&at[k]);
            }
            runs.push(PeriodicRun {
                anchors,
                shift,
                length,
            });
            i = j + 1;
        } else {
            i += 1;
        }
    }
    // Layer starts: the runs' anchors moved back.
    let mut layers: Vec<(usize, usize, bool)> = Vec::new();
    for run in &runs {
        let last = run.anchors.len() - 1;
        for (k, &a) in run.anchors.iter().enumerate() {
            let start = a - run.shift;
            let end = if k < last {
                run.anchors[k + 1] - run.shift
            } else {
                (start + run.length).min(n)
            };
            layers.push((start, end, false));
        }
    }
    // Anchors in no run: a layer each, sized by the longest run.
    if let Some(reference) = runs.iter().max_by_key(|r| r.anchors.len()) {
        let model = reference.anchors[1.min(reference.anchors.len() - 1)];
        for (k, &a) in at.iter().enumerate() {
            if covered[k] {
                continue;
            }
            let floor = layers
                .iter()
                .filter(|l| l.0 <= a)
                .map(|l| l.1)
                .max()
                .unwrap_or(0);
            if floor > a {
                continue; // inside a layer already
            }
            let mut shift = 0;
            while shift < reference.shift
                && a > floor + shift
                && kernels[a - shift - 1].ty == kernels[model - shift - 1].ty
            {
                shift += 1;
            }
            let mut start = a - shift;
            // A head/sampling kernel before it ends the previous invocation of the model.
            if let Some(h) = (floor..start)
                .rev()
                .find(|&x| kernels[x].class == Class::EmbeddingHead)
            {
                start = h + 1;
            }
            let end = (a + reference.length - reference.shift).min(n);
            layers.push((start, end, true));
        }
    }
    layers.sort_unstable();
    for k in 1..layers.len() {
        if layers[k - 1].1 > layers[k].0 {
            layers[k - 1].1 = layers[k].0;
        }
    }
    layers.retain(|l| l.1 > l.0);
    (!layers.is_empty()).then_some(StepLayers { anchor, layers })
}

/// The kernels of each step, in start order (one pseudo-step when the table has no step ids).
fn steps(table: &KernelTable) -> Vec<(Option<u64>, Vec<Kernel>)> {
    let classes: Vec<Class> = table.types.iter().map(|t| class_of(t)).collect();
    let mut by_step: BTreeMap<Option<u64>, Vec<Kernel>> = BTreeMap::new();
    for (i, row) in table.rows.iter().enumerate() {
        by_step.entry(row.step).or_default().push(Kernel {
            row: i,
            ty: row.ty,
            class: classes[row.ty as usize],
            start: row.start_ns,
            end: row.start_ns + row.dur_ps.div_ceil(1000),
            dur_ps: row.dur_ps,
        });
    }
    by_step
        .into_iter()
        .map(|(step, mut kernels)| {
            kernels.sort_by_key(|k| k.start);
            (step, kernels)
        })
        .collect()
}

/// One step's kernels in start order and the layers inferred in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepCut {
    /// The `Step Id`, when the table has one.
    pub step: Option<u64>,
    /// The step's rows (indices into the table's rows) in start order (file order among equal
    /// starts).
    pub rows: Vec<usize>,
    /// The layers, as `[start, end)` positions in [`StepCut::rows`]; empty when the step has
    /// no anchor with a dominant period.
    pub layers: Vec<std::ops::Range<usize>>,
}

/// Every step of `table` cut into its layers (steps by step id), for callers that break
/// layers down further.
pub fn cut(table: &KernelTable) -> Vec<StepCut> {
    steps(table)
        .into_iter()
        .map(|(step, kernels)| {
            let layers = step_layers(&kernels, &table.types)
                .map(|l| l.layers.iter().map(|&(s, e, _)| s..e).collect())
                .unwrap_or_default();
            StepCut {
                step,
                rows: kernels.iter().map(|k| k.row).collect(),
                layers,
            }
        })
        .collect()
}

/// Time per class of `kernels`, most time first.
fn class_times(kernels: &[Kernel]) -> BTreeMap<Class, u64> {
    let mut out: BTreeMap<Class, u64> = BTreeMap::new();
    for k in kernels {
        *out.entry(k.class).or_default() += k.dur_ps;
    }
    out
}

fn sorted_times(times: impl IntoIterator<Item = (Class, f64)>) -> Vec<ClassTime> {
    let mut out: Vec<ClassTime> = times
        .into_iter()
        .map(|(class, us)| ClassTime { class, us })
        .collect();
    out.sort_by(|a, b| b.us.total_cmp(&a.us).then(a.class.cmp(&b.class)));
    out
}

fn direction(kernels: &[Kernel], types: &[String], anchor: Class) -> Direction {
    let grad = kernels
        .iter()
        .filter(|k| k.class == anchor)
        .any(|k| types[k.ty as usize].ends_with("Grad"));
    if grad {
        Direction::Backward
    } else {
        Direction::Forward
    }
}

/// Quartiles (linear interpolation) of sorted values.
fn quartiles(sorted: &[f64]) -> (f64, f64) {
    let at = |p: f64| {
        let x = p * (sorted.len() - 1) as f64;
        let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
        sorted[lo] + (sorted[hi] - sorted[lo]) * (x - lo as f64)
    };
    (at(0.25), at(0.75))
}

/// The outlier layers of one kind: slower than the IQR fence (or 1.5 × the median for a
/// few layers).
pub fn outliers(values: &[(usize, f64)]) -> Vec<usize> {
    if values.len() < 2 {
        return Vec::new();
    }
    let mut sorted: Vec<f64> = values.iter().map(|v| v.1).collect();
    sorted.sort_by(f64::total_cmp);
    let fence = if values.len() <= SMALL_N {
        let median = median_p95(&sorted).map_or(0.0, |m| m.0);
        SMALL_N_FACTOR * median
    } else {
        let (q1, q3) = quartiles(&sorted);
        q3 + IQR_K * (q3 - q1)
    };
    values.iter().filter(|v| v.1 > fence).map(|v| v.0).collect()
}

/// Whether a kernel type is a send/receive.
fn send_recv(ty: &str) -> bool {
    let t = ty.to_ascii_lowercase();
    t.contains("send") || t.contains("recv") || t.contains("receive")
}

/// `part` of `whole`, 0 for an empty whole.
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Infers the layers of a kernel table; `None` when no step has an anchor with a dominant
/// period.
pub fn infer(table: &KernelTable) -> Option<Layers> {
    let steps = steps(table);
    let total_ps: u64 = table.rows.iter().map(|r| r.dur_ps).sum();
    let found: Vec<(usize, StepLayers)> = steps
        .iter()
        .enumerate()
        .filter_map(|(i, (_, kernels))| step_layers(kernels, &table.types).map(|l| (i, l)))
        .collect();
    if found.is_empty() {
        return None;
    }
    let comm_ps: u64 = steps
        .iter()
        .flat_map(|(_, ks)| ks.iter())
        .filter(|k| k.class == Class::Communication)
        .map(|k| k.dur_ps)
        .sum();
    let (mut in_layers, mut comm_in_layers) = (0u64, 0u64);
    for (i, l) in &found {
        for &(s, e, _) in &l.layers {
            for k in &steps[*i].1[s..e] {
                in_layers += k.dur_ps;
                if k.class == Class::Communication {
                    comm_in_layers += k.dur_ps;
                }
            }
        }
    }
    let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
    for (_, l) in &found {
        *counts.entry(l.layers.len()).or_default() += 1;
    }
    let count = counts
        .iter()
        .max_by_key(|(len, n)| (**n, **len))
        .map_or(0, |(len, _)| *len);
    let used: Vec<&(usize, StepLayers)> = found
        .iter()
        .filter(|(_, l)| l.layers.len() == count)
        .collect();
    let mut notes = Vec::new();
    if used.len() < steps.len() {
        notes.push(format!(
            "{} of {} step(s) have {count} layers; the medians are over those",
            used.len(),
            steps.len()
        ));
    }
    let (first_step, first) = used[0];
    let kernels = &steps[*first_step].1;
    let anchor_class = first.anchor.class;
    // Kinds over the first step's layers.
    let mut reps: Vec<Multiset> = Vec::new();
    let kinds_of: Vec<usize> = first
        .layers
        .iter()
        .map(|&(s, e, _)| group(&mut reps, multiset(&kernels[s..e])))
        .collect();
    let mut kinds: Vec<Kind> = Vec::new();
    for (i, &(s, e, _)) in first.layers.iter().enumerate() {
        let id = kinds_of[i];
        if id == kinds.len() {
            let layer = &kernels[s..e];
            kinds.push(Kind {
                id,
                direction: direction(layer, &table.types, anchor_class),
                layers: 0,
                kernels: e - s,
                classes: sorted_times(
                    class_times(layer)
                        .into_iter()
                        .map(|(c, ps)| (c, ps_to_us(ps))),
                ),
            });
        }
        kinds[id].layers += 1;
    }
    // Runs of adjacent layers of one kind.
    let mut runs: Vec<Run> = Vec::new();
    for (i, &(s, _, _)) in first.layers.iter().enumerate() {
        let kind = kinds_of[i];
        let joins = i > 0 && kinds_of[i - 1] == kind && first.layers[i - 1].1 == s;
        match runs.last_mut() {
            Some(run) if joins => run.layers += 1,
            _ => {
                let occurrence = runs.iter().filter(|r| r.kind == kind).count();
                runs.push(Run {
                    kind,
                    direction: kinds[kind].direction,
                    first_layer: i,
                    layers: 1,
                    occurrence,
                });
            }
        }
    }
    // Per layer index over the steps.
    let mut items = Vec::with_capacity(count);
    for (i, &(s, e, single)) in first.layers.iter().enumerate() {
        let mut spans = Vec::new();
        let mut sums = Vec::new();
        let mut by_class: BTreeMap<Class, Vec<f64>> = BTreeMap::new();
        for (step, layers) in &used {
            let (s, e, _) = layers.layers[i];
            let ks = &steps[*step].1[s..e];
            let first_start = ks.first().map_or(0, |k| k.start);
            let last_end = ks.iter().map(|k| k.end).max().unwrap_or(first_start);
            spans.push((last_end - first_start) as f64 / 1000.0);
            sums.push(ps_to_us(ks.iter().map(|k| k.dur_ps).sum()));
            for (class, ps) in class_times(ks) {
                by_class.entry(class).or_default().push(ps_to_us(ps));
            }
        }
        let (median_us, p95_us) = median_p95(&spans).unwrap_or((0.0, 0.0));
        items.push(LayerItem {
            index: i,
            kind: kinds_of[i],
            first_kernel: s,
            kernels: e - s,
            median_us,
            p95_us,
            kernel_us: median_p95(&sums).map_or(0.0, |m| m.0),
            classes: sorted_times(
                by_class
                    .into_iter()
                    .map(|(c, v)| (c, median_p95(&v).map_or(0.0, |m| m.0))),
            ),
            single,
        });
    }
    let mut outlier_list: Vec<usize> = Vec::new();
    for kind in &kinds {
        let values: Vec<(usize, f64)> = items
            .iter()
            .filter(|it| it.kind == kind.id)
            .map(|it| (it.index, it.median_us))
            .collect();
        outlier_list.extend(outliers(&values));
    }
    outlier_list.sort_unstable();
    // Regions of the first step.
    let median_layer =
        median_p95(&items.iter().map(|it| it.median_us).collect::<Vec<_>>()).map_or(0.0, |m| m.0);
    let mut regions = Vec::new();
    let mut at = 0;
    let mut bounds: Vec<(usize, usize)> = first.layers.iter().map(|l| (l.0, l.1)).collect();
    bounds.push((kernels.len(), kernels.len()));
    for (i, &(s, e)) in bounds.iter().enumerate() {
        if s > at {
            let ks = &kernels[at..s];
            let role = if i == 0 {
                RegionRole::Before
            } else if i == bounds.len() - 1 {
                RegionRole::After
            } else {
                RegionRole::Between
            };
            regions.push(Region {
                role,
                first_kernel: at,
                kernels: s - at,
                after_layer: i.checked_sub(1),
                us: ps_to_us(ks.iter().map(|k| k.dur_ps).sum()),
                classes: sorted_times(class_times(ks).into_iter().map(|(c, ps)| (c, ps_to_us(ps)))),
                waits: ks
                    .iter()
                    .enumerate()
                    .filter(|(_, k)| {
                        k.class == Class::Communication
                            && send_recv(&table.types[k.ty as usize])
                            && ps_to_us(k.dur_ps) > median_layer
                    })
                    .map(|(j, k)| Wait {
                        kernel: at + j,
                        kernel_type: table.types[k.ty as usize].clone(),
                        us: ps_to_us(k.dur_ps),
                    })
                    .collect(),
            });
        }
        at = at.max(e);
    }
    let singles = items.iter().filter(|it| it.single).count();
    if singles > 0 {
        notes.push(format!(
            "{singles} layer(s) opened by an anchor in no periodic run: sized by the longest run"
        ));
    }
    let uniform = kinds.iter().all(|k| {
        items
            .iter()
            .filter(|it| it.kind == k.id)
            .all(|it| it.kernels == k.kernels)
    });
    if !uniform {
        notes.push("layers of one kind differ in kernel count".to_owned());
    }
    let confidence = if first.anchor.dominance >= HIGH_DOMINANCE && singles == 0 && uniform {
        Confidence::High
    } else {
        Confidence::Low
    };
    Some(Layers {
        count,
        confidence,
        anchor: Some(first.anchor.clone()),
        kinds,
        runs,
        items,
        outliers: outlier_list,
        regions,
        steps: used.len(),
        coverage: share(in_layers, total_ps),
        compute_coverage: share(in_layers - comm_in_layers, total_ps - comm_ps),
        kernel_us: ps_to_us(total_ps),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jaccard_of_multisets() {
        let a: Multiset = [(1, 2), (2, 1)].into_iter().collect();
        let b: Multiset = [(1, 1), (2, 1), (3, 1)].into_iter().collect();
        assert!((jaccard(&a, &b) - 2.0 / 4.0).abs() < 1e-12);
        assert_eq!(jaccard(&a, &a), 1.0);
    }

    #[test]
    fn outliers_by_iqr_and_by_median_for_few() {
        let values: Vec<(usize, f64)> = (0..10).map(|i| (i, 10.0 + (i % 3) as f64)).collect();
        assert!(outliers(&values).is_empty());
        let mut slow = values;
        slow[4].1 = 30.0;
        assert_eq!(outliers(&slow), vec![4]);
        assert_eq!(outliers(&[(0, 10.0), (1, 10.0), (2, 16.0)]), vec![2]);
        assert!(outliers(&[(0, 10.0), (1, 10.0), (2, 14.0)]).is_empty());
    }
}
