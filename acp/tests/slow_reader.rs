//! A client that reads slower than the model writes (issue 16): the server's output is bounded
//! and text coalesces, but the client still gets every delta's text in its place and every
//! tool frame in order, with the prompt's answer after all of them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::raw::RawClient;
use common::*;
use corvid_protocol::FinishReason;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const DELTAS: usize = 3000;

fn deltas(prefix: &str) -> impl Iterator<Item = String> + '_ {
    (0..DELTAS).map(move |i| format!("{prefix}{i} "))
}

/// A session in `dir` answering from `turns`, prompted (request id 2), whose server writes to
/// a 512-byte pipe: its writer is blocked most of the time.
async fn prompted_through_a_small_pipe(dir: &std::path::Path, turns: Vec<Vec<Step>>) -> RawClient {
    let mut client = RawClient::start(512, ScriptedProvider::new(turns));
    client.initialize().await;
    let sid = client.new_session(1, dir).await;
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}}),
        )
        .await;
    client
}

/// Every update up to the prompt's `end_turn` answer, read one line at a time with pauses in
/// between; the server asks the client nothing meanwhile.
async fn read_slowly_to_the_answer(client: &mut RawClient) -> Vec<Value> {
    let mut updates = Vec::new();
    loop {
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
        let message = client.next().await;
        if message["id"] == json!(2) && message.get("method").is_none() {
            assert_eq!(message["result"]["stopReason"], json!("end_turn"));
            return updates;
        }
        assert_eq!(message.get("id"), None, "no request expected: {message}");
        updates.push(message["params"]["update"].clone());
    }
}

#[tokio::test]
async fn a_slow_reader_gets_all_text_in_place_and_every_tool_frame_in_order() {
    let dir = project();
    let mut first: Vec<Step> = deltas("t").map(|t| text(&t)).collect();
    first.extend([
        preparing("c1", "read_file"),
        call("c1", "read_file", json!({"file_path": "a.txt"})),
        finish(FinishReason::ToolCalls),
    ]);
    let mut second: Vec<Step> = deltas("u").map(|t| text(&t)).collect();
    second.push(finish(FinishReason::Stop));
    let mut client = prompted_through_a_small_pipe(dir.path(), vec![first, second]).await;

    let updates = read_slowly_to_the_answer(&mut client).await;

    let chunks: Vec<(usize, &str)> = updates
        .iter()
        .enumerate()
        .filter(|(_, u)| u["sessionUpdate"] == "agent_message_chunk")
        .map(|(i, u)| (i, u["content"]["text"].as_str().unwrap()))
        .collect();
    let all_text: String = chunks.iter().map(|(_, t)| *t).collect();
    assert_eq!(
        all_text,
        deltas("t").chain(deltas("u")).collect::<String>(),
        "the text arrives complete and in order"
    );
    assert!(chunks.len() <= 2 * DELTAS);

    let cards: Vec<(usize, String)> = updates
        .iter()
        .enumerate()
        .filter(|(_, u)| u["toolCallId"] == "c1")
        .map(|(i, u)| (i, u["status"].as_str().unwrap_or("").to_owned()))
        .collect();
    assert_eq!(
        cards.iter().map(|(_, s)| s.as_str()).collect::<Vec<_>>(),
        ["pending", "in_progress", "completed"],
        "every card frame, in order: {cards:?}"
    );
    // No chunk merged across the card: the first answer's text is all before it, the
    // second's all after it.
    let (first_card, last_card) = (cards[0].0, cards[2].0);
    for (at, text) in &chunks {
        if text.contains('t') {
            assert!(
                *at < first_card,
                "first-answer text after the card: {text:.40}"
            );
        }
        if text.contains('u') {
            assert!(
                *at > last_card,
                "second-answer text before the card: {text:.40}"
            );
        }
    }
}

/// More cards at once than the session's queue holds, read slowly: the ones held back move up
/// as the queue empties (the pump used to stop for good after the 65th frame, its task waiting
/// on nothing), and the prompt still ends with every card. Cards go out from the task that
/// emitted them; when that finds the output full, the pump's own task waits for room.
#[tokio::test]
async fn cards_that_find_the_output_full_still_reach_a_slow_reader_and_the_prompt_ends() {
    const CALLS: usize = 150;
    let dir = project();
    let mut first: Vec<Step> = Vec::new();
    for n in 0..CALLS {
        first.push(preparing(&format!("c{n}"), "read_file"));
    }
    for n in 0..CALLS {
        first.push(call(
            &format!("c{n}"),
            "read_file",
            json!({"file_path": "a.txt"}),
        ));
    }
    first.push(finish(FinishReason::ToolCalls));
    let second = vec![finish(FinishReason::Stop)];
    let mut client = prompted_through_a_small_pipe(dir.path(), vec![first, second]).await;

    let updates = read_slowly_to_the_answer(&mut client).await;
    let completed = updates
        .iter()
        .filter(|u| u["status"] == "completed")
        .count();
    assert_eq!(completed, CALLS);
}
