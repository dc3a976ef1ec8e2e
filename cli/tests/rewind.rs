//! `corvid rewind` and `corvid checkpoints` end to end (issue 26): the real binary, a
//! headless session against the loopback model whose shell command changes the project,
//! then the rewind with each of its exit codes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, assert_success, chunk, run, stderr, stdout, text_turn, usage_chunk};
use corvid_testkit::{MockServer, ScriptedResponse, sse_event};
use serde_json::{Value, json};

/// A turn that runs `command` in the shell.
fn shell_turn(id: &str, command: &str) -> ScriptedResponse {
    let args = json!({ "command": command }).to_string();
    ScriptedResponse::sse(vec![
        chunk(
            json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
                   "function": {"name": "run_shell_command", "arguments": args}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(),
        sse_event("[DONE]"),
    ])
}

/// A headless session whose one turn runs `command`; returns the server for later turns.
async fn session_running(sb: &Sandbox, command: &str) -> MockServer {
    let server = MockServer::start().await;
    server.push(shell_turn("sh_1", command));
    server.push(text_turn("Done."));
    let mut cmd = sb.against(&server, "sk-test", &["-p", "change the readme", "--yolo"]);
    cmd.env("OPENAI_MODEL", "mock-model");
    assert_success(&run(cmd).await);
    server
}

fn readme(sb: &Sandbox) -> String {
    std::fs::read_to_string(sb.project.path().join("README.md")).unwrap()
}

const ORIGINAL: &str = "# Sample project\n\nHello.\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_dry_run_previews_then_yes_restores_what_a_shell_command_changed() {
    let sb = Sandbox::new();
    session_running(&sb, "sed -i 's/Hello/Bye/' README.md && touch made.txt").await;
    assert!(readme(&sb).contains("Bye"));

    let out = run(sb.corvid(&["rewind", "--dry-run"])).await;
    assert_success(&out);
    let text = stdout(&out);
    assert!(
        text.contains("README.md") && text.contains("made.txt"),
        "{text}"
    );
    assert!(
        text.contains("git commits"),
        "the preview says what is not undone: {text}"
    );
    assert!(readme(&sb).contains("Bye"), "a dry run changes nothing");

    let out = run(sb.corvid(&["rewind", "--last", "--yes", "--output-format", "json"])).await;
    assert_success(&out);
    let value: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(value["status"], "done");
    assert_eq!(readme(&sb), ORIGINAL);
    assert!(!sb.project.path().join("made.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_stops_the_rewind_with_exit_code_3_and_keeps_the_users_edit() {
    let sb = Sandbox::new();
    session_running(&sb, "sed -i 's/Hello/Bye/' README.md && printf x > main.rs").await;
    std::fs::write(sb.project.path().join("README.md"), "my own edit\n").unwrap();

    let out = run(sb.corvid(&["rewind", "--yes"])).await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stdout(&out).contains("CONFLICT"), "{}", stdout(&out));
    assert_eq!(readme(&sb), "my own edit\n");
    assert_eq!(
        std::fs::read_to_string(sb.project.path().join("main.rs")).unwrap(),
        "x",
        "nothing is restored when conflicts stop the rewind"
    );

    let out = run(sb.corvid(&["rewind", "--yes", "--keep-conflicts"])).await;
    assert_success(&out);
    assert_eq!(readme(&sb), "my own edit\n");
    assert_eq!(
        std::fs::read_to_string(sb.project.path().join("main.rs")).unwrap(),
        "fn main() {}\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_rewind_arguments_exit_with_code_2() {
    let sb = Sandbox::new();
    session_running(&sb, "true").await;
    for args in [
        vec!["rewind", "--turn", "99", "--yes"],
        vec!["rewind", "--code", "--conversation"],
        vec!["rewind", "--session", "no-such-session", "--yes"],
        vec!["rewind", "--turn", "1", "--last"],
    ] {
        let out = run(sb.corvid(&args)).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewound_conversation_is_what_continue_sends_next() {
    let sb = Sandbox::new();
    let server = session_running(&sb, "sed -i 's/Hello/Bye/' README.md").await;
    let out = run(sb.corvid(&["rewind", "--yes"])).await;
    assert_success(&out);
    assert_eq!(readme(&sb), ORIGINAL);

    server.push(text_turn("Fresh start."));
    let mut cmd = sb.against(&server, "sk-test", &["--continue", "-p", "again"]);
    cmd.env("OPENAI_MODEL", "mock-model");
    assert_success(&run(cmd).await);
    let requests = server.requests();
    let last = &requests.last().unwrap().body;
    let body = last.to_string();
    assert!(body.contains("again"), "{body}");
    assert!(
        !body.contains("change the readme"),
        "the undone turn is no longer sent: {body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_list_and_prune_show_and_free_the_store() {
    let sb = Sandbox::new();
    session_running(&sb, "printf more >> README.md").await;
    let out = run(sb.corvid(&["checkpoints", "list"])).await;
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains("1 undoable turn"), "{text}");
    let out = run(sb.corvid(&["checkpoints", "prune", "--max-bytes", "0"])).await;
    assert_success(&out);
    assert!(stdout(&out).contains("removed"), "{}", stdout(&out));
}

/// One more headless turn of the latest session (`extra` picks it: `--continue`, or
/// `--resume ID --fork`), whose model runs `command`.
async fn next_turn(sb: &Sandbox, server: &MockServer, extra: &[&str], command: &str) {
    server.push(shell_turn("sh_n", command));
    server.push(text_turn("Done."));
    let mut args = extra.to_vec();
    args.extend(["-p", "go on", "--yolo"]);
    let mut cmd = sb.against(server, "sk-test", &args);
    cmd.env("OPENAI_MODEL", "mock-model");
    assert_success(&run(cmd).await);
}

/// The recorded sessions' ids, oldest first.
async fn session_ids(sb: &Sandbox) -> Vec<String> {
    let out = run(sb.corvid(&["sessions", "list", "--output-format", "json"])).await;
    assert_success(&out);
    let listed: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let mut ids: Vec<String> = listed
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    ids.reverse();
    ids
}

fn exists(sb: &Sandbox, name: &str) -> bool {
    sb.project.path().join(name).exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_goes_on_with_its_checkpoints_and_can_rewind_a_turn_from_before_the_resume()
 {
    let sb = Sandbox::new();
    let server = session_running(&sb, "printf 1 > one.txt").await;
    next_turn(&sb, &server, &["--continue"], "printf 2 > two.txt").await;
    let ids = session_ids(&sb).await;
    assert_eq!(ids.len(), 1, "{ids:?}");

    let out = run(sb.corvid(&["checkpoints", "list"])).await;
    assert_success(&out);
    let text = stdout(&out);
    assert!(
        text.contains(&format!("session {}: 2 undoable turn(s)", ids[0])),
        "{text}"
    );
    assert_eq!(text.matches("session ").count(), 1, "one journal: {text}");

    let out = run(sb.corvid(&["rewind", "--turn", "1", "--code", "--yes"])).await;
    assert_success(&out);
    assert!(!exists(&sb, "one.txt") && !exists(&sb, "two.txt"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_inherits_its_parents_turns_and_can_undo_them_while_the_parent_keeps_its_own() {
    let sb = Sandbox::new();
    let server = session_running(&sb, "printf 1 > one.txt").await;
    let parent = session_ids(&sb).await.remove(0);
    next_turn(
        &sb,
        &server,
        &["--resume", &parent, "--fork"],
        "printf 3 > three.txt",
    )
    .await;
    let ids = session_ids(&sb).await;
    let fork = ids.iter().find(|id| **id != parent).unwrap().clone();

    let out = run(sb.corvid(&["checkpoints", "list"])).await;
    let text = stdout(&out);
    assert!(
        text.contains(&format!("session {parent}: 1 undoable turn(s)")),
        "{text}"
    );
    assert!(
        text.contains(&format!("session {fork}: 2 undoable turn(s)")),
        "the fork counts on from its parent's turns: {text}"
    );

    let out = run(sb.corvid(&[
        "rewind",
        "--session",
        &fork,
        "--turn",
        "1",
        "--code",
        "--yes",
    ]))
    .await;
    assert_success(&out);
    assert!(!exists(&sb, "one.txt") && !exists(&sb, "three.txt"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_delete_removes_the_recording_and_its_checkpoints_after_a_yes() {
    let sb = Sandbox::new();
    session_running(&sb, "printf 1 > one.txt").await;
    let id = session_ids(&sb).await.remove(0);
    for (args, says) in [
        (vec!["sessions", "delete", &id], "pass --yes"),
        (
            vec!["sessions", "delete", "../x", "--yes"],
            "not a session id",
        ),
        (
            vec!["sessions", "delete", "no-such", "--yes"],
            "no session no-such",
        ),
        (
            vec!["sessions", "delete", &id[..4], "--yes"],
            "pass the full id",
        ),
    ] {
        let out = run(sb.corvid(&args)).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(
        session_ids(&sb).await,
        vec![id.clone()],
        "nothing was deleted"
    );

    let out = run(sb.corvid(&["sessions", "delete", &id, "--yes"])).await;
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains(&format!("Deleted session {id}")), "{text}");
    assert!(
        text.contains("1 session(s) whose recording is gone"),
        "{text}"
    );
    assert!(session_ids(&sb).await.is_empty());
    let out = run(sb.corvid(&["checkpoints", "list"])).await;
    assert!(!stdout(&out).contains(&id), "{}", stdout(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_whose_recording_was_removed_by_hand_is_listed_orphaned_and_pruned() {
    let sb = Sandbox::new();
    session_running(&sb, "printf 1 > one.txt").await;
    let id = session_ids(&sb).await.remove(0);
    let out = run(sb.corvid(&["sessions", "list", "--output-format", "json"])).await;
    let listed: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    std::fs::remove_file(listed[0]["path"].as_str().unwrap()).unwrap();

    let out = run(sb.corvid(&["checkpoints", "list"])).await;
    let text = stdout(&out);
    assert!(
        text.contains(&format!("session {id}: 1 undoable turn(s) (orphaned")),
        "{text}"
    );
    let out = run(sb.corvid(&["checkpoints", "prune"])).await;
    assert_success(&out);
    assert!(
        stdout(&out).contains("1 session(s) whose recording is gone"),
        "{}",
        stdout(&out)
    );
    let out = run(sb.corvid(&["checkpoints", "list"])).await;
    assert!(!stdout(&out).contains(&id), "{}", stdout(&out));
}
