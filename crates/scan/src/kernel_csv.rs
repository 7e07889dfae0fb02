//! Streaming read of `kernel_details.csv` (and the small `step_trace_time.csv`).
//!
//! Values are handled as torch_npu writes them: `Start Time(us)` ends with a literal TAB,
//! shapes are quoted with doubled quotes, missing values are `N/A`, line endings may be CRLF.
//! Memory is bounded whatever the file holds: a record (one line, or a quoted field that never
//! closes) may not exceed [`MAX_RECORD_BYTES`], a header [`MAX_COLUMNS`], and at most
//! [`MAX_DISTINCT_STEPS`] step numbers are kept; the scan stops with [`Corruption`] otherwise.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;

use crate::csv_rows::{CsvEngine, CsvError, CsvRows, Record};
use crate::decimal::{parse_f64, parse_u64};

mod segments;

/// The longest CSV record read (torch_npu's longest kernel rows are a few KiB).
pub const MAX_RECORD_BYTES: u64 = 1 << 20;
/// The widest header accepted (torch_npu writes at most a few dozen columns).
pub const MAX_COLUMNS: usize = 1024;
/// The most distinct `Step Id` values kept.
pub const MAX_DISTINCT_STEPS: usize = 100_000;

/// Why a CSV scan stopped before the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corruption {
    /// A record grew past [`MAX_RECORD_BYTES`]: NUL bytes or binary data, a missing line
    /// ending, or a quote that never closes.
    RecordTooLarge {
        /// Byte offset where the record starts (the end of the previous one).
        byte: u64,
        /// 1-based line where it starts (counted in records: exact unless earlier records
        /// hold quoted line breaks).
        line: u64,
    },
    /// The header has more than [`MAX_COLUMNS`] columns.
    TooManyColumns(usize),
}

/// Kernels and summed device time of one step.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepKernels {
    /// Rows with this `Step Id`.
    pub kernels: u64,
    /// Sum of `Duration(us)`.
    pub duration_us: f64,
}

/// What one pass over `kernel_details.csv` found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelScan {
    /// Header names, trimmed (a UTF-8 BOM removed).
    pub header: Vec<String>,
    /// Data rows.
    pub rows: u64,
    /// Rows whose field count differs from the header's.
    pub ragged_rows: u64,
    /// 1-based line of the first ragged row.
    pub first_ragged_line: Option<u64>,
    /// Rows whose `Step Id` is empty.
    pub empty_step_id_rows: u64,
    /// Rows whose `Step Id` is neither empty nor an integer.
    pub bad_step_id_rows: u64,
    /// Per `Step Id`: kernel count and summed duration.
    pub steps: BTreeMap<u64, StepKernels>,
    /// Columns (other than `Step Id`) empty in every row; only meaningful when `rows > 0`.
    pub all_empty_columns: Vec<String>,
    /// Why the scan stopped early, if it did (the counts cover what was read before).
    pub corruption: Option<Corruption>,
    /// More than [`MAX_DISTINCT_STEPS`] distinct Step Ids: the rest were counted, not kept.
    pub steps_capped: bool,
    /// Rows whose duration is a number but not a finite one of 0 or more (counted as 0).
    pub invalid_durations: u64,
    /// The first of them: its line and its text.
    pub first_invalid_duration: Option<(u64, String)>,
    /// Rows of communication kernels (`Accelerator Core` `HCCL`, or `COMMUNICATION` since
    /// torch_npu 2.7) and their summed duration, over all rows; zero without the column.
    pub communication: StepKernels,
    /// The other rows (computing: what op_statistic.csv and step_trace_time's `Computing`
    /// sum) and their summed duration; zero without an `Accelerator Core` column.
    pub computing: StepKernels,
    /// The earliest and latest `Start Time(us)` (µs), when the column holds numbers: when the
    /// table's kernels ran, to tell whether another file is of the same run.
    pub start_range: Option<(f64, f64)>,
}

/// Widens `range` to hold `low..=high`.
pub fn widen(range: &mut Option<(f64, f64)>, low: f64, high: f64) {
    *range = Some(match *range {
        Some((a, b)) => (a.min(low), b.max(high)),
        None => (low, high),
    });
}

/// Whether an `Accelerator Core` field names a communication kernel.
pub fn is_communication_core(field: &[u8]) -> bool {
    let field = trim(field);
    field == b"HCCL" || field == b"COMMUNICATION"
}

