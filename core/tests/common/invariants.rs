//! The tool-card lifecycle invariants of SPEC §5.2, checked on a recorded core-event stream.
//! Usable by any test that drives the agent (or replays recorded events).

use std::collections::{HashMap, HashSet};

use corvid_protocol::CoreEvent;

#[derive(Debug, Clone, PartialEq)]
enum Card {
    /// Preparing card showing (arguments still streaming, or waiting to run).
    Preparing,
    /// A permission prompt is open (or answered) for the call.
    Asking { prepared: bool, resolved: bool },
    /// `in_progress`: the call is executing.
    Running,
}

/// Checks every invariant of SPEC §5.2 (plus the basic task framing) on `events`, which must
/// cover whole tasks. `suppressed` names the tools that never show a card (`todo_write`).
/// Returns the first violation, with the index of the offending event.
pub fn check_invariants(events: &[CoreEvent], suppressed: &[&str]) -> Result<(), String> {
    let suppressed: HashSet<&str> = suppressed.iter().copied().collect();
    let mut cards: HashMap<String, Card> = HashMap::new();
    let mut prepared_this_attempt: HashSet<String> = HashSet::new();
    let mut in_task = false;
    let mut settled_batches: HashSet<Vec<String>> = HashSet::new();
    // Each subagent's events, checked as a task of their own at the end.
    let mut children: HashMap<String, Vec<CoreEvent>> = HashMap::new();
    for (i, ev) in events.iter().enumerate() {
        let fail = |what: String| Err(format!("event #{i} {ev:?}: {what}"));
        match ev {
            CoreEvent::TaskStarted { .. } => {
                if in_task {
                    return fail("a task started while another runs".into());
                }
                in_task = true;
            }
            CoreEvent::TurnStarted { .. } => {
                if !cards.is_empty() {
                    return fail(format!("cards still open at a new turn: {cards:?}"));
                }
                prepared_this_attempt.clear();
            }
            CoreEvent::AttemptRetried { .. } | CoreEvent::ModelFellBack { .. } => {
                if let Some((id, _)) = cards.iter().find(|(_, c)| **c == Card::Preparing) {
                    return fail(format!("the abandoned attempt left card {id} preparing"));
                }
                if !cards.is_empty() {
                    return fail(format!("cards open while an attempt is retried: {cards:?}"));
                }
                prepared_this_attempt.clear();
            }
            CoreEvent::ToolPreparing {
                call_id, tool_name, ..
            } => {
                if !in_task {
                    return fail("preparing outside a task".into());
                }
                if suppressed.contains(tool_name.as_str()) {
                    return fail("a suppressed tool got a preparing card (§5.2.1)".into());
                }
                if !prepared_this_attempt.insert(call_id.clone()) {
                    return fail(
                        "a second preparing event for this id in one attempt (§5.2.1)".into(),
                    );
                }
                if cards.contains_key(call_id) {
                    return fail("preparing for an id whose card is still open".into());
                }
                cards.insert(call_id.clone(), Card::Preparing);
            }
            CoreEvent::PermissionRequested { call_id, .. } => match cards.get(call_id) {
                None => {
                    cards.insert(
                        call_id.clone(),
                        Card::Asking {
                            prepared: false,
                            resolved: false,
                        },
                    );
                }
                Some(Card::Preparing) => {
                    cards.insert(
                        call_id.clone(),
                        Card::Asking {
                            prepared: true,
                            resolved: false,
                        },
                    );
                }
                Some(other) => {
                    return fail(format!("permission asked for a card in state {other:?}"));
                }
            },
            CoreEvent::PermissionResolved { call_id, .. } => match cards.get_mut(call_id) {
                Some(Card::Asking { resolved, .. }) if !*resolved => *resolved = true,
                other => return fail(format!("permission resolved for a card in state {other:?}")),
            },
            CoreEvent::ToolStarted {
                call_id,
                tool_name,
                args,
                was_prepared,
                ..
            } => {
                if suppressed.contains(tool_name.as_str()) {
                    return fail("a suppressed tool got an execution card (§5.3)".into());
                }
                let expected_prepared = match cards.get(call_id) {
                    None => false,
                    Some(Card::Preparing) => true,
                    Some(Card::Asking {
                        prepared,
                        resolved: true,
                    }) => *prepared,
                    Some(other) => return fail(format!("started from state {other:?}")),
                };
                if *was_prepared != expected_prepared {
                    return fail(format!(
                        "was_prepared is {was_prepared} but a preparing card {} showing (§5.2.6)",
                        if expected_prepared { "was" } else { "was not" }
                    ));
                }
                if args.is_null() {
                    return fail("in_progress without arguments (§5.2.6)".into());
                }
                cards.insert(call_id.clone(), Card::Running);
            }
            CoreEvent::Compacted { .. } => {
                if !cards.is_empty() {
                    return fail(format!("compacted while cards are open: {cards:?}"));
                }
            }
            CoreEvent::ContextUsage { .. } => {}
            CoreEvent::ToolOutputDelta { call_id, .. } => {
                if cards.get(call_id) != Some(&Card::Running) {
                    return fail("live output for a call that is not running".into());
                }
            }
            CoreEvent::QuestionAsked { call_id, .. } => {
                if cards.get(call_id) != Some(&Card::Running) {
                    return fail("a question for a call whose card is not running".into());
                }
            }
            CoreEvent::ToolFinished {
                call_id, tool_name, ..
            } => {
                if suppressed.contains(tool_name.as_str()) {
                    return fail("a suppressed tool got a finished card (§5.3)".into());
                }
                match cards.remove(call_id) {
                    Some(Card::Running) | Some(Card::Asking { resolved: true, .. }) => {}
                    other => return fail(format!("finished from state {other:?}")),
                }
            }
            CoreEvent::PreparationDiscarded { call_id, .. } => match cards.remove(call_id) {
                Some(Card::Preparing) => {}
                Some(Card::Running) => {
                    return fail("discarded after it went in_progress (§5.2.4)".into());
                }
                other => return fail(format!("discarded from state {other:?}")),
            },
            CoreEvent::TaskFinished { .. } => {
                if !in_task {
                    return fail("a task finished that never started".into());
                }
                if !cards.is_empty() {
                    return fail(format!(
                        "cards left pending when the task ended (§5.2.2): {cards:?}"
                    ));
                }
                in_task = false;
            }
            CoreEvent::ToolUseSummary {
                preceding_tool_use_ids: ids,
                ..
            }
            | CoreEvent::SummaryDropped {
                preceding_tool_use_ids: ids,
                ..
            } => {
                if !settled_batches.insert(ids.clone()) {
                    return fail("a batch's summary settled twice".into());
                }
            }
            CoreEvent::Subagent {
                parent_call_id,
                event,
            } => {
                if cards.get(parent_call_id) != Some(&Card::Running) {
                    return fail(format!(
                        "a subagent event for {parent_call_id}, which is not in_progress"
                    ));
                }
                children
                    .entry(parent_call_id.clone())
                    .or_default()
                    .push((**event).clone());
            }
            CoreEvent::TextDelta { .. }
            | CoreEvent::ThoughtDelta { .. }
            | CoreEvent::Plan { .. }
            | CoreEvent::HistoryCleared
            | CoreEvent::Rewound { .. }
            | CoreEvent::BatchCompleted { .. }
            | CoreEvent::Usage { .. }
            | CoreEvent::Warning { .. }
            | CoreEvent::Hook { .. }
            | CoreEvent::ModelChanged { .. }
            | CoreEvent::ReasoningEffortChanged { .. }
            | CoreEvent::ApprovalModeChanged { .. }
            | CoreEvent::Steered { .. } => {}
        }
    }
    if in_task {
        return Err("the event stream ends inside a task".into());
    }
    if !cards.is_empty() {
        return Err(format!("cards left pending at the end: {cards:?}"));
    }
    for (parent, events) in children {
        let mut framed = vec![CoreEvent::TaskStarted {
            task_id: parent.clone(),
            prompt: String::new(),
        }];
        framed.extend(events);
        framed.push(CoreEvent::TaskFinished {
            task_id: parent.clone(),
            stop_reason: corvid_protocol::StopReason::EndTurn,
            error: None,
            pending_summaries: 0,
        });
        check_invariants(&framed, &suppressed.iter().copied().collect::<Vec<_>>())
            .map_err(|e| format!("in the subagent of {parent}: {e}"))?;
    }
    Ok(())
}
