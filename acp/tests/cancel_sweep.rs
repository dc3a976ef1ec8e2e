//! Cancels one task at every point of its frame stream, in-process, and checks the card
//! invariants of SPEC §5.2 at the ACP level after each run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agent_client_protocol::v1::schema::StopReason;
use common::*;
use corvid_protocol::FinishReason;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn scripts() -> Vec<Vec<Step>> {
    vec![
        vec![
            text("Looking."),
            preparing("c1", "read_file"),
            preparing("c2", "list_directory"),
            call("c1", "read_file", json!({"file_path": "a.txt"})),
            call("c2", "list_directory", json!({"path": "."})),
            finish(FinishReason::ToolCalls),
        ],
        vec![
            preparing("c3", "write_file"),
            call(
                "c3",
                "write_file",
                json!({"file_path": "b.txt", "content": "x\n"}),
            ),
            finish(FinishReason::ToolCalls),
        ],
        answer("Done."),
    ]
}

/// Runs the task, cancelling after `cancel_after` received messages (never, if `None`).
async fn run(cancel_after: Option<usize>) -> (TestClient, StopReason) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    let provider = ScriptedProvider::new(scripts());
    let mut client = TestClient::start(TestFactory::new(provider), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    let prompt = client.prompt(&sid, "go");
    if let Some(n) = cancel_after {
        for _ in 0..n {
            client.next().await;
        }
        client.cancel(&sid);
    }
    let response = prompt.await.unwrap().unwrap();
    client.drain();
    (client, response.stop_reason)
}

/// SPEC §5.2 as seen by an ACP client.
fn assert_card_invariants(cards: &[Value]) {
    let mut ids: Vec<&str> = cards
        .iter()
        .map(|c| c["toolCallId"].as_str().unwrap())
        .collect();
    ids.dedup();
    for id in ids {
        let frames: Vec<&Value> = cards.iter().filter(|c| c["toolCallId"] == id).collect();
        let statuses: Vec<&str> = frames
            .iter()
            .map(|f| f["status"].as_str().unwrap_or(""))
            .collect();
        let pending = statuses.iter().filter(|s| **s == "pending").count();
        assert!(
            pending <= 1,
            "{id}: more than one preparing card: {statuses:?}"
        );
        let last = *statuses.last().unwrap();
        assert!(
            last == "completed" || last == "failed",
            "{id} left open: {statuses:?}"
        );
        let terminal = statuses
            .iter()
            .filter(|s| **s == "completed" || **s == "failed")
            .count();
        assert_eq!(
            terminal, 1,
            "{id}: not exactly one terminal state: {statuses:?}"
        );
        let discarded = frames
            .iter()
            .any(|f| f["_meta"]["preparationDiscarded"] == json!(true));
        if discarded {
            assert!(
                !statuses.contains(&"in_progress"),
                "{id}: discarded after it went in_progress: {statuses:?}"
            );
        }
        if let Some(started) = frames.iter().find(|f| f["status"] == "in_progress") {
            assert!(
                started["rawInput"]
                    .as_object()
                    .is_some_and(|o| !o.is_empty()),
                "{id}: in_progress without complete arguments: {started}"
            );
        }
    }
}

#[tokio::test]
async fn a_cancel_at_any_point_leaves_every_card_settled() {
    let (full, stop) = run(None).await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_card_invariants(&full.cards());
    let total = full.seen.len();
    assert!(total > 8, "{:#?}", full.seen);
    for k in 0..=total {
        let (client, stop) = run(Some(k)).await;
        assert!(
            matches!(stop, StopReason::Cancelled | StopReason::EndTurn),
            "cancel after {k}: {stop:?}"
        );
        assert_card_invariants(&client.cards());
    }
}
