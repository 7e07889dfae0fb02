//! Exact mode on a db export (`ascend_pytorch_profiler[_<rank>].db`): the same [`Trace`] read
//! from its tables, then broken down as a text export's.
//!
//! `PYTORCH_API` holds the module calls (type 50003, `nn.Module: …`) and the host operators
//! (type 50001), `startNs`/`endNs` as integer nanoseconds; `CONNECTION_IDS` links an
//! operator's `connectionId` to the connection ids of what it is linked to: a connection of one
//! operator and device tasks (`TASK.connectionId`) is a kernel launch, a connection of two
//! operators is a forward → backward link (the earlier is the forward operator). Task types and
//! names come from `STRING_IDS`. The database is opened read-only and immutable.

use crate::Map;
use std::collections::HashSet;
use std::path::Path;

use npuprof_summary::SummaryError;
use rusqlite::Connection;

use crate::trace::{
    DEVICE_PROCESS, MODULE_PREFIX, ModuleCall, Op, OpRole, Point, Span, Task, Trace, intern,
};

/// `PYTORCH_API.type` of a Python call (module calls among them).
const TRACE_TYPE: i64 = 50003;

/// The pid given to the device's tasks (the db has no process ids for them).
const DEVICE_PID: u64 = u64::MAX;

fn db_error(path: &Path, source: rusqlite::Error) -> SummaryError {
    SummaryError::Db {
        path: path.to_path_buf(),
        reason: source.to_string(),
    }
}

/// Whether the database has a table named `name`.
fn has_table(db: &Connection, name: &str) -> rusqlite::Result<bool> {
    db.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [name],
        |row| row.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// Whether the database holds module calls (`nn.Module: …` Python calls).
pub fn has_module_calls(path: &Path) -> Result<bool, SummaryError> {
    let db = npuprof_runs::db::open_read_only(path).map_err(|e| db_error(path, e))?;
    let tables: i64 = db
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' \
             AND name IN ('PYTORCH_API', 'STRING_IDS', 'CONNECTION_IDS', 'TASK')",
            [],
            |row| row.get(0),
        )
        .map_err(|e| db_error(path, e))?;
    if tables < 4 {
        return Ok(false);
    }
    let modules: i64 = db
        .query_row(
            "SELECT count(*) FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name \
             WHERE p.type = ?1 AND s.value LIKE 'nn.Module:%'",
            [TRACE_TYPE],
            |row| row.get(0),
        )
        .map_err(|e| db_error(path, e))?;
    Ok(modules > 0)
}

/// Reads the database at `path` as a trace.
pub fn read(path: &Path) -> Result<Trace, SummaryError> {
    let db = npuprof_runs::db::open_read_only(path).map_err(|e| db_error(path, e))?;
    read_from(&db).map_err(|e| db_error(path, e))
}

