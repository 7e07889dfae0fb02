//! Findings for the databases of a db export.

use std::path::Path;

use super::file_findings::{file_problem, special_contents};
use super::{Ctx, disp};
use crate::finding::{Code, Evidence, Finding};
use npuprof_runs::db::{self, DbKind, DbProblem};
use npuprof_runs::probe::{self, Contents};

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
