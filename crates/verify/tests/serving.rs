//! verify on serving output, generated from the vendored real 2-rank run: run directories
//! named `<rank suffix>_<timestamp>_ascend_pt`, no schedule (profiler_info's `schedule` null,
//! no `Step Id` column, an empty `Step`), several start/stop pairs, raw-data-only directories,
//! a directory still being written, and the frontend's own trace beside them.

mod common;

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use common::*;
use npuprof_verify::finding::{Code, Severity};
use npuprof_verify::serving::{Serving, ServingSpec};
use npuprof_verify::{Options, VerifyReport};

const SHAPE: &str = "dp<d>_pp<p>_tp<t>_dcp<c>_ep<e>_rank<r>";

fn spec() -> ServingSpec {
    ServingSpec {
        engine: "vllm-ascend".to_owned(),
        run_dir_suffix: "_ascend_pt".to_owned(),
        frontend_trace_suffix: Some(".async_llm".to_owned()),
        frontend_off_key: Some("ignore_frontend".to_owned()),
        worker_name_shape: Some(SHAPE.to_owned()),
        settle: Duration::from_secs(10),
    }
}

fn auto(opts: &mut Options) {
    opts.serving = Serving::Auto(vec![spec()]);
}

fn forced(opts: &mut Options) {
    opts.serving = Serving::Forced(spec());
}

/// Sets every modification time under `dir` an hour back (a run finished long ago).
fn age(dir: &Path) {
    let past = SystemTime::now() - Duration::from_secs(3600);
    for entry in fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            age(&path);
        }
        let file = fs::File::options()
            .read(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{e}"));
        file.set_modified(past).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A parsed serving run of `rank` at `stamp` under `root`: the real run's rank, without its
/// schedule and Step Ids.
fn serving_run(root: &Path, rank: u32, stamp: &str) -> Run {
    let dir = root.join(format!(
        "dp0_pp0_tp{rank}_dcp0_ep0_rank{rank}_{stamp}_ascend_pt"
    ));
    copy_tree_writable(
        &real_two_rank_run().join(format!("rank{}_ascend_pt", rank % 2)),
        &dir,
    );
    let run = Run { dir };
    run.edit_info(|v| {
        v["config"]["common_config"]["schedule"] = serde_json::Value::Null;
        v["rank_id"] = serde_json::json!(rank);
    });
    let kernels = fs::read_to_string(run.out().join("kernel_details.csv")).unwrap_or_default();
    let without_step: String = kernels
        .split_inclusive('\n')
        .map(|l| l.split_once(',').map_or(l, |(_, rest)| rest).to_owned())
        .collect();
    run.write("kernel_details.csv", without_step);
    let steps = fs::read_to_string(run.out().join("step_trace_time.csv")).unwrap_or_default();
    let empty_step: String = steps
        .split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                l.to_owned()
            } else {
                format!(",{}", l.split_once(',').map_or("", |(_, r)| r))
            }
        })
        .collect();
    run.write("step_trace_time.csv", empty_step);
    run
}

/// A raw-data-only run (what a daemon worker leaves): profiler_info, FRAMEWORK/ and PROF_*/.
fn raw_run(root: &Path, rank: u32, stamp: &str) -> Run {
    let run = serving_run(root, rank, stamp);
    fs::remove_dir_all(run.out()).unwrap_or_else(|e| panic!("{e}"));
    for sub in [
        "FRAMEWORK",
        "PROF_000001_20260101120000123_ABCDEF/device_0/data",
    ] {
        fs::create_dir_all(run.dir.join(sub)).unwrap_or_else(|e| panic!("{e}"));
    }
    fs::write(run.dir.join("FRAMEWORK/torch.op_mark"), b"raw").unwrap_or_else(|e| panic!("{e}"));
    run
}

fn finding(report: &VerifyReport, code: Code) -> &npuprof_verify::Finding {
    report
        .findings
        .iter()
        .find(|f| f.code == code)
        .unwrap_or_else(|| panic!("no {code:?} in {:#?}", report.findings))
}

#[test]
fn two_pairs_of_two_ranks_are_named_and_clean() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for (rank, stamp) in [
        (0, "20260101120000123"),
        (1, "20260101120000125"),
        (0, "20260101120500100"),
        (1, "20260101120500102"),
    ] {
        serving_run(tmp.path(), rank, stamp);
    }
    age(tmp.path());
    let report = run_verify(tmp.path(), auto);
    check_codes(&report, &[(Severity::Info, Code::ServingOutput)]);
    assert!(report.ok);
    let message = &finding(&report, Code::ServingOutput).message;
    assert!(
        message.contains("2 start/stop pair(s) × 2 rank(s) (0, 1)"),
        "{message}"
    );
    assert!(
        message.contains(
            "pair 1 at 20260101120000123: rank(s) 0, 1; pair 2 at 20260101120500100: rank(s) 0, 1"
        ),
        "{message}"
    );
    // Without serving, the second pair is taken for leftovers of another run.
    let plain = run_verify(tmp.path(), |_| {});
    assert!(
        plain.findings.iter().any(|f| f.code == Code::RunDuplicate),
        "{:#?}",
        plain.findings
    );
}

