//! What the rules need from `kernel_details.csv`, in one streaming pass: per kernel name its
//! time, core, dynamic-shape rows and pipe ratios over all seven pipes; per operator type its
//! distinct input shapes (capped); the largest gaps on the device timeline; per communication
//! kernel name the time no computing kernel overlapped.
//!
//! Memory is bounded by the number of distinct names and types (capped as summary caps them,
//! [`npuprof_summary::kernels::MAX_GROUPS`]) and [`MAX_SHAPES`] shapes per type, not by rows.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;

use npuprof_summary::columns::{self, Header, SkippedRow};
use npuprof_summary::kernels::{MAX_GROUPS, OTHER, WordHash};
use npuprof_summary::pipe::{Bound, PIPES, Pipe, PipeColumns, PipeSums, RatioValues, db_row};
use npuprof_summary::step_ids::{StepField, StepIds};
use npuprof_summary::{SummaryError, db_export};
use serde::Serialize;

use crate::thresholds::{EXPERT_KERNELS, GAP_US, GAPS_KEPT, MAX_SHAPES};

/// One kernel name's sums.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// The exact `Name` (or `(other)` past the cap).
    pub name: String,
    /// `Type` of its first row.
    pub kind: String,
    /// `Accelerator Core` of its first row.
    pub core: String,
    /// Rows.
    pub count: u64,
    /// Summed `Duration(us)`.
    pub total_us: f64,
    /// Rows whose `OP State` is `dynamic`.
    pub dynamic: u64,
    /// Time-weighted pipe ratios (in [`Pipe::ALL`] order), over its rows with metrics; `None`
    /// without.
    pub ratios: Option<[f64; PIPES]>,
    /// Time-weighted `memory_bound` (the profiler's own bound column), over its rows with a
    /// number there; `None` without.
    pub memory_bound: Option<f64>,
    /// What bounds it: summary's verdict ([`Bound::of`]), from the same sums.
    pub bound: Option<Bound>,
    /// For a MoE experts' kernel ([`EXPERT_KERNELS`]) with `Input Shapes` recorded: the first
    /// dimension of its first input, summed over its rows (the token rows routed to this
    /// rank's experts, once per call); `None` for other kernels and without shapes.
    pub input_rows: Option<u64>,
    /// A communication kernel's (core `HCCL`) time that no computing kernel overlapped (µs):
    /// its share of step_trace_time's `Communication(Not Overlapped)`. `None` for computing
    /// kernels and when the rows are not in start order.
    pub exposed_us: Option<f64>,
}

/// The `Accelerator Core` of communication kernels.
pub const HCCL: &str = "HCCL";

/// One operator type's distinct input shapes.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeShapes {
    /// The `Type`.
    pub kind: String,
    /// Distinct `Input Shapes` seen (stops at [`MAX_SHAPES`]).
    pub shapes: usize,
    /// Summed `Duration(us)`.
    pub total_us: f64,
    /// Rows.
    pub count: u64,
}

/// A gap on the device timeline: no kernel of any stream ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gap {
    /// The `Step Id` it is in, when known.
    pub step: Option<u64>,
    /// Where it starts (the `Start Time(us)` clock, to find it in trace_view.json).
    pub start_us: f64,
    /// Where it starts, from the step's first kernel start (µs).
    pub offset_us: f64,
    /// How long it is.
    pub gap_us: f64,
    /// The kernel that ended last before it.
    pub after: String,
    /// The kernel that starts it off again.
    pub before: String,
    /// What the host ran meanwhile (from trace_view.json; empty when not read).
    pub host: Vec<crate::host::HostEvent>,
}

