//! One MCP tool as a corvid [`Tool`]: its schema passed through, its title from the server's
//! annotations, approvals by the server's `trust`. The annotations' hints are the server's
//! claims: a `readOnlyHint` makes the tool a read only when the user believes the server
//! (`trust` or `trustHints` in their settings); otherwise the tool is one that acts.

use std::sync::{Arc, Weak};

use corvid_protocol::{ApprovalPreview, Provenance, ToolDisplay, ToolKind, ToolOutput};
use corvid_tools::{ApprovalNeed, Tool, ToolContext, ToolError};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::server::Server;

/// A tool of a running server, under its model-facing name `mcp__<server>__<tool>`.
pub struct McpTool {
    /// The model-facing name.
    name: String,
    /// The name the server knows it by.
    remote_name: String,
    /// Shown on cards: the annotation's `title`, else the tool's own name, with the server.
    display_name: String,
    description: String,
    parameters: Value,
    kind: ToolKind,
    read_only: bool,
    /// The tool does not keep its server alive: the session's server list does.
    server: Weak<Server>,
    server_id: String,
    trusted: bool,
}

impl McpTool {
    /// The corvid tool for `tool` of `server`, called `name`.
    pub(crate) fn new(name: String, tool: &rmcp::model::Tool, server: &Arc<Server>) -> Self {
        let annotations = tool.annotations.as_ref();
        let title = tool
            .title
            .clone()
            .or_else(|| annotations.and_then(|a| a.title.clone()))
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| tool.name.to_string());
        let believed = server.config.trust || server.config.trust_hints;
        let read_only = believed && annotations.and_then(|a| a.read_only_hint) == Some(true);
        let kind = match annotations {
            _ if read_only => ToolKind::Read,
            Some(a) if a.destructive_hint == Some(true) => ToolKind::Edit,
            _ => ToolKind::Other,
        };
        let description = match tool.description.as_deref() {
            Some(d) if !d.trim().is_empty() => d.to_owned(),
            _ => format!(
                "The `{}` tool of the MCP server `{}`.",
                tool.name, server.config.name
            ),
        };
        Self {
            name,
            remote_name: tool.name.to_string(),
            display_name: format!("{title} ({})", server.config.name),
            description,
            parameters: normalize_schema(Value::Object((*tool.input_schema).clone())),
            kind,
            read_only,
            server: Arc::downgrade(server),
            server_id: server.config.name.clone(),
            trusted: server.config.trust,
        }
    }
}

/// The server's schema as given, except that an object schema always says `type: object`
/// and has `properties` (OpenAI rejects function parameters without them).
fn normalize_schema(mut schema: Value) -> Value {
    if let Value::Object(obj) = &mut schema {
        obj.entry("type")
            .or_insert_with(|| Value::String("object".into()));
        if obj.get("type") == Some(&Value::String("object".into())) {
            obj.entry("properties")
                .or_insert_with(|| Value::Object(Default::default()));
        }
    }
    schema
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn display_name(&self) -> &str {
        &self.display_name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn kind(&self) -> ToolKind {
        self.kind
    }

    fn provenance(&self) -> Provenance {
        Provenance::Mcp {
            server_id: self.server_id.clone(),
        }
    }

    fn mutates(&self) -> bool {
        !self.read_only
    }

    fn display(&self, _args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        ToolDisplay {
            title: self.display_name.clone(),
            kind: self.kind,
            locations: Vec::new(),
        }
    }

    /// Read-only tools (by a hint the user believes) run like reads; the others ask
    /// (auto-approved only in `yolo`) unless their server is trusted.
    fn approval(&self, args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        let need = if self.read_only || self.trusted {
            ApprovalNeed::None
        } else {
            ApprovalNeed::Execute(ApprovalPreview::Text {
                text: format!(
                    "Call `{}` on the MCP server `{}` with {}",
                    self.remote_name, self.server_id, args
                ),
            })
        };
        futures::future::ready(need).boxed()
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let server = self.server.upgrade();
        let tool = self.remote_name.clone();
        let server_id = self.server_id.clone();
        async move {
            let Some(server) = server else {
                return Err(ToolError::new(format!(
                    "MCP server `{server_id}` was stopped with its session"
                )));
            };
            server.call(&tool, args, &ctx.cancel).await
        }
        .boxed()
    }
}
