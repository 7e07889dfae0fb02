//! Layer mode on a real run: ranks 0 and 2 (pipeline stages 0 and 1) of MindStudio Insight's
//! 4-rank PP2×DP2 LLM training step (`test/st/level2`, vendored in
//! crates/verify/tests/data/Ascend-msinsight/, Mulan PSL v2, see its NOTICE).

use std::path::PathBuf;

use npuprof_breakdown::classes::Class;
use npuprof_breakdown::layers::{Direction, RegionRole, infer};
use npuprof_breakdown::{Confidence, kernels};

fn table() -> kernels::KernelTable {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../verify/tests/data/Ascend-msinsight/\
         test__st__level2__rank_0_ascend_pt__ASCEND_PROFILER_OUTPUT__kernel_details.csv",
    );
    kernels::read(&path).expect("the vendored table")
}

#[test]
fn two_micro_batches_of_14_forward_and_14_backward_layers() {
    let table = table();
    let layers = infer(&table).expect("layers");
    assert_eq!(layers.count, 56);
    assert_eq!(layers.confidence, Confidence::High);
    let anchor = layers.anchor.as_ref().expect("anchor");
    assert_eq!(anchor.class, Class::AttentionCore);
    assert_eq!(
        anchor.types,
        ["FlashAttentionScore", "FlashAttentionScoreGrad"]
    );
    // Two kinds: the forward layer (31 kernels) and the backward layer (36 kernels).
    let kinds: Vec<(Direction, usize, usize)> = layers
        .kinds
        .iter()
        .map(|k| (k.direction, k.layers, k.kernels))
        .collect();
    assert_eq!(
        kinds,
        [(Direction::Forward, 28, 31), (Direction::Backward, 28, 36)]
    );
    // 1F1B on stage 0 with two micro-batches: F1 F2 B1 B2.
    let runs: Vec<(Direction, usize, usize, usize)> = layers
        .runs
        .iter()
        .map(|r| (r.direction, r.first_layer, r.layers, r.occurrence))
        .collect();
    assert_eq!(
        runs,
        [
            (Direction::Forward, 0, 14, 0),
            (Direction::Forward, 14, 14, 1),
            (Direction::Backward, 28, 14, 0),
            (Direction::Backward, 42, 14, 1),
        ]
    );
    // Layers start at their input norm, after the embedding (kernels 0..7).
    assert_eq!(layers.items[0].first_kernel, 7);
    assert_eq!(table.types[table.rows[7].ty as usize], "RmsNorm");
    // The forward layer's kernel time: median 2.085 ms (as measured in breakdown.md §4).
    let mut forward: Vec<f64> = layers.items[..28].iter().map(|it| it.kernel_us).collect();
    forward.sort_by(f64::total_cmp);
    let median = (forward[13] + forward[14]) / 2.0;
    assert!(
        (median - 2085.0).abs() < 5.0,
        "forward layer median {median} µs"
    );
}

#[test]
fn the_optimizer_loop_is_not_a_layer() {
    let table = table();
    let layers = infer(&table).expect("layers");
    let greater = table
        .types
        .iter()
        .position(|t| t == "Greater")
        .expect("Greater") as u32;
    let in_layers = |i: usize| {
        layers
            .items
            .iter()
            .any(|it| (it.first_kernel..it.first_kernel + it.kernels).contains(&i))
    };
    let loops: Vec<usize> = (0..table.rows.len())
        .filter(|&i| table.rows[i].ty == greater)
        .collect();
    assert_eq!(loops.len(), 24);
    assert!(loops.iter().all(|&i| !in_layers(i)));
    // They are in the tail: after the last layer.
    let tail = layers.regions.last().expect("tail");
    assert_eq!(tail.role, RegionRole::After);
    assert!(loops.iter().all(|&i| i >= tail.first_kernel));
    assert!(layers.coverage > 0.0 && layers.coverage < 1.0);
    // Most communication (gradient sync, pipeline waits) lies outside the layers.
    assert!(layers.compute_coverage > layers.coverage && layers.compute_coverage < 1.0);
}

#[test]
fn the_pipeline_wait_lies_between_the_forward_and_the_backward_passes() {
    let table = table();
    let layers = infer(&table).expect("layers");
    let waits: Vec<(usize, Option<usize>, &str, f64)> = layers
        .regions
        .iter()
        .flat_map(|r| {
            r.waits
                .iter()
                .map(move |w| (w.kernel, r.after_layer, w.kernel_type.as_str(), w.us))
        })
        .collect();
    // 158.6 ms at kernel 884: after the last forward layer of micro-batch 2 (layer 27), before
    // the first backward layer (28); the second, 154.9 ms, between the two backward passes.
    assert_eq!(waits.len(), 2);
    assert_eq!(waits[0].0, 884);
    assert_eq!(waits[0].1, Some(27));
    assert_eq!(waits[0].2, "hcom_batchSendRecv_");
    assert!((waits[0].3 - 158_553.28).abs() < 1e-6);
    assert_eq!(layers.items[28].first_kernel, 885);
    assert_eq!((waits[1].0, waits[1].1), (1397, Some(41)));
}

/// Rank 2 (pipeline stage 1, the last) of the same step.
fn stage1_table() -> kernels::KernelTable {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../verify/tests/data/Ascend-msinsight/\
         test__st__level2__rank_2_ascend_pt__ASCEND_PROFILER_OUTPUT__kernel_details.csv",
    );
    kernels::read(&path).expect("the vendored table")
}

#[test]
fn the_last_stage_has_the_same_layers_in_1f1b_order_and_the_head() {
    let layers = infer(&stage1_table()).expect("layers");
    assert_eq!(layers.count, 56);
    assert_eq!(layers.confidence, Confidence::High);
    // The last stage runs each micro-batch's backward right after its forward: F B F B.
    let runs: Vec<(Direction, usize, usize)> = layers
        .runs
        .iter()
        .map(|r| (r.direction, r.layers, r.occurrence))
        .collect();
    assert_eq!(
        runs,
        [
            (Direction::Forward, 14, 0),
            (Direction::Backward, 14, 0),
            (Direction::Forward, 14, 1),
            (Direction::Backward, 14, 1),
        ]
    );
    // It first waits for stage 0's activations (a receive before the first layer).
    let before = &layers.regions[0];
    assert_eq!(before.role, RegionRole::Before);
    assert_eq!(before.waits.len(), 1);
    assert_eq!(before.waits[0].kernel_type, "hcom_batchSendRecv_");
    assert!(before.waits[0].us > 70_000.0);
    // After each forward pass: the output head's large matmuls and the loss.
    for after_forward in [13, 41] {
        let region = layers
            .regions
            .iter()
            .find(|r| r.after_layer == Some(after_forward))
            .expect("a region after the forward pass");
        let head = region
            .classes
            .iter()
            .find(|c| c.class == Class::DenseMlp)
            .expect("the head's matmuls");
        assert!(head.us > 30_000.0, "{region:?}");
    }
}
