//! `corvid mcp list`: every configured server with its status, tools and error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, everything_js, run, stdout};
use pretty_assertions::assert_eq;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_list_shows_each_servers_status_tools_and_error() {
    let sb = Sandbox::new();
    let settings = json!({"mcpServers": {
        "everything": {"command": "node", "args": [everything_js()], "includeTools": ["echo", "get-sum"]},
        "broken": {"command": "corvid-no-such-mcp-server"},
        "off": {"command": "node", "enabled": false},
    }});
    sb.user_settings(&settings.to_string());
    let out = run(sb.corvid(&["mcp", "list"])).await;
    let text = stdout(&out);
    let project = sb.project_dir().canonicalize().unwrap();
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "broken  failed  0 tools  (stdio: corvid-no-such-mcp-server)".to_owned(),
            format!(
                "  error: MCP server `broken` could not start: cannot start \
                 `corvid-no-such-mcp-server`: no such command (in {}); check `command` and PATH",
                project.display()
            ),
            format!(
                "everything  ready  2 tools  (stdio: node {})",
                everything_js()
            ),
            "  mcp__everything__echo, mcp__everything__get-sum".to_owned(),
            "off  disabled  0 tools  (stdio: node)".to_owned(),
        ]
    );
    assert_eq!(out.status.code(), Some(1), "a server failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_list_without_servers_says_where_to_add_them() {
    let out = run(Sandbox::new().corvid(&["mcp", "list"])).await;
    assert!(
        stdout(&out).starts_with("No MCP servers configured."),
        "{}",
        stdout(&out)
    );
    assert_eq!(out.status.code(), Some(0));
}
