//! Reading a response body safely: every read under the idle timeout, every buffer under the
//! caps, and a look at the first bytes to tell a model stream from a whole JSON answer and
//! from something that is no model response at all (an HTML page behind a wrong base URL).

use std::future::Future;

use bytes::Bytes;
use corvid_protocol::{ErrorInfo, ErrorKind};
use futures::StreamExt;
use futures::stream::BoxStream;

use crate::error::classify_reqwest_error;
use crate::http::Reading;
use crate::wire::{Emitted, StreamDecoder, WireProtocol, cut, decode_whole_response, too_big};

/// How much of an error body is kept: enough for any message, bounded for hostile servers.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Bytes of a body that is no model response quoted in the error.
const QUOTED: usize = 200;
/// Significant bytes needed to tell SSE from JSON from anything else (`retry:` is the longest
/// field name that can open a stream).
const SNIFF: usize = 8;

/// What a successful response body turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Server-sent events, whatever the label said.
    Stream,
    /// One JSON document (a non-streaming answer).
    Whole,
    /// Neither: the content type as labelled, for the error.
    NotAModel { content_type: String },
}

/// The response's content type, if it has a readable one.
pub(crate) fn content_type(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_owned())
}

/// Runs one read under the idle timeout.
pub(crate) async fn within_idle<T>(
    reading: &Reading,
    read: impl Future<Output = T>,
) -> Result<T, ErrorInfo> {
    tokio::time::timeout(reading.idle_timeout, read)
        .await
        .map_err(|_| idle_error(reading))
}

fn idle_error(reading: &Reading) -> ErrorInfo {
    let ms = reading.idle_timeout.as_millis();
    ErrorInfo::new(
        ErrorKind::Network,
        format!(
            "the provider at {} sent nothing for {ms} ms (model.streamIdleTimeoutMs); it may be \
             stuck, or slow to start: raise model.streamIdleTimeoutMs for slow local models",
            reading.shown_url
        ),
    )
}

/// Reads the first chunks of a body until they tell what it is (or the body ends).
pub(crate) async fn first_bytes(
    reading: &Reading,
    chunks: &mut BoxStream<'static, reqwest::Result<Bytes>>,
) -> Result<Vec<u8>, ErrorInfo> {
    let mut first = Vec::new();
    while significant(&first).len() < SNIFF && !significant(&first).contains(&b'\n') {
        match within_idle(reading, chunks.next()).await? {
            Some(Ok(bytes)) => first.extend_from_slice(&bytes),
            Some(Err(e)) => return Err(classify_reqwest_error(&e, true)),
            None => break,
        }
    }
    Ok(first)
}

/// Reads the rest of a body after `first`, within the response cap.
pub(crate) async fn read_rest(
    reading: &Reading,
    mut body: Vec<u8>,
    mut chunks: BoxStream<'static, reqwest::Result<Bytes>>,
) -> Result<Vec<u8>, ErrorInfo> {
    loop {
        if body.len() > reading.limits.max_body_bytes {
            return Err(too_big(reading.limits));
        }
        match within_idle(reading, chunks.next()).await? {
            Some(Ok(bytes)) => body.extend_from_slice(&bytes),
            Some(Err(e)) => return Err(classify_reqwest_error(&e, true)),
            None => return Ok(body),
        }
    }
}

/// Reads a whole body within the response cap.
pub(crate) async fn read_whole(
    reading: &Reading,
    response: reqwest::Response,
) -> Result<Vec<u8>, ErrorInfo> {
    read_rest(reading, Vec::new(), response.bytes_stream().boxed()).await
}

/// Reads at most [`MAX_ERROR_BODY`] of an error response; a failed read keeps what arrived.
pub(crate) async fn read_error_body(reading: &Reading, response: reqwest::Response) -> Vec<u8> {
    read_prefix(
        reading,
        Vec::new(),
        response.bytes_stream().boxed(),
        MAX_ERROR_BODY,
    )
    .await
}

