//! The db export (`data/db-level1/`, a real 2-rank run recorded with `export_type=db`) against
//! direct SQL queries of its databases, against the text export its rows make, and against the
//! real text export of the same workload (`data/real-2rank/`).

mod common;

use common::{run_of, summary_all as summary_of};

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use common::{db_run, real_run};
use npuprof_summary::{RunSummary, Summary};
use rusqlite::{Connection, OpenFlags};

fn output(rank: u32) -> PathBuf {
    db_run().join(format!("rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT"))
}

fn connect(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn profiler_db(rank: u32) -> Connection {
    connect(&output(rank).join(format!("ascend_pytorch_profiler_{rank}.db")))
}

fn analysis_db(rank: u32) -> Connection {
    connect(&output(rank).join("analysis.db"))
}

fn check_close(what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{what}: npuprof {got}, SQL {want}"
    );
}

/// Every kernel row as `kernel_details.csv` has it: start (ns), duration (ns), name, type,
/// core, task id (`None` for communication operators).
type KernelRow = (i64, i64, String, String, String, Option<i64>);

fn kernel_rows(db: &Connection) -> Vec<KernelRow> {
    let strings: HashMap<i64, String> = query(db, "SELECT id, value FROM STRING_IDS", |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
    .into_iter()
    .collect();
    let name = |id: i64| strings.get(&id).cloned().unwrap_or_default();
    let compute = query(
        db,
        "SELECT TASK.startNs, TASK.endNs, COMPUTE_TASK_INFO.name, COMPUTE_TASK_INFO.opType, \
         COMPUTE_TASK_INFO.taskType, TASK.globalTaskId FROM TASK, COMPUTE_TASK_INFO \
         WHERE TASK.globalTaskId = COMPUTE_TASK_INFO.globalTaskId",
        |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        },
    );
    let communication = query(
        db,
        "SELECT startNs, endNs, opName, opType FROM COMMUNICATION_OP",
        |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get(2)?,
                r.get(3)?,
            ))
        },
    );
    let mut rows: Vec<KernelRow> = compute
        .into_iter()
        .map(|(s, e, n, t, c, id)| (s, e - s, name(n), name(t), name(c), Some(id)))
        .chain(
            communication
                .into_iter()
                .map(|(s, e, n, t)| (s, e - s, name(n), name(t), "HCCL".to_owned(), None)),
        )
        .collect();
    rows.sort_by(|a, b| (a.0, &a.2).cmp(&(b.0, &b.2)));
    rows
}

