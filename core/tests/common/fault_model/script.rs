//! A case's scripts: the main model's responses, each subagent's, the compaction answers,
//! and what every scripted call is (its tool, arguments and fate).

use std::collections::HashMap;

use serde_json::{Value, json};

use super::run::Clock;
use super::wire::{Wire, through_wire};
use super::{Case, CompactionSpec, Fault, ResponseSpec, TASK, TOOLS};
use crate::common::scripted::*;
use corvid_protocol::{ErrorInfo, FinishReason};

/// What one scripted call is.
#[derive(Debug, Clone)]
pub struct PlannedCall {
    pub tool: &'static str,
    pub args: Value,
    pub fate: u8,
    /// A subagent's call (its events arrive wrapped in the `task` call's).
    pub in_child: bool,
}

/// Everything a case scripts, steps scaled to its clock.
pub struct Plan {
    pub main: Vec<Vec<Step>>,
    /// Each `task` call's id with its child's script.
    pub children: Vec<(String, Vec<Vec<Step>>)>,
    pub compactions: Vec<Vec<Step>>,
    pub calls: HashMap<String, PlannedCall>,
}

impl Plan {
    pub fn new(case: &Case, clock: Clock) -> Self {
        let mut calls = HashMap::new();
        let mut main = Vec::new();
        let mut task_ids = Vec::new();
        for (i, spec) in case.responses.iter().enumerate() {
            let prefix = format!("r{i}");
            main.push(scaled(
                on_wire(case.wire, steps_for(&prefix, spec), &prefix),
                clock,
            ));
            for (j, c) in spec.calls.iter().enumerate() {
                let id = format!("{prefix}c{j}");
                if c.tool == TASK {
                    task_ids.push(id.clone());
                }
                calls.insert(
                    id.clone(),
                    planned(&id, c.tool, c.object_args, c.fate, false),
                );
            }
        }
        let mut children = Vec::new();
        for (n, task) in task_ids.into_iter().enumerate() {
            let script = match case.children.len() {
                0 => &[][..],
                len => &case.children[n % len][..],
            };
            let mut steps = Vec::new();
            for (i, spec) in script.iter().enumerate() {
                let prefix = format!("{task}-r{i}");
                steps.push(scaled(
                    on_wire(case.wire, steps_for(&prefix, spec), &prefix),
                    clock,
                ));
                for (j, c) in spec.calls.iter().enumerate() {
                    let id = format!("{prefix}c{j}");
                    calls.insert(
                        id.clone(),
                        planned(&id, c.tool, c.object_args, c.fate, true),
                    );
                }
            }
            children.push((task, steps));
        }
        let compactions = case
            .compactions
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let steps = on_wire(case.wire, compaction_steps(c), &format!("summary{i}"));
                scaled(steps, clock)
            })
            .collect();
        // Through a wire, the arguments are what the decoder made of them (text that is not
        // a JSON object stays text).
        let delivered = main.iter().chain(children.iter().flat_map(|(_, s)| s));
        for step in delivered.flatten() {
            if let Step::Event(corvid_protocol::StreamEvent::ToolCall(c)) = step
                && let Some(planned) = calls.get_mut(&c.call_id)
            {
                planned.args = c.args.clone();
            }
        }
        Self {
            main,
            children,
            compactions,
            calls,
        }
    }

    /// The tool of a scripted call (`None` for an id nobody scripted).
    pub fn tool_of(&self, id: &str) -> Option<&'static str> {
        self.calls.get(id).map(|c| c.tool)
    }
}

/// `steps` as they come through `wire`'s bytes and decoder; `key` picks where a cut falls.
fn on_wire(wire: Option<Wire>, steps: Vec<Step>, key: &str) -> Vec<Step> {
    let Some(wire) = wire else { return steps };
    let salt = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    through_wire(wire, steps, salt)
}

/// The prompt a `task` call gives its child: how the child's requests are told apart.
pub fn child_prompt(task_id: &str) -> String {
    format!("child {task_id}")
}

/// The summary every compaction that succeeds writes.
pub const SUMMARY: &str = "Summary of the work so far.";

fn planned(id: &str, tool: usize, object_args: bool, fate: u8, in_child: bool) -> PlannedCall {
    let name = TOOLS[tool];
    let args = if !object_args {
        json!("not an object")
    } else if tool == TASK {
        json!({
            "description": format!("Do {id}"),
            "prompt": child_prompt(id),
            "subagent_type": if fate.is_multiple_of(2) { "general" } else { "explore" },
        })
    } else {
        json!({"tag": id})
    };
    PlannedCall {
        tool: name,
        args,
        fate,
        in_child,
    }
}

/// The provider steps of a response whose calls are `{prefix}c{j}`, faults applied.
pub fn steps_for(prefix: &str, spec: &ResponseSpec) -> Vec<Step> {
    let mut delays = spec.delays.iter().cycle();
    let mut pause = || delay_ms(*delays.next().unwrap_or(&0));
    let mut steps = Vec::new();
    if spec.text {
        steps.push(text("Working on it. "));
        steps.push(pause());
    }
    let calls: Vec<(String, &str, Value)> = spec
        .calls
        .iter()
        .enumerate()
        .map(|(j, c)| {
            let id = format!("{prefix}c{j}");
            let args = planned(&id, c.tool, c.object_args, c.fate, false).args;
            (id, TOOLS[c.tool], args)
        })
        .collect();
    for (c, (id, name, args)) in spec.calls.iter().zip(&calls) {
        if c.prepare {
            steps.push(preparing(id, name));
            steps.push(pause());
        }
        if spec.eager_calls {
            steps.push(call(id, name, args.clone()));
        }
    }
    if !spec.eager_calls {
        for (id, name, args) in &calls {
            steps.push(call(id, name, args.clone()));
        }
    }
    steps.push(usage(50, 5));
    steps.push(finish(if calls.is_empty() {
        FinishReason::Stop
    } else {
        FinishReason::ToolCalls
    }));
    with_fault(steps, &spec.fault)
}

fn compaction_steps(spec: &CompactionSpec) -> Vec<Step> {
    let mut steps = Vec::new();
    if !spec.empty {
        steps.push(text(SUMMARY));
    }
    steps.push(delay_ms(spec.delay));
    steps.push(usage(40, 8));
    steps.push(finish(FinishReason::Stop));
    with_fault(steps, &spec.fault)
}

fn with_fault(mut steps: Vec<Step>, fault: &Fault) -> Vec<Step> {
    match fault {
        Fault::None => {}
        Fault::Cut(k) => steps.truncate(k % (steps.len() + 1)),
        Fault::ErrorAfter(k, kind) => {
            steps.truncate(k % (steps.len() + 1));
            steps.push(Step::Fail(ErrorInfo::new(*kind, "injected failure")));
        }
        Fault::Http(kind, retry_after) => {
            let mut err = ErrorInfo::new(*kind, "injected HTTP error");
            err.retry_after_ms = *retry_after;
            steps = vec![Step::Fail(err)];
        }
    }
    steps
}

/// Shrinks every scripted wait for real-time runs (retry-after included).
pub fn scaled(steps: Vec<Step>, clock: Clock) -> Vec<Step> {
    if clock == Clock::Paused {
        return steps;
    }
    steps
        .into_iter()
        .map(|step| match step {
            Step::Delay(d) => Step::Delay(d / 20),
            Step::Fail(mut err) => {
                err.retry_after_ms = err.retry_after_ms.map(|ms| ms.min(2));
                Step::Fail(err)
            }
            other => other,
        })
        .collect()
}
