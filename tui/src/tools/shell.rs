//! Shell results as the user reads them: the command's own output and how it ended, not the
//! framing the model gets (`Exit code:`, `Stdout:`, `Stderr:`).

use corvid_protocol::{ToolKind, ToolOutput};

/// What a shell command printed, without the framing its result has for the model
/// (`Exit code:`, `Stdout:`, `Stderr:`); `None` for results that are not a command's.
pub fn command_output(o: &ToolOutput) -> Option<String> {
    let field = |k: &str| o.raw.get(k).and_then(|v| v.as_str());
    if let Some(output) = field("output") {
        return Some(output.trim_end().to_owned());
    }
    let (stdout, stderr) = (field("stdout"), field("stderr"));
    if stdout.is_none() && stderr.is_none() {
        return None;
    }
    let parts: Vec<&str> = [stdout, stderr]
        .into_iter()
        .flatten()
        .map(str::trim_end)
        .filter(|p| !p.is_empty())
        .collect();
    Some(parts.join("\n"))
}

/// Whether a command the tool ran to its end failed: a non-zero exit, a signal or a timeout.
/// The call itself succeeded (the model gets the result), but the user sees a failure.
pub fn command_failed(o: &ToolOutput) -> bool {
    let raw = &o.raw;
    raw.get("exit_code")
        .and_then(|c| c.as_i64())
        .is_some_and(|c| c != 0)
        || raw.get("timed_out").and_then(|t| t.as_bool()) == Some(true)
        || raw.get("signal").is_some_and(|s| !s.is_null())
}

/// The text a card shows for a result: a command's own output, any other tool's text.
pub(super) fn shown_text(kind: ToolKind, o: &ToolOutput) -> String {
    match kind {
        ToolKind::Execute => command_output(o).unwrap_or_else(|| o.text.clone()),
        _ => o.text.clone(),
    }
}
