//! `npuprof summary --merge` on the vendored real pipeline-parallel run
//! (`crates/summary/tests/data/pp2-dp2`: PP 2 × DP 2, four ranks) split over two "nodes" as a
//! multi-machine job is: each node summarised on its own, the documents joined. The merged rank
//! view must be the one summary computes with all four ranks on one disk; missing, duplicated
//! and unreadable documents are named.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use insta_cmd::get_cargo_bin;
use serde_json::Value;

/// The vendored PP 2 × DP 2 run.
fn pp_run() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../summary/tests/data/pp2-dp2")
}

fn npuprof(dir: &Path, args: &[&str]) -> Output {
    Command::new(get_cargo_bin("npuprof"))
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("npuprof runs")
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// Copies the run's `ranks` to `<tmp>/<node>/` and writes `<tmp>/<node>.json`, that node's
/// `summary --json`.
fn node(tmp: &Path, name: &str, ranks: &[u32]) -> PathBuf {
    let dir = tmp.join(name);
    for rank in ranks {
        let run = format!("rank_{rank}_ascend_pt");
        copy_tree(&pp_run().join(&run), &dir.join(&run));
    }
    let out = npuprof(tmp, &["summary", name, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let doc = tmp.join(format!("{name}.json"));
    std::fs::write(&doc, &out.stdout).expect("write the node's summary");
    doc
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A phase's rank view without the run directories (which name the node's document).
fn without_dirs(mut ranks: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.retain(|k, _| k != "dir" && k != "fastest_dir");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut ranks);
    ranks
}

#[test]
fn two_nodes_merged_give_the_whole_runs_rank_view() {
    let tmp = tempfile::tempdir().expect("tmp");
    node(tmp.path(), "node-a", &[0, 1]);
    node(tmp.path(), "node-b", &[2, 3]);
    let whole = json_of(&npuprof(&pp_run(), &["summary", ".", "--json"]));
    let out = npuprof(
        tmp.path(),
        &["summary", "--merge", "node-a.json", "node-b.json", "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let merged = json_of(&out);
    assert_eq!(merged["schema_version"], 1);
    assert_eq!(
        without_dirs(merged["ranks"].clone()),
        without_dirs(whole["ranks"].clone())
    );
    // What the PP run's facts say (stage 1 computes 400.79 ms per step, stage 0 231.10 ms):
    // a stage imbalance, no straggler across stages.
    let phase = &merged["ranks"][0];
    assert_eq!(phase["grouping"], "parallel");
    assert_eq!(phase["stages"]["slowest_stage"], 1);
    assert_eq!(phase["stages"]["imbalanced"], true);
    for group in phase["groups"].as_array().expect("groups") {
        let ranks: Vec<u64> = group["ranks"]
            .as_array()
            .expect("ranks")
            .iter()
            .filter_map(Value::as_u64)
            .collect();
        assert!(ranks == [0, 1] || ranks == [2, 3], "{ranks:?} mixes stages");
    }
    assert_eq!(
        phase["groups"][0]["straggler"]["dir"],
        format!("{}:rank_0_ascend_pt", "node-a.json")
    );
    let coverage = &merged["coverage"][0];
    assert_eq!(coverage["world_size"], 4);
    assert_eq!(coverage["ranks_missing"], serde_json::json!([]));
    assert_eq!(merged["nodes"][1]["ranks"], serde_json::json!([2, 3]));

    let text = npuprof(
        tmp.path(),
        &["summary", "--merge", "node-a.json", "node-b.json"],
    );
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("4 ranks of 4 present (0-3)"), "{text}");
    assert!(text.contains("stage imbalance: pipeline stage 1"), "{text}");
}

#[test]
fn a_missing_node_or_a_rank_reported_twice_exits_1_and_is_named() {
    let tmp = tempfile::tempdir().expect("tmp");
    node(tmp.path(), "node-a", &[0, 1]);
    node(tmp.path(), "node-ab", &[1, 2]);
    let out = npuprof(tmp.path(), &["summary", "--merge", "node-a.json", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        json_of(&out)["coverage"][0]["ranks_missing"],
        serde_json::json!([2, 3])
    );
    let out = npuprof(
        tmp.path(),
        &["summary", "--merge", "node-a.json", "node-ab.json"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("missing: ranks 3"), "{text}");
    assert!(text.contains("reported twice: ranks 1"), "{text}");
}

#[test]
fn a_document_that_is_not_a_summary_is_an_error() {
    let tmp = tempfile::tempdir().expect("tmp");
    let check = |name: &str, contents: &[u8], says: &str| {
        std::fs::write(tmp.path().join(name), contents).expect("write");
        let out = npuprof(tmp.path(), &["summary", "--merge", name]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains(name) && stderr.contains(says),
            "{name}: {stderr}"
        );
    };
    check(
        "verify.json",
        br#"{"schema_version": 1, "ok": true}"#,
        "not a `npuprof summary --json` document",
    );
    check(
        "future.json",
        br#"{"schema_version": 9, "path": ".", "runs": [], "ranks": []}"#,
        "schema_version 9",
    );
    check(
        "cut.json",
        br#"{"schema_version": 1, "path": "#,
        "not a `npuprof summary --json`",
    );
    let out = npuprof(tmp.path(), &["summary", "--merge", "absent.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("absent.json: no such file"));
    let out = npuprof(tmp.path(), &["summary", "--merge", "x.json", "--rank", "1"]);
    assert_eq!(out.status.code(), Some(2), "--merge with --rank is refused");
}

/// summary `--merge` and verify `--merge` answer "which ranks of the job are missing" by one
/// rule (`npuprof_runs::coverage`): the same world size, from the same source, and the same
/// missing ranks; without a recorded world size, one more than the highest rank reported.
#[test]
fn summary_and_verify_merges_agree_on_the_missing_ranks() {
    let tmp = tempfile::tempdir().expect("tmp");
    node(tmp.path(), "node-a", &[0, 1]);
    node(tmp.path(), "node-c", &[3]);
    for name in ["node-a", "node-c"] {
        // (The vendored run keeps only the files summary reads: each node's own verdict is
        // "not ok", its report is whole.)
        let out = npuprof(tmp.path(), &["verify", name, "--json"]);
        assert_eq!(json_of(&out)["target"]["expected_ranks"], 4);
        std::fs::write(tmp.path().join(format!("{name}.verify.json")), &out.stdout)
            .expect("write the node's verify report");
    }
    let summary = npuprof(
        tmp.path(),
        &["summary", "--merge", "node-a.json", "node-c.json", "--json"],
    );
    let verify = npuprof(
        tmp.path(),
        &[
            "verify",
            "--merge",
            "node-a.verify.json",
            "node-c.verify.json",
            "--json",
        ],
    );
    assert_eq!(summary.status.code(), Some(1), "{summary:?}");
    assert_eq!(verify.status.code(), Some(1), "{verify:?}");
    let (summary, verify) = (json_of(&summary), json_of(&verify));
    let coverage = &summary["coverage"][0];
    assert_eq!(coverage["world_size"], verify["world_size"]);
    assert_eq!(coverage["world_size"], 4);
    assert_eq!(coverage["world_size_source"], verify["world_size_source"]);
    assert_eq!(
        coverage["ranks_missing"],
        verify["phases"][0]["ranks_missing"]
    );
    assert_eq!(coverage["ranks_missing"], serde_json::json!([2]));

    // Documents that record no parallel groups: the world is one more than the highest rank
    // of any document, and the terminal says it is a lower bound.
    for name in ["node-a", "node-c"] {
        let path = tmp.path().join(format!("{name}.json"));
        let mut doc: Value =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("JSON");
        fn strip_parallel(v: &mut Value) {
            match v {
                Value::Object(map) => {
                    if map.get("parallel").is_some() {
                        map.insert("parallel".to_owned(), Value::Null);
                    }
                    map.values_mut().for_each(strip_parallel);
                }
                Value::Array(items) => items.iter_mut().for_each(strip_parallel),
                _ => {}
            }
        }
        strip_parallel(&mut doc);
        std::fs::write(&path, serde_json::to_vec(&doc).expect("JSON")).expect("write");
    }
    let out = npuprof(
        tmp.path(),
        &["summary", "--merge", "node-a.json", "node-c.json", "--json"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let coverage = json_of(&out)["coverage"][0].clone();
    assert_eq!(coverage["world_size"], 4);
    assert_eq!(coverage["world_size_source"], "highest-rank");
    assert_eq!(coverage["ranks_missing"], serde_json::json!([2]));
    let text = npuprof(
        tmp.path(),
        &["summary", "--merge", "node-a.json", "node-c.json"],
    );
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("3 ranks of at least 4 (no document records the world size) present"),
        "{text}"
    );
    assert!(text.contains("missing: ranks 2"), "{text}");
}
