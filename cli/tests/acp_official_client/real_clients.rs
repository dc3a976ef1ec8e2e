//! What broke in real ACP clients (issue 32 items 1-7), each checked with the official
//! TypeScript client driving the real binary.

use pretty_assertions::assert_eq;

use super::*;

/// The `update`s of `lines` of one `sessionUpdate` kind.
fn updates_of<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["kind"] == "update" && l["update"]["sessionUpdate"] == kind)
        .map(|l| &l["update"])
        .collect()
}

/// The line of `kind` (the first one).
fn line<'a>(lines: &'a [Value], kind: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["kind"] == kind)
        .unwrap_or_else(|| panic!("no `{kind}` line in {lines:#?}"))
}

/// The config option `id` of a list of options.
fn option<'a>(options: &'a Value, id: &str) -> &'a Value {
    options
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == id)
        .unwrap_or_else(|| panic!("no `{id}` option in {options}"))
}

/// The values a select option offers.
fn choices(option: &Value) -> Vec<&str> {
    option["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["value"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn the_official_client_switches_modes_through_the_config_option_and_the_legacy_method() {
    require_client();
    let server = MockServer::start().await;
    server.push(text_answer("Hi."));
    let lines = run_client(
        &server,
        &[
            "--set-config",
            "mode=plan",
            "--set-mode",
            "yolo",
            "--prompt",
            "hi",
        ],
    )
    .await;

    // The session offers its mode as a config option too, kept with the legacy field.
    let created = &line(&lines, "session")["response"];
    let mode = option(&created["configOptions"], "mode");
    assert_eq!(
        (&mode["category"], &mode["currentValue"], choices(mode)),
        (
            &json!("mode"),
            &json!("default"),
            vec!["default", "auto", "auto-edit", "yolo", "plan"]
        )
    );
    assert_eq!(created["modes"]["currentModeId"], json!("default"));
    // Set through the option: the answer has it, and `current_mode_update` tells the legacy side.
    let set = &line(&lines, "config_set")["response"];
    assert_eq!(
        option(&set["configOptions"], "mode")["currentValue"],
        json!("plan")
    );
    let mode_updates: Vec<&Value> = updates_of(&lines, "current_mode_update")
        .into_iter()
        .map(|u| &u["currentModeId"])
        .collect();
    assert_eq!(mode_updates, vec![&json!("plan")]);
    // Set through the legacy method: `config_option_update` tells the option.
    let option_updates: Vec<&Value> = updates_of(&lines, "config_option_update")
        .into_iter()
        .map(|u| &option(&u["configOptions"], "mode")["currentValue"])
        .collect();
    assert_eq!(option_updates, vec![&json!("yolo")]);
    assert_eq!(stop_reason(&lines), json!("end_turn"));
}

/// The mock's `GET /models` answer listing `models`.
fn model_list(models: &[&str]) -> ScriptedResponse {
    let data: Vec<Value> = models.iter().map(|m| json!({"id": m})).collect();
    ScriptedResponse::json(200, json!({"object": "list", "data": data}))
}

#[tokio::test]
async fn the_official_client_is_offered_the_providers_whole_model_list_at_session_new() {
    require_client();
    let server = MockServer::start().await;
    server.push_matching(
        |r| r.method == "GET" && r.path.ends_with("/models"),
        model_list(&["mock-model", "mock-big", "mock-small"]),
    );
    server.push(text_answer("Hi."));
    let project = Project::new(&fast_retries());
    // The first run lists the models (in the answer or soon after) and caches the list.
    project
        .run(
            &server,
            &["--prompt", "hi", "--wait-model", "mock-big"],
            false,
        )
        .await;
    assert_eq!(server.lookups().len(), 1);

    // The next process answers `session/new` with the whole cached list although the server
    // does not list any more (no lookup answer is queued: it gets a 404).
    server.push(text_answer("Hi again."));
    let lines = project
        .run(
            &server,
            &["--set-config", "model=mock-big", "--prompt", "hi"],
            false,
        )
        .await;
    let created = &line(&lines, "session")["response"];
    assert_eq!(
        choices(option(&created["configOptions"], "model")),
        vec!["mock-model", "mock-big", "mock-small"]
    );
    // A client picking a listed model (acpx `--model`) gets it.
    let set = &line(&lines, "config_set")["response"];
    assert_eq!(
        option(&set["configOptions"], "model")["currentValue"],
        json!("mock-big")
    );
    assert_eq!(
        server.requests().last().unwrap().body["model"],
        json!("mock-big")
    );
}

#[tokio::test]
async fn the_official_client_renders_no_phantom_line_after_a_labelled_batch() {
    require_client();
    let server = MockServer::start().await;
    server.push(read_a_call("call_1"));
    server.push(text_answer("Done."));
    let mut settings = fast_retries();
    settings["fastModel"] = json!("mock-fast");
    let project = Project::new(&settings);
    let lines = project
        .run(
            &server,
            &["--render", "--prompt", "read a.txt", "--wait-summary"],
            true,
        )
        .await;

    // The label restates the card, so a client drawing every update draws it again.
    let label = labels(&lines);
    assert_eq!(
        label,
        vec![json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_1",
            "title": "Read a.txt",
            "kind": "read",
            "status": "completed",
            "_meta": {"toolUseSummary": {"label": "Read a.txt", "toolCallIds": ["call_1"]}},
        })]
    );
    let rendered: Vec<&str> = lines
        .iter()
        .filter(|l| l["kind"] == "rendered")
        .map(|l| l["line"].as_str().unwrap())
        .collect();
    assert_eq!(
        rendered,
        vec![
            "🔧 ReadFile (pending)",
            "Tool call `call_1` updated: in_progress",
            "Tool call `call_1` updated: completed",
            "Tool call `call_1` updated: completed",
        ]
    );
}

