//! `Op::ClearHistory` (`/clear` over ACP): the next prompt starts a fresh conversation in the
//! same session, and a running task's history is never cut.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::scripted::*;
use common::{run_task, test_config};
use corvid_core::agent::spawn_agent;
use corvid_protocol::{Message, Op};
use pretty_assertions::assert_eq;

#[tokio::test]
async fn after_clear_history_the_next_prompt_is_sent_without_the_earlier_conversation() {
    let provider = ScriptedProvider::new(vec![answer("First."), answer("Second.")]);
    let mut handle = spawn_agent(test_config(Arc::new(provider.clone()), vec![]));
    run_task(&mut handle, "one").await;
    handle.submit(Op::ClearHistory).unwrap();
    run_task(&mut handle, "two").await;

    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].messages, vec![Message::user_text("two")]);
}
