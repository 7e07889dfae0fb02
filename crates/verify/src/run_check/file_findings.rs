//! Findings for files that cannot be used as data: missing vs unreadable, not a regular file,
//! empty, a git-lfs pointer, a CSV that is not one.

use std::path::Path;

use super::{Ctx, disp};
use crate::finding::{Code, Evidence, Finding};
use npuprof_runs::probe::{Contents, FileKind, FileProblem};
use npuprof_scan::kernel_csv::{Corruption, MAX_COLUMNS, MAX_RECORD_BYTES};

/// One finding for a file (or directory) that could not be opened.
pub(super) fn file_problem(ctx: &mut Ctx<'_>, path: &Path, problem: &FileProblem) {
    ctx.push(problem_finding(path, problem));
}

/// The finding for a [`FileProblem`] (shared with the cross-run checks).
pub fn problem_finding(path: &Path, problem: &FileProblem) -> Finding {
    let p = disp(path);
    match problem {
        FileProblem::Missing => Finding::new(
            Code::ArtifactMissing,
            format!("{p} disappeared while it was being verified"),
            Evidence::path(p),
            "verify again once nothing writes to the run directory",
        ),
        FileProblem::NotRegular(kind) => Finding::new(
            Code::FileNotRegular,
            format!(
                "{} is {}, not a regular file: skipped without reading ({})",
                path.file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default(),
                kind.describe(),
                if *kind == FileKind::LinkOutside {
                    "its contents are not this run's, and no report quotes them"
                } else {
                    "reading it could block forever"
                }
            ),
            Evidence::path(p.clone()),
            format!(
                "replace it with the real file (ls -l {p}); re-parse the run if it was produced by a tool"
            ),
        ),
        FileProblem::Unreadable { message, .. } => Finding::new(
            Code::FileUnreadable,
            format!("exists but cannot be read: {message} (not missing: its contents are unknown)"),
            Evidence::path(p.clone()),
            format!(
                "check permissions and ownership (ls -ld {p}); run verify as a user who can read it"
            ),
        ),
    }
}

/// One finding for a file whose contents are not data: empty (reported with `empty_code`) or a
/// git-lfs pointer.
pub(super) fn special_contents(
    ctx: &mut Ctx<'_>,
    path: &Path,
    contents: Contents,
    empty_code: Code,
) {
    let p = disp(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let f = match contents {
        Contents::LfsPointer => Finding::new(
            Code::FileLfsPointer,
            format!(
                "{name} is a git-lfs pointer file, not the data: the real file was never fetched"
            ),
            Evidence::path(p.clone()),
            format!(
                "fetch the real file: git lfs pull --include \"{p}\" (in the repository that holds it)"
            ),
        ),
        Contents::Empty | Contents::Data => Finding::new(
            empty_code,
            format!("{name} is empty (0 bytes): its writer produced nothing"),
            Evidence::path(p),
            format!(
                "check the run's logs for `run failed` and free space (df -h {}); then re-parse: {}",
                ctx.dir,
                ctx.reparse()
            ),
        ),
    };
    ctx.push(f);
}

/// One finding for a CSV whose scan stopped on a corrupt record.
pub(super) fn csv_corrupt(ctx: &mut Ctx<'_>, path: &Path, c: Corruption) {
    let p = disp(path);
    let (message, evidence) = match c {
        Corruption::RecordTooLarge { byte, line } => (
            format!(
                "a record starting at line {line} runs past {} KiB without ending: NUL or binary bytes, a missing line ending or a quote that never closes; the file is corrupt and was read only up to there",
                MAX_RECORD_BYTES >> 10
            ),
            Evidence {
                path: Some(p),
                line: Some(line),
                byte_offset: Some(byte),
            },
        ),
        Corruption::TooManyColumns(n) => (
            format!("the header has {n} columns (more than {MAX_COLUMNS}): not a torch_npu CSV"),
            Evidence::line(p, 1),
        ),
    };
    ctx.push(Finding::new(
        Code::CsvCorrupt,
        message,
        evidence,
        format!(
            "check the disk and free space, then re-parse: {}",
            ctx.reparse()
        ),
    ));
}