impl KernelScan {
    /// Whether the header has an `Accelerator Core` column (`communication` and `computing`
    /// are known).
    pub fn has_core(&self) -> bool {
        self.has("Accelerator Core")
    }

    /// Whether the header has a column (exact name after trimming).
    pub fn has(&self, name: &str) -> bool {
        self.header.iter().any(|h| h == name)
    }
}

/// A reader that reports how many bytes went through it.
struct Counted<R, F> {
    inner: R,
    on_bytes: F,
}

impl<R: Read, F: FnMut(u64)> Read for Counted<R, F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        (self.on_bytes)(n as u64);
        Ok(n)
    }
}

/// A [`CsvRows`] that counts records, so an oversized one is reported at its line.
struct Bounded<R: Read> {
    rows: CsvRows<R>,
    records: u64,
}

impl<R: Read> Bounded<R> {
    fn new(inner: R) -> Self {
        Self {
            rows: CsvRows::new(inner, CsvEngine::Simd, MAX_RECORD_BYTES as usize),
            records: 0,
        }
    }

    /// The next record: `Ok(Some(_))`, `Ok(None)` at the end, `Err(Ok(c))` when the record is
    /// over the limit, `Err(Err(e))` on a read error.
    /// Only the first `want` fields are split (see [`CsvRows::next_record_split`]).
    fn next(
        &mut self,
        want: usize,
    ) -> Result<Option<Record<'_>>, Result<Corruption, std::io::Error>> {
        match self.rows.next_record_split(want) {
            Ok(Some(r)) => {
                self.records += 1;
                Ok(Some(r))
            }
            Ok(None) => Ok(None),
            // Counted by records read: earlier records may hold quoted line breaks.
            Err(CsvError::TooLarge { byte, .. }) => Err(Ok(Corruption::RecordTooLarge {
                byte,
                line: self.records + 1,
            })),
            Err(CsvError::Io(e)) => Err(Err(e)),
        }
    }
}

fn trim(field: &[u8]) -> &[u8] {
    field.trim_ascii()
}

fn header_names<'a>(fields: impl Iterator<Item = &'a [u8]>) -> Vec<String> {
    fields
        .enumerate()
        .map(|(i, f)| {
            let f = if i == 0 {
                f.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(f)
            } else {
                f
            };
            String::from_utf8_lossy(trim(f)).into_owned()
        })
        .collect()
}

/// Streams `kernel_details.csv` once, in bounded memory.
pub fn scan_kernel_details<R: Read>(
    reader: R,
    on_bytes: impl FnMut(u64),
) -> std::io::Result<KernelScan> {
    let mut rdr = Bounded::new(Counted {
        inner: reader,
        on_bytes,
    });
    let mut scan = KernelScan::default();
    let mut rows = match rdr.next(usize::MAX) {
        Ok(Some(record)) => {
            if record.len() > MAX_COLUMNS {
                scan.corruption = Some(Corruption::TooManyColumns(record.len()));
                return Ok(scan);
            }
            scan.header = header_names(record.iter());
            RowScan::new(&scan.header)
        }
        Ok(None) => return Ok(scan),
        Err(Ok(c)) => {
            scan.corruption = Some(c);
            return Ok(scan);
        }
        Err(Err(e)) => return Err(e),
    };
    loop {
        match rdr.next(rows.want()) {
            Ok(Some(record)) => rows.add(&mut scan, &record),
            Ok(None) => break,
            Err(Ok(c)) => {
                scan.corruption = Some(c);
                break;
            }
            Err(Err(e)) => return Err(e),
        }
    }
    rows.finish(&mut scan);
    Ok(scan)
}

/// [`scan_kernel_details`] of `file` (at its start), on all cores for a large file: one of
/// 128 MiB or more is read in segments of at most 64 MiB (see [`parallel_segment_size`]) when
/// rayon has more than one thread. The result is that of a single pass, but for the last bits
/// of the summed durations (see [`scan_kernel_file_in_segments`]). `on_bytes` is called from
/// several threads.
///
/// [`parallel_segment_size`]: crate::file_ranges::parallel_segment_size
pub fn scan_kernel_file(file: &File, on_bytes: impl Fn(u64) + Sync) -> std::io::Result<KernelScan> {
    match crate::file_ranges::parallel_segment_size(file)? {
        Some(segment) => scan_kernel_file_in_segments(file, segment, on_bytes),
        None => scan_kernel_details(file, on_bytes),
    }
}

