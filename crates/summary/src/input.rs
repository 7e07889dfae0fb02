//! Opening a run's files: through verify's probe (a FIFO, socket or device is refused without
//! blocking, a path swapped between the check and the open is caught) and under the size cap
//! torch_npu itself applies, so that no file makes a summary hang or read without bound.

use std::fs::File;
use std::path::Path;

use npuprof_runs::probe::{self, FileProblem};
use npuprof_runs::probe::{CSV_CAP, JSON_CAP, SMALL_JSON_CAP};

use crate::error::SummaryError;

/// What kind of file is opened, for its size cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Input {
    /// A CSV of the text export (streamed).
    Csv,
    /// `communication.json` (streamed).
    Json,
    /// `profiler_info*.json` (read whole).
    SmallJson,
    /// A database of the db export (SQLite reads only the pages a query needs: no cap).
    Db,
}

impl Input {
    fn cap(self) -> u64 {
        match self {
            Input::Csv => CSV_CAP,
            Input::Json => JSON_CAP,
            Input::SmallJson => SMALL_JSON_CAP,
            Input::Db => u64::MAX,
        }
    }
}

/// Why a file of the run cannot be used, in words.
fn problem(problem: &FileProblem) -> String {
    problem.describe()
}

fn unusable(path: &Path, reason: String) -> SummaryError {
    SummaryError::Unusable {
        path: path.to_path_buf(),
        reason,
    }
}

fn too_large(len: u64, kind: Input) -> String {
    format!(
        "it is {len} bytes, over the {} bytes npuprof reads of such a file",
        kind.cap()
    )
}

/// Opens the regular file `path` of the given kind for streaming, refusing one over its cap.
pub(crate) fn open(path: &Path, kind: Input) -> Result<File, SummaryError> {
    let opened = probe::open_regular(path).map_err(|p| unusable(path, problem(&p)))?;
    if opened.len > kind.cap() {
        return Err(unusable(path, too_large(opened.len, kind)));
    }
    Ok(opened.file)
}

/// Reads the small regular file `path` whole, refusing one over its cap; `Err`: why not.
pub(crate) fn read(path: &Path, kind: Input) -> Result<Vec<u8>, String> {
    match probe::read_capped(path, kind.cap()) {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(len)) => Err(too_large(len, kind)),
        Err(p) => Err(problem(&p)),
    }
}
