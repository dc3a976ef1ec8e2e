//! MCP servers in a headless session against the loopback mock model: the third-party
//! `@modelcontextprotocol/server-everything` and a faulty server written with the official SDK
//! (`tests/mcp`, installed by `tests/run.sh`; a missing install fails these tests).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{
    Sandbox, assert_gone, assert_success, everything_js, faulty_js, http_everything, json_lines,
    kind, run, text_turn, turn,
};
use corvid_testkit::{MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// User settings with these servers; the first request waits for them (no timing in tests).
fn settings_with(sb: &Sandbox, servers: Value) {
    let settings = json!({"mcpServers": servers, "mcp": {"startupTimeoutMs": 120_000}});
    sb.user_settings(&settings.to_string());
}

/// `corvid -p PROMPT --output-format stream-json` against the mock model.
async fn headless(sb: &Sandbox, server: &MockServer, extra: &[&str]) -> std::process::Output {
    let args = [
        &["-p", "use the tools", "--output-format", "stream-json"],
        extra,
    ]
    .concat();
    let mut cmd = sb.against(server, "sk-test", &args);
    cmd.env("OPENAI_MODEL", "mock-model");
    run(cmd).await
}

/// One model turn calling `calls` (`(id, tool, args)`).
fn calls_turn(calls: &[(&str, &str, Value)]) -> ScriptedResponse {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (id, name, args))| {
            json!({"index": i, "id": id, "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    ScriptedResponse::sse(turn(
        json!({"role": "assistant", "tool_calls": calls}),
        "tool_calls",
    ))
}

/// The tool result message the request carries for `call_id`.
fn tool_message(request: &Value, call_id: &str) -> Value {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .cloned()
        .unwrap_or_else(|| panic!("no tool result for {call_id} in {request:#}"))
}

/// The stream-json content block of `kind_` (`tool_use`, `tool_result`) for `call_id`.
fn block(msgs: &[Value], kind_: &str, call_id: &str) -> Value {
    let key = if kind_ == "tool_use" {
        "id"
    } else {
        "tool_use_id"
    };
    msgs.iter()
        .filter_map(|m| m["message"]["content"].as_array())
        .flatten()
        .find(|b| b["type"] == kind_ && b[key] == call_id)
        .cloned()
        .unwrap_or_else(|| panic!("no {kind_} for {call_id} in {msgs:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_calls_server_everything_tools_and_gets_their_results() {
    let marker_value = format!("headless-{}", std::process::id());
    let sb = Sandbox::new();
    settings_with(
        &sb,
        // `trustHints`: the user believes its read-only hints, so `echo` runs unasked.
        json!({"everything": {"command": "node", "args": [everything_js(), "stdio"],
                              "env": {"CORVID_MCP_E2E": marker_value}, "trustHints": true}}),
    );
    let server = MockServer::start().await;
    server.push(calls_turn(&[
        (
            "call_echo",
            "mcp__everything__echo",
            json!({"message": "hi there"}),
        ),
        (
            "call_add",
            "mcp__everything__get-sum",
            json!({"a": 2, "b": 40}),
        ),
    ]));
    server.push(text_turn("Both tools answered."));
    let out = headless(&sb, &server, &[]).await;
    assert_success(&out);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let tools = requests[0].body["tools"].as_array().unwrap();
    let echo = tools
        .iter()
        .find(|t| t["function"]["name"] == "mcp__everything__echo")
        .unwrap_or_else(|| panic!("echo is not offered: {tools:#?}"));
    assert_eq!(
        echo["function"]["description"],
        "Echoes back the input string"
    );
    let schema = &echo["function"]["parameters"];
    assert_eq!(schema["type"], "object");
    assert_eq!(
        schema["properties"]["message"],
        json!({"type": "string", "description": "Message to echo"})
    );
    assert_eq!(schema["required"], json!(["message"]));
    assert_eq!(
        tool_message(&requests[1].body, "call_echo")["content"],
        "Echo: hi there"
    );
    let sum = tool_message(&requests[1].body, "call_add")["content"].clone();
    assert!(sum.as_str().unwrap().contains("42"), "{sum}");

    let msgs = json_lines(&out);
    assert_eq!(
        block(&msgs, "tool_use", "call_echo"),
        json!({"type": "tool_use", "id": "call_echo", "name": "mcp__everything__echo",
               "input": {"message": "hi there"},
               "_meta": {"provenance": "mcp", "serverId": "everything"}})
    );
    assert_eq!(block(&msgs, "tool_result", "call_echo")["is_error"], false);
    assert_eq!(kind(msgs.last().unwrap()), "result");
    // `system/init` lists the server's tools beside the built-in ones.
    assert_eq!(kind(&msgs[0]), "system/init");
    let listed = msgs[0]["tools"].as_array().unwrap();
    assert!(
        listed.contains(&json!("mcp__everything__echo")) && listed.contains(&json!("read_file")),
        "{listed:?}"
    );

    // The session ended with the process: its server is gone too.
    assert_gone(&format!("CORVID_MCP_E2E={marker_value}")).await;
}

/// Runs one task calling the non-read-only `toggle-simulated-logging` with `trust` set as given.
async fn toggle_with_trust(trust: bool) -> Vec<Value> {
    let sb = Sandbox::new();
    settings_with(
        &sb,
        json!({"everything": {"command": "node", "args": [everything_js()], "trust": trust}}),
    );
    let server = MockServer::start().await;
    server.push(calls_turn(&[(
        "call_t",
        "mcp__everything__toggle-simulated-logging",
        json!({}),
    )]));
    server.push(text_turn("Done."));
    let out = headless(&sb, &server, &[]).await;
    assert_success(&out);
    json_lines(&out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_is_not_read_only_asks_unless_its_server_is_trusted() {
    let asked = toggle_with_trust(false).await;
    assert!(
        asked
            .iter()
            .any(|m| m["subtype"] == "permission_denied" && m["tool_use_id"] == "call_t"),
        "{asked:#?}"
    );
    assert_eq!(block(&asked, "tool_result", "call_t")["is_error"], true);

    let trusted = toggle_with_trust(true).await;
    assert!(!trusted.iter().any(|m| m["subtype"] == "permission_denied"));
    assert_eq!(block(&trusted, "tool_result", "call_t")["is_error"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_faults_fail_their_calls_naming_the_server_and_the_session_goes_on() {
    let sb = Sandbox::new();
    settings_with(
        &sb,
        json!({
            "missing": {"command": "corvid-no-such-mcp-server"},
            "faulty": {"command": "node", "args": [faulty_js()], "timeout": 5000, "trust": true},
        }),
    );
    let server = MockServer::start().await;
    server.push(calls_turn(&[(
        "call_crash",
        "mcp__faulty__crash",
        json!({}),
    )]));
    server.push(calls_turn(&[("call_hang", "mcp__faulty__hang", json!({}))]));
    server.push(calls_turn(&[("call_ping", "mcp__faulty__ping", json!({}))]));
    server.push(text_turn("Recovered."));
    let out = headless(&sb, &server, &[]).await;
    assert_success(&out);

    let msgs = json_lines(&out);
    let crash = block(&msgs, "tool_result", "call_crash");
    assert_eq!(crash["is_error"], true);
    assert!(
        crash["content"]
            .as_str()
            .unwrap()
            .starts_with("MCP server `faulty` stopped during the call to `crash`"),
        "{crash}"
    );
    let hang = block(&msgs, "tool_result", "call_hang");
    assert_eq!(
        hang["content"],
        "MCP server `faulty` tool `hang` did not answer within 5000 ms (the server's `timeout`)"
    );
    let ping = block(&msgs, "tool_result", "call_ping");
    assert_eq!(
        (ping["is_error"].clone(), ping["content"].clone()),
        (json!(false), json!("pong"))
    );
    assert_eq!(msgs.last().unwrap()["result"], "Recovered.");
    // The server that could not start is reported once, naming it.
    let warnings: Vec<&Value> = msgs.iter().filter(|m| m["subtype"] == "warning").collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    let warning = warnings[0]["message"].as_str().unwrap();
    assert!(
        warning.starts_with(
            "MCP server `missing` could not start: cannot start `corvid-no-such-mcp-server`"
        ),
        "{warning}"
    );
    // The missing server offered nothing; the others' tools were listed.
    let requests = server.requests();
    let names: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .filter(|n| n.starts_with("mcp__"))
        .collect();
    assert_eq!(
        names,
        [
            "mcp__faulty__crash",
            "mcp__faulty__hang",
            "mcp__faulty__ping",
            "mcp__faulty__grow"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_calls_server_everything_over_streamable_http() {
    let (_everything, port) = http_everything().await;
    let sb = Sandbox::new();
    settings_with(
        &sb,
        json!({"web": {"httpUrl": format!("http://127.0.0.1:{port}/mcp"),
                       "headers": {"X-Corvid-Test": "yes"}, "trustHints": true}}),
    );
    let server = MockServer::start().await;
    server.push(calls_turn(&[(
        "call_echo",
        "mcp__web__echo",
        json!({"message": "over http"}),
    )]));
    server.push(text_turn("Echoed."));
    let out = headless(&sb, &server, &[]).await;
    assert_success(&out);
    assert_eq!(
        tool_message(&server.requests()[1].body, "call_echo")["content"],
        "Echo: over http"
    );
    let msgs = json_lines(&out);
    assert_eq!(
        block(&msgs, "tool_use", "call_echo")["_meta"],
        json!({"provenance": "mcp", "serverId": "web"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_image_reaches_the_model_after_the_tool_messages_and_again_on_resume() {
    let sb = Sandbox::new();
    let settings = json!({
        "mcpServers": {"everything": {"command": "node", "args": [everything_js()],
                                      "trustHints": true}},
        "mcp": {"startupTimeoutMs": 120_000},
        "model": {"supportsImages": true},
    });
    sb.user_settings(&settings.to_string());
    let server = MockServer::start().await;
    server.push(calls_turn(&[
        ("call_img", "mcp__everything__get-tiny-image", json!({})),
        (
            "call_echo",
            "mcp__everything__echo",
            json!({"message": "hi"}),
        ),
    ]));
    server.push(text_turn("It is the MCP logo."));
    let out = headless(&sb, &server, &[]).await;
    assert_success(&out);

    // The image itself, as the server sent it (base64 of a PNG).
    let msgs = json_lines(&out);
    let shown = block(&msgs, "tool_result", "call_img")["content"].clone();
    assert_eq!(shown[0], json!({"type": "text", "text": EXPECTED_TEXT}));
    assert_eq!(shown[1]["source"]["media_type"], "image/png");
    let data = shown[1]["source"]["data"].as_str().unwrap().to_owned();
    assert!(data.starts_with("iVBORw0KGgo"), "{data}");

    // The tool messages of the batch, then one user message with the image, naming the call.
    let expected_tail = vec![
        json!({"role": "tool", "tool_call_id": "call_img", "content":
            format!("{EXPECTED_TEXT}\n[1 image(s) returned: sent in the next user message]")}),
        json!({"role": "tool", "tool_call_id": "call_echo", "content": "Echo: hi"}),
        json!({"role": "user", "content": [
            {"type": "text", "text":
                "The images returned by tool call call_img (mcp__everything__get-tiny-image):"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{data}")}},
        ]}),
    ];
    let messages = server.requests()[1].body["messages"].clone();
    let messages = messages.as_array().unwrap();
    assert_eq!(messages[messages.len() - 3..].to_vec(), expected_tail);

    // The recording kept the image: the resumed session sends the same conversation.
    server.push(text_turn("Still the logo."));
    let mut cmd = sb.against(&server, "sk-test", &["--continue", "-p", "and now?"]);
    cmd.env("OPENAI_MODEL", "mock-model");
    assert_success(&run(cmd).await);
    let resumed = server.requests()[2].body["messages"].clone();
    let resumed = resumed.as_array().unwrap();
    let at = resumed
        .iter()
        .position(|m| m["tool_call_id"] == "call_img")
        .unwrap_or_else(|| panic!("no result for call_img in {resumed:#?}"));
    assert_eq!(resumed[at..at + 3].to_vec(), expected_tail);
}

/// The text server-everything's `get-tiny-image` returns around its image.
const EXPECTED_TEXT: &str = "Here's the image you requested:\nThe image above is the MCP logo.";
