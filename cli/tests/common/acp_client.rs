//! The official ACP TypeScript client the end-to-end ACP tests drive (`tests/acp`).

use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Where the client scripts and their `node_modules` live.
pub fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/acp")
}

/// Fails loudly unless node and the client library are installed: these tests never pass by
/// skipping (`bash tests/run.sh`, the README's test command, installs both).
pub fn require_client() {
    let node = std::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let sdk = client_dir()
        .join("node_modules/@agentclientprotocol/sdk/package.json")
        .exists();
    assert!(
        node && sdk,
        "the official ACP client test cannot run: node on PATH: {node}; the client library in \
         tests/acp/node_modules: {sdk}. Run the suite with `bash tests/run.sh` (it installs \
         both), or `cd tests/acp && npm ci`"
    );
}
