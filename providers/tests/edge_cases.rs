//! Decoder cases beyond the recorded fixtures: odd framing, broken bytes, odd servers.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use corvid_protocol::{ErrorKind, FinishReason, StreamEvent, ToolCall};
use corvid_providers::{Emitted, StreamDecoder, WireProtocol, decode_body};
use pretty_assertions::assert_eq;
use serde_json::json;

use WireProtocol::{AnthropicMessages, OpenAiChat};

fn ok(at: Option<usize>, event: StreamEvent) -> Emitted {
    Emitted {
        at,
        item: Ok(event),
    }
}

fn text(at: usize, t: &str) -> Emitted {
    ok(Some(at), StreamEvent::Text { text: t.into() })
}

fn finished(at: Option<usize>, reason: FinishReason) -> Emitted {
    ok(at, StreamEvent::Finished { reason })
}

fn error_kinds(emitted: &[Emitted]) -> Vec<(Option<usize>, ErrorKind)> {
    emitted
        .iter()
        .filter_map(|e| e.item.as_ref().err().map(|err| (e.at, err.kind)))
        .collect()
}

fn data(json: serde_json::Value) -> String {
    format!("data: {json}\n\n")
}

fn content(t: &str) -> String {
    data(json!({"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": null}]}))
}

fn finish(reason: &str) -> String {
    data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}))
}

fn call_delta(
    index: Option<u64>,
    id: Option<&str>,
    name: Option<&str>,
    args: Option<&str>,
) -> String {
    let mut call = json!({"function": {}});
    if let Some(i) = index {
        call["index"] = json!(i);
    }
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    if let Some(n) = name {
        call["function"]["name"] = json!(n);
    }
    if let Some(a) = args {
        call["function"]["arguments"] = json!(a);
    }
    data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
}

#[test]
fn an_empty_body_is_a_truncated_stream_for_both_protocols() {
    for protocol in [OpenAiChat, AnthropicMessages] {
        assert_eq!(
            error_kinds(&decode_body(protocol, b"")),
            vec![(None, ErrorKind::StreamTruncated)]
        );
    }
}

#[test]
fn a_non_json_data_line_is_skipped_but_still_counted() {
    let body = format!(
        "data: hello there\n\n{}{}data: [DONE]\n\n",
        content("Hi"),
        finish("stop")
    );
    assert_eq!(
        decode_body(OpenAiChat, body.as_bytes()),
        vec![text(1, "Hi"), finished(Some(3), FinishReason::Stop)]
    );
}

#[test]
fn invalid_utf8_split_across_chunks_becomes_replacement_characters() {
    let body = format!(
        "{}{}data: [DONE]\n\n",
        content("caf\u{e9}XY"),
        finish("stop")
    )
    .into_bytes();
    // Replace "XY" with the first two bytes of a four-byte sequence, then split inside them.
    let at = body.windows(2).position(|w| w == b"XY").unwrap();
    let mut broken = body.clone();
    broken[at] = 0xF0;
    broken[at + 1] = 0x9F;
    let mut decoder = StreamDecoder::new(OpenAiChat);
    let mut out = Vec::new();
    decoder.push(&broken[..at + 1], &mut out);
    decoder.push(&broken[at + 1..], &mut out);
    decoder.finish(&mut out);
    assert_eq!(
        out,
        vec![
            text(0, "caf\u{e9}\u{FFFD}"),
            finished(Some(2), FinishReason::Stop)
        ]
    );
}

#[test]
fn an_unterminated_done_is_not_dispatched_so_the_stream_is_truncated() {
    let body = format!("{}{}data: [DONE]\n", content("Hi"), finish("stop"));
    let out = decode_body(OpenAiChat, body.as_bytes());
    assert_eq!(error_kinds(&out), vec![(None, ErrorKind::StreamTruncated)]);
}

#[test]
fn a_finish_without_done_on_an_event_boundary_finishes_at_the_end_of_the_body() {
    let body = format!("{}{}", content("Hi"), finish("length"));
    assert_eq!(
        decode_body(OpenAiChat, body.as_bytes()),
        vec![text(0, "Hi"), finished(None, FinishReason::MaxTokens)]
    );
}

#[test]
fn crlf_framing_decodes_like_lf_framing() {
    for f in common::all_fixtures()
        .into_iter()
        .filter(|f| f.protocol().is_some())
    {
        let crlf = String::from_utf8(f.body.clone())
            .unwrap()
            .replace('\n', "\r\n");
        let protocol = f.protocol().unwrap();
        assert_eq!(
            (f.name.as_str(), decode_body(protocol, crlf.as_bytes())),
            (f.name.as_str(), decode_body(protocol, &f.body))
        );
    }
}

