//! Linting paths: files as given, directories walked (respecting ignore files), `*.py` only.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use crate::autofix::{FixError, Fixed, fix_source};
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
    /// A file's fixes were refused.
    #[error(transparent)]
    Fix(#[from] FixError),
}

impl npuprof_severity::Classify for LintError {
    fn classify(&self) -> Option<npuprof_severity::Classified> {
        use npuprof_severity::{Classified, ErrorCode};
        Some(Classified::new(match self {
            LintError::Missing(_) => ErrorCode::NotFound,
            LintError::Read { .. } | LintError::Walk(_) => ErrorCode::Io,
            LintError::Fix(_) => ErrorCode::Refused,
        }))
    }
}

/// The version of the `--json` report.
pub const SCHEMA_VERSION: u32 = 1;

/// The result of linting a set of paths.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Every finding, sorted by path, line, column and code.
    pub findings: Vec<Finding>,
    /// How many Python files were read (files that never mention `profiler` count, but are not parsed).
    pub files_checked: usize,
}

/// The Python files under `paths`: directories are walked with `.gitignore` rules, `*.py`
/// only; files given explicitly are taken whatever their extension. Sorted, no duplicates.
pub fn python_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, LintError> {
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
    Ok(files)
}

/// Lints files and directories (see [`python_files`]).
pub fn lint_paths(paths: &[PathBuf]) -> Result<Report, LintError> {
    let files = python_files(paths)?;
    let per_file: Vec<Vec<Finding>> = files
        .par_iter()
        .map(|file| lint_file(file))
        .collect::<Result<_, _>>()?;
    let mut report = Report {
        schema_version: SCHEMA_VERSION,
        findings: per_file.into_iter().flatten().collect(),
        files_checked: files.len(),
    };
    sort_findings(&mut report.findings);
    Ok(report)
}

fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        (&a.path, a.line, a.column, a.code).cmp(&(&b.path, b.line, b.column, b.code))
    });
}

/// One file's mechanical fixes.
#[derive(Debug, Clone)]
pub struct FileFix {
    /// The file.
    pub path: PathBuf,
    /// Its text before the fixes.
    pub original: String,
    /// The fixed text, what was fixed and what remains.
    pub fixed: Fixed,
}

/// Computes the mechanical fixes of every file under `paths` (nothing is written) and the
/// report of what remains after them.
pub fn fix_paths(paths: &[PathBuf]) -> Result<(Vec<FileFix>, Report), LintError> {
    let files = python_files(paths)?;
    let mut fixes = Vec::new();
    let mut findings = Vec::new();
    for file in &files {
        let bytes = read(file)?;
        if memchr::memmem::find(&bytes, b"profiler").is_none() {
            continue;
        }
        let original = String::from_utf8_lossy(&bytes).into_owned();
        let fixed = fix_source(&file.display().to_string(), &original)?;
        findings.extend(fixed.remaining.iter().cloned());
        if !fixed.applied.is_empty() {
            fixes.push(FileFix {
                path: file.clone(),
                original,
                fixed,
            });
        }
    }
    sort_findings(&mut findings);
    let report = Report {
        schema_version: SCHEMA_VERSION,
        findings,
        files_checked: files.len(),
    };
    Ok((fixes, report))
}

fn read(path: &Path) -> Result<Vec<u8>, LintError> {
    std::fs::read(path).map_err(|source| LintError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Lints one file; files that never mention `profiler` are skipped without parsing.
fn lint_file(path: &Path) -> Result<Vec<Finding>, LintError> {
    let bytes = read(path)?;
    if memchr::memmem::find(&bytes, b"profiler").is_none() {
        return Ok(Vec::new());
    }
    let source = String::from_utf8_lossy(&bytes);
    Ok(crate::lint_source(&path.display().to_string(), &source))
}
