//! The environment torch_npu recorded with a run: `ASCEND_LAUNCH_BLOCKING=1` and a debug or
//! info CANN log level are findings, read from profiler_metadata.json (text export) or from the
//! profiler database's `META_DATA` (db export); the defaults torch_npu records are not.

#[path = "../../summary/tests/common/mod.rs"]
mod common;
mod support;

use std::path::Path;

use common::{Layout, db_copy, real_copy};
use npuprof_advise::{Advice, Code, Finding};

/// The vendored real text run's own profiler_metadata.json (every recorded variable unset).
fn real_metadata() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../verify/tests/data/runs/msinsight-text-level1/rank0_ascend_pt/profiler_metadata.json",
    );
    std::fs::read_to_string(path).expect("the vendored profiler_metadata.json")
}

/// The real metadata with `name` set to `value`.
fn with_var(metadata: &str, name: &str, value: &str) -> String {
    let unset = format!("\"{name}\": \"\"");
    assert!(metadata.contains(&unset), "{name} is recorded by torch_npu");
    metadata.replace(&unset, &format!("\"{name}\": \"{value}\""))
}

fn advice_of(path: &Path) -> Advice {
    support::advised(path, None, 5)
}

/// The findings of `code`, as (rank, finding).
fn of_code(advice: &Advice, code: Code) -> Vec<(Option<u32>, &Finding)> {
    let found = advice.findings.iter().filter(|f| f.code == code);
    found.map(|f| (f.rank, f)).collect()
}

/// The real text run with rank 0's profiler_metadata.json holding `metadata` (rank 1: the real
/// one).
fn text_run(metadata: &str) -> tempfile::TempDir {
    let tmp = real_copy(Layout::Flat);
    let write = |rank: &str, text: &str| {
        let path = tmp.path().join(rank).join("profiler_metadata.json");
        std::fs::write(path, text).expect("write metadata");
    };
    write("rank0_ascend_pt", metadata);
    write("rank1_ascend_pt", &real_metadata());
    tmp
}

#[test]
fn the_real_runs_recorded_defaults_are_no_finding() {
    for tmp in [text_run(&real_metadata()), db_copy()] {
        let advice = advice_of(tmp.path());
        for code in [Code::LaunchBlocking, Code::DebugLogging] {
            assert!(of_code(&advice, code).is_empty(), "{code:?}");
        }
    }
}

#[test]
fn launch_blocking_is_named_with_the_free_time_it_explains() {
    let tmp = text_run(&with_var(&real_metadata(), "ASCEND_LAUNCH_BLOCKING", "1"));
    let advice = advice_of(tmp.path());
    let found = of_code(&advice, Code::LaunchBlocking);
    assert_eq!(found.len(), 1, "{found:?}");
    let (rank, finding) = found[0];
    assert_eq!(rank, Some(0));
    // The free time per step is what device-idle reports for the same rank.
    let idle = of_code(&advice, Code::DeviceIdle);
    let (_, idle) = idle
        .iter()
        .find(|(r, _)| *r == Some(0))
        .expect("device-idle");
    assert!(finding.at_stake_us > 0.0);
    assert_eq!(finding.at_stake_us, idle.at_stake_us);
    assert!(
        finding
            .title
            .starts_with("ASCEND_LAUNCH_BLOCKING=1: every operator waited"),
        "{}",
        finding.title
    );
    assert_eq!(finding.evidence[0].label, "ASCEND_LAUNCH_BLOCKING=1");
    assert!(finding.evidence[0].detail.contains("profiled process"));
    // 0 is the asynchronous default.
    let off = text_run(&with_var(&real_metadata(), "ASCEND_LAUNCH_BLOCKING", "0"));
    assert!(of_code(&advice_of(off.path()), Code::LaunchBlocking).is_empty());
}

#[test]
fn a_debug_or_info_log_level_is_named_and_warning_or_error_is_not() {
    for (level, expected) in [
        ("0", Some("debug")),
        ("1", Some("info")),
        ("2", None),
        ("3", None),
    ] {
        let tmp = text_run(&with_var(
            &real_metadata(),
            "ASCEND_GLOBAL_LOG_LEVEL",
            level,
        ));
        let advice = advice_of(tmp.path());
        let found = of_code(&advice, Code::DebugLogging);
        match expected {
            Some(name) => {
                assert_eq!(found.len(), 1, "{level}: {found:?}");
                assert_eq!(found[0].0, Some(0));
                assert_eq!(
                    found[0].1.title,
                    format!(
                        "ASCEND_GLOBAL_LOG_LEVEL={level}: CANN logged at {name} level during the run"
                    )
                );
            }
            None => assert!(found.is_empty(), "{level}: {found:?}"),
        }
    }
}

#[test]
fn a_db_export_is_judged_from_its_meta_data_and_says_whose_environment_it_is() {
    let tmp = db_copy();
    let db = tmp
        .path()
        .join("rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_1.db");
    let conn = rusqlite::Connection::open(&db).expect("open the copy");
    let value: String = conn
        .query_row(
            "SELECT value FROM META_DATA WHERE name = 'ENV_VARIABLES'",
            [],
            |row| row.get(0),
        )
        .expect("the real db records ENV_VARIABLES");
    let planted = value.replace(
        "\"ASCEND_LAUNCH_BLOCKING\": \"\"",
        "\"ASCEND_LAUNCH_BLOCKING\": \"1\"",
    );
    assert_ne!(planted, value);
    conn.execute(
        "UPDATE META_DATA SET value = ?1 WHERE name = 'ENV_VARIABLES'",
        [&planted],
    )
    .expect("plant");
    drop(conn);
    // A db export's profiler_metadata.json holds the HCCL groups but no ENV_VARIABLES.
    let metadata = tmp.path().join("rank1_ascend_pt/profiler_metadata.json");
    std::fs::write(metadata, r#"{"parallel_group_info": {}}"#).expect("write metadata");
    let advice = advice_of(tmp.path());
    let found = of_code(&advice, Code::LaunchBlocking);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, Some(1));
    assert!(
        found[0].1.evidence[0]
            .detail
            .contains("the process that parsed the run"),
        "{:?}",
        found[0].1.evidence
    );
}

#[test]
fn an_unreadable_metadata_file_is_noted_not_fatal() {
    let tmp = real_copy(Layout::Flat);
    std::fs::create_dir(tmp.path().join("rank0_ascend_pt/profiler_metadata.json")).expect("dir");
    let advice = advice_of(tmp.path());
    let rank0 = support::run_of(&advice, 0);
    assert!(
        rank0
            .notes
            .iter()
            .any(|n| n.starts_with("profiler_metadata.json: ")
                && n.ends_with("environment not judged")),
        "{:?}",
        rank0.notes
    );
}
