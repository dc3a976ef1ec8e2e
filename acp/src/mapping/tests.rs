use super::*;
use corvid_protocol::{DiscardReason, ToolDisplay, ToolResource};
use pretty_assertions::assert_eq;

fn mapper() -> Mapper {
    Mapper::new(SessionId::new("s1"), PathBuf::from("/work/p"))
}

fn only_update(event: &CoreEvent) -> Value {
    let frames = mapper().frames(event);
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0].method, SESSION_UPDATE_METHOD);
    assert_eq!(frames[0].params["sessionId"], json!("s1"));
    frames[0].params["update"].clone()
}

#[test]
fn a_preparing_card_carries_every_field_spec_requires_even_defaults() {
    let update = only_update(&CoreEvent::ToolPreparing {
        call_id: "c1".into(),
        tool_name: "run_shell_command".into(),
        display_name: "Shell".into(),
        kind: ToolKind::Other,
        provenance: Provenance::Builtin,
    });
    assert_eq!(
        update,
        json!({
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "status": "pending",
            "title": "Shell",
            "kind": "other",
            "content": [],
            "locations": [],
            "rawInput": {},
            "_meta": {"toolName": "run_shell_command", "provenance": "builtin", "phase": "preparing"},
        })
    );
}

#[test]
fn a_started_unprepared_call_becomes_a_new_in_progress_card_with_absolute_locations() {
    let update = only_update(&CoreEvent::ToolStarted {
        call_id: "c2".into(),
        tool_name: "read_file".into(),
        args: json!({"file_path": "src/main.rs"}),
        display: ToolDisplay {
            title: "Read src/main.rs".into(),
            kind: ToolKind::Read,
            locations: vec![Location {
                path: "src/main.rs".into(),
                line: Some(3),
            }],
        },
        provenance: Provenance::Mcp {
            server_id: "files".into(),
        },
        was_prepared: false,
    });
    assert_eq!(
        update,
        json!({
            "sessionUpdate": "tool_call",
            "toolCallId": "c2",
            "status": "in_progress",
            "title": "Read src/main.rs",
            "kind": "read",
            "content": [],
            "locations": [{"path": "/work/p/src/main.rs", "line": 3}],
            "rawInput": {"file_path": "src/main.rs"},
            "_meta": {"toolName": "read_file", "provenance": "mcp", "serverId": "files"},
        })
    );
}

#[test]
fn a_finished_edit_shows_its_diff_and_raw_output() {
    let update = only_update(&CoreEvent::ToolFinished {
        call_id: "c3".into(),
        tool_name: "edit".into(),
        status: ToolStatus::Completed,
        output: ToolOutput {
            text: "Edited a.txt".into(),
            diffs: vec![FileDiff {
                path: "/work/p/a.txt".into(),
                old_text: Some("old".into()),
                new_text: "new".into(),
            }],
            raw: json!({"replacements": 1}),
            ..Default::default()
        },
        provenance: Provenance::Builtin,
    });
    assert_eq!(
        update,
        json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c3",
            "status": "completed",
            "content": [{"type": "diff", "path": "/work/p/a.txt", "oldText": "old", "newText": "new"}],
            "rawOutput": {"replacements": 1},
            "_meta": {"toolName": "edit", "provenance": "builtin"},
        })
    );
}

#[test]
fn a_finished_mcp_call_shows_its_text_then_its_images_and_resources() {
    let update = only_update(&CoreEvent::ToolFinished {
        call_id: "c5".into(),
        tool_name: "mcp__everything__shot".into(),
        status: ToolStatus::Completed,
        output: ToolOutput {
            text: "a screenshot".into(),
            images: vec![corvid_protocol::ImageData {
                media_type: "image/png".into(),
                data_base64: "iVBORw==".into(),
            }],
            resources: vec![
                ToolResource::Text {
                    uri: "test://a".into(),
                    mime_type: Some("text/plain".into()),
                    text: "body".into(),
                },
                ToolResource::Blob {
                    uri: "test://b".into(),
                    mime_type: None,
                    blob_base64: "JVBE".into(),
                },
                ToolResource::Link {
                    uri: "test://c".into(),
                    name: "c.txt".into(),
                    mime_type: Some("text/plain".into()),
                },
            ],
            ..Default::default()
        },
        provenance: Provenance::Mcp {
            server_id: "everything".into(),
        },
    });
    assert_eq!(
        update["content"],
        json!([
            {"type": "content", "content": {"type": "text", "text": "a screenshot"}},
            {"type": "content", "content": {"type": "image", "data": "iVBORw==", "mimeType": "image/png"}},
            {"type": "content", "content": {"type": "resource",
                "resource": {"uri": "test://a", "mimeType": "text/plain", "text": "body"}}},
            {"type": "content", "content": {"type": "resource",
                "resource": {"uri": "test://b", "blob": "JVBE"}}},
            {"type": "content", "content": {"type": "resource_link",
                "uri": "test://c", "name": "c.txt", "mimeType": "text/plain"}},
        ])
    );
}

