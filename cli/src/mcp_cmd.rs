//! `corvid mcp list`: starts the configured MCP servers the way a session would and shows
//! each one's status, tools and error, so a broken entry can be fixed before a session needs it.

use std::io::Write;

use corvid_core::settings::start_mcp_servers;
use corvid_mcp::Status;

use crate::wiring::{ConfigError, Setup};

/// Prints one block per server; `Ok(false)` when an enabled server failed to start.
pub async fn list(setup: &Setup, out: &mut impl Write) -> Result<bool, ConfigError> {
    let servers =
        start_mcp_servers(&setup.settings, &setup.cwd).map_err(|e| ConfigError(e.to_string()))?;
    let Some(servers) = servers else {
        writeln!(
            out,
            "No MCP servers configured. Add them under `mcpServers` in ~/.corvid/settings.json \
             or the project's .corvid/settings.json."
        )
        .map_err(write_error)?;
        return Ok(true);
    };
    servers.wait_started().await;
    let reports = servers.reports();
    write!(out, "{}", corvid_mcp::describe(&reports)).map_err(write_error)?;
    Ok(!reports
        .iter()
        .any(|r| matches!(r.status, Status::Failed(_))))
}

fn write_error(e: std::io::Error) -> ConfigError {
    ConfigError(format!("cannot write the list: {e}"))
}