/// Everything the pass produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KernelProfile {
    /// Data rows.
    pub rows: u64,
    /// Summed `Duration(us)`.
    pub total_us: f64,
    /// Distinct `Step Id`s seen, as [`StepIds`] counts them (0 without the column).
    pub steps: usize,
    /// Every name, longest total first, then name.
    pub kernels: Vec<Kernel>,
    /// Every type with its shapes, longest total first, then type.
    pub types: Vec<TypeShapes>,
    /// The file has an `OP State` column.
    pub has_state: bool,
    /// The file has an `Input Shapes` column.
    pub has_shapes: bool,
    /// The file has pipe ratio columns.
    pub has_metrics: bool,
    /// The largest gaps, longest first; empty when the rows are not in start order.
    pub gaps: Vec<Gap>,
    /// Gaps of at least [`GAP_US`]: how many and their summed time.
    pub gap_count: u64,
    /// See [`KernelProfile::gap_count`].
    pub gap_total_us: f64,
    /// Whether the rows are in start order within each step (else no gap is reported).
    pub ordered: bool,
    /// Rows left out for their number of fields, in file order.
    pub skipped: Vec<SkippedRow>,
}

struct Columns {
    picks: Vec<usize>,
    step: Option<usize>,
    name: usize,
    kind: Option<usize>,
    core: Option<usize>,
    state: Option<usize>,
    start: Option<usize>,
    duration: usize,
    shapes: Option<usize>,
    memory_bound: Option<usize>,
    units: Option<PipeColumns>,
}

impl Columns {
    fn new(header: &Header, path: &Path) -> Result<Self, SummaryError> {
        let name = header.require(path, &["Name", "Op Name"])?;
        let duration = header.require(path, &["Duration(us)", "Task Duration(us)"])?;
        let step = header.find(&["Step Id"]);
        let kind = header.find(&["Type", "OP Type", "Task Type"]);
        let core = header.find(&["Accelerator Core", "Core Type"]);
        let state = header.find(&["OP State"]);
        let start = header.find(&["Start Time(us)", "Task Start Time(us)"]);
        let shapes = header.find(&["Input Shapes"]);
        let memory_bound = header.find(&["memory_bound"]);
        let units = PipeColumns::new(header);
        let mut picks: Vec<usize> = [
            Some(name),
            Some(duration),
            step,
            kind,
            core,
            state,
            start,
            shapes,
            memory_bound,
        ]
        .into_iter()
        .flatten()
        .chain(units.iter().flat_map(PipeColumns::indices))
        .collect();
        picks.sort_unstable();
        picks.dedup();
        let slot = |column: usize| picks.binary_search(&column).unwrap_or_default();
        Ok(Self {
            step: step.map(slot),
            name: slot(name),
            kind: kind.map(slot),
            core: core.map(slot),
            state: state.map(slot),
            start: start.map(slot),
            duration: slot(duration),
            shapes: shapes.map(slot),
            memory_bound: memory_bound.map(slot),
            units: units.map(|u| u.remap(slot)),
            picks,
        })
    }
}

#[derive(Default)]
struct NameAcc {
    kind: String,
    core: String,
    count: u64,
    total_us: f64,
    dynamic: u64,
    pipe: PipeSums,
    kind_index: usize,
    comm: bool,
    exposed_us: f64,
    /// A MoE experts' kernel ([`EXPERT_KERNELS`]): its rows' input rows are summed.
    expert: bool,
    input_rows: Option<u64>,
}

#[derive(Default)]
struct KindAcc {
    shapes: Vec<u64>,
    total_us: f64,
    count: u64,
}

/// Whether a kernel of `name` and `Type` `kind` is a MoE experts' GEMM ([`EXPERT_KERNELS`], by
/// prefix of either).
pub(crate) fn is_expert(name: &[u8], kind: &str) -> bool {
    EXPERT_KERNELS
        .iter()
        .any(|p| name.starts_with(p.as_bytes()) || kind.starts_with(p))
}

