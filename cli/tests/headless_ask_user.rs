//! Headless `ask_user` (issue 30) with the real binary against the loopback mock model:
//! without `--answers` the tool is not offered and the system prompt says why; with it the
//! questions are answered from the file by header; a header the file lacks stops the run as
//! bad input (exit 2) naming the header. Also `enter_plan_mode` in headless default mode: it
//! needs an approval nobody can give, so the mode stays.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use corvid_testkit::{MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn tool_call(id: &str, name: &str, args: &Value) -> ScriptedResponse {
    ScriptedResponse::sse(turn(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
            "function": {"name": name, "arguments": args.to_string()}}]}),
        "tool_calls",
    ))
}

fn ask() -> ScriptedResponse {
    tool_call(
        "call_q",
        "ask_user",
        &json!({"questions": [
            {"question": "Which database?", "header": "Db", "multiSelect": false,
             "options": [{"label": "Postgres", "description": "a server"},
                         {"label": "SQLite", "description": "one file"}]},
            {"question": "Which extras?", "header": "Extras", "multiSelect": true,
             "options": [{"label": "Auth", "description": "login"},
                         {"label": "Cache", "description": "memory"}]}
        ]}),
    )
}

fn offered(server: &MockServer, i: usize) -> Vec<String> {
    server.requests()[i].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn tool_results(server: &MockServer, i: usize) -> Vec<String> {
    server.requests()[i].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn headless(server: &MockServer, sb: &Sandbox, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["-p", "set it up"];
    args.extend_from_slice(extra);
    let mut cmd = sb.against(server, "sk-headless-ask", &args);
    cmd.env("OPENAI_MODEL", "mock-model");
    run(cmd).await
}

#[tokio::test]
async fn without_answers_ask_user_is_not_offered_and_the_system_prompt_says_so() {
    let server = MockServer::start().await;
    server.push(text_turn("Done."));
    let sb = Sandbox::new();
    let out = headless(&server, &sb, &[]).await;
    assert_success(&out);
    let tools = offered(&server, 0);
    assert!(!tools.contains(&"ask_user".to_owned()), "{tools:?}");
    let system = server.requests()[0].body["messages"][0]["content"].to_string();
    assert!(
        system.contains("the ask_user tool is not available"),
        "{system}"
    );
}

#[tokio::test]
async fn answers_from_the_file_go_back_to_the_model_by_header() {
    let server = MockServer::start().await;
    server.push(ask());
    server.push(text_turn("Done."));
    let sb = Sandbox::new();
    let file = sb.project_dir().join("answers.json");
    std::fs::write(&file, r#"{"Db": "SQLite", "Extras": ["Auth", "logs"]}"#).unwrap();
    let out = headless(&server, &sb, &["--answers", file.to_str().unwrap()]).await;
    assert_success(&out);
    assert!(offered(&server, 0).contains(&"ask_user".to_owned()));
    assert_eq!(
        tool_results(&server, 1),
        vec!["The user answered:\n- Db: SQLite\n- Extras: Auth, Other: \"logs\"".to_owned()]
    );
}

#[tokio::test]
async fn a_question_the_file_does_not_answer_fails_the_run_naming_its_header() {
    let server = MockServer::start().await;
    server.push(ask());
    let sb = Sandbox::new();
    let file = sb.project_dir().join("answers.json");
    std::fs::write(&file, r#"{"Db": "SQLite"}"#).unwrap();
    let out = headless(&server, &sb, &["--answers", file.to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("the model asked a question headed \"Extras\""),
        "{err}"
    );
    assert!(err.contains("answers.json"), "{err}");
    assert_eq!(server.requests().len(), 1, "the model is not asked again");
}

#[tokio::test]
async fn an_unreadable_answers_file_is_a_usage_error() {
    let server = MockServer::start().await;
    let sb = Sandbox::new();
    let file = sb.project_dir().join("answers.json");
    std::fs::write(&file, "[1, 2]").unwrap();
    let out = headless(&server, &sb, &["--answers", file.to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is not a JSON object of header"),
        "{}",
        stderr(&out)
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn enter_plan_mode_in_headless_default_mode_is_refused_and_the_mode_stays() {
    let server = MockServer::start().await;
    server.push(tool_call("call_e", "enter_plan_mode", &json!({})));
    server.push(text_turn("Done."));
    let sb = Sandbox::new();
    let out = headless(&server, &sb, &[]).await;
    assert_success(&out);
    assert!(tool_results(&server, 1)[0].contains("needs approval"));
    assert!(offered(&server, 1).contains(&"write_file".to_owned()));
}
