//! The built-in scripted demo model (`--demo`): no key, no network.
//!
//! It streams through the same [`StreamEvent`] path as the real providers, with realistic
//! pacing, so every front end shows what it would show with a real model: text streaming in,
//! tool cards appearing as soon as a call's name is known, a plan, an approval refusal and a
//! final answer. Its `complete` call is the scripted fast model that writes tool-use labels.

mod label;
mod script;

use std::path::PathBuf;
use std::time::Duration;

use corvid_protocol::{Completion, ErrorInfo, ModelRequest, StreamEvent, Usage};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};

use crate::{EventStream, Provider};

/// The pause between two streamed pieces by default: fast enough to stay out of the way,
/// slow enough to see text flow and cards appear.
pub const DEFAULT_PACING: Duration = Duration::from_millis(12);

/// Argument fragments a real model would stream per call; the demo waits as long as they
/// would take between a call's preparing event and its completion.
const MAX_ARG_FRAGMENTS: usize = 6;

/// The scripted model. One instance serves any number of sessions and tasks: each reply is
/// decided from the request's history alone.
#[derive(Debug, Clone)]
pub struct DemoProvider {
    pacing: Duration,
    cwd: Option<PathBuf>,
}

impl DemoProvider {
    /// A demo model working in `cwd` (where it looks for a file worth reading).
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            pacing: DEFAULT_PACING,
            cwd: Some(cwd.into()),
        }
    }

    /// Sets the pause between streamed pieces; zero streams everything at once (tests).
    pub fn with_pacing(mut self, pacing: Duration) -> Self {
        self.pacing = pacing;
        self
    }

    /// The scripted reply as timed stream events.
    fn events(&self, request: &ModelRequest) -> Vec<(Duration, StreamEvent)> {
        let reply = script::reply(request, self.cwd.as_deref());
        let step = self.pacing;
        let mut events = Vec::new();
        for piece in text_pieces(&reply.text) {
            events.push((step, StreamEvent::Text { text: piece }));
        }
        for call in &reply.calls {
            events.push((
                step,
                StreamEvent::ToolPreparing {
                    call_id: call.call_id.clone(),
                    tool_name: call.name.clone(),
                },
            ));
        }
        // The argument fragments of the last prepared call stream before the calls complete.
        let args_len: usize = reply.calls.iter().map(|c| c.args.to_string().len()).sum();
        let fragments = u32::try_from((args_len / 16).clamp(1, MAX_ARG_FRAGMENTS)).unwrap_or(1);
        let mut first_call = true;
        for call in reply.calls.iter().cloned() {
            let delay = if first_call {
                step * fragments
            } else {
                Duration::ZERO
            };
            first_call = false;
            events.push((delay, StreamEvent::ToolCall(call)));
        }
        let output_chars = reply.text.len() + args_len;
        events.push((
            Duration::ZERO,
            StreamEvent::Usage(usage(request, output_chars)),
        ));
        events.push((
            Duration::ZERO,
            StreamEvent::Finished {
                reason: reply.finish,
            },
        ));
        events
    }
}

impl Provider for DemoProvider {
    fn name(&self) -> &str {
        "demo"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        futures::stream::iter(self.events(&request))
            .then(|(delay, event)| async move {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Ok(event)
            })
            .boxed()
    }

    fn complete(&self, request: ModelRequest) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
        let prompt = request
            .messages
            .last()
            .map(|m| m.text())
            .unwrap_or_default();
        let completion = if label::is_summary_prompt(&prompt) || label::is_title_prompt(&prompt) {
            let text = if label::is_title_prompt(&prompt) {
                label::title_for(&prompt)
            } else {
                label::label_for(&prompt)
            };
            Completion {
                usage: Some(usage(&request, text.len())),
                text,
                tool_calls: Vec::new(),
                finish_reason: Some(corvid_protocol::FinishReason::Stop),
            }
        } else {
            let reply = script::reply(&request, self.cwd.as_deref());
            let args_len: usize = reply.calls.iter().map(|c| c.args.to_string().len()).sum();
            Completion {
                usage: Some(usage(&request, reply.text.len() + args_len)),
                text: reply.text,
                tool_calls: reply.calls,
                finish_reason: Some(reply.finish),
            }
        };
        let pacing = self.pacing;
        async move {
            // A fast model still takes a moment, but less than the next turn's batch, so the
            // demo's labels are not dropped as stale.
            if !pacing.is_zero() {
                tokio::time::sleep(pacing * 2).await;
            }
            Ok(completion)
        }
        .boxed()
    }
}

