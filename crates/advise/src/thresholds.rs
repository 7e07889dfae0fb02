//! The limits the rules judge by, held once (the anchor's where it has one).

/// The no-bound threshold and the profiler's memory-bound column limit: summary's, held once
/// (every bound verdict is [`npuprof_summary::pipe::Bound::of`]).
pub use npuprof_summary::pipe::{BOUND_RATIO, VENDOR_MEMORY_BOUND};

/// Device idle (step_trace_time's `Free`) worth a finding, as a share of the step.
pub const IDLE_SHARE: f64 = 0.10;

/// Communication not hidden by computation worth a finding, as a share of the step.
pub const EXPOSED_COMM_SHARE: f64 = 0.10;

/// A rank's wait in collectives that is material, as a share of its step: the slow rank is fixed
/// first only past it (the anchor's 5 % slow-rank spread: less wait than that is less than the
/// spread a slow rank is named at).
pub const WAIT_SHARE: f64 = 0.05;

/// Ranks of a phase whose own time (computing + free) differs by more than this share of the
/// shortest are imbalanced: the anchor's 5 % slow-rank spread (summary's, held once).
pub use npuprof_summary::ranks::RANK_SPREAD;

/// The kernel names (and types) of MoE experts' GEMMs, by prefix: `GroupedMatmul`,
/// `GroupedMatmulSwigluQuant`, `GroupedMatmulFinalizeRouting`, … (breakdown's kernel classes
/// put them in `moe_experts`).
pub const EXPERT_KERNELS: [&str; 1] = ["GroupedMatmul"];

/// The parallel groups of profiler_metadata.json that hold the ranks sharing experts.
pub const EXPERT_GROUPS: [&str; 2] = ["ep", "exp"];

/// A gap between kernels on the device timeline that is listed as a bubble (µs).
pub const GAP_US: f64 = 10.0;

/// Transfers over SDMA links (HCCS, PCIe, SIO) smaller than this are small packets (MB).
pub const SDMA_SMALL_MB: f64 = 16.0;

/// Transfers over RDMA smaller than this are small packets (MB).
pub const RDMA_SMALL_MB: f64 = 1.0;

/// Small packets worth a finding: this share of a link's transfers or more.
pub const SMALL_PACKET_SHARE: f64 = 0.2;

/// SDMA transfers whose size is not a multiple of this (bytes) are unaligned: the alignment
/// msprof-analyze's advisor checks SDMA transfer sizes against.
pub const ALIGN_BYTES: u64 = 512;

/// Unaligned transfers worth a finding: this share of their link's transfer time or more.
/// An all-reduce whose tensor is not a multiple of 512 B × ranks leaves one unaligned slice
/// per call; below 1 % of the link's time that tail is not worth a change.
pub const UNALIGNED_TIME_SHARE: f64 = 0.01;

/// A rank's link whose bandwidth (over transfers of the small-packet size or more) is this
/// share or more below the best rank's same link is slow. The two ranks of the real run
/// differ by 1.2 % on HCCS over their large transfers, and one packet size by 4.5 % between
/// them; 20 % is four times that, and a link running at a lower generation
/// or width (a PCIe path instead of HCCS, a degraded lane) is off by far more.
pub const SLOW_LINK_SHARE: f64 = 0.2;

/// Distinct unaligned sizes listed per link (memory bound; the counts hold them all).
pub const MAX_SIZES: usize = 64;

/// Without an `OP State` column, an operator type seen with this many distinct input shapes
/// or more is treated as dynamic-shape.
pub const DYNAMIC_SHAPES: usize = 16;

/// Distinct input shapes counted per operator type (memory bound; the count stops there).
pub const MAX_SHAPES: usize = 64;

/// Largest gaps kept per run.
pub const GAPS_KEPT: usize = 5;
