//! The phases of LLM inference that are profiled into separate directories (`mm_encode` only
//! where the engine has a multimodal encoder), and the choice of which to profile. One
//! definition for every crate.

use serde::{Deserialize, Serialize};

/// One of the phases an inference run profiles separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The multimodal encoder's forward over a request's media (engines that have one).
    MmEncode,
    /// The forward over the prompt.
    Prefill,
    /// The forwards that generate the following tokens.
    Decode,
}

impl Phase {
    /// Every phase, in the order a request meets them (encode, prefill, decode).
    pub const ALL: [Phase; 3] = [Phase::MmEncode, Phase::Prefill, Phase::Decode];

    /// `"mm_encode"`, `"prefill"` or `"decode"` (also the directory name torch_npu output is
    /// filed under).
    pub fn name(self) -> &'static str {
        match self {
            Phase::MmEncode => "mm_encode",
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
        }
    }

    /// The phase named `name` (exactly `mm_encode`, `prefill` or `decode`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Which phases to profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseSelection {
    /// The multimodal encoder only (a target that has it).
    MmEncode,
    /// Prefill only.
    Prefill,
    /// Decode only.
    Decode,
    /// Every phase the target has, each into its own directory.
    #[default]
    Both,
}

impl PhaseSelection {
    /// Whether `phase` is profiled.
    pub fn includes(self, phase: Phase) -> bool {
        match self {
            PhaseSelection::Both => true,
            PhaseSelection::MmEncode => phase == Phase::MmEncode,
            PhaseSelection::Prefill => phase == Phase::Prefill,
            PhaseSelection::Decode => phase == Phase::Decode,
        }
    }

    /// The selection of `phase` alone.
    pub fn only(phase: Phase) -> Self {
        match phase {
            Phase::MmEncode => PhaseSelection::MmEncode,
            Phase::Prefill => PhaseSelection::Prefill,
            Phase::Decode => PhaseSelection::Decode,
        }
    }

    /// The profiled phases, in [`Phase::ALL`]'s order.
    pub fn phases(self) -> Vec<Phase> {
        Phase::ALL
            .into_iter()
            .filter(|p| self.includes(*p))
            .collect()
    }

    /// `"mm_encode"`, `"prefill"`, `"decode"` or `"both"`.
    pub fn name(self) -> &'static str {
        match self {
            PhaseSelection::MmEncode => "mm_encode",
            PhaseSelection::Prefill => "prefill",
            PhaseSelection::Decode => "decode",
            PhaseSelection::Both => "both",
        }
    }
}
