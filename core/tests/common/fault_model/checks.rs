//! What a case must show beyond the card lifecycle (`common::invariants`): only finished
//! attempts' calls ran, nothing started after a cancel, MCP failures end their cards with the
//! adapter's errors and the work goes on, and every request's history pairs each call with its
//! result, duplicates and loses nothing, and changes only through a compaction that succeeded.

use std::collections::{HashMap, HashSet};

use corvid_core::context::compaction::SUMMARY_HEADER;
use corvid_protocol::{CoreEvent, Message, ModelRequest, Part, Role, ToolStatus};
use tokio::time::Instant;

use super::MCP_TOOL;
use super::hooks::{HookChecks, HookLog};
use super::routing::Routed;
use super::run::Clock;
use super::script::{Plan, SUMMARY};
use super::tools::{MCP_SERVER, MCP_TIMEOUT, McpFate};
use crate::common::fake_tools::ExecLog;
use crate::common::invariants::check_invariants;

/// What the front end saw.
#[derive(Default)]
pub struct Observed {
    pub events: Vec<CoreEvent>,
    /// When each cancel was sent, and the index of the task it was sent in.
    pub cancels: Vec<(Instant, usize)>,
    /// How many tasks finished so far.
    pub tasks_done: usize,
}

/// Every event with the `task` call it is wrapped in (`None` for the session's own).
fn flattened(events: &[CoreEvent]) -> Vec<(Option<&str>, &CoreEvent)> {
    events
        .iter()
        .map(|ev| match ev {
            CoreEvent::Subagent {
                parent_call_id,
                event,
            } => (Some(parent_call_id.as_str()), &**event),
            ev => (None, ev),
        })
        .collect()
}

pub fn check(
    plan: &Plan,
    routed: &Routed,
    log: &ExecLog,
    hooks: &HookLog,
    seen: &Observed,
    clock: Clock,
) -> Result<(), String> {
    check_invariants(&seen.events, &["todo_write"])?;
    if let Some(message) = routed.misrouted.lock().unwrap().first() {
        return Err(format!("the model could not route a request: {message}"));
    }
    let events = flattened(&seen.events);
    let finished = routed.finished_call_ids();
    let results: HashMap<&str, &CoreEvent> = events
        .iter()
        .filter_map(|(_, e)| match e {
            CoreEvent::ToolFinished { call_id, .. } => Some((call_id.as_str(), *e)),
            _ => None,
        })
        .collect();
    if seen.cancels.is_empty() {
        // Nothing is lost either: every card call of a finished response reached a result.
        for id in &finished {
            let shows_card = plan.tool_of(id) != Some("todo_write");
            if shows_card && !results.contains_key(id.as_str()) {
                return Err(format!(
                    "call {id} of a finished response never got a result"
                ));
            }
        }
    }
    for tag in log.tags() {
        if !finished.contains(&tag) {
            return Err(format!(
                "call {tag} ran although its attempt never finished"
            ));
        }
    }
    for (_, ev) in &events {
        if let CoreEvent::ToolStarted {
            call_id,
            args,
            tool_name,
            ..
        } = ev
        {
            let scripted = plan.calls.get(call_id).map(|c| &c.args);
            if !finished.contains(call_id) || scripted != Some(args) {
                return Err(format!(
                    "{tool_name} {call_id} started with {args} outside a finished attempt"
                ));
            }
        }
    }
    let requests = all_requests(routed);
    check_cancel(seen, log, clock)?;
    check_mcp_cards(plan, &events, seen, log)?;
    if seen.cancels.is_empty() {
        // The work goes on after every failure: each result goes back to the model.
        let sent: HashSet<&str> = requests
            .iter()
            .flat_map(|(_, reqs)| reqs.iter())
            .flat_map(|r| r.messages.iter())
            .flat_map(|m| &m.parts)
            .filter_map(|p| match p {
                Part::ToolResult(r) => Some(r.call_id.as_str()),
                _ => None,
            })
            .collect();
        for id in results.keys() {
            if !sent.contains(id) {
                return Err(format!(
                    "the result of {id} never reached the model: the work stopped after it"
                ));
            }
        }
    }
    let ran = log.tags();
    let children_asked: Vec<String> = requests
        .iter()
        .filter(|(_, reqs)| !reqs.is_empty())
        .filter_map(|(agent, _)| agent.clone())
        .collect();
    let every_request: Vec<&ModelRequest> =
        requests.iter().flat_map(|(_, reqs)| reqs.iter()).collect();
    HookChecks {
        runs: hooks.all(),
        plan,
        events: &events,
        ran: &ran,
        requests: &every_request,
        children_asked: &children_asked,
        cancels: &seen.cancels,
        clock,
    }
    .check()?;
    let rewinds = session_rewinds(&events)?;
    for (agent, reqs) in &requests {
        let compactions = events
            .iter()
            .filter(|(parent, e)| {
                *parent == agent.as_deref() && matches!(e, CoreEvent::Compacted { .. })
            })
            .count();
        let rewinds = if agent.is_none() {
            &rewinds[..]
        } else {
            &[][..]
        };
        check_histories(reqs, compactions, rewinds).map_err(|e| {
            format!(
                "in the requests of {}: {e}",
                agent.as_deref().unwrap_or("the session")
            )
        })?;
    }
    Ok(())
}

