//! npuprof-workflow: the workflows that chain the libraries, over domain requests (never a
//! command line): a target's patch applied through the journal ([`patch`]), a window planned
//! within bounds ([`plan`]), a harness written ([`inject`]), lint's fixes applied ([`lint_fix`]), and `collect` ([`collect`]), which
//! runs the model through a [`collect::Launcher`] so tests can drive it without processes.
//!
//! Invariant: nothing here prints; what happens is returned in reports or told to an observer.

pub mod collect;
pub mod engine;
mod error;
pub mod inject;
pub mod lint_fix;
pub mod patch;
pub mod plan;
pub mod serve_plan;

pub use error::{NoProfiler, WorkflowError, error_text};
