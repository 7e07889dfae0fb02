//! npuprof-serve: `collect` against a live serving engine (vLLM-Ascend). It starts the user's
//! serving command with the profiler switched on (or attaches to a running server), waits for
//! health, warms the server up, starts the profiler, sends the load over HTTP, stops it, waits
//! until every rank's output is complete, parses offline what the engine left raw, verifies and
//! summarises the result, and shuts the server down on success, failure, interrupt or timeout
//! alike. The engine's facts come in as a [`settings::ServeSettings`] value.
//!
//! Invariant: prints nothing (what happens goes to an [`Observer`]); writes only the server's
//! log and the offline parses' logs into the profile directory, through
//! `npuprof_journal::create_private_file`, after [`make_profile_dir`] made it.

mod collect;
mod error;
pub mod http;
pub mod load;
pub mod output;
pub mod parse;
mod profile_dir;
mod report;
pub mod server;
pub mod settings;

pub use collect::{
    Event, Observer, ServeRequest, ServeWindow, Stage, Target, Timing, check, collect,
};
pub use error::{ErrorKind, ServeError};
pub use profile_dir::make_profile_dir;
pub use report::{
    ParsedBy, RunOutput, SCHEMA_VERSION, ServeReport, Stopped, WindowClosed, WindowReport,
};
