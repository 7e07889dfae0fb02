//! Finding CSV columns by name: header spellings vary across torch_npu and CANN versions, so
//! every column is looked up by its accepted names, never by position.

use std::borrow::Cow;
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Serialize;

use npuprof_scan::csv_rows::{CsvEngine, CsvRows, Record};
use npuprof_scan::decimal;
use npuprof_scan::kernel_csv::MAX_RECORD_BYTES;

use crate::error::SummaryError;
use crate::input::{self, Input};

/// Rows of one file with the wrong number of fields that are skipped and reported; one more
/// makes the file an error.
pub const MAX_SKIPPED: usize = 100;

/// A row left out because its number of fields is not the header's (a real 2023 export has
/// one): reported with its file and line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedRow {
    /// The file (relative to the summarised path once in a [`crate::RunSummary`]).
    pub file: PathBuf,
    /// 1-based line of the record.
    pub line: u64,
    /// Fields in the record.
    pub fields: usize,
    /// Fields in the header.
    pub expected: usize,
}

impl SkippedRow {
    /// The same row with its file relative to `root` (`/`-separated), as reports show it.
    pub fn relative_to(self, root: &Path) -> Self {
        Self {
            file: npuprof_paths::relative(root, &self.file).into(),
            ..self
        }
    }
}

impl std::fmt::Display for SkippedRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} line {} has {} fields, the header has {}: row skipped",
            self.file.display(),
            self.line,
            self.fields,
            self.expected
        )
    }
}

/// A CSV header with names trimmed (a UTF-8 BOM and surrounding blanks removed).
pub struct Header {
    names: Vec<String>,
}

impl Header {
    /// Reads the names of a CSV header record.
    pub fn new<'a>(fields: impl Iterator<Item = &'a [u8]>) -> Self {
        let names = fields
            .map(|field| {
                String::from_utf8_lossy(field)
                    .trim_start_matches('\u{feff}')
                    .trim()
                    .to_owned()
            })
            .collect();
        Self { names }
    }

    /// The index of the first column named one of `spellings`.
    pub fn find(&self, spellings: &[&str]) -> Option<usize> {
        spellings
            .iter()
            .find_map(|s| self.names.iter().position(|n| n == s))
    }

    /// Like [`Header::find`], but a missing column is an error naming the file and the header.
    pub fn require(&self, path: &Path, spellings: &[&str]) -> Result<usize, SummaryError> {
        self.find(spellings)
            .ok_or_else(|| SummaryError::MissingColumn {
                path: path.to_path_buf(),
                missing: spellings
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(" or "),
                header: self.summary(),
            })
    }

    /// The first names of the header, and how many there are when there are more.
    fn summary(&self) -> String {
        const SHOWN: usize = 12;
        if self.names.len() <= SHOWN {
            return self.names.join(",");
        }
        format!(
            "{},… ({} columns)",
            self.names[..SHOWN].join(","),
            self.names.len()
        )
    }

    /// An error unless `record` has as many fields as the header.
    pub fn check_len(&self, path: &Path, record: &Record<'_>) -> Result<(), SummaryError> {
        if record.len() == self.names.len() {
            return Ok(());
        }
        Err(SummaryError::Ragged {
            path: path.to_path_buf(),
            line: record.line(),
            fields: record.len(),
            expected: self.names.len(),
        })
    }

    /// Whether `record` has as many fields as the header: a row that does not is recorded in
    /// `skipped` and left out (`Ok(false)`), up to [`MAX_SKIPPED`] of them; one more is the
    /// error of [`Header::check_len`] (the file is broken, not one row).
    pub fn keep(
        &self,
        path: &Path,
        record: &Record<'_>,
        skipped: &mut Vec<SkippedRow>,
    ) -> Result<bool, SummaryError> {
        if record.len() == self.names.len() {
            return Ok(true);
        }
        if skipped.len() >= MAX_SKIPPED {
            self.check_len(path, record)?;
        }
        skipped.push(SkippedRow {
            file: path.to_path_buf(),
            line: record.line(),
            fields: record.len(),
            expected: self.names.len(),
        });
        Ok(false)
    }

    /// The name of column `index`.
    pub fn name(&self, index: usize) -> &str {
        self.names.get(index).map_or("", String::as_str)
    }
}

/// A field as text: torch_npu appends a TAB to timestamps and may write CRLF, so blanks around
/// the value are dropped.
pub fn text(field: &[u8]) -> &str {
    std::str::from_utf8(field.trim_ascii()).unwrap_or("")
}

/// The bytes of [`text`]`(field)`, without a UTF-8 validation for ASCII.
#[inline]
pub fn text_bytes(field: &[u8]) -> &[u8] {
    let trimmed = field.trim_ascii();
    if trimmed.is_ascii() {
        trimmed
    } else {
        text(trimmed).as_bytes()
    }
}

