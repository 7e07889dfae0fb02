//! Layer mode's input: the kernel rows of `kernel_details.csv` (step, type, start, duration),
//! read in one streaming pass through summary's CSV reader, kept compactly (a type index and
//! three integers a row, at most [`MAX_ROWS`] rows; types interned). [`read_detailed`] also
//! keeps what the skill's cluster rules look at (name, stream, task, core, shapes; interned).

use crate::Map;
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
    /// Per row, its other fields (by [`read_detailed`]; empty from [`read`]).
    pub details: Vec<RowDetail>,
    /// The distinct texts of [`RowDetail`]'s fields, by index.
    pub texts: Vec<String>,
}

/// A kernel row's other fields, each an index into [`KernelTable::texts`] (an absent column
/// reads as the empty text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowDetail {
    /// `Name`.
    pub name: u32,
    /// `Stream ID`.
    pub stream: u32,
    /// `Task ID`.
    pub task: u32,
    /// `Accelerator Core`.
    pub core: u32,
    /// `Input Shapes`, without its quotes.
    pub input_shapes: u32,
    /// `Output Shapes`, without its quotes.
    pub output_shapes: u32,
}

impl KernelTable {
    /// The text at `index` of [`KernelTable::texts`].
    pub fn text(&self, index: u32) -> &str {
        self.texts.get(index as usize).map_or("", String::as_str)
    }

    /// A field of row `row`'s [`RowDetail`] as text (empty when the table has no details).
    pub fn detail(&self, row: usize, field: fn(&RowDetail) -> u32) -> &str {
        self.details.get(row).map_or("", |d| self.text(field(d)))
    }
}

/// The optional columns [`read_detailed`] keeps, in [`RowDetail`]'s order.
const DETAIL_COLUMNS: [&str; 6] = [
    "Name",
    "Stream ID",
    "Task ID",
    "Accelerator Core",
    "Input Shapes",
    "Output Shapes",
];

/// Interns `text` into `texts`.
fn intern(texts: &mut Vec<String>, index: &mut Map<String, u32>, text: &str) -> u32 {
    if let Some(&i) = index.get(text) {
        return i;
    }
    let i = texts.len() as u32;
    texts.push(text.to_owned());
    index.insert(text.to_owned(), i);
    i
}

/// Reads `path` (a `kernel_details.csv`).
pub fn read(path: &Path) -> Result<KernelTable, SummaryError> {
    read_table(path, false)
}

/// Reads `path` keeping each row's [`RowDetail`] too.
pub fn read_detailed(path: &Path) -> Result<KernelTable, SummaryError> {
    read_table(path, true)
}

fn read_table(path: &Path, detailed: bool) -> Result<KernelTable, SummaryError> {
    let mut reader = columns::open(path, 0)?;
    let header = columns::read_header(&mut reader, path)?;
    let kind = header.require(path, &["Type", "OP Type"])?;
    let start = header.require(path, &["Start Time(us)", "Task Start Time(us)"])?;
    let duration = header.require(path, &["Duration(us)", "Task Duration(us)"])?;
    let step = header.find(&["Step Id"]);
    let detail: Vec<Option<usize>> = if detailed {
        DETAIL_COLUMNS.iter().map(|c| header.find(&[c])).collect()
    } else {
        Vec::new()
    };
    let mut picks: Vec<usize> = [Some(kind), Some(start), Some(duration), step]
        .into_iter()
        .chain(detail.iter().copied())
        .flatten()
        .collect();
    picks.sort_unstable();
    picks.dedup();
    let slot = |column: usize| picks.binary_search(&column).unwrap_or_default();
    let (kind_at, start_at, duration_at) = (slot(kind), slot(start), slot(duration));
    let step_at = step.map(slot);
    let detail_at: Vec<Option<usize>> = detail.iter().map(|c| c.map(slot)).collect();
    let mut table = KernelTable::default();
    let mut index: Map<String, u32> = Map::default();
    let mut text_index: Map<String, u32> = Map::default();
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
        let ty = intern(&mut table.types, &mut index, columns::text(field(kind_at)));
        if detailed {
            let mut at = detail_at.iter().map(|slot| {
                let text = slot.map_or("", |i| columns::text(field(i)).trim_matches('"'));
                intern(&mut table.texts, &mut text_index, text)
            });
            let mut next = || at.next().unwrap_or_default();
            table.details.push(RowDetail {
                name: next(),
                stream: next(),
                task: next(),
                core: next(),
                input_shapes: next(),
                output_shapes: next(),
            });
        }
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
