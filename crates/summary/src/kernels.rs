//! `kernel_details.csv` in one streaming pass: device time grouped by exact kernel `Name` and
//! by `Type`, with the pipe metrics where they exist. A file of more than 64 MiB is read in
//! segments on all cores, with the result of a single pass (see [`aggregate`]).
//!
//! Memory is bounded by the number of distinct names and types, not by the number of rows, and
//! that number is capped: past [`MAX_GROUPS`] distinct keys, further new keys are counted in
//! one `(other)` group and the result says so.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::ControlFlow;
use std::path::Path;

use npuprof_scan::csv_rows::CsvRows;
use npuprof_scan::file_ranges::{in_file_order, line_starts, segment_size};
use serde::Serialize;

use crate::columns::{self, Header, SkippedRow};
use crate::error::SummaryError;
use crate::pipe::{Bound, PIPES, PipeColumns, PipeRatios, PipeShares, PipeSums, RatioValues};
use crate::step_ids::{StepField, StepIds};
use crate::timeline::{Intervals, is_communication};

/// Distinct names (and, separately, types) kept per run before the rest is grouped as `(other)`.
pub const MAX_GROUPS: usize = 100_000;

/// The group that collects keys past [`MAX_GROUPS`].
pub const OTHER: &str = "(other)";

/// Kernels sharing one exact `Name`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelGroup {
    /// The kernel name, exactly as written.
    pub name: String,
    /// `Type` of its first row (`N/A` in minimal headers; empty without the column).
    #[serde(rename = "type")]
    pub kind: String,
    /// `Accelerator Core` of its first row (`AI_CORE`, `AI_VECTOR_CORE`, `MIX_AIV`, `HCCL`, …).
    pub core: String,
    /// Rows.
    pub count: u64,
    /// Summed `Duration(us)`.
    pub total_us: f64,
    /// `total_us / count`.
    pub mean_us: f64,
    /// `total_us` / the run's summed kernel time.
    pub share: f64,
    /// Time-weighted pipe ratios, when the rows carry pipe metrics.
    pub pipe: Option<PipeRatios>,
    /// What bounds it ([`Bound::of`]: the profiler's `memory_bound` column where it marks the
    /// kernel, else its busiest pipe at 80 % or more, else `none`), when known.
    pub bound: Option<Bound>,
}

/// Kernels sharing one `Type` (so per-call names such as `hcom_allReduce__…` add up).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeGroup {
    /// The `Type`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `Accelerator Core` of its first row.
    pub core: String,
    /// Rows.
    pub count: u64,
    /// Summed `Duration(us)`.
    pub total_us: f64,
    /// `total_us / count`.
    pub mean_us: f64,
    /// `total_us` / the run's summed kernel time.
    pub share: f64,
}

/// Kernels sharing one exact `Name` and one `Input Shapes` text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShapeGroup {
    /// The kernel name, exactly as written.
    pub name: String,
    /// `Input Shapes`, as written (outer quotes dropped; empty for `N/A`).
    pub shapes: String,
    /// `Type` of its first row.
    #[serde(rename = "type")]
    pub kind: String,
    /// Rows.
    pub count: u64,
    /// Summed `Duration(us)`.
    pub total_us: f64,
    /// `total_us / count`.
    pub mean_us: f64,
    /// `total_us` / the run's summed kernel time.
    pub share: f64,
}

/// Between a name and its shapes in a shape group's key (no name or shape holds it).
const SHAPE_SEPARATOR: u8 = 0x1f;

/// Totals of one `kernel_details.csv`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelTotals {
    /// Data rows.
    pub rows: u64,
    /// Summed `Duration(us)` of every row.
    pub total_us: f64,
    /// Distinct names (including `(other)` when the cap was reached).
    pub distinct_names: usize,
    /// Distinct types.
    pub distinct_types: usize,
    /// Distinct `Step Id`s ([`StepIds`]; a db export's `STEP_TIME` steps); 0 without them.
    pub steps: usize,
    /// Whether more than [`MAX_GROUPS`] distinct names or types were seen.
    pub capped: bool,
}

