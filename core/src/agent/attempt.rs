//! One attempt at a turn's model request: stream it, translate stream events into core events
//! as they arrive, and collect what a clean finish would hand to execution.

use std::collections::HashSet;

use corvid_protocol::{
    CoreEvent, DiscardReason, ErrorInfo, ErrorKind, FinishReason, JsonText, ModelRequest, Part,
    Provenance, StreamEvent, ToolCall, ToolKind, Usage,
};
use futures::StreamExt;

use super::bulk;
use super::ids::AttemptIds;
use super::session::TaskCtx;

/// What one attempt produced.
#[derive(Default)]
pub(super) struct AttemptOutput {
    /// Text and thoughts, in arrival order (consecutive deltas merged).
    pub parts: Vec<Part>,
    /// Complete calls, with session-unique ids; only usable after a clean finish.
    pub calls: Vec<ToolCall>,
    /// Cards shown during this attempt: (call id, tool name), in order.
    pub prepared: Vec<(String, String)>,
    /// The latest usage the provider reported.
    pub usage: Option<Usage>,
}

/// How an attempt ended.
pub(super) enum AttemptEnd {
    Finished(FinishReason),
    Failed(ErrorInfo),
    Cancelled,
}

/// Streams one request. The caller decides what an abandoned attempt means (retry, fallback,
/// end of task) and discards its cards with [`discard_prepared`].
pub(super) async fn run_attempt(
    ctx: &TaskCtx,
    request: ModelRequest,
    used_ids: &HashSet<String>,
) -> (AttemptOutput, AttemptEnd) {
    let mut out = AttemptOutput::default();
    let mut ids = AttemptIds::new(used_ids);
    let mut prepared_ids = HashSet::new();
    let mut complete_ids = HashSet::new();
    if ctx.cancel.is_cancelled() {
        return (out, AttemptEnd::Cancelled);
    }
    // Sending the request is bulk work; the other sessions' ready chunks go first.
    bulk::after_ready_work().await;
    let sent = std::time::Instant::now();
    let mut first = true;
    let mut stream = ctx.stat.provider.stream(request);
    let end = loop {
        let item = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => break AttemptEnd::Cancelled,
            item = stream.next() => item,
        };
        let event = match item {
            None => {
                break AttemptEnd::Failed(ErrorInfo::new(
                    ErrorKind::StreamTruncated,
                    "the model's response ended before it finished",
                ));
            }
            Some(Err(err)) => break AttemptEnd::Failed(err),
            Some(Ok(event)) => event,
        };
        if first && !matches!(event, StreamEvent::Usage(_)) {
            first = false;
            crate::telemetry::first_token(sent.elapsed());
        }
        match event {
            StreamEvent::Text { text } => {
                append_text(&mut out.parts, &text, false);
                ctx.events.emit(CoreEvent::TextDelta { text });
            }
            StreamEvent::Thought { text } => {
                append_text(&mut out.parts, &text, true);
                ctx.events.emit(CoreEvent::ThoughtDelta { text });
            }
            StreamEvent::ThoughtSignature { signature } => set_signature(&mut out.parts, signature),
            StreamEvent::ThoughtData { data } => set_data(&mut out.parts, data),
            StreamEvent::ToolPreparing { call_id, tool_name } => {
                if call_id.is_empty() {
                    continue;
                }
                let tool = ctx.stat.tools.get(&tool_name);
                if tool.as_ref().is_some_and(|t| !t.shows_card()) {
                    continue;
                }
                let call_id = ids.resolve(&call_id);
                if !prepared_ids.insert(call_id.clone()) {
                    continue;
                }
                let (display_name, kind) = match &tool {
                    Some(t) => (t.display_name().to_owned(), t.kind()),
                    None => (tool_name.clone(), ToolKind::Other),
                };
                out.prepared.push((call_id.clone(), tool_name.clone()));
                ctx.events.emit(CoreEvent::ToolPreparing {
                    call_id,
                    tool_name,
                    display_name,
                    kind,
                    provenance: tool.map_or(Provenance::Builtin, |t| t.provenance()),
                });
            }
            StreamEvent::ToolCall(call) => {
                let call_id = if call.call_id.is_empty() {
                    ids.generate()
                } else if !complete_ids.insert(call.call_id.clone()) {
                    tracing::warn!(call_id = %call.call_id, "duplicate call id in one response; dropped");
                    continue;
                } else {
                    ids.resolve(&call.call_id)
                };
                out.calls.push(ToolCall { call_id, ..call });
            }
            // The API ran it: shown as a card and kept for the next request, never executed.
            StreamEvent::Hosted(block) => {
                ctx.events.emit(block.card_event());
                out.parts.push(Part::Hosted(block));
            }
            StreamEvent::Usage(usage) => out.usage = Some(usage),
            StreamEvent::Finished { reason } => break AttemptEnd::Finished(reason),
        }
    };
    // Dropping the stream aborts the HTTP request at once (cancellation, errors).
    drop(stream);
    (out, end)
}

