//! Hostile MCP servers (issue 25 findings 10 and 11): an endless stderr line, tools claiming
//! to be read-only, and thousands of tools. The server is `fixtures/hostile_server.py`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use corvid_mcp::{Launch, McpServers, Status, ToolLimits, parse_servers};
use corvid_protocol::ToolKind;
use corvid_tools::{ApprovalNeed, ToolContext, ToolSource};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing_subscriber::layer::SubscriberExt;

fn server_script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hostile_server.py")
        .display()
        .to_string()
}

fn started(value: Value, limits: ToolLimits) -> McpServers {
    let mut warnings = Vec::new();
    let configs = parse_servers(&value, &mut warnings).unwrap();
    assert_eq!(warnings, Vec::<String>::new());
    let launch = Launch {
        env_filter: Default::default(),
        env: Arc::new(|name| std::env::var(name).ok()),
        cwd: std::env::temp_dir(),
    };
    McpServers::start(configs, launch, Duration::from_secs(60), limits)
}

fn hostile(name: &str, args: &[&str], extra: Value) -> Value {
    let mut entry = json!({
        "command": "python3",
        "args": std::iter::once(server_script())
            .chain(args.iter().map(|a| (*a).to_owned()))
            .collect::<Vec<_>>(),
    });
    if let (Value::Object(entry), Value::Object(extra)) = (&mut entry, extra) {
        entry.extend(extra);
    }
    json!({ name: entry })
}

fn tool_ctx() -> ToolContext {
    ToolContext {
        call_id: "c1".into(),
        cwd: std::env::temp_dir(),
        fs: Arc::new(corvid_tools::LocalFs),
        cancel: CancellationToken::new(),
        shell_timeout: Duration::from_secs(10),
        shell: Default::default(),
        live_output: None,
    }
}

async fn ready(servers: &McpServers) {
    servers.wait_started().await;
    for report in servers.reports() {
        assert_eq!(report.status, Status::Ready, "{report:?}");
    }
}

/// The lengths of the server stderr lines corvid logged, and a wake-up for each new one.
#[derive(Default)]
struct StderrLog {
    lines: Mutex<Vec<String>>,
    added: Notify,
}

struct Capture(Arc<StderrLog>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if event.metadata().target() != "corvid_mcp::server_stderr" {
            return;
        }
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        self.0.lines.lock().unwrap().push(message.0);
        self.0.added.notify_waiters();
    }
}

/// The process-wide log capture (installed once per test binary).
fn stderr_log() -> Arc<StderrLog> {
    static LOG: OnceLock<Arc<StderrLog>> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Arc::new(StderrLog::default());
        let subscriber = tracing_subscriber::registry().with(Capture(log.clone()));
        tracing::subscriber::set_global_default(subscriber).unwrap();
        log
    })
    .clone()
}

#[tokio::test]
async fn a_huge_stderr_line_is_logged_cut_to_its_cap() {
    let log = stderr_log();
    let huge = 40 * 1024 * 1024;
    let servers = started(
        hostile("noisy", &["--stderr-line", &huge.to_string()], json!({})),
        ToolLimits::default(),
    );
    ready(&servers).await;
    let logged = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let added = log.added.notified();
            {
                let lines = log.lines.lock().unwrap();
                if lines.iter().any(|l| l == "stderr-done") {
                    return lines.clone();
                }
            }
            added.await;
        }
    })
    .await
    .expect("the server's last stderr line never reached the log");
    let longest = logged.iter().map(String::len).max().unwrap();
    assert!(
        longest <= corvid_mcp::MAX_STDERR_LINE + 100,
        "a stderr line of {longest} bytes was kept"
    );
    let cut = logged.iter().find(|l| l.starts_with("xxxx")).unwrap();
    assert!(
        cut.ends_with(&format!(
            "… [{} more bytes of this line dropped]",
            huge - corvid_mcp::MAX_STDERR_LINE
        )),
        "{}",
        &cut[cut.len().saturating_sub(80)..]
    );
}

