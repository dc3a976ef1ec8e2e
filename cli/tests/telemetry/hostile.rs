//! The abuse cases of telemetry: secrets must never ride along (the provider key, the collector
//! key in `OTEL_EXPORTER_OTLP_HEADERS`, even with `logPrompts` on and the model running `env`),
//! a tool name the model made up is not exported (it is model output), and a repository's
//! `.corvid/settings.json`, trusted or not, can neither turn telemetry on nor widen what it
//! exports.

use corvid_testkit::{MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::collector::{Collector, Transport};
use super::common::{Sandbox, assert_success, run, stderr, text_turn, turn};
use super::{export_to, named};

const PROVIDER_KEY: &str = "sk-provider-secret-2231";
const COLLECTOR_KEY: &str = "collector-secret-8841";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neither_the_provider_key_nor_the_collector_key_reaches_an_export_the_log_or_a_command() {
    let collector = Collector::start(Transport::HttpProtobuf).await;
    let server = MockServer::start().await;
    // The model reads the environment: with `logPrompts` on, a command's output is exported.
    let args = json!({"command": "env"}).to_string();
    server.push(ScriptedResponse::sse(turn(
        json!({"tool_calls": [{"index": 0, "id": "call_env", "type": "function",
               "function": {"name": "run_shell_command", "arguments": args}}]}),
        "tool_calls",
    )));
    server.push(text_turn("Read it."));
    let sb = Sandbox::new();
    sb.user_settings(r#"{"telemetry": {"enabled": true, "logPrompts": true}}"#);
    let mut cmd = sb.against(
        &server,
        PROVIDER_KEY,
        &["-y", "-p", "print the environment"],
    );
    cmd.env("OPENAI_MODEL", "mock-model").env(
        "OTEL_EXPORTER_OTLP_HEADERS",
        format!("x-collector-key={COLLECTOR_KEY}"),
    );
    export_to(&mut cmd, &collector, Transport::HttpProtobuf);
    let out = run(cmd).await;
    assert_success(&out);

    // The header went where it belongs, and the command ran and was exported.
    assert!(
        collector
            .header_values("x-collector-key")
            .iter()
            .all(|v| v == COLLECTOR_KEY)
    );
    assert!(!collector.header_values("x-collector-key").is_empty());
    let spans = collector.spans();
    let tool = named(&spans, "corvid.tool_call");
    assert_eq!(tool.len(), 1, "{spans:#?}");
    let output = &tool[0].events[1].1["tool_output"];
    assert!(output.contains("CORVID_HOME="), "{output}");

    for secret in [PROVIDER_KEY, COLLECTOR_KEY] {
        assert!(!collector.saw_text(secret), "{secret} was exported");
        assert!(!output.contains(secret), "the command saw {secret}");
        for request in server.requests() {
            let body = String::from_utf8_lossy(&request.raw_body);
            assert!(!body.contains(secret), "{secret} went to the model");
        }
        assert!(!stderr(&out).contains(secret));
        let log =
            std::fs::read_to_string(sb.home.path().join("logs/corvid.log")).unwrap_or_default();
        assert!(!log.contains(secret), "{secret} is in the log");
    }
}

/// A cloned repository (a git checkout) whose settings ask for the most telemetry there is.
fn greedy_checkout() -> Sandbox {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.project_dir().join(".git")).unwrap();
    std::fs::create_dir_all(sb.project_dir().join(".corvid")).unwrap();
    std::fs::write(
        sb.project_dir().join(".corvid/settings.json"),
        r#"{"telemetry": {"enabled": true, "logPrompts": true,
            "prices": {"mock-model": {"input": 1, "output": 1}}}}"#,
    )
    .unwrap();
    sb
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_project_can_neither_turn_telemetry_on_nor_turn_log_prompts_on() {
    let collector = Collector::start(Transport::HttpProtobuf).await;
    let server = MockServer::start().await;

    // The user never turned telemetry on: nothing connects, even with the project trusted.
    server.push(text_turn("Hi."));
    let sb = greedy_checkout();
    let mut cmd = sb.against(&server, "sk-test", &["--trust", "-p", "secret-prompt-1"]);
    cmd.env("OPENAI_MODEL", "mock-model");
    export_to(&mut cmd, &collector, Transport::HttpProtobuf);
    let out = run(cmd).await;
    assert_success(&out);
    assert_eq!(collector.connections(), 0);
    assert!(
        stderr(&out).contains("telemetry"),
        "the user is not told the project's block is ignored: {}",
        stderr(&out)
    );

    // The user turned it on without content: the project cannot add prompts or a cost.
    server.push(text_turn("Hi."));
    sb.user_settings(r#"{"telemetry": {"enabled": true}}"#);
    let mut cmd = sb.against(&server, "sk-test", &["--trust", "-p", "secret-prompt-2"]);
    cmd.env("OPENAI_MODEL", "mock-model");
    export_to(&mut cmd, &collector, Transport::HttpProtobuf);
    assert_success(&run(cmd).await);
    assert_eq!(named(&collector.spans(), "corvid.task").len(), 1);
    assert!(!collector.saw_text("secret-prompt-2"));
    assert!(!collector.metrics().contains_key("corvid.cost"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_name_the_model_made_up_is_exported_as_unknown() {
    let collector = Collector::start(Transport::HttpProtobuf).await;
    let server = MockServer::start().await;
    // A name is model output: an injected model could spell what it read into it.
    server.push(ScriptedResponse::sse(turn(
        json!({"tool_calls": [{"index": 0, "id": "call_x", "type": "function",
               "function": {"name": "made_up_marker_5151", "arguments": "{}"}}]}),
        "tool_calls",
    )));
    server.push(text_turn("Sorry."));
    let sb = Sandbox::new();
    let mut cmd = sb.against(&server, "sk-test", &["-p", "hello"]);
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("CORVID_ENABLE_TELEMETRY", "1");
    export_to(&mut cmd, &collector, Transport::HttpProtobuf);
    assert_success(&run(cmd).await);

    let spans = collector.spans();
    let tools = named(&spans, "corvid.tool_call");
    assert_eq!(tools.len(), 1, "{spans:#?}");
    assert_eq!(super::attr(tools[0], "tool"), "unknown");
    assert_eq!(
        collector.metrics()["corvid.tool.duration"][0].0["tool"],
        "unknown"
    );
    assert!(!collector.saw_text("made_up_marker_5151"));
}