#[test]
fn a_discarded_preparation_is_a_failed_update_marked_for_removal() {
    let update = only_update(&CoreEvent::PreparationDiscarded {
        call_id: "c4".into(),
        tool_name: "write_file".into(),
        reason: DiscardReason::Retry,
        provenance: Provenance::Builtin,
    });
    assert_eq!(
        update,
        json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c4",
            "status": "failed",
            "title": "write_file (discarded: the model retried)",
            "content": [],
            "_meta": {
                "toolName": "write_file",
                "provenance": "builtin",
                "phase": "preparing",
                "preparationDiscarded": true,
            },
        })
    );
}

#[test]
fn a_warning_reaches_the_editor_as_a_marked_agent_message() {
    let update = only_update(&CoreEvent::Warning {
        message: "session recording stopped: the disk is full".into(),
    });
    assert_eq!(
        update,
        json!({
            "sessionUpdate": "agent_message_chunk",
            "content": {
                "type": "text",
                "text": "\n\n> corvid: session recording stopped: the disk is full\n\n",
            },
        })
    );
}

#[test]
fn the_context_fill_is_a_usage_update_and_a_compaction_a_marked_agent_message() {
    assert_eq!(
        only_update(&CoreEvent::ContextUsage {
            used: 84_000,
            window: 200_000
        }),
        json!({"sessionUpdate": "usage_update", "used": 84_000, "size": 200_000})
    );
    let update = only_update(&CoreEvent::Compacted {
        summary: "the summary".into(),
        kept_messages: 3,
        tokens_before: 33_000,
        tokens_after: 9_000,
    });
    assert_eq!(update["sessionUpdate"], "agent_message_chunk");
    assert_eq!(
        update["content"]["text"],
        "\n\n> corvid: compacted the conversation (33000 → 9000 tokens)\n\n"
    );
}

#[test]
fn todos_become_a_plan() {
    let update = only_update(&CoreEvent::Plan {
        todos: vec![
            Todo {
                id: "1".into(),
                content: "Write tests".into(),
                status: TodoStatus::Completed,
            },
            Todo {
                id: "2".into(),
                content: "Ship".into(),
                status: TodoStatus::InProgress,
            },
        ],
    });
    assert_eq!(
        update,
        json!({
            "sessionUpdate": "plan",
            "entries": [
                {"content": "Write tests", "priority": "medium", "status": "completed"},
                {"content": "Ship", "priority": "medium", "status": "in_progress"},
            ],
        })
    );
}

/// The standard frame a summary of calls `a` and `b` becomes for call `id`: the card again,
/// with the label.
fn summary_update(id: &str) -> Frame {
    Frame {
        method: SESSION_UPDATE_METHOD,
        params: json!({
            "sessionId": "s1",
            "update": {
                "sessionUpdate": "tool_call_update",
                "toolCallId": id,
                "title": format!("Read {id}.json"),
                "kind": "read",
                "status": "completed",
                "_meta": {"toolUseSummary": {"label": "Read config.json", "toolCallIds": ["a", "b"]}},
            },
        }),
    }
}

