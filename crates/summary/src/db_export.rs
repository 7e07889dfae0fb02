//! The db export (`export_type=db`): the same numbers the text export gives, read from
//! `ascend_pytorch_profiler[_{rank}].db` and `analysis.db` with SQLite, read-only and
//! immutable (verify's [`open_read_only`]), when a run directory has no text export.
//!
//! What the text export writes, and where the db holds it:
//! - `kernel_details.csv`: one row per compute task (`TASK` joined to `COMPUTE_TASK_INFO`:
//!   `Name` = `name`, `Type` = `opType`, `Accelerator Core` = `taskType`, all ids into
//!   `STRING_IDS`; `Duration(us)` = `(endNs - startNs) / 1000`; the pipe ratios from
//!   `TASK_PMU_INFO`, one row per task and metric name) and one per communication operator
//!   (`COMMUNICATION_OP`: `opName`, `opType`, core `HCCL`), in start order;
//! - `step_trace_time.csv`: `analysis.db`'s `StepTraceTime`, the same columns in snake case;
//! - `communication.json`: `analysis.db`'s `CommAnalyzerTime`, one row per operator and step
//!   (times in ms).
//!
//! Rows are streamed from SQLite: memory is the summary's groups, not the rows.

use std::path::{Path, PathBuf};

use npuprof_verify::db::{DbKind, open_read_only};
use rusqlite::Connection;
use rusqlite::types::ValueRef;

use crate::columns;
use crate::comm::{Communication, TimeInfo};
use crate::error::SummaryError;
use crate::kernels::{KernelTable, Sums};
use crate::pipe::Pipe;
use crate::steps::Step;

/// The `Accelerator Core` the text export gives communication operators.
const COMMUNICATION_CORE: &str = "HCCL";

/// The vendor's per-category total in `CommAnalyzerTime`, left out as in `communication.json`.
const TOTAL_OP_INFO: &str = "Total Op Info";

/// The databases of a run's `ASCEND_PROFILER_OUTPUT/`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DbFiles {
    /// `ascend_pytorch_profiler[_{rank}].db` (the first by name when there are several).
    pub profiler: Option<PathBuf>,
    /// `analysis.db`.
    pub analysis: Option<PathBuf>,
}

impl DbFiles {
    /// The databases in `output` (none when it cannot be listed).
    pub fn find(output: &Path) -> Self {
        let mut names: Vec<(String, PathBuf)> = std::fs::read_dir(output)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        let first = |kind: DbKind| {
            names
                .iter()
                .find(|(name, _)| DbKind::of(name) == Some(kind))
                .map(|(_, path)| path.clone())
        };
        Self {
            profiler: first(DbKind::Profiler),
            analysis: first(DbKind::Analysis),
        }
    }
}

fn db_error(path: &Path, source: rusqlite::Error) -> SummaryError {
    SummaryError::Db {
        path: path.to_path_buf(),
        reason: source.to_string(),
    }
}

/// Opens `path` read-only after verify's probe (a FIFO or device is refused without blocking).
fn open(path: &Path) -> Result<Connection, SummaryError> {
    drop(crate::input::open(path, crate::input::Input::Db)?);
    open_read_only(path).map_err(|e| db_error(path, e))
}

fn has_table(conn: &Connection, path: &Path, table: &str) -> Result<bool, SummaryError> {
    conn.query_row(
        "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
        [table],
        |row| row.get(0),
    )
    .map_err(|e| db_error(path, e))
}

/// `MAX(CASE …)` of one pipe over its metric names (the text export's column spellings).
fn pipe_column(pipe: Pipe) -> String {
    let names: Vec<String> = pipe.spellings().iter().map(|s| format!("'{s}'")).collect();
    format!(
        "MAX(CASE WHEN s.value IN ({}) THEN p.value END) AS {}",
        names.join(", "),
        pipe.as_str()
    )
}

/// The SQL of the text export's kernel rows: start, duration (ns), name, type, core and the
/// pipe ratios in the order of [`Pipe::ALL`].
fn kernel_sql(pmu: bool, communication: bool) -> String {
    let pipes: Vec<&str> = Pipe::ALL.iter().map(|p| p.as_str()).collect();
    let (with, ratios, join) = if pmu {
        let columns: Vec<String> = Pipe::ALL.into_iter().map(pipe_column).collect();
        (
            format!(
                "WITH pmu AS (SELECT p.globalTaskId AS id, {} FROM TASK_PMU_INFO p \
                 JOIN STRING_IDS s ON s.id = p.name GROUP BY p.globalTaskId) ",
                columns.join(", ")
            ),
            pipes
                .iter()
                .map(|p| format!("pmu.{p}"))
                .collect::<Vec<_>>()
                .join(", "),
            "LEFT JOIN pmu ON pmu.id = t.globalTaskId",
        )
    } else {
        (String::new(), vec!["NULL"; 4].join(", "), "")
    };
    let mut sql = format!(
        "{with}SELECT t.startNs, t.endNs - t.startNs, n.value, o.value, k.value, {ratios} \
         FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId \
         LEFT JOIN STRING_IDS n ON n.id = c.name LEFT JOIN STRING_IDS o ON o.id = c.opType \
         LEFT JOIN STRING_IDS k ON k.id = c.taskType {join}"
    );
    if communication {
        sql.push_str(&format!(
            " UNION ALL SELECT c.startNs, c.endNs - c.startNs, n.value, o.value, \
             '{COMMUNICATION_CORE}', NULL, NULL, NULL, NULL FROM COMMUNICATION_OP c \
             LEFT JOIN STRING_IDS n ON n.id = c.opName LEFT JOIN STRING_IDS o ON o.id = c.opType"
        ));
    }
    sql.push_str(" ORDER BY 1, 3");
    sql
}

