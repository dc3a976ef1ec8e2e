//! Randomized faults end to end: real SSE bytes from the testkit server through the real
//! OpenAI Chat provider into the loop, with bodies cut at random chunks, HTTP errors and a
//! cancel at a random point. Real sockets mean real time, so this runs a few dozen cases; the
//! thousands run against the scripted provider (`fault_injection.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use common::fake_tools::{ExecLog, FakeTool};
use common::invariants::check_invariants;
use common::openai_sse::*;
use common::test_config;
use corvid_core::agent::spawn_agent;
use corvid_protocol::{CoreEvent, Op};
use corvid_providers::{OpenAiChatProvider, ProviderConfig};
use corvid_testkit::{MockServer, ScriptedResponse};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::json;

#[derive(Debug, Clone)]
enum Fault {
    None,
    /// The connection is aborted after this many chunks.
    Cut(usize),
    /// An HTTP error status instead of a body.
    Status(u16),
}

#[derive(Debug, Clone)]
struct Response {
    text: bool,
    calls: usize,
    fault: Fault,
}

fn response() -> impl Strategy<Value = Response> {
    let fault = prop_oneof![
        3 => Just(Fault::None),
        3 => (0usize..12).prop_map(Fault::Cut),
        1 => prop_oneof![Just(429u16), Just(500), Just(529), Just(401)].prop_map(Fault::Status),
    ];
    (any::<bool>(), 0usize..3, fault).prop_map(|(text, calls, fault)| Response {
        text,
        calls,
        fault,
    })
}

/// The scripted response `i` and the ids of the calls it completes (empty when it is faulty).
fn scripted(i: usize, spec: &Response) -> (ScriptedResponse, Vec<String>) {
    let mut chunks = Vec::new();
    if spec.text {
        chunks.push(text("Looking. "));
    }
    let ids: Vec<String> = (0..spec.calls).map(|j| format!("call_{i}_{j}")).collect();
    for (j, id) in ids.iter().enumerate() {
        chunks.push(call_start(j as u32, id, "read"));
        chunks.push(call_args(j as u32, "{\"tag\":"));
        chunks.push(call_args(j as u32, &format!("\"{id}\"}}")));
    }
    chunks.push(finish(if ids.is_empty() { "stop" } else { "tool_calls" }));
    chunks.push(usage(20, 5));
    chunks.push(done());
    match spec.fault {
        Fault::None => (ScriptedResponse::sse(chunks), ids),
        Fault::Cut(k) if k < chunks.len() => {
            chunks.truncate(k);
            (ScriptedResponse::sse(chunks).cut(), Vec::new())
        }
        Fault::Cut(_) => (ScriptedResponse::sse(chunks), ids),
        Fault::Status(status) => {
            let body =
                json!({"error": {"message": "injected", "type": "server_error"}}).to_string();
            (
                ScriptedResponse::error(status, body).header("retry-after", "0"),
                Vec::new(),
            )
        }
    }
}

fn run(responses: &[Response], cancel_at: Option<usize>) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let server = MockServer::start().await;
        let mut complete = HashSet::new();
        for (i, spec) in responses.iter().enumerate() {
            let (response, ids) = scripted(i, spec);
            complete.extend(ids);
            server.push(response);
        }
        for _ in 0..10 {
            server.push(ScriptedResponse::sse(vec![
                text("All done."),
                finish("stop"),
                done(),
            ]));
        }
        let provider = OpenAiChatProvider::new(&ProviderConfig {
            base_url: server.url(),
            ..ProviderConfig::default()
        })
        .map_err(|e| e.to_string())?;
        let log = ExecLog::default();
        let mut config = test_config(Arc::new(provider), vec![FakeTool::reader("read", 0, &log)]);
        config.retry.initial_delay = Duration::from_millis(1);
        config.retry.max_delay = Duration::from_millis(2);
        let mut handle = spawn_agent(config);
        handle
            .submit(Op::user_turn("go"))
            .map_err(|e| e.to_string())?;
        let mut events = Vec::new();
        let collect = async {
            loop {
                let ev = handle.next_event().await.map_err(|e| e.to_string())?;
                let done = matches!(ev, CoreEvent::TaskFinished { .. });
                events.push(ev);
                if cancel_at == Some(events.len()) {
                    handle.submit(Op::Cancel).map_err(|e| e.to_string())?;
                }
                if done {
                    return Ok::<(), String>(());
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(30), collect)
            .await
            .map_err(|_| "the task never finished".to_owned())??;
        check_invariants(&events, &[])?;
        for tag in log.tags() {
            if !complete.contains(&tag) {
                return Err(format!("{tag} ran although its response never finished"));
            }
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/loop_e2e_faults.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_cuts_and_errors_through_the_real_provider_keep_the_invariants(
        responses in prop::collection::vec(response(), 1..5),
        cancel_at in proptest::option::weighted(0.4, 1usize..25),
    ) {
        if let Err(violation) = run(&responses, cancel_at) {
            prop_assert!(false, "{}", violation);
        }
    }
}
