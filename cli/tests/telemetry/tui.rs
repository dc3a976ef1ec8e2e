//! The terminal UI exports too: the real binary in tmux (as `tests/tui/*.sh` drive it) runs the
//! demo model's task with telemetry on, quits with Ctrl+C twice, and its spans and metrics must
//! have reached the loopback collector by the time the process has exited (the exit's flush).

use std::time::Duration;

use pretty_assertions::assert_eq;
use tokio::process::Command;

use super::collector::{Collector, Transport};
use super::common::Sandbox;
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
        Self {
            socket: format!("corvid-telemetry-{}", std::process::id()),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_ui_session_exports_its_task_tools_and_metrics_before_it_exits() {
    let collector = Collector::start(Transport::Grpc).await;
    let sb = Sandbox::new();
    let tmux = Tmux::new();
    let env = [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("TERM", "xterm-256color".to_owned()),
        ("CORVID_HOME", sb.home.path().display().to_string()),
        ("CORVID_DEMO_PACING_MS", "0".to_owned()),
        ("CORVID_ENABLE_TELEMETRY", "1".to_owned()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.clone()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".to_owned()),
        ("CORVID_TELEMETRY_FLUSH_MS", "60000".to_owned()),
    ];
    let env: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{k}={}", quoted(v)))
        .collect();
    let line = format!(
        "cd {} && env -i {} {} --demo -y; echo EXITED $?; sleep 60",
        quoted(&sb.project_dir().display().to_string()),
        env.join(" "),
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
    tmux.run(&["send-keys", "-t", "tui", "-l", PROMPT]).await;
    tmux.run(&["send-keys", "-t", "tui", "Enter"]).await;
    tmux.wait_for("the end of the task", |p| {
        p.contains("This was corvid") && !p.contains("esc to cancel")
    })
    .await;
    // Ctrl+C twice on the idle prompt exits.
    tmux.run(&["send-keys", "-t", "tui", "C-c"]).await;
    tmux.run(&["send-keys", "-t", "tui", "C-c"]).await;
    let pane = tmux.wait_for("the exit", |p| p.contains("EXITED ")).await;
    assert!(pane.contains("EXITED 0"), "{pane}");

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