/// Everything the pass produced.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTable {
    /// Totals.
    pub totals: KernelTotals,
    /// Every name group, by total time (longest first), then name.
    pub by_name: Vec<KernelGroup>,
    /// Every type group, by total time (longest first), then type.
    pub by_type: Vec<TypeGroup>,
    /// Every (name, input shapes) group, by total time, then name and shapes; empty without an
    /// `Input Shapes` column.
    pub by_shape: Vec<ShapeGroup>,
    /// The rows of the step [`aggregate_with`] was asked to keep, for its timeline.
    pub(crate) intervals: Intervals,
    /// Pipe shares of all kernels with metrics; `None` without PipeUtilization columns.
    pub pipe: Option<PipeShares>,
    /// Rows left out for their number of fields, in file order.
    pub skipped: Vec<SkippedRow>,
}

/// The columns of `kernel_details.csv` read, as positions among the fields picked from each row.
struct KernelColumns {
    /// The columns read, increasing (the fields picked from each row).
    picks: Vec<usize>,
    /// Column 0 (a blank line reads as one empty field).
    first: usize,
    name: usize,
    duration: usize,
    kind: Option<usize>,
    core: Option<usize>,
    step: Option<usize>,
    start: Option<usize>,
    shapes: Option<usize>,
    pipe: Option<PipeColumns>,
    /// The profiler's own `memory_bound` column (chips without the AIC/AIV split).
    memory_bound: Option<usize>,
    /// The step whose rows are kept for its timeline.
    timeline: Option<u64>,
}

impl KernelColumns {
    fn new(header: &Header, path: &Path) -> Result<Self, SummaryError> {
        let name = header.require(path, &["Name", "Op Name"])?;
        let duration = header.require(path, &["Duration(us)", "Task Duration(us)"])?;
        let kind = header.find(&["Type", "OP Type", "Task Type"]);
        let core = header.find(&["Accelerator Core", "Core Type"]);
        let step = header.find(&["Step Id"]);
        let start = header.find(&["Start Time(us)", "Task Start Time(us)"]);
        let shapes = header.find(&["Input Shapes"]);
        let pipe = PipeColumns::new(header);
        let memory_bound = header.find(&["memory_bound"]);
        let mut picks: Vec<usize> = [
            Some(0),
            Some(name),
            Some(duration),
            kind,
            core,
            step,
            start,
            shapes,
            memory_bound,
        ]
        .into_iter()
        .flatten()
        .chain(pipe.iter().flat_map(PipeColumns::indices))
        .collect();
        picks.sort_unstable();
        picks.dedup();
        let slot = |column: usize| picks.binary_search(&column).unwrap_or_default();
        Ok(Self {
            first: slot(0),
            name: slot(name),
            duration: slot(duration),
            kind: kind.map(slot),
            core: core.map(slot),
            step: step.map(slot),
            start: start.map(slot),
            shapes: shapes.map(slot),
            pipe: pipe.map(|p| p.remap(slot)),
            memory_bound: memory_bound.map(slot),
            timeline: None,
            picks,
        })
    }
}

#[derive(Default)]
struct Acc {
    kind: String,
    core: String,
    count: u64,
    total_us: f64,
    pipe: PipeSums,
    /// For a name: the index of the type group of `kind`, once looked up (most rows of a name
    /// have its first row's type, so their type needs no hash lookup).
    kind_group: Option<usize>,
    /// For a name: the `Input Shapes` of its last row and the index of their shape group (most
    /// rows of a name repeat its last shapes, so they need no key built nor hashed).
    shape_group: Option<(Box<[u8]>, usize)>,
}

/// A word-at-a-time multiplicative hash (FxHash's step) for the short kernel names: no
/// untrusted-input DoS concern, the map is capped and local to one pass.
#[derive(Clone, Copy, Default)]
pub struct WordHash(u64);