fn query<T>(
    db: &Connection,
    sql: &str,
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Vec<T> {
    let mut statement = db.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    statement
        .query_map([], row)
        .and_then(Iterator::collect)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

#[test]
fn kernels_by_name_and_type_equal_a_direct_sql_query() {
    let summary = summary_of(&db_run());
    for rank in [0, 1] {
        let run = run_of(&summary, rank);
        let rows = kernel_rows(&profiler_db(rank));
        let kernels = run.kernels.as_ref().expect("kernel totals");
        assert_eq!(kernels.rows, rows.len() as u64, "rank {rank}");
        assert!(kernels.rows > 150, "rank {rank}: {} rows", kernels.rows);
        let total_ns: i64 = rows.iter().map(|r| r.1).sum();
        check_close("total", kernels.total_us, total_ns as f64 / 1000.0);
        let mut by_name: BTreeMap<&str, (u64, i64)> = BTreeMap::new();
        let mut by_type: BTreeMap<&str, (u64, i64)> = BTreeMap::new();
        for (_, ns, name, kind, _, _) in &rows {
            for (map, key) in [(&mut by_name, name), (&mut by_type, kind)] {
                let entry = map.entry(key.as_str()).or_default();
                entry.0 += 1;
                entry.1 += ns;
            }
        }
        assert_eq!(run.top_kernels.len(), by_name.len(), "rank {rank}");
        for group in &run.top_kernels {
            let (count, ns) = by_name[group.name.as_str()];
            assert_eq!(group.count, count, "{}", group.name);
            check_close(&group.name, group.total_us, ns as f64 / 1000.0);
        }
        assert_eq!(run.by_type.len(), by_type.len(), "rank {rank}");
        for group in &run.by_type {
            let (count, ns) = by_type[group.kind.as_str()];
            assert_eq!(group.count, count, "{}", group.kind);
            check_close(&group.kind, group.total_us, ns as f64 / 1000.0);
        }
        let hccl = run.top_kernels.iter().filter(|k| k.core == "HCCL").count();
        assert_eq!(hccl, 4, "rank {rank}: the four allReduce operators");
    }
}

#[test]
fn steps_and_communication_equal_a_direct_sql_query() {
    let summary = summary_of(&db_run());
    for rank in [0, 1] {
        let run = run_of(&summary, rank);
        let db = analysis_db(rank);
        let steps = query(
            &db,
            "SELECT CAST(step AS INTEGER), computing, communication_not_overlapped, free, \
             overlapped, preparing FROM StepTraceTime",
            |r| {
                Ok((
                    r.get::<_, u64>(0)?,
                    r.get::<_, f64>(1)?,
                    r.get::<_, f64>(2)?,
                    r.get::<_, f64>(3)?,
                    r.get::<_, f64>(4)?,
                    r.get::<_, f64>(5)?,
                ))
            },
        );
        assert_eq!(run.steps.len(), steps.len());
        assert!(!steps.is_empty());
        for (got, want) in run.steps.iter().zip(&steps) {
            assert_eq!(got.step, Some(want.0));
            assert_eq!(got.computing_us, want.1);
            assert_eq!(got.communication_not_overlapped_us, want.2);
            assert_eq!(got.free_us, want.3);
            assert_eq!(got.overlapped_us, Some(want.4));
            assert_eq!(got.preparing_us, Some(want.5));
            check_close("step total", got.total_us, want.1 + want.2 + want.3);
        }
        let (ops, elapse, wait, transit): (u64, f64, f64, f64) = db
            .query_row(
                "SELECT COUNT(*), SUM(elapse_time), SUM(wait_time), SUM(transit_time) \
                 FROM CommAnalyzerTime",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .expect("CommAnalyzerTime");
        let comm = run.communication.as_ref().expect("communication");
        assert_eq!(comm.ops, ops);
        check_close("elapse", comm.elapse_us, elapse * 1000.0);
        check_close("wait", comm.wait_us, wait * 1000.0);
        check_close("transit", comm.transit_us, transit * 1000.0);
        assert!(
            run.notes.iter().any(|n| n.contains("db export: read from")
                && n.contains("analysis.db")
                && n.contains(&format!("ascend_pytorch_profiler_{rank}.db"))),
            "{:?}",
            run.notes
        );
    }
}

/// The metrics of every task, by name (from `TASK_PMU_INFO`).
fn metrics(db: &Connection) -> HashMap<i64, HashMap<String, f64>> {
    let rows = query(
        db,
        "SELECT TASK_PMU_INFO.globalTaskId, STRING_IDS.value, TASK_PMU_INFO.value \
         FROM TASK_PMU_INFO, STRING_IDS WHERE STRING_IDS.id = TASK_PMU_INFO.name",
        |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, f64>(2)?,
            ))
        },
    );
    let mut out: HashMap<i64, HashMap<String, f64>> = HashMap::new();
    for (id, name, value) in rows {
        out.entry(id).or_default().insert(name, value);
    }
    out
}

