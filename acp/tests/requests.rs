//! corvid's ACP server driven in-process by a client built with the same crate, over a
//! duplex pipe, with a real core and a scripted provider: initialization, permissions, modes,
//! the client's file system, prompt content and errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    InitializeRequest, NewSessionRequest, SetSessionModeRequest,
};
use common::*;
use corvid_protocol::{ApprovalMode, FinishReason, Part};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

#[tokio::test]
async fn initialize_and_new_session_advertise_corvid_and_its_modes() {
    let provider = ScriptedProvider::new(vec![]);
    let client = TestClient::start(TestFactory::new(provider), fs_caps(false, false)).await;
    let init = client
        .cx
        .send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
        .unwrap();
    let init = serde_json::to_value(init).unwrap();
    assert_eq!(init["agentInfo"]["name"], json!("corvid"));
    assert_eq!(init["agentCapabilities"]["loadSession"], json!(true));
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
        json!(true)
    );
    let dir = project();
    let session = client
        .cx
        .send_request(NewSessionRequest::new(dir.path()))
        .block_task()
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&session.modes).unwrap(),
        json!({
            "currentModeId": "default",
            "availableModes": [
                {"id": "default", "name": "Default", "description": "Ask before edits and shell commands"},
                {"id": "auto", "name": "Auto", "description": "Edits and sandboxed shell commands run unasked while undo is on; escalations still ask"},
                {"id": "auto-edit", "name": "Auto edit", "description": "Edit files freely; ask before shell commands"},
                {"id": "yolo", "name": "YOLO", "description": "Never ask"},
                {"id": "plan", "name": "Plan", "description": "Read-only: the agent proposes a plan and asks before it starts working"},
            ],
        })
    );
}

#[tokio::test]
async fn a_granted_permission_runs_the_edit_and_shows_its_diff() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![write_b_script("call_w"), answer("Written.")]);
    let mut client = TestClient::start(TestFactory::new(provider), fs_caps(false, false)).await;
    client.set_policy(PermissionPolicy::Select("allow_once"));
    let sid = client.new_session(dir.path()).await;
    let response = client.prompt(&sid, "write b").await.unwrap().unwrap();
    client.drain();

    let b = abs(dir.path(), "b.txt");
    let permission = client
        .permission_requests()
        .into_iter()
        .next()
        .expect("a permission request")
        .clone();
    assert_eq!(
        permission["params"]["toolCall"],
        json!({
            "toolCallId": "call_w",
            "title": "Write b.txt",
            "kind": "edit",
            "locations": [{"path": b}],
            "rawInput": {"file_path": "b.txt", "content": "new\n"},
            "content": [{"type": "diff", "path": b, "newText": "new\n"}],
            "_meta": {"toolName": "write_file", "alwaysScope": "b.txt"},
        })
    );
    let cards = client.cards();
    assert_eq!(
        cards[..2],
        [
            preparing_frame("call_w", "write_file", "WriteFile", "edit"),
            json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call_w",
                "status": "in_progress",
                "title": "Write b.txt",
                "kind": "edit",
                "locations": [{"path": b}],
                "rawInput": {"file_path": "b.txt", "content": "new\n"},
                "_meta": {"toolName": "write_file", "provenance": "builtin"},
            }),
        ]
    );
    assert_eq!(cards[2]["status"], json!("completed"));
    assert_eq!(
        cards[2]["content"],
        json!([{"type": "diff", "path": b, "newText": "new\n"}])
    );
    assert_eq!(cards.len(), 3);
    assert_eq!(std::fs::read_to_string(&b).unwrap(), "new\n");
    assert_eq!(
        response.stop_reason,
        agent_client_protocol::v1::schema::StopReason::EndTurn
    );
    client.assert_no_card_left_pending();
}

/// Checks that the `write_file b.txt` card `call_w` went from preparing straight to failed and
/// that b.txt was never written; returns the failed update.
fn assert_write_b_failed_without_running(client: &TestClient, dir: &std::path::Path) -> Value {
    let cards = client.cards();
    assert_eq!(cards.len(), 2, "{cards:#?}");
    assert_eq!(
        cards[0],
        preparing_frame("call_w", "write_file", "WriteFile", "edit")
    );
    assert_eq!(cards[1]["status"], json!("failed"));
    assert!(!dir.join("b.txt").exists());
    client.assert_no_card_left_pending();
    cards[1].clone()
}

