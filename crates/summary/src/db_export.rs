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
//!   (times in ms);
//! - trace_view.json's `Python` and `CANN` processes (what advise lists in a device gap):
//!   `PYTORCH_API` (operators and queue events) and `CANN_API`, names in `STRING_IDS`, types
//!   in `ENUM_API_TYPE` ([`each_host_call`]).
//!
//! Rows are streamed from SQLite: memory is the summary's groups, not the rows.

use std::path::{Path, PathBuf};

use npuprof_runs::db::{DbKind, open_read_only};
use npuprof_runs::profiler_info::RecordedEnv;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension as _};

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

/// `MAX(CASE …)` of one group of metric names (the text export's column spellings).
fn metric_column(index: usize, names: &[&str]) -> String {
    let names: Vec<String> = names.iter().map(|s| format!("'{s}'")).collect();
    format!(
        "MAX(CASE WHEN s.value IN ({}) THEN p.value END) AS m{index}",
        names.join(", ")
    )
}

/// The SQL of the text export's kernel rows: start (ns), duration (ns), name, type, core,
/// input shapes, step, then one metric per group of `metrics`.
fn kernel_sql(metrics: &[&[&str]], pmu: bool, communication: bool, steps: bool) -> String {
    let (with, values, join) = if pmu && !metrics.is_empty() {
        let columns: Vec<String> = metrics
            .iter()
            .enumerate()
            .map(|(i, names)| metric_column(i, names))
            .collect();
        let values: Vec<String> = (0..metrics.len()).map(|i| format!(", pmu.m{i}")).collect();
        (
            format!(
                "WITH pmu AS (SELECT p.globalTaskId AS id, {} FROM TASK_PMU_INFO p \
                 JOIN STRING_IDS s ON s.id = p.name GROUP BY p.globalTaskId) ",
                columns.join(", ")
            ),
            values.concat(),
            "LEFT JOIN pmu ON pmu.id = t.globalTaskId",
        )
    } else {
        (String::new(), ", NULL".repeat(metrics.len()), "")
    };
    let step = |start: &str| {
        if steps {
            format!(
                "(SELECT st.id FROM STEP_TIME st WHERE {start} BETWEEN st.startNs AND st.endNs \
                 ORDER BY st.id LIMIT 1)"
            )
        } else {
            "NULL".to_owned()
        }
    };
    let mut sql = format!(
        "{with}SELECT t.startNs, t.endNs - t.startNs, n.value, o.value, k.value, sh.value, {}{values} \
         FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId \
         LEFT JOIN STRING_IDS n ON n.id = c.name LEFT JOIN STRING_IDS o ON o.id = c.opType \
         LEFT JOIN STRING_IDS k ON k.id = c.taskType LEFT JOIN STRING_IDS sh ON sh.id = c.inputShapes {join}",
        step("t.startNs")
    );
    if communication {
        sql.push_str(&format!(
            " UNION ALL SELECT c.startNs, c.endNs - c.startNs, n.value, o.value, \
             '{COMMUNICATION_CORE}', NULL, {}{} FROM COMMUNICATION_OP c \
             LEFT JOIN STRING_IDS n ON n.id = c.opName LEFT JOIN STRING_IDS o ON o.id = c.opType",
            step("c.startNs"),
            ", NULL".repeat(metrics.len())
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

/// A time in ns of a row as µs, as the text export's decimal µs read: `ns / 1000` correctly
/// rounded while `ns` is exact in an f64, else (a timestamp near 2^60 ns) whole µs and the rest
/// apart. An integer stored as text (`PYTORCH_API` holds its times so) is read the same way.
fn micros(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<f64> {
    const EXACT: i64 = 1 << 53;
    Ok(match nanos(row, i)? {
        Some(ns) if ns.abs() < EXACT => ns as f64 / 1000.0,
        Some(ns) => (ns / 1000) as f64 + (ns % 1000) as f64 / 1000.0,
        None => number(row, i)?.unwrap_or(0.0) / 1000.0,
    })
}

/// A time in ns of a row, exact: an integer, or an integer stored as text; `None` otherwise.
fn nanos(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<i64>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Integer(ns) => Some(ns),
        ValueRef::Text(t) => std::str::from_utf8(t)
            .ok()
            .and_then(|t| t.trim().parse().ok()),
        _ => None,
    })
}

/// One kernel row of a db export, as `kernel_details.csv` would have it.
#[derive(Debug)]
pub struct DbKernel<'r> {
    /// `Start Time(us)`.
    pub start_us: f64,
    /// The same, exact: `startNs` (`None` when it is not an integer).
    pub start_ns: Option<i64>,
    /// `Duration(us)`.
    pub duration_us: f64,
    /// `Name`.
    pub name: &'r [u8],
    /// `Type`.
    pub kind: &'r [u8],
    /// `Accelerator Core`.
    pub core: &'r [u8],
    /// `Input Shapes` (empty for communication operators).
    pub input_shapes: &'r [u8],
    /// The step whose `STEP_TIME` range holds the kernel's start, when there is one.
    pub step: Option<u64>,
    /// Per group of metric names asked for, the largest recorded value; `None` for none.
    pub metrics: &'r [Option<f64>],
}

/// Hands every kernel row of the profiler database `path` to `each`, in start order (then
/// name): compute tasks and communication operators. `metrics` are groups of PMU metric
/// names (the text export's ratio column spellings), each read as its largest value. Returns
/// whether the database records PMU metrics at all.
pub fn each_kernel(
    path: &Path,
    metrics: &[&[&str]],
    mut each: impl FnMut(&DbKernel<'_>),
) -> Result<bool, SummaryError> {
    let conn = open(path)?;
    let pmu = has_table(&conn, path, "TASK_PMU_INFO")?;
    let communication = has_table(&conn, path, "COMMUNICATION_OP")?;
    let steps = has_table(&conn, path, "STEP_TIME")?;
    let sql = kernel_sql(metrics, pmu, communication, steps);
    let mut statement = conn.prepare(&sql).map_err(|e| db_error(path, e))?;
    let mut rows = statement.query([]).map_err(|e| db_error(path, e))?;
    let mut values = vec![None; metrics.len()];
    while let Some(row) = rows.next().map_err(|e| db_error(path, e))? {
        let read = |values: &mut Vec<Option<f64>>| -> rusqlite::Result<_> {
            for (i, value) in values.iter_mut().enumerate() {
                *value = number(row, 7 + i)?;
            }
            let step = number(row, 6)?.and_then(|s| (s >= 0.0).then_some(s as u64));
            Ok((micros(row, 0)?, nanos(row, 0)?, micros(row, 1)?, step))
        };
        let (start_us, start_ns, duration_us, step) =
            read(&mut values).map_err(|e| db_error(path, e))?;
        let field = |i| text(row, i).map_err(|e| db_error(path, e));
        each(&DbKernel {
            start_us,
            start_ns,
            duration_us,
            name: field(2)?,
            kind: field(3)?,
            core: field(4)?,
            input_shapes: field(5)?,
            step,
            metrics: &values,
        });
    }
    Ok(pmu)
}

/// One host call of a profiler database, as trace_view.json's `Python` and `CANN` processes
/// hold it.
#[derive(Debug)]
pub struct HostCall<'r> {
    /// `Python` (`PYTORCH_API`) or `CANN` (`CANN_API`).
    pub process: &'static str,
    /// The API type (`ENUM_API_TYPE`: `op`, `queue`; `acl`, `node`, `runtime`, `hccl`, `model`).
    pub kind: &'r str,
    /// Its name (`STRING_IDS`).
    pub name: &'r str,
    /// Its start (µs, the kernels' clock).
    pub start_us: f64,
    /// Its duration (µs).
    pub duration_us: f64,
}

/// The `PYTORCH_API` types trace_view.json lists in its `Python` process apart from the call
/// frames (`trace`, category `python_function`) and mstx ranges: operators and their queueing.
const PYTHON_KINDS: [&str; 2] = ["op", "queue"];

/// Hands every host call of the profiler database `path` to `each`: its `PYTORCH_API` rows of
/// [`PYTHON_KINDS`] and its `CANN_API` rows (either table may be absent: a run that recorded no
/// CPU activity).
pub fn each_host_call(
    path: &Path,
    mut each: impl FnMut(&HostCall<'_>),
) -> Result<(), SummaryError> {
    let conn = open(path)?;
    for (table, process) in [("PYTORCH_API", "Python"), ("CANN_API", "CANN")] {
        if !has_table(&conn, path, table)? {
            continue;
        }
        let only = if process == "Python" {
            format!(
                " WHERE e.name IN ({})",
                PYTHON_KINDS.map(|k| format!("'{k}'")).join(", ")
            )
        } else {
            String::new()
        };
        let sql = format!(
            "SELECT c.startNs, c.endNs, s.value, e.name FROM {table} c \
             JOIN STRING_IDS s ON s.id = c.name JOIN ENUM_API_TYPE e ON e.id = c.type{only}"
        );
        let mut statement = conn.prepare(&sql).map_err(|e| db_error(path, e))?;
        let mut rows = statement.query([]).map_err(|e| db_error(path, e))?;
        while let Some(row) = rows.next().map_err(|e| db_error(path, e))? {
            let times = || -> rusqlite::Result<(f64, f64)> {
                let start_us = micros(row, 0)?;
                // The duration from the exact ns when both ends are integers.
                let duration_us = match (nanos(row, 0)?, nanos(row, 1)?) {
                    (Some(start), Some(end)) => (end - start) as f64 / 1000.0,
                    _ => micros(row, 1)? - start_us,
                };
                Ok((start_us, duration_us))
            };
            let (start_us, duration_us) = times().map_err(|e| db_error(path, e))?;
            let field = |i| text(row, i).map_err(|e| db_error(path, e));
            let (name, kind) = (field(2)?, field(3)?);
            each(&HostCall {
                process,
                kind: std::str::from_utf8(kind).unwrap_or_default(),
                name: std::str::from_utf8(name).unwrap_or_default(),
                start_us,
                duration_us,
            });
        }
    }
    Ok(())
}

/// The kernels of a profiler database, grouped as `kernel_details.csv`'s would be, also keeping
/// the start and duration of the kernels of step `timeline` (its `STEP_TIME` id), for the
/// step's timeline, as `kernels::aggregate_with` does.
pub fn kernel_table_with(path: &Path, timeline: Option<u64>) -> Result<KernelTable, SummaryError> {
    let spellings: Vec<&[&str]> = Pipe::ALL.iter().map(|p| p.spellings()).collect();
    let mut sums = Sums::default();
    let mut has_metrics = false;
    let pmu = each_kernel(path, &spellings, |k| {
        // A row's pipe ratios exist when any of its metrics is above 0 (as a CSV row's).
        let ratios = crate::pipe::db_row(k.metrics);
        has_metrics |= ratios.is_some();
        let name = columns::name_key(k.name);
        sums.add(
            &name,
            columns::text_bytes(k.kind),
            k.core,
            k.duration_us,
            ratios,
            None,
            None,
        );
        sums.see_step(k.step);
        if let Some(start) = k
            .start_ns
            .filter(|_| k.step.is_some() && k.step == timeline)
        {
            sums.keep_for_timeline(start, k.duration_us, k.core);
        }
    })?;
    Ok(sums.table(pmu && has_metrics))
}

/// The environment variables a profiler database's `META_DATA` table recorded (`None` without
/// the table or the row). See [`RecordedEnv`] on whose environment it is.
pub fn recorded_env(path: &Path) -> Result<Option<RecordedEnv>, SummaryError> {
    let conn = open(path)?;
    if !has_table(&conn, path, "META_DATA")? {
        return Ok(None);
    }
    let value: Option<String> = conn
        .query_row(
            "SELECT value FROM META_DATA WHERE name = 'ENV_VARIABLES' LIMIT 1",
            [],
            |row| row.get(0),
        )
        .optional()
        .map_err(|e| db_error(path, e))?;
    Ok(value.as_deref().and_then(RecordedEnv::from_object))
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

/// One communication operator of `CommAnalyzerTime` (times in ms), as `communication.json`
/// has it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DbCommTime<'r> {
    /// `hccl_op_name` (`communication.json`'s key before `@group`).
    pub name: &'r str,
    /// `Elapse Time(ms)`.
    pub elapse_ms: f64,
    /// `Transit Time(ms)`.
    pub transit_ms: f64,
    /// `Wait Time(ms)`.
    pub wait_ms: f64,
    /// `Synchronization Time(ms)`.
    pub synchronization_ms: f64,
    /// `Idle Time(ms)`.
    pub idle_ms: f64,
}

/// Hands every operator of the analysis database's `CommAnalyzerTime` to `each` (the
/// vendor's `Total Op Info` left out); the number of steps, `None` without the table (a
/// single-card run).
pub fn each_comm_time(
    path: &Path,
    mut each: impl FnMut(&DbCommTime<'_>),
) -> Result<Option<usize>, SummaryError> {
    let conn = open(path)?;
    if !has_table(&conn, path, "CommAnalyzerTime")? {
        return Ok(None);
    }
    let mut statement = conn
        .prepare(
            "SELECT hccl_op_name, elapse_time, transit_time, wait_time, synchronization_time, \
             idle_time, step FROM CommAnalyzerTime WHERE hccl_op_name IS NOT ?1",
        )
        .map_err(|e| db_error(path, e))?;
    let mut rows = statement
        .query([TOTAL_OP_INFO])
        .map_err(|e| db_error(path, e))?;
    let mut steps: Vec<Vec<u8>> = Vec::new();
    while let Some(row) = rows.next().map_err(|e| db_error(path, e))? {
        let ms = |i| number(row, i).map(Option::unwrap_or_default);
        let mut read = || -> rusqlite::Result<_> {
            let step = text(row, 6)?;
            if !steps.iter().any(|s| s == step) {
                steps.push(step.to_vec());
            }
            Ok((
                ms(1)?,
                ms(2)?,
                ms(3)?,
                ms(4)?,
                ms(5)?,
                String::from_utf8_lossy(text(row, 0)?).into_owned(),
            ))
        };
        let (elapse_ms, transit_ms, wait_ms, synchronization_ms, idle_ms, name) =
            read().map_err(|e| db_error(path, e))?;
        each(&DbCommTime {
            name: &name,
            elapse_ms,
            transit_ms,
            wait_ms,
            synchronization_ms,
            idle_ms,
        });
    }
    Ok(Some(steps.len()))
}

/// One link type of one operator and step in `CommAnalyzerBandwidth`: its data and time, and
/// one packet size of its size distribution (`communication.json`'s `Communication Bandwidth
/// Info` entry), `count` 0 for a link without packets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DbLinkRow<'r> {
    /// `transport_type` (`HCCS`, `PCIE`, `SIO`, `RDMA`, `SDMA`).
    pub link: &'r str,
    /// Whether this row is the first of its operator, step and link (the data and time are
    /// repeated on every packet size's row: add them once).
    pub first: bool,
    /// `Transit Size(MB)`.
    pub size_mb: f64,
    /// `Transit Time(ms)`.
    pub time_ms: f64,
    /// The packet size (MB).
    pub packet_mb: f64,
    /// Packets of that size.
    pub count: f64,
    /// Their time (ms).
    pub packet_ms: f64,
}

/// Hands every row of the analysis database's `CommAnalyzerBandwidth` to `each`, grouped by
/// operator, step and link; `false` without the table.
pub fn each_link_row(
    path: &Path,
    mut each: impl FnMut(&DbLinkRow<'_>),
) -> Result<bool, SummaryError> {
    let conn = open(path)?;
    if !has_table(&conn, path, "CommAnalyzerBandwidth")? {
        return Ok(false);
    }
    let mut statement = conn
        .prepare(
            "SELECT hccl_op_name, group_name, step, transport_type, transit_size, transit_time, \
             package_size, count, total_duration FROM CommAnalyzerBandwidth \
             WHERE hccl_op_name IS NOT ?1 ORDER BY 1, 2, 3, 4",
        )
        .map_err(|e| db_error(path, e))?;
    let mut rows = statement
        .query([TOTAL_OP_INFO])
        .map_err(|e| db_error(path, e))?;
    let mut last: Vec<u8> = Vec::new();
    while let Some(row) = rows.next().map_err(|e| db_error(path, e))? {
        let read = || -> rusqlite::Result<_> {
            let mut key = Vec::new();
            for i in 0..4 {
                key.extend_from_slice(text(row, i)?);
                key.push(0);
            }
            let link = String::from_utf8_lossy(text(row, 3)?).into_owned();
            let values: Vec<f64> = (4..9)
                .map(|i| number(row, i).map(Option::unwrap_or_default))
                .collect::<rusqlite::Result<_>>()?;
            Ok((key, link, values))
        };
        let (key, link, v) = read().map_err(|e| db_error(path, e))?;
        let first = key != last;
        last = key;
        each(&DbLinkRow {
            link: &link,
            first,
            size_mb: v[0],
            time_ms: v[1],
            packet_mb: v[2],
            count: v[3],
            packet_ms: v[4],
        });
    }
    Ok(true)
}

/// The communication of an analysis database's `CommAnalyzerTime`; `None` without the table
/// (a single-card run).
pub fn communication(path: &Path) -> Result<Option<Communication>, SummaryError> {
    let mut sum = Communication::default();
    let steps = each_comm_time(path, |op| {
        sum.add(Some(&TimeInfo {
            elapse_ms: op.elapse_ms,
            transit_ms: op.transit_ms,
            wait_ms: op.wait_ms,
            synchronization_ms: op.synchronization_ms,
            idle_ms: op.idle_ms,
        }));
    })?;
    Ok(steps.map(|_| sum.finished()))
}
