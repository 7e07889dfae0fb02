//! The two phases of LLM inference that are profiled into separate directories, and the choice
//! of which to profile. One definition for every crate.

use serde::{Deserialize, Serialize};

/// One of the two phases an inference run profiles separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The forward over the prompt.
    Prefill,
    /// The forwards that generate the following tokens.
    Decode,
}

impl Phase {
    /// Both phases, prefill first.
    pub const ALL: [Phase; 2] = [Phase::Prefill, Phase::Decode];

    /// `"prefill"` or `"decode"` (also the directory name torch_npu output is filed under).
    pub fn name(self) -> &'static str {
        match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
        }
    }

    /// The phase named `name` (exactly `prefill` or `decode`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Which phases to profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PhaseSelection {
    /// Prefill only.
    Prefill,
    /// Decode only.
    Decode,
    /// Both, each into its own directory.
    #[default]
    Both,
}

impl PhaseSelection {
    /// Whether `phase` is profiled.
    pub fn includes(self, phase: Phase) -> bool {
        !matches!(
            (self, phase),
            (PhaseSelection::Prefill, Phase::Decode) | (PhaseSelection::Decode, Phase::Prefill)
        )
    }

    /// The profiled phases, prefill first.
    pub fn phases(self) -> Vec<Phase> {
        Phase::ALL
            .into_iter()
            .filter(|p| self.includes(*p))
            .collect()
    }

    /// `"prefill"`, `"decode"` or `"both"`.
    pub fn name(self) -> &'static str {
        match self {
            PhaseSelection::Prefill => "prefill",
            PhaseSelection::Decode => "decode",
            PhaseSelection::Both => "both",
        }
    }
}
