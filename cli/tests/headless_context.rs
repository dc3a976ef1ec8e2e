//! The real binary against the loopback mock provider: project instructions reach the system
//! message of the first request, and a repeated read of an unchanged file goes back to the
//! model as a short note (issue 11 items 5 and 6).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, assert_success, json_lines, run, text_turn, turn};
use corvid_testkit::{MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn against(sb: &Sandbox, server: &MockServer, args: &[&str]) -> tokio::process::Command {
    let mut cmd = sb.against(server, "sk-test", args);
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("CORVID_EMIT_TOOL_USE_SUMMARIES", "0");
    cmd
}

fn read_turn(id: &str, file: &str) -> ScriptedResponse {
    let args = json!({"file_path": file}).to_string();
    ScriptedResponse::sse(turn(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
               "function": {"name": "read_file", "arguments": args}}]}),
        "tool_calls",
    ))
}

fn system_message(body: &Value) -> String {
    let first = &body["messages"][0];
    assert_eq!(first["role"], "system");
    first["content"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_instructions_reach_the_first_request_outermost_first_and_a_cut_one_is_a_warning() {
    let server = MockServer::start().await;
    server.push(text_turn("ok"));
    let sb = Sandbox::new();
    let repo = sb.project_dir().canonicalize().unwrap();
    let cwd = repo.join("crates").join("app");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(sb.home.path().join("AGENTS.md"), "HOME RULE\n").unwrap();
    std::fs::write(repo.join("AGENTS.md"), "ROOT RULE\n").unwrap();
    std::fs::write(cwd.join("AGENTS.md"), "APP RULE\n".repeat(3_000)).unwrap();
    let out = run(against(
        &sb,
        &server,
        &[
            "-p",
            "hi",
            "--output-format",
            "stream-json",
            "--cwd",
            cwd.to_str().unwrap(),
        ],
    ))
    .await;
    assert_success(&out);

    let system = system_message(&server.requests()[0].body);
    let at = |needle: &str| {
        system
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} missing"))
    };
    assert!(at("HOME RULE") < at("ROOT RULE") && at("ROOT RULE") < at("APP RULE"));
    assert!(system.contains(&format!(
        "<instructions file=\"{}\">",
        repo.join("AGENTS.md").display()
    )));
    let warnings: Vec<String> = json_lines(&out)
        .into_iter()
        .filter(|l| l["subtype"] == "warning")
        .map(|l| l["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        warnings,
        vec![format!(
            "{}: only the first 16380 of its 27000 bytes are in the model's prompt (at most \
             16384 bytes per file and 32768 in all)",
            cwd.join("AGENTS.md").display()
        )]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_read_of_an_unchanged_file_reaches_the_model_as_a_note() {
    let server = MockServer::start().await;
    server.push(read_turn("call_1", "README.md"));
    server.push(read_turn("call_2", "README.md"));
    server.push(text_turn("Read it twice."));
    let sb = Sandbox::new();
    let out = run(against(&sb, &server, &["-p", "read the readme twice"])).await;
    assert_success(&out);

    let requests = server.requests();
    let tool_messages: Vec<(String, String)> = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let readme = sb.project_dir().canonicalize().unwrap().join("README.md");
    assert_eq!(
        tool_messages,
        vec![
            ("call_1".into(), "# Sample project\n\nHello.\n".into()),
            (
                "call_2".into(),
                format!(
                    "[{} is unchanged since your earlier read_file call call_1 with the same \
                     offset and limit; its content is above in this conversation.]",
                    readme.display()
                )
            ),
        ]
    );
}
