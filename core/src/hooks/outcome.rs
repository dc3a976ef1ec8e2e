//! What the handlers of one event decided together. A block (exit 2, `decision: "block"`,
//! `permissionDecision: "deny"`, or a failure under `onError: "block"`) wins over `ask`,
//! which wins over `allow`; the reasons of every handler that blocked are kept.

use std::time::Duration;

use corvid_tools::hooks_runner::HookExit;
use serde_json::Value;

use super::HookEvent;
use super::config::Handler;

/// A `permissionDecision` of a PreToolUse handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    Allow(String),
    Ask(String),
    Deny(String),
}

/// What one handler's output asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effect {
    /// Block the action; the reason goes to the model (or the user, for a prompt).
    pub block: Option<String>,
    pub permission: Option<Permission>,
    /// `updatedInput`, in Claude's shape.
    pub updated_input: Option<Value>,
    /// `additionalContext`, or plain stdout for `UserPromptSubmit`/`SessionStart`.
    pub context: Option<String>,
    /// `continue: false`: end the agent's work, with `stopReason`.
    pub stop: Option<String>,
    /// `systemMessage`: shown to the user.
    pub system_message: Option<String>,
    /// The handler failed without `onError: "block"`: the action goes ahead, and this is
    /// shown to the user loudly.
    pub failure: Option<String>,
}

/// One handler's run and what it meant.
#[derive(Debug, Clone, PartialEq)]
pub struct HandlerReport {
    pub handler: Handler,
    pub exit: HookExit,
    pub stdout: String,
    pub stderr: String,
    pub truncated: bool,
    pub duration: Duration,
    pub effect: Effect,
    /// Problems with its output (a misspelled field, a decision without `hookEventName`).
    pub warnings: Vec<String>,
}

/// The decision of every handler of one event together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// No handler said anything: the action goes through the normal flow.
    Proceed,
    /// Skip the approval prompt (never over the user's deny rules, protected paths or the
    /// sandbox's own questions: the caller keeps those).
    Allow(String),
    /// Ask the user even where corvid would not.
    Ask(String),
    /// Refuse: the call does not run, the prompt is not sent, the agent does not stop.
    Block(String),
}

impl Decision {
    fn rank(&self) -> u8 {
        match self {
            Self::Proceed => 0,
            Self::Allow(_) => 1,
            Self::Ask(_) => 2,
            Self::Block(_) => 3,
        }
    }

    /// A short word for listings (`proceed`, `allow`, `ask`, `block`).
    pub fn word(&self) -> &'static str {
        match self {
            Self::Proceed => "proceed",
            Self::Allow(_) => "allow",
            Self::Ask(_) => "ask",
            Self::Block(_) => "block",
        }
    }

    /// The reason given, if any.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Proceed => None,
            Self::Allow(r) | Self::Ask(r) | Self::Block(r) => Some(r),
        }
    }
}

/// The outcome of one event.
#[derive(Debug, Clone, PartialEq)]
pub struct HookOutcome {
    pub event: HookEvent,
    pub decision: Decision,
    /// corvid's tool input after a PreToolUse handler's `updatedInput` (only when the call
    /// is not blocked).
    pub updated_input: Option<Value>,
    /// Text for the model, in handler order.
    pub context: Vec<String>,
    /// Set when a handler said `continue: false`.
    pub stop: Option<String>,
    /// `systemMessage`s for the user.
    pub system_messages: Vec<String>,
    /// Failures and output problems, each naming its handler: every front end shows these.
    pub warnings: Vec<String>,
    /// Every handler's run, in configuration order.
    pub reports: Vec<HandlerReport>,
}

impl HookOutcome {
    /// No handler ran.
    pub fn none(event: HookEvent) -> Self {
        Self::combine(event, Vec::new(), None)
    }

    /// Combines the handlers' reports; `tool` is corvid's tool name and input for mapping
    /// `updatedInput` back.
    pub fn combine(
        event: HookEvent,
        reports: Vec<HandlerReport>,
        tool: Option<&(String, Value)>,
    ) -> Self {
        let mut decision = Decision::Proceed;
        let mut blocks = Vec::new();
        let mut out = Self {
            event,
            decision: Decision::Proceed,
            updated_input: None,
            context: Vec::new(),
            stop: None,
            system_messages: Vec::new(),
            warnings: Vec::new(),
            reports: Vec::new(),
        };
        for report in &reports {
            let effect = &report.effect;
            if let Some(reason) = &effect.block {
                blocks.push(reason.clone());
            }
            let wish = match &effect.permission {
                Some(Permission::Deny(r)) => {
                    blocks.push(if r.is_empty() {
                        format!("denied by hook `{}`", report.handler.command)
                    } else {
                        r.clone()
                    });
                    None
                }
                Some(Permission::Ask(r)) => Some(Decision::Ask(r.clone())),
                Some(Permission::Allow(r)) => Some(Decision::Allow(r.clone())),
                None => None,
            };
            if let Some(wish) = wish
                && wish.rank() > decision.rank()
            {
                decision = wish;
            }
            if let Some(updated) = &effect.updated_input {
                if out.updated_input.is_some() {
                    out.warnings.push(format!(
                        "hook `{}`: another hook already changed the input; its \
                         `updatedInput` is ignored",
                        report.handler.command
                    ));
                } else {
                    out.updated_input = Some(match tool {
                        Some((name, original)) => {
                            super::claude_names::corvid_input(name, updated, original)
                        }
                        None => updated.clone(),
                    });
                }
            }
            out.context.extend(effect.context.clone());
            if out.stop.is_none() {
                out.stop.clone_from(&effect.stop);
            }
            out.system_messages.extend(effect.system_message.clone());
            if let Some(failure) = &effect.failure {
                out.warnings.push(format!(
                    "hook `{}` failed ({failure}); {event} went ahead",
                    report.handler.command
                ));
            }
            out.warnings.extend(report.warnings.iter().cloned());
        }
        if !blocks.is_empty() {
            decision = Decision::Block(blocks.join("\n"));
            out.updated_input = None;
        }
        out.decision = decision;
        out.reports = reports;
        out
    }
}
