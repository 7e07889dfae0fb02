//! Streaming read of `kernel_details.csv` (and the small `step_trace_time.csv`).
//!
//! Values are handled as torch_npu writes them: `Start Time(us)` ends with a literal TAB,
//! shapes are quoted with doubled quotes, missing values are `N/A`, line endings may be CRLF.

use std::collections::BTreeMap;
use std::io::Read;

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
}

impl KernelScan {
    /// Whether the header has a column (exact name after trimming).
    pub fn has(&self, name: &str) -> bool {
        self.header.iter().any(|h| h == name)
    }
}

/// A reader that reports how many bytes went through it.
struct Counting<R, F> {
    inner: R,
    on_bytes: F,
}

impl<R: Read, F: FnMut(u64)> Read for Counting<R, F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        (self.on_bytes)(n as u64);
        Ok(n)
    }
}

fn trim(field: &[u8]) -> &[u8] {
    field.trim_ascii()
}

fn header_names(record: &csv::ByteRecord) -> Vec<String> {
    record
        .iter()
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

fn parse_u64(field: &[u8]) -> Option<u64> {
    std::str::from_utf8(field).ok()?.parse().ok()
}

fn parse_f64(field: &[u8]) -> Option<f64> {
    std::str::from_utf8(field).ok()?.parse().ok()
}

/// Streams `kernel_details.csv` once.
pub fn scan_kernel_details<R: Read>(
    reader: R,
    on_bytes: impl FnMut(u64),
) -> Result<KernelScan, csv::Error> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .buffer_capacity(1 << 20)
        .from_reader(Counting {
            inner: reader,
            on_bytes,
        });
    let mut record = csv::ByteRecord::new();
    let mut scan = KernelScan::default();
    if !rdr.read_byte_record(&mut record)? {
        return Ok(scan);
    }
    scan.header = header_names(&record);
    let width = scan.header.len();
    let step_col = scan.header.iter().position(|h| h == "Step Id");
    let dur_col = scan.header.iter().position(|h| h == "Duration(us)");
    let mut non_empty = vec![false; width];
    let mut pending_non_empty = width;
    let mut last_step: Option<(u64, StepKernels)> = None;
    while rdr.read_byte_record(&mut record)? {
        scan.rows += 1;
        if record.len() != width {
            scan.ragged_rows += 1;
            if scan.first_ragged_line.is_none() {
                scan.first_ragged_line = record.position().map(|p| p.line());
            }
        }
        if pending_non_empty > 0 {
            for (i, field) in record.iter().enumerate().take(width) {
                if !non_empty[i] && !trim(field).is_empty() {
                    non_empty[i] = true;
                    pending_non_empty -= 1;
                }
            }
        }
        if let Some(sc) = step_col {
            let field = trim(record.get(sc).unwrap_or_default());
            if field.is_empty() {
                scan.empty_step_id_rows += 1;
            } else if let Some(step) = parse_u64(field) {
                let dur = dur_col
                    .and_then(|d| record.get(d))
                    .and_then(|f| parse_f64(trim(f)))
                    .unwrap_or(0.0);
                match &mut last_step {
                    Some((s, agg)) if *s == step => {
                        agg.kernels += 1;
                        agg.duration_us += dur;
                    }
                    _ => {
                        if let Some((s, agg)) = last_step.take() {
                            merge(&mut scan.steps, s, agg);
                        }
                        last_step = Some((
                            step,
                            StepKernels {
                                kernels: 1,
                                duration_us: dur,
                            },
                        ));
                    }
                }
            } else {
                scan.bad_step_id_rows += 1;
            }
        }
    }
    if let Some((s, agg)) = last_step {
        merge(&mut scan.steps, s, agg);
    }
    if scan.rows > 0 {
        scan.all_empty_columns = scan
            .header
            .iter()
            .zip(&non_empty)
            .filter(|(name, seen)| !**seen && name.as_str() != "Step Id")
            .map(|(name, _)| name.clone())
            .collect();
    }
    Ok(scan)
}

fn merge(steps: &mut BTreeMap<u64, StepKernels>, step: u64, agg: StepKernels) {
    let e = steps.entry(step).or_default();
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
}

/// Reads `step_trace_time.csv` (one row per device and step; small).
pub fn read_step_trace<R: Read>(reader: R) -> Result<(Vec<String>, Vec<StepTraceRow>), csv::Error> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(reader);
    let mut record = csv::ByteRecord::new();
    if !rdr.read_byte_record(&mut record)? {
        return Ok((Vec::new(), Vec::new()));
    }
    let header = header_names(&record);
    let col = |name: &str| header.iter().position(|h| h == name);
    let (dev, step, stage) = (col("Device_id"), col("Step"), col("Stage"));
    let parts = [
        col("Computing"),
        col("Communication(Not Overlapped)"),
        col("Free"),
    ];
    let mut rows = Vec::new();
    while rdr.read_byte_record(&mut record)? {
        let num = |c: Option<usize>| {
            c.and_then(|c| record.get(c))
                .and_then(|f| parse_f64(trim(f)))
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
    fn counts_ragged_rows() {
        let text = "A,B,C\n1,2,3\n4,5\n";
        let scan = scan_kernel_details(text.as_bytes(), |_| {}).unwrap_or_default();
        assert_eq!(scan.ragged_rows, 1);
        assert_eq!(scan.first_ragged_line, Some(3));
    }
}