/// A mapper that showed calls `a` and `b` (reads) until they completed.
fn mapper_after_batch() -> Mapper {
    let mapper = mapper();
    for id in ["a", "b"] {
        mapper.frames(&CoreEvent::ToolStarted {
            call_id: id.into(),
            tool_name: "read_file".into(),
            args: json!({"file_path": format!("{id}.json")}),
            display: ToolDisplay {
                title: format!("Read {id}.json"),
                kind: ToolKind::Read,
                locations: vec![],
            },
            provenance: Provenance::Builtin,
            was_prepared: false,
        });
        mapper.frames(&CoreEvent::ToolFinished {
            call_id: id.into(),
            tool_name: "read_file".into(),
            status: ToolStatus::Completed,
            output: ToolOutput::text("{}"),
            provenance: Provenance::Builtin,
        });
    }
    mapper
}

fn summary_event() -> CoreEvent {
    CoreEvent::ToolUseSummary {
        summary: "Read config.json".into(),
        preceding_tool_use_ids: vec!["a".into(), "b".into()],
    }
}

#[test]
fn a_summary_restates_each_card_of_its_batch_with_the_label() {
    assert_eq!(
        mapper_after_batch().frames(&summary_event()),
        vec![summary_update("a"), summary_update("b")]
    );
    // A card the mapper no longer knows gets no frame: an untitled one would be a new line.
    assert_eq!(mapper().frames(&summary_event()), vec![]);
}

#[test]
fn a_rejected_calls_final_update_restates_the_card_it_was_asked_about() {
    let mapper = mapper();
    mapper.frames(&CoreEvent::ToolPreparing {
        call_id: "w".into(),
        tool_name: "write_file".into(),
        display_name: "WriteFile".into(),
        kind: ToolKind::Edit,
        provenance: Provenance::Builtin,
    });
    let display = ToolDisplay {
        title: "Write b.txt".into(),
        kind: ToolKind::Edit,
        locations: vec![Location {
            path: "b.txt".into(),
            line: None,
        }],
    };
    let args = json!({"file_path": "b.txt", "content": "new"});
    mapper.permission_request(PermissionAsk {
        call_id: "w",
        tool_name: "write_file",
        args: &args,
        display: &display,
        preview: &ApprovalPreview::Text { text: "new".into() },
        reason: None,
        always_scope: None,
        task_call: None,
        server: None,
    });
    let frames = mapper.frames(&CoreEvent::ToolFinished {
        call_id: "w".into(),
        tool_name: "write_file".into(),
        status: ToolStatus::Failed,
        output: ToolOutput::text("The user rejected this call."),
        provenance: Provenance::Builtin,
    });
    let update = &frames[0].params["update"];
    assert_eq!(
        (
            &update["status"],
            &update["title"],
            &update["kind"],
            &update["locations"],
            &update["rawInput"]
        ),
        (
            &json!("failed"),
            &json!("Write b.txt"),
            &json!("edit"),
            &json!([{"path": "/work/p/b.txt"}]),
            &args
        )
    );
}

#[test]
fn a_client_that_opted_in_also_gets_the_summary_notification() {
    let frames = mapper_after_batch()
        .with_summary_notification(true)
        .frames(&summary_event());
    assert_eq!(
        frames,
        vec![
            summary_update("a"),
            summary_update("b"),
            Frame {
                method: TOOL_USE_SUMMARY_METHOD,
                params: json!({
                    "sessionId": "s1",
                    "summary": "Read config.json",
                    "precedingToolUseIds": ["a", "b"],
                }),
            }
        ]
    );
}

#[test]
fn a_permission_request_offers_the_four_options_and_maps_them_back() {
    let request = mapper().permission_request(PermissionAsk {
        call_id: "c5",
        tool_name: "run_shell_command",
        args: &json!({"command": "cargo test"}),
        display: &shell_display(),
        preview: &cargo_test(),
        reason: None,
        always_scope: None,
        task_call: None,
        server: None,
    });
    let wire = serde_json::to_value(&request).unwrap_or_default();
    assert_eq!(
        wire,
        json!({
            "sessionId": "s1",
            "toolCall": {
                "toolCallId": "c5",
                "title": "Run cargo test",
                "kind": "execute",
                "locations": [],
                "rawInput": {"command": "cargo test"},
                "content": [{"type": "content", "content": {"type": "text", "text": "cargo test"}}],
                "_meta": {"toolName": "run_shell_command"},
            },
            "options": [
                {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "allow_always", "name": "Allow always", "kind": "allow_always"},
                {"optionId": "reject_once", "name": "Reject once", "kind": "reject_once"},
                {"optionId": "reject_always", "name": "Reject always", "kind": "reject_always"},
            ],
        })
    );
    let decisions: Vec<_> = request
        .options
        .iter()
        .map(|o| decision_for_option(&o.option_id.0))
        .collect();
    assert_eq!(
        decisions,
        vec![
            ApprovalDecision::AllowOnce,
            ApprovalDecision::AllowAlways,
            ApprovalDecision::RejectOnce,
            ApprovalDecision::RejectAlways,
        ]
    );
}