/// The first dimension of the first input of an `Input Shapes` field (`"8192,7168;16,7168,2048"`
/// gives 8192); `None` when it is not a number (an empty or scalar input).
fn first_dimension(shapes: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(shapes).ok()?;
    let first = text.trim().trim_matches('"').split(';').next()?;
    first.split(',').next()?.trim().parse().ok()
}

/// Keys (the bytes of a name or type) to their index, hashed a word at a time.
type Index = HashMap<Box<[u8]>, usize, BuildHasherDefault<WordHash>>;

/// A key's index in `index`, inserting it (or [`OTHER`] past the cap) on first sight.
fn position<T: Default>(index: &mut Index, accs: &mut Vec<(String, T)>, key: &[u8]) -> usize {
    if let Some(&i) = index.get(key) {
        return i;
    }
    let key = if accs.len() < MAX_GROUPS {
        String::from_utf8_lossy(key).into_owned()
    } else {
        OTHER.to_owned()
    };
    let next = accs.len();
    let i = *index.entry(key.as_bytes().into()).or_insert(next);
    if i == next {
        accs.push((key, T::default()));
    }
    i
}

/// A field's hash, a word at a time: distinct shapes are told apart by it.
fn fingerprint(bytes: &[u8]) -> u64 {
    let mut hash = WordHash::default();
    hash.write(bytes);
    hash.write_usize(bytes.len());
    hash.finish()
}

/// One kernel row, from `kernel_details.csv` or a db export.
struct Row<'a> {
    name: &'a [u8],
    /// The raw `Type` field: read as text ([`columns::text`]) at the name's first sight only.
    kind: &'a [u8],
    /// The raw `Accelerator Core` field, read as `kind` is.
    core: &'a [u8],
    duration: f64,
    dynamic: bool,
    ratios: Option<[f64; PIPES]>,
    memory_bound: Option<f64>,
    shape: Option<&'a [u8]>,
    step: Option<u64>,
    start: Option<f64>,
}

/// The sums of one pass over a file's rows.
struct Pass {
    names_index: Index,
    names: Vec<(String, NameAcc)>,
    kinds_index: Index,
    kinds: Vec<(String, KindAcc)>,
    profile: KernelProfile,
    steps: StepIds,
    /// The timeline: the current step, its first start, the last start, the latest end so far
    /// and the name index ending it.
    timeline: Option<(Option<u64>, f64, f64, f64, usize)>,
    overlap: Overlap,
}

/// A communication kernel still running at the current row's start.
struct OpenComm {
    name: usize,
    start: f64,
    end: f64,
    duration: f64,
    /// Its time overlapped by the computing intervals already closed.
    covered: f64,
}

/// The computing kernels' union within a step, one merged interval at a time (rows come in
/// start order), against the communication kernels that run meanwhile: memory bounded by the
/// communication kernels running at once.
#[derive(Default)]
struct Overlap {
    step: Option<Option<u64>>,
    /// The current merged computing interval.
    compute: Option<(f64, f64)>,
    open: Vec<OpenComm>,
}

/// How much of `comm` the interval `(start, end)` covers.
fn covered_by((start, end): (f64, f64), comm: &OpenComm) -> f64 {
    (end.min(comm.end) - start.max(comm.start)).max(0.0)
}

impl Overlap {
    /// Adds a kernel of name `name` running `start..end` in `step`.
    fn add(
        &mut self,
        names: &mut [(String, NameAcc)],
        (name, step): (usize, Option<u64>),
        (start, duration): (f64, f64),
    ) {
        if self.step != Some(step) {
            self.close(names);
            self.step = Some(step);
        }
        let compute = self.compute;
        self.open.retain(|c| {
            let running = c.end > start;
            if !running {
                retire(names, c, compute);
            }
            running
        });
        let end = start + duration;
        if names[name].1.comm {
            self.open.push(OpenComm {
                name,
                start,
                end,
                duration,
                covered: 0.0,
            });
            return;
        }
        self.compute = Some(match self.compute {
            Some((first, last)) if start <= last => (first, last.max(end)),
            previous => {
                if let Some(previous) = previous {
                    for c in &mut self.open {
                        c.covered += covered_by(previous, c);
                    }
                }
                (start, end)
            }
        });
    }

