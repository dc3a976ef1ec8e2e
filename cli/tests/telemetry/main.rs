//! Telemetry (issue 33 item 4): the real binary in headless mode against the loopback mock
//! provider, exporting to a loopback OTLP collector over http/protobuf and grpc; what it
//! exports, what it keeps back without `telemetry.logPrompts`, and that it stays silent and
//! offline unless the user turned it on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp;
mod collector;
#[path = "../common/mod.rs"]
mod common;
mod hostile;
mod paths;
mod tui;

use collector::{Collector, SpanSeen, Transport};
use common::{Sandbox, assert_success, chunk, json_lines, run, text_turn, usage_chunk};
use corvid_testkit::{MockServer, ScriptedResponse, sse_event};
use pretty_assertions::assert_eq;
use serde_json::json;

const PROMPT: &str = "list the files, prompt-marker-7731";
/// A file only the `list_directory` output names.
const OUTPUT_MARKER: &str = "output-marker-5519.txt";

fn tool_turn() -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        chunk(json!({"role": "assistant", "content": "Looking."}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                   "function": {"name": "list_directory", "arguments": "{\"path\":\".\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(),
        sse_event("[DONE]"),
    ])
}

/// A two-turn task with one tool call, exporting to `collector` (telemetry turned on by the
/// variable unless `settings` turns it on).
async fn exported_run(
    collector: &Collector,
    transport: Transport,
    settings: Option<&str>,
) -> std::process::Output {
    let server = MockServer::start().await;
    server.push(tool_turn());
    server.push(text_turn("Done."));
    let sb = Sandbox::new();
    std::fs::write(sb.project_dir().join(OUTPUT_MARKER), "x").unwrap();
    let mut cmd = sb.against(
        &server,
        "sk-test",
        &["-p", PROMPT, "--output-format", "stream-json"],
    );
    cmd.env("OPENAI_MODEL", "mock-model");
    export_to(&mut cmd, collector, transport);
    match settings {
        Some(text) => {
            sb.user_settings(text);
        }
        None => {
            cmd.env("CORVID_ENABLE_TELEMETRY", "1");
        }
    }
    let out = run(cmd).await;
    assert_success(&out);
    out
}

/// Points `cmd`'s OTLP export at `collector` (telemetry itself is turned on by the caller).
fn export_to(cmd: &mut tokio::process::Command, collector: &Collector, transport: Transport) {
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url)
        .env(
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            match transport {
                Transport::HttpProtobuf => "http/protobuf",
                Transport::Grpc => "grpc",
            },
        )
        // A loaded test machine must not lose the export to the exit's bound.
        .env("CORVID_TELEMETRY_FLUSH_MS", "60000");
}

