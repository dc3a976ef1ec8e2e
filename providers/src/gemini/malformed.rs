//! `finishReason: MALFORMED_FUNCTION_CALL`: Gemini wrote a call it could not parse itself.
//! The answer is a retryable error, so the agent discards the attempt and asks again; this
//! provider remembers which request it was and sends the retry with a short nudge appended.
//! A second malformed answer to the nudged request is final: a clear error the agent does not
//! retry, so a model stuck on a call it cannot write costs one extra request, not five.

use std::sync::{Arc, Mutex, PoisonError};

use corvid_protocol::{ErrorInfo, ErrorKind, Message, ModelRequest, StreamEvent};
use futures::StreamExt;

use crate::EventStream;
use crate::history::fingerprint;

/// How the parser's error for a malformed call begins (the provider recognises it by this).
pub(crate) const MALFORMED: &str = "Gemini produced a malformed function call";

/// What the retry adds to the conversation, as the user's words, for that request only.
pub(crate) const NUDGE: &str = "Your last reply ended in a malformed function call. Call the \
tool again with a well-formed call (JSON arguments matching its declared parameters), or \
answer in text.";

/// The request (by its history's fingerprint) whose answer was a malformed call, if the last
/// answer was one.
#[derive(Debug, Default)]
pub(crate) struct LastMalformed(Mutex<Option<Vec<u64>>>);

impl LastMalformed {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Vec<u64>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `request` is the retry of a request answered with a malformed call.
    fn is_retry(&self, request: &ModelRequest) -> bool {
        let last = self.lock();
        last.as_ref().is_some_and(|seen| {
            request
                .messages
                .iter()
                .map(fingerprint)
                .eq(seen.iter().copied())
        })
    }
}

/// `request`, with the nudge appended when it retries a malformed answer; and whether it does.
/// Another request forgets the malformed one.
pub(crate) fn prepare(last: &LastMalformed, request: ModelRequest) -> (ModelRequest, bool) {
    if !last.is_retry(&request) {
        *last.lock() = None;
        return (request, false);
    }
    let mut nudged = request;
    nudged.messages.push(Message::user_text(NUDGE));
    (nudged, true)
}

/// Watches a stream's end: a malformed answer is remembered (first time) or made final
/// (answering the nudge); a finished answer forgets it. Other errors (a dropped connection)
/// leave it: the agent's retry of the same request is nudged again.
pub(crate) fn watch(
    events: EventStream,
    last: Arc<LastMalformed>,
    request: ModelRequest,
    nudged: bool,
) -> EventStream {
    events
        .map(move |item| match item {
            Err(error) if error.message.starts_with(MALFORMED) => {
                if nudged {
                    *last.lock() = None;
                    Err(final_error(&error))
                } else {
                    *last.lock() = Some(request.messages.iter().map(fingerprint).collect());
                    Err(error)
                }
            }
            item @ Ok(StreamEvent::Finished { .. }) => {
                *last.lock() = None;
                item
            }
            item => item,
        })
        .boxed()
}

/// The parser's error for a malformed call: what Gemini said about it, then the promise of
/// one more try.
pub(crate) fn first_error(reason: &str, finish_message: Option<&str>) -> ErrorInfo {
    let detail = finish_message
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(|m| format!(": {m}"))
        .unwrap_or_default();
    ErrorInfo::new(
        ErrorKind::Server,
        format!("{MALFORMED} ({reason}{detail}){ASKING_AGAIN}"),
    )
}

const ASKING_AGAIN: &str = "; corvid asks once more";

fn final_error(error: &ErrorInfo) -> ErrorInfo {
    let what = error.message.strip_prefix(MALFORMED).unwrap_or_default();
    let what = what.strip_suffix(ASKING_AGAIN).unwrap_or(what);
    ErrorInfo::new(
        ErrorKind::BadResponse,
        format!(
            "{MALFORMED} again after being asked to write it anew{what}; corvid does not \
             retry it a second time: rephrase the request, or switch models with /model"
        ),
    )
}
