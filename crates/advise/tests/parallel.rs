//! Advice that knows the parallel structure, on the real PP2×DP2 training run
//! (`crates/summary/tests/data/pp2-dp2`, MindStudio Insight's `test/st/level2`, torch_npu
//! 2.7.1; provenance and figures in its NOTICE.md): the straggler is looked for within each
//! data-parallel group, the pipeline stages' imbalance is its own finding, and a material wait
//! is sent to its cause by the same verdicts (a waiting stage to the stages' balance).

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
fn a_material_wait_is_sent_to_the_stages_it_waits_for_and_a_small_one_to_overlap() {
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
    // Rank 0 is in stage 0, which waits for stage 1 (the stage-imbalance finding): that is
    // where its wait comes from, not from rank 0 being its data-parallel group's straggler.
    assert!(
        rank0.action.starts_with(
            "the rank waits 164.14 ms per step (20.3% of the step): balance the pipeline stages \
             first (stage-imbalance: stage 1 computes longer and this rank's stage 0 waits for it)"
        ),
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

/// The vendored real 2-rank run (`crates/summary/tests/data/real-2rank`) copied to `dir` with
/// its `MatMulV2` kernels made MoE experts' (`Type` `GroupedMatmul`), rank 0's durations
/// times `scale`; returns each rank's expert time per step, computed from the rows written.
fn with_experts(dir: &Path, scale: f64) -> [f64; 2] {
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../summary/tests/data/real-2rank");
    let mut per_step = [0.0; 2];
    for (rank, expert_us) in per_step.iter_mut().enumerate() {
        let run = format!("rank{rank}_ascend_pt");
        let out = dir.join(&run).join("ASCEND_PROFILER_OUTPUT");
        std::fs::create_dir_all(&out).expect("mkdir");
        for file in [
            "step_trace_time.csv",
            "communication.json",
            "op_statistic.csv",
        ] {
            let from = real.join(&run).join("ASCEND_PROFILER_OUTPUT").join(file);
            std::fs::copy(from, out.join(file)).expect("copy");
        }
        let info = format!("profiler_info_{rank}.json");
        std::fs::copy(real.join(&run).join(&info), dir.join(&run).join(&info)).expect("copy");
        let csv_path = real
            .join(&run)
            .join("ASCEND_PROFILER_OUTPUT/kernel_details.csv");
        let mut reader = csv::Reader::from_path(&csv_path).expect("the vendored table");
        let header = reader.headers().expect("header").clone();
        let col = |name: &str| header.iter().position(|h| h == name).expect(name);
        let (kind, duration, step) = (col("Type"), col("Duration(us)"), col("Step Id"));
        let mut writer = csv::Writer::from_path(out.join("kernel_details.csv")).expect("write");
        writer.write_record(&header).expect("header");
        let (mut total, mut steps) = (0.0, std::collections::BTreeSet::new());
        for record in reader.records() {
            let mut fields: Vec<String> = record.expect("row").iter().map(str::to_owned).collect();
            steps.insert(fields[step].clone());
            if fields[kind] == "MatMulV2" {
                fields[kind] = "GroupedMatmul".to_owned();
                if rank == 0 {
                    let us: f64 = fields[duration].parse().expect("a duration");
                    fields[duration] = format!("{:.3}", us * scale);
                }
                total += fields[duration].parse::<f64>().expect("a duration");
            }
            writer.write_record(&fields).expect("row");
        }
        writer.flush().expect("flush");
        *expert_us = total / steps.len() as f64;
    }
    per_step
}

#[test]
fn the_experts_are_compared_across_ranks_and_an_uneven_load_is_a_finding() {
    // As recorded: rank 0's grouped matmuls 921.498 µs, rank 1's 947.559 µs: 2.8 % apart, even.
    let even = tempfile::tempdir().expect("tmp");
    let [r0, r1] = with_experts(even.path(), 1.0);
    assert!((r1 - r0) / r0 < 0.05, "{r0} {r1}");
    let advice = support::advised(even.path(), None, 10);
    assert!(of(&advice, Code::ExpertImbalance).is_empty());

    // Rank 0's experts made 1.5× slower: rank 0 is named, the spread is at stake.
    let uneven = tempfile::tempdir().expect("tmp");
    let [r0, r1] = with_experts(uneven.path(), 1.5);
    let advice = support::advised(uneven.path(), None, 10);
    let found = of(&advice, Code::ExpertImbalance);
    assert_eq!(found.len(), 1, "{:?}", advice.findings);
    assert_eq!(found[0].rank, Some(0));
    assert!(
        (found[0].at_stake_us - (r0 - r1)).abs() < 1e-6,
        "{} vs {}",
        found[0].at_stake_us,
        r0 - r1
    );
    assert!(
        found[0].title.contains(
            "compared as one group: profiler_metadata.json records no expert-parallel group"
        ),
        "{}",
        found[0].title
    );
    // Input Shapes recorded: 8 MatMulV2 rows of 32 input rows each, on both ranks, in the one
    // step: the same tokens, so rank 0 is slower per token, not busier.
    assert!(
        found[0].title.ends_with(
            "; their input rows per step 256 and 256 (not more tokens: the busier rank is slower per token)"
        ),
        "{}",
        found[0].title
    );
    assert_eq!(
        found[0].evidence[0].detail,
        "grouped-matmul (experts) time per step; 256 input rows"
    );
    let evidence: Vec<f64> = found[0].evidence.iter().filter_map(|e| e.time_us).collect();
    assert_eq!(evidence.len(), 2);
    assert!(
        (evidence[0] - r0).abs() < 1e-6 && (evidence[1] - r1).abs() < 1e-6,
        "{evidence:?}"
    );

    // With expert-parallel groups recorded: within the group; ranks of different groups are
    // not compared.
    let metadata = |groups: [&str; 2]| {
        for (rank, ranks) in groups.iter().enumerate() {
            let text = format!(
                r#"{{"parallel_group_info": {{"group_name_1": {{"group_name": "ep", "group_rank": 0, "global_ranks": {ranks}}}}}}}"#
            );
            let file = uneven
                .path()
                .join(format!("rank{rank}_ascend_pt/profiler_metadata.json"));
            std::fs::write(file, text).expect("write");
        }
    };
    metadata(["[0, 1]", "[0, 1]"]);
    let advice = support::advised(uneven.path(), None, 10);
    let found = of(&advice, Code::ExpertImbalance);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].title.contains("of its ep group (ranks 0, 1)"),
        "{}",
        found[0].title
    );
    metadata(["[0]", "[1]"]);
    let advice = support::advised(uneven.path(), None, 10);
    assert!(of(&advice, Code::ExpertImbalance).is_empty());
}

