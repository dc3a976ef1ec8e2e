//! Opening an MCP session with one server over rmcp: a child process on stdio, or a streamable
//! HTTP endpoint. `${VAR}` references are expanded here, at the last moment, and the values
//! never reach a log.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use corvid_tools::shell::EnvFilter;
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{MaybeSendFuture, NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::config::{Redacted, ServerConfig, Transport};
use crate::expand::expand;

/// A live MCP session with one server.
pub type Connection = RunningService<RoleClient, Handler>;

/// What corvid tells servers about itself, and how it hears that a tool list changed.
pub struct Handler {
    /// Set by `notifications/tools/list_changed`; the list is fetched again between turns.
    pub tools_changed: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.tools_changed.store(true, Ordering::Release);
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("corvid", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// Reads an environment variable for `${VAR}` (tests pass their own).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Where a server starts: the filtered environment it inherits, the variables `${VAR}` reads,
/// and the directory a stdio server without `cwd` runs in.
#[derive(Clone)]
pub struct Launch {
    pub env_filter: EnvFilter,
    pub env: EnvLookup,
    pub cwd: std::path::PathBuf,
}

/// Starts the server and completes the MCP handshake (within the server's timeout).
pub async fn connect(
    config: &ServerConfig,
    launch: &Launch,
    tools_changed: Arc<AtomicBool>,
) -> Result<Connection, String> {
    let handler = Handler { tools_changed };
    let started = async {
        match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let transport = child(config, launch, command, args, env, cwd.as_deref())?;
                handler.serve(transport).await.map_err(|e| e.to_string())
            }
            Transport::Http { url, headers } => {
                let transport = http(launch, url, headers)?;
                handler.serve(transport).await.map_err(|e| e.to_string())
            }
        }
    };
    match tokio::time::timeout(config.timeout, started).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "it did not finish starting within {} ms (its `timeout`)",
            config.timeout.as_millis()
        )),
    }
}

/// The child process in a process group of its own (so `npx` and the server it starts stop
/// together), killed when the connection is dropped; its stderr goes to the log.
fn child(
    config: &ServerConfig,
    launch: &Launch,
    command: &str,
    args: &[String],
    env: &[(String, Redacted)],
    cwd: Option<&Path>,
) -> Result<TokioChildProcess, String> {
    let lookup = |name: &str| (launch.env)(name);
    let program = expand(command, &lookup).map_err(|e| format!("`command`: {e}"))?;
    let mut cmd = tokio::process::Command::new(&program);
    for arg in args {
        cmd.arg(expand(arg, &lookup).map_err(|e| format!("`args`: {e}"))?);
    }
    cmd.env_clear();
    cmd.envs(launch.env_filter.apply(std::env::vars_os()));
    for (name, Redacted(value)) in env {
        let value = expand(value, &lookup).map_err(|e| format!("`env.{name}`: {e}"))?;
        cmd.env(name, value);
    }
    let dir = match cwd {
        Some(dir) if dir.is_absolute() => dir.to_owned(),
        Some(dir) => launch.cwd.join(dir),
        None => launch.cwd.clone(),
    };
    cmd.current_dir(&dir);
    corvid_sandbox::keep_key_out_of_reach(cmd.as_std_mut());
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    let (process, stderr) = TokioChildProcess::builder(wrapped)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "cannot start `{program}`: no such command (in {}); check `command` and PATH",
                dir.display()
            ),
            _ => format!("cannot start `{program}`: {e}"),
        })?;
    if let Some(stderr) = stderr {
        let server = config.name.clone();
        tokio::spawn(async move {
            let log = |line: &str| {
                tracing::info!(target: "corvid_mcp::server_stderr", server = %server, "{line}");
            };
            if let Err(e) = log_lines(stderr, MAX_STDERR_LINE, log).await {
                tracing::debug!("stopped reading an MCP server's stderr: {e}");
            }
        });
    }
    Ok(process)
}

/// The most of one stderr line corvid keeps for the log; the rest of the line is read and
/// dropped, so a server writing one endless line cannot grow corvid's memory.
pub const MAX_STDERR_LINE: usize = 8 * 1024;

/// Reads `reader` line by line and hands each line to `log`, cut at `max` bytes (a character
/// cut in two shows as U+FFFD) with a note saying how much was dropped. Memory stays at the
/// reader's buffer plus `max`, however long a line is.
async fn log_lines<R>(reader: R, max: usize, mut log: impl FnMut(&str)) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
{
    let mut reader = BufReader::new(reader);
    let mut kept: Vec<u8> = Vec::new();
    let mut dropped: u64 = 0;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            if !kept.is_empty() || dropped > 0 {
                log(&line_text(&kept, dropped));
            }
            return Ok(());
        }
        let (part, end) = match newline(chunk) {
            Some(at) => (&chunk[..at], Some(at + 1)),
            None => (chunk, None),
        };
        let room = max.saturating_sub(kept.len()).min(part.len());
        kept.extend_from_slice(&part[..room]);
        dropped += (part.len() - room) as u64;
        let used = end.unwrap_or(part.len());
        reader.consume(used);
        if end.is_some() {
            log(&line_text(&kept, dropped));
            kept.clear();
            dropped = 0;
        }
    }
}

fn newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

/// The kept part of a line as text (without a trailing `\r`), with the dropped length noted.
fn line_text(kept: &[u8], dropped: u64) -> String {
    let kept = kept.strip_suffix(b"\r").unwrap_or(kept);
    let text = String::from_utf8_lossy(kept);
    if dropped == 0 {
        text.into_owned()
    } else {
        format!("{text}… [{dropped} more bytes of this line dropped]")
    }
}

/// The streamable HTTP client, with the configured headers on every request.
fn http(
    launch: &Launch,
    url: &str,
    headers: &[(String, Redacted)],
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let lookup = |name: &str| (launch.env)(name);
    let url = expand(url, &lookup).map_err(|e| format!("`url`: {e}"))?;
    let mut custom = HashMap::new();
    for (name, Redacted(value)) in headers {
        let value = expand(value, &lookup).map_err(|e| format!("header `{name}`: {e}"))?;
        let header = http::HeaderName::try_from(name.as_str())
            .map_err(|_| format!("`{name}` is not a valid header name"))?;
        let mut value = http::HeaderValue::try_from(value)
            .map_err(|_| format!("header `{name}` has a value that is not valid in HTTP"))?;
        value.set_sensitive(true);
        custom.insert(header, value);
    }
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    Ok(StreamableHttpClientTransport::from_config(config))
}
