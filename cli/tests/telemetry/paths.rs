//! The export of the less travelled paths, over the real binary in headless mode: a retried
//! request (one span per attempt, its retry count, the error's kind but never its message),
//! cached and reasoning tokens (span, metric and cost), the service named by
//! `OTEL_SERVICE_NAME`, and a compaction (its span under the task, its tokens
//! under the `compaction` prompt id).

use corvid_testkit::{MockServer, ScriptedResponse, sse_event};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::collector::{Collector, Transport};
use super::common::{Sandbox, assert_success, chunk, run, text_turn};
use super::{attr, export_to, named};

/// Text a hostile or careless server quotes back in its error message.
const ECHOED: &str = "echoed-prompt-marker-4410";

/// A text answer whose usage reports `cached` of its 10 input tokens as read from the cache,
/// and 2 of its 5 output tokens as reasoning.
fn cached_turn(text: &str, cached: u64) -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
        sse_event(
            &json!({
                "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                "model": "mock-model", "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                          "prompt_tokens_details": {"cached_tokens": cached},
                          "completion_tokens_details": {"reasoning_tokens": 2}},
            })
            .to_string(),
        ),
        sse_event("[DONE]"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_request_exports_a_span_per_attempt_with_its_retry_count_cached_and_reasoning_tokens()
 {
    let collector = Collector::start(Transport::HttpProtobuf).await;
    let server = MockServer::start().await;
    server.push(ScriptedResponse::error(
        500,
        json!({"error": {"message": format!("upstream broke on {ECHOED}")}}).to_string(),
    ));
    server.push(cached_turn("Done.", 6));
    let sb = Sandbox::new();
    sb.user_settings(
        r#"{"retry": {"initialDelayMs": 1, "maxDelayMs": 2},
            "telemetry": {"enabled": true, "prices":
                {"mock-model": {"input": 1000000, "output": 2000000, "cachedInput": 100000}}}}"#,
    );
    let mut cmd = sb.against(&server, "sk-test", &["-p", ECHOED]);
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("OTEL_SERVICE_NAME", "team-agent");
    export_to(&mut cmd, &collector, Transport::HttpProtobuf);
    assert_success(&run(cmd).await);

    // The standard variable names the service.
    assert_eq!(collector.resource()["service.name"], "team-agent");
    let spans = collector.spans();
    let task = named(&spans, "corvid.task")[0];
    let mut requests = named(&spans, "corvid.model_request");
    requests.sort_by_key(|s| attr(s, "retries").to_owned());
    let got: Vec<(&str, &str, Option<&String>)> = requests
        .iter()
        .map(|s| {
            assert_eq!(s.parent_span_id, task.span_id);
            (
                attr(s, "retries"),
                attr(s, "outcome"),
                s.attrs.get("error_kind"),
            )
        })
        .collect();
    let server_kind = "server".to_owned();
    assert_eq!(
        got,
        [("0", "failed", Some(&server_kind)), ("1", "finished", None)]
    );
    // The failed attempt is an error to the backend; the task that recovered is not.
    let statuses: Vec<i32> = requests.iter().map(|s| s.status).collect();
    assert_eq!((statuses, task.status), (vec![2, 0], 0));
    let counts = [
        "input_tokens",
        "cached_tokens",
        "output_tokens",
        "reasoning_tokens",
    ]
    .map(|k| attr(requests[1], k));
    assert_eq!(counts, ["10", "6", "5", "2"]);

    let metrics = collector.metrics();
    let of_type = |kind: &str| -> Vec<f64> {
        metrics["corvid.tokens"]
            .iter()
            .filter(|(a, _)| a["type"] == kind && a["prompt_id"] == "main")
            .map(|(_, v)| *v)
            .collect()
    };
    assert_eq!(
        (of_type("cached_input"), of_type("reasoning")),
        (vec![6.0], vec![2.0])
    );
    // 4 fresh input tokens at $1, 6 cached at $0.10 and 5 output at $2.
    assert_eq!(metrics["corvid.cost"][0].1, 14.6);
    // Neither the prompt nor the server's message quoting it left the machine.
    assert!(!collector.saw_text(ECHOED));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_exports_its_span_under_the_task_and_its_tokens_under_the_compaction_id() {
    let server = MockServer::start().await;
    let sb = Sandbox::new();
    // A first session to go on with: an overflow needs older turns to summarize.
    server.push(text_turn("First answer."));
    let mut first = sb.against(&server, "sk-test", &["-p", "first question"]);
    first.env("OPENAI_MODEL", "mock-model");
    assert_success(&run(first).await);

    let collector = Collector::start(Transport::Grpc).await;
    server.push(ScriptedResponse::error(
        400,
        json!({"error": {"type": "invalid_request_error", "code": "context_length_exceeded",
            "message": format!("This model's maximum context length is 8192 tokens ({ECHOED})")}})
        .to_string(),
    ));
    server.push(cached_turn("Summary of the first question.", 0));
    server.push(text_turn("Second answer."));
    let mut cmd = sb.against(&server, "sk-test", &["--continue", "-p", "second question"]);
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("CORVID_ENABLE_TELEMETRY", "1");
    export_to(&mut cmd, &collector, Transport::Grpc);
    assert_success(&run(cmd).await);

    let spans = collector.spans();
    let task = named(&spans, "corvid.task");
    assert_eq!(task.len(), 1, "{spans:#?}");
    let compactions = named(&spans, "corvid.compaction");
    assert_eq!(compactions.len(), 1, "{spans:#?}");
    let compaction = compactions[0];
    assert_eq!(compaction.parent_span_id, task[0].span_id);
    assert_eq!(
        (
            attr(compaction, "model"),
            attr(compaction, "trigger"),
            attr(compaction, "outcome")
        ),
        ("mock-model", "overflow", "compacted")
    );
    let before: u64 = attr(compaction, "tokens_before").parse().unwrap();
    let after: u64 = attr(compaction, "tokens_after").parse().unwrap();
    assert!(before > 0 && after > 0, "{compaction:?}");

    let mut requests: Vec<(&str, &str)> = named(&spans, "corvid.model_request")
        .iter()
        .map(|s| (attr(s, "outcome"), attr(s, "retries")))
        .collect();
    requests.sort();
    assert_eq!(requests, [("failed", "0"), ("finished", "0")]);

    let tokens = &collector.metrics()["corvid.tokens"];
    let compaction_input: Vec<f64> = tokens
        .iter()
        .filter(|(a, _)| a["prompt_id"] == "compaction" && a["type"] == "input")
        .map(|(_, v)| *v)
        .collect();
    assert_eq!(compaction_input, [10.0]);
    assert!(!collector.saw_text(ECHOED));
    assert!(!collector.saw_text("second question"));
    assert!(!collector.saw_text("Summary of the first"));
}

/// A turn that makes one call `id` of `name` with `args`.
fn call_turn(id: &str, name: &str, args: serde_json::Value) -> ScriptedResponse {
    ScriptedResponse::sse(super::common::turn(
        json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
               "function": {"name": name, "arguments": args.to_string()}}]}),
        "tool_calls",
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagents_requests_and_calls_are_exported_under_its_task_call_without_its_prompt() {
    let collector = Collector::start(Transport::HttpProtobuf).await;
    let sb = Sandbox::new();
    std::fs::write(sb.project_dir().join("notes.txt"), "the answer is 42\n").unwrap();
    let server = MockServer::start().await;
    // Parent, child, child, parent.
    server.push(call_turn(
        "task_1",
        "task",
        json!({"description": "Find the answer", "prompt": "child-prompt-marker-3391",
               "subagent_type": "explore"}),
    ));
    server.push(call_turn(
        "read_1",
        "read_file",
        json!({"file_path": "notes.txt"}),
    ));
    server.push(text_turn("The notes say the answer is 42."));
    server.push(text_turn("Your notes say 42."));
    let mut cmd = sb.against(&server, "sk-test", &["-p", "what do my notes say?"]);
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("CORVID_ENABLE_TELEMETRY", "1");
    export_to(&mut cmd, &collector, Transport::HttpProtobuf);
    assert_success(&run(cmd).await);

    let spans = collector.spans();
    let task = named(&spans, "corvid.task");
    assert_eq!(task.len(), 1, "{spans:#?}");
    let tools = named(&spans, "corvid.tool_call");
    let by_tool = |name: &str| *tools.iter().find(|s| attr(s, "tool") == name).unwrap();
    let (task_call, read) = (by_tool("task"), by_tool("read_file"));
    assert_eq!(task_call.parent_span_id, task[0].span_id);
    assert_eq!(read.parent_span_id, task_call.span_id);
    let requests = named(&spans, "corvid.model_request");
    let under_call: Vec<&str> = requests
        .iter()
        .filter(|r| r.parent_span_id == task_call.span_id)
        .map(|r| attr(r, "prompt_id"))
        .collect();
    assert_eq!(under_call.len(), 2, "{spans:#?}");
    assert!(under_call.iter().all(|id| *id != "main"), "{under_call:?}");
    assert!(!collector.saw_text("child-prompt-marker-3391"));
    assert!(!collector.saw_text("the answer is 42"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_before_a_request_that_would_pass_the_threshold_exports_its_trigger() {
    let server = MockServer::start().await;
    let sb = Sandbox::new();
    sb.user_settings(r#"{"model": {"contextWindow": 8192, "compactThreshold": 0.9}}"#);
    // A first session whose prompt alone is past the threshold (its own compaction has
    // nothing older to summarize, so that request goes out as it is).
    server.push(text_turn("First answer."));
    let long = format!("first {}", "x ".repeat(20_000));
    let mut first = sb.against(&server, "sk-test", &["-p", &long]);
    first.env("OPENAI_MODEL", "mock-model");
    assert_success(&run(first).await);

    let collector = Collector::start(Transport::HttpProtobuf).await;
    server.push(text_turn("Summary."));
    server.push(text_turn("Second answer."));
    let mut cmd = sb.against(&server, "sk-test", &["--continue", "-p", "second"]);
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("CORVID_ENABLE_TELEMETRY", "1");
    export_to(&mut cmd, &collector, Transport::HttpProtobuf);
    assert_success(&run(cmd).await);

    let spans = collector.spans();
    let task = named(&spans, "corvid.task");
    let compactions: Vec<(&str, &str)> = named(&spans, "corvid.compaction")
        .iter()
        .map(|c| {
            assert_eq!(c.parent_span_id, task[0].span_id);
            (attr(c, "trigger"), attr(c, "outcome"))
        })
        .collect();
    assert_eq!(compactions, [("threshold", "compacted")], "{spans:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_in_the_middle_of_a_request_still_exports_the_task_before_the_exit() {
    let collector = Collector::start(Transport::HttpProtobuf).await;
    let server = MockServer::start().await;
    server.push(
        ScriptedResponse::sse(vec![chunk(
            json!({"role": "assistant", "content": "Partial"}),
            None,
        )])
        .hang(),
    );
    let sb = Sandbox::new();
    let mut cmd = sb.against(&server, "sk-test", &["-p", "hello"]);
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("CORVID_ENABLE_TELEMETRY", "1");
    export_to(&mut cmd, &collector, Transport::HttpProtobuf);
    let child = cmd.spawn().unwrap();
    for _ in 0..600 {
        if !server.requests().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(server.requests().len(), 1, "the request never came");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(143));

    let spans = collector.spans();
    let task = named(&spans, "corvid.task");
    assert_eq!(task.len(), 1, "{spans:#?}");
    let requests = named(&spans, "corvid.model_request");
    assert_eq!(requests.len(), 1, "{spans:#?}");
    assert_eq!(requests[0].parent_span_id, task[0].span_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_is_an_error_to_the_backend_with_its_kind_but_not_the_servers_message() {
    let collector = Collector::start(Transport::HttpProtobuf).await;
    let server = MockServer::start().await;
    server.push(ScriptedResponse::error(
        401,
        json!({"error": {"message": format!("bad key for {ECHOED}")}}).to_string(),
    ));
    let sb = Sandbox::new();
    let mut cmd = sb.against(&server, "sk-test", &["-p", "hello"]);
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("CORVID_ENABLE_TELEMETRY", "1");
    export_to(&mut cmd, &collector, Transport::HttpProtobuf);
    let out = run(cmd).await;
    assert_eq!(out.status.code(), Some(1));

    let spans = collector.spans();
    let task = named(&spans, "corvid.task")[0];
    let request = named(&spans, "corvid.model_request")[0];
    assert_eq!((attr(task, "stop_reason"), task.status), ("error", 2));
    assert_eq!((attr(request, "error_kind"), request.status), ("auth", 2));
    assert!(!collector.saw_text(ECHOED));
}