/// [`scan_kernel_file`] with segments of `segment` bytes (small in tests), whatever the
/// number of threads.
///
/// Segments start just past a `\n` and each one is checked to end where the next starts (a
/// `\n` inside a quoted field fails it). Their counts, steps and columns seen are added in
/// file order, so the result depends on the file alone. When a join fails, and for what a
/// single pass reports by its line or its order (a record over the limit, a ragged row after
/// the first segment, more steps than are kept), the file is read again in one pass.
pub fn scan_kernel_file_in_segments(
    file: &File,
    segment: u64,
    on_bytes: impl Fn(u64) + Sync,
) -> std::io::Result<KernelScan> {
    crate::file_ranges::in_segments_or_one_pass(
        file,
        segment,
        on_bytes,
        |len, counted| segments::scan(file, len, segment, counted),
        |progress| scan_kernel_details(file, progress),
    )
}

/// The per-row state of a kernel_details scan.
struct RowScan {
    width: usize,
    step_col: Option<usize>,
    dur_col: Option<usize>,
    core_col: Option<usize>,
    start_col: Option<usize>,
    non_empty: Vec<bool>,
    pending_non_empty: usize,
    last_step: Option<(u64, StepKernels)>,
}

impl RowScan {
    fn new(header: &[String]) -> Self {
        let width = header.len();
        Self {
            width,
            step_col: header.iter().position(|h| h == "Step Id"),
            dur_col: header.iter().position(|h| h == "Duration(us)"),
            core_col: header.iter().position(|h| h == "Accelerator Core"),
            start_col: header.iter().position(|h| h == "Start Time(us)"),
            non_empty: vec![false; width],
            pending_non_empty: width,
            last_step: None,
        }
    }

    /// The fields a row must have split: all of them until every column has had a value,
    /// then up to the last column read.
    fn want(&self) -> usize {
        if self.pending_non_empty > 0 {
            usize::MAX
        } else {
            self.step_col
                .max(self.dur_col)
                .max(self.core_col)
                .max(self.start_col)
                .map_or(1, |c| c + 1)
        }
    }

    fn add(&mut self, scan: &mut KernelScan, record: &Record<'_>) {
        scan.rows += 1;
        if record.len() != self.width {
            scan.ragged_rows += 1;
            if scan.first_ragged_line.is_none() {
                scan.first_ragged_line = Some(record.line());
            }
        }
        if self.pending_non_empty > 0 {
            for (i, field) in record.iter().enumerate().take(self.width) {
                if !self.non_empty[i] && !trim(field).is_empty() {
                    self.non_empty[i] = true;
                    self.pending_non_empty -= 1;
                }
            }
        }
        // A duration that is not a finite number of 0 or more (`inf`, `1e309`, `-1e300`) counts
        // as 0 in the sums and is named by its line, so that no report adds or prints it.
        let (dur_field, parsed) = match self.dur_col.and_then(|d| record.get(d)) {
            Some(f) => (trim(f), parse_f64(trim(f))),
            None => (&[][..], None),
        };
        let valid = parsed.filter(|d| d.is_finite() && *d >= 0.0);
        if parsed.is_some() && valid.is_none() {
            scan.invalid_durations += 1;
            if scan.first_invalid_duration.is_none() {
                scan.first_invalid_duration = Some((
                    record.line(),
                    String::from_utf8_lossy(&dur_field[..dur_field.len().min(40)]).into_owned(),
                ));
            }
        }
        let duration = || valid.unwrap_or(0.0);
        // A ragged row's fields are not the header's: its start is no time.
        if let Some(start) = self
            .start_col
            .filter(|_| record.len() == self.width)
            .and_then(|c| record.get(c))
            .and_then(|f| parse_f64(trim(f)))
        {
            widen(&mut scan.start_range, start, start);
        }
        if let Some(core) = self.core_col {
            let by_core = if is_communication_core(record.get(core).unwrap_or_default()) {
                &mut scan.communication
            } else {
                &mut scan.computing
            };
            by_core.kernels += 1;
            by_core.duration_us += duration();
        }
        let Some(sc) = self.step_col else {
            return;
        };
        let field = trim(record.get(sc).unwrap_or_default());
        if field.is_empty() {
            scan.empty_step_id_rows += 1;
            return;
        }
        let Some(step) = parse_u64(field) else {
            scan.bad_step_id_rows += 1;
            return;
        };
        let dur = duration();
        match &mut self.last_step {
            Some((s, agg)) if *s == step => {
                agg.kernels += 1;
                agg.duration_us += dur;
            }
            _ => {
                if let Some((s, agg)) = self.last_step.take() {
                    merge(scan, s, agg);
                }
                self.last_step = Some((
                    step,
                    StepKernels {
                        kernels: 1,
                        duration_us: dur,
                    },
                ));
            }
        }
    }

