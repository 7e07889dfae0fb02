//! Kernel classes by `Type` (kernel_details.csv's column), kept as data: [`TABLE`] lists each
//! type (or type prefix) npuprof knows with its class, the types seen in the vendored real runs
//! included (those that belong to no model part explicitly as [`Class::Other`]; a test holds
//! the table to every type of those runs). A type the table does not list is `Other` too, but
//! [`lookup`] says it was not listed.

use serde::Serialize;

/// What part of a model a kernel type belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// The attention core (flash/paged/fused-infer attention, MLA prolog).
    AttentionCore,
    /// RMS/layer norms.
    Norm,
    /// MoE gating (top-k).
    MoeGate,
    /// MoE token dispatch (routing, permute, distribute-dispatch).
    MoeDispatch,
    /// MoE experts (grouped matmuls and their activation).
    MoeExperts,
    /// MoE combine (finalize routing, unpermute, distribute-combine).
    MoeCombine,
    /// Dense MLP and projection matmuls and activations.
    DenseMlp,
    /// Rotary position embedding and KV-cache writes.
    RopeKv,
    /// Communication (HCCL collectives, all-to-all, MC2 fused matmul-collectives).
    Communication,
    /// Embedding, output head, loss and sampling.
    EmbeddingHead,
    /// None of the above (element-wise, casts, copies, optimizer, …).
    Other,
}

impl Class {
    /// Every class, in the order of [`Class`].
    pub const ALL: [Class; 11] = [
        Class::AttentionCore,
        Class::Norm,
        Class::MoeGate,
        Class::MoeDispatch,
        Class::MoeExperts,
        Class::MoeCombine,
        Class::DenseMlp,
        Class::RopeKv,
        Class::Communication,
        Class::EmbeddingHead,
        Class::Other,
    ];

    /// The class's name as in the JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::AttentionCore => "attention_core",
            Class::Norm => "norm",
            Class::MoeGate => "moe_gate",
            Class::MoeDispatch => "moe_dispatch",
            Class::MoeExperts => "moe_experts",
            Class::MoeCombine => "moe_combine",
            Class::DenseMlp => "dense_mlp",
            Class::RopeKv => "rope_kv",
            Class::Communication => "communication",
            Class::EmbeddingHead => "embedding_head",
            Class::Other => "other",
        }
    }
}

/// How a [`TABLE`] entry matches a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// The whole type.
    Exact,
    /// A prefix of the type (`hcom_`, `AddRmsNorm`, …).
    Prefix,
}

