//! The advice codes: one definition each (code, severity, title, meaning, next action), as
//! data. The advise table of `docs/reports.md` is checked against [`Code::ALL`].

use npuprof_severity::Severity;
use serde::Serialize;

/// What one advice code is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeDef {
    /// The stable kebab-case spelling.
    pub code: &'static str,
    /// How much the finding matters.
    pub severity: Severity,
    /// What was found, in a few words.
    pub title: &'static str,
    /// What it means and how the time at stake is estimated.
    pub meaning: &'static str,
    /// What to do next.
    pub action: &'static str,
}

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident = $text:literal, $severity:ident,
        $title:literal, $meaning:literal, $action:literal; )+) => {
        /// Stable advice codes (kebab-case in JSON and in the terminal).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        pub enum Code {
            $( $(#[$doc])* #[serde(rename = $text)] $variant, )+
        }

        impl Code {
            /// Every code, in documentation order (ties of time at stake are listed so).
            pub const ALL: &'static [Code] = &[$(Code::$variant),+];

            /// The code's definition.
            pub fn def(self) -> CodeDef {
                match self {
                    $(Code::$variant => CodeDef {
                        code: $text,
                        severity: Severity::$severity,
                        title: $title,
                        meaning: $meaning,
                        action: $action,
                    },)+
                }
            }

            /// The stable kebab-case spelling.
            pub fn as_str(self) -> &'static str {
                self.def().code
            }
        }
    };
}