/// The text export the db's rows make (as torch_npu writes it: durations in µs with three
/// decimals, the PipeUtilization ratio columns, `N/A` where a row has no metrics).
fn write_text_export(rank: u32, into: &Path) {
    const RATIOS: [&str; 9] = [
        "aic_mac_ratio",
        "aic_scalar_ratio",
        "aic_mte1_ratio",
        "aic_mte2_ratio",
        "aic_fixpipe_ratio",
        "aiv_vec_ratio",
        "aiv_scalar_ratio",
        "aiv_mte2_ratio",
        "aiv_mte3_ratio",
    ];
    let run = into.join(format!("rank{rank}_ascend_pt"));
    let out = run.join("ASCEND_PROFILER_OUTPUT");
    std::fs::create_dir_all(&out).expect("mkdir");
    let info = format!("profiler_info_{rank}.json");
    std::fs::copy(
        db_run().join(format!("rank{rank}_ascend_pt")).join(&info),
        run.join(&info),
    )
    .expect("copy profiler_info");
    let db = profiler_db(rank);
    let pmu = metrics(&db);
    let mut csv = format!(
        "Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),{}\n",
        RATIOS.join(",")
    );
    for (start, ns, name, kind, core, id) in kernel_rows(&db) {
        let values: Vec<String> = RATIOS
            .iter()
            .map(|r| {
                id.and_then(|id| pmu.get(&id)?.get(*r))
                    .map_or_else(|| "N/A".to_owned(), f64::to_string)
            })
            .collect();
        let _ = writeln!(
            csv,
            "50,{name},{kind},{core},{}.{:03}\t,{}.{:03},{}",
            start / 1000,
            start % 1000,
            ns / 1000,
            ns % 1000,
            values.join(",")
        );
    }
    std::fs::write(out.join("kernel_details.csv"), csv).expect("write kernel_details.csv");
    let analysis = analysis_db(rank);
    let mut steps = "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,Communication(Not Overlapped and Exclude Receive),Preparing\n".to_owned();
    for row in query(&analysis, "SELECT * FROM StepTraceTime", |r| {
        (0..10)
            .map(|i| {
                Ok(match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Real(v) => v.to_string(),
                    _ => String::new(),
                })
            })
            .collect::<rusqlite::Result<Vec<String>>>()
    }) {
        let _ = writeln!(steps, "{}", row.join(","));
    }
    std::fs::write(out.join("step_trace_time.csv"), steps).expect("write step_trace_time.csv");
    let ops = query(
        &analysis,
        "SELECT hccl_op_name, group_name, step, type, elapse_time, transit_time, wait_time, \
         synchronization_time, idle_time FROM CommAnalyzerTime",
        |r| {
            Ok(format!(
                r#""{}@{}": {{"Communication Time Info": {{"Elapse Time(ms)": {}, "Transit Time(ms)": {}, "Wait Time(ms)": {}, "Synchronization Time(ms)": {}, "Idle Time(ms)": {}}}}}"#,
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, f64>(4)?,
                r.get::<_, f64>(5)?,
                r.get::<_, f64>(6)?,
                r.get::<_, f64>(7)?,
                r.get::<_, f64>(8)?,
            ))
        },
    );
    let json = format!(
        r#"{{"step50": {{"p2p": {{}}, "collective": {{{}}}}}}}"#,
        ops.join(", ")
    );
    std::fs::write(out.join("communication.json"), json).expect("write communication.json");
}

#[test]
fn the_text_export_of_the_same_rows_gives_the_same_summary() {
    let text = tempfile::tempdir().expect("tempdir");
    for rank in [0, 1] {
        write_text_export(rank, text.path());
    }
    let (from_db, from_text) = (summary_of(&db_run()), summary_of(text.path()));
    assert_eq!(from_db.runs.len(), 2);
    for (db, text) in from_db.runs.iter().zip(&from_text.runs) {
        assert_eq!(db.rank, text.rank);
        assert_eq!(db.steps, text.steps);
        assert_eq!(db.kernels, text.kernels);
        assert_eq!(db.top_kernels, text.top_kernels);
        assert_eq!(db.by_type, text.by_type);
        // serde_json's float parsing may differ from SQLite's in the last bit.
        let (Some(a), Some(b)) = (&db.communication, &text.communication) else {
            panic!("communication missing");
        };
        assert_eq!(a.ops, b.ops);
        for (what, x, y) in [
            ("elapse", a.elapse_us, b.elapse_us),
            ("transit", a.transit_us, b.transit_us),
            ("wait", a.wait_us, b.wait_us),
            (
                "synchronization",
                a.synchronization_us,
                b.synchronization_us,
            ),
            ("idle", a.idle_us, b.idle_us),
        ] {
            check_close(what, x, y);
        }
        assert!(db.pipe.is_some(), "PipeUtilization metrics are read");
        assert_eq!(db.pipe, text.pipe);
        assert!(
            db.top_kernels.iter().any(|k| k.bound.is_some()),
            "kernels have a bound"
        );
    }
    let ranks = |s: &Summary| {
        s.ranks
            .iter()
            .map(|r| (r.slowest_rank, r.fastest_rank, r.per_rank.len()))
            .collect::<Vec<_>>()
    };
    assert_eq!(ranks(&from_db), ranks(&from_text));
}

