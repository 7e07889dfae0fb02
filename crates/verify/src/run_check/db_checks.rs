//! Findings for the databases of a db export.

use std::path::Path;

use super::file_findings::{file_problem, special_contents};
use super::{Ctx, disp};
use crate::finding::{Code, Evidence, Finding};
use crate::report::StepsSummary;
use npuprof_runs::db::{self, DbKind, DbProblem};
use npuprof_runs::probe::{self, Contents};
use npuprof_schedule::Schedule;

/// Checks every `*.db` of the export in `ASCEND_PROFILER_OUTPUT/`: one finding per database.
pub(super) fn check_databases(ctx: &mut Ctx<'_>, out_dir: &Path, files: &[String]) {
    for (name, kind) in files.iter().filter_map(|n| DbKind::of(n).map(|k| (n, k))) {
        let path = out_dir.join(name);
        let opened = match probe::open_regular(&path) {
            Ok(o) => o,
            Err(problem) => {
                file_problem(ctx, &path, &problem);
                continue;
            }
        };
        if opened.contents != Contents::Data {
            special_contents(ctx, &path, opened.contents, Code::FileEmpty);
            continue;
        }
        if let Some(problem) = db::check(&path, &opened.head, opened.len, kind) {
            db_finding(ctx, &path, &problem);
        }
    }
}

/// The profiler database of the export (`ascend_pytorch_profiler*.db`), by name.
fn profiler_db(files: &[String]) -> Option<&String> {
    files
        .iter()
        .find(|n| DbKind::of(n) == Some(DbKind::Profiler))
}

/// The step ids of the export's profiler database (`STEP_TIME`), empty without one.
pub(super) fn step_ids(out_dir: &Path, files: &[String]) -> Vec<u64> {
    profiler_db(files)
        .and_then(|name| db::step_ids(&out_dir.join(name)))
        .unwrap_or_default()
}

/// A db export's steps against the schedule: the steps it records and has not, and the steps
/// it has and the schedule does not record.
pub(super) fn db_step_findings(
    ctx: &mut Ctx<'_>,
    out_dir: &Path,
    files: &[String],
    schedule: &Schedule,
    steps: &StepsSummary,
) {
    let (Some(expected), Some(name)) = (&steps.expected, profiler_db(files)) else {
        return;
    };
    if steps.db.is_empty() {
        return;
    }
    let path = out_dir.join(name);
    let missing: Vec<u64> = expected
        .iter()
        .copied()
        .filter(|s| !steps.db.contains(s))
        .collect();
    let extra: Vec<u64> = steps
        .db
        .iter()
        .copied()
        .filter(|s| !expected.contains(s))
        .collect();
    let list = |steps: &[u64]| {
        steps
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let schedule = super::describe_schedule(schedule);
    if !missing.is_empty() {
        ctx.push(Finding::new(
            Code::StepsMissing,
            format!(
                "recorded step(s) {} (schedule {schedule}) are not in {name}'s STEP_TIME (step ids found: {})",
                list(&missing),
                list(&steps.db)
            ),
            Evidence::path(disp(&path)),
            "make the run last at least skip_first + repeat*(wait+warmup+active) + 1 steps (npuprof plan shows the budget), then re-run",
        ));
    }
    if !extra.is_empty() {
        ctx.push(Finding::new(
            Code::StepsUnexpected,
            format!(
                "{name}'s STEP_TIME has step(s) {} that the schedule {schedule} does not record",
                list(&extra)
            ),
            Evidence::path(disp(&path)),
            "check the schedule passed to the profiler against the one expected (`npuprof plan`)",
        ));
    }
}

fn db_finding(ctx: &mut Ctx<'_>, path: &Path, problem: &DbProblem) {
    let p = disp(path);
    let reparse = ctx.reparse();
    let (code, message) = match problem {
        DbProblem::NotSqlite => (
            Code::DbInvalid,
            "is not an SQLite database (no `SQLite format 3` header)".to_owned(),
        ),
        DbProblem::Truncated { expected, actual } => (
            Code::DbInvalid,
            format!(
                "is cut short: {actual} bytes, but its header promises {expected}: the writer was killed or the disk filled up"
            ),
        ),
        DbProblem::Unopenable(e) => (Code::DbInvalid, format!("cannot be read by SQLite: {e}")),
        DbProblem::TablesMissing(t) => (
            Code::DbTablesMissing,
            format!(
                "lacks the table(s) {} that every parsed run has",
                t.join(", ")
            ),
        ),
        DbProblem::TablesEmpty(t) => (
            Code::DbTablesEmpty,
            format!(
                "has no rows in {}: nothing was recorded or the export failed",
                t.join(", ")
            ),
        ),
    };
    ctx.push(Finding::new(
        code,
        format!(
            "{} {message}",
            path.file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        ),
        Evidence::path(p),
        format!(
            "check the run's logs for DbParser failures and free space, then re-parse: {reparse}"
        ),
    ));
}
