//! `enter_plan_mode`: the model asks to switch the session to plan mode before a big task.
//! The core decides (asked in `default`, allowed unasked in the modes that already let the
//! agent work alone) and switches the mode when the call runs; this tool only words the
//! question.

use corvid_protocol::{ApprovalPreview, ToolDisplay, ToolKind, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::common::plain_display;
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// The tool's name, which the core recognises to switch modes.
pub const ENTER_PLAN_MODE: &str = "enter_plan_mode";

/// What the user is asked in `default` mode.
pub const ENTER_QUESTION: &str = "The agent asks to switch to plan mode: it will only read and \
     plan (no edits, no commands) until you approve its plan.";

/// Asks to switch the session into plan mode.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnterPlanMode;

impl Tool for EnterPlanMode {
    fn name(&self) -> &'static str {
        ENTER_PLAN_MODE
    }

    fn display_name(&self) -> &'static str {
        "EnterPlanMode"
    }

    fn description(&self) -> &'static str {
        "Switch to plan mode before a large or unclear task: you then only read and \
         investigate, and present a plan with exit_plan_mode for the user to approve before \
         anything changes. The user may be asked first. Takes no arguments."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}, "required": []})
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    /// It changes the session's mode, so it runs after the batch's earlier calls.
    fn mutates(&self) -> bool {
        true
    }

    fn display(&self, _args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        plain_display(self.kind(), "Enter plan mode")
    }

    /// Asked like a command in `default`; the core lets it run unasked in the other modes.
    fn approval(&self, _args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        futures::future::ready(ApprovalNeed::Execute(ApprovalPreview::Text {
            text: ENTER_QUESTION.to_owned(),
        }))
        .boxed()
    }

    /// Only reached where the core does not switch modes itself.
    fn execute(
        &self,
        _args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        futures::future::ready(Err(ToolError::new(
            "plan mode cannot be entered in this session",
        )))
        .boxed()
    }
}
