//! Telemetry of `corvid --acp`, driven over its stdio as a client would: the task exports like
//! headless, stdout stays pure JSON-RPC, and a call the client was asked about carries how long
//! the approval took.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::collector::{Collector, Transport};
use super::common::{Sandbox, text_turn, turn};
use super::{attr, export_to, named};
use corvid_testkit::{MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;

/// A running `corvid --acp` and the frames it wrote.
struct Acp {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    /// Permission requests answered (each with a rejection).
    rejected: usize,
}

impl Acp {
    async fn start(mut cmd: tokio::process::Command) -> Self {
        let mut child = cmd.stdin(std::process::Stdio::piped()).spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut acp = Self {
            child,
            stdin,
            lines,
            next_id: 1,
            rejected: 0,
        };
        acp.ask("initialize", json!({"protocolVersion": 1})).await;
        acp
    }

    async fn send(&mut self, frame: &Value) {
        self.stdin
            .write_all(format!("{frame}\n").as_bytes())
            .await
            .unwrap();
    }

    /// Sends one request and reads up to its answer; every line must be JSON-RPC, and a
    /// permission request on the way is rejected.
    async fn ask(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line = self.lines.next_line().await.unwrap().expect("an answer");
            let frame: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout is not JSON-RPC: {line}: {e}"));
            if frame["method"] == "session/request_permission" {
                let reject = frame["params"]["options"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|o| o["kind"] == "reject_once")
                    .unwrap()["optionId"]
                    .clone();
                self.rejected += 1;
                self.send(&json!({"jsonrpc": "2.0", "id": frame["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": reject}}}))
                    .await;
            } else if frame["id"] == id {
                return frame;
            }
        }
    }

    /// Opens a session in `cwd`, sends `prompt` and returns the session id once the turn ended.
    async fn prompt(&mut self, cwd: &std::path::Path, prompt: &str) -> String {
        let session = self.new_session(cwd).await;
        self.prompt_in(&session, prompt).await;
        session
    }

    async fn new_session(&mut self, cwd: &std::path::Path) -> String {
        let new = self
            .ask("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        new["result"]["sessionId"].as_str().unwrap().to_owned()
    }

    /// Sends `prompt` in `session` and waits for the end of its turn.
    async fn prompt_in(&mut self, session: &str, prompt: &str) {
        let done = self
            .ask(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": prompt}]}),
            )
            .await;
        assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    }

    /// Closes stdin (the client is gone) and waits for a clean exit, the export's flush
    /// included.
    async fn finish(self) {
        let Self {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        assert!(child.wait().await.unwrap().success());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_session_exports_its_task_and_keeps_stdout_pure_json_rpc() {
    let collector = Collector::start(Transport::HttpProtobuf).await;
    let sb = Sandbox::new();
    let mut cmd = sb.corvid(&["--acp", "--demo"]);
    cmd.env("CORVID_ENABLE_TELEMETRY", "1");
    export_to(&mut cmd, &collector, Transport::HttpProtobuf);
    let mut acp = Acp::start(cmd).await;
    let session = acp.prompt(sb.project_dir(), "look around").await;
    acp.finish().await;

    let spans = collector.spans();
    let task = named(&spans, "corvid.task");
    assert_eq!(task.len(), 1, "{spans:#?}");
    assert_eq!(attr(task[0], "session.id"), session);
    assert!(!named(&spans, "corvid.model_request").is_empty());
    assert!(!named(&spans, "corvid.tool_call").is_empty());
    assert_eq!(collector.metrics()["corvid.session.count"][0].1, 1.0);
    assert!(!collector.saw_text("look around"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_client_was_asked_about_exports_its_approval_wait_and_no_content() {
    let collector = Collector::start(Transport::Grpc).await;
    let server = MockServer::start().await;
    let args = json!({"file_path": "notes.txt", "content": "file-content-marker-6120"});
    server.push(ScriptedResponse::sse(turn(
        json!({"tool_calls": [{"index": 0, "id": "call_w", "type": "function",
               "function": {"name": "write_file", "arguments": args.to_string()}}]}),
        "tool_calls",
    )));
    server.push(text_turn("Not written."));
    let sb = Sandbox::new();
    let mut cmd = sb.against(&server, "sk-test", &["--acp"]);
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("CORVID_ENABLE_TELEMETRY", "1");
    export_to(&mut cmd, &collector, Transport::Grpc);
    let mut acp = Acp::start(cmd).await;
    acp.prompt(sb.project_dir(), "write the notes").await;
    assert_eq!(acp.rejected, 1);
    acp.finish().await;

    let spans = collector.spans();
    let tools = named(&spans, "corvid.tool_call");
    assert_eq!(tools.len(), 1, "{spans:#?}");
    let write = tools[0];
    assert_eq!(
        (attr(write, "tool"), attr(write, "outcome")),
        ("write_file", "error")
    );
    assert!(attr(write, "approval_wait_ms").parse::<u64>().is_ok());
    let durations = &collector.metrics()["corvid.tool.duration"];
    assert_eq!(durations[0].0["tool"], "write_file");
    assert!(!collector.saw_text("file-content-marker-6120"));
    assert!(!collector.saw_text("write the notes"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compress_exports_a_requested_compaction_kept_when_not_worth_it_and_compacted_when_it_is() {
    let collector = Collector::start(Transport::HttpProtobuf).await;
    let server = MockServer::start().await;
    server.push(text_turn("A."));
    server.push(text_turn("B."));
    // The first summary is larger than the turns it would replace, the second is not.
    server.push(text_turn(&"long summary ".repeat(1000)));
    server.push(text_turn("Short summary."));
    let sb = Sandbox::new();
    let mut cmd = sb.against(&server, "sk-test", &["--acp"]);
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("CORVID_ENABLE_TELEMETRY", "1");
    export_to(&mut cmd, &collector, Transport::HttpProtobuf);
    let mut acp = Acp::start(cmd).await;
    let session = acp.new_session(sb.project_dir()).await;
    acp.prompt_in(&session, &format!("first {}", "x".repeat(3000)))
        .await;
    acp.prompt_in(&session, "second").await;
    acp.prompt_in(&session, "/compress").await;
    acp.prompt_in(&session, "/compress").await;
    acp.finish().await;

    let spans = collector.spans();
    let tasks = named(&spans, "corvid.task");
    assert_eq!(tasks.len(), 4, "{spans:#?}");
    let mut compactions: Vec<(&str, &str, bool)> = named(&spans, "corvid.compaction")
        .iter()
        .map(|c| {
            assert!(tasks.iter().any(|t| t.span_id == c.parent_span_id));
            (
                attr(c, "trigger"),
                attr(c, "outcome"),
                c.attrs.contains_key("tokens_after"),
            )
        })
        .collect();
    compactions.sort();
    assert_eq!(
        compactions,
        [
            ("requested", "compacted", true),
            ("requested", "kept", false)
        ]
    );
    assert!(!collector.saw_text("Short summary"));
}
