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
    /// Which tools this view offers (`None`: all).
    filter: Option<ToolFilter>,
}

/// Decides which tools a filtered registry offers.
type ToolFilter = Arc<dyn Fn(&dyn Tool) -> bool + Send + Sync>;

impl ToolRegistry {
    /// A registry holding exactly these tools.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        Self {
            tools,
            source: None,
            filter: None,
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

    /// This registry plus `tool`, offered after the other fixed tools.
    pub fn with_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// This registry with `tool` in place of the fixed tool of the same name (a session's
    /// `web_fetch` with the user's settings in place of the built-in default), or added last.
    pub fn replacing(mut self, tool: Arc<dyn Tool>) -> Self {
        match self.tools.iter_mut().find(|t| t.name() == tool.name()) {
            Some(slot) => *slot = tool,
            None => self.tools.push(tool),
        }
        self
    }

    /// A view of this registry holding only the tools `keep` accepts (tools of the dynamic
    /// source included, as they arrive).
    pub fn filtered(&self, keep: impl Fn(&dyn Tool) -> bool + Send + Sync + 'static) -> Self {
        let keep: ToolFilter = match &self.filter {
            Some(outer) => {
                let outer = outer.clone();
                Arc::new(move |t: &dyn Tool| outer(t) && keep(t))
            }
            None => Arc::new(keep),
        };
        Self {
            tools: self.tools.clone(),
            source: self.source.clone(),
            filter: Some(keep),
        }
    }

    fn kept(&self, tool: &dyn Tool) -> bool {
        self.filter.as_ref().is_none_or(|keep| keep(tool))
    }

    /// Looks a tool up by the name the model calls.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let fixed = self.tools.iter().find(|t| t.name() == name);
        let found = match (fixed, &self.source) {
            (Some(tool), _) => Some(tool.clone()),
            (None, Some(source)) => source.tools().into_iter().find(|t| t.name() == name),
            (None, None) => None,
        };
        found.filter(|t| self.kept(t.as_ref()))
    }

    /// The schemas sent to the model.
    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.iter()
            .map(|t| ToolSchema {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
                parameters: t.parameters().into(),
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
        let filter = self.filter.clone();
        self.tools
            .clone()
            .into_iter()
            .chain(dynamic)
            .filter(move |t| filter.as_ref().is_none_or(|keep| keep(t.as_ref())))
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
