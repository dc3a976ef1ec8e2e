//! corvid's Agent Client Protocol server (`corvid --acp`, SPEC §6).
//!
//! Editors talk to corvid over ACP on stdio. Each `session/new` spawns one core agent, recorded
//! in the factory's session store, and `session/load` resumes a recorded one (SPEC §9); core
//! events, live or replayed, are translated into frames by the single [`mapping`] module. The
//! agent's configuration comes from an [`AgentFactory`], so the binary injects the
//! settings-based one and tests inject a scripted provider.

mod card_faces;
mod coalesce;
mod commands;
mod config_options;
mod direct_pipe;
pub mod fs;
mod ignored_fields;
mod listing;
pub mod mapping;
mod output;
mod plan_mode;
mod prompt;
mod pump;
mod questions;
mod rewind;
mod server;
mod session;
mod task_cards;
mod terminal;
mod transport;

use std::path::PathBuf;
use std::sync::Arc;

use corvid_core::agent::AgentConfig;
use corvid_core::session::SessionStore;
use corvid_tools::FileSystem;

/// Whether `initialize` advertises `session/load` (SPEC §6, §9).
pub const LOAD_SESSION: bool = true;

/// What a new session needs from the host to build its agent.
#[derive(Clone)]
pub struct SessionSpec {
    /// The ACP session id, also the core's session id.
    pub session_id: String,
    /// The absolute working directory the client asked for.
    pub cwd: PathBuf,
    /// The editor's buffers when the client offers `fs/*`, else local disk.
    pub fs: Arc<dyn FileSystem>,
    /// The `mcpServers` of `session/new` or `session/load` as sent (stdio and http entries);
    /// the factory starts them with the session.
    pub mcp_servers: Vec<serde_json::Value>,
}

/// Why a session's agent could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactoryError {
    /// No model provider is configured; the message says what to set.
    #[error("{0}")]
    NoProvider(String),
    /// The configuration is unusable (malformed settings and the like).
    #[error("{0}")]
    Invalid(String),
}

/// Builds agent configurations for ACP sessions.
pub trait AgentFactory: Send + Sync {
    /// Whether a provider is configured (for `authenticate`); the error says what to set.
    fn check_provider(&self) -> Result<(), FactoryError>;
    /// The configuration of a session's agent (a new one, or one `session/load` resumes).
    fn build(&self, spec: SessionSpec) -> Result<AgentConfig, FactoryError>;
    /// Where sessions are recorded and loaded from; `None` records nothing and makes
    /// `session/load` an error.
    fn session_store(&self) -> Option<SessionStore>;
    /// Whether the model a new session starts with accepts images, for
    /// `promptCapabilities.image` (announced at `initialize`, before any session exists).
    fn accepts_images(&self) -> bool {
        false
    }
    /// `$CORVID_HOME`, where caches live (the providers' model listings); `None` caches
    /// nothing.
    fn corvid_home(&self) -> Option<PathBuf> {
        None
    }
}

pub use transport::{
    LineTransport, MAX_LINE_BYTES, fuzz_incoming, line_transport, stdio_transport,
};

/// Serves ACP on stdin/stdout until the client closes stdin. Logs must go elsewhere.
pub async fn run(factory: Arc<dyn AgentFactory>) -> anyhow::Result<()> {
    let transport = stdio_transport()
        .map_err(|e| anyhow::anyhow!("cannot start the ACP output thread: {e}"))?;
    serve(factory, transport).await
}

/// Serves ACP over a line transport ([`stdio_transport`] in the binary, [`line_transport`]
/// on a pipe in tests).
pub async fn serve(factory: Arc<dyn AgentFactory>, transport: LineTransport) -> anyhow::Result<()> {
    server::serve(factory, transport)
        .await
        .map_err(|e| anyhow::anyhow!("ACP connection failed: {e}"))
}
