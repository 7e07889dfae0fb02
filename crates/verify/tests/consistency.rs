//! The totals a run carries more than once, cross-checked, on the real Level2 rank 0 of
//! MindStudio Insight's `test/st/level2` (torch_npu 2.7.1, vendored in `tests/data`):
//! kernel_details.csv's 2463 rows are 2448 computing rows (231290.100 µs) and 15
//! `COMMUNICATION` rows; op_statistic.csv counts 2448 operators and 231290.100 µs;
//! step_trace_time's `Computing` is 231290.09999999995 µs; communication.json has 15
//! operators (recomputed with Python's csv and json modules). Intact, nothing is said; a table
//! cut at a row boundary passes every format check and is caught with both numbers.

mod common;

use std::fs;

use common::*;
use npuprof_verify::finding::{Code, Severity};

fn fresh() -> (tempfile::TempDir, Run) {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let run = real_run(&tmp.path().join("r_ascend_pt"), 0);
    (tmp, run)
}

fn messages(report: &npuprof_verify::report::VerifyReport, code: Code) -> Vec<(Severity, String)> {
    report
        .findings
        .iter()
        .filter(|f| f.code == code)
        .map(|f| (f.severity, f.message.clone()))
        .collect()
}

#[test]
fn the_intact_real_run_agrees_with_itself() {
    let (_tmp, run) = fresh();
    let report = run_verify(&run.dir, |_| {});
    check_codes(&report, &[]);
}

#[test]
fn a_kernel_table_cut_to_half_its_rows_is_caught_with_the_numbers() {
    let (_tmp, run) = fresh();
    let text = fs::read_to_string(run.out().join("kernel_details.csv")).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    // The header and the first half of the 2463 rows, cut at a row boundary.
    let kept = 1 + 2463 / 2;
    run.write("kernel_details.csv", lines[..kept].join("\n") + "\n");
    // What the kept rows hold, summed here as the table's reader sums them.
    let (mut rows, mut time, mut comm) = (0_u64, 0.0_f64, 0_u64);
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_default();
    let (core, duration) = (col("Accelerator Core"), col("Duration(us)"));
    for line in &lines[1..kept] {
        let fields = split_csv_line(line);
        if fields[core] == "COMMUNICATION" {
            comm += 1;
        } else {
            rows += 1;
            time += fields[duration].trim().parse::<f64>().unwrap_or_default();
        }
    }
    let report = run_verify(&run.dir, |_| {});
    let dir = run.out().display().to_string();
    let got = messages(&report, Code::KernelTotalsDisagree);
    assert_eq!(
        got,
        [
            (
                Severity::Error,
                format!(
                    "{dir}/kernel_details.csv holds {rows} computing rows, {time:.3} µs; \
                     {dir}/op_statistic.csv counts 2448 operators, 231290.100 µs: \
                     kernel_details.csv lost rows (cut or rewritten)"
                )
            ),
            (
                Severity::Error,
                format!(
                    "{dir}/kernel_details.csv holds {time:.3} µs of computing kernels; \
                     {dir}/step_trace_time.csv records 231290.100 µs of Computing: \
                     kernel_details.csv lost rows (cut or rewritten)"
                )
            ),
        ]
    );
    assert!(rows < 2448 && time < 231_290.1);
    assert_eq!(
        messages(&report, Code::CommunicationCountDisagrees),
        [(
            Severity::Warning,
            format!(
                "{dir}/kernel_details.csv holds {comm} communication rows; \
                 {dir}/communication.json has 15 operators"
            )
        )]
    );
}

#[test]
fn an_old_writer_is_not_asked_for_api_statistic() {
    let (_tmp, run) = fresh();
    run.remove("api_statistic.csv");
    let report = run_verify(&run.dir, |_| {});
    check_codes(&report, &[(Severity::Error, Code::ArtifactMissing)]);
    // A 2023 writer: no `_export_type`, the schedule's keys with a leading underscore.
    run.edit_info(|v| {
        let exp = &mut v["config"]["experimental_config"];
        if let Some(exp) = exp.as_object_mut() {
            exp.remove("_export_type");
        }
        let schedule = v["config"]["common_config"]["schedule"].take();
        let renamed: serde_json::Map<String, serde_json::Value> = schedule
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, val)| (format!("_{k}"), val.clone()))
            .collect();
        v["config"]["common_config"]["schedule"] = serde_json::Value::Object(renamed);
    });
    let report = run_verify(&run.dir, |_| {});
    check_codes(&report, &[]);
}

