//! What a collect against a server did, for the CLI to print (text) or serialise (`--json`).

use std::path::PathBuf;

use npuprof_summary::Summary;
use npuprof_verify::VerifyReport;
use serde::Serialize;

use crate::error::ErrorKind;
use crate::load::LoadReport;
use crate::parse::Parse;
use crate::server::Shutdown;
use crate::settings::{ConfigStyle, Engine, ParseMode};

/// The version of the `--json` schema of `collect --engine`.
pub const SCHEMA_VERSION: u32 = 1;

/// One run directory the stop left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunOutput {
    /// The directory.
    pub dir: PathBuf,
    /// The stage it records, with a window per stage (`prefill`, `decode`); `null` otherwise.
    pub stage: Option<npuprof_schedule::Phase>,
    /// Who parsed it: the engine, collect (`offline`), or nobody yet (`raw`).
    pub parsed_by: ParsedBy,
}

/// Who parsed a run directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParsedBy {
    /// The engine, during or after the stop.
    Engine,
    /// collect's offline `analyse`.
    Offline,
    /// Nobody: raw data only (the offline parse failed or did not run).
    Raw,
}

/// How the recorded window ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowClosed {
    /// The stop route, after the load (start/stop around the load).
    Stop,
    /// The server, after the steps asked for.
    Server,
    /// The stop route, because the load ended before the steps asked for: fewer were recorded.
    StopBeforeSteps,
}

/// The window asked of the server and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WindowReport {
    /// The phase asked for (`both`: every iteration, mixed).
    pub phase: npuprof_schedule::PhaseSelection,
    /// Forward steps asked for (per stage with one phase), when any.
    pub steps: Option<u64>,
    /// How it ended (`null`: it did not).
    pub closed_by: Option<WindowClosed>,
}

/// The error a collect stopped at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stopped {
    /// Its kind.
    pub kind: ErrorKind,
    /// What happened, said.
    pub message: String,
}

/// What a collect against a server did.
#[derive(Debug, Clone, Serialize)]
pub struct ServeReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The engine.
    pub engine: Engine,
    /// How its profiler was switched on.
    pub config_style: ConfigStyle,
    /// Where that style (and the level and metrics) came from.
    pub style_from: crate::settings::StyleFrom,
    /// The level the engine hard-codes.
    pub level: String,
    /// The AI Core metrics it hard-codes.
    pub aic_metrics: String,
    /// Said when those metrics give no pipe data.
    pub no_pipe_metrics_note: Option<String>,
    /// Who parses, with one rank.
    pub parse_mode: ParseMode,
    /// The server's address.
    pub url: String,
    /// The command collect ran (with the profiler's arguments), when it started the server.
    pub command: Option<Vec<String>>,
    /// The environment it added for it.
    pub env: Vec<(String, String)>,
    /// Where the profile is.
    pub profile_dir: PathBuf,
    /// The run directories expected per stop (ranks), when known.
    pub expected_ranks: Option<usize>,
    /// The window asked of the server and how it ended.
    pub window: WindowReport,
    /// Said when the launched command is one node of a prefill/decode pair.
    pub pd_note: Option<String>,
    /// Seconds until the server was healthy.
    pub healthy_after_secs: Option<f64>,
    /// The warm-up requests.
    pub warmup: Option<LoadReport>,
    /// The profiled load.
    pub load: Option<LoadReport>,
    /// Seconds from the stop until the output was complete.
    pub settled_after_secs: Option<f64>,
    /// The run directories of this collect.
    pub runs: Vec<RunOutput>,
    /// The API process's own traces.
    pub frontend_traces: Vec<PathBuf>,
    /// The offline parses collect ran.
    pub parses: Vec<Parse>,
    /// Verify's report of the profile directory.
    pub verify: Option<VerifyReport>,
    /// The summary of the profile.
    pub summary: Option<Summary>,
    /// Why there is no summary, when there is none after a verify.
    pub summary_error: Option<String>,
    /// How the server ended (when collect started it).
    pub shutdown: Option<Shutdown>,
    /// The server's log, when collect started it.
    pub server_log: Option<PathBuf>,
    /// Where it stopped, when it did not finish.
    pub error: Option<Stopped>,
    /// How the collect ended, named as a repository collect's (`clean`, `verify_errors`,
    /// `incomplete` for a load with failed or unsent requests, `failed`).
    pub outcome: npuprof_workflow::collect::Outcome,
    /// 0 verified clean, 1 findings (errors) or a load with failures, 2 stopped by an error.
    pub exit_code: u8,
}
