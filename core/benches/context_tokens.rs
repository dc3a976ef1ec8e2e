//! How many input tokens a long session sends when the model keeps re-reading the same files:
//! with unchanged re-reads turned into notes (what corvid does) against every read returning
//! its full text (simulated by asking for the same whole file with a different `limit` each
//! time, so no read repeats an earlier one). Tokens are estimated as bytes / 4 of the system
//! prompt and the serialized messages of every request. Run:
//! `cargo bench -p corvid-core --bench context_tokens`

#[allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
#[path = "../tests/common/scripted.rs"]
mod scripted;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use corvid_core::agent::{AgentConfig, spawn_agent};
use corvid_core::policy::MaxTurns;
use corvid_core::retry::RetryPolicy;
use corvid_protocol::{ApprovalMode, CoreEvent, FinishReason, Op};
use scripted::{ScriptedProvider, answer, call, finish};
use serde_json::json;

const TURNS: usize = 200;
const FILES: usize = 5;
const FILE_BYTES: usize = 8 * 1024;

/// Whether a re-read asks for exactly what an earlier read did.
#[derive(Clone, Copy, Debug)]
enum Reads {
    Repeated,
    AllDifferent,
}

fn config(provider: &ScriptedProvider, cwd: &Path) -> AgentConfig {
    let policy = corvid_core::policy::SessionPolicy {
        max_turns: MaxTurns(u32::try_from(TURNS).unwrap_or(u32::MAX) + 1),
        ..Default::default()
    };
    AgentConfig {
        session_id: "bench".into(),
        provider: Arc::new(provider.clone()),
        model: "bench-model".into(),
        fallback_model: None,
        max_output_tokens: None,
        system_prompt: corvid_core::agent::default_system_prompt(cwd),
        cwd: cwd.to_owned(),
        tools: corvid_tools::builtin_tools(),
        fs: Arc::new(corvid_tools::LocalFs),
        approval_mode: ApprovalMode::Yolo,
        retry: RetryPolicy {
            max_attempts: 1,
            initial_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        },
        shell_timeout: Duration::from_secs(10),
        summaries: None,
        history: Vec::new(),
        policy,
        instructions: Default::default(),
    }
}

/// (total estimated input tokens over all requests, tokens of the last request).
async fn session(reads: Reads) -> (usize, usize) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("no temp dir: {e}"));
    let line = "fn example() { let value = compute(42); println!(\"{value}\"); }\n";
    for f in 0..FILES {
        let text = line.repeat(FILE_BYTES / line.len());
        std::fs::write(dir.path().join(format!("f{f}.rs")), text)
            .unwrap_or_else(|e| panic!("cannot write: {e}"));
    }
    let mut script = Vec::new();
    for turn in 0..TURNS {
        let mut args = json!({"file_path": format!("f{}.rs", turn % FILES)});
        if let Reads::AllDifferent = reads {
            args["limit"] = json!(10_000 + turn);
        }
        script.push(vec![
            call(&format!("c{turn}"), "read_file", args),
            finish(FinishReason::ToolCalls),
        ]);
    }
    script.push(answer("done"));
    let provider = ScriptedProvider::new(script);
    let mut handle = spawn_agent(config(&provider, dir.path()));
    let _ = handle.submit(Op::user_turn("read the files again and again"));
    while let Ok(ev) = handle.next_event().await {
        if matches!(ev, CoreEvent::TaskFinished { .. }) {
            break;
        }
    }
    let tokens: Vec<usize> = provider
        .requests()
        .iter()
        .map(|r| (r.system.len() + serde_json::to_string(&r.messages).map_or(0, |s| s.len())) / 4)
        .collect();
    (tokens.iter().sum(), tokens.last().copied().unwrap_or(0))
}

// A benchmark reports on stdout.
#[allow(clippy::print_stdout)]
#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!(
        "{TURNS} turns, each re-reading one of {FILES} files of {} KiB:",
        FILE_BYTES / 1024
    );
    for reads in [Reads::Repeated, Reads::AllDifferent] {
        let (total, last) = session(reads).await;
        println!("  {reads:?}: {total} input tokens in all, {last} in the last request");
    }
}
