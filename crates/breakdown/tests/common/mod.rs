//! A synthetic DeepSeek-like MoE decode step (3 dense + 58 MoE + 1 MTP layers), shared by
//! layer mode's test and the skill-structure test. The MoE layer's kernel order is the real one
//! of breakdown.md §4 (a captured decode graph's task list in MindStudio Insight's test data:
//! `FusedInferAttentionScore`, `AddRmsNorm`, `aiv_all_to_all_v_*`, `MoeGatingTopK`,
//! `GroupedMatmul`, `DequantSwigluQuant`, `MoeDistributeCombineV2`); the dense layer replaces
//! the MoE part by a dense MLP; the MTP layer is a MoE layer after its own two norms, concat
//! and projection, run after the main model's head and sampler. One MoE layer is planted slow.

#![allow(dead_code, reason = "each test uses a part")]

use npuprof_breakdown::kernels::{KernelRow, KernelTable};

pub const DENSE: &[(&str, f64)] = &[
    ("FusedInferAttentionScore", 30.0),
    ("AddRmsNorm", 5.0),
    ("MatMulV3", 20.0),
    ("SwiGlu", 4.0),
    ("MatMulV3", 18.0),
];

pub const MOE: &[(&str, f64)] = &[
    ("FusedInferAttentionScore", 30.0),
    ("AddRmsNorm", 5.0),
    ("aiv_all_to_all_v_fp16", 40.0),
    ("MoeGatingTopK", 8.0),
    ("GroupedMatmul", 60.0),
    ("DequantSwigluQuant", 6.0),
    ("MoeDistributeCombineV2", 45.0),
];

pub const MTP_PREFIX: &[(&str, f64)] = &[
    ("RmsNorm", 3.0),
    ("RmsNorm", 3.0),
    ("ConcatD", 2.0),
    ("MatMulV3", 15.0),
];

pub const HEAD: &[(&str, f64)] = &[("RmsNorm", 3.0), ("MatMulV3", 25.0), ("ArgMaxV2", 10.0)];

/// The planted slow layer (a MoE layer) and its GroupedMatmul's time.
pub const SLOW_LAYER: usize = 40;
pub const SLOW_GMM_US: f64 = 300.0;

pub struct Builder {
    pub table: KernelTable,
    pub now_ns: u64,
    pub seed: u64,
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

    pub fn kernels(&mut self, step: u64, kernels: &[(&str, f64)], factor: f64) {
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

    pub fn step(&mut self, step: u64) {
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

pub fn decode_steps(steps: u64) -> KernelTable {
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