/// A text column of a row (`""` for NULL).
fn text<'r>(row: &'r rusqlite::Row<'_>, i: usize) -> rusqlite::Result<&'r [u8]> {
    Ok(match row.get_ref(i)? {
        ValueRef::Text(t) | ValueRef::Blob(t) => t,
        _ => b"",
    })
}

/// A numeric column of a row (`None` for NULL or text).
fn number(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<f64>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Integer(v) => Some(v as f64),
        ValueRef::Real(v) => Some(v),
        ValueRef::Text(t) => columns::number(t).ok().flatten(),
        _ => None,
    })
}

/// The kernels of a profiler database, grouped as `kernel_details.csv`'s would be.
pub fn kernel_table(path: &Path) -> Result<KernelTable, SummaryError> {
    let conn = open(path)?;
    let pmu = has_table(&conn, path, "TASK_PMU_INFO")?;
    let communication = has_table(&conn, path, "COMMUNICATION_OP")?;
    let mut statement = conn
        .prepare(&kernel_sql(pmu, communication))
        .map_err(|e| db_error(path, e))?;
    let mut rows = statement.query([]).map_err(|e| db_error(path, e))?;
    let mut sums = Sums::default();
    let mut has_metrics = false;
    while let Some(row) = rows.next().map_err(|e| db_error(path, e))? {
        let read = || -> rusqlite::Result<_> {
            let ns = number(row, 1)?.unwrap_or(0.0);
            let mut ratios = [0.0; 4];
            let mut any = false;
            for (i, ratio) in ratios.iter_mut().enumerate() {
                if let Some(value) = number(row, 5 + i)? {
                    *ratio = value;
                    any = true;
                }
            }
            Ok((ns / 1000.0, any.then_some(ratios)))
        };
        let (duration, ratios) = read().map_err(|e| db_error(path, e))?;
        let field = |i| text(row, i).map_err(|e| db_error(path, e));
        has_metrics |= ratios.is_some();
        let name = columns::name_key(field(2)?);
        sums.add(
            &name,
            columns::text_bytes(field(3)?),
            field(4)?,
            duration,
            ratios,
        );
    }
    Ok(sums.table(pmu && has_metrics))
}

/// The steps of an analysis database's `StepTraceTime` (none without the table).
pub fn steps(path: &Path) -> Result<Vec<Step>, SummaryError> {
    let conn = open(path)?;
    if !has_table(&conn, path, "StepTraceTime")? {
        return Ok(Vec::new());
    }
    let mut statement = conn
        .prepare(
            "SELECT step, computing, communication_not_overlapped, overlapped, communication, \
             free, bubble, preparing FROM StepTraceTime",
        )
        .map_err(|e| db_error(path, e))?;
    let mut rows = statement.query([]).map_err(|e| db_error(path, e))?;
    let mut steps = Vec::new();
    while let Some(row) = rows.next().map_err(|e| db_error(path, e))? {
        let read = || -> rusqlite::Result<Option<Step>> {
            let step = match row.get_ref(0)? {
                ValueRef::Integer(v) => u64::try_from(v).ok(),
                ValueRef::Text(t) => {
                    let digits = columns::text(t).trim_start_matches(|c: char| !c.is_ascii_digit());
                    digits.parse().ok()
                }
                _ => None,
            };
            let (Some(computing_us), Some(communication_not_overlapped_us), Some(free_us)) =
                (number(row, 1)?, number(row, 2)?, number(row, 5)?)
            else {
                return Ok(None);
            };
            Ok(Some(Step {
                step,
                total_us: computing_us + communication_not_overlapped_us + free_us,
                computing_us,
                communication_not_overlapped_us,
                overlapped_us: number(row, 3)?,
                communication_us: number(row, 4)?,
                free_us,
                bubble_us: number(row, 6)?,
                preparing_us: number(row, 7)?,
            }))
        };
        match read().map_err(|e| db_error(path, e))? {
            Some(step) => steps.push(step),
            None => {
                return Err(SummaryError::Db {
                    path: path.to_path_buf(),
                    reason: format!(
                        "StepTraceTime row {}: computing, communication_not_overlapped or free is not a number",
                        steps.len() + 1
                    ),
                });
            }
        }
    }
    Ok(steps)
}

/// The communication of an analysis database's `CommAnalyzerTime`; `None` without the table
/// (a single-card run).
pub fn communication(path: &Path) -> Result<Option<Communication>, SummaryError> {
    let conn = open(path)?;
    if !has_table(&conn, path, "CommAnalyzerTime")? {
        return Ok(None);
    }
    let mut statement = conn
        .prepare(
            "SELECT elapse_time, transit_time, wait_time, synchronization_time, idle_time \
             FROM CommAnalyzerTime WHERE hccl_op_name IS NOT ?1",
        )
        .map_err(|e| db_error(path, e))?;
    let mut rows = statement
        .query([TOTAL_OP_INFO])
        .map_err(|e| db_error(path, e))?;
    let mut sum = Communication::default();
    while let Some(row) = rows.next().map_err(|e| db_error(path, e))? {
        let ms = |i| number(row, i).map(Option::unwrap_or_default);
        let read = || -> rusqlite::Result<TimeInfo> {
            Ok(TimeInfo {
                elapse_ms: ms(0)?,
                transit_ms: ms(1)?,
                wait_ms: ms(2)?,
                synchronization_ms: ms(3)?,
                idle_ms: ms(4)?,
            })
        };
        sum.add(Some(&read().map_err(|e| db_error(path, e))?));
    }
    Ok(Some(sum.finished()))
}
