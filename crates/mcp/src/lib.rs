//! npuprof-mcp: `npuprof mcp`, a Model Context Protocol server (the official Rust SDK, `rmcp`)
//! that serves every command an agent uses as a tool.
//!
//! The binary describes its tools from its own command-line definition ([`Tool`]: each flag one
//! [`Param`]), so the input schema ([`Tool::input_schema`]) and the command line that serves a
//! call ([`Tool::command_line`]) come from the one definition the command line parses. A call
//! runs the binary itself as a child, `npuprof <command> <flags> --json`, in its own process
//! group: its stdout is the result's document (exit 0 and 1 succeed, exit 2 is a tool error
//! carrying the error document), each stderr line a progress notification, and a cancelled
//! call sends SIGINT to the group, as Ctrl-C does (collect restores the repository), and
//! SIGKILL if it has not ended [`INTERRUPT_GRACE`] later. Calls are served concurrently, each
//! by its own child; writes stay locked per repository by the command line's own lock. When
//! the input ends the server interrupts what is still running the same way and waits for it.
//!
//! Invariant: prints nothing — the protocol goes to the output the binary hands to [`run`] —
//! and writes no file; the commands it runs do what they do on the command line.

mod process;
mod result;
mod server;
mod tool;

use std::path::PathBuf;

use rmcp::ServiceExt as _;
use rmcp::service::ServerInitializeError;
use tokio::io::{AsyncRead, AsyncWrite};

pub use process::INTERRUPT_GRACE;
pub use result::error_document;
pub use tool::{Access, Kind, Param, Place, Tool};

/// What the server serves.
#[derive(Debug, Clone)]
pub struct Server {
    /// The server's name (`npuprof`).
    pub name: String,
    /// Its version.
    pub version: String,
    /// What the server tells a host about itself (MCP's `instructions`).
    pub instructions: String,
    /// The binary each call runs.
    pub program: PathBuf,
    /// The tools.
    pub tools: Vec<Tool>,
    /// The documents served as resources.
    pub resources: Vec<Resource>,
    /// The `schema_version` of the error documents the server makes itself (the command
    /// line's error document's).
    pub error_schema_version: u32,
}

/// A document served as a resource.
#[derive(Debug, Clone)]
pub struct Resource {
    /// Its URI (`npuprof://docs/findings.md`).
    pub uri: String,
    /// Its name.
    pub name: String,
    /// What it is.
    pub description: String,
    /// Its text (Markdown).
    pub text: String,
}

/// Why the server stopped other than at the end of its input.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The runtime could not be made.
    #[error("cannot start the server's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The protocol's start failed (the client did not initialise).
    #[error("the client did not start the protocol: {0}")]
    Initialize(String),
    /// The connection failed.
    #[error("the connection failed: {0}")]
    Connection(String),
}

impl npuprof_severity::Classify for McpError {
    fn classify(&self) -> Option<npuprof_severity::Classified> {
        Some(npuprof_severity::Classified::new(match self {
            McpError::Runtime(_) => npuprof_severity::ErrorCode::Io,
            McpError::Initialize(_) | McpError::Connection(_) => {
                npuprof_severity::ErrorCode::Failed
            }
        }))
    }
}

/// Completes at the first SIGINT, SIGTERM or SIGHUP the server gets.
fn stop_signals() -> std::io::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            _ = hangup.recv() => {}
        }
    })
}

/// Serves `server` over the stream `io` makes (called inside the server's runtime: the
/// binary's stdin and stdout) until the input ends or the server gets SIGINT, SIGTERM or SIGHUP;
/// then interrupts the commands still running and waits for them (at most
/// [`INTERRUPT_GRACE`], then kills them), so that none outlives the server.
pub fn run<R, W>(server: Server, io: impl FnOnce() -> (R, W)) -> Result<(), McpError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(McpError::Runtime)?;
    let groups = process::Groups::default();
    let handler = server::Handler::new(server, groups.clone());
    let served = runtime.block_on(async {
        // A host that stops the server with a signal gets what the end of the input gets.
        let stop = stop_signals().map_err(McpError::Runtime)?;
        let served = match handler.serve(io()).await {
            Ok(running) => tokio::select! {
                ended = running.waiting() => ended
                    .map(|_| ())
                    .map_err(|e| McpError::Connection(e.to_string())),
                () = stop => Ok(()),
            },
            // The input ended before the protocol started: nothing was asked.
            Err(
                ServerInitializeError::ConnectionClosed(_)
                | ServerInitializeError::ExpectedInitializeRequest(None),
            ) => Ok(()),
            Err(e) => Err(McpError::Initialize(e.to_string())),
        };
        groups.stop_all(INTERRUPT_GRACE).await;
        served
    });
    // What is left (a blocked read of the input) is not waited for.
    runtime.shutdown_background();
    served
}
