//! The pipeline `patch` and `collect` share, request → run → report: the target resolved once
//! inside the transaction, the files read there, the edits computed on exactly those bytes,
//! every changed file written at once (or none).

use std::path::Path;

use npuprof_journal::Transaction;
use npuprof_patch::Edits;
use npuprof_patch::diff::unified_diff;
use npuprof_patch::plan::Plan;
use npuprof_patch::target::{PatchRequest, Sources, files, patch_target};
use npuprof_repository::{Overrides, Target, TargetError};
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
    /// The unified diff from the file as it is now (empty when it does not change).
    pub diff: String,
    /// One line per change.
    pub changes: Vec<String>,
    /// The byte-range edits of the file as `revert` restores it (its original), sorted; empty
    /// when the file already reads as patched.
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
    pub family: npuprof_repository::Family,
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
    /// The changed files that other models' runs execute too (the shared engine's
    /// `profiler_context.py`): until `npuprof revert` restores them, those models record with
    /// this window too.
    pub shared: Vec<SharedFile>,
}

/// A changed file that other models of the repository run too.
#[derive(Debug, Serialize)]
pub struct SharedFile {
    /// Repository-relative path.
    pub path: String,
    /// The other models whose runs execute it, sorted.
    pub models: Vec<String>,
}

/// Version of `patch --json`.
pub const PATCH_SCHEMA_VERSION: u32 = 2;

/// The journal's name of the command that patches targets.
pub(crate) const COMMAND: &str = "patch";

/// What to patch: the target to resolve and the window to set in it. `collect` is this
/// request with a launch on top ([`crate::collect::CollectRequest`]).
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The repository, model, run config and run mode.
    pub target: npuprof_repository::Request<'a>,
    /// The phases, the window and the token budget.
    pub window: PatchRequest,
}

/// What [`run`] resolved and did.
#[derive(Debug)]
pub struct Patched {
    /// The target, resolved inside the transaction (from the true originals of an earlier
    /// patch).
    pub target: Target,
    /// The window as settled (the caller may have asked the user).
    pub window: PatchRequest,
    /// The report.
    pub report: PatchReport,
}

/// The pipeline `patch` and `collect` share: opens the transaction (locked to write), resolves
/// the target once inside it (from the true originals when the repository was patched
/// before, so the new window replaces the earlier one and a phase switched off before can be
/// switched on again), lets `settle` settle the window on that target (ask the user, who then
/// answers under the lock), computes the edits on exactly the bytes read and, in
/// [`Mode::Write`], writes every changed file through the journal at once. The diffs and
/// `changed` compare with the files as they are now. A repository with no built-in profiler
/// to patch gets route's `inject` command in the error ([`WorkflowError::NoProfiler`]).
pub fn run<E>(
    request: &Request<'_>,
    mode: Mode,
    settle: impl FnOnce(&Target, &mut PatchRequest) -> Result<(), E>,
) -> Result<Patched, E>
where
    E: From<WorkflowError>,
{
    let tx = open(request.target.repo, mode)?;
    let originals = originals(&tx)?;
    let resolved = if originals.is_empty() {
        npuprof_repository::resolve(&request.target)
    } else {
        npuprof_repository::resolve_over(&request.target, &originals)
    };
    let target = resolved.map_err(|err| without_profiler(request.target.repo, err))?;
    let mut window = request.window;
    settle(&target, &mut window)?;
    let report = patch_in(tx, &target, &originals, &window, mode)?;
    Ok(Patched {
        target,
        window,
        report,
    })
}

/// A resolution error, with route's `inject` command when the repository has no built-in
/// profiler at all (route: path B): patching it cannot work, injecting a harness can.
fn without_profiler(repo: &Path, err: TargetError) -> WorkflowError {
    match npuprof_route::scan(repo) {
        Ok(report) if report.route == npuprof_route::Route::Inject => {
            WorkflowError::NoProfiler(Box::new(crate::error::NoProfiler {
                next: report
                    .next
                    .command
                    .map_or_else(|| report.next.note.clone(), |c| format!("run `{c}`")),
                source: err,
            }))
        }
        _ => err.into(),
    }
}

