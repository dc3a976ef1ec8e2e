//! The agent's own cost per turn as a session grows (issue 11 item 8), and what compaction
//! saves in input tokens. The model answers at once (a provider behind the trait), so what is
//! timed is corvid: building the request from the history, the turn loop, the events.
//!
//! `cargo bench -p corvid-core --bench long_session` prints, for turns 10, 300 and 1,000 of
//! one session: the mean time per turn around that point and the process RSS; then the total
//! input tokens of a 200-turn session with compaction off and on.
#![allow(clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use corvid_core::agent::{AgentConfig, AgentHandle, spawn_agent};
use corvid_core::context::ContextPolicy;
use corvid_core::context::meter::request_bytes;
use corvid_core::retry::RetryPolicy;
use corvid_protocol::{
    Completion, CoreEvent, ErrorInfo, FinishReason, ModelRequest, Op, StreamEvent, Usage,
};
use corvid_providers::{EventStream, Provider};
use futures::future::BoxFuture;

/// Answers every request at once with a few hundred bytes of text, reporting the prompt's
/// size as its usage (bytes / 4), and adds up the input tokens it was sent.
#[derive(Default)]
struct InstantModel {
    input_tokens: AtomicU64,
}

const ANSWER: &str = "Done. I looked at the module, the change is small and self-contained; \
the tests cover the new branch and the old behaviour is unchanged. Next I would update the \
docs and the changelog, then run the whole suite once more before committing the result.";

impl Provider for InstantModel {
    fn name(&self) -> &str {
        "instant"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        let prompt = request_bytes(&request.system, &request.tools, &request.messages) / 4;
        self.input_tokens.fetch_add(prompt, Ordering::Relaxed);
        let events = if request.tools.is_empty() && request.system.contains("You summarize") {
            vec![StreamEvent::Text {
                text: "Goal: the numbered requests. Decisions: none. Files: none.".into(),
            }]
        } else {
            vec![StreamEvent::Text {
                text: ANSWER.into(),
            }]
        };
        let usage = Usage {
            input_tokens: prompt,
            output_tokens: 60,
            total_tokens: prompt + 60,
            ..Usage::default()
        };
        let items = events
            .into_iter()
            .chain([
                StreamEvent::Usage(usage),
                StreamEvent::Finished {
                    reason: FinishReason::Stop,
                },
            ])
            .map(Ok);
        Box::pin(futures::stream::iter(items.collect::<Vec<_>>()))
    }

    fn complete(
        &self,
        _request: ModelRequest,
    ) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
        Box::pin(async { Ok(Completion::default()) })
    }
}

fn config(model: Arc<InstantModel>, context: ContextPolicy) -> AgentConfig {
    let policy = corvid_core::policy::SessionPolicy {
        context,
        ..Default::default()
    };
    AgentConfig {
        session_id: "bench".into(),
        provider: model,
        model: "bench-model".into(),
        fallback_model: None,
        max_output_tokens: Some(1000),
        system_prompt: "You are a coding agent. ".repeat(100),
        cwd: std::env::temp_dir(),
        tools: corvid_tools::builtin_tools(),
        fs: Arc::new(corvid_tools::LocalFs),
        approval_mode: corvid_protocol::ApprovalMode::Default,
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

async fn turn(handle: &mut AgentHandle, n: usize) {
    handle
        .submit(Op::user_turn(format!(
            "Request {n}: please look at src/module_{n}.rs and tell me what the function \
             handle_{n} does and whether it is tested."
        )))
        .expect("the agent is running");
    loop {
        let event = handle.next_event().await.expect("the agent is running");
        if std::env::var_os("BENCH_TRACE").is_some() {
            eprintln!("{event:?}");
        }
        match event {
            CoreEvent::TaskFinished { error: None, .. } => return,
            CoreEvent::TaskFinished { error: Some(e), .. } => panic!("turn {n} failed: {e}"),
            _ => {}
        }
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

async fn per_turn_cost() {
    let off = ContextPolicy {
        auto_compact: false,
        ..ContextPolicy::default()
    };
    let mut handle = spawn_agent(config(Arc::new(InstantModel::default()), off));
    let checkpoints = [10usize, 300, 1_000];
    let window = 10;
    println!(
        "per-turn agent overhead, compaction off (mean of the {window} turns up to each point)"
    );
    let mut done = 0;
    for &point in &checkpoints {
        while done < point - window {
            done += 1;
            turn(&mut handle, done).await;
        }
        let start = Instant::now();
        while done < point {
            done += 1;
            turn(&mut handle, done).await;
        }
        let per_turn = start.elapsed() / window as u32;
        println!(
            "  turn {point:>5}: {:>8.3} ms/turn   RSS {:>6.1} MiB",
            per_turn.as_secs_f64() * 1e3,
            rss_kib() as f64 / 1024.0
        );
    }
}

async fn tokens_over(turns: usize, context: ContextPolicy) -> u64 {
    let model = Arc::new(InstantModel::default());
    let mut handle = spawn_agent(config(model.clone(), context));
    for n in 1..=turns {
        turn(&mut handle, n).await;
    }
    model.input_tokens.load(Ordering::Relaxed)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        per_turn_cost().await;
        let window = Some(16_384);
        let off = tokens_over(
            200,
            ContextPolicy {
                window_override: window,
                auto_compact: false,
                ..ContextPolicy::default()
            },
        )
        .await;
        let on = tokens_over(
            200,
            ContextPolicy {
                window_override: window,
                ..ContextPolicy::default()
            },
        )
        .await;
        println!("input tokens over 200 turns (16k window): compaction off {off}, on {on}");
    });
}
