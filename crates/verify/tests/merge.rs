//! `verify --merge`: per-node reports of a 6-rank run split across three simulated nodes, each
//! node's ranks made from the real run; the whole-run verdict names a missing rank, a rank
//! reported twice, and ranks that recorded other steps.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use npuprof_verify::finding::{Code, Severity};
use npuprof_verify::merge::{self, NodeReport, WorldSizeSource};

const WORLD: u32 = 6;

fn node(root: &Path, name: &str, ranks: &[u32]) -> PathBuf {
    node_of_real_run(root, name, ranks, WORLD)
}

/// Shifts a run's schedule and its recorded step by one (Step Id 50 → 51).
fn record_step_51(run: &Run) {
    run.edit_info(|v| {
        v["config"]["common_config"]["schedule"]["skip_first"] = serde_json::json!(41)
    });
    for name in ["kernel_details.csv", "step_trace_time.csv"] {
        let text = String::from_utf8(read_sample(&run.out().join(name))).unwrap_or_default();
        let shifted: String = text
            .split_inclusive('\n')
            .map(|l| match l.strip_prefix("50,") {
                Some(rest) => format!("51,{rest}"),
                None => l.to_owned(),
            })
            .collect();
        run.write(name, shifted);
    }
}

/// `npuprof verify --json` on a node, written to `<root>/<name>.json`, read back as `--merge`
/// reads it.
fn report(root: &Path, dir: &Path, name: &str) -> NodeReport {
    let report = run_verify(dir, |_| {});
    let path = root.join(format!("{name}.json"));
    fs::write(
        &path,
        serde_json::to_string_pretty(&report).unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    merge::read_report(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn codes(m: &merge::MergedReport) -> Vec<(Severity, Code)> {
    let mut v: Vec<_> = m.findings.iter().map(|f| (f.severity, f.code)).collect();
    v.sort();
    v
}

#[test]
fn three_complete_nodes_merge_to_ok() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let nodes: Vec<NodeReport> = [("a", [0, 1]), ("b", [2, 3]), ("c", [4, 5])]
        .into_iter()
        .map(|(name, ranks)| {
            let dir = node(tmp.path(), name, &ranks);
            let r = report(tmp.path(), &dir, name);
            // Each node alone: a subset, reported as such, not as missing ranks.
            let node_codes: Vec<Code> = r.report.findings.iter().map(|f| f.code).collect();
            assert_eq!(node_codes, vec![Code::RankSubset], "{name}");
            r
        })
        .collect();
    let m = merge::merge(&nodes, None);
    assert_eq!(codes(&m), vec![]);
    assert!(m.ok);
    assert_eq!(
        (m.world_size, m.world_size_source),
        (WORLD, WorldSizeSource::Reports)
    );
    assert_eq!(m.phases.len(), 1);
    assert_eq!(m.phases[0].ranks_present, (0..WORLD).collect::<Vec<_>>());
    assert_eq!(m.phases[0].step_groups.len(), 1);
    assert_eq!(m.phases[0].step_groups[0].steps, vec![50]);
}

#[test]
fn a_missing_rank_a_duplicated_rank_and_inconsistent_steps() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = node(tmp.path(), "a", &[0, 1]);
    let b = node(tmp.path(), "b", &[2, 3]);
    let c = node(tmp.path(), "c", &[3, 5]);
    record_step_51(&Run {
        dir: c.join("rank5_ascend_pt"),
    });
    let nodes = vec![
        report(tmp.path(), &a, "a"),
        report(tmp.path(), &b, "b"),
        report(tmp.path(), &c, "c"),
    ];
    let m = merge::merge(&nodes, None);
    assert_eq!(
        codes(&m),
        vec![
            (Severity::Error, Code::RankMissing),
            (Severity::Error, Code::RankDuplicate),
            (Severity::Warning, Code::StepsInconsistent),
        ]
    );
    assert!(!m.ok);
    let phase = &m.phases[0];
    assert_eq!(phase.ranks_missing, vec![4]);
    assert_eq!(phase.ranks_duplicated, vec![3]);
    let dup = m.findings.iter().find(|f| f.code == Code::RankDuplicate);
    let dup = dup.map(|f| f.message.as_str()).unwrap_or_default();
    assert!(dup.contains("b.json") && dup.contains("c.json"), "{dup}");
    let steps = m
        .findings
        .iter()
        .find(|f| f.code == Code::StepsInconsistent);
    let steps = steps.map(|f| f.message.as_str()).unwrap_or_default();
    assert!(steps.contains("rank(s) 5 recorded step(s) [51]"), "{steps}");
    // --ranks overrides the reports: a 7th rank is missing too.
    let m = merge::merge(&nodes, Some(7));
    assert_eq!(m.phases[0].ranks_missing, vec![4, 6]);
    assert_eq!(m.world_size_source, WorldSizeSource::Ranks);
}

/// Removes every trace of the run's rank: `rank_id`, the file name's rank, profiler_metadata.
fn forget_rank(run: &Run) {
    run.edit_info(|v| {
        if let Some(info) = v.as_object_mut() {
            info.remove("rank_id");
        }
    });
    fs::rename(run.info_path(), run.dir.join("profiler_info.json"))
        .and_then(|()| fs::remove_file(run.dir.join("profiler_metadata.json")))
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn runs_of_unknown_rank_may_be_the_missing_ranks() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = node(tmp.path(), "a", &[0, 1]);
    let b = node(tmp.path(), "b", &[2, 3]);
    let c = node(tmp.path(), "c", &[4, 5]);
    forget_rank(&Run {
        dir: c.join("rank4_ascend_pt"),
    });
    let nodes = vec![
        report(tmp.path(), &a, "a"),
        report(tmp.path(), &b, "b"),
        report(tmp.path(), &c, "c"),
    ];
    assert_eq!(
        nodes[2]
            .report
            .runs
            .iter()
            .filter(|r| r.rank.is_none())
            .count(),
        1
    );
    let m = merge::merge(&nodes, None);
    let phase = &m.phases[0];
    assert_eq!(
        (phase.ranks_missing.clone(), phase.runs_of_unknown_rank),
        (vec![4], 1)
    );
    assert!(
        !codes(&m).contains(&(Severity::Error, Code::RankMissing)),
        "{:?}",
        m.findings
    );
    // With 7 ranks required, the one run of unknown rank cannot be both 4 and 6.
    let m = merge::merge(&nodes, Some(7));
    let missing = m.findings.iter().find(|f| f.code == Code::RankMissing);
    let missing = missing.map(|f| f.message.as_str()).unwrap_or_default();
    assert!(
        missing.contains("rank(s) 4, 6 of 7")
            && missing.contains("1 run director(ies) of unknown rank"),
        "{missing}"
    );
}

#[test]
fn a_report_that_is_not_a_verify_report_is_refused() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let cases = [
        ("not-json.json", "not json"),
        ("no-schema.json", r#"{"ok": true}"#),
        ("future.json", r#"{"schema_version": 99}"#),
    ];
    for (name, text) in cases {
        let path = tmp.path().join(name);
        fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        assert!(merge::read_report(&path).is_err(), "{name}");
    }
    let fifo = tmp.path().join("fifo.json");
    make_fifo(&fifo);
    let err = merge::read_report(&fifo).err().map(|e| e.to_string());
    assert!(err.is_some_and(|e| e.contains("FIFO")));
}