/// The fields of a kernel_details.csv line (quoted fields with doubled quotes and commas).
fn split_csv_line(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                if let Some(f) = fields.last_mut() {
                    f.push('"');
                }
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            _ => {
                if let Some(f) = fields.last_mut() {
                    f.push(c);
                }
            }
        }
    }
    fields
}

/// The 2-rank AlexNet run's rank 0 trace_view.json (2218825 bytes, 10112 events; its Overlap
/// Analysis lane's `Computing` events sum to 8873.756 µs, step_trace_time's Computing),
/// re-closed after its first 5056 events.
#[test]
fn a_trace_re_closed_after_half_its_events_is_caught_with_the_numbers() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let [r0, _] = copy_real_run(tmp.path());
    let report = run_verify(tmp.path(), |_| {});
    check_codes(&report, &[]);
    // The events' bytes, as npuprof-scan's trace scanner passes them, found in the file in
    // order: the file up to the end of the first half of them, and `]`.
    let path = r0.out().join("trace_view.json");
    let file = fs::File::open(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut events: Vec<Vec<u8>> = Vec::new();
    npuprof_scan::trace_scan::scan_events(&file, |e| events.push(e.to_vec()))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(events.len(), 10112);
    let trace = fs::read(&path).unwrap_or_default();
    let mut end = 0;
    for event in &events[..events.len() / 2] {
        let at = trace[end..]
            .windows(event.len())
            .position(|w| w == event.as_slice())
            .expect("each event in order");
        end += at + event.len();
    }
    let mut closed = trace[..end].to_vec();
    closed.push(b']');
    // The lane's Computing the kept events hold, as the file's events write it.
    let kept: serde_json::Value = serde_json::from_slice(&closed).expect("still JSON");
    let events = kept.as_array().expect("an array");
    let lane = events
        .iter()
        .find(|e| e["ph"] == "M" && e["args"]["name"] == "Overlap Analysis")
        .map(|e| e["pid"].clone())
        .expect("the lane's name is kept");
    let computing: f64 = events
        .iter()
        .filter(|e| e["pid"] == lane && e["ph"] == "X" && e["name"] == "Computing")
        .filter_map(|e| e["dur"].as_f64())
        .sum();
    assert!(computing > 0.0 && computing < 8873.756, "{computing}");
    r0.write("trace_view.json", &closed);
    let report = run_verify(tmp.path(), |_| {});
    let dir = r0.out().display().to_string();
    assert_eq!(
        messages(&report, Code::TraceTotalsDisagree),
        [(
            Severity::Error,
            format!(
                "{dir}/trace_view.json's Overlap Analysis lane holds {computing:.3} µs of \
                 Computing; {dir}/step_trace_time.csv records 8873.756 µs: the trace lost events \
                 (cut and re-closed, or rewritten)"
            )
        )]
    );
}

/// The real 2-rank AlexNet db export (`crates/summary/tests/data/db-level1`, schedule
/// skip_first 40, warmup 10, active 1): STEP_TIME holds step 50, the step the schedule records;
/// a profiler_info that says skip_first 41 records step 51 instead, which the database lacks.
#[test]
fn a_db_exports_step_ids_are_checked_against_the_schedule() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let data =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../summary/tests/data/db-level1");
    copy_tree_writable(&data, tmp.path());
    let report = run_verify(tmp.path(), |_| {});
    let info = (Severity::Info, Code::DbExport);
    check_codes(&report, &[info, info]);
    assert_eq!(report.runs[0].steps.db, [50]);
    assert_eq!(report.runs[0].steps.expected, Some(vec![50]));
    let run = Run {
        dir: tmp.path().join("rank0_ascend_pt"),
    };
    run.edit_info(|v| v["config"]["common_config"]["schedule"]["skip_first"] = 41.into());
    let report = run_verify(&run.dir, |_| {});
    let found: Vec<(Code, String)> = report
        .findings
        .iter()
        .filter(|f| f.code != Code::DbExport)
        .map(|f| (f.code, f.message.clone()))
        .collect();
    assert_eq!(
        found,
        [
            (
                Code::StepsMissing,
                "recorded step(s) 51 (schedule wait=0 warmup=10 active=1 repeat=1 skip_first=41) \
                 are not in ascend_pytorch_profiler_0.db's STEP_TIME (step ids found: 50)"
                    .to_owned()
            ),
            (
                Code::StepsUnexpected,
                "ascend_pytorch_profiler_0.db's STEP_TIME has step(s) 50 that the schedule \
                 wait=0 warmup=10 active=1 repeat=1 skip_first=41 does not record"
                    .to_owned()
            ),
        ]
    );
}