/// The HCCL operators' per-run number (`hcom_allReduce__210_0_1` → `hcom_allReduce__*_0_1`).
fn without_run_number(name: &str) -> String {
    match name.split_once("__") {
        Some((op, rest)) => match rest.split_once('_') {
            Some((_, tail)) => format!("{op}__*_{tail}"),
            None => name.to_owned(),
        },
        None => name.to_owned(),
    }
}

#[test]
fn names_and_counts_equal_the_text_export_of_the_same_workload() {
    let (db, text) = (summary_of(&db_run()), summary_of(&real_run()));
    for rank in [0, 1] {
        let names = |run: &RunSummary| -> BTreeMap<(String, String, String), u64> {
            run.top_kernels
                .iter()
                .map(|k| {
                    let key = (without_run_number(&k.name), k.kind.clone(), k.core.clone());
                    (key, k.count)
                })
                .collect()
        };
        let (db_run, text_run) = (run_of(&db, rank), run_of(&text, rank));
        assert_eq!(names(db_run), names(text_run), "rank {rank}");
        assert_eq!(
            db_run.kernels.as_ref().map(|k| k.rows),
            text_run.kernels.as_ref().map(|k| k.rows)
        );
        assert_eq!(db_run.steps.len(), text_run.steps.len());
    }
}

/// What summary says of a db export names what a db export has. Its one-step timeline is
/// drawn from the profiler database's kernels (`TASK`'s exact `startNs`), and its lanes are
/// analysis.db's `StepTraceTime` of the same step to the µs (two readings of the run that agree);
/// no note names a kernel_details.csv; a database
/// without PMU metrics (the vendored one with `TASK_PMU_INFO` dropped, as a run without
/// `aic_metrics` records) is said to lack them in the database.
#[test]
fn a_db_export_s_timeline_and_notes_are_the_database_s() {
    let summary = summary_of(&db_run());
    assert_eq!(summary.runs.len(), 2);
    for run in &summary.runs {
        assert_eq!(run.timeline_missing, None);
        let timeline = run.timeline.as_ref().expect("a timeline");
        let [step] = run.steps.as_slice() else {
            panic!("one step: {:?}", run.steps)
        };
        assert_eq!(Some(timeline.step), step.step);
        assert_eq!(timeline.tasks, 191);
        for (what, got, want) in [
            ("computing", timeline.computing_us, step.computing_us),
            (
                "communication not overlapped",
                timeline.communication_us - timeline.overlapped_us,
                step.communication_not_overlapped_us,
            ),
            ("free", timeline.free_us, step.free_us),
            ("step", timeline.window_us, step.total_us),
        ] {
            assert!(
                (got - want).abs() < 1.0,
                "rank {:?} {what}: {got} vs {want}",
                run.rank
            );
        }
        assert!(
            !run.notes.iter().any(|n| n.contains("kernel_details.csv")),
            "{:?}",
            run.notes
        );
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("rank0_ascend_pt/ASCEND_PROFILER_OUTPUT");
    std::fs::create_dir_all(&out).expect("mkdir");
    for file in ["ascend_pytorch_profiler_0.db", "analysis.db"] {
        std::fs::copy(output(0).join(file), out.join(file)).expect("copy");
    }
    let db = Connection::open(out.join("ascend_pytorch_profiler_0.db")).expect("open the copy");
    db.execute_batch("DROP TABLE TASK_PMU_INFO").expect("drop");
    drop(db);
    let summary = summary_of(tmp.path());
    let notes = &summary.runs[0].notes;
    assert!(
        notes.iter().any(|n| n.starts_with(
            "no pipeline metrics in the profiler database (TASK_PMU_INFO): record with"
        )),
        "{notes:?}"
    );
}