#[test]
fn a_rank_missing_from_a_pair_is_named() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for (rank, stamp) in [
        (0, "20260101120000123"),
        (1, "20260101120000125"),
        (0, "20260101120500100"),
    ] {
        serving_run(tmp.path(), rank, stamp);
    }
    age(tmp.path());
    let report = run_verify(tmp.path(), auto);
    check_codes(
        &report,
        &[
            (Severity::Error, Code::ServingPairIncomplete),
            (Severity::Info, Code::ServingOutput),
        ],
    );
    let message = &finding(&report, Code::ServingPairIncomplete).message;
    assert_eq!(
        message,
        "start/stop pair 2 (at 20260101120500100) has no run directory for rank(s) 1"
    );
}

#[test]
fn raw_data_only_is_not_parsed_yet_with_the_analyse_command() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    serving_run(tmp.path(), 0, "20260101120000123");
    let raw = raw_run(tmp.path(), 1, "20260101120000125");
    age(tmp.path());
    let report = run_verify(tmp.path(), auto);
    check_codes(
        &report,
        &[
            (Severity::Error, Code::ServingNotParsed),
            (Severity::Info, Code::ServingOutput),
        ],
    );
    let f = finding(&report, Code::ServingNotParsed);
    assert_eq!(f.rank, Some(1));
    assert!(f.message.starts_with("not parsed yet"), "{}", f.message);
    assert!(
        f.next_action.contains(&format!(
            "python3 -c \"import torch_npu; torch_npu.profiler.profiler.analyse('{}')\"",
            raw.dir.display()
        )),
        "{}",
        f.next_action
    );
    // Without serving it is a parse that never happened.
    let plain = run_verify(tmp.path(), |_| {});
    assert!(
        plain
            .findings
            .iter()
            .any(|f| f.code == Code::OutputDirMissing)
    );
}

#[test]
fn a_run_still_being_written_is_partial_not_a_parser_failure() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    serving_run(tmp.path(), 0, "20260101120000123");
    let writing = serving_run(tmp.path(), 1, "20260101120000125");
    age(tmp.path());
    // The stop's asynchronous parse is still writing rank 1: the trace is cut and the CSVs
    // are not there yet, the files changed just now.
    writing.write("trace_view.json", trace_cut_mid_event());
    writing.remove("kernel_details.csv");
    let report = run_verify(tmp.path(), auto);
    check_codes(
        &report,
        &[
            (Severity::Error, Code::ServingOutputPartial),
            (Severity::Info, Code::ServingOutput),
        ],
    );
    assert_eq!(finding(&report, Code::ServingOutputPartial).rank, Some(1));
    // The same files an hour old are what they are: a cut trace, a missing CSV.
    age(tmp.path());
    let old = run_verify(tmp.path(), auto);
    assert!(
        old.findings
            .iter()
            .all(|f| f.code != Code::ServingOutputPartial)
    );
    assert!(
        old.findings
            .iter()
            .any(|f| f.code == Code::TraceCutMidEvent),
        "{:#?}",
        old.findings
    );
}

#[test]
fn the_frontend_trace_is_recognised_and_not_a_rank() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    serving_run(tmp.path(), 0, "20260101120000123");
    fs::write(
        tmp.path()
            .join("host_4242.async_llm.1767268800000.pt.trace.json.gz"),
        b"\x1f\x8b",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    age(tmp.path());
    let report = run_verify(tmp.path(), auto);
    check_codes(
        &report,
        &[
            (Severity::Info, Code::ServingFrontendTrace),
            (Severity::Info, Code::ServingOutput),
        ],
    );
    assert_eq!(report.runs.len(), 1);
    assert!(
        finding(&report, Code::ServingOutput)
            .message
            .contains("1 rank(s) (0)")
    );
    // The setting that stops the trace is the definition's, as the spec gives it.
    assert_eq!(
        finding(&report, Code::ServingFrontendTrace).next_action,
        "nothing: verify leaves it out; the engine's ignore_frontend setting stops it"
    );
}

#[test]
fn other_names_or_a_schedule_are_not_serving_output_unless_forced() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let run = serving_run(tmp.path(), 0, "20260101120000123");
    let renamed = tmp.path().join("node1_4000_20260101120000123_ascend_pt");
    fs::rename(&run.dir, &renamed).unwrap_or_else(|e| panic!("{e}"));
    age(tmp.path());
    let report = run_verify(tmp.path(), auto);
    assert!(
        report
            .findings
            .iter()
            .all(|f| f.code != Code::ServingOutput)
    );
    let report = run_verify(tmp.path(), forced);
    assert!(
        finding(&report, Code::ServingOutput)
            .message
            .contains("(--engine vllm-ascend)")
    );
    // A schedule in profiler_info: not serving output, whatever the name.
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let run = serving_run(tmp.path(), 0, "20260101120000123");
    run.edit_info(|v| {
        v["config"]["common_config"]["schedule"] =
            serde_json::json!({"wait": 0, "warmup": 0, "active": 1, "repeat": 1, "skip_first": 0});
    });
    age(tmp.path());
    let report = run_verify(tmp.path(), auto);
    assert!(
        report
            .findings
            .iter()
            .all(|f| f.code != Code::ServingOutput)
    );
}
