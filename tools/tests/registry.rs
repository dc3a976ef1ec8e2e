//! The built-in registry and `todo_write`.

mod common;

use common::Workspace;
use corvid_protocol::ToolKind;
use corvid_tools::{ApprovalNeed, TodoWrite, Tool, builtin_tools};
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn the_builtin_registry_describes_every_tool_of_the_spec() {
    let registry = builtin_tools();
    let tools: Vec<_> = registry.iter().collect();
    let described: Vec<(&str, &str, ToolKind, bool, bool)> = tools
        .iter()
        .map(|t| {
            (
                t.name(),
                t.display_name(),
                t.kind(),
                t.mutates(),
                t.shows_card(),
            )
        })
        .collect();
    assert_eq!(
        described,
        vec![
            ("read_file", "ReadFile", ToolKind::Read, false, true),
            (
                "list_directory",
                "ListDirectory",
                ToolKind::Read,
                false,
                true
            ),
            ("glob", "Glob", ToolKind::Search, false, true),
            ("grep_search", "Grep", ToolKind::Search, false, true),
            ("write_file", "WriteFile", ToolKind::Edit, true, true),
            ("edit", "Edit", ToolKind::Edit, true, true),
            ("run_shell_command", "Shell", ToolKind::Execute, true, true),
            ("shell_output", "ShellOutput", ToolKind::Read, false, true),
            ("kill_shell", "KillShell", ToolKind::Execute, true, true),
            ("todo_write", "TodoWrite", ToolKind::Think, true, false),
            ("web_fetch", "WebFetch", ToolKind::Fetch, false, true),
            (
                "exit_plan_mode",
                "ExitPlanMode",
                ToolKind::Think,
                true,
                true
            ),
            (
                "enter_plan_mode",
                "EnterPlanMode",
                ToolKind::Think,
                true,
                true
            ),
            ("ask_user", "AskUser", ToolKind::Think, true, true),
        ]
    );
    for schema in registry.schemas() {
        let parameters = schema.parameters.to_value();
        assert_eq!(parameters["type"], json!("object"), "{}", schema.name);
        let properties = parameters["properties"].as_object().unwrap();
        for required in parameters["required"].as_array().unwrap() {
            assert!(properties.contains_key(required.as_str().unwrap()));
        }
        assert!(!schema.description.is_empty());
    }
    assert!(registry.get("edit").is_some());
    assert!(registry.get("nope").is_none());
}

#[tokio::test]
async fn todo_write_returns_the_todos_as_raw_output_for_the_plan() {
    let ws = Workspace::new();
    let todos = json!([
        {"id": "1", "content": "Read the code", "status": "completed"},
        {"id": "2", "content": "Fix the bug", "status": "in_progress"},
        {"id": "3", "content": "Run the tests", "status": "pending"},
    ]);

    let need = TodoWrite
        .approval(&json!({"todos": todos}), &ws.ctx())
        .await;
    let out = ws.run_ok(&TodoWrite, json!({"todos": todos})).await;

    assert_eq!(need, ApprovalNeed::None);
    assert_eq!(out.raw, todos);
    assert_eq!(
        out.text,
        "Todo list updated: 1 completed, 1 in progress, 1 pending.\n\
         [x] Read the code\n[~] Fix the bug\n[ ] Run the tests"
    );
    assert_eq!(
        TodoWrite.display(&json!({}), &ws.ctx()).kind,
        ToolKind::Think
    );
}

#[tokio::test]
async fn todo_write_refuses_bad_statuses_and_duplicate_ids() {
    let ws = Workspace::new();
    assert_eq!(
        ws.run_err(
            &TodoWrite,
            json!({"todos": [{"id": "1", "content": "x", "status": "done"}]})
        )
        .await,
        "invalid arguments for todo_write: unknown variant `done`, expected one of `pending`, `in_progress`, `completed`"
    );
    assert_eq!(
        ws.run_err(
            &TodoWrite,
            json!({"todos": [
                {"id": "1", "content": "x", "status": "pending"},
                {"id": "1", "content": "y", "status": "pending"}
            ]})
        )
        .await,
        "todo id `1` is used twice; every todo needs its own id"
    );
}

/// A dynamic source offering a tool that shadows a built-in one and a tool of its own.
struct Source(Vec<std::sync::Arc<dyn Tool>>);

impl corvid_tools::ToolSource for Source {
    fn tools(&self) -> Vec<std::sync::Arc<dyn Tool>> {
        self.0.clone()
    }

    fn settled(&self) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }
    fn status_report(&self) -> String {
        "one test source".to_owned()
    }
}

#[test]
fn a_dynamic_source_adds_its_tools_after_the_fixed_ones_which_win_on_a_name_clash() {
    let source = Source(vec![
        std::sync::Arc::new(TodoWrite),
        std::sync::Arc::new(corvid_tools::ReadFile),
    ]);
    let fixed = corvid_tools::ToolRegistry::new(vec![std::sync::Arc::new(corvid_tools::ReadFile)]);
    let registry = fixed.with_source(std::sync::Arc::new(source));
    let names: Vec<String> = registry.iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(names, ["read_file", "todo_write"]);
    assert_eq!(registry.get("todo_write").unwrap().name(), "todo_write");
    assert_eq!(registry.schemas().len(), 2);
}

#[test]
fn every_session_gets_the_same_built_in_tool_objects() {
    let first: Vec<_> = builtin_tools().iter().collect();
    let second: Vec<_> = builtin_tools().iter().collect();
    assert_eq!(first.len(), second.len());
    assert!(
        first
            .iter()
            .zip(&second)
            .all(|(a, b)| std::sync::Arc::ptr_eq(a, b))
    );
}