    fn finish(mut self, scan: &mut KernelScan) {
        self.end_run(scan);
        set_empty_columns(scan, &self.non_empty);
    }

    /// Adds the step of the last rows to the steps.
    fn end_run(&mut self, scan: &mut KernelScan) {
        if let Some((s, agg)) = self.last_step.take() {
            merge(scan, s, agg);
        }
    }
}

/// The columns never seen with a value (`non_empty`, by column), once there are rows.
fn set_empty_columns(scan: &mut KernelScan, non_empty: &[bool]) {
    if scan.rows > 0 {
        scan.all_empty_columns = scan
            .header
            .iter()
            .zip(non_empty)
            .filter(|(name, seen)| !**seen && name.as_str() != "Step Id")
            .map(|(name, _)| name.clone())
            .collect();
    }
}

fn merge(scan: &mut KernelScan, step: u64, agg: StepKernels) {
    if scan.steps.len() >= MAX_DISTINCT_STEPS && !scan.steps.contains_key(&step) {
        scan.steps_capped = true;
        return;
    }
    let e = scan.steps.entry(step).or_default();
    e.kernels += agg.kernels;
    e.duration_us += agg.duration_us;
}

/// One row of `step_trace_time.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct StepTraceRow {
    /// `Device_id` (absent in older files).
    pub device: Option<String>,
    /// `Step`; `None` when empty (no schedule).
    pub step: Option<u64>,
    /// The step's duration in µs: `Stage`, else `Computing + Communication(Not Overlapped) + Free`.
    pub duration_us: Option<f64>,
    /// `Computing` (µs): the union of the step's computing kernels.
    pub computing_us: Option<f64>,
}

/// Why step_trace_time.csv could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StepTraceError {
    /// A read error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The file is not the small table torch_npu writes.
    #[error("{0:?}")]
    Corrupt(Corruption),
    /// More rows than [`MAX_DISTINCT_STEPS`]: not a step table.
    #[error("more than {MAX_DISTINCT_STEPS} rows: not torch_npu's one row per device and step")]
    TooManyRows,
}

/// Reads a small CSV table (`op_statistic.csv`: one row per operator type), in bounded
/// memory: its header and each row's fields as text (trimmed).
pub fn read_small_table<R: Read>(
    reader: R,
) -> Result<(Vec<String>, Vec<Vec<String>>), StepTraceError> {
    let mut rdr = Bounded::new(reader);
    let mut header = Vec::new();
    let mut rows = Vec::new();
    loop {
        let record = match rdr.next(usize::MAX) {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(Ok(c)) => return Err(StepTraceError::Corrupt(c)),
            Err(Err(e)) => return Err(StepTraceError::Io(e)),
        };
        if record.len() > MAX_COLUMNS {
            return Err(StepTraceError::Corrupt(Corruption::TooManyColumns(
                record.len(),
            )));
        }
        if header.is_empty() {
            header = header_names(record.iter());
            continue;
        }
        if rows.len() >= MAX_DISTINCT_STEPS {
            return Err(StepTraceError::TooManyRows);
        }
        rows.push(
            record
                .iter()
                .map(|f| String::from_utf8_lossy(trim(f)).into_owned())
                .collect(),
        );
    }
    Ok((header, rows))
}

