//! A turn's bulk steps (running a tool, sending a model request) wait until the work its cards
//! woke has run: a front end's task woken by a card's event hook goes first (issue 16).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use corvid_core::agent::spawn_agent;
use corvid_protocol::{
    Completion, CoreEvent, ErrorInfo, FinishReason, ModelRequest, Op, ToolDisplay, ToolKind,
    ToolOutput,
};
use corvid_providers::{EventStream, Provider};
use corvid_tools::{ApprovalNeed, Tool, ToolContext, ToolError};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::Notify;

use common::fake_tools::{ExecLog, FakeTool};
use common::scripted::{ScriptedProvider, call, finish, text};
use common::test_config;

/// How many events the hook announced, and how many of them the woken task has seen.
#[derive(Default)]
struct Wakes {
    hooked: AtomicUsize,
    seen: AtomicUsize,
}

impl Wakes {
    /// Whether the woken task ran after the latest hook call.
    fn caught_up(&self) -> bool {
        self.seen.load(Ordering::SeqCst) == self.hooked.load(Ordering::SeqCst)
    }
}

/// Records, at each bulk step, whether the task woken by the cards before it had already run.
#[derive(Default)]
struct Probe {
    wakes: Arc<Wakes>,
    steps: Mutex<Vec<(&'static str, bool)>>,
}

impl Probe {
    fn step(&self, name: &'static str) {
        self.steps
            .lock()
            .unwrap()
            .push((name, self.wakes.caught_up()));
    }
}

struct ProbedProvider {
    inner: ScriptedProvider,
    probe: Arc<Probe>,
}

impl Provider for ProbedProvider {
    fn name(&self) -> &str {
        "probed"
    }
    fn stream(&self, request: ModelRequest) -> EventStream {
        self.probe.step("request");
        self.inner.stream(request)
    }
    fn complete(&self, request: ModelRequest) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
        self.inner.complete(request)
    }
}

/// A read-only tool that records the probe when its work starts.
struct ProbedTool {
    inner: Arc<dyn Tool>,
    probe: Arc<Probe>,
}

impl Tool for ProbedTool {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn display_name(&self) -> &str {
        self.inner.display_name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn parameters(&self) -> Value {
        self.inner.parameters()
    }
    fn kind(&self) -> ToolKind {
        self.inner.kind()
    }
    fn mutates(&self) -> bool {
        self.inner.mutates()
    }
    fn display(&self, args: &Value, ctx: &ToolContext) -> ToolDisplay {
        self.inner.display(args, ctx)
    }
    fn approval(&self, args: &Value, ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        self.inner.approval(args, ctx)
    }
    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let run = self.inner.execute(args, ctx);
        let probe = self.probe.clone();
        Box::pin(async move {
            probe.step("tool");
            run.await
        })
    }
}

#[tokio::test]
async fn a_tool_and_the_next_request_start_after_the_task_their_cards_woke() {
    let probe = Arc::new(Probe::default());
    let provider = ProbedProvider {
        inner: ScriptedProvider::new(vec![
            vec![
                call("c1", "reader", json!({"tag": "a"})),
                finish(FinishReason::ToolCalls),
            ],
            vec![text("done"), finish(FinishReason::Stop)],
        ]),
        probe: probe.clone(),
    };
    let log = ExecLog::default();
    let tool = Arc::new(ProbedTool {
        inner: FakeTool::reader("reader", 0, &log),
        probe: probe.clone(),
    });
    let handle = spawn_agent(test_config(Arc::new(provider), vec![tool]));
    let (ops, mut events) = handle.split();

    // The front end's task: woken by the hook, it notes how many events it has caught up with.
    let woken = Arc::new(Notify::new());
    let wakes = probe.wakes.clone();
    let reader = tokio::spawn({
        let woken = woken.clone();
        async move {
            loop {
                woken.notified().await;
                let hooked = wakes.hooked.load(Ordering::SeqCst);
                wakes.seen.store(hooked, Ordering::SeqCst);
            }
        }
    });
    let wakes = probe.wakes.clone();
    assert!(events.set_hook(Arc::new(move || {
        wakes.hooked.fetch_add(1, Ordering::SeqCst);
        woken.notify_one();
    })));

    ops.submit(Op::user_turn("go")).unwrap();
    loop {
        if let CoreEvent::TaskFinished { .. } = events.next_event().await.unwrap() {
            break;
        }
    }
    reader.abort();
    assert_eq!(
        *probe.steps.lock().unwrap(),
        [("request", true), ("tool", true), ("request", true)],
        "each bulk step found the task woken by the cards before it not yet run"
    );
}
