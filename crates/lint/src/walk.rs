//! Linting paths: files as given, directories walked (respecting ignore files), `*.py` only.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use crate::finding::Finding;

/// Why linting could not run.
#[derive(Debug, thiserror::Error)]
pub enum LintError {
    /// A path given on the command line does not exist.
    #[error("{}: no such file or directory", .0.display())]
    Missing(PathBuf),
    /// A file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// A directory could not be walked.
    #[error("cannot walk a directory: {0}")]
    Walk(#[from] ignore::Error),
}

/// The result of linting a set of paths.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Every finding, sorted by path, line, column and code.
    pub findings: Vec<Finding>,
    /// How many Python files were read (files that never mention `profiler` count, but are not parsed).
    pub files_checked: usize,
}

/// Lints files and directories. Directories are walked with `.gitignore` rules, `*.py` only;
/// files given explicitly are linted whatever their extension.
pub fn lint_paths(paths: &[PathBuf]) -> Result<Report, LintError> {
    let mut files = Vec::new();
    for path in paths {
        if !path.exists() {
            return Err(LintError::Missing(path.clone()));
        }
        if path.is_dir() {
            for entry in ignore::WalkBuilder::new(path).build() {
                let entry = entry?;
                let file = entry.path();
                if entry.file_type().is_some_and(|t| t.is_file())
                    && file.extension().is_some_and(|e| e == "py")
                {
                    files.push(file.to_path_buf());
                }
            }
        } else {
            files.push(path.clone());
        }
    }
    files.sort();
    files.dedup();
    let per_file: Vec<Vec<Finding>> = files
        .par_iter()
        .map(|file| lint_file(file))
        .collect::<Result<_, _>>()?;
    let mut report = Report {
        findings: per_file.into_iter().flatten().collect(),
        files_checked: files.len(),
    };
    report.findings.sort_by(|a, b| {
        (&a.path, a.line, a.column, a.code).cmp(&(&b.path, b.line, b.column, b.code))
    });
    Ok(report)
}

/// Lints one file; files that never mention `profiler` are skipped without parsing.
fn lint_file(path: &Path) -> Result<Vec<Finding>, LintError> {
    let bytes = std::fs::read(path).map_err(|source| LintError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if memchr::memmem::find(&bytes, b"profiler").is_none() {
        return Ok(Vec::new());
    }
    let source = String::from_utf8_lossy(&bytes);
    Ok(crate::lint_source(&path.display().to_string(), &source))
}
