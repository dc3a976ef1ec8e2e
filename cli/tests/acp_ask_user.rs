//! End to end, `ask_user` over ACP (issue 30): the official ACP TypeScript client
//! (`tests/acp/ask_user.mjs`, on `@agentclientprotocol/sdk` 2.4.0) drives the real
//! `corvid --acp`, whose model (the testkit's loopback mock OpenAI server) asks two questions.
//! A client advertising form elicitation gets one `elicitation/create`; one that does not gets
//! a `session/request_permission` per question. The answers reach the model as the result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{require_client, run_session_script, text_turn, turn};
use corvid_testkit::{MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn ask_user_turn() -> ScriptedResponse {
    let args = json!({"questions": [
        {"question": "Which database?\u{1b}]0;pwned\u{7}", "header": "Db", "multiSelect": false,
         "options": [{"label": "Postgres", "description": "a server"},
                     {"label": "SQLite", "description": "one file"}]},
        {"question": "Which extras?", "header": "Extras", "multiSelect": true,
         "options": [{"label": "Auth", "description": "login"},
                     {"label": "Cache", "description": "memory"}]}
    ]});
    ScriptedResponse::sse(turn(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_q", "type": "function",
            "function": {"name": "ask_user", "arguments": args.to_string()}}]}),
        "tool_calls",
    ))
}

async fn run_client(server: &MockServer, answer: &str) -> Vec<Value> {
    let (project, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let url = server.url();
    run_session_script(
        "ask_user.mjs",
        &url,
        project.path(),
        home.path(),
        "set it up",
        answer,
    )
    .await
}

/// The `ask_user` result the model got in its second request.
fn result_sent(server: &MockServer) -> String {
    let requests = server.requests();
    let messages = requests[1].body["messages"].as_array().unwrap();
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    tool["content"].as_str().unwrap().to_owned()
}

fn kinds<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["kind"] == kind).collect()
}

#[tokio::test]
async fn a_client_with_elicitation_answers_every_question_in_one_form() {
    require_client();
    let server = MockServer::start().await;
    server.push(ask_user_turn());
    server.push(text_turn("Set up."));
    let content = json!({"q1": "SQLite", "q2": ["Auth", "Cache"], "q2_other": "logs too"});
    let lines = run_client(&server, &format!("form:{content}")).await;

    let forms = kinds(&lines, "elicitation");
    assert_eq!(forms.len(), 1, "{lines:?}");
    assert!(kinds(&lines, "permission").is_empty());
    let params = &forms[0]["params"];
    assert_eq!(params["mode"], "form");
    assert_eq!(params["toolCallId"], "call_q");
    let message = params["message"].as_str().unwrap();
    // The model's words, said to be the model's, with the terminal escape removed.
    assert!(
        message.starts_with("The model asks you (its own words, not corvid's):"),
        "{message}"
    );
    assert!(message.contains("Db: Which database?]0;pwned"), "{message}");
    assert!(!message.contains('\u{1b}') && !message.contains('\u{7}'));
    let fields: Vec<&String> = params["requestedSchema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(fields, vec!["q1", "q1_other", "q2", "q2_other"]);
    assert_eq!(
        result_sent(&server),
        "The user answered:\n- Db: SQLite\n- Extras: Auth, Cache, Other: \"logs too\""
    );
    let answer = kinds(&lines, "response")[0];
    assert_eq!(answer["response"]["stopReason"], "end_turn");
}

#[tokio::test]
async fn a_client_without_elicitation_gets_one_permission_request_per_question() {
    require_client();
    let server = MockServer::start().await;
    server.push(ask_user_turn());
    server.push(text_turn("Set up."));
    let lines = run_client(&server, "option-2").await;

    assert!(kinds(&lines, "elicitation").is_empty());
    let asks = kinds(&lines, "permission");
    assert_eq!(asks.len(), 2, "{lines:?}");
    let options: Vec<&Value> = asks[0]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["name"])
        .collect();
    assert_eq!(
        options,
        vec!["Postgres", "SQLite", "Dismiss (cancels the task)"]
    );
    let card = asks[1]["params"]["toolCall"].to_string();
    assert!(card.contains("Question 2 of 2 · Extras"), "{card}");
    assert!(card.contains("no Other text"), "{card}");
    assert!(card.contains("only one can be chosen here"), "{card}");
    assert_eq!(
        result_sent(&server),
        "The user answered:\n- Db: SQLite\n- Extras: Cache"
    );
}

#[tokio::test]
async fn declining_the_form_cancels_the_prompt_turn() {
    require_client();
    let server = MockServer::start().await;
    server.push(ask_user_turn());
    let lines = run_client(&server, "form-decline").await;
    let answer = kinds(&lines, "response")[0];
    assert_eq!(answer["response"]["stopReason"], "cancelled");
    assert_eq!(server.requests().len(), 1, "the model is not asked again");
}

/// `enter_plan_mode` over ACP: asked in `default`, and once allowed the editor gets the mode
/// change both ways and the model's next request offers only the plan tools.
#[tokio::test]
async fn enter_plan_mode_is_asked_and_the_mode_change_reaches_the_editor_and_the_model() {
    require_client();
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(turn(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_e", "type": "function",
            "function": {"name": "enter_plan_mode", "arguments": "{}"}}]}),
        "tool_calls",
    )));
    server.push(text_turn("Planning."));
    let lines = run_client(&server, "allow_once").await;

    let asks = kinds(&lines, "permission");
    assert_eq!(asks.len(), 1, "{lines:?}");
    assert_eq!(asks[0]["params"]["toolCall"]["toolCallId"], "call_e");
    let modes: Vec<&Value> = lines
        .iter()
        .filter(|l| l["update"]["sessionUpdate"] == "current_mode_update")
        .map(|l| &l["update"]["currentModeId"])
        .collect();
    assert_eq!(modes, vec!["plan"]);
    let mode_option = lines
        .iter()
        .rev()
        .filter(|l| l["update"]["sessionUpdate"] == "config_option_update")
        .filter_map(|l| {
            l["update"]["configOptions"]
                .as_array()?
                .iter()
                .find(|o| o["id"] == "mode")
                .map(|o| o["currentValue"].clone())
        })
        .next();
    assert_eq!(mode_option, Some(json!("plan")));
    let requests = server.requests();
    let offered: Vec<&str> = requests[1].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        vec![
            "read_file",
            "list_directory",
            "glob",
            "grep_search",
            "shell_output",
            "todo_write",
            "web_fetch",
            "exit_plan_mode",
            "ask_user",
            // Subagents plan too (they only read and report in plan mode).
            "task"
        ]
    );
}