impl WordHash {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for WordHash {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.add(u64::from_le_bytes(
                <[u8; 8]>::try_from(word).unwrap_or_default(),
            ));
        }
        for &byte in words.remainder() {
            self.add(u64::from(byte));
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Sums keyed by a string, with the cap: an index (one hash lookup per row) into the sums.
#[derive(Default)]
struct Groups {
    /// Keyed by the bytes of the key (valid UTF-8), so rows are looked up without a `String`.
    index: HashMap<Box<[u8]>, usize, BuildHasherDefault<WordHash>>,
    accs: Vec<(Box<str>, Acc)>,
    capped: bool,
}

impl Groups {
    /// The accumulator of `key`, created on first sight with the text of the `kind` and `core`
    /// fields.
    fn entry<K, C>(&mut self, key: &K, kind: &C, core: &C) -> &mut Acc
    where
        K: AsRef<[u8]> + ?Sized,
        C: AsRef<[u8]> + ?Sized,
    {
        let i = self.position(key.as_ref(), kind.as_ref(), core.as_ref());
        &mut self.accs[i].1
    }

    /// The index of the accumulator of `key` (see [`Groups::entry`]).
    #[inline]
    fn position(&mut self, key: &[u8], kind: &[u8], core: &[u8]) -> usize {
        match self.index.get(key) {
            Some(&i) => i,
            None => self.insert(key, kind, core),
        }
    }

    #[cold]
    fn insert(&mut self, key: &[u8], kind: &[u8], core: &[u8]) -> usize {
        let key = String::from_utf8_lossy(key);
        let key = if self.accs.len() < MAX_GROUPS {
            &*key
        } else {
            self.capped = true;
            OTHER
        };
        let next = self.accs.len();
        let i = *self.index.entry(key.as_bytes().into()).or_insert(next);
        if i == next {
            let acc = Acc {
                kind: columns::text(kind).to_owned(),
                core: columns::text(core).to_owned(),
                ..Acc::default()
            };
            self.accs.push((key.into(), acc));
        }
        i
    }

    /// Adds the groups of the rows that follow: new keys in their order of first sight, so
    /// that the cap keeps the keys a single pass keeps.
    fn absorb(&mut self, next: Groups) {
        self.capped |= next.capped;
        for (key, acc) in next.accs {
            let i = self.position(key.as_bytes(), acc.kind.as_bytes(), acc.core.as_bytes());
            let into = &mut self.accs[i].1;
            into.count += acc.count;
            into.total_us += acc.total_us;
            into.pipe.absorb(&acc.pipe);
        }
    }

    fn sorted(self) -> Vec<(String, Acc)> {
        let mut groups: Vec<(String, Acc)> = self
            .accs
            .into_iter()
            .map(|(k, a)| (k.into_string(), a))
            .collect();
        groups.sort_by(|a, b| b.1.total_us.total_cmp(&a.1.total_us).then(a.0.cmp(&b.0)));
        groups
    }
}

fn share(part: f64, total: f64) -> f64 {
    if total > 0.0 { part / total } else { 0.0 }
}

/// Reads `kernel_details.csv` in one pass and groups it by name, by type and by name and input
/// shapes: a large file in segments on all cores, summed in file order.
pub fn aggregate(path: &Path) -> Result<KernelTable, SummaryError> {
    aggregate_with(path, None)
}

/// [`aggregate`], also keeping the start and duration of the rows of step `timeline` (its
/// `Step Id`), for the step's timeline ([`crate::timeline`]).
pub fn aggregate_with(path: &Path, timeline: Option<u64>) -> Result<KernelTable, SummaryError> {
    // A size that cannot be read gives one pass, which says why it cannot open the file.
    let len = std::fs::metadata(path).map_or(0, |meta| meta.len());
    aggregate_in_segments(path, segment_size(len), timeline)
}

/// [`aggregate`] with segments of `segment` bytes.
///
/// Segment boundaries are taken just past a `\n` and checked at the joins: the segment before
/// must end exactly there (a `\n` inside a quoted field would make it run on). The result
/// depends on the file alone, not on the number of cores: the boundaries come from its size,
/// the sums are added in file order. When a join fails, or any segment finds an error, the
/// file is read again in one pass, so that the result or the error (with its line) is that
/// of a plain reading.
fn aggregate_in_segments(
    path: &Path,
    segment: u64,
    timeline: Option<u64>,
) -> Result<KernelTable, SummaryError> {
    let mut reader = columns::open(path, 0)?;
    let header = columns::read_header(&mut reader, path)?;
    let mut cols = KernelColumns::new(&header, path)?;
    cols.timeline = timeline;
    let (starts, len) = segment_starts(path, segment)?;
    if starts.len() > 1
        && let Some(sums) = in_segments(path, &starts, len, &header, &cols)
    {
        return Ok(sums.table(cols.pipe.is_some()));
    }
    let sums = scan(&mut reader, path, &header, &cols, None)?;
    Ok(sums.unwrap_or_default().table(cols.pipe.is_some()))
}

/// The sums of the segments of `path` (`len` bytes) starting at `starts`, added in file order
/// (see [`in_file_order`]); `None` when a join fails or a segment finds an error.
fn in_segments(
    path: &Path,
    starts: &[u64],
    len: u64,
    header: &Header,
    cols: &KernelColumns,
) -> Option<Sums> {
    let mut sums: Option<Sums> = None;
    let work = |start: u64, end: u64| {
        let mut rows = columns::open(path, start)?;
        if start == 0 {
            columns::read_header(&mut rows, path)?;
        }
        let stop = (end < len).then(|| end - start);
        scan(&mut rows, path, header, cols, stop)
    };
    // A skipped row's line is counted from its segment's start: one pass reports it.
    let failed = in_file_order(starts, len, work, |_, _, part| match part {
        Ok(Some(part)) if part.skipped.is_empty() => {
            match &mut sums {
                Some(sums) => sums.absorb(part),
                None => sums = Some(part),
            }
            ControlFlow::Continue(())
        }
        _ => ControlFlow::Break(()),
    });
    if failed.is_some() { None } else { sums }
}

/// Where the segments of `path` start (see [`line_starts`]), and the file's length.
fn segment_starts(path: &Path, segment: u64) -> Result<(Vec<u64>, u64), SummaryError> {
    let io = |source| SummaryError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = crate::input::open(path, crate::input::Input::Csv)?;
    let len = file.metadata().map_err(io)?.len();
    Ok((line_starts(&file, len, segment).map_err(io)?, len))
}

/// The sums of some rows of one file.
#[derive(Default)]
pub(crate) struct Sums {
    names: Groups,
    kinds: Groups,
    shapes: Groups,
    /// A shape group's key being built (reused).
    shape_key: Vec<u8>,
    intervals: Intervals,
    pipe: PipeSums,
    rows: u64,
    total_us: f64,
    steps: StepIds,
    skipped: Vec<SkippedRow>,
}

impl Sums {
    /// Adds one kernel row: its name (trimmed), `Type` text, `Accelerator Core` field, duration
    /// in µs, pipe ratios (in the order of [`Pipe::ALL`](crate::pipe::Pipe::ALL)),
    /// `memory_bound` column and `Input Shapes` field, when it has them.
    #[inline]
    #[allow(
        clippy::too_many_arguments,
        reason = "one row's fields, on the hot path: no struct built per row"
    )]
    pub(crate) fn add(
        &mut self,
        name: &[u8],
        kind: &[u8],
        core: &[u8],
        duration: f64,
        ratios: Option<[f64; PIPES]>,
        memory_bound: Option<f64>,
        shapes: Option<&[u8]>,
    ) {
        let by_name = self.names.entry(name, kind, core);
        if let Some(shapes) = shapes.map(<[u8]>::trim_ascii) {
            let i = match &by_name.shape_group {
                Some((last, i)) if **last == *shapes => *i,
                _ => {
                    self.shape_key.clear();
                    self.shape_key.extend_from_slice(name);
                    self.shape_key.push(SHAPE_SEPARATOR);
                    self.shape_key.extend_from_slice(shapes);
                    let i = self.shapes.position(&self.shape_key, kind, core);
                    by_name.shape_group = Some((shapes.into(), i));
                    i
                }
            };
            let acc = &mut self.shapes.accs[i].1;
            acc.count += 1;
            acc.total_us += duration;
        }
        by_name.count += 1;
        by_name.total_us += duration;
        if let Some(ratios) = ratios {
            by_name.pipe.add(duration, ratios);
            self.pipe.add(duration, ratios);
        }
        if let Some(bound) = memory_bound {
            by_name.pipe.add_memory_bound(duration, bound);
        }
        let same_kind = by_name.kind.as_bytes() == kind;
        let by_kind = match by_name.kind_group.filter(|_| same_kind) {
            Some(i) => &mut self.kinds.accs[i].1,
            None => {
                let i = self.kinds.position(kind, kind, core);
                if same_kind {
                    by_name.kind_group = Some(i);
                }
                &mut self.kinds.accs[i].1
            }
        };
        by_kind.count += 1;
        by_kind.total_us += duration;
        self.rows += 1;
        self.total_us += duration;
    }

