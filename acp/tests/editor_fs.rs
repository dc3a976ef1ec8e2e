//! Files through the editor's `fs/*` (issue 14 defect 1): whether a file exists is decided
//! from the local disk, never from how the client words its read error.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

#[tokio::test]
async fn a_new_file_is_created_through_the_editor_after_asking_with_a_diff_from_empty() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![write_b_script("call_w"), answer("Written.")]);
    let mut client = TestClient::start(TestFactory::new(provider), fs_caps(true, true)).await;
    let sid = client.new_session(dir.path()).await;
    let response = client.prompt(&sid, "write b").await.unwrap().unwrap();
    client.drain();

    let b = abs(dir.path(), "b.txt");
    let requests: Vec<Value> = client
        .seen
        .iter()
        .filter(|m| m["request"].is_string())
        .map(|m| m["request"].clone())
        .collect();
    // Read (missing), ask, then write once; execution may read again before writing.
    let mut asked_then_wrote = requests.clone();
    asked_then_wrote.dedup();
    asked_then_wrote.retain(|r| r != "fs/read_text_file");
    assert_eq!(requests[0], json!("fs/read_text_file"), "{requests:?}");
    assert_eq!(
        asked_then_wrote,
        vec![
            json!("session/request_permission"),
            json!("fs/write_text_file"),
        ],
        "{requests:?}"
    );
    let permission = client.permission_requests()[0].clone();
    assert_eq!(
        permission["params"]["toolCall"]["content"],
        json!([{"type": "diff", "path": b, "newText": "new\n"}])
    );
    assert_eq!(
        client.files.lock().unwrap().get(&dir.path().join("b.txt")),
        Some(&"new\n".to_owned())
    );
    assert_eq!(client.cards().last().unwrap()["status"], json!("completed"));
    assert_eq!(
        response.stop_reason,
        agent_client_protocol::v1::schema::StopReason::EndTurn
    );
}

#[tokio::test]
async fn a_client_read_error_on_a_file_that_exists_locally_is_not_taken_for_a_new_file() {
    let dir = project();
    // a.txt exists on disk, but the editor's read fails: overwriting it unseen would lose it.
    let provider = ScriptedProvider::new(vec![
        vec![
            call(
                "call_w",
                "write_file",
                json!({"file_path": "a.txt", "content": "new\n"}),
            ),
            finish(corvid_protocol::FinishReason::ToolCalls),
        ],
        answer("Could not."),
    ]);
    let mut client = TestClient::start(TestFactory::new(provider), fs_caps(true, true)).await;
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "write a").await.unwrap().unwrap();
    client.drain();

    assert_eq!(client.permission_requests().len(), 0);
    let last = client.cards().last().unwrap().clone();
    assert_eq!(last["status"], json!("failed"));
    assert!(
        last["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("the editor refused the file operation: Internal error"),
        "{last:#}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "hello\n"
    );
}