/// The bytes of a field read as a kernel name: invalid UTF-8 replaced, then surrounding
/// whitespace (`str::trim`) removed; borrowed for ASCII.
#[inline]
pub fn name_key(field: &[u8]) -> Cow<'_, [u8]> {
    if field.is_ascii() {
        // The ASCII characters `char::is_whitespace` accepts.
        let blank = |b: &u8| matches!(b, b'\t'..=b'\r' | b' ');
        let start = field.iter().position(|b| !blank(b)).unwrap_or(field.len());
        let end = field
            .iter()
            .rposition(|b| !blank(b))
            .map_or(start, |i| i + 1);
        return Cow::Borrowed(&field[start..end]);
    }
    match String::from_utf8_lossy(field) {
        Cow::Borrowed(text) => Cow::Borrowed(text.trim().as_bytes()),
        Cow::Owned(text) => Cow::Owned(text.trim().as_bytes().to_vec()),
    }
}

/// A numeric field: `None` when empty or `N/A`, `Err(())` when it is something else.
#[inline]
#[allow(
    clippy::result_unit_err,
    reason = "the caller names the file, line and column (`bad_number`)"
)]
pub fn number(field: &[u8]) -> Result<Option<f64>, ()> {
    if let Some(value) = decimal::short_decimal(field) {
        return Ok(Some(value));
    }
    other_number(field)
}

/// [`number`] of a field that is not a short decimal.
fn other_number(field: &[u8]) -> Result<Option<f64>, ()> {
    match text(field) {
        "" | "N/A" | "NA" | "nan" | "NaN" => Ok(None),
        t => decimal::parse_f64(t.as_bytes()).map(Some).ok_or(()),
    }
}

/// Opens a CSV file for streaming from byte `offset`, with flexible record lengths (checked
/// per field) and records of at most [`MAX_RECORD_BYTES`].
pub fn open(path: &Path, offset: u64) -> Result<CsvRows<File>, SummaryError> {
    let io = |source| SummaryError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = input::open(path, Input::Csv)?;
    if offset > 0 {
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
    }
    Ok(CsvRows::new(
        file,
        CsvEngine::Simd,
        MAX_RECORD_BYTES as usize,
    ))
}

/// The next record of a CSV file opened with [`open`].
pub fn next<'a>(
    rows: &'a mut CsvRows<File>,
    path: &Path,
) -> Result<Option<Record<'a>>, SummaryError> {
    rows.next_record().map_err(|source| csv_error(path, source))
}

/// [`next`] splitting only the fields at `columns` (see [`CsvRows::next_record_columns`]).
pub fn next_columns<'a>(
    rows: &'a mut CsvRows<File>,
    path: &Path,
    columns: &[usize],
) -> Result<Option<Record<'a>>, SummaryError> {
    rows.next_record_columns(columns)
        .map_err(|source| csv_error(path, source))
}

fn csv_error(path: &Path, source: npuprof_scan::csv_rows::CsvError) -> SummaryError {
    SummaryError::Csv {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads the header record of a CSV file opened with [`open`].
pub fn read_header(rows: &mut CsvRows<File>, path: &Path) -> Result<Header, SummaryError> {
    match next(rows, path)? {
        Some(record) => Ok(Header::new(record.iter())),
        None => Err(SummaryError::MissingColumn {
            path: path.to_path_buf(),
            missing: "header".to_owned(),
            header: String::new(),
        }),
    }
}

/// The error for `field`, at column `column`, that must be a number.
pub fn bad_number(
    path: &Path,
    record: &Record<'_>,
    header: &Header,
    column: usize,
    field: &[u8],
) -> SummaryError {
    SummaryError::BadNumber {
        path: path.to_path_buf(),
        line: record.line(),
        column: header.name(column).to_owned(),
        value: text(field).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The fast paths give what the simple reading gives: `str::parse` for numbers,
        /// `from_utf8_lossy` then `str::trim` for names, `from_utf8` of the trimmed bytes for
        /// text.
        #[test]
        fn fast_paths_agree_with_the_simple_reading(
            digits in "[0-9]{0,22}(\\.[0-9]{0,22})?",
            bytes in prop::collection::vec(
                prop::sample::select(&b"ab.09-+eE \t\r\n\x0b\x0c\x1c\xc2\xa0\x85\xe3\x80\x80\xff"[..]),
                0..24,
            ),
        ) {
            for field in [digits.as_bytes(), &bytes] {
                if let Ok(Some(value)) = number(field) {
                    let text = std::str::from_utf8(field.trim_ascii()).unwrap_or_default();
                    prop_assert_eq!(Some(value), text.parse::<f64>().ok());
                }
                let name = String::from_utf8_lossy(field);
                prop_assert_eq!(&*name_key(field), name.trim().as_bytes());
                prop_assert_eq!(text_bytes(field), text(field).as_bytes());
            }
        }
    }

    /// The values are `decimal::parse_f64`'s (tested there); here: what a field adds to it.
    #[test]
    fn numbers_parse_as_str_parse_and_missing_values_are_none() {
        for text in ["53.741", "-2.5", "1736408883704643.212"] {
            let want = text.parse::<f64>().ok();
            assert_eq!(number(text.as_bytes()).ok().flatten(), want, "{text}");
        }
        for other in ["1e5", "+1", "N/A", "", " 7\t", " 0.5 ", "1.2.3", "-", "x"] {
            let want = match other.trim() {
                "" | "N/A" => Ok(None),
                t => t.parse::<f64>().map(Some).map_err(|_| ()),
            };
            assert_eq!(number(other.as_bytes()), want, "{other}");
        }
    }
}