/// The requests of the session (`None`) and of each child, in the order they were sent.
fn all_requests(routed: &Routed) -> Vec<(Option<String>, Vec<ModelRequest>)> {
    let mut all = vec![(None, routed.main.requests())];
    for (id, child) in routed.children.iter() {
        all.push((Some(id.clone()), child.requests()));
    }
    all
}

/// No call starts after the cancel of its task (virtual time only: on worker threads the
/// cancel races a call that was about to start).
fn check_cancel(seen: &Observed, log: &ExecLog, clock: Clock) -> Result<(), String> {
    if clock == Clock::Real {
        return Ok(());
    }
    // The task each call started in (virtual time does not tell: a task may end and the next
    // start a call at the same instant).
    let mut tasks = 0;
    let mut task_of = HashMap::new();
    for (_, ev) in flattened(&seen.events) {
        match ev {
            CoreEvent::ToolStarted { call_id, .. } => {
                task_of.insert(call_id.clone(), tasks);
            }
            CoreEvent::TaskFinished { .. } => tasks += 1,
            _ => {}
        }
    }
    for (run, &(at, task)) in log
        .all()
        .iter()
        .flat_map(|run| seen.cancels.iter().map(move |c| (run, c)))
    {
        let tag = run
            .args
            .get("tag")
            .and_then(|t| t.as_str())
            .unwrap_or_default();
        if task_of.get(tag) != Some(&task) {
            continue;
        }
        if run.started > at {
            return Err(format!(
                "{} {} started {:?} after the cancel",
                run.tool,
                run.args,
                run.started - at
            ));
        }
        if run.tool == MCP_TOOL
            && at < run.started + MCP_TIMEOUT
            && run.ended >= run.started + MCP_TIMEOUT
        {
            return Err(format!(
                "the MCP call {} ran to its timeout although the task was cancelled",
                run.args
            ));
        }
    }
    Ok(())
}

/// An MCP call that ran ends as its server behaved: answered, or failed naming the server and
/// what happened (a cancel may cut any of them short).
fn check_mcp_cards(
    plan: &Plan,
    events: &[(Option<&str>, &CoreEvent)],
    seen: &Observed,
    log: &ExecLog,
) -> Result<(), String> {
    // The calls the tool itself ran (not refused before: unknown, rejected, bad arguments).
    let ran: HashSet<String> = log
        .all()
        .into_iter()
        .filter(|run| run.tool == MCP_TOOL)
        .filter_map(|run| {
            run.args
                .get("tag")
                .and_then(|t| t.as_str())
                .map(String::from)
        })
        .collect();
    for (_, ev) in events {
        let CoreEvent::ToolFinished {
            call_id,
            tool_name,
            status,
            output,
            ..
        } = ev
        else {
            continue;
        };
        if tool_name != MCP_TOOL || !ran.contains(call_id) {
            continue;
        }
        let Some(call) = plan.calls.get(call_id) else {
            return Err(format!("an MCP call {call_id} nobody scripted"));
        };
        let server = format!("MCP server `{MCP_SERVER}` ");
        let expected = match McpFate::of(call.fate) {
            McpFate::Down => "is not running; corvid restarts it",
            McpFate::Answers => "",
            McpFate::Errs => "tool `lookup` failed: ",
            McpFate::Crashes => "stopped during the call to `lookup` (Transport closed)",
            McpFate::Hangs => "tool `lookup` did not answer within ",
        };
        let as_expected = if expected.is_empty() {
            *status == ToolStatus::Completed && output.text.starts_with("found ")
        } else {
            *status == ToolStatus::Failed && output.text.contains(&format!("{server}{expected}"))
        };
        let cut_by_cancel = !seen.cancels.is_empty()
            && *status == ToolStatus::Failed
            && output.text.contains("cancel");
        if !as_expected && !cut_by_cancel {
            return Err(format!(
                "MCP call {call_id} ({:?}) ended {status:?} with {:?}",
                McpFate::of(call.fate),
                output.text
            ));
        }
    }
    Ok(())
}

