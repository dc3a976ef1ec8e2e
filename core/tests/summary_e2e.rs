//! Tool-use summaries end to end: the real agent loop and the real OpenAI provider against the
//! loopback mock server. The summary request is the one with `stream` not `true`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::openai_sse::{call_args, call_start, done, finish, text};
use corvid_core::agent::{AgentConfig, AgentHandle, spawn_agent};
use corvid_core::retry::RetryPolicy;
use corvid_core::summary::SummaryConfig;
use corvid_protocol::{ApprovalMode, CoreEvent, Op, SUMMARY_PROMPT_ID, StopReason};
use corvid_providers::{OpenAiChatProvider, ProviderConfig};
use corvid_testkit::{Chunk, Gate, MockServer, RecordedRequest, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// How long a test waits for an event before failing clearly instead of hanging.
const EVENT_WAIT: Duration = Duration::from_secs(10);

fn is_summary_request(request: &RecordedRequest) -> bool {
    request.body["stream"] != json!(true)
}

fn is_main_request(request: &RecordedRequest) -> bool {
    !is_summary_request(request)
}

/// One streamed turn calling `calls` (`(id, tool, args)`) after a line of text.
fn tool_turn(intent: &str, calls: &[(&str, &str, Value)]) -> ScriptedResponse {
    let mut chunks = vec![text(intent)];
    for (index, (id, name, args)) in (0..).zip(calls) {
        chunks.push(call_start(index, id, name));
        chunks.push(call_args(index, &args.to_string()));
    }
    chunks.extend([finish("tool_calls"), done()]);
    ScriptedResponse::sse(chunks)
}

/// One streamed turn answering with text only.
fn text_turn(answer: &str) -> ScriptedResponse {
    ScriptedResponse::sse(vec![text(answer), finish("stop"), done()])
}

/// The fast model's non-streaming answer, held back until `gate` opens when one is given.
fn summary_answer(label: &str, gate: Option<&Gate>) -> ScriptedResponse {
    let body = json!({
        "id": "chatcmpl-summary",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": label}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 90, "completion_tokens": 5, "total_tokens": 95}
    });
    let chunk = Chunk::new(body.to_string());
    let chunk = match gate {
        Some(gate) => chunk.gate(gate),
        None => chunk,
    };
    ScriptedResponse::sse(vec![chunk]).header("content-type", "application/json")
}

struct Harness {
    server: MockServer,
    agent: AgentHandle,
    dir: tempfile::TempDir,
}

/// Whether the session has a fast model for summaries.
#[derive(Clone, Copy, PartialEq)]
enum FastModel {
    Configured,
    Missing,
}

async fn start(fast_model: FastModel) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), "beta\n").unwrap();
    let server = MockServer::start().await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let provider = Arc::new(
        OpenAiChatProvider::new(&ProviderConfig {
            base_url: server.url(),
            ..ProviderConfig::default()
        })
        .unwrap(),
    );
    let summaries = (fast_model == FastModel::Configured).then(|| SummaryConfig {
        provider: provider.clone(),
        model: "fast-model".to_owned(),
    });
    let agent = spawn_agent(AgentConfig {
        session_id: "summary-e2e".to_owned(),
        provider,
        model: "main-model".to_owned(),
        fallback_model: None,
        max_output_tokens: None,
        system_prompt: "You are a test agent.".to_owned(),
        cwd: dir.path().to_path_buf(),
        tools: corvid_tools::builtin_tools(),
        fs: Arc::new(corvid_tools::LocalFs),
        approval_mode: ApprovalMode::Yolo,
        retry: RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        },
        shell_timeout: Duration::from_secs(5),
        summaries,
        history: Vec::new(),
        policy: Default::default(),
        instructions: Default::default(),
    });
    Harness { server, agent, dir }
}

impl Harness {
    async fn next_event(&mut self, seen: &[CoreEvent]) -> CoreEvent {
        tokio::time::timeout(EVENT_WAIT, self.agent.next_event())
            .await
            .unwrap_or_else(|_| panic!("no event within {EVENT_WAIT:?}; saw {seen:#?}"))
            .unwrap()
    }

