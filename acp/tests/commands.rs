//! Slash commands over ACP (issue 14 item 16): advertised after `session/new`, and a prompt
//! starting with one runs it instead of reaching the model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agent_client_protocol::v1::schema::StopReason;
use common::*;
use corvid_protocol::Message;
use pretty_assertions::assert_eq;

#[tokio::test]
async fn a_new_session_lists_the_commands_that_make_sense_in_an_editor() {
    let dir = project();
    let mut client = TestClient::start(
        TestFactory::new(ScriptedProvider::new(vec![])),
        fs_caps(false, false),
    )
    .await;
    let sid = client.new_session(dir.path()).await;
    client
        .until(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .await;
    assert_eq!(client.command_lists(), vec![(sid, commands())]);
}

#[tokio::test]
async fn stats_answers_with_the_token_usage_of_each_prompt_id_without_calling_the_model() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![read_a_script("call_1"), answer("Done.")]);
    let mut client =
        TestClient::start(TestFactory::new(provider.clone()), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "read a").await.unwrap().unwrap();
    client.drain();
    let before = client.updates().len();

    let response = client.prompt(&sid, "/stats").await.unwrap().unwrap();
    client.drain();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        client.updates()[before..].to_vec(),
        vec![message(
            "Session stats\nturns 2 · tool calls 1 (1 completed, 0 failed)\n\
             context: 15 of 32768 tokens (0%)\n\
             main: input 10 (cached 0) · output 5 (reasoning 0) · total 15"
        )]
    );
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn clear_starts_a_fresh_history_in_the_same_session() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![answer("First."), answer("Second.")]);
    let client = TestClient::start(TestFactory::new(provider.clone()), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "one").await.unwrap().unwrap();
    let cleared = client.prompt(&sid, "/clear").await.unwrap().unwrap();
    assert_eq!(cleared.stop_reason, StopReason::EndTurn);
    client.prompt(&sid, "two").await.unwrap().unwrap();

    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].messages, vec![Message::user_text("two")]);
}

#[tokio::test]
async fn model_switches_the_model_of_later_turns_and_shows_it() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![answer("Hi.")]);
    let mut client =
        TestClient::start(TestFactory::new(provider.clone()), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "/model").await.unwrap().unwrap();
    client
        .prompt(&sid, "/model other-model")
        .await
        .unwrap()
        .unwrap();
    client.prompt(&sid, "hi").await.unwrap().unwrap();
    client.prompt(&sid, "/model").await.unwrap().unwrap();
    client.drain();

    assert_eq!(provider.requests()[0].model, "other-model");
    let updates = client.updates();
    let texts: Vec<_> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].clone())
        .collect();
    // The client's model selector follows the command.
    let selectors: Vec<_> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "config_option_update")
        .map(|u| u["configOptions"][0]["currentValue"].clone())
        .collect();
    assert_eq!(selectors, vec!["other-model"]);
    assert_eq!(
        texts,
        vec![
            "Model: scripted-main",
            "Model set to other-model for later turns",
            "Hi.",
            "Model: other-model",
        ]
    );
}

#[tokio::test]
async fn the_model_is_selectable_per_session_through_a_config_option() {
    use agent_client_protocol::v1::schema::{NewSessionRequest, SetSessionConfigOptionRequest};
    let dir = project();
    let provider = ScriptedProvider::new(vec![answer("Hi.")]);
    let client = TestClient::start(TestFactory::new(provider.clone()), fs_caps(false, false)).await;
    let session = client
        .cx
        .send_request(NewSessionRequest::new(dir.path()))
        .block_task()
        .await
        .unwrap();
    let model_option = serde_json::json!({
        "id": "model",
        "name": "Model",
        "description": "The main model of later turns",
        "category": "model",
        "type": "select",
        "currentValue": "scripted-main",
        "options": [{"value": "scripted-main", "name": "scripted-main"}],
    });
    assert_eq!(
        serde_json::to_value(&session.config_options).unwrap(),
        serde_json::json!([model_option])
    );
    let sid = session.session_id.0.to_string();
    let set = client
        .cx
        .send_request(SetSessionConfigOptionRequest::new(
            sid.clone(),
            "model",
            "picked-model",
        ))
        .block_task()
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&set).unwrap()["configOptions"][0]["currentValue"],
        serde_json::json!("picked-model")
    );
    client.prompt(&sid, "hi").await.unwrap().unwrap();
    assert_eq!(provider.requests()[0].model, "picked-model");

    let error = client
        .cx
        .send_request(SetSessionConfigOptionRequest::new(
            sid,
            "temperature",
            "hot",
        ))
        .block_task()
        .await
        .unwrap_err();
    assert_eq!(
        error.message,
        "unknown config option `temperature`; corvid offers `model`"
    );
}

#[tokio::test]
async fn the_model_option_offers_the_models_the_provider_lists_once_the_session_exists() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![answer("Hi.")]).with_models(&[
        "listed-a",
        "scripted-main",
        "listed-b",
    ]);
    let mut client =
        TestClient::start(TestFactory::new(provider.clone()), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    let update = client
        .until(|m| m["params"]["update"]["sessionUpdate"] == "config_option_update")
        .await;
    assert_eq!(update["params"]["sessionId"], sid.as_str());
    let option = &update["params"]["update"]["configOptions"][0];
    assert_eq!(option["currentValue"], "scripted-main");
    let offered: Vec<&str> = option["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(offered, vec!["scripted-main", "listed-a", "listed-b"]);
}

#[tokio::test]
async fn compress_compacts_the_conversation_and_answers_when_the_summary_is_in() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![
        answer("First."),
        answer("Goal: say hello. Files: none."),
        answer("Second."),
    ]);
    let mut client =
        TestClient::start(TestFactory::new(provider.clone()), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "hello").await.unwrap().unwrap();
    let response = client.prompt(&sid, "/compress").await.unwrap().unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    client.drain();
    let texts: Vec<String> = client
        .updates()
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("compacted the conversation")),
        "{texts:?}"
    );
    client.prompt(&sid, "again").await.unwrap().unwrap();
    let requests = provider.requests();
    assert!(
        requests[1].system.starts_with("You summarize"),
        "{}",
        requests[1].system
    );
    // The next turn starts from the summary.
    assert!(requests[2].messages[0].text().contains("Goal: say hello."));
}
