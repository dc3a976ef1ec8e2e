//! The set of tools offered to the model, looked up by name.

use std::sync::Arc;

use corvid_protocol::ToolSchema;
use futures::future::BoxFuture;

use crate::Tool;

/// Tools that come and go while a session runs (MCP servers start in the background, restart
/// and change their lists), consulted afresh on every lookup.
pub trait ToolSource: Send + Sync {
    /// The tools available right now, in a stable order.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
    /// Resolves once the tools still starting are ready or the start-up wait has run out, so a
    /// model request lists every tool that arrives in time and never waits longer.
    fn settled(&self) -> BoxFuture<'static, ()>;
    /// Problems the user has not been told about yet (a server that could not start), each
    /// returned once.
    fn take_notices(&self) -> Vec<String> {
        Vec::new()
    }
    /// What the source is doing right now, for people (`/mcp`): one block per server.
    fn status_report(&self) -> String;
}

/// The tools of a session, in the order they are offered to the model: the fixed ones, then
/// those of the dynamic source (if any).
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    source: Option<Arc<dyn ToolSource>>,
}

impl ToolRegistry {
    /// A registry holding exactly these tools.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        Self {
            tools,
            source: None,
        }
    }

    /// The dynamic source's status report (`/mcp`), or `None` when the session has none.
    pub fn source_report(&self) -> Option<String> {
        self.source.as_ref().map(|source| source.status_report())
    }

    /// This registry plus the tools of `source`; a fixed tool wins over a source tool of the
    /// same name.
    pub fn with_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.source = Some(source);
        self
    }

    /// Looks a tool up by the name the model calls.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let fixed = self.tools.iter().find(|t| t.name() == name);
        match (fixed, &self.source) {
            (Some(tool), _) => Some(tool.clone()),
            (None, Some(source)) => source.tools().into_iter().find(|t| t.name() == name),
            (None, None) => None,
        }
    }

    /// The schemas sent to the model.
    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.iter()
            .map(|t| ToolSchema {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
                parameters: t.parameters(),
            })
            .collect()
    }

    /// All tools available now, in order.
    pub fn iter(&self) -> impl Iterator<Item = Arc<dyn Tool>> + use<> {
        let dynamic = self
            .source
            .as_ref()
            .map(|source| source.tools())
            .unwrap_or_default()
            .into_iter()
            .filter(|t| !self.tools.iter().any(|f| f.name() == t.name()))
            .collect::<Vec<_>>();
        self.tools.clone().into_iter().chain(dynamic)
    }

    /// See [`ToolSource::take_notices`].
    pub fn take_notices(&self) -> Vec<String> {
        self.source
            .as_ref()
            .map(|source| source.take_notices())
            .unwrap_or_default()
    }

    /// Waits (boundedly) for tools still starting; see [`ToolSource::settled`].
    pub async fn settled(&self) {
        if let Some(source) = &self.source {
            source.settled().await;
        }
    }
}
