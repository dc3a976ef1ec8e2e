//! Protected entries a sandboxed command created (see `corvid_sandbox::AfterCheck`), as the
//! model and the user are told about them: in the tool result, as a sandbox violation.

use std::path::Path;

use corvid_protocol::ToolOutput;
use corvid_sandbox::{AfterCheck, CheckReport};
use serde_json::{Value, json};

/// Runs the after-command walk off the async threads.
pub(super) async fn check(after: AfterCheck) -> CheckReport {
    tokio::task::spawn_blocking(move || after.run())
        .await
        .unwrap_or_else(|_| CheckReport {
            incomplete: true,
            ..CheckReport::default()
        })
}

/// What the model and the user are told about protected entries the command created.
pub(super) fn text(report: &CheckReport, cwd: &Path) -> Option<String> {
    if report.is_empty() {
        return None;
    }
    let shown = |p: &Path| p.strip_prefix(cwd).unwrap_or(p).display().to_string();
    let mut lines = Vec::new();
    for (created, moved) in &report.quarantined {
        tracing::warn!(
            "a sandboxed command created {}; renamed to {}",
            created.display(),
            moved.display()
        );
        lines.push(format!(
            "- it created {}, renamed to {}",
            shown(created),
            shown(moved)
        ));
    }
    for (created, why) in &report.failed {
        tracing::warn!(
            "a sandboxed command created {}, which could not be renamed: {why}",
            created.display()
        );
        lines.push(format!(
            "- it created {}, which could not be renamed ({why}); the user must remove it",
            shown(created)
        ));
    }
    let mut text = String::new();
    if !lines.is_empty() {
        text.push_str(&format!(
            "corvid's sandbox refused a change (a sandbox violation): sandboxed commands may not \
             create {} anywhere in the workspace, since they change what runs outside the \
             sandbox:\n{}",
            corvid_sandbox::PROTECTED_NAMES.join(", "),
            lines.join("\n")
        ));
    }
    if report.incomplete {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "corvid could not check the whole workspace for such entries (more than {} entries, \
             or unreadable folders).",
            corvid_sandbox::WALK_LIMIT
        ));
    }
    Some(text)
}

/// Appends the report to the tool output: its text, and `sandbox_violations` in the raw JSON.
pub(super) fn add(output: &mut ToolOutput, report: &CheckReport, cwd: &Path) {
    let Some(text) = text(report, cwd) else {
        return;
    };
    output.text.push_str(&format!("\n\n{text}"));
    if let Some(raw) = output.raw.as_object_mut() {
        let created: Vec<Value> = report
            .quarantined
            .iter()
            .map(|(created, moved)| json!({"created": created, "renamed_to": moved}))
            .chain(
                report
                    .failed
                    .iter()
                    .map(|(created, why)| json!({"created": created, "error": why})),
            )
            .collect();
        raw.insert(
            "sandbox_violations".to_owned(),
            json!({"created": created, "incomplete": report.incomplete}),
        );
    }
}
