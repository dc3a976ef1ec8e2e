//! `session/list` (issue 14 item 17): the recorded sessions of a working directory.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{InitializeRequest, ListSessionsRequest};
use common::*;
use corvid_core::session::SessionStore;
use corvid_protocol::ApprovalMode;
use pretty_assertions::assert_eq;
use serde_json::json;

#[tokio::test]
async fn session_list_shows_the_recorded_sessions_of_the_cwd_newest_first() {
    let home = tempfile::tempdir().unwrap();
    let dir = project();
    let other = project();
    let provider =
        ScriptedProvider::new(vec![answer("One."), answer("Two."), answer("Elsewhere.")]);
    let factory = Arc::new(TestFactory {
        provider,
        summaries: false,
        mode: ApprovalMode::Default,
        store: Some(SessionStore::new(home.path())),
        home: None,
        real: None,
    });
    let client = TestClient::start(factory, fs_caps(false, false)).await;
    let init = client
        .cx
        .send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(init).unwrap()["agentCapabilities"]["sessionCapabilities"],
        json!({"list": {}, "resume": {}})
    );
    let first = client.new_session(dir.path()).await;
    client
        .prompt(&first, "first task\nwith details")
        .await
        .unwrap()
        .unwrap();
    let second = client.new_session(dir.path()).await;
    client
        .prompt(&second, "second task")
        .await
        .unwrap()
        .unwrap();
    let elsewhere = client.new_session(other.path()).await;
    client
        .prompt(&elsewhere, "not here")
        .await
        .unwrap()
        .unwrap();
    // Opened and left without a prompt: nothing to go back to.
    client.new_session(dir.path()).await;

    let listed_whole = client
        .cx
        .send_request(ListSessionsRequest::new().cwd(dir.path().to_path_buf()))
        .block_task()
        .await
        .unwrap();
    let listed: Vec<_> = serde_json::to_value(&listed_whole).unwrap()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["sessionId"].clone(), s["cwd"].clone(), s["title"].clone()))
        .collect();
    // Every entry says when it last changed, as ISO 8601 in UTC.
    let updated = serde_json::to_value(&listed_whole).unwrap()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["updatedAt"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>();
    assert_eq!(updated.len(), 2);
    for at in &updated {
        // `YYYY-MM-DDTHH:MM:SSZ`
        assert!(
            at.len() == 20 && at.as_bytes()[10] == b'T' && at.ends_with('Z'),
            "{updated:?}"
        );
    }
    // Newest first, as the store orders them; the session of another folder is not listed.
    let cwd = json!(dir.path());
    let titles = [
        (first.clone(), "first task"),
        (second.clone(), "second task"),
    ];
    let expected: Vec<_> = SessionStore::new(home.path())
        .list(dir.path())
        .unwrap()
        .into_iter()
        .map(|s| {
            let title = titles.iter().find(|(id, _)| *id == s.id).unwrap().1;
            (json!(s.id), cwd.clone(), json!(title))
        })
        .collect();
    assert_eq!(expected.len(), 2);
    assert_eq!(listed, expected);
}

#[tokio::test]
async fn session_list_with_a_relative_cwd_is_an_error_naming_it() {
    let client = TestClient::start(
        TestFactory::new(ScriptedProvider::new(vec![])),
        fs_caps(false, false),
    )
    .await;
    let error = client
        .cx
        .send_request(ListSessionsRequest::new().cwd(std::path::PathBuf::from("rel/dir")))
        .block_task()
        .await
        .unwrap_err();
    assert_eq!(
        (error.code, error.message),
        (
            agent_client_protocol::ErrorCode::INVALID_PARAMS,
            "cwd must be an absolute path, got `rel/dir`".to_owned()
        )
    );
}

#[tokio::test]
async fn session_list_titles_a_session_by_its_recorded_title_over_its_first_prompt() {
    use corvid_core::session::Record;
    let home = tempfile::tempdir().unwrap();
    let dir = project();
    let cwd = dir.path().canonicalize().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = store.create(&cwd, "titled", "demo").unwrap();
    for record in [
        Record::Message {
            message: corvid_protocol::Message::user_text("the parser test fails now and then"),
        },
        Record::Title {
            title: "Fix the flaky parser test".into(),
        },
    ] {
        recorder.append(&record).unwrap();
    }
    drop(recorder);
    let factory = Arc::new(TestFactory {
        provider: ScriptedProvider::new(Vec::new()),
        summaries: false,
        mode: ApprovalMode::Default,
        store: Some(SessionStore::new(home.path())),
        home: None,
        real: None,
    });
    let client = TestClient::start(factory, fs_caps(false, false)).await;
    client
        .cx
        .send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
        .unwrap();
    let listed = client
        .cx
        .send_request(ListSessionsRequest::new().cwd(cwd))
        .block_task()
        .await
        .unwrap();
    let listed = serde_json::to_value(&listed).unwrap();
    assert_eq!(
        listed["sessions"][0]["title"],
        json!("Fix the flaky parser test")
    );
}