    /// Reads events up to and including the task's end.
    async fn until_task_finished(&mut self) -> Vec<CoreEvent> {
        let mut seen = Vec::new();
        loop {
            let event = self.next_event(&seen).await;
            let done = matches!(event, CoreEvent::TaskFinished { .. });
            seen.push(event);
            if done {
                return seen;
            }
        }
    }

    /// Reads events until `count` more summaries settled (label or drop), plus the summary
    /// usage event that directly follows the last one, if any.
    async fn until_summaries(&mut self, count: usize) -> Vec<CoreEvent> {
        let mut seen = Vec::new();
        let mut settled = 0;
        while settled < count {
            let event = self.next_event(&seen).await;
            settled += usize::from(is_settled(&event));
            seen.push(event);
        }
        seen
    }

    /// Reads events until the task ended and `count` summaries settled, in whatever order.
    async fn until_settled(&mut self, count: usize) -> Vec<CoreEvent> {
        let mut events = self.until_task_finished().await;
        let settled = events.iter().filter(|e| is_settled(e)).count();
        events.extend(self.until_summaries(count.saturating_sub(settled)).await);
        events
    }

    fn requests_of(&self, kind: fn(&RecordedRequest) -> bool) -> Vec<RecordedRequest> {
        self.server.requests().into_iter().filter(kind).collect()
    }

    fn prompt(&self, text: &str) {
        self.agent.submit(Op::user_turn(text)).unwrap();
    }
}

fn is_settled(event: &CoreEvent) -> bool {
    matches!(
        event,
        CoreEvent::ToolUseSummary { .. } | CoreEvent::SummaryDropped { .. }
    )
}

/// The summary outcomes among `events`, drops reduced to their ids and whether the reason
/// mentions `why` (the exact wording belongs to the loop).
fn outcomes(events: &[CoreEvent], why: &str) -> Vec<(String, Vec<String>)> {
    events
        .iter()
        .filter_map(|event| match event {
            CoreEvent::ToolUseSummary {
                summary,
                preceding_tool_use_ids,
            } => Some((summary.clone(), preceding_tool_use_ids.clone())),
            CoreEvent::SummaryDropped {
                preceding_tool_use_ids,
                reason,
            } => Some((
                format!("dropped, reason mentions {why:?}: {}", reason.contains(why)),
                preceding_tool_use_ids.clone(),
            )),
            _ => None,
        })
        .collect()
}

fn summary_usage(events: &[CoreEvent]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|event| match event {
            CoreEvent::Usage { prompt_id, usage } if prompt_id == SUMMARY_PROMPT_ID => {
                Some(usage.total_tokens)
            }
            _ => None,
        })
        .collect()
}

fn pending_summaries(events: &[CoreEvent]) -> Option<(StopReason, u32)> {
    events.iter().find_map(|event| match event {
        CoreEvent::TaskFinished {
            stop_reason,
            pending_summaries,
            ..
        } => Some((*stop_reason, *pending_summaries)),
        _ => None,
    })
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|id| (*id).to_owned()).collect()
}

fn read(id: &'static str, file: &str) -> (&'static str, &'static str, Value) {
    (id, "read_file", json!({"file_path": file}))
}

/// A request whose summary prompt carries this intent (to route answers per batch).
fn summary_with_intent(intent: &'static str) -> impl Fn(&RecordedRequest) -> bool {
    move |request| is_summary_request(request) && request.body.to_string().contains(intent)
}