/// The messages each conversation rewind of the session kept, in order; a rewind is only
/// carried out between tasks (one asked for while a task runs is refused).
fn session_rewinds(events: &[(Option<&str>, &CoreEvent)]) -> Result<Vec<u32>, String> {
    let mut in_task = false;
    let mut kept = Vec::new();
    for (parent, ev) in events {
        if parent.is_some() {
            continue;
        }
        match ev {
            CoreEvent::TaskStarted { .. } => in_task = true,
            CoreEvent::TaskFinished { .. } => in_task = false,
            CoreEvent::Rewound { report, error, .. } => {
                if in_task {
                    return Err(format!(
                        "a rewind was carried out while a task ran: {report:?}"
                    ));
                }
                if error.is_none()
                    && let Some(k) = report.kept_messages
                {
                    kept.push(k);
                }
            }
            _ => {}
        }
    }
    Ok(kept)
}

/// Each request pairs every call with one result and repeats nothing; the next request of the
/// same agent extends it, unless a compaction that succeeded replaced its older part (at
/// most `compactions` times), keeping the recent messages as they were, or a rewind (one of
/// `rewinds`, the messages each kept) cut it back, the undone turn's prompt gone.
fn check_histories(
    requests: &[ModelRequest],
    compactions: usize,
    rewinds: &[u32],
) -> Result<(), String> {
    let mut replaced = 0;
    let mut rewinds = rewinds.iter();
    for (n, request) in requests.iter().enumerate() {
        pairing(&request.messages).map_err(|e| format!("request #{n}: {e}"))?;
        let Some(prev) = n.checked_sub(1).map(|p| &requests[p]) else {
            continue;
        };
        if request.messages.starts_with(&prev.messages) {
            continue;
        }
        // A compaction's summary comes first; anything else that does not extend the
        // previous request must be a rewind's cut.
        if kept_after_compaction(&request.messages).is_none()
            && let Some(&kept) = rewinds.clone().next()
        {
            let kept = (kept as usize).min(prev.messages.len());
            let undone = prev.messages.get(kept);
            if request.messages.starts_with(&prev.messages[..kept]) {
                rewinds.next();
                if let Some(undone) = undone
                    && request.messages[kept..].contains(undone)
                {
                    return Err(format!(
                        "request #{n} follows a rewind to {kept} messages but still holds the \
                         undone turn's {undone:?}"
                    ));
                }
                continue;
            }
        }
        let kept = kept_after_compaction(&request.messages).ok_or_else(|| {
            format!(
                "request #{n} lost or changed messages of request #{} without a compaction",
                n - 1
            )
        })?;
        replaced += 1;
        // The kept messages are the last ones the previous request sent, then at most the
        // few appended since (an answer, a batch's calls and results, a prompt).
        let continues = (0..=3.min(kept.len())).any(|new| {
            let old = &kept[..kept.len() - new];
            prev.messages.ends_with(old)
        });
        if !continues {
            return Err(format!(
                "request #{n} is a compaction whose kept messages are not the recent ones of \
                 request #{}",
                n - 1
            ));
        }
    }
    if replaced > compactions {
        return Err(format!(
            "the history was replaced {replaced} times but only {compactions} compactions succeeded"
        ));
    }
    Ok(())
}

/// The messages a compaction kept, when `messages` starts with its summary.
fn kept_after_compaction(messages: &[Message]) -> Option<Vec<Message>> {
    let first = messages.first()?;
    let summary = format!("{SUMMARY_HEADER}{SUMMARY}");
    match first.parts.first()? {
        // A child's summary ends naming the child (`routing`).
        Part::Text { text } if text.starts_with(&summary) => {}
        _ => return None,
    }
    let mut kept = Vec::with_capacity(messages.len());
    if first.parts.len() > 1 {
        kept.push(Message {
            role: first.role,
            parts: first.parts[1..].to_vec(),
        });
    }
    kept.extend_from_slice(&messages[1..]);
    Some(kept)
}

/// Every call of an assistant message is answered once in the next message, every result
/// answers a call of the message before, and no call id appears twice.
fn pairing(messages: &[Message]) -> Result<(), String> {
    let mut calls = HashSet::new();
    let mut answered = HashSet::new();
    for (i, message) in messages.iter().enumerate() {
        for part in &message.parts {
            match part {
                Part::ToolCall(c) => {
                    if message.role != Role::Assistant || !calls.insert(c.call_id.clone()) {
                        return Err(format!(
                            "call {} appears twice or not from the model",
                            c.call_id
                        ));
                    }
                    let next = messages.get(i + 1).map_or(&[][..], |m| &m.parts[..]);
                    let paired = next
                        .iter()
                        .any(|p| matches!(p, Part::ToolResult(r) if r.call_id == c.call_id));
                    if !paired {
                        return Err(format!("call {} is sent without its result", c.call_id));
                    }
                }
                Part::ToolResult(r) => {
                    let prev = i.checked_sub(1).map_or(&[][..], |p| &messages[p].parts[..]);
                    let paired = prev
                        .iter()
                        .any(|p| matches!(p, Part::ToolCall(c) if c.call_id == r.call_id));
                    if !paired || !answered.insert(r.call_id.clone()) {
                        return Err(format!(
                            "the result of {} is sent twice or without its call",
                            r.call_id
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}