fn append_text(parts: &mut Vec<Part>, delta: &str, thought: bool) {
    match parts.last_mut() {
        Some(Part::Text { text }) if !thought => text.push_str(delta),
        Some(Part::Thought {
            text,
            signature: None,
            provider_data: None,
        }) if thought => text.push_str(delta),
        _ if thought => parts.push(Part::Thought {
            text: delta.to_owned(),
            signature: None,
            provider_data: None,
        }),
        _ => parts.push(Part::Text {
            text: delta.to_owned(),
        }),
    }
}

fn set_signature(parts: &mut Vec<Part>, sig: String) {
    if let Some(Part::Thought { signature, .. }) = parts
        .iter_mut()
        .rev()
        .find(|p| matches!(p, Part::Thought { .. }))
    {
        *signature = Some(sig);
    } else {
        parts.push(Part::Thought {
            text: String::new(),
            signature: Some(sig),
            provider_data: None,
        });
    }
}

/// Closes the reasoning just streamed with the provider's opaque state: it belongs to the
/// last part when that is an open thought, else it is a reasoning block without text (a
/// Responses reasoning item whose summary was not asked for).
fn set_data(parts: &mut Vec<Part>, data: JsonText) {
    match parts.last_mut() {
        Some(Part::Thought {
            signature: None,
            provider_data: slot @ None,
            ..
        }) => *slot = Some(data),
        _ => parts.push(Part::Thought {
            text: String::new(),
            signature: None,
            provider_data: Some(data),
        }),
    }
}

/// Ends every card of `prepared` whose id is not in `keep`: the call will never run.
pub(super) fn discard_prepared(
    ctx: &TaskCtx,
    prepared: &[(String, String)],
    keep: &HashSet<&str>,
    reason: DiscardReason,
) {
    for (call_id, tool_name) in prepared {
        if keep.contains(call_id.as_str()) {
            continue;
        }
        ctx.events.emit(CoreEvent::PreparationDiscarded {
            call_id: call_id.clone(),
            tool_name: tool_name.clone(),
            reason,
            provenance: super::exec::provenance_of(ctx, tool_name),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn thought(text: &str, data: Option<serde_json::Value>) -> Part {
        Part::Thought {
            text: text.into(),
            signature: None,
            provider_data: data.map(|d| JsonText::new(&d)),
        }
    }

    #[test]
    fn each_reasoning_item_closes_its_own_thought_and_one_without_a_summary_gets_an_empty_one() {
        let mut parts = Vec::new();
        append_text(&mut parts, "first ", true);
        append_text(&mut parts, "thought", true);
        set_data(&mut parts, JsonText::new(&json!({"n": 1})));
        // A closed thought takes no more text: the next summary starts a new part.
        append_text(&mut parts, "second", true);
        set_data(&mut parts, JsonText::new(&json!({"n": 2})));
        set_data(&mut parts, JsonText::new(&json!({"n": 3})));
        append_text(&mut parts, "answer", false);
        assert_eq!(
            parts,
            vec![
                thought("first thought", Some(json!({"n": 1}))),
                thought("second", Some(json!({"n": 2}))),
                thought("", Some(json!({"n": 3}))),
                Part::Text {
                    text: "answer".into()
                },
            ]
        );
    }
}