#[test]
fn a_replayed_prompt_is_a_user_chunk_but_a_live_one_is_not_echoed() {
    let started = CoreEvent::TaskStarted {
        task_id: "t1".into(),
        prompt: "read a".into(),
    };
    assert_eq!(mapper().frames(&started), vec![]);
    assert_eq!(
        mapper().replay_frames(&started),
        vec![Frame {
            method: SESSION_UPDATE_METHOD,
            params: json!({
                "sessionId": "s1",
                "update": {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "read a"}},
            }),
        }]
    );
    let text = CoreEvent::TextDelta {
        text: "Done.".into(),
    };
    assert_eq!(mapper().replay_frames(&text), mapper().frames(&text));
}

fn shell_display() -> ToolDisplay {
    ToolDisplay {
        title: "Run cargo test".into(),
        kind: ToolKind::Execute,
        locations: vec![],
    }
}

fn cargo_test() -> ApprovalPreview {
    ApprovalPreview::Command {
        command: "cargo test".into(),
    }
}

#[test]
fn a_permission_request_says_why_it_asks_and_what_always_covers() {
    let request = mapper().permission_request(PermissionAsk {
        call_id: "c6",
        tool_name: "run_shell_command",
        args: &json!({"command": "cargo test"}),
        display: &shell_display(),
        preview: &cargo_test(),
        reason: Some("it writes under .git/, a protected path"),
        always_scope: Some("cargo test"),
        task_call: None,
        server: None,
    });
    let wire = serde_json::to_value(&request).unwrap_or_default();
    assert_eq!(
        (
            wire["toolCall"]["content"].clone(),
            wire["toolCall"]["_meta"].clone()
        ),
        (
            json!([
                {"type": "content", "content": {"type": "text", "text": "Asked because it writes under .git/, a protected path"}},
                {"type": "content", "content": {"type": "text", "text": "cargo test"}},
            ]),
            json!({
                "toolName": "run_shell_command",
                "reason": "it writes under .git/, a protected path",
                "alwaysScope": "cargo test",
            })
        )
    );
    assert_eq!(
        wire["options"][1],
        json!({"optionId": "allow_always", "name": "Always allow `cargo test`", "kind": "allow_always"})
    );
}

#[test]
fn a_subagents_cards_are_marked_with_the_task_call_and_its_text_is_not_shown() {
    let child = |event: CoreEvent| CoreEvent::Subagent {
        parent_call_id: "t1".into(),
        event: Box::new(event),
    };
    assert!(
        mapper()
            .frames(&child(CoreEvent::TextDelta { text: "x".into() }))
            .is_empty()
    );
    let frames = mapper().frames(&child(CoreEvent::ToolStarted {
        call_id: "c1".into(),
        tool_name: "read_file".into(),
        args: json!({"path": "a.rs"}),
        display: ToolDisplay {
            title: "Read a.rs".into(),
            kind: ToolKind::Read,
            locations: Vec::new(),
        },
        provenance: Provenance::Builtin,
        was_prepared: true,
    }));
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert_eq!(
        frames[0].params["update"],
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
            "content": [{"type": "content", "content": {"type": "text", "text": "↳ Read a.rs"}}]})
    );
    let update = frames[1].params["update"].clone();
    assert_eq!(update["sessionUpdate"], json!("tool_call"));
    assert_eq!(update["toolCallId"], json!("t1/c1"));
    assert_eq!(
        update["_meta"]["subagent"],
        json!({"parentToolCallId": "t1"})
    );
    assert_eq!(update["_meta"]["toolName"], json!("read_file"));
}

