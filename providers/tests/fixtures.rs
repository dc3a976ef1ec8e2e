//! Every recorded body in testdata/sse, decoded whole and in random chunk splits, against
//! its sidecar.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use common::{Fixture, all_fixtures};
use corvid_protocol::{ErrorKind, StreamEvent, Usage};
use corvid_providers::{Emitted, StreamDecoder, decode_body};
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::Value;

/// What a sidecar states, in corvid's vocabulary.
#[derive(Debug, PartialEq)]
struct Outcome {
    text: String,
    /// (call id, tool name, data event index)
    preparing: Vec<(String, String, Option<usize>)>,
    calls: Vec<(String, String, Value)>,
    finish: Option<String>,
    usage: Option<Usage>,
    /// The error kind and the data event that carried it (`None`: the end of the body).
    error: Option<(ErrorKind, Option<usize>)>,
}

fn outcome_of(emitted: &[Emitted]) -> Outcome {
    let mut out = Outcome {
        text: String::new(),
        preparing: Vec::new(),
        calls: Vec::new(),
        finish: None,
        usage: None,
        error: None,
    };
    for e in emitted {
        match &e.item {
            Ok(StreamEvent::Text { text }) => out.text.push_str(text),
            Ok(StreamEvent::ToolPreparing { call_id, tool_name }) => {
                out.preparing
                    .push((call_id.clone(), tool_name.clone(), e.at))
            }
            Ok(StreamEvent::ToolCall(c)) => {
                out.calls
                    .push((c.call_id.clone(), c.name.clone(), c.args.clone()))
            }
            Ok(StreamEvent::Finished { reason }) => out.finish = Some(reason.as_str().to_owned()),
            Ok(StreamEvent::Usage(u)) => out.usage = Some(*u),
            Ok(
                StreamEvent::Thought { .. }
                | StreamEvent::ThoughtSignature { .. }
                | StreamEvent::ThoughtData { .. }
                | StreamEvent::Hosted(_),
            ) => {}
            Err(error) => out.error = Some((error.kind, e.at)),
        }
    }
    out
}

fn expected_outcome(f: &Fixture) -> Outcome {
    let exp = &f.expected;
    let error = exp["error"]["type"].as_str().map(|t| match t {
        "stream_truncated" => ErrorKind::StreamTruncated,
        "overloaded_error" => ErrorKind::Overloaded,
        "server_error" | "server" => ErrorKind::Server,
        "overloaded" => ErrorKind::Overloaded,
        "rate_limited" => ErrorKind::RateLimited,
        "context_too_long" => ErrorKind::ContextTooLong,
        "auth" => ErrorKind::Auth,
        "bad_response" => ErrorKind::BadResponse,
        other => panic!("{}: unmapped sidecar error type {other}", f.name),
    });
    let calls = exp["tool_calls"].as_array().expect("tool_calls");
    Outcome {
        text: exp["text"].as_str().unwrap_or_default().to_owned(),
        preparing: calls
            .iter()
            .filter_map(|c| {
                let at = c["id_name_known_at_event"].as_u64()? as usize;
                Some((
                    c["id"].as_str()?.to_owned(),
                    c["name"].as_str()?.to_owned(),
                    Some(at),
                ))
            })
            .collect(),
        calls: if error.is_some() {
            Vec::new()
        } else {
            calls
                .iter()
                .filter(|c| !c["arguments"].is_null())
                .map(|c| {
                    (
                        c["id"].as_str().expect("id").to_owned(),
                        c["name"].as_str().expect("name").to_owned(),
                        c["arguments"].clone(),
                    )
                })
                .collect()
        },
        finish: match (error, exp["finish_reason_normalized"].as_str()) {
            (Some(_), _) | (None, None) => None,
            (None, Some("tool_use")) => Some("tool_calls".to_owned()),
            (None, Some(other)) => Some(other.to_owned()),
        },
        usage: f.expected_usage(),
        error: error.map(|kind| (kind, exp["error"]["at_event"].as_u64().map(|n| n as usize))),
    }
}

fn stream_fixtures() -> Vec<Fixture> {
    all_fixtures()
        .into_iter()
        .filter(|f| f.protocol().is_some())
        .collect()
}

fn decode_in_chunks(f: &Fixture, cuts: &[usize]) -> Vec<Emitted> {
    let protocol = f.protocol().expect("stream fixture");
    let mut decoder = StreamDecoder::new(protocol);
    let mut out = Vec::new();
    let mut start = 0;
    for &cut in cuts {
        decoder.push(&f.body[start..cut], &mut out);
        start = cut;
    }
    decoder.push(&f.body[start..], &mut out);
    decoder.finish(&mut out);
    out
}

#[test]
fn every_stream_fixture_decodes_to_what_its_sidecar_states() {
    let fixtures = stream_fixtures();
    assert_eq!(fixtures.len(), 42, "fixture set changed");
    for f in &fixtures {
        let emitted = decode_body(f.protocol().expect("protocol"), &f.body);
        assert_eq!(
            (f.name.as_str(), outcome_of(&emitted)),
            (f.name.as_str(), expected_outcome(f))
        );
    }
}

#[test]
fn the_framing_counts_as_many_data_events_as_the_sidecar() {
    for f in stream_fixtures() {
        let mut decoder = StreamDecoder::new(f.protocol().expect("protocol"));
        decoder.push(&f.body, &mut Vec::new());
        let expected = f.expected["data_event_count"].as_u64().expect("count") as usize;
        assert_eq!(
            (f.name.as_str(), decoder.data_events()),
            (f.name.as_str(), expected)
        );
    }
}

#[test]
fn every_stream_fixture_decodes_identically_byte_by_byte() {
    for f in stream_fixtures() {
        let whole = decode_body(f.protocol().expect("protocol"), &f.body);
        let cuts: Vec<usize> = (1..f.body.len()).collect();
        assert_eq!(
            (f.name.as_str(), decode_in_chunks(&f, &cuts)),
            (f.name.as_str(), whole)
        );
    }
}

#[test]
fn a_stream_ends_with_exactly_one_terminal_item_and_nothing_after_it() {
    for f in stream_fixtures() {
        let emitted = decode_body(f.protocol().expect("protocol"), &f.body);
        let terminal = |e: &Emitted| matches!(e.item, Err(_) | Ok(StreamEvent::Finished { .. }));
        let positions: Vec<usize> = emitted
            .iter()
            .enumerate()
            .filter(|(_, e)| terminal(e))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            (f.name.as_str(), positions),
            (f.name.as_str(), vec![emitted.len() - 1])
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_chunk_splits_never_change_what_is_decoded(
        which in 0usize..40,
        raw_cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..40),
    ) {
        let fixtures = stream_fixtures();
        let f = &fixtures[which % fixtures.len()];
        let mut cuts: Vec<usize> = raw_cuts.iter().map(|i| i.index(f.body.len() + 1)).collect();
        cuts.sort_unstable();
        let whole = decode_body(f.protocol().expect("protocol"), &f.body);
        prop_assert_eq!(decode_in_chunks(f, &cuts), whole);
    }
}
