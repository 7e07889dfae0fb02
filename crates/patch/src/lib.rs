//! npuprof-patch: plan the torch_npu schedule and compute byte-exact edits to the profiler
//! source and run configs of a resolved profiling target (`npuprof-repository`). Pure text in, edits out: this crate
//! never reads or writes files and never prints.

pub mod diff;
pub mod edit;
pub mod error;
pub mod inject;
pub mod plan;
mod python_edit;
mod syntax;
pub mod target;
mod text;
pub mod yaml;

pub use edit::{Edit, EditError, Edits};
pub use error::PatchError;
/// The torch_npu schedule arithmetic the plan is built on (the `npuprof-schedule` crate).
pub use npuprof_schedule as schedule;
