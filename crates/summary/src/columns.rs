//! Finding CSV columns by name: header spellings vary across torch_npu and CANN versions, so
//! every column is looked up by its accepted names, never by position.

use std::path::Path;

use crate::error::SummaryError;

/// A CSV header with names trimmed (a UTF-8 BOM and surrounding blanks removed).
pub(crate) struct Header {
    names: Vec<String>,
}

impl Header {
    /// Reads the names of a CSV header record.
    pub(crate) fn new(record: &csv::ByteRecord) -> Self {
        let names = record
            .iter()
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
    pub(crate) fn find(&self, spellings: &[&str]) -> Option<usize> {
        spellings
            .iter()
            .find_map(|s| self.names.iter().position(|n| n == s))
    }

    /// Like [`Header::find`], but a missing column is an error naming the file and the header.
    pub(crate) fn require(&self, path: &Path, spellings: &[&str]) -> Result<usize, SummaryError> {
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
    pub(crate) fn check_len(
        &self,
        path: &Path,
        record: &csv::ByteRecord,
    ) -> Result<(), SummaryError> {
        if record.len() == self.names.len() {
            return Ok(());
        }
        Err(SummaryError::Ragged {
            path: path.to_path_buf(),
            line: record.position().map_or(0, |p| p.line()),
            fields: record.len(),
            expected: self.names.len(),
        })
    }

    /// The name of column `index`.
    pub(crate) fn name(&self, index: usize) -> &str {
        self.names.get(index).map_or("", String::as_str)
    }
}

/// A field as text: torch_npu appends a TAB to timestamps and may write CRLF, so blanks around
/// the value are dropped.
pub(crate) fn text(field: &[u8]) -> &str {
    std::str::from_utf8(field.trim_ascii()).unwrap_or("")
}

/// A numeric field: `None` when empty or `N/A`, `Err(())` when it is something else.
pub(crate) fn number(field: &[u8]) -> Result<Option<f64>, ()> {
    match text(field) {
        "" | "N/A" | "NA" | "nan" | "NaN" => Ok(None),
        t => t.parse::<f64>().map(Some).map_err(|_| ()),
    }
}

/// Opens a CSV file for streaming, with flexible record lengths (checked per field).
pub(crate) fn open(path: &Path) -> Result<csv::Reader<std::fs::File>, SummaryError> {
    let file = std::fs::File::open(path).map_err(|source| SummaryError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .buffer_capacity(1 << 20)
        .from_reader(file))
}

/// Reads the header record of a CSV file opened with [`open`].
pub(crate) fn read_header(
    reader: &mut csv::Reader<std::fs::File>,
    path: &Path,
) -> Result<Header, SummaryError> {
    let mut record = csv::ByteRecord::new();
    let found = reader
        .read_byte_record(&mut record)
        .map_err(|source| csv_error(path, source))?;
    if !found {
        return Err(SummaryError::MissingColumn {
            path: path.to_path_buf(),
            missing: "header".to_owned(),
            header: String::new(),
        });
    }
    Ok(Header::new(&record))
}

/// A CSV error with its file.
pub(crate) fn csv_error(path: &Path, source: csv::Error) -> SummaryError {
    SummaryError::Csv {
        path: path.to_path_buf(),
        source,
    }
}

/// The error for a field that must be a number.
pub(crate) fn bad_number(
    path: &Path,
    record: &csv::ByteRecord,
    header: &Header,
    index: usize,
) -> SummaryError {
    SummaryError::BadNumber {
        path: path.to_path_buf(),
        line: record.position().map_or(0, |p| p.line()),
        column: header.name(index).to_owned(),
        value: text(record.get(index).unwrap_or_default()).to_owned(),
    }
}
