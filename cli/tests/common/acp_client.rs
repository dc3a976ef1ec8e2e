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

/// Runs a one-session client script (the frame in `tests/acp/one_session.mjs`) in `project`
/// against `corvid --acp`, whose model is the mock OpenAI server at `model_url`, with `home` as
/// `CORVID_HOME`; every permission request is answered with `answer`. Returns the script's
/// output lines, failing on a client error.
pub async fn run_session_script(
    script: &str,
    model_url: &str,
    project: &Path,
    home: &Path,
    prompt: &str,
    answer: &str,
) -> Vec<serde_json::Value> {
    let output = tokio::process::Command::new("node")
        .arg(client_dir().join(script))
        .arg(project)
        .arg(prompt)
        .arg(answer)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_corvid"))
        .arg("--acp")
        .current_dir(project)
        .env("CORVID_HOME", home)
        .env("OPENAI_BASE_URL", model_url)
        .env("OPENAI_API_KEY", "sk-acp-script-test")
        .env("OPENAI_MODEL", "mock-model")
        .env_remove("ANTHROPIC_API_KEY")
        .env("CORVID_EMIT_TOOL_USE_SUMMARIES", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{script} failed ({}):\n{stdout}",
        output.status
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l}: {e}")))
        .collect()
}