#[tokio::test]
async fn a_rejected_permission_fails_the_card_without_running() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![write_b_script("call_w"), answer("Understood.")]);
    let mut client =
        TestClient::start(TestFactory::new(provider.clone()), fs_caps(false, false)).await;
    client.set_policy(PermissionPolicy::Select("reject_once"));
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "write b").await.unwrap().unwrap();
    client.drain();

    let failed = assert_write_b_failed_without_running(&client, dir.path());
    let why = failed["content"][0]["content"]["text"].as_str().unwrap();
    assert!(why.contains("rejected"), "{why}");
}

#[tokio::test]
async fn a_cancelled_permission_outcome_cancels_the_turn_without_asking_the_model_again() {
    let dir = project();
    // The answer is there only to be taken if the model were wrongly asked again.
    let provider = ScriptedProvider::new(vec![write_b_script("call_w"), answer("Again.")]);
    let mut client =
        TestClient::start(TestFactory::new(provider.clone()), fs_caps(false, false)).await;
    client.set_policy(PermissionPolicy::Cancelled);
    let sid = client.new_session(dir.path()).await;
    let response = client.prompt(&sid, "write b").await.unwrap().unwrap();
    client.drain();

    assert_eq!(
        response.stop_reason,
        agent_client_protocol::v1::schema::StopReason::Cancelled
    );
    assert_eq!(provider.requests().len(), 1);
    assert_write_b_failed_without_running(&client, dir.path());
}

#[tokio::test]
async fn a_cancel_abandons_the_pending_permission_request() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![write_b_script("call_w")]);
    let mut client = TestClient::start(TestFactory::new(provider), fs_caps(false, false)).await;
    client.set_policy(PermissionPolicy::Hold);
    let sid = client.new_session(dir.path()).await;
    let prompt = client.prompt(&sid, "write b");
    client
        .until(|m| m["request"] == "session/request_permission")
        .await;
    client.cancel(&sid);
    let response = prompt.await.unwrap().unwrap();
    assert_eq!(
        response.stop_reason,
        agent_client_protocol::v1::schema::StopReason::Cancelled
    );
    client
        .until(|m| m["abandoned"] == "session/request_permission")
        .await;
    client.drain();
    assert_write_b_failed_without_running(&client, dir.path());
}

#[tokio::test]
async fn file_tools_go_through_the_editor_when_it_offers_fs() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![
        read_a_script("call_r"),
        vec![
            call(
                "call_w",
                "write_file",
                json!({"file_path": "c.txt", "content": "edited\n"}),
            ),
            finish(FinishReason::ToolCalls),
        ],
        answer("Done."),
    ]);
    let mut factory = TestFactory::new(provider.clone());
    std::sync::Arc::get_mut(&mut factory).unwrap().mode = ApprovalMode::Yolo;
    let mut client = TestClient::start(factory, fs_caps(true, true)).await;
    let a = dir.path().join("a.txt");
    client
        .files
        .lock()
        .unwrap()
        .insert(a.clone(), "unsaved buffer text\n".into());
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "edit").await.unwrap().unwrap();
    client.drain();

    let fs_requests: Vec<Value> = client
        .seen
        .iter()
        .filter(|m| m["request"].as_str().is_some_and(|r| r.starts_with("fs/")))
        .map(|m| json!({"request": m["request"], "path": m["params"]["path"]}))
        .collect();
    let c = abs(dir.path(), "c.txt");
    assert!(
        fs_requests
            .contains(&json!({"request": "fs/read_text_file", "path": abs(dir.path(), "a.txt")})),
        "{fs_requests:#?}"
    );
    assert!(
        fs_requests.contains(&json!({"request": "fs/write_text_file", "path": c})),
        "{fs_requests:#?}"
    );
    assert_eq!(
        client.files.lock().unwrap().get(&dir.path().join("c.txt")),
        Some(&"edited\n".to_owned())
    );
    assert!(
        !dir.path().join("c.txt").exists(),
        "the disk must stay untouched"
    );
    let second = &provider.requests()[1];
    let seen_by_model: String = second
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some(r.output.clone()),
            _ => None,
        })
        .collect();
    assert!(
        seen_by_model.contains("unsaved buffer text"),
        "{seen_by_model}"
    );
    client.assert_no_card_left_pending();
}

#[tokio::test]
async fn yolo_mode_set_by_the_client_skips_the_permission_prompt() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![
        vec![write_b("call_w"), finish(FinishReason::ToolCalls)],
        answer("Written."),
    ]);
    let mut client = TestClient::start(TestFactory::new(provider), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    client
        .cx
        .send_request(SetSessionModeRequest::new(sid.clone(), "yolo"))
        .block_task()
        .await
        .unwrap();
    client.prompt(&sid, "write b").await.unwrap().unwrap();
    client.drain();
    assert!(client.permission_requests().is_empty());
    let cards = client.cards();
    assert_eq!(cards[0]["sessionUpdate"], json!("tool_call"));
    assert_eq!(cards[0]["status"], json!("in_progress"));
    assert_eq!(cards[1]["status"], json!("completed"));
    client.assert_no_card_left_pending();
}

