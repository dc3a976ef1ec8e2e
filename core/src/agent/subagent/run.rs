//! Running one child agent to its final message.

use std::path::Path;
use std::sync::Arc;

use corvid_protocol::{FileDiff, Message, Part, Role, SUBAGENT_PROMPT_ID, StopReason, ToolOutput};
use corvid_tools::{ToolContext, ToolError};
use serde_json::json;

use super::super::session::{SessionState, TaskCtx, lock};
use super::super::summaries::SummaryTracker;
use super::super::task::run_turns;
use super::ChildEnv;
use crate::agents::AgentType;

/// Runs a child of type `agent` on `prompt` until it answers; any other end (failure, turn
/// limit, cancellation) is the `task` call's failure.
pub(super) async fn run_child(
    env: &ChildEnv,
    agent: &AgentType,
    description: &str,
    prompt: String,
    tool_ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let model = agent
        .model
        .clone()
        .unwrap_or_else(|| lock(&env.shared.model).clone());
    let mut stat = env.child_static(agent);
    stat.policy.hooks = (stat.policy.hooks.take())
        .map(|hooks| Arc::new(hooks.for_agent(&tool_ctx.call_id, &agent.name)));
    let max_turns = stat.policy.max_turns;
    let (events, changes) = env.events.for_child(&tool_ctx.call_id);
    let ctx = TaskCtx {
        stat: Arc::new(stat),
        shared: Arc::new(env.shared.for_child(model, &tool_ctx.call_id)),
        events,
        cancel: tool_ctx.cancel,
        task_id: format!("subagent-{}", tool_ctx.call_id),
        usage_prompt_id: SUBAGENT_PROMPT_ID,
    };
    let mut state = SessionState::fresh(ctx.events.clone());
    state.append(Message {
        role: Role::User,
        parts: vec![Part::Text { text: prompt }],
    });
    // Never asked for a summary: the child's settings have none.
    let summaries = SummaryTracker::new();
    let mut timed_out = false;
    let (stop, error) = {
        let run = run_turns(&ctx, &mut state, &summaries);
        tokio::pin!(run);
        tokio::select! {
            biased;
            ended = &mut run => ended,
            () = tokio::time::sleep(env.time_limit) => {
                // Cancelled like a user's cancel, so its cards still end properly.
                timed_out = true;
                ctx.cancel.cancel();
                run.await
            }
        }
    };
    let last = final_text(&state.history);
    let diffs = std::mem::take(&mut *lock(&changes));
    let changed = changed_files(&diffs, &env.base.cwd);
    let failed = |why: String| {
        Err(ToolError::new(format!(
            "subagent `{description}` {why}{}",
            changed_note(&changed)
        )))
    };
    match stop {
        StopReason::EndTurn => Ok(ToolOutput {
            text: format!(
                "{}{}",
                last.as_deref()
                    .unwrap_or("(the subagent finished without a report)"),
                changed_note(&changed)
            ),
            raw: json!({ "subagent_type": agent.name, "report": last, "changed_files": changed }),
            diffs,
            ..Default::default()
        }),
        StopReason::MaxTurns => failed(format!(
            "stopped after {} model turns without finishing (agent.subagentMaxTurns); \
             give it a narrower job or do the rest yourself",
            max_turns.0
        )),
        StopReason::Cancelled if timed_out => failed(format!(
            "stopped at its time limit of {} s without finishing (agent.subagentTimeoutMs); \
             give it a narrower job or do the rest yourself",
            env.time_limit.as_secs()
        )),
        StopReason::Cancelled => failed("was cancelled before it finished".to_owned()),
        StopReason::MaxTokens => failed("hit the output token limit".to_owned()),
        StopReason::Refusal => failed("refused the job".to_owned()),
        StopReason::Error => failed(format!(
            "failed: {}",
            error.map_or_else(|| "unknown error".to_owned(), |e| e.message)
        )),
    }
}

/// The files the child changed, relative to `cwd` when inside it, each once, in order.
fn changed_files(diffs: &[FileDiff], cwd: &Path) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for diff in diffs {
        let path = diff.path.strip_prefix(cwd).unwrap_or(&diff.path);
        let path = path.display().to_string();
        if !files.contains(&path) {
            files.push(path);
        }
    }
    files
}

/// The list of changed files that ends a report (nothing when none changed).
fn changed_note(files: &[String]) -> String {
    if files.is_empty() {
        String::new()
    } else {
        format!("\n\nFiles changed: {}", files.join(", "))
    }
}

/// The child's last words: the text of its last assistant message that has any.
fn final_text(history: &[Message]) -> Option<String> {
    history
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .find_map(|m| {
            let text: String = m
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            (!text.trim().is_empty()).then_some(text)
        })
}
