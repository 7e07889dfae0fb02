//! npuprof-schedule: `torch_npu.profiler.schedule(...)` simulated with torch_npu's own arithmetic
//! (its `schedule` function and action controller): clamping of the arguments, the [`Action`] at each
//! step number, the recorded steps (the `Step Id`s of the output), the `step()` call that closes
//! the last cycle, and the warnings torch_npu prints when the profiler stops ([`Schedule::run`]).
//!
//! Also the one definition of [`Phase`] and of a requested decode [`Window`] with its bounds.
//!
//! Pure arithmetic: no IO, no printing. Used by patch's plan, verify's step coverage and lint's
//! window check.

mod action;
mod phase;
mod run;
mod schedule;
mod window;

pub use action::Action;
pub use phase::{Phase, PhaseSelection};
pub use run::{
    Run, STOP_IN_RECORD, STOP_IN_RECORD_AND_SAVE, STOP_IN_WARMUP, TRANSITION_RECORD_NONE,
    TRANSITION_RECORD_WARMUP, TRANSITION_WARMUP_NONE,
};
pub use schedule::{RECORDED_CYCLES_LIMIT, RECORDED_STEPS_LIMIT, Schedule};
pub use window::{MAX_WINDOW_STEPS, Window, WindowError};
