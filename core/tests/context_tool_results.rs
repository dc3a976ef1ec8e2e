//! Tool results in the history: a repeated read of an unchanged file is a short note, a change
//! (on disk, or an edit in between) or `/clear` brings the full text back, and a result over
//! `tools.maxResultTokens` is cut with a note saying how to get the rest.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::scripted::*;
use common::{collect_task, run_task, test_config};
use corvid_core::agent::{AgentConfig, AgentHandle, spawn_agent};
use corvid_core::context::result_budget::ResultBudget;
use corvid_core::settings::{
    Overrides, ProviderKind, SettingsFiles, Trust, agent_config, load_from,
};
use corvid_protocol::{FinishReason, Message, Op, Part};
use pretty_assertions::assert_eq;
use serde_json::json;

/// A session with the built-in tools working in `cwd` on the local disk.
fn session(provider: &ScriptedProvider, cwd: &Path) -> AgentConfig {
    let mut config = test_config(Arc::new(provider.clone()), vec![]);
    config.tools = corvid_tools::builtin_tools();
    config.fs = Arc::new(corvid_tools::LocalFs);
    config.cwd = cwd.to_owned();
    config
}

/// A response that makes one tool call.
fn calling(id: &str, name: &str, args: serde_json::Value) -> Vec<Step> {
    vec![call(id, name, args), finish(FinishReason::ToolCalls)]
}

fn read(id: &str, file: &str) -> Vec<Step> {
    calling(id, "read_file", json!({"file_path": file}))
}

/// The output of every tool result in the last request, by call id, in order.
fn results(provider: &ScriptedProvider) -> Vec<(String, String)> {
    let requests = provider.requests();
    let last: &Vec<Message> = &requests.last().unwrap().messages;
    last.iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some((r.call_id.clone(), r.output.clone())),
            _ => None,
        })
        .collect()
}

fn unchanged_note(path: &Path, earlier: &str) -> String {
    format!(
        "[{} is unchanged since your earlier read_file call {earlier} with the same offset and \
         limit; its content is above in this conversation.]",
        path.display()
    )
}

async fn prompt(handle: &mut AgentHandle, text: &str) {
    run_task(handle, text).await;
}

#[tokio::test]
async fn a_second_read_of_an_unchanged_file_is_a_short_note() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let file = cwd.join("a.txt");
    std::fs::write(&file, "alpha\nbeta\n").unwrap();
    let provider = ScriptedProvider::new(vec![
        read("c1", "a.txt"),
        read("c2", "a.txt"),
        answer("done"),
    ]);
    let mut handle = spawn_agent(session(&provider, &cwd));
    prompt(&mut handle, "read it twice").await;
    assert_eq!(
        results(&provider),
        vec![
            ("c1".into(), "alpha\nbeta\n".into()),
            ("c2".into(), unchanged_note(&file, "c1")),
        ]
    );
}

#[tokio::test]
async fn a_read_after_the_file_changed_on_disk_returns_the_new_text() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let file = cwd.join("a.txt");
    std::fs::write(&file, "old\n").unwrap();
    let provider = ScriptedProvider::new(vec![read("c1", "a.txt"), answer("read")]);
    let mut handle = spawn_agent(session(&provider, &cwd));
    prompt(&mut handle, "read it").await;

    std::fs::write(&file, "new\n").unwrap();
    provider.push(read("c2", "a.txt"));
    provider.push(read("c3", "a.txt"));
    provider.push(answer("read again"));
    prompt(&mut handle, "read it again").await;
    assert_eq!(
        results(&provider),
        vec![
            ("c1".into(), "old\n".into()),
            ("c2".into(), "new\n".into()),
            ("c3".into(), unchanged_note(&file, "c2")),
        ]
    );
}

#[tokio::test]
async fn a_write_in_between_makes_the_next_read_a_full_one_even_with_the_same_content() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::write(cwd.join("a.txt"), "same\n").unwrap();
    let provider = ScriptedProvider::new(vec![
        read("c1", "a.txt"),
        calling(
            "c2",
            "write_file",
            json!({"file_path": "a.txt", "content": "same\n"}),
        ),
        read("c3", "a.txt"),
        answer("done"),
    ]);
    let mut handle = spawn_agent(session(&provider, &cwd));
    prompt(&mut handle, "read, write, read").await;
    let outputs = results(&provider);
    assert_eq!(outputs[2], ("c3".into(), "same\n".into()));
}

