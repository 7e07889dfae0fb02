//! Why a collect against a server stopped, as a closed set of kinds.

use serde::Serialize;

/// Why a collect against a server stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// No serving command after `--`.
    #[error("no serving command: give it after `--` (e.g. `-- {example}`), or --url")]
    NoCommand {
        /// The engine's serve command, as its definition writes it.
        example: String,
    },
    /// The `--url` is not `http://HOST:PORT`.
    #[error("--url {url}: {why}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// The command cannot be read (an option without a valid value).
    #[error("cannot read the serving command: {0}")]
    BadCommand(String),
    /// The command or environment switches the profiler on already.
    #[error(
        "{0} is set already: collect configures the profiler itself; remove it, or profile that server with --url and --profile-dir"
    )]
    AlreadyConfigured(String),
    /// The profile directory holds run directories already.
    #[error(
        "{dir} holds run directories already: give a new or empty --profile-dir, so that only this collect's output is verified"
    )]
    ProfileDirNotEmpty {
        /// The directory.
        dir: String,
    },
    /// The profile directory cannot be made.
    #[error("cannot create the profile directory {dir}: {source}")]
    ProfileDir {
        /// The directory.
        dir: String,
        /// Why.
        source: std::io::Error,
    },
    /// The command could not be started.
    #[error("cannot start `{command}`: {source}")]
    Start {
        /// The command, for the shell.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The async runtime could not be made.
    #[error("cannot start the HTTP client: {0}")]
    Runtime(std::io::Error),
    /// A window of steps or per stage was asked of an engine whose start takes none.
    #[error(
        "--phase and --decode-active: {engine}'s start request takes no window (it records everything between start and stop, prefill and decode mixed)"
    )]
    WindowNotSupported {
        /// The engine.
        engine: String,
    },
    /// The server exited.
    #[error("the server exited ({ended}) {when}{last}")]
    ServerExited {
        /// How it ended.
        ended: String,
        /// During which stage.
        when: String,
        /// Its last line of output, when it printed one.
        last: String,
    },
    /// The server never answered its health check with 200.
    #[error("the server was not healthy after {secs} s ({url}{path}: {last})")]
    NeverHealthy {
        /// Seconds waited.
        secs: u64,
        /// The server.
        url: String,
        /// The health route.
        path: String,
        /// What the last check got.
        last: String,
    },
    /// `--timeout` passed: the whole collect took longer than asked.
    #[error("--timeout {secs} s passed {when}: stopped")]
    TimedOut {
        /// The limit.
        secs: u64,
        /// During which stage.
        when: String,
    },
    /// The health route answers 404: whatever listens there is no server of this engine (or
    /// the health route is another), and waiting longer cannot change that.
    #[error(
        "{url}{path} answers 404 after {secs} s: what listens there has no such health route (another program on the port, or a server without it); check --url and the port the command listens on"
    )]
    NoHealthRoute {
        /// Seconds waited.
        secs: u64,
        /// The server.
        url: String,
        /// The health route.
        path: String,
    },
    /// The profile routes are missing: profiling is not configured on that server.
    #[error(
        "{url}{path} is 404: profiling is not configured on this server (start it with the profiler on, or let collect start it)"
    )]
    ProfilingNotEnabled {
        /// The server.
        url: String,
        /// The route.
        path: String,
    },
    /// Starting or stopping the profiler failed.
    #[error("{what} failed: {detail}")]
    Profile {
        /// The start or stop route, without its `/`.
        what: String,
        /// The status and body, or the transport error.
        detail: String,
    },
    /// Every request of a load failed.
    #[error("every {stage} request failed; the first: {first}")]
    LoadFailed {
        /// `warm-up` or `load`.
        stage: String,
        /// The first failure.
        first: String,
    },
    /// No run directory appeared after the stop.
    #[error(
        "no run directory appeared in {dir} within {secs} s of the stop (is it the server's profiler directory?)"
    )]
    NoOutput {
        /// The profile directory.
        dir: String,
        /// Seconds waited.
        secs: u64,
    },
    /// The output was still being written at the deadline.
    #[error(
        "the output in {dir} was still being written {secs} s after the stop; raise --output-timeout, then verify it with `npuprof verify {dir}`"
    )]
    OutputStillChanging {
        /// The profile directory.
        dir: String,
        /// Seconds waited.
        secs: u64,
    },
    /// Interrupted (Ctrl-C, SIGTERM, SIGHUP).
    #[error("interrupted {0}")]
    Interrupted(String),
    /// Verify could not read the output at all.
    #[error("verify: {0}")]
    Verify(#[from] npuprof_verify::VerifyError),
}

/// The kind of a [`ServeError`], for `--json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// The request was refused before anything ran.
    Refused,
    /// The server could not be started.
    StartFailed,
    /// The server exited.
    ServerExited,
    /// The server never became healthy.
    NeverHealthy,
    /// Profiling is not configured on the server.
    ProfilingNotEnabled,
    /// start_profile or stop_profile failed.
    ProfileFailed,
    /// Every request failed.
    LoadFailed,
    /// No output appeared.
    NoOutput,
    /// The output was still being written at the deadline.
    OutputIncomplete,
    /// Interrupted.
    Interrupted,
    /// `--timeout` passed.
    TimedOut,
    /// Verify could not read the output.
    VerifyFailed,
}

impl ServeError {
    /// No serving command was given for `engine`.
    pub fn no_command(engine: crate::settings::Engine) -> Self {
        ServeError::NoCommand {
            example: engine.definition().serve_command.join(" "),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ServeError::NoCommand { .. }
            | ServeError::BadUrl { .. }
            | ServeError::BadCommand(_)
            | ServeError::AlreadyConfigured(_)
            | ServeError::ProfileDirNotEmpty { .. }
            | ServeError::WindowNotSupported { .. }
            | ServeError::ProfileDir { .. } => ErrorKind::Refused,
            ServeError::Start { .. } | ServeError::Runtime(_) => ErrorKind::StartFailed,
            ServeError::ServerExited { .. } => ErrorKind::ServerExited,
            ServeError::NeverHealthy { .. } | ServeError::NoHealthRoute { .. } => {
                ErrorKind::NeverHealthy
            }
            ServeError::ProfilingNotEnabled { .. } => ErrorKind::ProfilingNotEnabled,
            ServeError::Profile { .. } => ErrorKind::ProfileFailed,
            ServeError::LoadFailed { .. } => ErrorKind::LoadFailed,
            ServeError::NoOutput { .. } => ErrorKind::NoOutput,
            ServeError::OutputStillChanging { .. } => ErrorKind::OutputIncomplete,
            ServeError::Interrupted(_) => ErrorKind::Interrupted,
            ServeError::TimedOut { .. } => ErrorKind::TimedOut,
            ServeError::Verify(_) => ErrorKind::VerifyFailed,
        }
    }
}

impl npuprof_severity::Classify for ServeError {
    /// A collect against a server refused before it started anything, or could not start it.
    fn classify(&self) -> Option<npuprof_severity::Classified> {
        use npuprof_severity::{Classified, ErrorCode};
        Some(Classified::new(match self {
            ServeError::NoCommand { .. } | ServeError::BadUrl { .. } => ErrorCode::Usage,
            ServeError::ProfileDir { .. } => ErrorCode::Io,
            ServeError::BadCommand(_) => ErrorCode::InvalidInput,
            _ if self.kind() == ErrorKind::Refused => ErrorCode::Refused,
            _ => ErrorCode::Failed,
        }))
    }
}