    /// Counts the `Step Id` of the row just added.
    #[inline]
    pub(crate) fn see_step(&mut self, step: Option<u64>) {
        self.steps.see(step);
    }

    /// Keeps a row of the drawn step for its timeline, by its start in ns (a db export's).
    pub(crate) fn keep_for_timeline(&mut self, start_ns: i64, duration_us: f64, core: &[u8]) {
        self.intervals
            .add_ns(start_ns, duration_us, is_communication(core));
    }

    /// Adds the sums of the rows that follow.
    fn absorb(&mut self, next: Sums) {
        self.names.absorb(next.names);
        self.kinds.absorb(next.kinds);
        self.shapes.absorb(next.shapes);
        self.intervals.absorb(next.intervals);
        self.pipe.absorb(&next.pipe);
        self.rows += next.rows;
        self.total_us += next.total_us;
        self.steps.absorb(next.steps);
        self.skipped.extend(next.skipped);
    }

    /// The groups sorted, and the shares; `has_metrics` when the file has pipe columns.
    pub(crate) fn table(self, has_metrics: bool) -> KernelTable {
        let Sums {
            names,
            kinds,
            shapes,
            intervals,
            shape_key: _,
            pipe: phase_pipe,
            rows,
            total_us,
            steps,
            skipped,
        } = self;
        let capped = names.capped || kinds.capped;
        let by_name: Vec<KernelGroup> = names
            .sorted()
            .into_iter()
            .map(|(name, acc)| {
                let pipe = acc.pipe.ratios();
                KernelGroup {
                    name,
                    kind: acc.kind,
                    core: acc.core,
                    count: acc.count,
                    total_us: acc.total_us,
                    mean_us: acc.total_us / acc.count as f64,
                    share: share(acc.total_us, total_us),
                    bound: acc.pipe.bound(),
                    pipe,
                }
            })
            .collect();
        let by_type: Vec<TypeGroup> = kinds
            .sorted()
            .into_iter()
            .map(|(kind, acc)| TypeGroup {
                kind,
                core: acc.core,
                count: acc.count,
                total_us: acc.total_us,
                mean_us: acc.total_us / acc.count as f64,
                share: share(acc.total_us, total_us),
            })
            .collect();
        let by_shape: Vec<ShapeGroup> = shapes
            .sorted()
            .into_iter()
            .map(|(key, acc)| {
                let (name, shapes) = key
                    .split_once(char::from(SHAPE_SEPARATOR))
                    .unwrap_or((&key, ""));
                let shapes = shapes.trim_matches('"');
                ShapeGroup {
                    name: name.to_owned(),
                    shapes: if shapes == "N/A" { "" } else { shapes }.to_owned(),
                    kind: acc.kind,
                    count: acc.count,
                    total_us: acc.total_us,
                    mean_us: acc.total_us / acc.count as f64,
                    share: share(acc.total_us, total_us),
                }
            })
            .collect();
        let pipe = has_metrics
            .then(|| phase_pipe.ratios())
            .flatten()
            .map(|ratios| PipeShares {
                ratios,
                measured_us: phase_pipe.time_us(),
                measured_share: share(phase_pipe.time_us(), total_us),
            });
        KernelTable {
            totals: KernelTotals {
                rows,
                total_us,
                distinct_names: by_name.len(),
                distinct_types: by_type.len(),
                steps: steps.count(),
                capped,
            },
            by_name,
            by_type,
            by_shape,
            intervals,
            pipe,
            skipped,
        }
    }
}

