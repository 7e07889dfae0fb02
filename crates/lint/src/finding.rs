//! Findings: one problem at one place, with its fix.

use npuprof_patch::Edit;
use serde::Serialize;

use crate::registry::{Code, Severity};

/// One problem found at one place in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The file, as given or as found under a given directory.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// The stable rule code.
    pub code: Code,
    /// The rule's severity.
    pub severity: Severity,
    /// What is wrong and what it does to the profile, with the resolved values.
    pub message: String,
    /// What to change.
    pub fix: String,
    /// The byte-range edits of the file that make the fix (`npuprof lint --fix`), when the
    /// fix is mechanical; empty otherwise.
    pub edits: Vec<Edit>,
}