#[test]
fn a_task_card_lists_its_childs_steps_until_the_task_finishes() {
    let mapper = mapper();
    let step = |id: &str, title: &str| CoreEvent::Subagent {
        parent_call_id: "t1".into(),
        event: Box::new(CoreEvent::ToolStarted {
            call_id: id.into(),
            tool_name: "read_file".into(),
            args: json!({}),
            display: ToolDisplay {
                title: title.into(),
                kind: ToolKind::Read,
                locations: Vec::new(),
            },
            provenance: Provenance::Builtin,
            was_prepared: false,
        }),
    };
    let task_text =
        |frames: &[Frame]| frames[0].params["update"]["content"][0]["content"]["text"].clone();
    mapper.frames(&step("c1", "Read a.rs"));
    let frames = mapper.frames(&step("c2", "Search \"load\""));
    assert_eq!(task_text(&frames), json!("↳ Read a.rs\n↳ Search \"load\""));
    mapper.frames(&CoreEvent::ToolFinished {
        call_id: "t1".into(),
        tool_name: "task".into(),
        status: ToolStatus::Completed,
        output: ToolOutput::text("done"),
        provenance: Provenance::Builtin,
    });
    // A later task with the same id (a resumed session) starts a fresh list.
    let frames = mapper.frames(&step("c3", "Read b.rs"));
    assert_eq!(task_text(&frames), json!("↳ Read b.rs"));
}

#[test]
fn a_subagents_permission_request_is_titled_with_its_tasks_label() {
    let mapper = mapper();
    mapper.frames(&CoreEvent::ToolStarted {
        call_id: "t1".into(),
        tool_name: "task".into(),
        args: json!({"description": "Fix the tests", "prompt": "..."}),
        display: ToolDisplay {
            title: "Fix the tests".into(),
            kind: ToolKind::Other,
            locations: Vec::new(),
        },
        provenance: Provenance::Builtin,
        was_prepared: true,
    });
    let request = mapper.permission_request(PermissionAsk {
        call_id: "t1/c5",
        tool_name: "run_shell_command",
        args: &json!({"command": "cargo test"}),
        display: &shell_display(),
        preview: &cargo_test(),
        reason: None,
        always_scope: None,
        task_call: Some("t1"),
        server: None,
    });
    let wire = serde_json::to_value(&request).unwrap_or_default();
    assert_eq!(
        (
            wire["toolCall"]["toolCallId"].clone(),
            wire["toolCall"]["title"].clone()
        ),
        (json!("t1/c5"), json!("Fix the tests: Run cargo test"))
    );
}

#[test]
fn an_mcp_tools_request_also_offers_allowing_its_whole_server() {
    let request = mapper().permission_request(PermissionAsk {
        call_id: "c7",
        tool_name: "mcp__gh__create_issue",
        args: &json!({"title": "x"}),
        display: &shell_display(),
        preview: &cargo_test(),
        reason: None,
        always_scope: None,
        task_call: None,
        server: Some("gh"),
    });
    let wire = serde_json::to_value(&request).unwrap_or_default();
    assert_eq!(
        wire["options"][2],
        json!({"optionId": "allow_server_always",
               "name": "Always allow every tool of server `gh`", "kind": "allow_always"})
    );
    assert_eq!(wire["options"].as_array().map(Vec::len), Some(5));
    assert_eq!(
        decision_for_option("allow_server_always"),
        ApprovalDecision::AllowServerAlways
    );
}

#[test]
fn a_server_side_web_search_is_a_fetch_card_titled_by_its_query() {
    let call = corvid_protocol::HostedBlock {
        provider: "anthropic".into(),
        call_id: "srvtoolu_1".into(),
        tool_name: "web_search".into(),
        step: corvid_protocol::HostedStep::Call {
            title: "Search \"tokio\"".into(),
            args: json!({"query": "tokio"}),
        },
        data: corvid_protocol::JsonText::new(&json!({"type": "server_tool_use"})),
    };
    let update = only_update(&call.card_event());
    assert_eq!(update["kind"], "fetch");
    assert_eq!(update["title"], "Search \"tokio\"");
    assert_eq!(update["status"], "in_progress");
    assert_eq!(update["rawInput"], json!({"query": "tokio"}));
}