/// Text in pieces of a few words, as a model streams it (spaces kept, so pieces concatenate
/// back to the original).
fn text_pieces(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut words = 0;
    for ch in text.chars() {
        current.push(ch);
        if ch == ' ' || ch == '\n' {
            words += 1;
            if words == 3 || ch == '\n' {
                pieces.push(std::mem::take(&mut current));
                words = 0;
            }
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// A rough token count (four characters a token), so usage stats have plausible numbers.
fn usage(request: &ModelRequest, output_chars: usize) -> Usage {
    let input_chars = request.system.len()
        + request
            .messages
            .iter()
            .map(|m| serde_json::to_string(m).map_or(0, |s| s.len()))
            .sum::<usize>();
    let input_tokens = (input_chars / 4) as u64;
    let output_tokens = (output_chars / 4).max(1) as u64;
    Usage {
        input_tokens,
        output_tokens,
        total_tokens: input_tokens + output_tokens,
        cached_input_tokens: 0,
        reasoning_tokens: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corvid_protocol::{FinishReason, Message, ToolSchema};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn request(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            model: "corvid-demo".into(),
            system: "sys".into(),
            messages: messages.into(),
            tools: vec![std::sync::Arc::new(ToolSchema {
                name: "list_directory".into(),
                description: String::new(),
                parameters: json!({}).into(),
            })],
            max_output_tokens: None,
            temperature: None,
        }
    }

    #[tokio::test]
    async fn the_first_turn_streams_text_then_preparing_then_calls_then_usage_and_finish() {
        let demo = DemoProvider::new("/nonexistent-demo-dir").with_pacing(Duration::ZERO);
        let events: Vec<StreamEvent> = demo
            .stream(request(vec![Message::user_text("look around")]))
            .map(|item| item.unwrap())
            .collect()
            .await;
        let kinds: Vec<&str> = events
            .iter()
            .map(|e| match e {
                StreamEvent::Text { .. } => "text",
                StreamEvent::ToolPreparing { .. } => "preparing",
                StreamEvent::ToolCall(_) => "call",
                StreamEvent::Usage(_) => "usage",
                StreamEvent::Finished { .. } => "finished",
                _ => "other",
            })
            .filter(|k| *k != "text")
            .collect();
        assert_eq!(kinds, vec!["preparing", "call", "usage", "finished"]);
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(text.starts_with("I'll start by looking around"), "{text}");
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Finished {
                reason: FinishReason::ToolCalls
            })
        );
    }

    #[tokio::test]
    async fn complete_answers_a_summary_prompt_with_a_label() {
        let demo = DemoProvider::new("/").with_pacing(Duration::ZERO);
        let mut req = request(vec![Message::user_text(
            "Tool: read_file\nInput: {\"file_path\":\"Cargo.toml\"}\nOutput: \"x\"\n\nLabel:",
        )]);
        req.tools.clear();
        let completion = demo.complete(req).await.unwrap();
        assert_eq!(completion.text, "Read Cargo.toml");
        assert_eq!(completion.finish_reason, Some(FinishReason::Stop));
    }

    #[tokio::test]
    async fn complete_answers_a_title_prompt_with_the_requests_first_words() {
        let demo = DemoProvider::new("/").with_pacing(Duration::ZERO);
        let mut req = request(vec![Message::user_text(
            "Request: Look around this project and tell me what it is\n\nAnswer: ## What I found\n\nTitle:",
        )]);
        req.tools.clear();
        let completion = demo.complete(req).await.unwrap();
        assert_eq!(completion.text, "Look around this project and tell");
    }

    #[test]
    fn text_pieces_concatenate_back_to_the_text() {
        let text = "one two three four\nfive six";
        let pieces = text_pieces(text);
        assert_eq!(pieces, vec!["one two three ", "four\n", "five six"]);
        assert_eq!(pieces.concat(), text);
    }
}
