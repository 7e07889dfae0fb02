//! Layer mode's input: the kernel rows of `kernel_details.csv` (step, type, start, duration),
//! read in one streaming pass through summary's CSV reader, kept compactly (a type index and
//! three integers a row, at most [`MAX_ROWS`] rows; types interned).

use std::collections::HashMap;
use std::path::Path;

use npuprof_summary::SummaryError;
use npuprof_summary::columns::{self, SkippedRow};

use crate::time::{parse_ts_ns, us_to_ps};

/// The most rows kept (about 24 bytes each); a larger table is refused, not truncated.
pub const MAX_ROWS: usize = 20_000_000;

/// One kernel row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelRow {
    /// `Step Id`, when the table has it and the row holds a number.
    pub step: Option<u64>,
    /// The `Type`, an index into [`KernelTable::types`].
    pub ty: u32,
    /// Start (ns).
    pub start_ns: u64,
    /// Duration (ps).
    pub dur_ps: u64,
}

/// The kernel rows of one table.
#[derive(Debug, Default, Clone)]
pub struct KernelTable {
    /// The distinct types, by index.
    pub types: Vec<String>,
    /// The rows, in file order.
    pub rows: Vec<KernelRow>,
    /// Rows left out for their number of fields.
    pub skipped: Vec<SkippedRow>,
}

/// Reads `path` (a `kernel_details.csv`).
pub fn read(path: &Path) -> Result<KernelTable, SummaryError> {
    let mut reader = columns::open(path, 0)?;
    let header = columns::read_header(&mut reader, path)?;
    let kind = header.require(path, &["Type", "OP Type"])?;
    let start = header.require(path, &["Start Time(us)", "Task Start Time(us)"])?;
    let duration = header.require(path, &["Duration(us)", "Task Duration(us)"])?;
    let step = header.find(&["Step Id"]);
    let mut picks: Vec<usize> = [Some(kind), Some(start), Some(duration), step]
        .into_iter()
        .flatten()
        .collect();
    picks.sort_unstable();
    picks.dedup();
    let slot = |column: usize| picks.binary_search(&column).unwrap_or_default();
    let (kind_at, start_at, duration_at) = (slot(kind), slot(start), slot(duration));
    let step_at = step.map(slot);
    let mut table = KernelTable::default();
    let mut index: HashMap<String, u32> = HashMap::new();
    while let Some(record) = columns::next_columns(&mut reader, path, &picks)? {
        if record.len() == 1 && columns::text(record.get(0).unwrap_or_default()).is_empty() {
            continue; // a blank line
        }
        if !header.keep(path, &record, &mut table.skipped)? {
            continue;
        }
        let field = |i: usize| record.get(i).unwrap_or_default();
        let bad = |i: usize| columns::bad_number(path, &record, &header, picks[i], field(i));
        let start_ns = parse_ts_ns(columns::text(field(start_at))).ok_or_else(|| bad(start_at))?;
        let dur_ps = columns::number(field(duration_at))
            .ok()
            .flatten()
            .and_then(us_to_ps)
            .ok_or_else(|| bad(duration_at))?;
        let ty = columns::text(field(kind_at));
        let ty = match index.get(ty) {
            Some(&i) => i,
            None => {
                let i = table.types.len() as u32;
                table.types.push(ty.to_owned());
                index.insert(ty.to_owned(), i);
                i
            }
        };
        if table.rows.len() >= MAX_ROWS {
            return Err(SummaryError::Unusable {
                path: path.to_path_buf(),
                reason: format!("more than {MAX_ROWS} kernel rows: too many to break down"),
            });
        }
        table.rows.push(KernelRow {
            step: step_at.and_then(|i| columns::text(field(i)).parse().ok()),
            ty,
            start_ns,
            dur_ps,
        });
    }
    Ok(table)
}