#[tokio::test]
async fn the_next_turn_is_sent_while_the_summary_is_still_pending() {
    let mut h = start(FastModel::Configured).await;
    let answer = Gate::new();
    let batch = [read("call_a", "a.txt"), read("call_b", "b.txt")];
    h.server.push_matching(
        is_main_request,
        tool_turn("Let me read both files.", &batch),
    );
    h.server
        .push_matching(is_main_request, text_turn("Both files are short."));
    h.server.push_matching(
        is_summary_request,
        summary_answer("- \"Read a.txt and b.txt\"", Some(&answer)),
    );
    h.prompt("read a and b");

    // The fast model answers only after the task ended: had the loop waited for the summary,
    // the second turn would never be requested and the task never finish.
    let task = h.until_task_finished().await;
    // Both turns and the summary request; the latter may arrive last, as it runs concurrently.
    h.server.wait_for_requests(3).await;
    assert_eq!(
        (
            h.requests_of(is_main_request).len(),
            h.requests_of(is_summary_request).len(),
            outcomes(&task, ""),
            pending_summaries(&task),
        ),
        (2, 1, vec![], Some((StopReason::EndTurn, 1)))
    );

    answer.open();
    let late = h.until_summaries(1).await;
    assert_eq!(
        outcomes(&late, ""),
        vec![(
            "Read a.txt and b.txt".to_owned(),
            ids(&["call_a", "call_b"])
        )]
    );
    // Its usage came just before it: the label settles the batch last.
    assert_eq!(summary_usage(&late), vec![95]);
    assert!(matches!(
        late.last(),
        Some(CoreEvent::ToolUseSummary { .. })
    ));
}

#[tokio::test]
async fn the_summary_request_is_small_non_streaming_and_ends_with_label() {
    let mut h = start(FastModel::Configured).await;
    std::fs::write(h.dir.path().join("big.txt"), "x".repeat(5_000)).unwrap();
    let batch = [read("call_a", "a.txt"), read("call_big", "big.txt")];
    h.server.push_matching(
        is_main_request,
        tool_turn("Let me read both files.", &batch),
    );
    h.server.push_matching(is_main_request, text_turn("Done."));
    h.server
        .push_matching(is_summary_request, summary_answer("Read two files", None));
    h.prompt("read");
    h.until_summaries(1).await;

    let requests = h.requests_of(is_summary_request);
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    let max_tokens = body
        .get("max_tokens")
        .or_else(|| body.get("max_completion_tokens"));
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let user = messages
        .last()
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        (
            requests[0].path.as_str(),
            &body["model"],
            &body["stream"],
            body.get("tools"),
            max_tokens,
            body["temperature"].as_f64(),
        ),
        (
            "/chat/completions",
            &json!("fast-model"),
            &json!(false),
            None,
            Some(&json!(60)),
            Some(0.3),
        )
    );
    let blocks: Vec<&str> = user.split("\n\n").collect();
    assert_eq!(blocks.first(), Some(&"Intent: Let me read both files."));
    assert_eq!(blocks.last(), Some(&"Label:"));
    assert_eq!(
        blocks[1].lines().take(2).collect::<Vec<_>>(),
        vec!["Tool: read_file", "Input: {\"file_path\":\"a.txt\"}"]
    );
    let big_output = blocks[2]
        .lines()
        .find_map(|line| line.strip_prefix("Output: "))
        .unwrap_or_default();
    assert_eq!(
        (
            big_output.chars().count() <= 300,
            big_output.ends_with("...")
        ),
        (true, true),
        "{big_output}"
    );
}

#[tokio::test]
async fn a_summary_that_returns_after_a_later_batch_completed_is_dropped_as_stale() {
    let mut h = start(FastModel::Configured).await;
    let first_answer = Gate::new();
    let first = [read("call_a", "a.txt"), read("call_b", "b.txt")];
    let second = [read("call_c", "b.txt"), read("call_d", "a.txt")];
    h.server
        .push_matching(is_main_request, tool_turn("First look.", &first));
    h.server
        .push_matching(is_main_request, tool_turn("Second look.", &second));
    h.server.push_matching(is_main_request, text_turn("Done."));
    h.server.push_matching(
        summary_with_intent("First look."),
        summary_answer("Read a.txt and b.txt", Some(&first_answer)),
    );
    h.server.push_matching(
        summary_with_intent("Second look."),
        summary_answer("Reread both files", None),
    );
    h.prompt("look twice");

    let mut events = h.until_settled(1).await;
    first_answer.open();
    events.extend(h.until_summaries(1).await);
    assert_eq!(
        outcomes(&events, "stale"),
        vec![
            ("Reread both files".to_owned(), ids(&["call_c", "call_d"])),
            (
                "dropped, reason mentions \"stale\": true".to_owned(),
                ids(&["call_a", "call_b"])
            ),
        ]
    );
}