fn read_from(db: &Connection) -> rusqlite::Result<Trace> {
    let mut strings: Map<i64, String> = Map::default();
    let mut rows = db.prepare("SELECT id, value FROM STRING_IDS")?;
    for row in rows.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))? {
        let (id, value) = row?;
        strings.insert(id, value);
    }
    let mut trace = Trace::default();
    trace
        .processes
        .insert(DEVICE_PID, DEVICE_PROCESS.to_owned());
    // Operators by their PYTORCH_API.connectionId, for the links.
    let mut by_link: Map<i64, Point> = Map::default();
    let mut api = db.prepare(
        "SELECT CAST(startNs AS INTEGER), CAST(endNs AS INTEGER), globalTid, connectionId, \
         name, type FROM PYTORCH_API",
    )?;
    let mut rows = api.query([])?;
    while let Some(row) = rows.next()? {
        let (start, end): (i64, i64) = (row.get(0)?, row.get(1)?);
        let tid: i64 = row.get::<_, Option<i64>>(2)?.unwrap_or(0);
        let link: Option<i64> = row.get(3)?;
        let name = row
            .get::<_, Option<i64>>(4)?
            .and_then(|n| strings.get(&n))
            .map_or("", String::as_str);
        let kind: i64 = row.get::<_, Option<i64>>(5)?.unwrap_or(0);
        let span = Span {
            thread: (0, tid as u64),
            start: start.max(0) as u64,
            end: end.max(start).max(0) as u64,
        };
        if kind == TRACE_TYPE {
            if let Some(module) = name.strip_prefix(MODULE_PREFIX) {
                trace.modules.push(ModuleCall {
                    span,
                    name: module.trim().to_owned(),
                });
            }
            continue;
        }
        if let Some(link) = link {
            by_link.insert(
                link,
                Point {
                    thread: span.thread,
                    ts: span.start,
                },
            );
        }
        trace.ops.push(Op {
            span,
            role: OpRole::of(name),
        });
    }
    // Connection → the operators linked by it.
    let mut linked: Map<i64, Vec<Point>> = Map::default();
    let mut ids = db.prepare("SELECT id, connectionId FROM CONNECTION_IDS")?;
    for row in ids.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))? {
        let (id, connection) = row?;
        if let Some(point) = by_link.get(&id) {
            linked.entry(connection).or_default().push(*point);
        }
    }
    let mut next_flow = 0u64;
    for points in linked.values_mut() {
        if let [a, b] = points.as_mut_slice() {
            let (forward, backward) = if a.ts <= b.ts { (*a, *b) } else { (*b, *a) };
            trace.backward.starts.insert(next_flow, forward);
            trace.backward.ends.insert(next_flow, backward);
            next_flow += 1;
        }
    }
    let mut index: Map<String, u32> = Map::default();
    // Streams that carry a collective's tasks: their tasks without compute info are
    // communication (the reduce steps as well as the copies and notifies).
    let mut comm_streams: Vec<i64> = Vec::new();
    let has_comm_info = has_table(db, "COMMUNICATION_TASK_INFO")?;
    if has_comm_info {
        let mut streams = db.prepare(
            "SELECT DISTINCT t.streamId FROM COMMUNICATION_TASK_INFO c \
             JOIN TASK t ON t.globalTaskId = c.globalTaskId",
        )?;
        for stream in streams.query_map([], |r| r.get::<_, Option<i64>>(0))? {
            comm_streams.extend(stream?);
        }
    }
    // A collective's envelope: a `TASK` row sharing a `COMMUNICATION_OP`'s connection, in
    // neither task-info table, spanning the operator (`AI_CORE`, on its stream). The text export
    // lists it as the operator in the `HCCL` process, not among the device tasks, whose
    // fragments (copies, reduces, notifies) it covers: counted, it would count the collective
    // twice.
    let mut op_connections: HashSet<i64> = HashSet::new();
    if has_table(db, "COMMUNICATION_OP")? {
        let mut ops = db.prepare("SELECT connectionId FROM COMMUNICATION_OP")?;
        for connection in ops.query_map([], |r| r.get::<_, Option<i64>>(0))? {
            op_connections.extend(connection?);
        }
    }
    let fragment = if has_comm_info {
        "EXISTS (SELECT 1 FROM COMMUNICATION_TASK_INFO x WHERE x.globalTaskId = t.globalTaskId)"
    } else {
        "0"
    };
    let mut tasks = db.prepare(&format!(
        "SELECT t.startNs, t.endNs, t.connectionId, t.streamId, t.taskType, c.name, \
         c.globalTaskId IS NOT NULL, {fragment} FROM TASK t \
         LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId"
    ))?;
    let mut rows = tasks.query([])?;
    while let Some(row) = rows.next()? {
        let (computes, is_fragment): (bool, bool) = (row.get(6)?, row.get(7)?);
        let envelope = !computes
            && !is_fragment
            && row
                .get::<_, Option<i64>>(2)?
                .is_some_and(|c| op_connections.contains(&c));
        if envelope {
            continue;
        }
        let (start, end): (i64, i64) = (row.get(0)?, row.get(1)?);
        let connection: Option<i64> = row.get(2)?;
        let stream: i64 = row.get::<_, Option<i64>>(3)?.unwrap_or(0);
        let task_type = row
            .get::<_, Option<i64>>(4)?
            .and_then(|t| strings.get(&t))
            .map_or("", String::as_str);
        let name = row
            .get::<_, Option<i64>>(5)?
            .and_then(|n| strings.get(&n))
            .map_or(task_type, String::as_str);
        let communication = !computes && comm_streams.contains(&stream);
        let at = Point {
            thread: (DEVICE_PID, stream as u64),
            ts: start.max(0) as u64,
        };
        let launcher = connection
            .and_then(|c| linked.get(&c))
            .filter(|points| points.len() == 1)
            .map(|points| points[0]);
        if let Some(launch) = launcher {
            trace.launches.starts.insert(next_flow, launch);
            trace.launches.ends.insert(next_flow, at);
            next_flow += 1;
        }
        let name = intern(&mut trace.names, &mut index, name);
        let task_type = intern(&mut trace.names, &mut index, task_type);
        trace.tasks.push(Task {
            at,
            dur_ps: (end - start).max(0) as u64 * 1000,
            name,
            task_type,
            communication,
        });
    }
    Ok(trace)
}
