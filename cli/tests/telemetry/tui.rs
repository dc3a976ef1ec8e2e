//! The terminal UI exports too: the real binary in tmux (as `tests/tui/*.sh` drive it) runs a
//! task with telemetry on, quits with Ctrl+C twice, and its spans and metrics must have reached
//! the loopback collector by the time the process has exited (the exit's flush); a call
//! approved with `y` carries its wait, and `logPrompts` exports the prompt and tool input.

use std::time::Duration;

use pretty_assertions::assert_eq;
use tokio::process::Command;

use corvid_testkit::{MockServer, RecordedRequest, ScriptedResponse};
use serde_json::json;

use super::collector::{Collector, Transport};
use super::common::{Sandbox, text_turn, turn};
use super::{attr, named};

const PROMPT: &str = "Look around this project and tell me what it is";

/// A tmux server of its own, killed when the test ends however it ends.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new() -> Self {
        let installed = std::process::Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            installed,
            "tmux is not installed: `bash tests/run.sh` installs it (or `apt-get install tmux`)"
        );
        // One server per test: tests of this binary run side by side.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Self {
            socket: format!("corvid-telemetry-{}-{n}", std::process::id()),
        }
    }

    async fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env("TERM", "xterm-256color")
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    async fn capture(&self) -> String {
        self.run(&["capture-pane", "-p", "-J", "-S", "-5000", "-t", "tui"])
            .await
    }

    /// Polls the pane until `done` holds for its text; a minute without it fails the test
    /// with the pane (a hang, not a measurement).
    async fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        for _ in 0..600 {
            let pane = self.capture().await;
            if done(&pane) {
                return pane;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("timed out waiting for {what}:\n{}", self.capture().await);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// Quotes `s` for the shell tmux runs the command with.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Starts `corvid ARGS` in tmux in `sb`'s project, with nothing in its environment but what a
/// terminal needs, the sandbox's home, telemetry on towards `collector` over grpc, and `env`;
/// waits for the composer.
async fn start(sb: &Sandbox, collector: &Collector, args: &str, env: &[(&str, String)]) -> Tmux {
    let tmux = Tmux::new();
    let base = [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("TERM", "xterm-256color".to_owned()),
        ("CORVID_HOME", sb.home.path().display().to_string()),
        ("CORVID_DEMO_PACING_MS", "0".to_owned()),
        ("CORVID_ENABLE_TELEMETRY", "1".to_owned()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.clone()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".to_owned()),
        ("CORVID_TELEMETRY_FLUSH_MS", "60000".to_owned()),
    ];
    let vars: Vec<String> = base
        .iter()
        .map(|(k, v)| (*k, v))
        .chain(env.iter().map(|(k, v)| (*k, v)))
        .map(|(k, v)| format!("{k}={}", quoted(v)))
        .collect();
    let line = format!(
        "cd {} && env -i {} {} {args}; echo EXITED $?; sleep 60",
        quoted(&sb.project_dir().display().to_string()),
        vars.join(" "),
        quoted(env!("CARGO_BIN_EXE_corvid")),
    );
    tmux.run(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "tui",
        "-x",
        "100",
        "-y",
        "30",
        &line,
    ])
    .await;
    tmux.wait_for("the composer", |p| p.contains("Ask corvid"))
        .await;
    tmux
}

impl Tmux {
    async fn type_prompt(&self, prompt: &str) {
        self.run(&["send-keys", "-t", "tui", "-l", prompt]).await;
        self.run(&["send-keys", "-t", "tui", "Enter"]).await;
    }

    /// Ctrl+C twice on the idle prompt, then waits for the exit (the export's flush included).
    async fn quit(&self) {
        self.run(&["send-keys", "-t", "tui", "C-c"]).await;
        self.run(&["send-keys", "-t", "tui", "C-c"]).await;
        let pane = self.wait_for("the exit", |p| p.contains("EXITED ")).await;
        assert!(pane.contains("EXITED 0"), "{pane}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_ui_session_exports_its_task_tools_and_metrics_before_it_exits() {
    let collector = Collector::start(Transport::Grpc).await;
    let sb = Sandbox::new();
    let tmux = start(&sb, &collector, "--demo -y", &[]).await;
    tmux.type_prompt(PROMPT).await;
    tmux.wait_for("the end of the task", |p| {
        p.contains("This was corvid") && !p.contains("esc to cancel")
    })
    .await;
    tmux.quit().await;

    // The exit's flush waited for the collector's answer: everything is in.
    let spans = collector.spans();
    let tasks = named(&spans, "corvid.task");
    assert_eq!(tasks.len(), 1, "{spans:#?}");
    assert_eq!(attr(tasks[0], "stop_reason"), "end_turn");
    let requests = named(&spans, "corvid.model_request");
    assert!(!requests.is_empty(), "{spans:#?}");
    assert!(
        requests
            .iter()
            .all(|r| r.parent_span_id == tasks[0].span_id)
    );
    assert_eq!(attr(requests[0], "model"), "corvid-demo");
    let tools = named(&spans, "corvid.tool_call");
    assert!(!tools.is_empty(), "{spans:#?}");
    assert!(tools.iter().all(|t| attr(t, "outcome") == "success"));
    let metrics = collector.metrics();
    assert_eq!(metrics["corvid.session.count"][0].1, 1.0, "{metrics:#?}");
    assert!(metrics.contains_key("corvid.tokens"), "{metrics:#?}");
    assert!(metrics.contains_key("corvid.tool.duration"), "{metrics:#?}");
    assert!(!collector.saw_text(PROMPT));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_terminal_ui_an_approved_call_exports_its_wait_and_log_prompts_exports_content() {
    let collector = Collector::start(Transport::Grpc).await;
    let server = MockServer::start().await;
    // Only the agent's own requests (they offer tools) get the script; a title request does not.
    let offers_tools =
        |r: &RecordedRequest| r.body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let args = json!({"file_path": "notes.txt", "content": "tui-file-marker-7272\n"});
    server.push_matching(
        offers_tools,
        ScriptedResponse::sse(turn(
            json!({"tool_calls": [{"index": 0, "id": "call_w", "type": "function",
                   "function": {"name": "write_file", "arguments": args.to_string()}}]}),
            "tool_calls",
        )),
    );
    server.push_matching(offers_tools, text_turn("Wrote the notes."));
    let sb = Sandbox::new();
    sb.user_settings(r#"{"telemetry": {"logPrompts": true}}"#);
    let model = [
        ("OPENAI_API_KEY", "sk-test".to_owned()),
        ("OPENAI_BASE_URL", server.url()),
        ("OPENAI_MODEL", "mock-model".to_owned()),
    ];
    let tmux = start(&sb, &collector, "", &model).await;
    tmux.type_prompt("tui-prompt-marker-8181 write the notes")
        .await;
    tmux.wait_for("the approval", |p| p.contains("Allow Write notes.txt?"))
        .await;
    // The dialog ignores keys until the input has paused a moment (typing meant for the prompt
    // box must not answer it): a `y` that landed in the box instead is cleared, and sent again
    // after a pause longer than that guard.
    let in_the_box = |p: &str| p.lines().any(|l| l.trim_end() == "› y");
    for attempt in 0.. {
        assert!(attempt < 20, "the approval never took the answer");
        tokio::time::sleep(Duration::from_millis(600)).await;
        tmux.run(&["send-keys", "-t", "tui", "y"]).await;
        let pane = tmux
            .wait_for("the answer or the box", |p| {
                !p.contains("Allow Write notes.txt?") || in_the_box(p)
            })
            .await;
        if !pane.contains("Allow Write notes.txt?") {
            break;
        }
        tmux.run(&["send-keys", "-t", "tui", "C-u"]).await;
        tmux.wait_for("the box cleared", |p| !in_the_box(p)).await;
    }
    tmux.wait_for("the end of the task", |p| {
        p.contains("Wrote the notes.") && !p.contains("esc to cancel")
    })
    .await;
    tmux.quit().await;
    assert_eq!(
        std::fs::read_to_string(sb.project_dir().join("notes.txt")).unwrap(),
        "tui-file-marker-7272\n"
    );

    let spans = collector.spans();
    let task = named(&spans, "corvid.task");
    assert_eq!(task.len(), 1, "{spans:#?}");
    assert_eq!(
        task[0].events[0].1["prompt"],
        "tui-prompt-marker-8181 write the notes"
    );
    let write = named(&spans, "corvid.tool_call");
    assert_eq!(write.len(), 1, "{spans:#?}");
    assert_eq!(
        (attr(write[0], "tool"), attr(write[0], "outcome")),
        ("write_file", "success")
    );
    assert!(attr(write[0], "approval_wait_ms").parse::<u64>().is_ok());
    assert!(collector.saw_text("tui-file-marker-7272"));
}