#[tokio::test]
async fn a_summary_of_a_cancelled_task_is_dropped() {
    let mut h = start(FastModel::Configured).await;
    let never_answered = Gate::new();
    let batch = [read("call_a", "a.txt"), read("call_b", "b.txt")];
    h.server
        .push_matching(is_main_request, tool_turn("Reading.", &batch));
    h.server
        .push_matching(is_main_request, ScriptedResponse::sse(vec![]).hang());
    h.server.push_matching(
        is_summary_request,
        summary_answer("Read a.txt and b.txt", Some(&never_answered)),
    );
    h.prompt("read");

    h.server.wait_for_requests(3).await;
    h.agent.submit(Op::Cancel).unwrap();
    let events = h.until_settled(1).await;
    assert_eq!(
        (
            outcomes(&events, "cancel"),
            pending_summaries(&events).map(|p| p.0)
        ),
        (
            vec![(
                "dropped, reason mentions \"cancel\": true".to_owned(),
                ids(&["call_a", "call_b"])
            )],
            Some(StopReason::Cancelled)
        )
    );
}

#[tokio::test]
async fn a_failing_fast_model_is_asked_once_and_the_summary_dropped() {
    let mut h = start(FastModel::Configured).await;
    let batch = [read("call_a", "a.txt"), read("call_b", "b.txt")];
    h.server
        .push_matching(is_main_request, tool_turn("Reading.", &batch));
    h.server.push_matching(is_main_request, text_turn("Done."));
    h.server.push_matching(
        is_summary_request,
        ScriptedResponse::error(503, r#"{"error":{"message":"overloaded"}}"#),
    );
    h.server
        .push_matching(is_summary_request, summary_answer("Never used", None));
    h.prompt("read");

    let events = h.until_settled(1).await;
    assert_eq!(
        (
            outcomes(&events, "failed"),
            h.requests_of(is_summary_request).len(),
            pending_summaries(&events).map(|p| p.0),
        ),
        (
            vec![(
                "dropped, reason mentions \"failed\": true".to_owned(),
                ids(&["call_a", "call_b"])
            )],
            1,
            Some(StopReason::EndTurn)
        )
    );
}

#[tokio::test]
async fn a_single_read_is_labelled_locally_without_a_summary_request() {
    let mut h = start(FastModel::Configured).await;
    h.server.push_matching(
        is_main_request,
        tool_turn("Reading.", &[read("call_a", "a.txt")]),
    );
    h.server.push_matching(is_main_request, text_turn("Done."));
    h.prompt("read a");

    let events = h.until_settled(1).await;
    assert_eq!(
        (
            outcomes(&events, ""),
            summary_usage(&events),
            h.requests_of(is_summary_request).len(),
        ),
        (vec![("Read a.txt".to_owned(), ids(&["call_a"]))], vec![], 0)
    );
}

#[tokio::test]
async fn a_plan_update_alone_is_not_summarised() {
    let mut h = start(FastModel::Configured).await;
    let plan = json!({"todos": [{"id": "1", "content": "Read the files", "status": "pending"}]});
    h.server.push_matching(
        is_main_request,
        tool_turn("Planning.", &[("call_plan", "todo_write", plan)]),
    );
    h.server.push_matching(is_main_request, text_turn("Done."));
    h.prompt("plan");

    let events = h.until_task_finished().await;
    assert_eq!(
        (
            outcomes(&events, ""),
            pending_summaries(&events),
            h.requests_of(is_summary_request).len(),
        ),
        (vec![], Some((StopReason::EndTurn, 0)), 0)
    );
}

#[tokio::test]
async fn without_a_fast_model_no_summary_is_requested() {
    let mut h = start(FastModel::Missing).await;
    let batch = [read("call_a", "a.txt"), read("call_b", "b.txt")];
    h.server
        .push_matching(is_main_request, tool_turn("Reading.", &batch));
    h.server.push_matching(is_main_request, text_turn("Done."));
    h.prompt("read");

    let events = h.until_task_finished().await;
    assert_eq!(
        (
            outcomes(&events, ""),
            pending_summaries(&events),
            h.requests_of(is_main_request).len(),
            h.requests_of(is_summary_request).len(),
        ),
        (vec![], Some((StopReason::EndTurn, 0)), 2, 0)
    );
}
