//! `model.store: true`: the server keeps each response, and a request that continues the
//! last one names it in `previous_response_id` and sends only what came after it (the
//! results of its calls, the next prompt). When the server no longer knows the id (stored
//! responses expire, another organisation's key, a proxy without storage), the same turn is
//! sent again in the stateless form, whole, and the stream goes on as if nothing happened.
//!
//! A request continues the last response only when its history is exactly the one that
//! response answered, followed by that response's own output (an assistant message with the
//! same calls) and something new. Anything else (a compacted or cleared history, a retry
//! after a fallback model, the core renaming a duplicate call id) is sent whole.

use std::sync::{Arc, Mutex, PoisonError};

use corvid_protocol::{ErrorInfo, ErrorKind, Message, ModelRequest, Part, Role, StreamEvent};
use futures::StreamExt;
use futures::stream;

use super::request::Continuation;
use super::{OpenAiResponsesProvider, ResponseIdSlot};
use crate::EventStream;
use crate::history::fingerprint;

/// The last completed response of a session and the history it answered.
#[derive(Debug, Default)]
pub(crate) struct LastResponse(Mutex<Option<Stored>>);

#[derive(Debug)]
struct Stored {
    response_id: String,
    /// One fingerprint per message of the request it answered (holding the messages
    /// themselves would make the agent copy its whole history at its next append).
    messages: Vec<u64>,
    /// The calls it made, in order: its output in the history must carry the same ones.
    call_ids: Vec<String>,
}

impl LastResponse {
    /// The stored response `messages` continues and how many of them it already holds.
    fn continuation(&self, messages: &[Message]) -> Option<(String, usize)> {
        let guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let stored = guard.as_ref()?;
        let answered = stored.messages.len();
        let (output, new) = messages.get(answered..)?.split_first()?;
        let output_calls = output.parts.iter().filter_map(|p| match p {
            Part::ToolCall(call) => Some(call.call_id.as_str()),
            _ => None,
        });
        let continues = !new.is_empty()
            && output.role == Role::Assistant
            && output_calls.eq(stored.call_ids.iter().map(String::as_str))
            && messages[..answered]
                .iter()
                .map(fingerprint)
                .eq(stored.messages.iter().copied());
        continues.then(|| (stored.response_id.clone(), answered + 1))
    }

    fn record(&self, stored: Stored) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(stored);
    }

    fn forget(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// Whether `error` is the server saying it does not know the `previous_response_id` sent:
/// OpenAI answers 400 `{"error":{"message":"Previous response with id 'resp_…' not found.",
/// "type":"invalid_request_error","param":"previous_response_id","code":
/// "previous_response_not_found"}}` (the same object comes as an `error` event on a stream),
/// and the Codex backend `Invalid 'previous_response_id'.`
pub(crate) fn is_unknown_previous_response(error: &ErrorInfo) -> bool {
    let message = error.message.to_ascii_lowercase();
    error.kind == ErrorKind::BadRequest
        && (message.contains("previous response") || message.contains("previous_response"))
}

/// A streaming request in the stored form: continued when it can be, sent whole again when
/// the server does not know the response it continued, and noted for the next request once
/// it completes.
pub(super) fn stream(provider: OpenAiResponsesProvider, request: ModelRequest) -> EventStream {
    let slot = ResponseIdSlot::default();
    let last = Arc::clone(&provider.last);
    let mut seen = Seen {
        messages: request.messages.iter().map(fingerprint).collect(),
        call_ids: Vec::new(),
        slot: slot.clone(),
        last: Arc::clone(&last),
    };
    let events = match last.continuation(&request.messages) {
        None => provider.send(&request, None, Some(slot)),
        Some((previous_response_id, covered)) => {
            let continued = Continuation {
                previous_response_id: &previous_response_id,
                covered,
            };
            let first = provider.send(&request, Some(continued), Some(slot.clone()));
            let attempt = async move {
                let mut first = first;
                match first.next().await {
                    Some(Err(error)) if is_unknown_previous_response(&error) => {
                        tracing::info!(%error, "the server does not hold the previous response; sending the whole conversation");
                        last.forget();
                        provider.send(&request, None, Some(slot))
                    }
                    head => stream::iter(head).chain(first).boxed(),
                }
            };
            stream::once(attempt).flatten().boxed()
        }
    };
    events.inspect(move |item| seen.note(item)).boxed()
}

/// What a stored-form stream showed so far: enough to continue it once it completes.
struct Seen {
    messages: Vec<u64>,
    call_ids: Vec<String>,
    slot: ResponseIdSlot,
    last: Arc<LastResponse>,
}

impl Seen {
    fn note(&mut self, item: &corvid_protocol::StreamItem) {
        match item {
            Ok(StreamEvent::ToolCall(call)) => self.call_ids.push(call.call_id.clone()),
            Ok(StreamEvent::Finished { .. }) => {
                if let Some(response_id) = self.slot.take() {
                    self.last.record(Stored {
                        response_id,
                        messages: std::mem::take(&mut self.messages),
                        call_ids: std::mem::take(&mut self.call_ids),
                    });
                }
            }
            _ => {}
        }
    }
}