codes! {
    /// Ranks of one group differ in their own time (computing + free) by more than 5 %.
    SlowRank = "slow-rank", Warning,
    "one rank is the straggler, the others wait for it",
    "the rank whose computing and free time is longest holds every collective of its group up; \
     the others' communication time is mostly waiting. Ranks are compared within a data-parallel \
     group (else a pipeline stage) where profiler_metadata.json records the parallel groups, all \
     ranks as one group where it does not. At stake: its own time minus the group's fastest \
     rank's, per step",
    "compare the straggler with the fastest rank: `npuprof compare <fastest rank dir> <straggler dir>`; \
     look for extra kernels, a longer host gap, or uneven data (sequence lengths, experts) on it";
    /// Pipeline stages compute unequal time per step: the faster stages wait (the bubble).
    StageImbalance = "stage-imbalance", Warning,
    "pipeline stages compute unequal time per step",
    "the ranks of one pipeline stage (profiler_metadata.json's `pp` groups) compute longer per step \
     than another stage's, by more than 5 %: every step the faster stages wait for it, whichever \
     rank is slowest; ranks of different stages are not compared for a straggler. At stake: the \
     slowest stage's computing minus the fastest's, per step",
    "move layers from the slowest stage to the others (an uneven layer split per stage, e.g. \
     Megatron/MindSpeed's first- and last-stage layer counts), or use interleaved (virtual) \
     pipeline stages; then compare the stages again";
    /// The MoE experts' kernels take unequal time on the ranks of one expert-parallel group.
    ExpertImbalance = "expert-imbalance", Warning,
    "MoE experts run longer on some ranks than on others",
    "the grouped-matmul kernels (the experts' GEMMs: `GroupedMatmul*`) take more time per step \
     on one rank than on another of its expert-parallel group (profiler_metadata.json's `ep` or \
     `exp` group; all ranks of the phase where none is recorded), by more than 5 %: tokens are \
     routed unevenly, and every rank waits for the busiest in the combine. At stake: the busiest \
     rank's expert time minus the least busy one's, per step",
    "check the router's balance (auxiliary loss, capacity factor, expert placement or \
     redundant experts for hot ones); `npuprof breakdown` on both ranks shows the MoE blocks \
     layer by layer";
    /// Communication not hidden by computation is a large share of the step.
    CommunicationExposed = "communication-exposed", Warning,
    "communication is not overlapped with computation",
    "step_trace_time's Communication(Not Overlapped): the device does nothing else while it runs. \
     The collectives are listed by their own time no computing kernel overlapped (kernel_details.csv). \
     At stake: that time per step",
    "when the rank waits 5 % of its step or more in collectives, first what it waits for, by the \
     same verdicts: the slower pipeline stage (stage-imbalance), its group's straggler \
     (slow-rank), or no one when no rank is slow (launch skew); then overlap collectives with \
     compute (a second stream, async all-reduce) or fuse them (fewer, larger collectives)";
    /// The device is idle for a large share of the step.
    DeviceIdle = "device-idle", Warning,
    "the device is idle between kernels",
    "step_trace_time's Free: no kernel ran, typically because the host dispatches operators slower \
     than the device runs them (host-bound), or waits (synchronisation, data). The largest gaps on the \
     kernel timeline are listed, with what the host ran meanwhile when trace_view.json is there \
     (Python operators and CANN calls overlapping the gap; in a db export, the same calls from its \
     profiler database). At stake: the free time per step",
    "open trace_view.json at the largest gap (MindStudio Insight) to see what the host ran; remove \
     host syncs (`.item()`, `.cpu()`, prints) from the step; in decode, capture the graph \
     (torchair / ACL graph) so kernels are not dispatched one by one";
    /// Kernels whose busiest pipe is under 80 % busy.
    NoBound = "no-bound", Info,
    "kernels are bound by no pipe (every pipe under 80 % busy)",
    "the busiest of the cube, vector, scalar, MTE1, MTE2, MTE3 and fixpipe pipes is busy less than \
     80 % of the kernel's time: latency, launch overhead or small work per core. At stake: the kernels' \
     time times the share their busiest pipe idles, per step",
    "fuse small operators (fused RmsNorm, rotary, attention kernels), raise the work per launch \
     (batch, block dim), and check the tiling of the listed kernels";
    /// Kernels bound by the memory pipes (MTE1/MTE2/MTE3/fixpipe).
    MemoryBound = "memory-bound", Info,
    "kernels are bound by data movement",
    "the busiest pipe, at 80 % or more, is a memory transfer unit (MTE1, MTE2, MTE3, fixpipe): the \
     kernel waits for data, not for arithmetic; or, where the profiler wrote its own `memory_bound` \
     column (MTE2 over the busier of cube and vector, on chips without the AIC/AIV split), that \
     column is above 1. At stake: their time per step (what hiding the transfers could win at most)",
    "move less data: fuse element-wise chains, keep tensors in one format (no TransData round \
     trips), quantise weights (W8A8) or the KV cache";
    /// Operators running on the AI CPU.
    AiCpu = "ai-cpu-operators", Warning,
    "operators run on the AI CPU",
    "kernels whose accelerator core is AI_CPU run on the slow control CPUs of the NPU, usually because \
     no AI Core kernel exists for the operator or its dtype (int64, double). At stake: their time per step",
    "find the listed operators in the model and change the dtype (int64 → int32, float64 → float32) or \
     replace the operator with one the AI Core runs; keep them out of the step otherwise";
    /// Operators compiled for dynamic shapes.
    DynamicShape = "dynamic-shape", Info,
    "operators run with dynamic shapes",
    "kernels whose OP State is dynamic (or, without that column, an operator type seen with many input \
     shapes) are compiled or selected at run time, on the host. At stake: up to the free time per step, \
     where host-side compilation shows",
    "add `torch_npu.npu.set_compile_mode(jit_compile=False)` (and \
     `torch_npu.npu.config.allow_internal_format = False`) at the start of the script, or pad inputs \
     to a few fixed shapes (buckets)";
    /// Collective transfers in small packets.
    SmallPackets = "small-packets", Info,
    "collectives move data in small packets",
    "a fifth or more of a link's transfers are smaller than 16 MB over SDMA (HCCS, PCIe, SIO) or 1 MB \
     over RDMA, where the link's bandwidth is not reached. At stake: the small transfers' time per step",
    "batch small collectives into larger ones (bucket gradients or tensors, fuse all-reduces), or \
     raise the per-call data size";
    /// SDMA transfers whose size is not a multiple of 512 bytes.
    ByteAlignment = "byte-alignment", Info,
    "collectives move data in transfers not aligned to 512 bytes",
    "SDMA transfers (HCCS, PCIe, SIO) whose size is not a multiple of 512 bytes move at less \
     than the link's bandwidth; communication.json's packet sizes are whole bytes (MB of 10^6 bytes), \
     so the alignment of each size is exact. Flagged when they take 1 % of a link's transfer time or \
     more. At stake: the unaligned transfers' time per step (what aligning could win at most)",
    "make the collectives' tensors a multiple of 512 bytes per slice: pad the hidden or vocabulary \
     size, the bucket or the token count so that the size divided by the ranks is a multiple of 512 B";
    /// One rank's link reaches much less bandwidth than the best rank's same link.
    SlowLink = "slow-link", Warning,
    "one rank's link is slower than the other ranks' same link",
    "per link type (HCCS, PCIe, SIO, RDMA), the bandwidth each rank reaches over its transfers of \
     the small-packet size or more (16 MB on SDMA, 1 MB on RDMA), from communication.json's size \
     distribution; a rank 20 % or more below the best rank's same link is slow. At stake: the \
     extra time those transfers took over the best rank's bandwidth, per step",
    "check how the slow rank's device reaches its peers (HCCS, a PCIe switch or host bridge, SIO: \
     the topology `aclrtGetDevicesTopo` reports) and that link's health, for RDMA its NIC's; place \
     the ranks on devices joined by the faster link, or have the degraded link repaired";
    /// The run was profiled with `ASCEND_LAUNCH_BLOCKING=1`.
    LaunchBlocking = "launch-blocking", Warning,
    "operators ran one at a time (ASCEND_LAUNCH_BLOCKING=1)",
    "the environment torch_npu recorded with the run (profiler_metadata.json's ENV_VARIABLES, or a \
     db export's META_DATA) sets ASCEND_LAUNCH_BLOCKING=1: each operator is launched synchronously \
     and the host waits for the device after it, so the gaps and the free time are the setting's, \
     not the model's, and host and device never overlap. At stake: the free time per step",
    "unset ASCEND_LAUNCH_BLOCKING (or export ASCEND_LAUNCH_BLOCKING=0) and collect again: it is a \
     debugging setting; judge the other findings on the new profile";
    /// The CANN log level was debug or info.
    DebugLogging = "debug-logging", Info,
    "CANN logged at debug or info level (ASCEND_GLOBAL_LOG_LEVEL 0 or 1)",
    "the recorded environment sets ASCEND_GLOBAL_LOG_LEVEL to 0 (debug) or 1 (info): CANN writes \
     its logs on the host while the step runs, which slows dispatch. At stake: not estimated (0); \
     the free time per step bounds what the host costs",
    "export ASCEND_GLOBAL_LOG_LEVEL=3 (error, the default) before profiling, and collect again";
    /// The first recorded step is an outlier: compilation or warm-up inside the window.
    FirstStepOutlier = "first-step-outlier", Warning,
    "the first recorded step is an outlier (compilation or warm-up in the window)",
    "the first recorded step takes 10 times the median of the other steps or longer (verify's \
     compile-in-window rule, the same decision): graphs were compiled or caches warmed inside the \
     window, and every per-step figure averages that in. At stake: its time beyond the median, \
     spread over the steps",
    "warm up (run a few forwards) before the profiling window, or raise skip_first, then re-run; \
     until then the median step (p50 in `npuprof summary`) is the typical one";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_kebab_case_and_complete() {
        let mut seen = std::collections::HashSet::new();
        for code in Code::ALL {
            let def = code.def();
            assert!(seen.insert(def.code), "{} twice", def.code);
            assert!(
                def.code
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{}",
                def.code
            );
            for text in [def.title, def.meaning, def.action] {
                assert!(
                    !text.is_empty() && !text.ends_with('.'),
                    "{}: {text}",
                    def.code
                );
            }
            let json = serde_json::to_string(code).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", def.code));
        }
    }
}
