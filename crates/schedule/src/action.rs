//! The profiler action at one step number.

use serde::Serialize;

/// The profiler action for one step number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Action {
    /// Not profiling (skip_first, wait, or past the last cycle).
    None,
    /// Profiling, data discarded; stopping here deletes the run directory.
    Warmup,
    /// Recording; stopping here parses incomplete data.
    Record,
    /// Recording the last step of a cycle; leaving this state saves and parses the cycle.
    RecordAndSave,
}

impl Action {
    /// The name torch_npu prints (`NONE`, `WARMUP`, `RECORD`, `RECORD_AND_SAVE`).
    pub fn name(self) -> &'static str {
        match self {
            Action::None => "NONE",
            Action::Warmup => "WARMUP",
            Action::Record => "RECORD",
            Action::RecordAndSave => "RECORD_AND_SAVE",
        }
    }

    /// Whether the step is recorded (its number becomes a `Step Id`).
    pub fn is_recorded(self) -> bool {
        matches!(self, Action::Record | Action::RecordAndSave)
    }
}