/// The classes of kernel types: (type or prefix, how it matches, class). Exact entries win
/// over prefixes; the longest prefix wins among prefixes.
pub const TABLE: &[(&str, Match, Class)] = &[
    // attention core
    ("FlashAttentionScore", Match::Exact, Class::AttentionCore),
    (
        "FlashAttentionScoreGrad",
        Match::Exact,
        Class::AttentionCore,
    ),
    ("PromptFlashAttention", Match::Prefix, Class::AttentionCore),
    ("IncreFlashAttention", Match::Prefix, Class::AttentionCore),
    (
        "FusedInferAttentionScore",
        Match::Prefix,
        Class::AttentionCore,
    ),
    ("PagedAttention", Match::Prefix, Class::AttentionCore),
    ("MLAProlog", Match::Prefix, Class::AttentionCore),
    ("SparseFlashAttention", Match::Prefix, Class::AttentionCore),
    ("ScaledMaskedSoftmax", Match::Prefix, Class::AttentionCore),
    // norm
    ("RmsNorm", Match::Exact, Class::Norm),
    ("RmsNormGrad", Match::Exact, Class::Norm),
    ("AddRmsNorm", Match::Prefix, Class::Norm),
    ("LayerNorm", Match::Prefix, Class::Norm),
    // MoE
    ("MoeGatingTopK", Match::Prefix, Class::MoeGate),
    ("MoeInitRouting", Match::Prefix, Class::MoeDispatch),
    ("MoeDistributeDispatch", Match::Prefix, Class::MoeDispatch),
    ("MoeTokenPermute", Match::Prefix, Class::MoeDispatch),
    ("GroupedMatmul", Match::Prefix, Class::MoeExperts),
    ("DequantSwigluQuant", Match::Prefix, Class::MoeExperts),
    ("MoeFinalizeRouting", Match::Prefix, Class::MoeCombine),
    ("MoeDistributeCombine", Match::Prefix, Class::MoeCombine),
    ("MoeTokenUnpermute", Match::Prefix, Class::MoeCombine),
    // dense MLP and projections
    ("MatMul", Match::Exact, Class::DenseMlp),
    ("MatMulV2", Match::Exact, Class::DenseMlp),
    ("MatMulV3", Match::Exact, Class::DenseMlp),
    ("BatchMatMul", Match::Exact, Class::DenseMlp),
    ("BatchMatMulV2", Match::Exact, Class::DenseMlp),
    ("QuantBatchMatmulV3", Match::Exact, Class::DenseMlp),
    ("WeightQuantBatchMatmulV2", Match::Exact, Class::DenseMlp),
    ("SwiGlu", Match::Exact, Class::DenseMlp),
    ("SwiGluGrad", Match::Exact, Class::DenseMlp),
    ("FastGelu", Match::Exact, Class::DenseMlp),
    // rope and KV cache
    ("RotaryPositionEmbedding", Match::Exact, Class::RopeKv),
    ("RotaryPositionEmbeddingGrad", Match::Exact, Class::RopeKv),
    ("ScatterPaKvCache", Match::Prefix, Class::RopeKv),
    ("Sin", Match::Exact, Class::RopeKv),
    ("Cos", Match::Exact, Class::RopeKv),
    // communication
    ("hcom_", Match::Prefix, Class::Communication),
    ("aiv_all_to_all", Match::Prefix, Class::Communication),
    ("MatmulAllReduce", Match::Prefix, Class::Communication),
    ("AllGatherMatmul", Match::Prefix, Class::Communication),
    ("MatmulReduceScatter", Match::Prefix, Class::Communication),
    // embedding, head, loss, sampling
    ("GatherV2", Match::Exact, Class::EmbeddingHead),
    ("EmbeddingDenseGradV2", Match::Exact, Class::EmbeddingHead),
    ("ArgMaxV2", Match::Exact, Class::EmbeddingHead),
    ("ArgMaxWithValue", Match::Exact, Class::EmbeddingHead),
    ("TopKV2", Match::Exact, Class::EmbeddingHead),
    ("Sort", Match::Exact, Class::EmbeddingHead),
    ("SoftmaxV2", Match::Exact, Class::EmbeddingHead),
    ("LogSoftmaxV2", Match::Exact, Class::EmbeddingHead),
    ("LogSoftmaxGrad", Match::Exact, Class::EmbeddingHead),
    ("NLLLoss", Match::Exact, Class::EmbeddingHead),
    ("NLLLossGrad", Match::Exact, Class::EmbeddingHead),
    // seen in the vendored runs, no model part of their own
    ("0", Match::Exact, Class::Other),
    ("N/A", Match::Exact, Class::Other),
    ("Abs", Match::Exact, Class::Other),
    ("AdaptiveAvgPool3d", Match::Exact, Class::Other),
    ("AdaptiveAvgPool3dGrad", Match::Exact, Class::Other),
    ("Add", Match::Exact, Class::Other),
    ("ApplyAdamW", Match::Exact, Class::Other),
    ("ApplyAdamWV2", Match::Exact, Class::Other),
    ("AsStrided", Match::Exact, Class::Other),
    ("BroadcastTo", Match::Exact, Class::Other),
    ("Cast", Match::Exact, Class::Other),
    ("ConcatD", Match::Exact, Class::Other),
    ("Conv2D", Match::Exact, Class::Other),
    ("Conv2DBackpropFilter", Match::Exact, Class::Other),
    ("Conv2DBackpropInput", Match::Exact, Class::Other),
    ("DSAGenBitMask", Match::Exact, Class::Other),
    ("DSAStatelessGenBitMask", Match::Exact, Class::Other),
    ("DropOutDoMask", Match::Exact, Class::Other),
    ("Equal", Match::Exact, Class::Other),
    ("Exp", Match::Exact, Class::Other),
    ("Fill", Match::Exact, Class::Other),
    ("ForeachAddList", Match::Exact, Class::Other),
    ("ForeachMulScalar", Match::Exact, Class::Other),
    ("Greater", Match::Exact, Class::Other),
    ("GreaterEqual", Match::Exact, Class::Other),
    ("Index", Match::Exact, Class::Other),
    ("IndexPutV2", Match::Exact, Class::Other),
    ("Less", Match::Exact, Class::Other),
    ("Log", Match::Exact, Class::Other),
    ("LogicalNot", Match::Exact, Class::Other),
    ("LogicalOr", Match::Exact, Class::Other),
    ("LpNormReduceV2", Match::Exact, Class::Other),
    ("LpNormUpdateV2", Match::Exact, Class::Other),
    ("LpNormV2", Match::Exact, Class::Other),
    ("MaxPoolGradWithArgmaxV1", Match::Exact, Class::Other),
    ("MaxPoolWithArgmaxV1", Match::Exact, Class::Other),
    ("MemSet", Match::Exact, Class::Other),
    ("Mul", Match::Exact, Class::Other),
    ("Muls", Match::Exact, Class::Other),
    ("NonZero", Match::Exact, Class::Other),
    ("NotEqual", Match::Exact, Class::Other),
    ("OnesLike", Match::Exact, Class::Other),
    ("Pows", Match::Exact, Class::Other),
    ("Range", Match::Exact, Class::Other),
    ("RealDiv", Match::Exact, Class::Other),
    ("Reciprocal", Match::Exact, Class::Other),
    ("ReduceSum", Match::Exact, Class::Other),
    ("ReduceSumD", Match::Exact, Class::Other),
    ("Relu", Match::Exact, Class::Other),
    ("ReluGrad", Match::Exact, Class::Other),
    ("Slice", Match::Exact, Class::Other),
    ("Square", Match::Exact, Class::Other),
    ("StridedSliceD", Match::Exact, Class::Other),
    ("Sub", Match::Exact, Class::Other),
    ("TensorMove", Match::Exact, Class::Other),
    ("TransData", Match::Exact, Class::Other),
    ("Transpose", Match::Exact, Class::Other),
    ("Tril", Match::Exact, Class::Other),
    ("ZerosLike", Match::Exact, Class::Other),
];

