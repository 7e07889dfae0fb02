//! Ranks compared within their parallel groups, on the real PP2×DP2 training run
//! (`tests/data/pp2-dp2`, MindStudio Insight's `test/st/level2`, torch_npu 2.7.1; see its
//! NOTICE.md for provenance and the figures recomputed with Python).
//!
//! Pipeline stage 0 (ranks 0, 1) computes 231.29 / 230.90 ms per step and stage 1 (ranks 2, 3)
//! 400.45 / 401.13 ms: a flat comparison of computing + free calls rank 3 the straggler (548.65
//! ms against rank 1's 367.72 ms, +49 %), which it is not: the stages are unbalanced. Inside the
//! data-parallel groups the ranks differ by 6.0 % ({0, 1}: rank 0's free time) and 3.1 % ({2, 3}).

use std::path::{Path, PathBuf};

use npuprof_summary::ranks::{Grouping, PhaseRanks, rank_sentences};
use npuprof_summary::{Options, summarize};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pp2-dp2")
}

fn ranks(path: &Path) -> PhaseRanks {
    let summary = summarize(path, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    summary.ranks.into_iter().next().expect("a phase")
}

/// `us` in ms with two decimals.
fn ms(us: f64) -> String {
    format!("{:.2}", us / 1000.0)
}

#[test]
fn the_pipeline_stages_are_unbalanced_and_no_rank_of_another_stage_is_the_straggler() {
    let r = ranks(&data());
    assert_eq!(r.grouping, Grouping::Parallel);
    let stages: Vec<(u32, Vec<Option<u32>>)> = r
        .per_rank
        .iter()
        .map(|p| (p.stage.unwrap_or(99), vec![p.rank]))
        .collect();
    assert_eq!(
        stages,
        [
            (0, vec![Some(0)]),
            (0, vec![Some(1)]),
            (1, vec![Some(2)]),
            (1, vec![Some(3)])
        ]
    );
    let groups: Vec<(&str, &[Option<u32>])> = r
        .groups
        .iter()
        .map(|g| (g.kind.as_str(), g.ranks.as_slice()))
        .collect();
    assert_eq!(
        groups,
        [
            ("dp_cp", &[Some(0), Some(1)][..]),
            ("dp", &[Some(2), Some(3)][..])
        ]
    );
    // {0, 1}: rank 0 389.85 ms of its own per step, rank 1 367.72 ms (22.12 ms, +6.0 %); rank 1 waits
    // 170.79 ms in collectives, rank 0 164.14 ms.
    let first = r.groups[0]
        .straggler
        .as_ref()
        .expect("a straggler in {0, 1}");
    assert_eq!(
        (first.rank, first.fastest_rank, first.waiter_rank),
        (Some(0), Some(1), Some(1))
    );
    assert_eq!(
        (ms(first.spread_us), format!("{:.3}", first.spread)),
        ("22.12".into(), "0.060".into())
    );
    // {2, 3}: within 3.1 %.
    assert_eq!(r.groups[1].straggler, None);
    assert_eq!(
        r.groups[1].own_spread.map(|s| format!("{s:.3}")),
        Some("0.031".into())
    );
    // Rank 3 is named nowhere as a straggler.
    assert_eq!(r.straggler_rank, Some(0));
    let stages = r.stages.as_ref().expect("two stages");
    assert!(stages.imbalanced);
    assert_eq!((stages.slowest_stage, stages.fastest_stage), (1, 0));
    let computing: Vec<String> = stages.stages.iter().map(|s| ms(s.computing_us)).collect();
    // (231.2901 + 230.9037) / 2 and (400.4483 + 401.1317) / 2.
    assert_eq!(computing, ["231.10", "400.79"]);
    assert_eq!(
        (format!("{:.2}", stages.ratio), ms(stages.bubble_us)),
        ("1.73".into(), "169.69".into())
    );
    let sentences = rank_sentences(&r);
    assert_eq!(
        sentences.last().map(String::as_str),
        Some(
            "stage imbalance: pipeline stage 1 (ranks 2, 3) computes 400.79 ms per step, stage 0 \
             (ranks 0, 1) 231.10 ms (1.73×): stage 0 waits about 169.69 ms per step for it (the \
             pipeline bubble); ranks of different stages are not compared"
        )
    );
}

#[test]
fn without_profiler_metadata_the_ranks_are_compared_flat_and_the_report_says_so() {
    let copy = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for rank in 0..4 {
        let from = data().join(format!("rank_{rank}_ascend_pt"));
        let to = copy.path().join(format!("rank_{rank}_ascend_pt"));
        let output = to.join("ASCEND_PROFILER_OUTPUT");
        std::fs::create_dir_all(&output).unwrap_or_else(|e| panic!("{e}"));
        let info = format!("profiler_info_{rank}.json");
        for file in [
            info.as_str(),
            "ASCEND_PROFILER_OUTPUT/step_trace_time.csv",
            "ASCEND_PROFILER_OUTPUT/communication.json",
        ] {
            std::fs::copy(from.join(file), to.join(file)).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    let r = ranks(copy.path());
    assert_eq!(r.grouping, Grouping::Flat);
    assert_eq!(r.stages, None);
    // The flat comparison: rank 3 (548.65 ms of its own) against rank 1 (367.72 ms).
    assert_eq!(r.straggler_rank, Some(3));
    let sentences = rank_sentences(&r);
    assert!(
        sentences[0].starts_with("all ranks compared as one group"),
        "{sentences:?}"
    );
}
