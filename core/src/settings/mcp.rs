//! `mcpServers` and `mcp.*`: which MCP servers a session starts, and how long its first model
//! request waits for their tools. The server entries are parsed by `corvid-mcp`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use corvid_mcp::{Launch, McpServers, ServerConfig, ToolLimits};
use corvid_tools::shell::EnvFilter;
use serde_json::Value;

use super::SettingsError;

/// The MCP part of the settings.
#[derive(Debug, Clone, PartialEq)]
pub struct McpSettings {
    /// Every configured server, enabled or not, in file order (user file first).
    pub servers: Vec<ServerConfig>,
    /// `mcp.startupTimeoutMs`: the most a model request waits for servers still starting.
    pub startup_wait: Duration,
    /// `mcp.maxToolsPerServer` and `mcp.maxTools`: how many MCP tools go out with a request.
    pub tool_limits: ToolLimits,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            startup_wait: corvid_mcp::DEFAULT_STARTUP_WAIT,
            tool_limits: ToolLimits::default(),
        }
    }
}

impl McpSettings {
    /// Adds `servers`; one named like a server already present replaces it (a project's or an
    /// editor's entry wins over the user's file).
    pub fn add_servers(&mut self, servers: Vec<ServerConfig>) {
        for server in servers {
            match self.servers.iter_mut().find(|s| s.name == server.name) {
                Some(slot) => *slot = server,
                None => self.servers.push(server),
            }
        }
    }
}

/// Parses a file's `mcpServers`, naming the file in errors and warnings.
pub(super) fn parse_servers(
    path: &Path,
    value: &Value,
    warnings: &mut Vec<String>,
) -> Result<Vec<ServerConfig>, SettingsError> {
    let mut found = Vec::new();
    let servers =
        corvid_mcp::parse_servers(value, &mut found).map_err(|e| SettingsError::InvalidValue {
            origin: path.display().to_string(),
            key: e.key,
            message: e.message,
        })?;
    warnings.extend(
        found
            .into_iter()
            .map(|w| format!("{}: {w}", path.display())),
    );
    Ok(servers)
}

/// Starts the session's enabled servers in the background; `None` when none is configured.
/// Servers inherit corvid's environment through the shell's filter (no provider keys or
/// secret-looking variables unless the server's own `env` sets them).
pub(super) fn start(
    mcp: &McpSettings,
    env_filter: EnvFilter,
    cwd: &Path,
) -> Result<Option<McpServers>, SettingsError> {
    if mcp.servers.is_empty() {
        return Ok(None);
    }
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(SettingsError::InvalidValue {
            origin: "settings".into(),
            key: "mcpServers".into(),
            message: "cannot be started outside corvid's async runtime (internal error)".into(),
        });
    }
    let launch = Launch {
        env_filter,
        env: Arc::new(super::process_env),
        cwd: cwd.to_owned(),
    };
    Ok(Some(McpServers::start(
        mcp.servers.clone(),
        launch,
        mcp.startup_wait,
        mcp.tool_limits,
    )))
}
