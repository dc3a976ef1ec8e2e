//! How tools describe themselves to front ends.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::image::ImageData;

/// The ACP-aligned category of a tool; front ends pick icons and wording from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    Other,
}

/// Where a tool call acts: an absolute path and, when known, a 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    pub path: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// Where a tool comes from (ACP `_meta.provenance`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Provenance {
    Builtin,
    Mcp { server_id: String },
    Subagent,
}

impl Provenance {
    /// The wire name (`builtin`, `mcp`, `subagent`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::Mcp { .. } => "mcp",
            Self::Subagent => "subagent",
        }
    }
}

/// What a front end shows for a call that is about to run or running.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDisplay {
    /// Short action title with the path or command, e.g. `Read src/main.rs`.
    pub title: String,
    pub kind: ToolKind,
    pub locations: Vec<Location>,
}

/// A file change made (or proposed) by a tool, for diff rendering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiff {
    pub path: PathBuf,
    /// `None` when the file did not exist.
    pub old_text: Option<String>,
    pub new_text: String,
}

/// What a finished tool produced, for front ends (the model sees `ToolResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The text returned to the model.
    pub text: String,
    /// Edits made, shown as diffs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diffs: Vec<FileDiff>,
    /// Images returned to the model beside the text (an MCP tool's screenshot, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageData>,
    /// Resources the tool returned, for front ends that can show them (ACP); the model gets
    /// their text, or a note naming them, in `text`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ToolResource>,
    /// Structured output for `rawOutput` (ACP) and JSON front ends.
    #[serde(default)]
    pub raw: serde_json::Value,
}

impl ToolOutput {
    /// Text for the model with structured output for front ends, and nothing else.
    pub fn new(text: impl Into<String>, raw: serde_json::Value) -> Self {
        Self {
            text: text.into(),
            raw,
            ..Self::default()
        }
    }

    /// Text alone (no structured output).
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(text, serde_json::Value::Null)
    }
}

/// A resource in a tool's result, as MCP and ACP describe one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolResource {
    /// A text resource embedded in the result.
    Text {
        uri: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        text: String,
    },
    /// A binary resource embedded in the result, as standard base64.
    Blob {
        uri: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        blob_base64: String,
    },
    /// A pointer to a resource the client may fetch itself.
    Link {
        uri: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

/// What the user is asked to approve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ApprovalPreview {
    /// A file edit, shown as a diff.
    Diff(FileDiff),
    /// A shell command.
    Command { command: String },
    /// Anything else, as text.
    Text { text: String },
}

/// One todo of the `todo_write` plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub id: String,
    pub content: String,
    pub status: TodoStatus,
}

/// Progress of one todo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}
