//! Hooks firing in a real headless session against the loopback mock provider (issue 27):
//! Claude Code's documented blocks, pasted unchanged, guard, rewrite and extend the model's
//! tool calls and keep the agent from stopping.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, assert_success, json_lines, kind, run, text_turn, turn};
use corvid_testkit::{MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const KEY: &str = "sk-test-secret-4242";

/// Claude Code's documented `jq` guard: exit 2 (block, stderr the reason) on `rm -rf`.
const RM_GUARD: &str = r#"jq -r '.tool_input.command' | { read -r cmd; if echo "$cmd" | grep -q 'rm -rf'; then echo 'Blocked: rm -rf is not allowed in this repository' >&2; exit 2; fi; }"#;

/// `corvid -p PROMPT -y` with `hooks` as the user's settings, against `server`.
async fn session(sb: &Sandbox, server: &MockServer, hooks: Value) -> std::process::Output {
    session_with(sb, server, json!({ "hooks": hooks }), &["-y"]).await
}

/// `corvid -p PROMPT ARGS` with `settings` as the user's settings, against `server`.
async fn session_with(
    sb: &Sandbox,
    server: &MockServer,
    settings: Value,
    args: &[&str],
) -> std::process::Output {
    sb.user_settings(&settings.to_string());
    let base = ["-p", "do it", "--output-format", "stream-json"];
    let mut cmd = sb.against(server, KEY, &[&base[..], args].concat());
    cmd.env("OPENAI_MODEL", "mock-model");
    run(cmd).await
}

fn shell_call(command: &str) -> ScriptedResponse {
    ScriptedResponse::sse(turn(
        json!({"tool_calls": [{"index": 0, "id": "call_sh", "type": "function",
               "function": {"name": "run_shell_command",
                            "arguments": json!({"command": command}).to_string()}}]}),
        "tool_calls",
    ))
}

fn one(event: &str, matcher: &str, command: &str) -> Value {
    json!({ event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}] })
}

