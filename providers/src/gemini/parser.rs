//! `streamGenerateContent?alt=sse` chunks → stream events (SPEC §2.4).
//!
//! Every data event is a whole `GenerateContentResponse`. A functionCall part arrives whole:
//! its preparing event goes out at that chunk under an id corvid mints (Gemini sends none),
//! the complete call at `finishReason: STOP`. Issue 28 asked for the call at its chunk too; it
//! is held on purpose: the core runs the complete calls of every attempt that finishes,
//! whatever the reason (a Chat Completions call complete at `length` runs), so a call released
//! early would run from a response Gemini then stopped for `SAFETY`, `RECITATION` or
//! `MAX_TOKENS`. Holding it costs nothing a user sees: the core executes calls only after the
//! finish either way, and the card (the only early sign) is out at the chunk. A cut response
//! runs nothing either way. A `thoughtSignature` goes out as `ThoughtData` right after the
//! content of the part it rode on. The stream ends at the first `finishReason`.

use corvid_protocol::{ErrorInfo, ErrorKind, FinishReason, StreamEvent, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::malformed::first_error;
use super::signature::{On, Signed, is_base64};
use crate::error::{classify_stream_error, google_retry_delay};
use crate::sse::{BodyEnd, SseEvent};
use crate::wire::{Emitted, NonJsonLine, ended_before, lenient_u64};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk<'a> {
    #[serde(default)]
    candidates: Option<Vec<Candidate>>,
    #[serde(borrow, default)]
    prompt_feedback: Option<&'a RawValue>,
    #[serde(default)]
    usage_metadata: Option<RawUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<CandidateContent>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    finish_message: Option<String>,
}

#[derive(Deserialize)]
struct CandidateContent {
    #[serde(default)]
    parts: Vec<WirePart>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePart {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    function_call: Option<WireCall>,
    #[serde(default)]
    thought_signature: Option<String>,
}

#[derive(Deserialize)]
struct WireCall {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize, Clone, Copy, Default)]
#[serde(rename_all = "camelCase")]
struct RawUsage {
    #[serde(default, deserialize_with = "lenient_u64")]
    prompt_token_count: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    candidates_token_count: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    cached_content_token_count: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    thoughts_token_count: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    total_token_count: Option<u64>,
}

impl RawUsage {
    /// Gemini counts thoughts apart from candidates; corvid's output includes them.
    fn normalise(self) -> Usage {
        let input = self.prompt_token_count.unwrap_or(0);
        let thoughts = self.thoughts_token_count.unwrap_or(0);
        let output = self
            .candidates_token_count
            .unwrap_or(0)
            .saturating_add(thoughts);
        Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: self
                .total_token_count
                .unwrap_or(input.saturating_add(output)),
            cached_input_tokens: self.cached_content_token_count.unwrap_or(0),
            reasoning_tokens: thoughts,
        }
    }
}

/// Assembles one Gemini stream.
#[derive(Debug, Default)]
pub struct GeminiParser {
    /// Complete calls, released once the response finishes cleanly (a cut response's calls
    /// never run); their count is also the next call's position.
    calls: Vec<ToolCall>,
    decoded_any: bool,
    non_json: NonJsonLine,
}

fn bad(at: Option<usize>, message: String) -> Emitted {
    Emitted::err(at, ErrorInfo::new(ErrorKind::BadResponse, message))
}