    /// Retires every running communication kernel (at a step's end or the file's).
    fn close(&mut self, names: &mut [(String, NameAcc)]) {
        let compute = self.compute.take();
        for c in self.open.drain(..) {
            retire(names, &c, compute);
        }
    }
}

/// Adds what no computing kernel covered of `comm` to its name.
fn retire(names: &mut [(String, NameAcc)], comm: &OpenComm, compute: Option<(f64, f64)>) {
    let covered = comm.covered + compute.map_or(0.0, |iv| covered_by(iv, comm));
    names[comm.name].1.exposed_us += (comm.duration - covered).max(0.0);
}

impl Pass {
    fn new(profile: KernelProfile) -> Self {
        Self {
            names_index: Index::default(),
            names: Vec::new(),
            kinds_index: Index::default(),
            kinds: Vec::new(),
            profile,
            steps: StepIds::default(),
            timeline: None,
            overlap: Overlap::default(),
        }
    }

    fn add(&mut self, row: &Row<'_>) {
        let Self {
            names_index,
            names,
            kinds_index,
            kinds,
            profile,
            steps,
            timeline,
            overlap,
        } = self;
        let duration = row.duration;
        let n = position(names_index, names, row.name);
        let acc = &mut names[n].1;
        if acc.count == 0 {
            let kind = columns::text(row.kind);
            acc.kind = kind.to_owned();
            acc.core = columns::text(row.core).to_owned();
            acc.comm = acc.core == HCCL;
            acc.kind_index = position(kinds_index, kinds, kind.as_bytes());
            acc.expert = is_expert(row.name, kind);
        }
        if acc.expert
            && let Some(rows) = row.shape.and_then(first_dimension)
        {
            *acc.input_rows.get_or_insert(0) += rows;
        }
        acc.count += 1;
        acc.total_us += duration;
        if row.dynamic {
            acc.dynamic += 1;
        }
        if let Some(ratios) = row.ratios {
            acc.pipe.add(duration, ratios);
        }
        if let Some(bound) = row.memory_bound {
            acc.pipe.add_memory_bound(duration, bound);
        }
        let kind = &mut kinds[acc.kind_index].1;
        kind.total_us += duration;
        kind.count += 1;
        if let Some(shape) = row.shape
            && kind.shapes.len() < MAX_SHAPES
        {
            let shape = fingerprint(shape.trim_ascii());
            if !kind.shapes.contains(&shape) {
                kind.shapes.push(shape);
            }
        }
        profile.rows += 1;
        profile.total_us += duration;
        let step = row.step;
        steps.see(step);
        if profile.ordered
            && let Some(start) = row.start
        {
            *timeline = Some(match *timeline {
                Some((s, first, last_start, end, ended_by)) if s == step => {
                    if start < last_start {
                        profile.ordered = false;
                    }
                    let gap = start - end;
                    if gap >= GAP_US {
                        profile.gap_count += 1;
                        profile.gap_total_us += gap;
                        keep_gap(&mut profile.gaps, gap, || Gap {
                            step,
                            start_us: end,
                            offset_us: end - first,
                            gap_us: gap,
                            after: names[ended_by].0.clone(),
                            before: names[n].0.clone(),
                            host: Vec::new(),
                        });
                    }
                    let finish = start + duration;
                    if finish > end {
                        (step, first, start, finish, n)
                    } else {
                        (step, first, start, end, ended_by)
                    }
                }
                _ => (step, start, start, start + duration, n),
            });
            overlap.add(names, (n, step), (start, duration));
        }
    }