/// MindStudio Insight's `text/level2` run (`tests/data/msinsight-text-level2`, figures in its
/// NOTICE.md): rank 1 waits 8.78 ms of its 128.76 ms step in collectives (6.8 %), but the two
/// ranks' computing + free time differs by 4.3 %, under the straggler rule's 5 %. advise names
/// no slow rank to fix (it once said "fix the slow rank first" with no slow-rank finding), and
/// says what summary's rank block says, with the same numbers.
#[test]
fn a_material_wait_without_a_straggler_is_launch_skew_not_a_slow_rank() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/msinsight-text-level2");
    let advice = support::advised(&path, None, 10);
    assert!(of(&advice, Code::SlowRank).is_empty());
    assert!(of(&advice, Code::StageImbalance).is_empty());
    let rank1 = of(&advice, Code::CommunicationExposed)
        .into_iter()
        .find(|f| f.rank == Some(1))
        .expect("communication-exposed for rank 1");
    assert!(
        rank1.action.starts_with(
            "the rank waits 8.78 ms per step (6.8% of the step), yet no rank of its group is a \
             straggler (computing + free time within 4.3% across the ranks, threshold 5.0%): the \
             ranks reach the collectives at different moments (launch skew), no slow rank to fix"
        ),
        "{}",
        rank1.action
    );
    assert!(
        !rank1.action.contains("slow rank first"),
        "{}",
        rank1.action
    );
    let summary =
        npuprof_summary::summarize(&path, &npuprof_summary::Options::default()).expect("summary");
    let sentences = npuprof_summary::ranks::rank_sentences(&summary.ranks[0]);
    assert!(
        sentences
            .iter()
            .any(|s| s.contains("no straggler: computing + free time within 4.3% across ranks")),
        "{sentences:?}"
    );
}
