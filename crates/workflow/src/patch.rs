//! Applying a target's patch through the journal: the files read inside the transaction, the
//! edits computed on exactly those bytes, every changed file written at once (or none).

use std::path::Path;

use npuprof_journal::Transaction;
use npuprof_patch::Edits;
use npuprof_patch::diff::unified_diff;
use npuprof_patch::plan::Plan;
use npuprof_patch::target::{PatchRequest, Sources, files, patch_target};
use npuprof_target::Target;
use serde::Serialize;

use crate::WorkflowError;

/// Whether [`apply`] only computes (dry run) or also writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Compute the edits and the diff; change nothing.
    DryRun,
    /// Write the changed files through one journaled transaction.
    Write,
}

/// One edit, for `--json`.
#[derive(Debug, Serialize)]
pub struct EditReport {
    /// Byte offset where the replaced range starts (in the file as it was).
    pub start: usize,
    /// Byte offset where it ends (exclusive).
    pub end: usize,
    /// 1-based line of `start`.
    pub line: usize,
    /// The replaced text.
    pub original: String,
    /// The new text.
    pub replacement: String,
}

/// One file of the patch.
#[derive(Debug, Serialize)]
pub struct FileReport {
    /// Repository-relative path.
    pub path: String,
    /// The unified diff (empty when the file does not change).
    pub diff: String,
    /// One line per change.
    pub changes: Vec<String>,
    /// The byte-range edits, sorted.
    pub edits: Vec<EditReport>,
}

/// What a patch computed (and, in write mode, wrote): `patch --json`.
#[derive(Debug, Serialize)]
pub struct PatchReport {
    /// Version of this JSON schema.
    pub schema_version: u32,
    /// The canonical repository root.
    pub repo: String,
    /// The model.
    pub model: String,
    /// The profiling family (`shared-engine`, `legacy-runner`).
    pub family: npuprof_target::Family,
    /// Every file considered: the Python files, then the run config.
    pub files: Vec<FileReport>,
    /// The plan as it runs with the patched files.
    pub plan: Plan,
    /// Whether any file changes.
    pub changed: bool,
    /// Whether the changes were written (false for a dry run or when nothing changes).
    pub written: bool,
    /// Things to know (a phase that will not be captured, a small budget).
    pub warnings: Vec<String>,
}

/// Version of `patch --json`.
pub const PATCH_SCHEMA_VERSION: u32 = 2;

/// Computes the patch of a resolved target and, in [`Mode::Write`], applies it.
pub fn apply(
    target: &Target,
    request: &PatchRequest,
    mode: Mode,
) -> Result<PatchReport, WorkflowError> {
    let repo = &target.repo;
    let mut tx = match mode {
        Mode::Write => Transaction::begin(repo, "patch")?,
        Mode::DryRun => Transaction::preview(repo, "patch")?,
    };
    let mut sources = Sources::new();
    for rel in files(target) {
        sources.insert(rel.clone(), read_text(&tx, Path::new(&rel))?);
    }
    let patch = patch_target(target, &sources, request).map_err(|e| WorkflowError::Patch {
        path: e.path,
        refusal: e.error,
    })?;
    let reports: Vec<FileReport> = patch
        .files
        .iter()
        .map(|f| file_report(&f.path, &sources[&f.path], &f.edits, f.changes.clone()))
        .collect();
    let changed = reports.iter().any(|f| !f.edits.is_empty());
    let mut written = false;
    if mode == Mode::Write && changed {
        for file in patch.files.iter().filter(|f| !f.edits.is_empty()) {
            tx.write_file(
                Path::new(&file.path),
                file.edits.apply(&sources[&file.path]).into_bytes(),
            )?;
        }
        tx.commit()?;
        written = true;
    }
    Ok(PatchReport {
        schema_version: PATCH_SCHEMA_VERSION,
        repo: repo.display().to_string(),
        model: target.model.clone(),
        family: target.family,
        files: reports,
        plan: patch.plan,
        changed,
        written,
        warnings: patch.warnings,
    })
}

fn read_text(tx: &Transaction, rel: &Path) -> Result<String, WorkflowError> {
    String::from_utf8(tx.read(rel)?).map_err(|_| WorkflowError::NotUtf8(rel.to_path_buf()))
}

fn file_report(path: &str, text: &str, edits: &Edits, changes: Vec<String>) -> FileReport {
    let path = path.to_owned();
    let new = edits.apply(text);
    FileReport {
        diff: unified_diff(&path, text, &new),
        path,
        changes,
        edits: edits
            .as_slice()
            .iter()
            .map(|e| EditReport {
                start: e.range.start,
                end: e.range.end,
                line: e.line_in(text),
                original: text[e.range.clone()].to_owned(),
                replacement: e.replacement.clone(),
            })
            .collect(),
    }
}