    fn finish(self) -> KernelProfile {
        let Self {
            mut names,
            kinds,
            mut profile,
            steps,
            mut overlap,
            ..
        } = self;
        overlap.close(&mut names);
        if !profile.ordered {
            profile.gaps.clear();
            profile.gap_count = 0;
            profile.gap_total_us = 0.0;
        }
        profile.steps = steps.count();
        profile.kernels = names
            .into_iter()
            .map(|(name, acc)| Kernel {
                name,
                kind: acc.kind,
                core: acc.core,
                count: acc.count,
                total_us: acc.total_us,
                dynamic: acc.dynamic,
                ratios: acc.pipe.ratios().map(|r| r.to_array()),
                memory_bound: acc.pipe.memory_bound(),
                bound: acc.pipe.bound(),
                exposed_us: (acc.comm && profile.ordered).then_some(acc.exposed_us),
                input_rows: acc.input_rows,
            })
            .collect();
        profile
            .kernels
            .sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then(a.name.cmp(&b.name)));
        profile.types = kinds
            .into_iter()
            .map(|(kind, acc)| TypeShapes {
                kind,
                shapes: acc.shapes.len(),
                total_us: acc.total_us,
                count: acc.count,
            })
            .collect();
        profile
            .types
            .sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then(a.kind.cmp(&b.kind)));
        profile
    }
}

/// Reads `kernel_details.csv` in one pass.
pub fn read_kernels(path: &Path) -> Result<KernelProfile, SummaryError> {
    let mut reader = columns::open(path, 0)?;
    let header = columns::read_header(&mut reader, path)?;
    let cols = Columns::new(&header, path)?;
    let seen = &mut RatioValues::default();
    let mut step_field = StepField::default();
    let mut pass = Pass::new(KernelProfile {
        has_state: cols.state.is_some(),
        has_shapes: cols.shapes.is_some(),
        has_metrics: cols.units.is_some(),
        ordered: cols.start.is_some(),
        ..KernelProfile::default()
    });
    while let Some(record) = columns::next_columns(&mut reader, path, &cols.picks)? {
        if record.len() == 1 && columns::text(record.get(0).unwrap_or_default()).is_empty() {
            continue; // a blank line
        }
        if !header.keep(path, &record, &mut pass.profile.skipped)? {
            continue;
        }
        let field = |i: usize| record.get(i).unwrap_or_default();
        let number = |i: usize| {
            columns::number(field(i))
                .map_err(|()| columns::bad_number(path, &record, &header, cols.picks[i], field(i)))
        };
        let duration = number(cols.duration)?.ok_or_else(|| {
            columns::bad_number(
                path,
                &record,
                &header,
                cols.picks[cols.duration],
                field(cols.duration),
            )
        })?;
        let step = cols
            .step
            .map(field)
            .and_then(|bytes| step_field.read(bytes));
        let name = columns::name_key(field(cols.name));
        pass.add(&Row {
            name: &name,
            kind: cols.kind.map_or(b"", field),
            core: cols.core.map_or(b"", field),
            duration,
            dynamic: cols
                .state
                .is_some_and(|i| field(i).trim_ascii().eq_ignore_ascii_case(b"dynamic")),
            ratios: cols
                .units
                .as_ref()
                .and_then(|u| u.row(seen, |i| record.get_word(i))),
            memory_bound: cols
                .memory_bound
                .and_then(|i| npuprof_scan::decimal::parse_f64(field(i).trim_ascii())),
            shape: cols.shapes.map(field),
            step,
            start: cols
                .start
                .and_then(|i| npuprof_scan::decimal::parse_f64(field(i).trim_ascii())),
        });
    }
    Ok(pass.finish())
}