#[tokio::test]
async fn resource_links_and_embedded_resources_reach_the_model_as_context() {
    use agent_client_protocol::v1::schema::{
        ContentBlock, EmbeddedResource, EmbeddedResourceResource, PromptRequest, ResourceLink,
        TextResourceContents,
    };
    let dir = project();
    let provider = ScriptedProvider::new(vec![answer("Seen.")]);
    let client = TestClient::start(TestFactory::new(provider.clone()), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    let a = abs(dir.path(), "a.txt");
    let prompt = vec![
        ContentBlock::from("Explain these".to_owned()),
        ContentBlock::ResourceLink(ResourceLink::new("a.txt", format!("file://{a}"))),
        ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                "fn main() {}",
                "file:///work/p/main.rs",
            )),
        )),
    ];
    client
        .cx
        .send_request(PromptRequest::new(sid, prompt))
        .block_task()
        .await
        .unwrap();
    let sent = provider.requests()[0].messages.last().unwrap().text();
    assert_eq!(
        sent,
        format!(
            "Explain these\n<context ref=\"{a}\">\nhello\n\n</context>\n<context ref=\"/work/p/main.rs\">\nfn main() {{}}\n</context>"
        )
    );
}

#[tokio::test]
async fn without_a_provider_authenticate_and_session_new_say_what_to_set() {
    struct NoProvider;
    impl corvid_acp::AgentFactory for NoProvider {
        fn check_provider(&self) -> Result<(), corvid_acp::FactoryError> {
            Err(corvid_acp::FactoryError::NoProvider(
                "no model provider: set OPENAI_API_KEY or ANTHROPIC_API_KEY".into(),
            ))
        }
        fn build(
            &self,
            _spec: corvid_acp::SessionSpec,
        ) -> Result<corvid_core::agent::AgentConfig, corvid_acp::FactoryError> {
            Err(self.check_provider().unwrap_err())
        }
        fn session_store(&self) -> Option<corvid_core::session::SessionStore> {
            None
        }
    }
    let client = TestClient::start(std::sync::Arc::new(NoProvider), fs_caps(false, false)).await;
    let auth = client
        .cx
        .send_request(agent_client_protocol::v1::schema::AuthenticateRequest::new(
            "corvid-provider",
        ))
        .block_task()
        .await
        .unwrap_err();
    let dir = project();
    let new = client
        .cx
        .send_request(NewSessionRequest::new(dir.path()))
        .block_task()
        .await
        .unwrap_err();
    for error in [auth, new] {
        assert_eq!(error.code, agent_client_protocol::ErrorCode::AUTH_REQUIRED);
        assert_eq!(
            error.message,
            "no model provider: set OPENAI_API_KEY or ANTHROPIC_API_KEY"
        );
    }
}

#[tokio::test]
async fn allow_always_is_remembered_for_its_scope_for_the_rest_of_the_session() {
    let dir = project();
    let write = |id: &str, file: &str| {
        vec![
            call(
                id,
                "write_file",
                json!({"file_path": file, "content": "x\n"}),
            ),
            finish(FinishReason::ToolCalls),
        ]
    };
    let provider = ScriptedProvider::new(vec![
        write("w1", "b.txt"),
        write("w2", "b.txt"),
        write("w3", "c.txt"),
        answer("All written."),
    ]);
    let mut client = TestClient::start(TestFactory::new(provider), fs_caps(false, false)).await;
    client.set_policy(PermissionPolicy::Select("allow_always"));
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "write both").await.unwrap().unwrap();
    client.drain();

    // "Always" covered b.txt, what its option said; c.txt was asked again.
    let asked: Vec<(Value, Value)> = client
        .permission_requests()
        .into_iter()
        .map(|m| {
            (
                m["params"]["toolCall"]["toolCallId"].clone(),
                m["params"]["options"][1]["name"].clone(),
            )
        })
        .collect();
    assert_eq!(
        asked,
        vec![
            (json!("w1"), json!("Always allow `b.txt`")),
            (json!("w3"), json!("Always allow `c.txt`")),
        ]
    );
    assert!(dir.path().join("b.txt").exists() && dir.path().join("c.txt").exists());
    client.assert_no_card_left_pending();
}
