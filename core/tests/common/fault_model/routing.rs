//! One provider for the whole session, as in the product (children and compactions use the
//! session's provider), serving each request from the script of whoever asked: the main
//! agent, a subagent (told by its prompt), or a compaction (told by its system prompt).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use corvid_core::context::compaction::COMPACTION_SYSTEM;
use corvid_protocol::{Completion, ErrorInfo, ModelRequest, Part};
use corvid_providers::{EventStream, Provider};
use futures::future::BoxFuture;

use super::script::{Plan, child_prompt};
use crate::common::scripted::{ScriptedProvider, Yields};

/// How a subagent's system prompt starts (`corvid_core::agents`).
const CHILD_SYSTEM: &str = "You are a corvid subagent";

#[derive(Clone)]
pub struct Routed {
    pub main: ScriptedProvider,
    pub compaction: ScriptedProvider,
    /// Each `task` call's child, by the call's id.
    pub children: Arc<HashMap<String, ScriptedProvider>>,
    /// The child that asked last: a compaction may have summarized its prompt away, and only
    /// one child runs at a time (one `task` call per response).
    current: Arc<Mutex<Option<String>>>,
    /// Requests no script could serve (a model violation of its own: reported by the checks).
    pub misrouted: Arc<Mutex<Vec<String>>>,
}

impl Routed {
    pub fn new(plan: &Plan, yields: &Yields) -> Self {
        let scripted = |script: Vec<Vec<_>>, answer: &str| {
            ScriptedProvider::new(script)
                .answering_when_exhausted(answer)
                .yielding(yields.clone())
        };
        Self {
            main: scripted(plan.main.clone(), "All done."),
            compaction: scripted(plan.compactions.clone(), super::script::SUMMARY),
            children: Arc::new(
                plan.children
                    .iter()
                    .map(|(id, script)| (id.clone(), scripted(script.clone(), "Child report.")))
                    .collect(),
            ),
            current: Arc::new(Mutex::new(None)),
            misrouted: Arc::default(),
        }
    }

    /// Ids of the complete calls of every response delivered up to `Finished`.
    pub fn finished_call_ids(&self) -> HashSet<String> {
        let mut ids = self.main.finished_call_ids();
        for child in self.children.values() {
            ids.extend(child.finished_call_ids());
        }
        ids
    }

    fn pick(&self, request: &ModelRequest) -> Result<&ScriptedProvider, String> {
        if request.system == COMPACTION_SYSTEM {
            return Ok(&self.compaction);
        }
        if !request.system.starts_with(CHILD_SYSTEM) {
            return Ok(&self.main);
        }
        let first_text = request.messages.first().into_iter().flat_map(|m| &m.parts);
        let named = first_text.filter_map(|p| match p {
            Part::Text { text } => self
                .children
                .keys()
                .find(|id| text.trim() == child_prompt(id)),
            _ => None,
        });
        let mut current = self.current.lock().unwrap();
        if let Some(id) = named.into_iter().next() {
            *current = Some(id.clone());
        }
        current
            .as_ref()
            .and_then(|id| self.children.get(id))
            .ok_or_else(|| "a subagent request from no known child".to_owned())
    }
}

impl Provider for Routed {
    fn name(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        match self.pick(&request) {
            Ok(provider) => provider.stream(request),
            Err(message) => {
                self.misrouted.lock().unwrap().push(message.clone());
                Box::pin(futures::stream::iter([Err(ErrorInfo::new(
                    corvid_protocol::ErrorKind::BadRequest,
                    message,
                ))]))
            }
        }
    }

    fn complete(&self, request: ModelRequest) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
        match self.pick(&request) {
            Ok(provider) => provider.complete(request),
            Err(message) => {
                self.misrouted.lock().unwrap().push(message.clone());
                Box::pin(async move {
                    Err(ErrorInfo::new(
                        corvid_protocol::ErrorKind::BadRequest,
                        message,
                    ))
                })
            }
        }
    }
}