#[tokio::test]
async fn other_lines_of_the_same_file_are_a_different_read() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::write(cwd.join("a.txt"), "1\n2\n3\n").unwrap();
    let provider = ScriptedProvider::new(vec![
        read("c1", "a.txt"),
        calling(
            "c2",
            "read_file",
            json!({"file_path": "a.txt", "offset": 1, "limit": 1}),
        ),
        answer("done"),
    ]);
    let mut handle = spawn_agent(session(&provider, &cwd));
    prompt(&mut handle, "read twice").await;
    assert_eq!(
        results(&provider)[1],
        (
            "c2".into(),
            "[Showing lines 2-2 of 3 of a.txt. To read more, call read_file again with offset 2.]\n\n2\n"
                .into()
        )
    );
}

#[tokio::test]
async fn after_clear_a_read_returns_the_full_text_again() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::write(cwd.join("a.txt"), "text\n").unwrap();
    let provider = ScriptedProvider::new(vec![read("c1", "a.txt"), answer("read")]);
    let mut handle = spawn_agent(session(&provider, &cwd));
    prompt(&mut handle, "read it").await;
    handle.submit(Op::ClearHistory).unwrap();
    provider.push(read("c2", "a.txt"));
    provider.push(answer("read again"));
    handle.submit(Op::user_turn("read it again")).unwrap();
    collect_task(&mut handle).await;
    assert_eq!(results(&provider), vec![("c2".into(), "text\n".into())]);
}

#[tokio::test]
async fn a_long_read_is_cut_to_the_budget_with_the_offset_to_read_on() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let text: String = (1..=300)
        .map(|n| format!("line {n:04} of the file\n"))
        .collect();
    std::fs::write(cwd.join("big.txt"), &text).unwrap();
    let provider = ScriptedProvider::new(vec![read("c1", "big.txt"), answer("done")]);
    let mut config = session(&provider, &cwd);
    config.policy.result_budget = ResultBudget { max_tokens: 500 };
    let mut handle = spawn_agent(config);
    prompt(&mut handle, "read the big file").await;

    let output = results(&provider).remove(0).1;
    assert!(output.len() <= 2000, "{} bytes kept", output.len());
    let (kept, marker) = output.rsplit_once('\n').unwrap();
    // 22 bytes a line: the 1488 bytes left beside the marker hold 67 whole lines.
    assert_eq!(kept, text[..67 * 22].trim_end());
    assert_eq!(
        marker,
        "[Cut to fit the tool result budget (500 tokens): lines 1-67 are shown; lines 68-300 \
         (5126 bytes) were left out. To read them, call read_file again with file_path \
         \"big.txt\", offset 67 and limit 67.]"
    );
}

#[tokio::test]
async fn a_cut_paged_read_counts_lines_after_the_tools_own_note() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let text: String = (1..=300)
        .map(|n| format!("line {n:04} of the file\n"))
        .collect();
    std::fs::write(cwd.join("big.txt"), &text).unwrap();
    let provider = ScriptedProvider::new(vec![
        calling(
            "c1",
            "read_file",
            json!({"file_path": "big.txt", "offset": 100, "limit": 150}),
        ),
        answer("done"),
    ]);
    let mut config = session(&provider, &cwd);
    config.policy.result_budget = ResultBudget { max_tokens: 500 };
    let mut handle = spawn_agent(config);
    prompt(&mut handle, "read the middle").await;

    let output = results(&provider).remove(0).1;
    let last_kept = output.lines().rev().nth(1).unwrap();
    let marker = output.lines().last().unwrap();
    let shown = last_kept[5..9].parse::<u64>().unwrap();
    assert!(
        marker.starts_with(&format!(
            "[Cut to fit the tool result budget (500 tokens): lines 101-{shown} are shown; lines {}-250 ",
            shown + 1
        )),
        "{marker}"
    );
    assert!(
        marker.ends_with(&format!("offset {shown} and limit {}.]", shown - 100)),
        "{marker}"
    );
}

#[test]
fn tools_max_result_tokens_reaches_the_session_policy_and_zero_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("settings.json");
    let load = |text: &str| {
        std::fs::write(&user, text).unwrap();
        let files = SettingsFiles {
            user: Some(user.clone()),
            project: None,
        };
        let overrides = Overrides {
            provider: Some(ProviderKind::Demo),
            ..Overrides::default()
        };
        load_from(&files, Trust::Untrusted, |_| None, &overrides)
    };
    let settings = load(r#"{"tools": {"maxResultTokens": 1234}}"#)
        .unwrap()
        .settings;
    let config = agent_config(&settings, |_| None, dir.path(), "s").unwrap();
    assert_eq!(
        config.policy.result_budget,
        ResultBudget { max_tokens: 1234 }
    );
    let defaults = load("{}").unwrap().settings;
    assert_eq!(defaults.tools.max_result_tokens, 8000);
    let err = load(r#"{"tools": {"maxResultTokens": 0}}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: settings key `tools.maxResultTokens` is `0`; expected at least 1",
            user.display()
        )
    );
}