fn named<'a>(spans: &'a [SpanSeen], name: &str) -> Vec<&'a SpanSeen> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn attr<'a>(span: &'a SpanSeen, key: &str) -> &'a str {
    span.attrs
        .get(key)
        .unwrap_or_else(|| panic!("span {} has no `{key}`: {:?}", span.name, span.attrs))
}

/// The spans and metrics every exporting run sends, whatever the transport.
fn assert_task_exported(collector: &Collector) {
    let resource = collector.resource();
    assert_eq!(resource["service.name"], "corvid");
    assert_eq!(resource["service.version"], env!("CARGO_PKG_VERSION"));
    let spans = collector.spans();
    let task = named(&spans, "corvid.task");
    assert_eq!(task.len(), 1, "{spans:#?}");
    let task = task[0];
    assert_eq!(attr(task, "stop_reason"), "end_turn");
    assert!(attr(task, "session.id").len() > 8);
    assert!(attr(task, "task.id").starts_with(attr(task, "session.id")));

    let requests = named(&spans, "corvid.model_request");
    assert_eq!(requests.len(), 2, "{spans:#?}");
    for request in &requests {
        assert_eq!(request.parent_span_id, task.span_id);
        let keys = [
            "model",
            "prompt_id",
            "retries",
            "input_tokens",
            "output_tokens",
            "cached_tokens",
            "outcome",
        ];
        let got: Vec<&str> = keys.iter().map(|k| attr(request, k)).collect();
        assert_eq!(got, ["mock-model", "main", "0", "10", "5", "0", "finished"]);
        assert!(attr(request, "ttft_ms").parse::<u64>().is_ok());
    }

    let tools = named(&spans, "corvid.tool_call");
    assert_eq!(tools.len(), 1, "{spans:#?}");
    let tool = tools[0];
    assert_eq!(tool.parent_span_id, task.span_id);
    assert_eq!(
        (
            attr(tool, "tool"),
            attr(tool, "call_id"),
            attr(tool, "outcome")
        ),
        ("list_directory", "call_1", "success")
    );
    assert!(attr(tool, "duration_ms").parse::<u64>().is_ok());

    let metrics = collector.metrics();
    for name in [
        "corvid.tokens",
        "corvid.tool.duration",
        "corvid.session.count",
    ] {
        assert!(metrics.contains_key(name), "no {name} in {metrics:#?}");
    }
    let tokens = &metrics["corvid.tokens"];
    let of_type = |kind: &str| {
        tokens
            .iter()
            .find(|(a, _)| {
                a["type"] == kind && a["model"] == "mock-model" && a["prompt_id"] == "main"
            })
            .map(|(_, v)| *v)
    };
    assert_eq!(
        (of_type("input"), of_type("output")),
        (Some(20.0), Some(10.0))
    );
    assert_eq!(metrics["corvid.session.count"][0].1, 1.0);
    let durations = &metrics["corvid.tool.duration"];
    assert_eq!(durations.len(), 1);
    assert_eq!(durations[0].0["tool"], "list_directory");
    assert_eq!(durations[0].0["outcome"], "success");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_run_exports_its_spans_and_metrics_over_http_without_any_content() {
    let collector = Collector::start(Transport::HttpProtobuf).await;
    let out = exported_run(&collector, Transport::HttpProtobuf, None).await;
    assert_task_exported(&collector);
    assert!(!collector.saw_text("prompt-marker-7731"));
    assert!(!collector.saw_text(OUTPUT_MARKER));
    assert!(
        !collector.saw_text("\"path\""),
        "the tool input left the machine"
    );
    assert!(!collector.metrics().contains_key("corvid.cost"));
    // stdout is still the headless output and nothing else.
    assert_eq!(json_lines(&out).last().unwrap()["type"], "result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_log_prompts_the_prompt_tool_input_and_output_are_exported_and_prices_give_a_cost() {
    let collector = Collector::start(Transport::HttpProtobuf).await;
    let settings = r#"{"telemetry": {"enabled": true, "logPrompts": true,
        "prices": {"mock-model": {"input": 1000000, "output": 2000000}}}}"#;
    exported_run(&collector, Transport::HttpProtobuf, Some(settings)).await;
    assert_task_exported(&collector);
    let spans = collector.spans();
    let task = named(&spans, "corvid.task")[0];
    assert_eq!(task.events[0].0, "corvid.prompt");
    assert_eq!(task.events[0].1["prompt"], PROMPT);
    let tool = named(&spans, "corvid.tool_call")[0];
    let events: Vec<&str> = tool.events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(events, ["corvid.tool_input", "corvid.tool_output"]);
    assert_eq!(tool.events[0].1["tool_input"], r#"{"path":"."}"#);
    assert!(tool.events[1].1["tool_output"].contains(OUTPUT_MARKER));
    // Two responses of 10 input and 5 output tokens at $1 and $2 a token.
    let cost = &collector.metrics()["corvid.cost"];
    assert_eq!(cost.len(), 1);
    assert_eq!(cost[0].1, 2.0 * (10.0 + 5.0 * 2.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_run_exports_over_grpc_too() {
    let collector = Collector::start(Transport::Grpc).await;
    exported_run(&collector, Transport::Grpc, None).await;
    assert_task_exported(&collector);
    assert!(!collector.saw_text("prompt-marker-7731"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_user_turning_it_on_nothing_connects_even_if_the_project_asks() {
    let collector = Collector::start(Transport::HttpProtobuf).await;
    let server = MockServer::start().await;
    server.push(text_turn("Hi."));
    let sb = Sandbox::new();
    // A hostile repository's file, trusted or not, does not turn telemetry on.
    let project = sb.project_dir().join(".corvid");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("settings.json"),
        r#"{"telemetry": {"enabled": true, "logPrompts": true}}"#,
    )
    .unwrap();
    let mut cmd = sb.against(&server, "sk-test", &["-p", "hello"]);
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url)
        .env("CORVID_TELEMETRY_FLUSH_MS", "60000");
    let out = run(cmd).await;
    assert_success(&out);
    assert_eq!(collector.connections(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_collector_leaves_stdout_and_stderr_clean() {
    // A port nobody listens on any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = MockServer::start().await;
    server.push(text_turn("Hi."));
    let sb = Sandbox::new();
    let mut cmd = sb.against(
        &server,
        "sk-test",
        &["-p", "hello", "--output-format", "stream-json"],
    );
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("CORVID_ENABLE_TELEMETRY", "1")
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        );
    let out = run(cmd).await;
    assert_success(&out);
    assert_eq!(common::stderr(&out), "");
    let kinds: Vec<String> = json_lines(&out).iter().map(common::kind).collect();
    assert_eq!(kinds.last().map(String::as_str), Some("result"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_accepts_and_never_answers_does_not_hold_the_exit() {
    // Accepts every connection and never reads or answers; the exporter's own timeout is an
    // hour, so only corvid's bound on the exit's flush (200 ms unless the variable says) lets
    // it exit. The deadline below only turns a hang into a failure; it measures nothing.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            open.push(socket);
        }
    });
    let server = MockServer::start().await;
    server.push(text_turn("Hi."));
    let sb = Sandbox::new();
    let mut cmd = sb.against(
        &server,
        "sk-test",
        &["-p", "hello", "--output-format", "stream-json"],
    );
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("CORVID_ENABLE_TELEMETRY", "1")
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        )
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "3600000")
        .env_remove("CORVID_TELEMETRY_FLUSH_MS")
        .kill_on_drop(true);
    let out = tokio::time::timeout(std::time::Duration::from_secs(300), run(cmd))
        .await
        .expect("corvid still running 5 minutes after its answer: the exit's flush is unbounded");
    held.abort();
    assert_success(&out);
    assert_eq!(common::stderr(&out), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_transports_export_over_tls_to_a_collector_the_system_trusts() {
    for transport in [Transport::Grpc, Transport::HttpProtobuf] {
        let collector = Collector::start_tls(transport).await;
        let server = MockServer::start().await;
        server.push(text_turn("Hi."));
        let sb = Sandbox::new();
        let mut cmd = sb.against(&server, "sk-test", &["-p", "hello"]);
        cmd.env("OPENAI_MODEL", "mock-model")
            .env("CORVID_ENABLE_TELEMETRY", "1")
            // The system's root store reads it: the test CA stands for a public one.
            .env("SSL_CERT_FILE", collector::TEST_CA);
        export_to(&mut cmd, &collector, transport);
        let out = run(cmd).await;
        assert_success(&out);
        assert_eq!(common::stderr(&out), "");
        assert!(collector.url.starts_with("https://"));
        assert_eq!(named(&collector.spans(), "corvid.task").len(), 1);
        assert_eq!(collector.metrics()["corvid.session.count"][0].1, 1.0);

        // Without the CA the certificate is refused: TLS is verified, not only encrypted.
        let untrusted = Collector::start_tls(transport).await;
        server.push(text_turn("Hi."));
        let mut cmd = sb.against(&server, "sk-test", &["-p", "hello"]);
        cmd.env("OPENAI_MODEL", "mock-model")
            .env("CORVID_ENABLE_TELEMETRY", "1");
        export_to(&mut cmd, &untrusted, transport);
        assert_success(&run(cmd).await);
        assert!(untrusted.spans().is_empty());
        assert!(untrusted.metrics().is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protocol_corvid_cannot_speak_is_named_on_stderr_and_http_protobuf_goes_out() {
    let collector = Collector::start(Transport::HttpProtobuf).await;
    let server = MockServer::start().await;
    server.push(text_turn("Hi."));
    let sb = Sandbox::new();
    let mut cmd = sb.against(&server, "sk-test", &["-p", "hello"]);
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("CORVID_ENABLE_TELEMETRY", "1");
    export_to(&mut cmd, &collector, Transport::HttpProtobuf);
    cmd.env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
    let out = run(cmd).await;
    assert_success(&out);
    assert_eq!(
        common::stderr(&out),
        "corvid: warning: OTEL_EXPORTER_OTLP_PROTOCOL=http/json is not supported; use \
         http/protobuf or grpc (exporting with http/protobuf)\n"
    );
    assert_eq!(named(&collector.spans(), "corvid.task").len(), 1);
}
