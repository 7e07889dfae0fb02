//! The MCP server: the tools listed from their descriptions, each call served by the binary as
//! a child (see [`crate::process`]), progress sent as the child's stderr comes, the documents
//! as resources.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use npuprof_severity::ErrorCode;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, Implementation, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource as McpResource,
    ResourceContents, ServerCapabilities, ServerConfig, Tool as McpTool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext, RoleServer};

use crate::process::{self, Groups};
use crate::result::{error_document, of_finished, tool_error};
use crate::tool::{Access, Tool};
use crate::{Resource, Server};

/// The server's state, shared by every call.
#[derive(Clone)]
pub struct Handler {
    server: Arc<Server>,
    tools: Arc<Vec<McpTool>>,
    groups: Groups,
}

impl Handler {
    /// A handler for `server`, its children tracked in `groups`.
    pub fn new(server: Server, groups: Groups) -> Self {
        let tools = server.tools.iter().map(listed).collect();
        Self {
            server: Arc::new(server),
            tools: Arc::new(tools),
            groups,
        }
    }
}

/// A tool as listed: its schema, its annotations (read-only or not; never destructive beyond
/// what revert undoes), its description.
fn listed(tool: &Tool) -> McpTool {
    let read_only = tool.access == Access::ReadOnly;
    let annotations = ToolAnnotations::with_title(format!("npuprof {}", tool.name))
        .read_only(read_only)
        .destructive(false)
        .open_world(false);
    McpTool::new(
        tool.name.clone(),
        tool.description.clone(),
        Arc::new(tool.input_schema()),
    )
    .with_title(format!("npuprof {}", tool.name))
    .annotate(annotations)
}

/// Progress notifications for one call, when the client asked for them (a progress token).
#[derive(Clone)]
struct Progress {
    token: Option<ProgressToken>,
    peer: Peer<RoleServer>,
    count: Arc<AtomicU64>,
}

impl Progress {
    async fn say(&self, message: String) {
        let Some(token) = &self.token else {
            return;
        };
        let step = self.count.fetch_add(1, Ordering::Relaxed);
        // Exact for any count reached in practice (below 2^53).
        let progress = step as f64;
        let _ = self
            .peer
            .notify_progress(
                ProgressNotificationParam::new(token.clone(), progress).with_message(message),
            )
            .await;
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_resources()
            .enable_tools()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                self.server.name.clone(),
                self.server.version.clone(),
            ))
            .with_instructions(self.server.instructions.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        self.tools.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self.server.tools.iter().find(|t| t.name == request.name) else {
            return Err(ErrorData::invalid_params(
                format!("no tool `{}`", request.name),
                None,
            ));
        };
        let version = self.server.error_schema_version;
        let arguments = request.arguments.unwrap_or_default();
        let args = match tool.command_line(&arguments) {
            Ok(args) => args,
            Err(message) => {
                let document = error_document(
                    version,
                    ErrorCode::Usage,
                    &message,
                    Some("the tool's input schema lists its arguments and their types"),
                );
                return Ok(
                    tool_error(format!("npuprof {}: {message}", tool.name), document).into(),
                );
            }
        };
        let progress = Progress {
            token: context.meta.get_progress_token(),
            peer: context.peer.clone(),
            count: Arc::new(AtomicU64::new(0)),
        };
        progress
            .say(format!(
                "running npuprof {}",
                npuprof_paths::shell::join(&args)
            ))
            .await;
        let ran = process::run(
            &self.server.program,
            &args,
            &self.groups,
            process::HEARTBEAT,
            context.ct.cancelled(),
            |line| {
                let progress = progress.clone();
                async move { progress.say(line).await }
            },
        )
        .await;
        let result = match ran {
            Ok(finished) => {
                let code = finished.code;
                progress
                    .say(format!(
                        "npuprof {} finished ({})",
                        tool.name,
                        code.map_or_else(|| "killed by a signal".into(), |c| format!("exit {c}"))
                    ))
                    .await;
                of_finished(tool, finished, version)
            }
            Err(err) => {
                let message = format!("cannot run {}: {err}", self.server.program.display());
                tool_error(
                    format!("npuprof {}: {message}", tool.name),
                    error_document(version, ErrorCode::Internal, &message, None),
                )
            }
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources = self.server.resources.iter().map(listed_resource).collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(resource) = self.server.resources.iter().find(|r| r.uri == request.uri) else {
            return Err(ErrorData::resource_not_found(
                format!("no resource `{}`", request.uri),
                None,
            ));
        };
        let contents = ResourceContents::text(resource.text.clone(), resource.uri.clone());
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// A resource as listed.
fn listed_resource(resource: &Resource) -> McpResource {
    McpResource::new(resource.uri.clone(), resource.name.clone())
        .with_description(resource.description.clone())
        .with_mime_type("text/markdown")
        .with_size(resource.text.len() as u64)
}