/// Sums the rows of `reader` (after the header) to the end, or, with `stop`, up to the record
/// whose reading starts at `stop` (relative to where `reader` started, just past a `\n`):
/// `None` when no record starts there (the `\n` was inside a field, or the file ended first).
fn scan(
    reader: &mut CsvRows<std::fs::File>,
    path: &Path,
    header: &Header,
    cols: &KernelColumns,
    stop: Option<u64>,
) -> Result<Option<Sums>, SummaryError> {
    let mut sums = Sums::default();
    let ratio_values = &mut RatioValues::default();
    let mut step_field = StepField::default();
    while let Some(record) = columns::next_columns(reader, path, &cols.picks)? {
        if let Some(stop) = stop {
            // Reading from the `\n` before `stop` (after a `\r`) skips it as a blank line.
            if record.byte() + 1 >= stop {
                return Ok((record.byte() <= stop).then_some(sums));
            }
        }
        if record.len() == 1 && columns::text(record.get(cols.first).unwrap_or_default()).is_empty()
        {
            continue; // a blank line
        }
        if !header.keep(path, &record, &mut sums.skipped)? {
            continue;
        }
        let field = |i: Option<usize>| i.and_then(|i| record.get(i)).unwrap_or_default();
        let duration_field = record.get(cols.duration).unwrap_or_default();
        // A duration must be a finite number of 0 or more: `inf`, `1e309` or `-1e300` is
        // refused by its line like text, so that no report sums or prints it.
        let duration = columns::number(duration_field)
            .ok()
            .flatten()
            .filter(|d| d.is_finite() && *d >= 0.0)
            .ok_or_else(|| {
                let column = cols.picks[cols.duration];
                columns::bad_number(path, &record, header, column, duration_field)
            })?;
        let name = columns::name_key(record.get(cols.name).unwrap_or_default());
        let (kind, core) = (columns::text_bytes(field(cols.kind)), field(cols.core));
        let ratios = cols
            .pipe
            .as_ref()
            .and_then(|p| p.row(ratio_values, |i| record.get_word(i)));
        let memory_bound = cols
            .memory_bound
            .and_then(|i| record.get(i))
            .and_then(|f| npuprof_scan::decimal::parse_f64(f.trim_ascii()));
        let shapes = cols.shapes.and_then(|i| record.get(i));
        sums.add(&name, kind, core, duration, ratios, memory_bound, shapes);
        let step = cols
            .step
            .and_then(|i| record.get(i))
            .and_then(|bytes| step_field.read(bytes));
        if cols.step.is_some() {
            sums.see_step(step);
        }
        if step.is_some() && step == cols.timeline {
            sums.intervals
                .add(field(cols.start), duration, is_communication(core));
        }
    }
    Ok(stop.is_none().then_some(sums))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `csv` written to a `kernel_details.csv` in a new temporary directory.
    fn temp_csv(csv: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("kernel_details.csv");
        std::fs::write(&path, csv).unwrap_or_else(|e| panic!("{e}"));
        (dir, path)
    }

    fn table_of(csv: &str) -> Result<KernelTable, SummaryError> {
        aggregate(&temp_csv(csv).1)
    }

    #[test]
    fn minimal_header_groups_by_name_and_type() {
        let table = table_of(
            "Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim\r\n\
             50,a,N/A,N/A,1.0\t,10,0,0\r\n50,b,N/A,N/A,2.0\t,30,0,0\r\n50,a,N/A,N/A,3.0\t,20,0,0\r\n",
        );
        let Ok(table) = table else {
            panic!("{table:?}")
        };
        assert_eq!(table.totals.rows, 3);
        assert_eq!(table.totals.total_us, 60.0);
        let names: Vec<_> = table
            .by_name
            .iter()
            .map(|k| (k.name.as_str(), k.count, k.total_us, k.mean_us))
            .collect();
        assert_eq!(names, [("a", 2, 30.0, 15.0), ("b", 1, 30.0, 30.0)]);
        assert_eq!(table.by_type.len(), 1);
        assert_eq!(table.by_type[0].share, 1.0);
        assert_eq!(table.pipe, None);
        assert_eq!(table.by_name[0].bound, None);
    }

    #[test]
    fn missing_duration_column_is_an_error() {
        let err = table_of("Name,Type\na,b\n").map(|_| ());
        let message = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("`Duration(us)`"), "{message}");
        assert!(message.contains("the header has: Name,Type"), "{message}");
    }

    #[test]
    fn non_numeric_duration_is_an_error_with_its_line() {
        let err = table_of("Name,Duration(us)\na,1\nb,oops\n").map(|_| ());
        let message = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("line 3: column `Duration(us)`"),
            "{message}"
        );
    }

    /// The real rank-0 file of the vendored run (192 rows of 46 columns).
    fn real_csv() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/real-2rank/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv")
    }

    /// Groups by key, with their counts, and their sums rounded off the last bits that the
    /// order of additions may change.
    fn keyed(table: &KernelTable) -> Vec<(String, String, u64, String)> {
        let round = |x: f64| format!("{x:.6e}");
        let mut groups: Vec<_> = table
            .by_name
            .iter()
            .map(|k| (k.name.clone(), k.kind.clone(), k.count, round(k.total_us)))
            .chain(
                table
                    .by_type
                    .iter()
                    .map(|t| (String::new(), t.kind.clone(), t.count, round(t.total_us))),
            )
            .collect();
        groups.extend(table.by_shape.iter().map(|g| {
            (
                format!("{}|{}", g.name, g.shapes),
                g.kind.clone(),
                g.count,
                round(g.total_us),
            )
        }));
        groups.sort();
        groups.push((
            "intervals".to_owned(),
            format!("{:?}", table.intervals),
            0,
            String::new(),
        ));
        groups.push((
            table.totals.capped.to_string(),
            format!("{:?}", table.pipe.as_ref().map(|p| round(p.ratios.cube))),
            table.totals.rows,
            round(table.totals.total_us),
        ));
        groups
    }

    /// Every segment size gives what one pass gives.
    fn check_segments(path: &Path, sizes: impl Iterator<Item = u64>) {
        let whole = aggregate_in_segments(path, u64::MAX, Some(50)).map(|t| keyed(&t));
        assert!(whole.as_ref().is_ok_and(|w| w.len() > 2), "{whole:?}");
        for size in sizes {
            let segmented = aggregate_in_segments(path, size, Some(50)).map(|t| keyed(&t));
            assert_eq!(
                segmented.ok(),
                whole.as_ref().ok().cloned(),
                "segments of {size}"
            );
        }
    }

    #[test]
    fn segments_sum_to_one_pass() {
        let path = real_csv();
        assert!(
            segment_starts(&path, 4096)
                .map(|(s, _)| s.len())
                .unwrap_or_default()
                > 10
        );
        check_segments(&path, [333, 1000, 4096, 20_000, 1 << 20].into_iter());
    }

    #[test]
    fn a_line_break_inside_quotes_at_a_boundary_reads_as_one_pass() {
        // Past a quoted `\n`, `b,7` and `c",2` read as rows of their own: a segment starting
        // there would count kernels `b` and `c"`.
        let mut csv = String::from("Name,Duration(us)\r\n");
        for i in 0..60 {
            csv.push_str(&format!("k{},1.5\r\n\"a\nb,7\nc\",2\r\n", i % 7));
        }
        let (_dir, path) = temp_csv(&csv);
        check_segments(&path, 8..80);
    }

    #[test]
    fn an_error_in_a_later_segment_is_the_one_pass_error() {
        let mut csv = String::from("Name,Duration(us)\n");
        for i in 0..200 {
            csv.push_str(if i == 150 { "k,oops\n" } else { "k,1\n" });
        }
        let (_dir, path) = temp_csv(&csv);
        for size in [16, 100, 1 << 20] {
            let message = aggregate_in_segments(&path, size, None)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(message.contains("line 152:"), "{size}: {message}");
        }
    }

    #[test]
    fn a_ragged_row_is_skipped_with_its_line_in_segments_as_in_one_pass() {
        let mut csv = String::from("Name,Type,Duration(us)\n");
        for i in 0..200 {
            csv.push_str(if i == 150 { "k,1\n" } else { "k,T,1\n" });
        }
        let (_dir, path) = temp_csv(&csv);
        for size in [16, 100, u64::MAX] {
            let table = aggregate_in_segments(&path, size, None).unwrap_or_else(|e| panic!("{e}"));
            let skipped: Vec<_> = table
                .skipped
                .iter()
                .map(|r| (r.line, r.fields, r.expected))
                .collect();
            assert_eq!(skipped, [(152, 2, 3)], "segments of {size}");
            assert_eq!((table.totals.rows, table.totals.total_us), (199, 199.0));
        }
    }

    #[test]
    fn past_the_skipped_rows_a_broken_file_is_an_error() {
        let mut csv = String::from("Name,Type,Duration(us)\n");
        for _ in 0..=columns::MAX_SKIPPED {
            csv.push_str("k,1\n");
        }
        let message = table_of(&csv)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let line = columns::MAX_SKIPPED + 2;
        assert!(
            message.contains(&format!("line {line} has 2 fields, the header has 3")),
            "{message}"
        );
    }

    #[test]
    fn absorbed_groups_keep_the_cap_of_one_pass() {
        let (mut first, mut next) = (Groups::default(), Groups::default());
        for i in 0..MAX_GROUPS - 1 {
            first.entry(&format!("k{i}"), "T", "C").count += 1;
        }
        for key in ["k0", "new1", "new2", "new3"] {
            next.entry(key, "T", "C").count += 1;
        }
        first.absorb(next);
        assert!(first.capped);
        assert_eq!(first.accs.len(), MAX_GROUPS + 1);
        let counts = ["k0", "new1", OTHER].map(|key| count(&first, key));
        assert_eq!(counts, [Some(2), Some(1), Some(2)]);
    }

    #[test]
    fn names_past_the_cap_go_to_other() {
        let mut groups = Groups::default();
        for i in 0..MAX_GROUPS + 3 {
            groups.entry(&format!("k{i}"), "T", "C").count += 1;
        }
        groups.entry("k0", "T", "C").count += 1;
        assert!(groups.capped);
        assert_eq!(groups.accs.len(), MAX_GROUPS + 1);
        assert_eq!(count(&groups, OTHER), Some(3));
        assert_eq!(count(&groups, "k0"), Some(2));
    }

    /// The rows counted in the group of `key`.
    fn count(groups: &Groups, key: &str) -> Option<u64> {
        groups
            .accs
            .iter()
            .find(|(k, _)| &**k == key)
            .map(|(_, a)| a.count)
    }
}
