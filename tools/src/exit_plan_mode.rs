//! `exit_plan_mode`: in plan mode, the model hands the user its plan and asks to start
//! working. The core asks the user and switches the approval mode; this tool only checks the
//! plan and words the question and the answer.

use corvid_protocol::{ApprovalPreview, Todo, TodoStatus, ToolDisplay, ToolKind, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{parse_args, plain_display};
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// The tool's name, which the core recognises to ask the user and switch modes.
pub const EXIT_PLAN_MODE: &str = "exit_plan_mode";

/// The question shown with the plan.
pub const LEAVE_QUESTION: &str = "the agent asks to leave plan mode and start working on this plan";

/// A plan longer than this is refused (a plan is read by a person, not an upload channel).
const MAX_PLAN_CHARS: usize = 20_000;

/// Asks the user to approve the plan and leave plan mode.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExitPlanMode;

#[derive(Deserialize)]
struct Args {
    plan: String,
}

impl Tool for ExitPlanMode {
    fn name(&self) -> &'static str {
        EXIT_PLAN_MODE
    }

    fn display_name(&self) -> &'static str {
        "ExitPlanMode"
    }

    fn description(&self) -> &'static str {
        "In plan mode only: present your finished plan to the user and ask to start working. \
         The user sees the plan and either approves it (plan mode ends and you carry it out) \
         or asks you to keep planning. Write the plan in Markdown, with its steps as a list."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "plan": {
                    "type": "string",
                    "description": "The plan in Markdown; its steps as a list (one item per step)."
                }
            },
            "required": ["plan"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    /// It changes the session's mode, so it runs after the batch's earlier calls.
    fn mutates(&self) -> bool {
        true
    }

    fn allowed_in_plan_mode(&self) -> bool {
        true
    }

    fn display(&self, _args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        plain_display(self.kind(), "Ready to start working")
    }

    fn approval(&self, args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        let need = match plan_of(args) {
            Ok(plan) => ApprovalNeed::Escalated {
                preview: ApprovalPreview::Text { text: plan },
                reason: LEAVE_QUESTION.to_owned(),
            },
            Err(err) => ApprovalNeed::Refuse(err),
        };
        futures::future::ready(need).boxed()
    }

    fn execute(
        &self,
        args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let result = plan_of(&args).map(|plan| {
            ToolOutput::new(
                "The user approved the plan and plan mode is over: carry out the plan now.",
                json!({ "plan": plan }),
            )
        });
        futures::future::ready(result).boxed()
    }
}

/// The plan argument, checked: present, not blank, not huge.
pub fn plan_of(args: &Value) -> Result<String, ToolError> {
    let plan = parse_args::<Args>(EXIT_PLAN_MODE, args)?.plan;
    if plan.trim().is_empty() {
        return Err(ToolError::new(
            "the plan is empty; write the plan in `plan` before asking to leave plan mode",
        ));
    }
    let chars = plan.chars().count();
    if chars > MAX_PLAN_CHARS {
        return Err(ToolError::new(format!(
            "the plan has {chars} characters; keep it under {MAX_PLAN_CHARS} (a summary of the \
             steps, not the work itself)"
        )));
    }
    Ok(plan)
}

/// The plan's steps as checklist entries, so editors and the TUI can show it as a plan: its
/// list items (`- x`, `* x`, `1. x`, `- [ ] x`), or every non-blank line when it has none.
pub fn plan_steps(plan: &str) -> Vec<Todo> {
    let items: Vec<(String, TodoStatus)> = plan.lines().filter_map(list_item).collect();
    let steps = if items.is_empty() {
        plan.lines()
            .map(|line| line.trim().trim_start_matches('#').trim())
            .filter(|line| !line.is_empty())
            .map(|line| (line.to_owned(), TodoStatus::Pending))
            .collect()
    } else {
        items
    };
    steps
        .into_iter()
        .enumerate()
        .map(|(i, (content, status))| Todo {
            id: (i + 1).to_string(),
            content,
            status,
        })
        .collect()
}

/// The text and state of one Markdown list item, if the line is one.
fn list_item(line: &str) -> Option<(String, TodoStatus)> {
    let line = line.trim();
    let rest = ["- ", "* ", "+ "]
        .iter()
        .find_map(|bullet| line.strip_prefix(bullet))
        .or_else(|| {
            let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let after = line.get(digits..)?;
            (digits > 0)
                .then(|| {
                    after
                        .strip_prefix(". ")
                        .or_else(|| after.strip_prefix(") "))
                })
                .flatten()
        })?
        .trim();
    let (status, text) = if let Some(text) = rest.strip_prefix("[ ]") {
        (TodoStatus::Pending, text)
    } else if let Some(text) = rest
        .strip_prefix("[x]")
        .or_else(|| rest.strip_prefix("[X]"))
    {
        (TodoStatus::Completed, text)
    } else {
        (TodoStatus::Pending, rest)
    };
    let text = text.trim();
    (!text.is_empty()).then(|| (text.to_owned(), status))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn todo(id: &str, content: &str, status: TodoStatus) -> Todo {
        Todo {
            id: id.into(),
            content: content.into(),
            status,
        }
    }

    #[test]
    fn a_plans_list_items_become_its_steps() {
        let plan = "# Plan\n\nFirst some context.\n\n1. Read `src/lib.rs`\n2) Add the test\n- [x] \
                    Looked around\n* Write `a.txt`\n  + nested step\n";
        assert_eq!(
            plan_steps(plan),
            vec![
                todo("1", "Read `src/lib.rs`", TodoStatus::Pending),
                todo("2", "Add the test", TodoStatus::Pending),
                todo("3", "Looked around", TodoStatus::Completed),
                todo("4", "Write `a.txt`", TodoStatus::Pending),
                todo("5", "nested step", TodoStatus::Pending),
            ]
        );
    }

    #[test]
    fn a_plan_without_a_list_has_one_step_per_line() {
        assert_eq!(
            plan_steps("## Fix the bug\n\nChange the parser.\n"),
            vec![
                todo("1", "Fix the bug", TodoStatus::Pending),
                todo("2", "Change the parser.", TodoStatus::Pending),
            ]
        );
    }

    #[test]
    fn an_empty_or_huge_plan_is_refused_with_what_to_do() {
        let empty = plan_of(&json!({"plan": "  \n"})).unwrap_err();
        assert_eq!(
            empty.message,
            "the plan is empty; write the plan in `plan` before asking to leave plan mode"
        );
        let huge = plan_of(&json!({"plan": "x".repeat(MAX_PLAN_CHARS + 1)})).unwrap_err();
        assert_eq!(
            huge.message,
            "the plan has 20001 characters; keep it under 20000 (a summary of the steps, not \
             the work itself)"
        );
        assert!(plan_of(&json!({})).is_err());
    }
}