#[tokio::test]
async fn the_official_client_sees_a_rejected_write_keep_its_title_kind_locations_and_input() {
    require_client();
    let server = MockServer::start().await;
    server.push(tool_call(
        "call_w",
        "write_file",
        &json!({"file_path": "b.txt", "content": "new\n"}),
    ));
    server.push(text_answer("Not written."));
    let project = Project::new(&fast_retries());
    let lines = project
        .run(&server, &["--reject", "--prompt", "write b.txt"], false)
        .await;

    let b = project.dir.path().join("b.txt").display().to_string();
    let last = lines
        .iter()
        .rev()
        .find(|l| l["update"]["toolCallId"] == "call_w")
        .map(|l| &l["update"])
        .unwrap();
    assert_eq!(
        (
            &last["status"],
            &last["title"],
            &last["kind"],
            &last["locations"],
            &last["rawInput"]
        ),
        (
            &json!("failed"),
            &json!("Write b.txt"),
            &json!("edit"),
            &json!([{"path": b}]),
            &json!({"file_path": "b.txt", "content": "new\n"})
        )
    );
    assert!(!project.dir.path().join("b.txt").exists());
    assert_eq!(stop_reason(&lines), json!("end_turn"));
}

#[tokio::test]
async fn a_cancelled_permission_outcome_ends_the_turn_at_once() {
    require_client();
    let server = MockServer::start().await;
    server.push(tool_call(
        "call_w",
        "write_file",
        &json!({"file_path": "b.txt", "content": "new\n"}),
    ));
    // Served only if corvid wrongly asked the model again after the cancelled question.
    server.push(text_answer("Asked again."));
    let project = Project::new(&fast_retries());
    let lines = project
        .run(
            &server,
            &["--cancel-permission", "--prompt", "write b.txt"],
            false,
        )
        .await;

    assert_eq!(stop_reason(&lines), json!("cancelled"));
    assert_eq!(server.requests().len(), 1);
    assert!(!project.dir.path().join("b.txt").exists());
    let statuses: Vec<(String, String, bool)> = card_statuses(&lines);
    assert_eq!(statuses.last().unwrap(), &card("call_w", "failed", false));
}

#[tokio::test]
async fn the_official_client_resumes_without_a_replay_and_lists_when_sessions_changed() {
    require_client();
    let server = MockServer::start().await;
    server.push(read_a_call("call_1"));
    server.push(text_answer("Done."));
    let project = Project::new(&fast_retries());
    let first = project
        .run(&server, &["--prompt", "read a.txt"], false)
        .await;
    let sid = line(&first, "session")["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let initialize = &line(&first, "initialize")["response"];
    assert_eq!(
        initialize["agentCapabilities"]["sessionCapabilities"],
        json!({"list": {}, "resume": {}})
    );

    // Resumed: nothing replayed; `/stats` counts the two recorded model turns.
    let lines = project
        .run(
            &server,
            &["--resume", &sid, "--prompt", "/stats", "--list"],
            false,
        )
        .await;
    let resumed = &line(&lines, "resumed")["response"];
    assert_eq!(resumed["modes"]["currentModeId"], json!("default"));
    assert_eq!(
        option(&resumed["configOptions"], "model")["currentValue"],
        json!("mock-model")
    );
    let kinds: Vec<Value> = updates(&lines)
        .iter()
        .map(|u| u["sessionUpdate"].clone())
        .collect();
    assert_eq!(kinds, vec![json!("agent_message_chunk")]);
    let stats = updates_of(&lines, "agent_message_chunk")[0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(
        stats.contains("turns 2 · tool calls 1 (1 completed, 0 failed)"),
        "{stats}"
    );
    // The listing says when the session last changed.
    let listed = &line(&lines, "list")["response"]["sessions"];
    let entry = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == json!(sid))
        .unwrap();
    let updated = entry["updatedAt"].as_str().unwrap_or_default();
    assert!(
        updated.len() == 20 && updated.as_bytes()[10] == b'T' && updated.ends_with('Z'),
        "{entry}"
    );

    // Loaded instead: the same count after the replay.
    let lines = project
        .run(&server, &["--load", &sid, "--prompt", "/stats"], false)
        .await;
    let loaded = lines.iter().position(|l| l["kind"] == "loaded").unwrap();
    let stats = updates_of(&lines[loaded..], "agent_message_chunk")[0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(stats.contains("turns 2 · "), "{stats}");
    assert_eq!(server.requests().len(), 2);
}