/// The stream's `system/warning` messages: what every front end shows of hooks.
fn warnings(out: &std::process::Output) -> Vec<String> {
    json_lines(out)
        .into_iter()
        .filter(|m| kind(m) == "system/warning")
        .map(|m| m["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// What the second model request says the call returned.
fn tool_result_sent(server: &MockServer) -> String {
    let requests = server.requests();
    let tool_msg = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the second request carries the tool result")
        .clone();
    tool_msg["content"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_jq_guard_blocks_rm_rf_and_its_reason_reaches_the_model() {
    let server = MockServer::start().await;
    server.push(shell_call("touch ran.marker && rm -rf build"));
    server.push(text_turn("Understood, I will not delete it."));
    let sb = Sandbox::new();
    let out = session(&sb, &server, one("PreToolUse", "Bash", RM_GUARD)).await;
    assert_success(&out);
    assert!(
        !sb.project_dir().join("ran.marker").exists(),
        "the blocked command ran"
    );
    let told = tool_result_sent(&server);
    assert!(
        told.contains("Blocked: rm -rf is not allowed in this repository"),
        "{told}"
    );
    assert!(told.contains("did not run"), "{told}");
    let hooks: Vec<Value> = json_lines(&out)
        .into_iter()
        .filter(|m| kind(m) == "system/hook")
        .collect();
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    let shown = &hooks[0];
    assert_eq!(
        (
            &shown["event"],
            &shown["handler"],
            &shown["decision"],
            &shown["reason"]
        ),
        (
            &json!("PreToolUse"),
            &json!(RM_GUARD),
            &json!("block"),
            &json!("Blocked: rm -rf is not allowed in this repository")
        )
    );
    assert!(shown["duration_ms"].is_u64(), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jq_guard_lets_a_harmless_command_run() {
    let server = MockServer::start().await;
    server.push(shell_call("touch ran.marker"));
    server.push(text_turn("Done."));
    let sb = Sandbox::new();
    let out = session(&sb, &server, one("PreToolUse", "Bash", RM_GUARD)).await;
    assert_success(&out);
    assert!(sb.project_dir().join("ran.marker").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updated_input_changes_the_command_that_runs() {
    let server = MockServer::start().await;
    server.push(shell_call("touch original.marker"));
    server.push(text_turn("Done."));
    let sb = Sandbox::new();
    let rewrite = r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"command": "touch rewritten.marker"}}}'"#;
    let out = session(&sb, &server, one("PreToolUse", "Bash", rewrite)).await;
    assert_success(&out);
    assert!(!sb.project_dir().join("original.marker").exists());
    assert!(sb.project_dir().join("rewritten.marker").exists());
    let started = json_lines(&out)
        .into_iter()
        .find(|m| kind(m) == "assistant" && m.to_string().contains("tool_use"))
        .expect("a tool_use message");
    // The stream shows what ran, not what the model asked for.
    assert!(
        started.to_string().contains("rewritten.marker"),
        "{started}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_tool_use_additional_context_reaches_the_model() {
    let server = MockServer::start().await;
    server.push(shell_call("echo hello"));
    server.push(text_turn("Done."));
    let sb = Sandbox::new();
    let context = r#"echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "the formatter ran on the changed files"}}'"#;
    let out = session(&sb, &server, one("PostToolUse", "Bash", context)).await;
    assert_success(&out);
    let told = tool_result_sent(&server);
    assert!(told.contains("hello"), "{told}");
    assert!(
        told.contains("the formatter ran on the changed files"),
        "{told}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_hook_that_always_blocks_keeps_the_agent_going_eight_times_then_it_stops() {
    let server = MockServer::start().await;
    for _ in 0..9 {
        server.push(text_turn("I am done."));
    }
    let sb = Sandbox::new();
    let keep_going = r#"jq -r '.stop_hook_active' >> "$CLAUDE_PROJECT_DIR/stops.log"; echo 'the tests still fail' >&2; exit 2"#;
    let out = session(&sb, &server, one("Stop", "", keep_going)).await;
    assert_success(&out);
    let requests = server.requests();
    assert_eq!(requests.len(), 9, "one answer plus eight continuations");
    let last = requests[8].body["messages"].as_array().unwrap();
    let fed_back = last.last().unwrap();
    assert_eq!(fed_back["role"], "user");
    assert!(
        fed_back["content"]
            .to_string()
            .contains("the tests still fail"),
        "{fed_back}"
    );
    let log = std::fs::read_to_string(sb.project_dir().join("stops.log")).unwrap();
    let active: Vec<&str> = log.lines().collect();
    assert_eq!(active.len(), 8);
    assert_eq!(active[0], "false");
    assert!(active[1..].iter().all(|a| *a == "true"), "{log}");
    let shown = warnings(&out);
    assert!(
        shown.iter().any(|w| w.contains("8 times in a row")),
        "{shown:?}"
    );
    let blocks = json_lines(&out)
        .into_iter()
        .filter(|m| kind(m) == "system/hook" && m["event"] == "Stop" && m["decision"] == "block")
        .count();
    assert_eq!(blocks, 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_prompt_submit_block_keeps_the_prompt_from_the_model_and_says_why() {
    let server = MockServer::start().await;
    server.push(text_turn("should never be asked"));
    let sb = Sandbox::new();
    let guard = "echo 'prompts may not mention secrets' >&2; exit 2";
    let out = session(&sb, &server, one("UserPromptSubmit", "", guard)).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(server.requests().is_empty(), "the prompt reached the model");
    let result = json_lines(&out)
        .into_iter()
        .find(|m| kind(m).starts_with("result"))
        .expect("a result message");
    assert!(
        result
            .to_string()
            .contains("prompts may not mention secrets"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_prompt_submit_plain_output_is_added_for_the_model() {
    let server = MockServer::start().await;
    server.push(text_turn("Noted."));
    let sb = Sandbox::new();
    let out = session(
        &sb,
        &server,
        one("UserPromptSubmit", "", "echo 'current sprint: hooks'"),
    )
    .await;
    assert_success(&out);
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("current sprint: hooks"), "{sent}");
    assert!(sent.contains("do it"), "{sent}");
}

fn decision(word: &str) -> String {
    format!(
        r#"echo '{{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "permissionDecision": "{word}", "permissionDecisionReason": "the hook says {word}"}}}}'"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_allow_skips_the_prompt_that_headless_mode_could_not_answer() {
    let server = MockServer::start().await;
    server.push(shell_call("touch ran.marker"));
    server.push(text_turn("Done."));
    let sb = Sandbox::new();
    let hooks = one("PreToolUse", "Bash", &decision("allow"));
    let out = session_with(&sb, &server, json!({ "hooks": hooks }), &[]).await;
    assert_success(&out);
    assert!(sb.project_dir().join("ran.marker").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_allow_never_overrides_the_users_deny_rule() {
    let server = MockServer::start().await;
    server.push(shell_call("touch ran.marker"));
    server.push(text_turn("Done."));
    let sb = Sandbox::new();
    let hooks = one("PreToolUse", "Bash", &decision("allow"));
    let settings = json!({ "hooks": hooks, "tools": {"deny": ["run_shell_command(touch *)"]} });
    let out = session_with(&sb, &server, settings, &["-y"]).await;
    assert_success(&out);
    assert!(!sb.project_dir().join("ran.marker").exists());
    assert!(tool_result_sent(&server).contains("tools.deny"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_ask_asks_even_in_yolo_mode() {
    let server = MockServer::start().await;
    server.push(shell_call("touch ran.marker"));
    server.push(text_turn("Done."));
    let sb = Sandbox::new();
    let out = session(&sb, &server, one("PreToolUse", "Bash", &decision("ask"))).await;
    assert_success(&out);
    // Headless mode cannot ask anybody, so the call is refused instead of run.
    assert!(!sb.project_dir().join("ran.marker").exists());
    assert!(
        tool_result_sent(&server).contains("needs approval"),
        "{}",
        tool_result_sent(&server)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_tool_use_block_reason_is_added_for_the_model_and_shown_on_stderr_in_text_mode() {
    let server = MockServer::start().await;
    server.push(shell_call("echo hello"));
    server.push(text_turn("Done."));
    let sb = Sandbox::new();
    let hooks = one(
        "PostToolUse",
        "Bash",
        "echo 'lint failed: fix main.rs' >&2; exit 2",
    );
    sb.user_settings(&json!({ "hooks": hooks }).to_string());
    let mut cmd = sb.against(&server, KEY, &["-p", "do it", "-y"]);
    cmd.env("OPENAI_MODEL", "mock-model");
    let out = run(cmd).await;
    assert_success(&out);
    let told = tool_result_sent(&server);
    assert!(
        told.contains("hello") && told.contains("lint failed: fix main.rs"),
        "{told}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hook PostToolUse `echo 'lint failed: fix main.rs' >&2; exit 2`: block: lint failed: fix main.rs"),
        "{err}"
    );
}