#[test]
fn an_error_object_before_done_wins_over_a_finish_and_releases_no_call() {
    let body = [
        call_delta(Some(0), Some("c1"), Some("read_file"), Some("{}")),
        data(json!({"error": {"message": "upstream died", "code": 502}, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let out = decode_body(OpenAiChat, body.as_bytes());
    assert_eq!(error_kinds(&out), vec![(Some(1), ErrorKind::Server)]);
    assert!(
        !out.iter()
            .any(|e| matches!(e.item, Ok(StreamEvent::ToolCall(_))))
    );
}

#[test]
fn arguments_that_are_not_an_object_are_kept_verbatim_as_a_string() {
    let body = [
        call_delta(Some(0), Some("c1"), Some("read_file"), Some("{\"path\": ")),
        call_delta(Some(1), Some("c2"), Some("glob"), Some("[1, 2]")),
        finish("tool_calls"),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let calls: Vec<ToolCall> = decode_body(OpenAiChat, body.as_bytes())
        .into_iter()
        .filter_map(|e| match e.item {
            Ok(StreamEvent::ToolCall(c)) => Some(c),
            _ => None,
        })
        .collect();
    let call = |id: &str, name: &str, args| ToolCall {
        call_id: id.into(),
        name: name.into(),
        args,
    };
    assert_eq!(
        calls,
        vec![
            call("c1", "read_file", json!("{\"path\": ")),
            call("c2", "glob", json!("[1, 2]"))
        ]
    );
}

#[test]
fn the_same_id_at_two_indexes_is_announced_once() {
    let body = [
        call_delta(Some(0), Some("dup"), Some("read_file"), Some("{}")),
        call_delta(Some(1), Some("dup"), Some("read_file"), Some("{}")),
        finish("tool_calls"),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let preparing = decode_body(OpenAiChat, body.as_bytes())
        .into_iter()
        .filter(|e| matches!(e.item, Ok(StreamEvent::ToolPreparing { .. })))
        .count();
    assert_eq!(preparing, 1);
}

#[test]
fn a_name_and_arguments_before_any_id_are_joined_by_the_later_id() {
    let body = [
        call_delta(None, None, Some("glob"), Some("{\"pattern\":")),
        call_delta(None, Some("g1"), None, Some("\"*\"}")),
        finish("stop"),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let out = decode_body(OpenAiChat, body.as_bytes());
    let expected_call = ToolCall {
        call_id: "g1".into(),
        name: "glob".into(),
        args: json!({"pattern": "*"}),
    };
    assert_eq!(
        out,
        vec![
            ok(
                Some(1),
                StreamEvent::ToolPreparing {
                    call_id: "g1".into(),
                    tool_name: "glob".into()
                }
            ),
            ok(Some(3), StreamEvent::ToolCall(expected_call)),
            finished(Some(3), FinishReason::ToolCalls),
        ]
    );
}

#[test]
fn anthropic_input_given_at_block_start_is_used_when_no_deltas_come() {
    let ev = |name: &str, v: serde_json::Value| format!("event: {name}\ndata: {v}\n\n");
    let body = [
        ev("ping", json!({"type": "ping"})),
        ev("content_block_start", json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "glob", "input": {"pattern": "*.rs"}}})),
        ev("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        ev("something_new", json!({"type": "something_new"})),
        ev("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}})),
        ev("message_stop", json!({"type": "message_stop"})),
    ]
    .concat();
    let expected_call = ToolCall {
        call_id: "t1".into(),
        name: "glob".into(),
        args: json!({"pattern": "*.rs"}),
    };
    assert_eq!(
        decode_body(AnthropicMessages, body.as_bytes()),
        vec![
            ok(
                Some(1),
                StreamEvent::ToolPreparing {
                    call_id: "t1".into(),
                    tool_name: "glob".into()
                }
            ),
            ok(Some(5), StreamEvent::ToolCall(expected_call)),
            finished(Some(5), FinishReason::ToolCalls),
        ]
    );
}

#[test]
fn anthropic_body_ending_after_the_stop_reason_but_before_message_stop_is_truncated() {
    let f = common::fixture("anthropic/parallel_tool_use.sse");
    let body = String::from_utf8(f.body).unwrap();
    let cut = body.find("event: message_stop").unwrap();
    let out = decode_body(AnthropicMessages, &body.as_bytes()[..cut]);
    assert_eq!(error_kinds(&out), vec![(None, ErrorKind::StreamTruncated)]);
    assert!(
        !out.iter()
            .any(|e| matches!(e.item, Ok(StreamEvent::ToolCall(_))))
    );
}

#[test]
fn a_named_error_event_is_an_error_whatever_its_data_looks_like() {
    let anthropic = "event: error\ndata: {\"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
    let openai = "data: {\"choices\": []}\n\nevent: error\ndata: upstream rate limit exceeded\n\n";
    let got: Vec<_> = [(AnthropicMessages, anthropic), (OpenAiChat, openai)]
        .into_iter()
        .map(|(protocol, body)| {
            let out = decode_body(protocol, body.as_bytes());
            out.into_iter()
                .map(|e| (e.at, e.item.map_err(|err| (err.kind, err.message))))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        got,
        vec![
            vec![(
                Some(0),
                Err((ErrorKind::Overloaded, "Overloaded".to_owned()))
            )],
            vec![(
                Some(1),
                Err((
                    ErrorKind::RateLimited,
                    "upstream rate limit exceeded".to_owned()
                ))
            )],
        ]
    );
}

#[test]
fn arguments_sent_as_an_object_and_a_numeric_id_are_still_understood() {
    let body = [
        data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": 7, "function": {"name": "glob", "arguments": {"pattern": "*"}}}
        ]}}]})),
        finish("tool_calls"),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let expected_call = ToolCall {
        call_id: "7".into(),
        name: "glob".into(),
        args: json!({"pattern": "*"}),
    };
    assert_eq!(
        decode_body(OpenAiChat, body.as_bytes()),
        vec![
            ok(
                Some(0),
                StreamEvent::ToolPreparing {
                    call_id: "7".into(),
                    tool_name: "glob".into()
                }
            ),
            ok(Some(2), StreamEvent::ToolCall(expected_call)),
            finished(Some(2), FinishReason::ToolCalls),
        ]
    );
}

/// Found by the `sse_openai_chat` fuzz target (its split invariant, at once from the seeds):
/// a body over the cap used to lose the events of the chunk that crossed it, so the items
/// depended on how the body was split.
#[test]
fn a_body_over_the_cap_gives_the_same_items_however_it_is_split() {
    let limits = corvid_providers::StreamLimits {
        max_line_bytes: 1024,
        max_body_bytes: 100,
    };
    let body = format!("{}{}", content("a"), content("b"));
    assert!(
        body.len() > 100 && content("a").len() < 100,
        "the cap falls in the second event"
    );
    let decode = |chunk: usize| {
        let mut decoder = StreamDecoder::with_limits(OpenAiChat, limits);
        let mut out = Vec::new();
        for piece in body.as_bytes().chunks(chunk) {
            decoder.push(piece, &mut out);
        }
        decoder.finish(&mut out);
        out
    };
    let whole = decode(body.len());
    assert_eq!(whole[0], text(0, "a"));
    assert_eq!(error_kinds(&whole), vec![(None, ErrorKind::BadResponse)]);
    for chunk in [1, 7, 60, 99, 100, 101] {
        assert_eq!(decode(chunk), whole, "chunks of {chunk} bytes");
    }
}

/// Token counts come from the server: counts near `u64::MAX` saturate instead of overflowing
/// (a debug build panicked, a release build wrapped; found by the `sse_*` fuzz targets).
#[test]
fn token_counts_near_the_limit_saturate_instead_of_overflowing() {
    let max = u64::MAX;
    let openai = format!(
        "{}{}data: {}\n\ndata: [DONE]\n\n",
        content("Hi"),
        finish("stop"),
        json!({"choices": [], "usage": {"prompt_tokens": max, "completion_tokens": 5}})
    );
    let anthropic = [
        json!({"type": "message_start", "message": {"id": "m", "usage": {
            "input_tokens": max, "cache_read_input_tokens": 7,
            "cache_creation_input_tokens": 9, "output_tokens": 1}}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
               "usage": {"output_tokens": max}}),
        json!({"type": "message_stop"}),
    ]
    .iter()
    .map(|event| format!("data: {event}\n\n"))
    .collect::<String>();
    for (protocol, body) in [(OpenAiChat, openai), (AnthropicMessages, anthropic)] {
        let totals: Vec<u64> = decode_body(protocol, body.as_bytes())
            .into_iter()
            .filter_map(|emitted| match emitted.item {
                Ok(StreamEvent::Usage(usage)) => Some(usage.total_tokens),
                _ => None,
            })
            .collect();
        assert_eq!(totals.last(), Some(&max), "{protocol:?}: {totals:?}");
    }
}