/// Reads `step_trace_time.csv` (one row per device and step; small), in bounded memory.
pub fn read_step_trace<R: Read>(
    reader: R,
) -> Result<(Vec<String>, Vec<StepTraceRow>), StepTraceError> {
    let mut rdr = Bounded::new(reader);
    let next = |rdr: &mut Bounded<R>| -> Result<Option<Vec<Vec<u8>>>, StepTraceError> {
        match rdr.next(usize::MAX) {
            Ok(r) => Ok(r.map(|r| r.iter().map(<[u8]>::to_vec).collect())),
            Err(Ok(c)) => Err(StepTraceError::Corrupt(c)),
            Err(Err(e)) => Err(StepTraceError::Io(e)),
        }
    };
    let Some(record) = next(&mut rdr)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    if record.len() > MAX_COLUMNS {
        return Err(StepTraceError::Corrupt(Corruption::TooManyColumns(
            record.len(),
        )));
    }
    let header = header_names(record.iter().map(Vec::as_slice));
    let col = |name: &str| header.iter().position(|h| h == name);
    let (dev, step, stage) = (col("Device_id"), col("Step"), col("Stage"));
    let parts = [
        col("Computing"),
        col("Communication(Not Overlapped)"),
        col("Free"),
    ];
    let mut rows = Vec::new();
    while let Some(record) = next(&mut rdr)? {
        if rows.len() >= MAX_DISTINCT_STEPS {
            return Err(StepTraceError::TooManyRows);
        }
        // A time that is not a finite number is no time (left out, not summed).
        let num = |c: Option<usize>| {
            c.and_then(|c| record.get(c))
                .and_then(|f| parse_f64(trim(f)))
                .filter(|v| v.is_finite())
        };
        let duration_us = num(stage).filter(|v| *v > 0.0).or_else(|| {
            let vals: Option<Vec<f64>> = parts.iter().map(|c| num(*c)).collect();
            vals.map(|v| v.iter().sum())
        });
        rows.push(StepTraceRow {
            device: dev
                .and_then(|c| record.get(c))
                .map(|f| String::from_utf8_lossy(trim(f)).into_owned()),
            step: step
                .and_then(|c| record.get(c))
                .and_then(|f| parse_u64(trim(f))),
            duration_us,
            computing_us: num(parts[0]),
        });
    }
    Ok((header, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_tab_quotes_crlf_and_empty_steps() {
        let text = "Step Id,Name,Start Time(us),Duration(us),Input Shapes,Block Num\r\n\
                    13,a,1764246877073569.640\t,1.5,\"\"\"1,2\"\"\",\r\n\
                    13,b,1764246877073570.640\t,2.5,N/A,\r\n\
                    ,c,1764246877073571.640\t,4,N/A,\r\n";
        let scan = scan_kernel_details(text.as_bytes(), |_| {}).unwrap_or_default();
        assert_eq!(scan.rows, 3);
        assert_eq!(scan.ragged_rows, 0);
        assert_eq!(scan.empty_step_id_rows, 1);
        assert_eq!(scan.all_empty_columns, vec!["Block Num".to_owned()]);
        assert_eq!(
            scan.steps.get(&13),
            Some(&StepKernels {
                kernels: 2,
                duration_us: 4.0
            })
        );
    }

    #[test]
    fn a_record_that_never_ends_stops_the_scan_in_bounded_memory() {
        // 4 MiB of NULs after a header: one endless record.
        let mut bytes = b"Step Id,Name\n1,a\n".to_vec();
        bytes.extend(std::iter::repeat_n(0u8, 4 << 20));
        let scan = scan_kernel_details(bytes.as_slice(), |_| {}).unwrap_or_default();
        assert_eq!(scan.rows, 1);
        assert_eq!(
            scan.corruption,
            Some(Corruption::RecordTooLarge { byte: 17, line: 3 })
        );
        // An unterminated quote swallows the rest of the file, newlines included.
        let mut quoted = b"Step Id,Name\n1,\"open".to_vec();
        for _ in 0..(1 << 18) {
            quoted.extend_from_slice(b"x,y\n");
        }
        let scan = scan_kernel_details(quoted.as_slice(), |_| {}).unwrap_or_default();
        assert!(matches!(
            scan.corruption,
            Some(Corruption::RecordTooLarge { line: 2, .. })
        ));
        let wide = "a,".repeat(MAX_COLUMNS + 1);
        let scan = scan_kernel_details(wide.as_bytes(), |_| {}).unwrap_or_default();
        assert_eq!(
            scan.corruption,
            Some(Corruption::TooManyColumns(MAX_COLUMNS + 2))
        );
    }

    #[test]
    fn counts_ragged_rows() {
        let text = "A,B,C\n1,2,3\n4,5\n";
        let scan = scan_kernel_details(text.as_bytes(), |_| {}).unwrap_or_default();
        assert_eq!(scan.ragged_rows, 1);
        assert_eq!(scan.first_ragged_line, Some(3));
    }
}
