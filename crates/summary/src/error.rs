//! Errors that stop a summary or a comparison (exit code 2 in the CLI).

use std::path::PathBuf;

use npuprof_runs::VerifyError;

/// Why a run could not be summarised.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// The path is missing, is a file, or holds no run directory.
    #[error(transparent)]
    Discover(#[from] VerifyError),
    /// A file could not be opened or read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file is not a regular file, or is larger than npuprof reads of its kind.
    #[error("{path}: {reason}")]
    Unusable {
        /// The file.
        path: PathBuf,
        /// What it is, or how large.
        reason: String,
    },
    /// A CSV file could not be read, or holds a record too long to be one (an unterminated
    /// quote, binary data).
    #[error("{path}: malformed CSV: {source}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: npuprof_scan::csv_rows::CsvError,
    },
    /// A CSV file lacks a column the summary cannot do without.
    #[error("{path}: required column {missing} is missing (the header has: {header})")]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The missing column, with its accepted spellings.
        missing: String,
        /// The header found, comma-separated.
        header: String,
    },
    /// A value that must be a number is not one.
    #[error("{path}: line {line}: column `{column}` is not a number: {value:?}")]
    BadNumber {
        /// The file.
        path: PathBuf,
        /// 1-based line of the record.
        line: u64,
        /// The column name.
        column: String,
        /// The value found.
        value: String,
    },
    /// A record has more or fewer fields than the header (a cut or malformed file).
    #[error(
        "{path}: line {line} has {fields} fields, the header has {expected} (a cut or malformed file: run `npuprof verify` on the run)"
    )]
    Ragged {
        /// The file.
        path: PathBuf,
        /// 1-based line of the record.
        line: u64,
        /// Fields in the record.
        fields: usize,
        /// Fields in the header.
        expected: usize,
    },
    /// `communication.json` is not the JSON object torch_npu writes.
    #[error("{path}: not a torch_npu communication.json: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
    /// A database of the db export cannot be opened or queried, or holds a value that must be
    /// a number and is not one.
    #[error("{path}: cannot read the db export: {reason}")]
    Db {
        /// The database.
        path: PathBuf,
        /// SQLite's message, or what is wrong.
        reason: String,
    },
    /// `--phase`/`--rank` left no run directory.
    #[error("{path}: {selection}: the profile has {available}")]
    NothingSelected {
        /// The summarised path.
        path: PathBuf,
        /// What was asked for and is not there, e.g. ``no phase `decod` ``, `no rank 5 in phase decode`.
        selection: String,
        /// What there is, e.g. `prefill, decode` or `rank 0, 1`.
        available: String,
    },
}

impl npuprof_severity::Classify for SummaryError {
    /// `None` for a read error: its IO cause decides.
    fn classify(&self) -> Option<npuprof_severity::Classified> {
        use npuprof_severity::{Classified, ErrorCode};
        match self {
            SummaryError::Discover(err) => err.classify(),
            SummaryError::Io { .. } => None,
            SummaryError::Csv { .. }
            | SummaryError::Unusable { .. }
            | SummaryError::MissingColumn { .. }
            | SummaryError::BadNumber { .. }
            | SummaryError::Ragged { .. }
            | SummaryError::Json { .. }
            | SummaryError::Db { .. } => Some(Classified::hinted(
                ErrorCode::InvalidInput,
                "`npuprof verify` on the run says what is wrong with its output",
            )),
            SummaryError::NothingSelected { .. } => Some(Classified::hinted(
                ErrorCode::NotFound,
                "give --phase and --rank from what the profile has (listed in the message)",
            )),
        }
    }
}
