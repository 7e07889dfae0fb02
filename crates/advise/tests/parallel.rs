//! Advice that knows the parallel structure, on the real PP2×DP2 training run
//! (`crates/summary/tests/data/pp2-dp2`, MindStudio Insight's `test/st/level2`, torch_npu
//! 2.7.1; provenance and figures in its NOTICE.md): the straggler is looked for within each
//! data-parallel group, the pipeline stages' imbalance is its own finding, and "fix the slow
//! rank first" is said only where the rank's wait is material.

mod support;

use std::path::{Path, PathBuf};

use npuprof_advise::{Advice, Code, Finding};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../summary/tests/data/pp2-dp2")
}

fn of(advice: &Advice, code: Code) -> Vec<&Finding> {
    advice.findings.iter().filter(|f| f.code == code).collect()
}

#[test]
fn the_stage_imbalance_is_a_finding_and_no_rank_of_the_slower_stage_is_a_straggler() {
    let advice = support::advised(&data(), None, 10);
    let stages = of(&advice, Code::StageImbalance);
    assert_eq!(stages.len(), 1);
    assert_eq!(
        stages[0].title,
        "pipeline stage 1 (ranks 2, 3) computes 400.79 ms per step, stage 0 (ranks 0, 1) 231.10 ms \
         (1.73×): stage 0 waits about 169.69 ms per step"
    );
    // (400448.26 + 401131.70) / 2 - (231290.10 + 230903.72) / 2 µs.
    assert_eq!(format!("{:.2}", stages[0].at_stake_us), "169693.07");
    // One straggler, inside the data-parallel group {0, 1}: rank 0, by its free time.
    let slow = of(&advice, Code::SlowRank);
    let titles: Vec<&str> = slow.iter().map(|f| f.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "rank 0 is the straggler of its dp_cp group (ranks 0, 1): 22.12 ms more computing and \
          free time per step than rank 1 (6.0% more); rank 1 waits most"
        ]
    );
    assert_eq!(slow[0].rank, Some(0));
}

#[test]
fn the_slow_rank_is_fixed_first_only_where_the_wait_is_material() {
    let advice = support::advised(&data(), None, 10);
    let exposed = |rank: u32| {
        of(&advice, Code::CommunicationExposed)
            .into_iter()
            .find(|f| f.rank == Some(rank))
            .unwrap_or_else(|| panic!("no communication-exposed for rank {rank}"))
    };
    // Rank 0 waits 164.14 ms of its 420.17 ms in collectives, 20.3 % of its 810.23 ms step.
    let rank0 = exposed(0);
    assert!(
        rank0
            .title
            .ends_with("per step the rank waits 164.14 ms, 39.1% of its time in collectives"),
        "{}",
        rank0.title
    );
    assert!(
        rank0.action.contains("fix the slow rank first"),
        "{}",
        rank0.action
    );
    // Rank 3 waits 0.8355 ms of 261.50 ms: overlap or fuse, not the slow rank.
    let rank3 = exposed(3);
    assert!(
        rank3
            .title
            .ends_with("waits 835.5 µs, 0.3% of its time in collectives"),
        "{}",
        rank3.title
    );
    assert!(!rank3.action.contains("slow rank"), "{}", rank3.action);
}
