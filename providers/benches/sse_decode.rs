//! SSE decoding plus tool-call assembly on large synthetic streams (Chat Completions,
//! Anthropic Messages, Responses and Gemini shapes) (SPEC §11 budget: at
//! least 200 MB/s on one core).
//!
//! Two groups: `sse_decode` measures wall time (criterion's default); `sse_decode_cpu` measures
//! the benchmark thread's CPU time, which is the per-core figure even when other processes
//! share the machine.

use std::hint::black_box;

use corvid_providers::{Emitted, StreamDecoder, WireProtocol};
use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use nix::time::{ClockId, clock_gettime};

const FRAGMENTS: usize = 10_000;
const TEXT_CHUNKS: usize = 5_000;
/// Roughly what a TLS record / HTTP chunk delivers at a time.
const NETWORK_CHUNK: usize = 4096;

/// An OpenAI-shaped stream: a long text, then one call whose arguments come in 10,000 pieces.
fn openai_body() -> Vec<u8> {
    let head = r#"{"id":"chatcmpl-DuLdInI48CUMPbcraGuxW2KFhK3CM","object":"chat.completion.chunk","created":1782321896,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_e6c46296c9","choices":[{"index":0,"delta":"#;
    let tail =
        r#","logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"I4YePAoyJgMnS"}"#;
    let mut body = String::new();
    let mut event = |delta: &str| {
        body.push_str("data: ");
        body.push_str(head);
        body.push_str(delta);
        body.push_str(tail);
        body.push_str("\n\n");
    };
    for i in 0..TEXT_CHUNKS {
        event(&format!(r#"{{"content":" word{i} and \"quoted\" text"}}"#));
    }
    event(
        r#"{"tool_calls":[{"index":0,"id":"call_7kE4IjtnwXcGbX6hDM7xFu8T","type":"function","function":{"name":"write_file","arguments":""}}]}"#,
    );
    event(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"content\":\""}}]}"#);
    for i in 0..FRAGMENTS {
        event(&format!(
            r#"{{"tool_calls":[{{"index":0,"function":{{"arguments":"line {i}\\n"}}}}]}}"#
        ));
    }
    event(r#"{"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]}"#);
    body.push_str(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    );
    body.push_str("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":61,\"completion_tokens\":16,\"total_tokens\":77}}\n\n");
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

/// An Anthropic-shaped stream with the same content, padded as the live API pads.
fn anthropic_body() -> Vec<u8> {
    let mut body = String::new();
    let mut event = |name: &str, data: &str| {
        body.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        r#"{"type":"message_start","message":{"model":"claude-sonnet-4-20250514","id":"msg_01","type":"message","role":"assistant","content":[],"stop_reason":null,"usage":{"input_tokens":424,"cache_read_input_tokens":0,"output_tokens":5}}       }"#,
    );
    event(
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    );
    for i in 0..TEXT_CHUNKS {
        event(
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":" word{i} and \"quoted\" text"}}     }}"#
            ),
        );
    }
    event(
        "content_block_stop",
        r#"{"type":"content_block_stop","index":0   }"#,
    );
    event(
        "content_block_start",
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"write_file","input":{}}}"#,
    );
    event(
        "content_block_delta",
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"content\": \""}}"#,
    );
    for i in 0..FRAGMENTS {
        event(
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":1,"delta":{{"type":"input_json_delta","partial_json":"line {i}\\n"}}  }}"#
            ),
        );
    }
    event(
        "content_block_delta",
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"}"}}"#,
    );
    event(
        "content_block_stop",
        r#"{"type":"content_block_stop","index":1}"#,
    );
    event(
        "message_delta",
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20000}}"#,
    );
    event("message_stop", r#"{"type":"message_stop"}"#);
    body.into_bytes()
}

/// A Responses-API-shaped stream with the same content: named events, sequence numbers, item
/// ids and the `obfuscation` padding the live API adds to every delta.
fn responses_body() -> Vec<u8> {
    let mut body = String::new();
    let mut seq = 0;
    let mut event = |name: &str, fields: &str| {
        body.push_str(&format!(
            "event: {name}\ndata: {{\"type\":\"{name}\",\"sequence_number\":{seq},{fields}}}\n\n"
        ));
        seq += 1;
    };
    event(
        "response.created",
        r#""response":{"id":"resp_0a1b2c3d4e5f","object":"response","created_at":1764880000,"status":"in_progress","model":"gpt-5.1-codex","output":[],"usage":null}"#,
    );
    event(
        "response.output_item.added",
        r#""output_index":0,"item":{"id":"msg_0a1b2c3d4e5f","type":"message","status":"in_progress","content":[],"role":"assistant"}"#,
    );
    for i in 0..TEXT_CHUNKS {
        event(
            "response.output_text.delta",
            &format!(
                r#""item_id":"msg_0a1b2c3d4e5f","output_index":0,"content_index":0,"delta":" word{i} and \"quoted\" text","logprobs":[],"obfuscation":"I4YePAoyJg""#
            ),
        );
    }
    event(
        "response.output_item.added",
        r#""output_index":1,"item":{"id":"fc_0a1b2c3d4e5f","type":"function_call","status":"in_progress","arguments":"","call_id":"call_7kE4IjtnwXcGbX6hDM7xFu8T","name":"write_file"}"#,
    );
    event(
        "response.function_call_arguments.delta",
        r#""item_id":"fc_0a1b2c3d4e5f","output_index":1,"delta":"{\"content\":\"","obfuscation":"Gk2""#,
    );
    for i in 0..FRAGMENTS {
        event(
            "response.function_call_arguments.delta",
            &format!(
                r#""item_id":"fc_0a1b2c3d4e5f","output_index":1,"delta":"line {i}\\n","obfuscation":"Gk2""#
            ),
        );
    }
    event(
        "response.function_call_arguments.delta",
        r#""item_id":"fc_0a1b2c3d4e5f","output_index":1,"delta":"\"}","obfuscation":"Gk2""#,
    );
    event(
        "response.completed",
        r#""response":{"id":"resp_0a1b2c3d4e5f","object":"response","status":"completed","model":"gpt-5.1-codex","usage":{"input_tokens":61,"input_tokens_details":{"cached_tokens":0},"output_tokens":20000,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":20061}}"#,
    );
    body.into_bytes()
}

