//! corvid's provider key stays out of reach of the commands it runs: `/proc/<corvid>/environ`
//! and `/proc/<corvid>/mem` are closed to them (issue 25, finding 5).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, assert_success, run, stdout, text_turn, turn};
use corvid_testkit::{MockServer, ScriptedResponse};
use serde_json::json;

const KEY: &str = "sk-test-environ-7f3a";

/// Tries to open corvid's (the shell's parent's) environment and memory, printing `READABLE`
/// or `CLOSED` for each; it never prints the key (corvid would redact it anyway).
const PROBE: &str = "for f in environ mem; do \
                     if (exec 3< /proc/$PPID/$f) 2>/dev/null; then echo \"READABLE $f\"; \
                     else echo \"CLOSED $f\"; fi; done";

/// The probe's outcome as the tool result the model got back.
async fn probe(sb: &Sandbox, as_nobody: bool) -> String {
    let server = MockServer::start().await;
    let args = json!({ "command": PROBE }).to_string();
    server.push(ScriptedResponse::sse(turn(
        json!({"tool_calls": [{"index": 0, "id": "call_probe", "type": "function",
               "function": {"name": "run_shell_command", "arguments": args}}]}),
        "tool_calls",
    )));
    server.push(text_turn("done"));
    let mut cmd = sb.against(
        &server,
        KEY,
        &["-y", "-p", "probe", "--output-format", "json"],
    );
    cmd.env("OPENAI_MODEL", "mock-model");
    if as_nobody {
        for dir in [sb.project_dir(), sb.home.path()] {
            std::os::unix::fs::chown(dir, Some(65534), Some(65534)).unwrap();
        }
        cmd.uid(65534).gid(65534);
    }
    let out = run(cmd).await;
    assert_success(&out);
    let requests = server.requests();
    let last = requests.last().expect("corvid sent the tool result back");
    // The tool result, the last message of the request that follows the call.
    let messages = last.body["messages"].as_array().unwrap();
    let result = messages.last().unwrap()["content"].to_string();
    assert!(
        result.contains("CLOSED") || result.contains("READABLE"),
        "{result}\n{}",
        stdout(&out)
    );
    result
}

fn assert_closed(body: &str, what: &str) {
    assert!(
        body.contains("CLOSED environ") && body.contains("CLOSED mem"),
        "{what}: corvid's environment or memory was readable: {body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_is_not_in_corvids_environ() {
    // A sandboxed command, as whoever runs the tests (root included).
    let sandboxed = Sandbox::new();
    assert_closed(&probe(&sandboxed, false).await, "sandboxed command");

    // An unconfined command as whoever runs the tests: as root it has lost the capabilities
    // that read another process's memory.
    let unconfined = Sandbox::new();
    unconfined.user_settings(r#"{"tools": {"sandbox": "off"}}"#);
    assert_closed(&probe(&unconfined, false).await, "unconfined command");

    // And as a user who is not root (CI runs as root, so both cases run there).
    // `/proc/self` belongs to this process's effective user.
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    if root {
        let other_user = Sandbox::new();
        other_user.user_settings(r#"{"tools": {"sandbox": "off"}}"#);
        assert_closed(
            &probe(&other_user, true).await,
            "unconfined command of another user",
        );
    }
}
