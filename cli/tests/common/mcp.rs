//! The MCP servers the end-to-end MCP tests start (`tests/mcp`, installed by `tests/run.sh`):
//! the third-party server-everything and a faulty server on the official SDK.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};

/// `tests/mcp`; fails loudly when its packages are not installed.
pub fn mcp_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
            .is_file(),
        "the MCP tests need tests/mcp/node_modules: run `bash tests/run.sh` (it installs them) \
         or `cd tests/mcp && npm ci`"
    );
    dir.canonicalize().unwrap()
}

/// server-everything's entry point (stdio by default, `streamableHttp` as argument).
pub fn everything_js() -> String {
    let path = "node_modules/@modelcontextprotocol/server-everything/dist/index.js";
    mcp_dir().join(path).display().to_string()
}

/// The faulty server: `crash` exits mid-call, `hang` never answers, `ping` answers `pong`.
pub fn faulty_js() -> String {
    mcp_dir().join("faulty_server.mjs").display().to_string()
}

/// Processes whose environment holds `marker` (`NAME=value`).
pub fn processes_with(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()))
        })
        .collect()
}

/// Waits (up to 10 s) until no process holds `marker`; panics naming the survivors.
pub async fn assert_gone(marker: &str) {
    for _ in 0..100 {
        if processes_with(marker).is_empty() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!(
        "MCP server processes outlived corvid: {:?}",
        processes_with(marker)
    );
}

/// server-everything in its streamable HTTP mode on a free 127.0.0.1 port, once it listens.
pub async fn http_everything() -> (tokio::process::Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = tokio::process::Command::new("node")
        .args([everything_js().as_str(), "streamableHttp"])
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        if line.contains("listening on port") {
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return (child, port);
        }
    }
    panic!("server-everything (streamableHttp) exited before listening");
}