/// The transaction of `mode`: locked to write, a preview for a dry run.
fn open(repo: &Path, mode: Mode) -> Result<Transaction, WorkflowError> {
    Ok(match mode {
        Mode::Write => Transaction::begin(repo, COMMAND)?,
        Mode::DryRun => Transaction::preview(repo, COMMAND)?,
    })
}

/// The patch of `base` (resolved from `originals` when there are any) inside `tx`.
fn patch_in(
    mut tx: Transaction,
    base: &Target,
    originals: &Overrides,
    request: &PatchRequest,
    mode: Mode,
) -> Result<PatchReport, WorkflowError> {
    let repo = &base.repo;
    let (mut sources, mut current) = (Sources::new(), Sources::new());
    for rel in files(base) {
        let now = read_text(&tx, Path::new(&rel))?;
        let text = originals.get(&rel).cloned().unwrap_or_else(|| now.clone());
        sources.insert(rel.clone(), text);
        current.insert(rel, now);
    }
    let mut patch = patch_target(base, &sources, request).map_err(|e| WorkflowError::Patch {
        path: e.path,
        refusal: e.error,
    })?;
    let mut reports = Vec::new();
    let mut writes = Vec::new();
    for file in patch.files {
        let (before, now) = (&sources[&file.path], &current[&file.path]);
        let new = file.edits.apply(before);
        let unchanged = new == *now;
        reports.push(FileReport {
            diff: unified_diff(&file.path, now, &new),
            changes: if unchanged { Vec::new() } else { file.changes },
            edits: if unchanged {
                Vec::new()
            } else {
                edit_reports(before, &file.edits)
            },
            path: file.path.clone(),
        });
        if !unchanged {
            writes.push((file.path, new));
        }
    }
    if !originals.is_empty() && !writes.is_empty() {
        patch.warnings.insert(
            0,
            "the earlier patch is replaced: the changes listed are from the original files (what `npuprof revert` restores), the diff from the files as they are now".to_owned(),
        );
    }
    let shared = shared_files(
        repo,
        &base.model,
        writes.iter().map(|(path, _)| path.as_str()),
    );
    let changed = !writes.is_empty();
    let written = mode == Mode::Write && changed;
    if written {
        for (path, new) in writes {
            tx.write_file(Path::new(&path), new.into_bytes())?;
        }
        tx.commit()?;
    }
    Ok(PatchReport {
        schema_version: PATCH_SCHEMA_VERSION,
        repo: repo.display().to_string(),
        model: base.model.clone(),
        family: base.family,
        files: reports,
        plan: patch.plan,
        changed,
        written,
        warnings: patch.warnings,
        shared,
    })
}

/// The changed `paths` that models other than `model` run too.
fn shared_files<'p>(
    repo: &Path,
    model: &str,
    paths: impl Iterator<Item = &'p str>,
) -> Vec<SharedFile> {
    paths
        .filter(|p| p.ends_with(".py"))
        .filter_map(|path| {
            let models: Vec<String> = npuprof_repository::models_running(repo, path)
                .into_iter()
                .filter(|m| m != model)
                .collect();
            (!models.is_empty()).then(|| SharedFile {
                path: path.to_owned(),
                models,
            })
        })
        .collect()
}

/// The true originals of the files earlier patches changed, as text, by `/`-separated path.
fn originals(tx: &Transaction) -> Result<Overrides, WorkflowError> {
    tx.originals(COMMAND)?
        .into_iter()
        .map(|(path, bytes)| {
            let text =
                String::from_utf8(bytes).map_err(|_| WorkflowError::NotUtf8(path.clone()))?;
            Ok((npuprof_paths::slash(&path), text))
        })
        .collect()
}

fn read_text(tx: &Transaction, rel: &Path) -> Result<String, WorkflowError> {
    String::from_utf8(tx.read(rel)?).map_err(|_| WorkflowError::NotUtf8(rel.to_path_buf()))
}

/// The edits of `text`, with their lines and the bytes they replace.
fn edit_reports(text: &str, edits: &Edits) -> Vec<EditReport> {
    edits
        .as_slice()
        .iter()
        .map(|e| EditReport {
            start: e.range.start,
            end: e.range.end,
            line: e.line_in(text),
            original: text[e.range.clone()].to_owned(),
            replacement: e.replacement.clone(),
        })
        .collect()
}
