//! MCP servers as corvid tools, on the official `rmcp` SDK.
//!
//! A session's servers ([`McpServers`]) start in parallel in the background; each tool they
//! list becomes a corvid [`Tool`](corvid_tools::Tool) named `mcp__<server>__<tool>`, offered
//! through the tool registry's dynamic [`ToolSource`](corvid_tools::ToolSource), so the core,
//! ACP and the TUI see MCP tools as tools. This crate knows no front end: the core starts the
//! servers for a session, and ACP only passes the editor's `mcpServers` in.

pub mod config;
mod connect;
mod content;
mod expand;
pub mod names;
mod server;
mod servers;
mod tool;

pub use config::{ConfigError, ServerConfig, Transport, parse_acp_servers, parse_servers};
pub use connect::{EnvLookup, Launch, MAX_STDERR_LINE};
pub use server::Status;
pub use servers::{DEFAULT_STARTUP_WAIT, McpServers, ServerReport, ToolLimits, describe};

/// Fuzzing entry (`fuzz/`, not API): a `tools/call` result sent as JSON, through the same
/// conversion a live server's answer takes; an untrusted server controls every byte of it.
#[doc(hidden)]
pub fn fuzz_tool_result(json: &[u8]) {
    if let Ok(result) = serde_json::from_slice::<rmcp::model::CallToolResult>(json) {
        let _ = content::to_output("fuzz", "fuzz", &result);
    }
}
