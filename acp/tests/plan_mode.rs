//! Plan mode over ACP (issue 14 item 17): `plan` is an advertised session mode; in it a write
//! is refused without running, and `exit_plan_mode` shows the plan as a `plan` update, asks
//! with the plan choices, and on a yes the client hears `current_mode_update`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agent_client_protocol::v1::schema::{NewSessionRequest, SetSessionModeRequest, StopReason};
use common::*;
use corvid_protocol::FinishReason;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn one_call(id: &str, tool: &str, args: Value) -> Vec<Step> {
    vec![call(id, tool, args), finish(FinishReason::ToolCalls)]
}

#[tokio::test]
async fn plan_mode_refuses_the_write_shows_the_plan_and_leaving_it_updates_the_mode() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![
        one_call(
            "w1",
            "write_file",
            json!({"file_path": "b.txt", "content": "x"}),
        ),
        one_call(
            "x1",
            "exit_plan_mode",
            json!({"plan": "# Plan\n1. Write `b.txt`\n2. Run the tests"}),
        ),
        answer("done"),
    ]);
    let mut client = TestClient::start(TestFactory::new(provider), fs_caps(false, false)).await;
    let created = client
        .cx
        .send_request(NewSessionRequest::new(dir.path()))
        .block_task()
        .await
        .unwrap();
    let modes = serde_json::to_value(created.modes.unwrap()).unwrap();
    let ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["default", "auto", "auto-edit", "yolo", "plan"]);
    let sid = created.session_id.0.to_string();
    client
        .cx
        .send_request(SetSessionModeRequest::new(sid.clone(), "plan"))
        .block_task()
        .await
        .unwrap();
    client.set_policy(PermissionPolicy::Select("allow_once"));

    let answer = client.prompt(&sid, "add b.txt").await.unwrap().unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    client.drain();
    assert!(!dir.path().join("b.txt").exists());

    let updates = client.updates();
    let refused = updates
        .iter()
        .find(|u| u["toolCallId"] == "w1" && u["status"] == "failed")
        .expect("the write's card fails");
    assert!(
        refused["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .starts_with("plan mode: this session only plans"),
        "{refused}"
    );
    let plans: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "plan")
        .collect();
    assert_eq!(
        plans,
        vec![&json!({"sessionUpdate": "plan", "entries": [
            {"content": "Write `b.txt`", "priority": "medium", "status": "pending"},
            {"content": "Run the tests", "priority": "medium", "status": "pending"},
        ]})]
    );
    let asks = client.permission_requests();
    assert_eq!(asks.len(), 1, "only exit_plan_mode asks: {asks:?}");
    let options: Vec<(&str, &str)> = asks[0]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["optionId"].as_str().unwrap(), o["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        options,
        vec![
            ("allow_always", "Yes, and auto-accept edits"),
            ("allow_once", "Yes"),
            ("reject_once", "No, keep planning"),
        ]
    );
    let mode_updates: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "current_mode_update")
        .collect();
    assert_eq!(
        mode_updates,
        vec![&json!({"sessionUpdate": "current_mode_update", "currentModeId": "default"})]
    );
    client.close().await;
}
