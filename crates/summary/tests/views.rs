//! The views beyond the step split on the vendored real 2-rank run, against values computed
//! independently (`data/real-2rank/expected.py`: Python's csv/json/decimal) and, for the
//! timeline, against the vendor's own step split (`step_trace_time.csv`, written by
//! torch_npu's parser from the trace): the one-step timeline's lanes, the memory peak and who
//! holds it, the kernels by name and input shapes, the communication matrix; and what a run
//! without those files says.

mod common;

use common::{Layout, expected, real_copy, real_run, run_dirs, run_of};
use npuprof_summary::{Options, RunSummary, Summary, summarize};
use serde_json::Value;

fn summary_all() -> Summary {
    let options = Options {
        top: None,
        ..Options::default()
    };
    summarize(&real_run(), &options).unwrap_or_else(|e| panic!("{e}"))
}

fn num(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

/// `got` within `tolerance` µs of `want`.
fn check_within(what: &str, got: f64, want: f64, tolerance: f64) {
    assert!(
        (got - want).abs() <= tolerance,
        "{what}: npuprof {got}, other {want}"
    );
}

fn check_timeline(run: &RunSummary, want: &Value) {
    let t = run.timeline.as_ref().expect("a timeline");
    assert_eq!(t.step, 50);
    assert_eq!(t.why, "the only step recorded");
    assert_eq!(t.tasks, want["tasks"].as_u64().unwrap_or_default());
    assert_eq!(t.dropped, 0);
    // Integer ns on both sides: equal up to the printing of the µs.
    for (what, got) in [
        ("window_us", t.window_us),
        ("computing_us", t.computing_us),
        ("communication_us", t.communication_us),
        ("free_us", t.free_us),
    ] {
        check_within(what, got, num(&want[what]), 1e-6);
    }
    // The vendor's split of the same step agrees to a tenth of a µs.
    let step = &run.steps[0];
    check_within("vendor's Computing", t.computing_us, step.computing_us, 0.1);
    check_within(
        "vendor's Communication",
        t.communication_us,
        step.communication_us.unwrap_or_default(),
        0.1,
    );
    check_within("vendor's Free", t.free_us, step.free_us, 0.1);
    check_within(
        "vendor's Overlapped",
        t.overlapped_us,
        step.overlapped_us.unwrap_or_default(),
        0.1,
    );
    // Drawn as recorded (under a thousand intervals a lane): in order, inside the window,
    // opaque, adding up to the lane's time.
    assert_eq!(t.drawn, t.intervals);
    for (lane, exact) in [(0, t.computing_us), (1, t.communication_us), (2, t.free_us)] {
        let spans = &t.lanes[lane].1;
        assert!(spans.windows(2).all(|w| w[0].end_us <= w[1].start_us));
        assert!(spans.iter().all(|d| d.start_us >= 0.0
            && d.start_us < d.end_us
            && d.end_us <= t.window_us + 1e-9
            && d.busy == 1.0));
        let drawn: f64 = spans.iter().map(|d| d.end_us - d.start_us).sum();
        check_within("drawn lane", drawn, exact, 1e-6);
    }
}

#[test]
fn the_timeline_lanes_match_python_and_the_vendors_step_split() {
    let summary = summary_all();
    let want = expected();
    for rank in [0, 1] {
        check_timeline(
            run_of(&summary, rank),
            &want["runs"][rank.to_string()]["timeline"],
        );
    }
}

#[test]
fn the_memory_peak_and_who_holds_it_match_python() {
    let summary = summary_all();
    let want = expected();
    for rank in [0u32, 1] {
        let m = run_of(&summary, rank).memory.as_ref().expect("memory");
        let want = &want["runs"][rank.to_string()]["memory"];
        let peak = m.peak.as_ref().expect("a peak");
        assert_eq!(m.component.as_deref(), Some("PTA+GE"));
        assert_eq!(
            Some(peak.allocated_bytes),
            want["peak_allocated_bytes"].as_u64()
        );
        assert_eq!(peak.reserved_bytes, want["peak_reserved_bytes"].as_u64());
        assert_eq!(
            m.headroom_bytes,
            Some(peak.reserved_bytes.unwrap_or_default() - peak.allocated_bytes)
        );
        assert_eq!(Some(m.holders_alive), want["holders_alive"].as_u64());
        assert_eq!(Some(m.held_bytes), want["held_bytes"].as_u64());
        let top = &m.holders[0];
        assert_eq!(
            top.name,
            want["top_holder"]["name"].as_str().unwrap_or_default()
        );
        assert_eq!(
            Some(top.size_bytes),
            want["top_holder"]["size_bytes"].as_u64()
        );
        assert!(
            m.holders
                .windows(2)
                .all(|w| w[0].size_bytes >= w[1].size_bytes)
        );
        assert_eq!(
            m.modules[0].component,
            want["top_module"]["component"].as_str().unwrap_or_default()
        );
        assert_eq!(
            Some(m.modules[0].reserved_max_bytes),
            want["top_module"]["reserved_max_bytes"].as_u64()
        );
        assert!(m.missing.is_empty(), "{:?}", m.missing);
        assert!(!m.curve.is_empty());
        assert!(
            m.curve
                .iter()
                .any(|p| p.allocated_bytes == peak.allocated_bytes)
        );
    }
}

/// Frozen from the run (provenance: `expected.py` on the vendored files, MindStudio Insight's
/// `test/data/pytorch/text/level1/rank0_ascend_pt`): rank 0's allocator peaks at
/// 1,322,299,392 bytes (1261.04296875 MB, PTA+GE) with 1,600,913,408 reserved; the largest
/// allocation alive then is an `aten::mm` output of 150,995,456 bytes (147456.5 KB).
#[test]
fn the_frozen_peak_of_rank_0() {
    let summary = summary_all();
    let m = run_of(&summary, 0).memory.as_ref().expect("memory");
    let peak = m.peak.as_ref().expect("a peak");
    assert_eq!(
        (peak.allocated_bytes, peak.reserved_bytes),
        (1_322_299_392, Some(1_600_913_408))
    );
    assert_eq!(
        (m.holders[0].name.as_str(), m.holders[0].size_bytes),
        ("aten::mm", 150_995_456)
    );
}

#[test]
fn kernels_by_name_and_shapes_match_python() {
    let summary = summary_all();
    let want = expected();
    for rank in [0u32, 1] {
        let run = run_of(&summary, rank);
        let want = &want["runs"][rank.to_string()]["shapes"];
        assert_eq!(Some(run.by_shape.len() as u64), want["groups"].as_u64());
        let top = run
            .by_shape
            .iter()
            .find(|g| !g.shapes.is_empty())
            .expect("a group with shapes");
        let w = &want["top_with_shapes"];
        assert_eq!(top.name, w["name"].as_str().unwrap_or_default());
        assert_eq!(top.shapes, w["shapes"].as_str().unwrap_or_default());
        assert_eq!(Some(top.count), w["count"].as_u64());
        check_within("shape group total", top.total_us, num(&w["total_us"]), 1e-9);
        let sum: f64 = run.by_shape.iter().map(|g| g.total_us).sum();
        let total = run.kernels.as_ref().map_or(0.0, |k| k.total_us);
        check_within("groups add up to the kernel time", sum, total, 1e-6);
    }
}

#[test]
fn the_communication_matrix_matches_python() {
    let summary = summary_all();
    let want = expected();
    for rank in [0u32, 1] {
        let matrix = run_of(&summary, rank).matrix.as_ref().expect("a matrix");
        let want = want["runs"][rank.to_string()]["matrix"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(matrix.steps, 1);
        assert_eq!(matrix.ops.len(), 1);
        let op = &matrix.ops[0];
        assert_eq!(op.op, "allreduce");
        assert_eq!(op.links.len(), want.len());
        for link in &op.links {
            let pair = format!("{}-{}", link.src, link.dst);
            assert_eq!(link.src, rank.to_string());
            check_within(&pair, link.bandwidth_gbps, num(&want[&pair]), 1e-9);
        }
    }
}

/// Without the memory files and the matrix: no memory and no matrix, no error, no note; a run
/// without `step_trace_time.csv` says why it has no timeline.
#[test]
fn missing_files_leave_the_views_out_and_say_why() {
    let tmp = real_copy(Layout::Flat);
    let dir = run_dirs(tmp.path(), Layout::Flat)[0].1.clone();
    let output = dir.join("ASCEND_PROFILER_OUTPUT");
    for file in [
        "memory_record.csv",
        "communication_matrix.json",
        "step_trace_time.csv",
    ] {
        std::fs::remove_file(output.join(file)).unwrap_or_else(|e| panic!("{e}"));
    }
    let summary = summarize(&dir, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let run = &summary.runs[0];
    let memory = run.memory.as_ref().expect("the two other memory files");
    assert_eq!(memory.peak, None);
    assert!(memory.holders.is_empty());
    assert_eq!(
        memory.missing,
        ["memory_record.csv: not there: no curve and no peak"]
    );
    assert!(!memory.modules.is_empty());
    assert_eq!(run.matrix, None);
    assert_eq!(run.timeline, None);
    assert_eq!(
        run.timeline_missing.as_deref(),
        Some("no numbered step in step_trace_time.csv to choose one from")
    );
    for file in ["operator_memory.csv", "npu_module_mem.csv"] {
        std::fs::remove_file(output.join(file)).unwrap_or_else(|e| panic!("{e}"));
    }
    let summary = summarize(&dir, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(summary.runs[0].memory, None);
}

/// A memory file that is not what torch_npu writes is said in the memory view, and the rest of
/// the summary stands.
#[test]
fn a_broken_memory_file_is_said_not_fatal() {
    let tmp = real_copy(Layout::Flat);
    let dir = run_dirs(tmp.path(), Layout::Flat)[0].1.clone();
    let record = dir.join("ASCEND_PROFILER_OUTPUT").join("memory_record.csv");
    std::fs::write(
        &record,
        "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB)\nPTA,1.0,oops,2\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let summary = summarize(&dir, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let memory = summary.runs[0].memory.as_ref().expect("memory");
    assert_eq!(memory.peak, None);
    assert_eq!(memory.missing.len(), 1, "{:?}", memory.missing);
    assert!(
        memory.missing[0].contains("line 2: column `Total Allocated(MB)` is not a number"),
        "{:?}",
        memory.missing
    );
    assert!(summary.runs[0].kernels.is_some());
}