#[tokio::test]
async fn a_servers_read_only_hint_does_not_skip_approval() {
    let servers = started(
        hostile("claims", &["--read-only"], json!({})),
        ToolLimits::default(),
    );
    ready(&servers).await;
    let tool = servers.tools()[0].clone();
    assert_eq!(tool.name(), "mcp__claims__tool-0");
    assert!(matches!(
        tool.approval(&json!({}), &tool_ctx()).await,
        ApprovalNeed::Execute(_)
    ));
    assert!(tool.mutates(), "an unbelieved hint must not make it a read");
    assert!(!tool.allowed_in_plan_mode());
    assert_eq!(tool.kind(), ToolKind::Other);
}

/// An MCP server is not sandboxed, yet even as root it cannot open corvid's environment or
/// memory (issue 25 finding 5): corvid is not dumpable, and the server has lost the
/// capabilities that would override that. This process stands in for corvid.
#[tokio::test]
async fn an_mcp_server_cannot_read_corvids_environ_or_memory() {
    nix::sys::prctl::set_dumpable(false).unwrap();
    let servers = started(
        hostile("prober", &["--probe-parent"], json!({})),
        ToolLimits::default(),
    );
    ready(&servers).await;
    let tool = servers.tools()[0].clone();
    let out = tool.execute(json!({}), tool_ctx()).await.unwrap();
    assert!(
        out.text.contains("CLOSED environ") && out.text.contains("CLOSED mem"),
        "the server read corvid's environment or memory: {}",
        out.text
    );
}

#[tokio::test]
async fn a_read_only_hint_is_believed_only_when_the_user_trusts_the_servers_hints() {
    let servers = started(
        hostile("believed", &["--read-only"], json!({"trustHints": true})),
        ToolLimits::default(),
    );
    ready(&servers).await;
    let tool = servers.tools()[0].clone();
    assert_eq!(
        tool.approval(&json!({}), &tool_ctx()).await,
        ApprovalNeed::None
    );
    assert!(!tool.mutates());
    assert_eq!(tool.kind(), ToolKind::Read);
}

#[tokio::test]
async fn a_server_with_thousands_of_tools_is_cut_to_the_per_server_cap_with_a_notice() {
    let servers = started(
        hostile("flood", &["--tools", "3000"], json!({})),
        ToolLimits::default(),
    );
    ready(&servers).await;
    let tools = servers.tools();
    assert_eq!(tools.len(), 100);
    assert_eq!(tools[99].name(), "mcp__flood__tool-99");
    let notices = servers.take_notices();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with(
            "MCP server `flood` lists 3000 tools; corvid offers its first 100 \
             (`mcp.maxToolsPerServer`; its `includeTools` picks which); left out: tool-100, \
             tool-101,"
        ) && notices[0].ends_with("tool-119 and 2880 more"),
        "{}",
        notices[0]
    );
    assert_eq!(servers.take_notices(), Vec::<String>::new(), "told once");
}

#[tokio::test]
async fn all_servers_together_are_cut_to_the_total_cap_with_a_notice() {
    let mut value = hostile("a", &["--tools", "3"], json!({}));
    value.as_object_mut().unwrap().extend(
        hostile("b", &["--tools", "3"], json!({}))
            .as_object()
            .unwrap()
            .clone(),
    );
    let servers = started(
        value,
        ToolLimits {
            per_server: 100,
            total: 4,
        },
    );
    ready(&servers).await;
    let names: Vec<String> = servers
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "mcp__a__tool-0",
            "mcp__a__tool-1",
            "mcp__a__tool-2",
            "mcp__b__tool-0"
        ]
    );
    assert_eq!(
        servers.take_notices(),
        [
            "the MCP servers list 6 tools together; corvid offers the first 4 (`mcp.maxTools`); \
          left out: mcp__b__tool-1, mcp__b__tool-2"
        ]
    );
    servers.tools();
    assert_eq!(servers.take_notices(), Vec::<String>::new(), "told once");
}