impl crate::wire::WireParser for GeminiParser {
    fn on_event(&mut self, event: &SseEvent<'_>, out: &mut Vec<Emitted>) -> bool {
        let at = Some(event.index);
        let data = event.data.trim();
        let chunk: Chunk<'_> = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(e) => {
                tracing::warn!(at = event.index, error = %e, "skipping a data event that is not a Gemini response");
                self.non_json.note(event.index, data);
                return false;
            }
        };
        self.decoded_any = true;
        if let Some(error) = chunk.error {
            let mut info = classify_stream_error(&error);
            info.retry_after_ms = google_retry_delay(&error);
            out.push(Emitted::err(at, info));
            return true;
        }
        let Some(candidates) = chunk.candidates else {
            if let Some(feedback) = chunk.prompt_feedback {
                // The prompt itself was blocked: no candidate will come.
                tracing::warn!(feedback = feedback.get(), "Gemini blocked the prompt");
                self.push_usage(chunk.usage_metadata, at, out);
                let reason = FinishReason::ContentFilter;
                out.push(Emitted::ok(at, StreamEvent::Finished { reason }));
                return true;
            }
            out.push(bad(
                at,
                format!(
                    "Gemini stream chunk {} has neither `candidates` nor `promptFeedback`",
                    event.index
                ),
            ));
            return true;
        };
        // corvid asks for one candidate; others (if a server sends them) are ignored.
        let Some(candidate) = candidates.into_iter().next() else {
            self.push_usage(chunk.usage_metadata, at, out);
            return false;
        };
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            if let Err(message) = self.part(part, at, out) {
                out.push(bad(at, message));
                return true;
            }
        }
        let Some(reason) = candidate.finish_reason else {
            self.push_usage(chunk.usage_metadata, at, out);
            return false;
        };
        self.push_usage(chunk.usage_metadata, at, out);
        let calls = std::mem::take(&mut self.calls);
        let reason = match reason.as_str() {
            "STOP" if !calls.is_empty() => {
                for call in calls {
                    out.push(Emitted::ok(at, StreamEvent::ToolCall(call)));
                }
                FinishReason::ToolCalls
            }
            "STOP" => FinishReason::Stop,
            "MAX_TOKENS" => FinishReason::MaxTokens,
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII"
            | "IMAGE_SAFETY" => FinishReason::ContentFilter,
            "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" => {
                // The model's own slip: asking again usually works, so it is retryable (the
                // provider nudges the retry, once: see `malformed`).
                let error = first_error(&reason, candidate.finish_message.as_deref());
                out.push(Emitted::err(at, error));
                return true;
            }
            other => FinishReason::Other(other.to_ascii_lowercase()),
        };
        out.push(Emitted::ok(at, StreamEvent::Finished { reason }));
        true
    }

    fn on_end(&mut self, end: BodyEnd, out: &mut Vec<Emitted>) {
        let error = ended_before(end, &self.non_json, self.decoded_any, "a finishReason");
        out.push(Emitted::err(None, error));
    }
}

impl GeminiParser {
    fn part(
        &mut self,
        part: WirePart,
        at: Option<usize>,
        out: &mut Vec<Emitted>,
    ) -> Result<(), String> {
        if let Some(sig) = &part.thought_signature
            && !is_base64(sig)
        {
            return Err("Gemini sent a `thoughtSignature` that is not base64".to_owned());
        }
        let mut signed = None;
        if let Some(call) = part.function_call {
            let name = call
                .name
                .filter(|n| !n.is_empty())
                .ok_or_else(|| "Gemini sent a `functionCall` without a `name`".to_owned())?;
            let args = call
                .args
                .unwrap_or_else(|| Value::Object(Default::default()));
            let index = self.calls.len();
            let call_id = mint_id(at.unwrap_or(0), index, &name, &args);
            out.push(Emitted::ok(
                at,
                StreamEvent::ToolPreparing {
                    call_id: call_id.clone(),
                    tool_name: name.clone(),
                },
            ));
            if let Some(sig) = &part.thought_signature {
                let mut s = Signed::new(On::Call, sig);
                s.call_id = Some(call_id.clone());
                s.call_index = Some(index);
                signed = Some(s);
            }
            self.calls.push(ToolCall {
                call_id,
                name,
                args,
            });
        } else if let Some(text) = part.text {
            let thought = part.thought == Some(true);
            if !text.is_empty() {
                out.push(Emitted::ok(
                    at,
                    if thought {
                        StreamEvent::Thought { text }
                    } else {
                        StreamEvent::Text { text }
                    },
                ));
            }
            if let Some(sig) = &part.thought_signature {
                signed = Some(Signed::new(
                    if thought { On::Thought } else { On::Text },
                    sig,
                ));
            }
        }
        if let Some(signed) = signed {
            out.push(Emitted::ok(
                at,
                StreamEvent::ThoughtData {
                    data: signed.to_data(),
                },
            ));
        }
        Ok(())
    }

