//! End to end, `ask_user` over ACP (issue 30): the official ACP TypeScript client
//! (`tests/acp/ask_user.mjs`, on `@agentclientprotocol/sdk` 2.4.0) drives the real
//! `corvid --acp`, whose model (the testkit's loopback mock OpenAI server) asks two questions.
//! A client advertising form elicitation gets one `elicitation/create`; one that does not gets
//! a `session/request_permission` per question. The answers reach the model as the result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

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
