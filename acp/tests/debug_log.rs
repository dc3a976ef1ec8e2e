//! With debug logging on, a `session/prompt` carrying fields corvid does not know is logged
//! with their paths (issue 14 item 20). A binary of its own: the log subscriber is global.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::raw::RawClient;
use common::*;
use serde_json::json;

/// A writer the test's log subscriber fills, read back after the prompt.
#[derive(Clone, Default)]
struct LogBuffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn ignored_prompt_fields_are_logged_at_debug_by_name() {
    let logs = LogBuffer::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    // Global, because the server's tasks may also run on the output's writer thread; this
    // test has its own binary, so nothing else logs here.
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let dir = project();
    let provider = ScriptedProvider::new(vec![answer("Fine.")]);
    let mut client = RawClient::start(1 << 16, provider.clone());
    client.initialize().await;
    let sid = client.new_session(1, dir.path()).await;
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
                "sessionId": sid,
                "prompt": [{"type": "text", "text": "hi", "futureField": 7}],
                "futureOption": {"nested": true},
            }}),
        )
        .await;
    assert_eq!(
        client.response(2).await["result"]["stopReason"],
        json!("end_turn")
    );
    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let line = logged
        .lines()
        .find(|l| l.contains("ignored request fields"))
        .unwrap_or_else(|| panic!("no ignored-fields line in the log:\n{logged}"));
    assert!(line.contains("DEBUG"), "{line}");
    assert!(line.contains("session/prompt"), "{line}");
    assert!(
        line.contains(r#"["futureOption", "prompt[0].futureField"]"#),
        "{line}"
    );
}
