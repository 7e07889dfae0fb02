//! npuprof-repository: what a repository's profiling *is*, resolved for one model and run config.
//!
//! A [`Target`] says which launcher runs the model, which Python builds each phase's profiler
//! (matched by structure, see [`python`]), where each window value lives, how a phase is switched
//! off, the run config's key paths and values, the rule that turns the token budget into decode
//! forwards, and where the results land. Repositories are data ([`catalog`]: one definition per
//! repository kind, each with its [`layout`] and shapes, see [`definition`]); route
//! resolves a target, and plan, patch, collect, relocate and verify take it instead of literals.
//!
//! Reads files, never writes them, never prints.

pub mod budget;
pub mod catalog;
pub mod config;
pub mod definition;
pub mod engine;
mod entry;
mod error;
pub mod layout;
mod listing;
pub mod manual;
pub mod named;
pub mod nearby;
pub mod python;
pub mod pyyaml;
pub mod rebind;
mod resolve;
pub mod results;
pub mod yaml_blocks;

pub use budget::Budget;
pub use catalog::{Catalog, DefinitionError, definitions_for, find_root};
pub use definition::{BudgetRule, Definitions, Family, PhaseOff, PrefillPolicy, Shape};
pub use error::{ConfigPlaces, TargetError};
pub use listing::{ConfigEntry, ModelConfigs, model_configs, models_running};
/// Shell quoting of printed commands (held in `npuprof-paths`, below every crate that prints one).
pub use npuprof_paths::shell;
pub use resolve::{
    ConfigView, Evidence, How, Launch, ManualTarget, NotRecorded, NotRecordedCause, Overrides,
    PdRole, PhaseTarget, Profiled, Request, RunMode, Target, config_view, list_configs,
    locate_results, no_decode_budget, resolve, resolve_over, resolve_with,
};
/// Reads a repository's source or run-config file, bounded (see [`resolve::SOURCE_CAP`]).
pub use resolve::{SOURCE_CAP, read as read_source};