    fn push_usage(&self, usage: Option<RawUsage>, at: Option<usize>, out: &mut Vec<Emitted>) {
        if let Some(usage) = usage {
            out.push(Emitted::ok(at, StreamEvent::Usage(usage.normalise())));
        }
    }
}

/// A call id for a call Gemini sent without one: stable for the same stream (replays and
/// fixtures agree) and unlikely to repeat across a session's turns (the core renames repeats).
fn mint_id(chunk: usize, index: usize, name: &str, args: &Value) -> String {
    // FNV-1a over what identifies the call.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let text = format!("{chunk}\u{0}{index}\u{0}{name}\u{0}{args}");
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("gemini_{hash:016x}")
}

/// Converts a whole (non-streaming) answer through the same assembly as a stream: one
/// `GenerateContentResponse`, or the JSON array of them a server sends without `alt=sse`.
pub(crate) fn decode_whole(body: &[u8]) -> Vec<Emitted> {
    use crate::wire::WireParser;
    let chunks: Vec<Box<RawValue>> = match serde_json::from_slice::<Vec<Box<RawValue>>>(body) {
        Ok(chunks) => chunks,
        Err(_) => match serde_json::from_slice::<Box<RawValue>>(body) {
            Ok(one) => vec![one],
            Err(e) => {
                let message = format!("the provider's response is not a Gemini response: {e}");
                return vec![bad(None, message)];
            }
        },
    };
    let mut parser = GeminiParser::default();
    let mut out = Vec::new();
    for (index, chunk) in chunks.iter().enumerate() {
        let event = SseEvent {
            index,
            event: "",
            data: chunk.get(),
        };
        if parser.on_event(&event, &mut out) {
            return out;
        }
    }
    parser.on_end(BodyEnd::Clean, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{WireProtocol, decode_body};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn items(body: &str) -> Vec<Result<StreamEvent, ErrorInfo>> {
        decode_body(WireProtocol::Gemini, body.as_bytes())
            .into_iter()
            .map(|e| e.item)
            .collect()
    }

    fn sse(chunks: &[Value]) -> String {
        chunks
            .iter()
            .map(|c| format!("data: {c}\r\n\r\n"))
            .collect()
    }

    #[test]
    fn a_signed_call_comes_out_whole_with_its_signature_and_a_stable_minted_id() {
        let body = sse(&[
            json!({"candidates": [{"content": {"role": "model", "parts": [
                {"text": "Plan", "thought": true}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"name": "read_file", "args": {"path": "a"}}, "thoughtSignature": "c2ln"},
                {"functionCall": {"name": "read_file", "args": {"path": "b"}}}]},
                "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                    "thoughtsTokenCount": 7, "cachedContentTokenCount": 4, "totalTokenCount": 22}}),
        ]);
        let got = items(&body);
        let again = items(&body);
        assert_eq!(got, again, "ids are stable across replays");
        let ids: Vec<_> = got
            .iter()
            .filter_map(|i| match i {
                Ok(StreamEvent::ToolCall(c)) => Some(c.call_id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1]);
        let data = got.iter().find_map(|i| match i {
            Ok(StreamEvent::ThoughtData { data }) => Signed::from_data(data),
            _ => None,
        });
        let data = data.unwrap();
        assert_eq!(
            (
                data.on,
                data.thought_signature.as_str(),
                data.call_id.as_ref(),
                data.call_index
            ),
            (On::Call, "c2ln", Some(&ids[0]), Some(0))
        );
        assert_eq!(
            got[0],
            Ok(StreamEvent::Thought {
                text: "Plan".into()
            })
        );
        let usage = got
            .iter()
            .rev()
            .find(|i| matches!(i, Ok(StreamEvent::Usage(_))));
        assert_eq!(
            usage.cloned().unwrap(),
            Ok(StreamEvent::Usage(Usage {
                input_tokens: 10,
                output_tokens: 12,
                total_tokens: 22,
                cached_input_tokens: 4,
                reasoning_tokens: 7,
            }))
        );
        assert_eq!(
            got.last(),
            Some(&Ok(StreamEvent::Finished {
                reason: FinishReason::ToolCalls
            }))
        );
    }

    #[test]
    fn bad_chunks_name_the_field_at_fault() {
        for (chunk, field) in [
            (
                json!({"usageMetadata": {}}),
                "`candidates` nor `promptFeedback`",
            ),
            (
                json!({"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]}),
                "`functionCall` without a `name`",
            ),
            (
                json!({"candidates": [{"content": {"parts": [{"text": "x", "thoughtSignature": "not base64!"}]}}]}),
                "`thoughtSignature` that is not base64",
            ),
        ] {
            let got = items(&sse(&[chunk]));
            match got.last() {
                Some(Err(e)) => {
                    assert_eq!(e.kind, ErrorKind::BadResponse);
                    assert!(e.message.contains(field), "{}", e.message);
                }
                other => panic!("expected an error, got {other:?}"),
            }
        }
    }

    #[test]
    fn finish_reasons_map_and_a_malformed_call_is_a_retryable_error() {
        let finish = |reason: &str| {
            items(&sse(&[
                json!({"candidates": [{"content": {"parts": [{"text": "x"}]},
                "finishReason": reason}]}),
            ]))
            .pop()
            .unwrap()
        };
        let reason = |r| Ok(StreamEvent::Finished { reason: r });
        assert_eq!(finish("MAX_TOKENS"), reason(FinishReason::MaxTokens));
        assert_eq!(finish("SAFETY"), reason(FinishReason::ContentFilter));
        assert_eq!(finish("RECITATION"), reason(FinishReason::ContentFilter));
        assert_eq!(finish("STOP"), reason(FinishReason::Stop));
        let malformed = finish("MALFORMED_FUNCTION_CALL").unwrap_err();
        assert!(malformed.kind.is_retryable(), "{malformed:?}");
        let cut = items(&sse(&[
            json!({"candidates": [{"content": {"parts": [{"text": "x"}]}}]}),
        ]));
        assert_eq!(
            cut.last().unwrap().as_ref().unwrap_err().kind,
            ErrorKind::StreamTruncated
        );
    }

    #[test]
    fn a_whole_call_of_a_response_then_stopped_for_safety_or_max_tokens_is_never_released() {
        for finish in ["SAFETY", "RECITATION", "MAX_TOKENS"] {
            let got = items(&sse(&[
                json!({"candidates": [{"content": {"parts": [
                    {"functionCall": {"name": "run", "args": {"cmd": "ls"}}}]}}]}),
                json!({"candidates": [{"content": {"parts": []}, "finishReason": finish}]}),
            ]));
            assert!(
                matches!(got.first(), Some(Ok(StreamEvent::ToolPreparing { .. }))),
                "{got:?}"
            );
            assert!(
                !got.iter()
                    .any(|i| matches!(i, Ok(StreamEvent::ToolCall(_)))),
                "{finish}: {got:?}"
            );
        }
    }

    #[test]
    fn an_in_stream_resource_exhausted_error_is_rate_limited_with_its_retry_delay() {
        let got = items(&sse(&[
            json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
            "message": "Quota exceeded", "details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "32s"}]}}),
        ]));
        let error = got.last().unwrap().as_ref().unwrap_err();
        assert_eq!(
            (error.kind, error.retry_after_ms),
            (ErrorKind::RateLimited, Some(32_000))
        );
    }
}
