//! `breakdown` over run directories: the method chosen per run, and bad input refused with a
//! specific error.

use std::fs;
use std::path::{Path, PathBuf};

use npuprof_breakdown::{Confidence, Method, Options, breakdown};

fn pp_table() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../verify/tests/data/Ascend-msinsight/\
         test__st__level2__rank_0_ascend_pt__ASCEND_PROFILER_OUTPUT__kernel_details.csv",
    )
}

/// A run directory `rank0_ascend_pt` under `root` holding `files` (name, bytes).
fn run(root: &Path, files: &[(&str, &[u8])]) -> PathBuf {
    let output = root.join("rank0_ascend_pt/ASCEND_PROFILER_OUTPUT");
    fs::create_dir_all(&output).expect("mkdir");
    for (name, bytes) in files {
        fs::write(output.join(name), bytes).expect("write");
    }
    root.join("rank0_ascend_pt")
}

#[test]
fn without_module_events_the_layers_are_inferred() {
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = fs::read(pp_table()).expect("table");
    let trace = br#"[{"ph":"X","cat":"cpu_op","name":"ProfilerStep#13","pid":1,"tid":1,"ts":"1.000","dur":5}]"#;
    run(
        dir.path(),
        &[("kernel_details.csv", &csv), ("trace_view.json", trace)],
    );
    let result = breakdown(dir.path(), &Options::default()).expect("breakdown");
    let run = &result.runs[0];
    assert_eq!(run.method, Method::Layers);
    assert_eq!(run.confidence, Confidence::High);
    assert!(run.modules.is_empty() && run.ledger.is_none());
    let layers = run.layers.as_ref().expect("layers");
    assert_eq!(layers.count, 56);
    assert_eq!(run.coverage, layers.coverage);
    assert!(run.notes.iter().any(|n| n.contains("no nn.Module events")));
}

#[test]
fn a_cut_trace_is_a_specific_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    run(
        dir.path(),
        &[("trace_view.json", br#"[{"ph":"X","name":"a""#)],
    );
    let err = breakdown(dir.path(), &Options::default()).expect_err("cut trace");
    let text = err.to_string();
    assert!(text.contains("trace_view.json"), "{text}");
    assert!(text.contains("ends inside an event"), "{text}");
}

#[test]
fn a_kernel_table_without_a_type_column_is_a_specific_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    run(
        dir.path(),
        &[(
            "kernel_details.csv",
            b"Name,Start Time(us),Duration(us)\na,1.0,2.0\n",
        )],
    );
    let err = breakdown(dir.path(), &Options::default()).expect_err("no Type");
    assert!(err.to_string().contains("`Type`"), "{err}");
}

#[test]
fn nothing_to_break_down_by_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    run(
        dir.path(),
        &[(
            "kernel_details.csv",
            b"Step Id,Name,Type,Start Time(us),Duration(us)\n1,a,Add,1.0,2.0\n1,b,Mul,4.0,2.0\n",
        )],
    );
    let result = breakdown(dir.path(), &Options::default()).expect("breakdown");
    let run = &result.runs[0];
    assert_eq!(run.method, Method::None);
    assert_eq!(run.confidence, Confidence::None);
    assert!(
        run.notes.iter().any(|n| n.contains("no layers inferred")),
        "{:?}",
        run.notes
    );
}

#[test]
fn a_db_export_with_module_calls_is_broken_down_from_its_database() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../summary/tests/data/db-level1");
    let result = breakdown(&dir, &Options::default()).expect("breakdown");
    assert_eq!(result.runs.len(), 2);
    for run in &result.runs {
        assert_eq!(run.method, Method::Modules);
        assert_eq!(run.confidence, Confidence::Exact);
        assert!(
            run.notes
                .iter()
                .any(|n| n.starts_with("db export: module calls")),
            "{:?}",
            run.notes
        );
    }
}
