//! What a PreToolUse hook costs a tool call (issue 27's budget: a handler running `true` adds
//! under 5 ms p50, spawn included; no hook configured adds nothing measurable). Times the
//! whole event as the loop fires it (select the handlers, write the input, run `bash -c`,
//! read and interpret the output) against the same event with no handler configured. Run:
//! `cargo bench -p corvid-core --bench hook_overhead`

use std::path::Path;
use std::time::{Duration, Instant};

use corvid_core::hooks::{HookContext, HookPayload, HookScope, Hooks, HooksConfig};
use corvid_protocol::ApprovalMode;
use corvid_tools::shell::EnvFilter;
use serde_json::json;

const RUNS: usize = 300;

fn hooks(block: &str) -> Hooks {
    let mut config = HooksConfig::default();
    if let Err(e) = config.add_file(Path::new("/bench/settings.json"), block, HookScope::User) {
        panic!("the bench's hooks block is invalid: {e}");
    }
    let env = std::env::var_os("PATH")
        .map(|path| vec![("PATH".into(), path)])
        .unwrap_or_default();
    Hooks::new(config, env, &EnvFilter::default())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

#[allow(clippy::print_stdout)] // a bench prints its figures
async fn measure(name: &str, hooks: &Hooks, ctx: &HookContext, payload: &HookPayload) {
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        let outcome = hooks.run(ctx, payload).await;
        times.push(started.elapsed());
        std::hint::black_box(outcome);
    }
    times.sort();
    println!(
        "{name:<28} p50 {:>10.3?}  p90 {:>10.3?}  max {:>10.3?}  ({RUNS} runs)",
        percentile(&times, 0.5),
        percentile(&times, 0.9),
        times[times.len() - 1],
    );
}

fn main() {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => panic!("cannot start a tokio runtime: {e}"),
    };
    let dir = std::env::temp_dir();
    let ctx = HookContext {
        session_id: "bench".into(),
        transcript_path: None,
        project_dir: dir.clone(),
        cwd: dir.clone(),
        approval_mode: ApprovalMode::Default,
        agent: None,
    };
    let payload = HookPayload::tool(
        corvid_core::hooks::HookEvent::PreToolUse,
        "run_shell_command",
        "call-1",
        &json!({"command": "cargo test"}),
        &dir,
    );
    let with_true = hooks(
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}"#,
    );
    let none = hooks("{}");
    runtime.block_on(async {
        measure("no hook configured", &none, &ctx, &payload).await;
        measure("PreToolUse running `true`", &with_true, &ctx, &payload).await;
    });
}