/// `first` and what follows, up to `max` bytes; reading stops quietly at an error.
async fn read_prefix(
    reading: &Reading,
    mut body: Vec<u8>,
    mut chunks: BoxStream<'static, reqwest::Result<Bytes>>,
    max: usize,
) -> Vec<u8> {
    while body.len() < max {
        match within_idle(reading, chunks.next()).await {
            Ok(Some(Ok(bytes))) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(max);
    body
}

/// Reads what is left of a body already sniffed: all of a JSON answer (within the cap), only
/// the quoted start of anything else.
pub(crate) async fn read_sniffed(
    reading: &Reading,
    answer: &Answer,
    first: Vec<u8>,
    chunks: BoxStream<'static, reqwest::Result<Bytes>>,
) -> Result<Vec<u8>, ErrorInfo> {
    match answer {
        Answer::NotAModel { .. } => Ok(read_prefix(reading, first, chunks, QUOTED * 2).await),
        Answer::Stream | Answer::Whole => read_rest(reading, first, chunks).await,
    }
}

/// Decides what a body is from its label and its first bytes. The bytes win over a wrong
/// label (SSE sent as `application/json` is decoded as SSE); a body that looks like neither
/// SSE nor JSON is no model response, whatever it is labelled (event streams excepted, as
/// their first event may be slow to come and is judged by the decoder).
pub(crate) fn sniff(content_type: Option<&str>, first: &[u8]) -> Answer {
    if is_event_stream(content_type) {
        return Answer::Stream;
    }
    let label = content_type.unwrap_or("").to_ascii_lowercase();
    let head = significant(first);
    let sse_field = [&b"data:"[..], b"data\n", b"event:", b"id:", b"retry:", b":"]
        .iter()
        .any(|field| head.starts_with(field));
    if sse_field {
        Answer::Stream
    } else if head.starts_with(b"{") || head.starts_with(b"[") {
        Answer::Whole
    } else if head.is_empty() && label.starts_with("application/json") {
        // An empty JSON body: the whole-response decoder says what is wrong with it.
        Answer::Whole
    } else {
        Answer::NotAModel {
            content_type: content_type.unwrap_or("none").to_owned(),
        }
    }
}

/// Whether the body is labelled as server-sent events.
pub(crate) fn is_event_stream(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        ct.get(..17)
            .is_some_and(|p| p.eq_ignore_ascii_case("text/event-stream"))
    })
}

/// The items of a body read whole.
pub(crate) fn decode_answer(
    answer: Answer,
    protocol: WireProtocol,
    bytes: &[u8],
    reading: &Reading,
) -> Vec<Emitted> {
    match answer {
        Answer::Stream => {
            let mut decoder = StreamDecoder::with_limits(protocol, reading.limits);
            let mut out = Vec::new();
            decoder.push(bytes, &mut out);
            decoder.finish(&mut out);
            out
        }
        Answer::Whole => decode_whole_response(protocol, bytes),
        Answer::NotAModel { content_type } => {
            vec![Emitted::err(
                None,
                not_a_model(reading, &content_type, bytes),
            )]
        }
    }
}

/// The error for a 200 answer that is no model response: a misconfigured base URL.
fn not_a_model(reading: &Reading, content_type: &str, bytes: &[u8]) -> ErrorInfo {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(QUOTED * 2)]);
    let flat: String = text
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let start = if flat.is_empty() {
        "an empty body".to_owned()
    } else {
        format!("a body starting `{}`", cut(&flat, QUOTED))
    };
    ErrorInfo::new(
        ErrorKind::BadResponse,
        format!(
            "{} answered HTTP 200 with content type {content_type} and {start}, which is not a \
             model response; model.baseUrl probably points at a web page or the wrong path \
             (an OpenAI-compatible base URL usually ends in /v1)",
            reading.shown_url
        ),
    )
}

/// The bytes after leading whitespace and a byte-order mark.
fn significant(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &bytes[start..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn not_a_model(ct: &str) -> Answer {
        Answer::NotAModel {
            content_type: ct.into(),
        }
    }

    #[test]
    fn the_first_bytes_decide_over_a_wrong_label() {
        let cases: [(Option<&str>, &[u8], Answer); 9] = [
            (Some("text/event-stream"), b"<html>", Answer::Stream),
            (Some("application/json"), b"data: {}\n\n", Answer::Stream),
            (Some("application/json"), b"\n: ping\n\n", Answer::Stream),
            (Some("application/json"), b" {\"id\":1}", Answer::Whole),
            (Some("application/json"), b"", Answer::Whole),
            (Some("text/plain"), b"event: x\ndata: y\n\n", Answer::Stream),
            (None, b"[1]", Answer::Whole),
            (
                Some("text/html; charset=utf-8"),
                b"<!DOCTYPE html>",
                not_a_model("text/html; charset=utf-8"),
            ),
            (None, b"", not_a_model("none")),
        ];
        for (label, first, expected) in cases {
            assert_eq!(sniff(label, first), expected, "{label:?} {first:?}");
        }
    }
}