/// A Gemini-shaped stream with the same content: every chunk a whole `GenerateContentResponse`
/// (role, index, usage, model version and response id on each), thoughts first; the call
/// arrives whole in one part with its signature (Gemini never splits arguments), so its
/// 10,000 lines are one large string.
fn gemini_body() -> Vec<u8> {
    let tail = r#"],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":61,"candidatesTokenCount":12,"totalTokenCount":73},"modelVersion":"gemini-2.5-pro","responseId":"Zq0xaPLbBtC0kdUP3qGp4Ao"}"#;
    let mut body = String::new();
    let mut chunk = |parts: &str, finish: bool| {
        body.push_str(r#"data: {"candidates":[{"content":{"parts":["#);
        body.push_str(parts);
        if finish {
            body.push_str(r#"],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":61,"candidatesTokenCount":20000,"totalTokenCount":20061},"modelVersion":"gemini-2.5-pro","responseId":"Zq0xaPLbBtC0kdUP3qGp4Ao"}"#);
        } else {
            body.push_str(tail);
        }
        body.push_str("\r\n\r\n");
    };
    chunk(
        r#"{"text":"**Planning** the write.","thought":true}"#,
        false,
    );
    for i in 0..TEXT_CHUNKS {
        chunk(
            &format!(r#"{{"text":" word{i} and \"quoted\" text"}}"#),
            false,
        );
    }
    let mut content = String::new();
    for i in 0..FRAGMENTS {
        content.push_str(&format!("line {i}\\n"));
    }
    chunk(
        &format!(
            r#"{{"functionCall":{{"name":"write_file","args":{{"content":"{content}"}}}},"thoughtSignature":"CiQBcsjafFkT6tNfOzB4qrlSVEZ8nFQ2mC3bL0r5vHn1pQ=="}}"#
        ),
        true,
    );
    body.into_bytes()
}

fn decode(protocol: WireProtocol, body: &[u8], out: &mut Vec<Emitted>) {
    out.clear();
    let mut decoder = StreamDecoder::new(protocol);
    for chunk in body.chunks(NETWORK_CHUNK) {
        decoder.push(chunk, out);
    }
    decoder.finish(out);
}

fn run_group<M: Measurement>(c: &mut Criterion<M>, group_name: &str) {
    let mut group = c.benchmark_group(group_name);
    for (name, protocol, body) in [
        ("openai_chat", WireProtocol::OpenAiChat, openai_body()),
        (
            "anthropic",
            WireProtocol::AnthropicMessages,
            anthropic_body(),
        ),
        (
            "openai_responses",
            WireProtocol::OpenAiResponses,
            responses_body(),
        ),
        ("gemini", WireProtocol::Gemini, gemini_body()),
    ] {
        let mut out = Vec::with_capacity(FRAGMENTS + TEXT_CHUNKS + 16);
        decode(protocol, &body, &mut out);
        let calls = out
            .iter()
            .filter(|e| matches!(e.item, Ok(corvid_protocol::StreamEvent::ToolCall(_))))
            .count();
        assert_eq!(
            calls, 1,
            "{name}: the synthetic stream must assemble one call"
        );
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                decode(protocol, black_box(&body), &mut out);
                black_box(out.len())
            })
        });
    }
    group.finish();
}

fn wall(c: &mut Criterion<WallTime>) {
    run_group(c, "sse_decode");
}

fn cpu(c: &mut Criterion<ThreadCpuTime>) {
    run_group(c, "sse_decode_cpu");
}

/// CPU time of the calling thread, in nanoseconds.
struct ThreadCpuTime;

fn thread_cpu_ns() -> u64 {
    // The clock exists on every Linux; a failure would only make the figures zero.
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuFormatter
    }
}

/// Shows CPU nanoseconds as milliseconds and byte throughput as MiB/s, like the wall clock.
struct CpuFormatter;

impl ValueFormatter for CpuFormatter {
    fn scale_values(&self, _typical: f64, values: &mut [f64]) -> &'static str {
        values.iter_mut().for_each(|v| *v /= 1e6);
        "ms (cpu)"
    }

    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let units = match *throughput {
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) => n as f64,
            Throughput::Elements(n) | Throughput::Bits(n) => n as f64,
        };
        values
            .iter_mut()
            .for_each(|v| *v = units * 1e9 / *v / (1024.0 * 1024.0));
        "MiB/s (cpu)"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

criterion_group!(wall_benches, wall);
criterion_group! {
    name = cpu_benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = cpu
}
criterion_main!(wall_benches, cpu_benches);
