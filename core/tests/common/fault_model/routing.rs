//! One provider for the whole session, as in the product (children and compactions use the
//! session's provider), serving each request from the script of whoever asked: the main
//! agent, a subagent (told by its prompt), or a compaction (told by its system prompt).
//! Several subagents of one response run at once, so each is told apart by its own words:
//! its prompt, or after a compaction the summary, which names the child it was written for.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use corvid_core::context::compaction::COMPACTION_SYSTEM;
use corvid_protocol::{Completion, ErrorInfo, ModelRequest, Part, StreamEvent};
use corvid_providers::{EventStream, Provider};
use futures::StreamExt;
use futures::future::BoxFuture;

use super::script::{Plan, SUMMARY, child_prompt};
use crate::common::scripted::{ScriptedProvider, Yields};

/// How a subagent's system prompt starts (`corvid_core::agents`).
const CHILD_SYSTEM: &str = "You are a corvid subagent";

#[derive(Clone)]
pub struct Routed {
    pub main: ScriptedProvider,
    pub compaction: ScriptedProvider,
    /// Each `task` call's child, by the call's id.
    pub children: Arc<HashMap<String, ScriptedProvider>>,
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

    /// The child whose history `request` holds: its first message is the child's prompt, or
    /// a summary written for it.
    fn child_of(&self, request: &ModelRequest) -> Option<String> {
        let first = request.messages.first().into_iter().flat_map(|m| &m.parts);
        first
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.trim()),
                _ => None,
            })
            .find_map(|text| {
                self.children.keys().find(|id| {
                    let prompt = child_prompt(id);
                    text == prompt || text.ends_with(&summary_tag(id))
                })
            })
            .cloned()
    }

    fn pick(&self, request: &ModelRequest) -> Result<&ScriptedProvider, String> {
        if request.system == COMPACTION_SYSTEM {
            return Ok(&self.compaction);
        }
        if !request.system.starts_with(CHILD_SYSTEM) {
            return Ok(&self.main);
        }
        self.child_of(request)
            .and_then(|id| self.children.get(&id))
            .ok_or_else(|| "a subagent request from no known child".to_owned())
    }

    /// What a compaction for `request`'s agent appends to the summary: the child it is for.
    fn tag_for(&self, request: &ModelRequest) -> Option<String> {
        (request.system == COMPACTION_SYSTEM)
            .then(|| self.child_of(request))
            .flatten()
            .map(|id| summary_tag(&id))
    }
}

/// The words a child's summary ends with, so its next requests are still told apart.
fn summary_tag(id: &str) -> String {
    format!("[for {}]", child_prompt(id))
}

/// `SUMMARY` with `tag` appended (a compaction answer for a child).
fn tagged(text: String, tag: &Option<String>) -> String {
    match tag {
        Some(tag) if text == SUMMARY => format!("{text} {tag}"),
        _ => text,
    }
}

impl Provider for Routed {
    fn name(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        let tag = self.tag_for(&request);
        match self.pick(&request) {
            Ok(provider) => Box::pin(provider.stream(request).map(move |item| match item {
                Ok(StreamEvent::Text { text }) => Ok(StreamEvent::Text {
                    text: tagged(text, &tag),
                }),
                other => other,
            })),
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
        let tag = self.tag_for(&request);
        match self.pick(&request) {
            Ok(provider) => {
                let answer = provider.complete(request);
                Box::pin(async move {
                    let mut completion = answer.await?;
                    completion.text = tagged(completion.text, &tag);
                    Ok(completion)
                })
            }
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