/// Reads the kernels of a db export's profiler database in one pass, as [`read_kernels`]
/// reads `kernel_details.csv` (the db records no `OP State`: dynamic shape is judged by the
/// input shapes alone).
pub fn read_db_kernels(path: &Path) -> Result<KernelProfile, SummaryError> {
    let spellings: Vec<&[&str]> = Pipe::ALL.iter().map(|u| u.spellings()).collect();
    let mut pass = Pass::new(KernelProfile {
        has_state: false,
        has_shapes: true,
        ordered: true,
        ..KernelProfile::default()
    });
    let pmu = db_export::each_kernel(path, &spellings, |k| {
        // As a CSV row: a pipe's largest column, and rows of zeros have no metrics.
        let ratios = db_row(k.metrics);
        let name = columns::name_key(k.name);
        pass.add(&Row {
            name: &name,
            kind: k.kind,
            core: k.core,
            duration: k.duration_us,
            dynamic: false,
            ratios,
            memory_bound: None,
            shape: Some(k.input_shapes),
            step: k.step,
            start: Some(k.start_us),
        });
    })?;
    pass.profile.has_metrics = pmu;
    Ok(pass.finish())
}

/// Keeps the [`GAPS_KEPT`] longest gaps, longest first (earlier first among equals).
fn keep_gap(gaps: &mut Vec<Gap>, gap: f64, make: impl FnOnce() -> Gap) {
    if gaps.len() == GAPS_KEPT && gaps.last().is_some_and(|g| g.gap_us >= gap) {
        return;
    }
    let at = gaps.partition_point(|g| g.gap_us >= gap);
    gaps.insert(at, make());
    gaps.truncate(GAPS_KEPT);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_dimension_of_the_first_input_is_read() {
        assert_eq!(
            first_dimension(br#""8192,7168;16,7168,2048;16""#),
            Some(8192)
        );
        assert_eq!(first_dimension(b" 32,4096 "), Some(32));
        assert_eq!(first_dimension(br#""""#), None);
        assert_eq!(first_dimension(br#"";4096""#), None);
    }

    #[test]
    fn a_collective_is_exposed_where_no_computing_kernel_runs() {
        // Step 1: the all-reduce runs 100..200; computing 50..120 and 110..130 (one merged
        // interval, covering 100..130), then 150..160, and 190..300 (ending after the
        // all-reduce): 100 - 30 - 10 - 10 = 50 µs exposed. Step 2: the same name alone, 10 µs,
        // all exposed (its step starts with no computing interval open).
        let csv = "Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us)\n\
                   1,mm,MatMul,AI_CORE,50,70\n\
                   1,ar,hcom_allReduce_,HCCL,100,100\n\
                   1,add,Add,AI_VECTOR_CORE,110,20\n\
                   1,mul,Mul,AI_VECTOR_CORE,150,10\n\
                   1,mm,MatMul,AI_CORE,190,110\n\
                   2,ar,hcom_allReduce_,HCCL,1000,10\n";
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("kernel_details.csv");
        std::fs::write(&path, csv).unwrap_or_else(|e| panic!("{e}"));
        let profile = read_kernels(&path).unwrap_or_else(|e| panic!("{e}"));
        let exposed = |name: &str| {
            profile
                .kernels
                .iter()
                .find(|k| k.name == name)
                .and_then(|k| k.exposed_us)
        };
        assert_eq!(exposed("ar"), Some(60.0));
        assert_eq!(exposed("mm"), None);
    }

    #[test]
    fn steps_past_the_kept_set_are_counted_by_their_runs_of_rows() {
        let steps = StepIds::MAX + 904;
        let mut csv =
            String::from("Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us)\n");
        for step in 0..steps {
            for k in 0..2 {
                csv.push_str(&format!(
                    "{step},mm,MatMul,AI_CORE,{},1\n",
                    step * 10 + k * 2
                ));
            }
        }
        // A step seen again after others: counted once while the set holds it.
        csv.push_str("0,mm,MatMul,AI_CORE,999999,1\n");
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("kernel_details.csv");
        std::fs::write(&path, csv).unwrap_or_else(|e| panic!("{e}"));
        let profile = read_kernels(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(profile.steps, steps);
    }
}
