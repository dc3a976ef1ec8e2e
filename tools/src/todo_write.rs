//! `todo_write`: the model's plan, shown as a checklist instead of a tool card.

use corvid_protocol::{Todo, TodoStatus, ToolDisplay, ToolKind, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{no_approval, parse_args, plain_display};
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// Replaces the task's todo list; the core turns the result into a plan update.
#[derive(Debug, Clone, Copy, Default)]
pub struct TodoWrite;

#[derive(Deserialize)]
struct Args {
    todos: Vec<Todo>,
}

impl Tool for TodoWrite {
    fn name(&self) -> &'static str {
        "todo_write"
    }

    fn display_name(&self) -> &'static str {
        "TodoWrite"
    }

    fn description(&self) -> &'static str {
        "Replaces the todo list for the current task. Use it for work with several steps: send \
         the whole list each time, with each item's status (`pending`, `in_progress` or \
         `completed`); keep at most one item `in_progress`."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The complete todo list.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "description": "Stable identifier of the item."},
                            "content": {"type": "string", "description": "What to do."},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["id", "content", "status"]
                    }
                }
            },
            "required": ["todos"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    /// Plan updates of one batch must apply in the order the model wrote them.
    fn mutates(&self) -> bool {
        true
    }

    /// Writing down the plan is what plan mode is for.
    fn allowed_in_plan_mode(&self) -> bool {
        true
    }

    fn shows_card(&self) -> bool {
        false
    }

    fn display(&self, _args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        plain_display(self.kind(), "Update todos")
    }

    fn approval(&self, _args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        no_approval()
    }

    fn execute(
        &self,
        args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let result = parse_args::<Args>("todo_write", &args).and_then(|args| render(args.todos));
        futures::future::ready(result).boxed()
    }
}

fn render(todos: Vec<Todo>) -> Result<ToolOutput, ToolError> {
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = todos.iter().find(|t| !seen.insert(t.id.as_str())) {
        return Err(ToolError::new(format!(
            "todo id `{}` is used twice; every todo needs its own id",
            dup.id
        )));
    }
    let count = |status| todos.iter().filter(|t| t.status == status).count();
    let mut text = format!(
        "Todo list updated: {} completed, {} in progress, {} pending.",
        count(TodoStatus::Completed),
        count(TodoStatus::InProgress),
        count(TodoStatus::Pending)
    );
    for todo in &todos {
        let mark = match todo.status {
            TodoStatus::Completed => "[x]",
            TodoStatus::InProgress => "[~]",
            TodoStatus::Pending => "[ ]",
        };
        text.push_str(&format!("\n{mark} {}", todo.content));
    }
    let raw = serde_json::to_value(&todos)
        .map_err(|e| ToolError::new(format!("cannot record the todo list: {e}")))?;
    Ok(ToolOutput::new(text, raw))
}
