//! Layer mode on a synthetic DeepSeek-like MoE decode step (3 dense + 58 MoE + 1 MTP
//! layers), generated here. The MoE layer's kernel order is the real one of breakdown.md §4
//! (a captured decode graph's task list in MindStudio Insight's test data:
//! `FusedInferAttentionScore`, `AddRmsNorm`, `aiv_all_to_all_v_*`, `MoeGatingTopK`,
//! `GroupedMatmul`, `DequantSwigluQuant`, `MoeDistributeCombineV2`); the dense layer replaces
//! the MoE part by a dense MLP; the MTP layer is a MoE layer after its own two norms, concat
//! and projection, run after the main model's head and sampler. One MoE layer is planted slow.

use npuprof_breakdown::classes::Class;
use npuprof_breakdown::kernels::{KernelRow, KernelTable};
use npuprof_breakdown::layers::{Direction, RegionRole, infer};

const DENSE: &[(&str, f64)] = &[
    ("FusedInferAttentionScore", 30.0),
    ("AddRmsNorm", 5.0),
    ("MatMulV3", 20.0),
    ("SwiGlu", 4.0),
    ("MatMulV3", 18.0),
];

const MOE: &[(&str, f64)] = &[
    ("FusedInferAttentionScore", 30.0),
    ("AddRmsNorm", 5.0),
    ("aiv_all_to_all_v_fp16", 40.0),
    ("MoeGatingTopK", 8.0),
    ("GroupedMatmul", 60.0),
    ("DequantSwigluQuant", 6.0),
    ("MoeDistributeCombineV2", 45.0),
];

const MTP_PREFIX: &[(&str, f64)] = &[
    ("RmsNorm", 3.0),
    ("RmsNorm", 3.0),
    ("ConcatD", 2.0),
    ("MatMulV3", 15.0),
];

const HEAD: &[(&str, f64)] = &[("RmsNorm", 3.0), ("MatMulV3", 25.0), ("ArgMaxV2", 10.0)];

/// The planted slow layer (a MoE layer) and its GroupedMatmul's time.
const SLOW_LAYER: usize = 40;
const SLOW_GMM_US: f64 = 300.0;

struct Builder {
    table: KernelTable,
    now_ns: u64,
    seed: u64,
}

impl Builder {
    fn ty(&mut self, name: &str) -> u32 {
        match self.table.types.iter().position(|t| t == name) {
            Some(i) => i as u32,
            None => {
                self.table.types.push(name.to_owned());
                (self.table.types.len() - 1) as u32
            }
        }
    }

    /// A factor in [0.99, 1.01] (an LCG: the test is deterministic).
    fn jitter(&mut self) -> f64 {
        self.seed = self
            .seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        0.99 + 0.02 * ((self.seed >> 11) as f64 / (1u64 << 53) as f64)
    }

    fn kernels(&mut self, step: u64, kernels: &[(&str, f64)], factor: f64) {
        for &(name, us) in kernels {
            let ty = self.ty(name);
            let dur_ps = (us * factor * 1e6).round() as u64;
            self.table.rows.push(KernelRow {
                step: Some(step),
                ty,
                start_ns: self.now_ns,
                dur_ps,
            });
            self.now_ns += dur_ps / 1000 + 1000; // 1 µs launch gap
        }
    }

    fn step(&mut self, step: u64) {
        self.kernels(step, &[("GatherV2", 10.0)], 1.0);
        for _ in 0..3 {
            let f = self.jitter();
            self.kernels(step, DENSE, f);
        }
        for layer in 3..61 {
            let f = self.jitter();
            if layer == SLOW_LAYER {
                let mut slow = MOE.to_vec();
                slow[4].1 = SLOW_GMM_US;
                self.kernels(step, &slow, f);
            } else {
                self.kernels(step, MOE, f);
            }
        }
        self.kernels(step, HEAD, 1.0);
        let f = self.jitter();
        self.kernels(step, MTP_PREFIX, f);
        self.kernels(step, MOE, f);
        self.kernels(step, HEAD, 1.0);
        self.now_ns += 5_000_000;
    }
}

fn decode_steps(steps: u64) -> KernelTable {
    let mut b = Builder {
        table: KernelTable::default(),
        now_ns: 1_000_000_000,
        seed: 42,
    };
    for step in 1..=steps {
        b.step(step);
    }
    b.table
}

#[test]
fn sixty_two_layers_in_three_kinds_and_the_slow_one_found() {
    let layers = infer(&decode_steps(4)).expect("layers");
    assert_eq!(layers.count, 62);
    assert_eq!(layers.steps, 4);
    assert_eq!(
        layers.anchor.as_ref().map(|a| a.class),
        Some(Class::AttentionCore)
    );
    let kinds: Vec<(usize, usize, Direction)> = layers
        .kinds
        .iter()
        .map(|k| (k.layers, k.kernels, k.direction))
        .collect();
    assert_eq!(
        kinds,
        [
            (3, 5, Direction::Forward),
            (58, 7, Direction::Forward),
            (1, 11, Direction::Forward),
        ]
    );
    let runs: Vec<(usize, usize, usize)> = layers
        .runs
        .iter()
        .map(|r| (r.kind, r.first_layer, r.layers))
        .collect();
    assert_eq!(runs, [(0, 0, 3), (1, 3, 58), (2, 61, 1)]);
    // The MTP layer starts after the main model's sampler, at its own norms.
    let mtp = &layers.items[61];
    assert!(mtp.single);
    assert_eq!(mtp.first_kernel, 1 + 3 * 5 + 58 * 7 + HEAD.len());
    assert_eq!(layers.outliers, [SLOW_LAYER]);
    let slow = &layers.items[SLOW_LAYER];
    let experts = slow
        .classes
        .iter()
        .find(|c| c.class == Class::MoeExperts)
        .expect("experts");
    assert!(experts.us > SLOW_GMM_US * 0.99);
    // Outside the layers: the embedding before, the head and sampler between and after.
    let roles: Vec<(RegionRole, usize)> =
        layers.regions.iter().map(|r| (r.role, r.kernels)).collect();
    assert_eq!(
        roles,
        [
            (RegionRole::Before, 1),
            (RegionRole::Between, HEAD.len()),
            (RegionRole::After, HEAD.len())
        ]
    );
    assert!(layers.regions.iter().all(|r| r.waits.is_empty()));
}

#[test]
fn attention_kernels_back_to_back_are_not_layers() {
    let mut b = Builder {
        table: KernelTable::default(),
        now_ns: 0,
        seed: 1,
    };
    b.kernels(1, &[("GatherV2", 1.0), ("MatMulV3", 1.0)], 1.0);
    for _ in 0..6 {
        b.kernels(1, &[("FlashAttentionScore", 5.0)], 1.0);
    }
    b.kernels(1, &[("Add", 1.0), ("Cast", 1.0)], 1.0);
    assert!(infer(&b.table).is_none());
}

#[test]
fn no_anchor_no_layers() {
    let mut b = Builder {
        table: KernelTable::default(),
        now_ns: 0,
        seed: 1,
    };
    for _ in 0..50 {
        b.kernels(
            1,
            &[("Add", 1.0), ("Greater", 1.0), ("Mul", 1.0), ("Cast", 1.0)],
            1.0,
        );
    }
    assert!(infer(&b.table).is_none());
}