/// The class of `kernel_type` and whether [`TABLE`] lists it (`false`: not listed, `Other`).
pub fn lookup(kernel_type: &str) -> (Class, bool) {
    let kernel_type = kernel_type.trim();
    if let Some((_, _, class)) = TABLE
        .iter()
        .find(|(t, m, _)| *m == Match::Exact && *t == kernel_type)
    {
        return (*class, true);
    }
    TABLE
        .iter()
        .filter(|(t, m, _)| *m == Match::Prefix && kernel_type.starts_with(t))
        .max_by_key(|(t, _, _)| t.len())
        .map_or((Class::Other, false), |(_, _, c)| (*c, true))
}

/// The class of `kernel_type` ([`lookup`]'s class).
pub fn class_of(kernel_type: &str) -> Class {
    lookup(kernel_type).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_before_prefix_and_longest_prefix() {
        assert_eq!(class_of("FlashAttentionScoreGrad"), Class::AttentionCore);
        assert_eq!(class_of("AddRmsNormQuant"), Class::Norm);
        assert_eq!(class_of("hcom_batchSendRecv_"), Class::Communication);
        assert_eq!(class_of("MoeDistributeCombineV2"), Class::MoeCombine);
        assert_eq!(lookup("SomethingNew"), (Class::Other, false));
        assert_eq!(lookup("Add"), (Class::Other, true));
    }

    #[test]
    fn every_entry_is_listed_once() {
        let mut seen = std::collections::HashSet::new();
        for (t, m, _) in TABLE {
            assert!(seen.insert((*t, *m as u8)), "{t} listed twice");
        }
    }
}
