//! Slash commands over ACP (issue 14 item 16): advertised after `session/new`, and a prompt
//! starting with one runs it instead of reaching the model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agent_client_protocol::v1::schema::StopReason;
use common::*;
use corvid_protocol::{FinishReason, Message};
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
        .map(|u| u["configOptions"][1]["currentValue"].clone())
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
        serde_json::json!([mode_option("default"), model_option])
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
        serde_json::to_value(&set).unwrap()["configOptions"][1]["currentValue"],
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
        "unknown config option `temperature`; corvid offers `mode`, `model` and `reasoning_effort`"
    );
}

/// The `mode` config option with `current` selected.
fn mode_option(current: &str) -> serde_json::Value {
    serde_json::json!({
        "id": "mode",
        "name": "Mode",
        "description": "How much the agent may do without asking",
        "category": "mode",
        "type": "select",
        "currentValue": current,
        "options": [
            {"value": "default", "name": "Default", "description": "Ask before edits and shell commands"},
            {"value": "auto", "name": "Auto", "description": "Edits and sandboxed shell commands run unasked while undo is on; escalations still ask"},
            {"value": "auto-edit", "name": "Auto edit", "description": "Edit files freely; ask before shell commands"},
            {"value": "yolo", "name": "YOLO", "description": "Never ask"},
            {"value": "plan", "name": "Plan", "description": "Read-only: the agent proposes a plan and asks before it starts working"},
        ],
    })
}

#[tokio::test]
async fn the_mode_option_and_the_legacy_modes_follow_each_other_both_ways() {
    use agent_client_protocol::v1::schema::{SetSessionConfigOptionRequest, SetSessionModeRequest};
    let dir = project();
    let mut client = TestClient::start(
        TestFactory::new(ScriptedProvider::new(vec![])),
        fs_caps(false, false),
    )
    .await;
    let sid = client.new_session(dir.path()).await;
    // Through the option: the answer carries it, and the legacy selector is told.
    let set = client
        .cx
        .send_request(SetSessionConfigOptionRequest::new(
            sid.clone(),
            "mode",
            "plan",
        ))
        .block_task()
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&set).unwrap()["configOptions"][0],
        mode_option("plan")
    );
    let update = client
        .until(|m| m["params"]["update"]["sessionUpdate"] == "current_mode_update")
        .await;
    assert_eq!(update["params"]["update"]["currentModeId"], "plan");
    // Through the legacy method: the option is told.
    client
        .cx
        .send_request(SetSessionModeRequest::new(sid.clone(), "yolo"))
        .block_task()
        .await
        .unwrap();
    let update = client
        .until(|m| m["params"]["update"]["sessionUpdate"] == "config_option_update")
        .await;
    assert_eq!(
        update["params"]["update"]["configOptions"][0],
        mode_option("yolo")
    );
    // A mode corvid does not have is refused by name.
    let error = client
        .cx
        .send_request(SetSessionConfigOptionRequest::new(sid, "mode", "turbo"))
        .block_task()
        .await
        .unwrap_err();
    assert_eq!(
        error.message,
        "unknown mode `turbo`; use default, auto, auto-edit, yolo or plan"
    );
}

/// The values the `model` option of `options` offers.
fn offered_models(options: &serde_json::Value) -> Vec<String> {
    let model = options
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "model")
        .unwrap();
    model["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap().to_owned())
        .collect()
}

/// A server whose provider lists `models`, caching under `home`.
async fn listing_client(models: &[&str], home: &std::path::Path) -> TestClient {
    let provider = ScriptedProvider::new(vec![]).with_models(models);
    let mut factory = TestFactory::new(provider);
    std::sync::Arc::get_mut(&mut factory).unwrap().home = Some(home.to_path_buf());
    TestClient::start(factory, fs_caps(false, false)).await
}

#[tokio::test]
async fn the_first_session_is_answered_with_the_models_the_provider_lists() {
    use agent_client_protocol::v1::schema::NewSessionRequest;
    let dir = project();
    let home = tempfile::tempdir().unwrap();
    let client = listing_client(&["listed-a", "scripted-main", "listed-b"], home.path()).await;
    let session = client
        .cx
        .send_request(NewSessionRequest::new(dir.path()))
        .block_task()
        .await
        .unwrap();
    let options = serde_json::to_value(&session.config_options).unwrap();
    assert_eq!(
        offered_models(&options),
        vec!["scripted-main", "listed-a", "listed-b"]
    );

    // A later server whose provider lists nothing offers the cached list at once.
    let later = listing_client(&[], home.path()).await;
    let session = later
        .cx
        .send_request(NewSessionRequest::new(dir.path()))
        .block_task()
        .await
        .unwrap();
    let options = serde_json::to_value(&session.config_options).unwrap();
    assert_eq!(
        offered_models(&options),
        vec!["scripted-main", "listed-a", "listed-b"]
    );
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
    // Long enough that the summary makes it smaller (a compression that would grow the
    // conversation is refused as not worth it).
    let long_prompt = format!("hello {}", "and some context ".repeat(100));
    client.prompt(&sid, &long_prompt).await.unwrap().unwrap();
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

#[tokio::test]
async fn tasks_lists_the_background_processes_without_calling_the_model() {
    let dir = project();
    let start = vec![
        call(
            "call_bg",
            "run_shell_command",
            serde_json::json!({"command": "exec sleep 300", "run_in_background": true}),
        ),
        finish(FinishReason::ToolCalls),
    ];
    let provider = ScriptedProvider::new(vec![start, answer("Started.")]);
    let mut client =
        TestClient::start(TestFactory::new(provider.clone()), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "start it").await.unwrap().unwrap();
    client.drain();
    let before = client.updates().len();

    let response = client.prompt(&sid, "/tasks").await.unwrap().unwrap();
    client.drain();

    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        client.updates()[before..].to_vec(),
        vec![message(
            "Background processes\nbg-1 running: exec sleep 300"
        )]
    );
    assert_eq!(provider.requests().len(), 2);
}
