//! Headless output (SPEC §10): core events translated into plain text, one JSON result, or
//! NDJSON as it happens. Nothing here decides lifecycle; it only translates.

use std::collections::{HashMap, HashSet};
use std::io::{IsTerminal, Write};

use corvid_core::usage::UsageStats;
use corvid_protocol::{ApprovalPreview, CoreEvent, Provenance, StopReason, ToolOutput, ToolStatus};
use serde_json::{Value, json};

use super::terminal_text::TextSafety;
use crate::args::OutputFormat;

/// One tool-use summary as listed in the result.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SummaryItem {
    pub summary: String,
    pub preceding_tool_use_ids: Vec<String>,
}

/// How the task ended, for the result object and the exit code.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub stop_reason: StopReason,
    /// What went wrong, when the task failed.
    pub error: Option<String>,
}

/// Static facts shown in `system/init`.
pub struct InitInfo {
    pub session_id: String,
    pub model: String,
    pub cwd: String,
    pub tools: Vec<String>,
    pub approval_mode: String,
}

/// Translates core events into the chosen format; stdout gets only the format's output.
pub struct Printer<W: Write> {
    format: OutputFormat,
    /// For the final text on `out`.
    safety: TextSafety,
    /// For progress lines on stderr.
    progress_safety: TextSafety,
    partial: bool,
    session_id: String,
    out: W,
    /// Text of the current turn (the final answer is the last turn's text).
    turn_text: String,
    /// Text streamed since the last flush into an `assistant` message.
    pending_text: String,
    announced_calls: HashSet<String>,
    /// Where each prepared call's tool comes from, for a `tool_use` announced by its
    /// permission request (which does not say).
    provenances: HashMap<String, Provenance>,
    /// Calls headless mode refused, with what to report instead of the core's "rejected".
    refusals: HashMap<String, String>,
    pub summaries: Vec<SummaryItem>,
    pub stats: UsageStats,
}

impl<W: Write> Printer<W> {
    /// A printer writing the format's output to `out`; `safety` says whether `out` is a
    /// terminal, where model text must lose its escape sequences.
    pub fn new(
        format: OutputFormat,
        partial: bool,
        session_id: String,
        out: W,
        safety: TextSafety,
    ) -> Self {
        let progress_safety = TextSafety::for_terminal(std::io::stderr().is_terminal());
        Self {
            format,
            safety,
            progress_safety,
            partial,
            session_id,
            out,
            turn_text: String::new(),
            pending_text: String::new(),
            announced_calls: HashSet::new(),
            provenances: HashMap::new(),
            refusals: HashMap::new(),
            summaries: Vec::new(),
            stats: UsageStats::default(),
        }
    }

    /// The stream-json `system/init` message.
    pub fn init(&mut self, info: &InitInfo) -> std::io::Result<()> {
        self.emit(json!({
            "type": "system",
            "subtype": "init",
            "session_id": info.session_id,
            "cwd": info.cwd,
            "model": info.model,
            "tools": info.tools,
            "permission_mode": info.approval_mode,
        }))
    }

    /// Translates one core event.
    pub fn event(&mut self, ev: &CoreEvent) -> std::io::Result<()> {
        self.stats.observe(ev);
        // Text ends where other content begins; background and stream-only events (labels,
        // usage, preparation) may arrive mid-text and must not split the message.
        if !matches!(
            ev,
            CoreEvent::TextDelta { .. }
                | CoreEvent::ThoughtDelta { .. }
                | CoreEvent::ToolUseSummary { .. }
                | CoreEvent::SummaryDropped { .. }
                | CoreEvent::Usage { .. }
                | CoreEvent::ToolPreparing { .. }
                | CoreEvent::PreparationDiscarded { .. }
                | CoreEvent::ToolOutputDelta { .. }
                | CoreEvent::ContextUsage { .. }
        ) {
            self.flush_text()?;
        }
        // A new turn, and a retried or fallen-back attempt, starts the answer text over.
        if matches!(
            ev,
            CoreEvent::TurnStarted { .. }
                | CoreEvent::AttemptRetried { .. }
                | CoreEvent::ModelFellBack { .. }
        ) {
            self.turn_text.clear();
        }
        if let CoreEvent::ToolPreparing {
            call_id,
            provenance,
            ..
        } = ev
        {
            self.provenances.insert(call_id.clone(), provenance.clone());
        }
        match ev {
            CoreEvent::TextDelta { text } => {
                self.turn_text.push_str(text);
                self.pending_text.push_str(text);
                if self.partial {
                    self.emit(json!({"type": "text_delta", "text": text}))?;
                }
            }
            CoreEvent::ThoughtDelta { text } if self.partial => {
                self.emit(json!({"type": "thought_delta", "text": text}))?;
            }
            CoreEvent::ToolPreparing {
                call_id, tool_name, ..
            } if self.partial => {
                self.emit(
                    json!({"type": "tool_preparing", "tool_use_id": call_id, "name": tool_name}),
                )?;
            }
            CoreEvent::PreparationDiscarded {
                call_id,
                tool_name,
                reason,
                ..
            } if self.partial => {
                self.emit(json!({
                    "type": "tool_preparing_discarded",
                    "tool_use_id": call_id,
                    "name": tool_name,
                    "reason": reason,
                }))?;
            }
            CoreEvent::ToolStarted {
                call_id,
                tool_name,
                args,
                display,
                provenance,
                ..
            } => {
                self.tool_use(call_id, tool_name, args.clone(), Some(provenance))?;
                self.progress(&format!("● {}", display.title));
            }
            CoreEvent::PermissionRequested {
                call_id,
                tool_name,
                preview,
                ..
            } => {
                let input = match preview {
                    ApprovalPreview::Command { command } => json!({ "command": command }),
                    ApprovalPreview::Diff(diff) => json!({ "file_path": diff.path }),
                    ApprovalPreview::Text { .. } => json!({}),
                };
                let provenance = self.provenances.get(call_id).cloned();
                self.tool_use(call_id, tool_name, input, provenance.as_ref())?;
            }
            CoreEvent::ToolFinished {
                call_id,
                status,
                output,
                ..
            } => {
                let is_error = *status == ToolStatus::Failed;
                let refusal = self.refusals.get(call_id);
                let refused = refusal.is_some();
                let content = refusal.map_or_else(|| tool_result_content(output), |r| json!(r));
                self.tool_result(call_id, content, is_error, None)?;
                // A refusal was already reported when it happened.
                if is_error && !refused {
                    let first = output.text.lines().next().unwrap_or_default();
                    self.progress(&format!("  ✗ {first}"));
                }
            }
            CoreEvent::Plan { todos } => {
                self.emit(json!({"type": "plan", "todos": todos}))?;
                for todo in todos {
                    let mark = match todo.status {
                        corvid_protocol::TodoStatus::Completed => "[x]",
                        corvid_protocol::TodoStatus::InProgress => "[~]",
                        corvid_protocol::TodoStatus::Pending => "[ ]",
                    };
                    self.progress(&format!("  {mark} {}", todo.content));
                }
            }
            CoreEvent::ToolUseSummary {
                summary,
                preceding_tool_use_ids,
            } => {
                self.summaries.push(SummaryItem {
                    summary: summary.clone(),
                    preceding_tool_use_ids: preceding_tool_use_ids.clone(),
                });
                self.emit(json!({
                    "type": "tool_use_summary",
                    "summary": summary,
                    "preceding_tool_use_ids": preceding_tool_use_ids,
                }))?;
                self.progress(&format!("● {summary}"));
            }
            CoreEvent::AttemptRetried {
                attempt,
                max_attempts,
                delay_ms,
                error,
            } => {
                self.emit(json!({
                    "type": "system", "subtype": "retry", "attempt": attempt,
                    "max_attempts": max_attempts, "delay_ms": delay_ms, "error": error.to_string(),
                }))?;
                self.progress(&format!(
                    "corvid: attempt {attempt}/{max_attempts} failed ({error}); retrying in {delay_ms} ms"
                ));
            }
            CoreEvent::ModelFellBack { from, to, error } => {
                self.emit(json!({
                    "type": "system", "subtype": "model_fallback", "from": from, "to": to,
                    "error": error.to_string(),
                }))?;
                self.progress(&format!(
                    "corvid: {from} keeps failing ({error}); switched to {to}"
                ));
            }
            CoreEvent::Warning { message } => {
                self.emit(json!({"type": "system", "subtype": "warning", "message": message}))?;
                self.progress(&format!("corvid: warning: {message}"));
            }
            CoreEvent::Hook {
                event,
                handler,
                decision,
                reason,
                duration_ms,
            } => {
                self.emit(json!({
                    "type": "system", "subtype": "hook", "event": event, "handler": handler,
                    "decision": decision, "reason": reason, "duration_ms": duration_ms,
                }))?;
                let line = corvid_protocol::hook_notice(event, handler, decision, reason);
                self.progress(&format!("corvid: {line}"));
            }
            CoreEvent::Compacted {
                kept_messages,
                tokens_before,
                tokens_after,
                ..
            } => {
                self.emit(json!({
                    "type": "system", "subtype": "compaction",
                    "tokens_before": tokens_before, "tokens_after": tokens_after,
                    "kept_messages": kept_messages,
                }))?;
                self.progress(&format!(
                    "● Compacted the conversation ({tokens_before} → {tokens_after} tokens)"
                ));
            }
            CoreEvent::Subagent {
                parent_call_id,
                event,
            } => self.subagent_event(parent_call_id, event)?,
            _ => {}
        }
        self.out.flush()
    }

    /// A step of the child agent run by the `task` call `parent`: its calls and their results,
    /// tagged with `parent_tool_use_id` as in Claude Code's SDK stream. The child's text is its
    /// report, which arrives as the `task` call's result.
    fn subagent_event(&mut self, parent: &str, event: &CoreEvent) -> std::io::Result<()> {
        match event {
            CoreEvent::ToolStarted {
                call_id,
                tool_name,
                args,
                display,
                ..
            } => {
                self.emit(json!({
                    "type": "assistant",
                    "parent_tool_use_id": parent,
                    "message": {"role": "assistant", "content": [{
                        "type": "tool_use", "id": call_id, "name": tool_name, "input": args,
                    }]},
                }))?;
                self.progress(&format!("  ↳ {}", display.title));
            }
            CoreEvent::ToolFinished {
                call_id,
                status,
                output,
                ..
            } => {
                let is_error = *status == ToolStatus::Failed;
                self.tool_result(call_id, tool_result_content(output), is_error, Some(parent))?;
            }
            CoreEvent::Warning { message } => {
                self.emit(json!({
                    "type": "system", "subtype": "warning", "message": message,
                    "parent_tool_use_id": parent,
                }))?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Tells the user (stderr) and stream-json consumers that headless mode refused a call;
    /// its result is reported with `message` too.
    pub fn refused(&mut self, call_id: &str, title: &str, message: &str) -> std::io::Result<()> {
        let title = self.progress_safety.apply(title);
        eprintln!("corvid: `{title}`: {message}");
        self.refusals.insert(call_id.to_owned(), message.to_owned());
        self.emit(json!({
            "type": "system", "subtype": "permission_denied", "tool_use_id": call_id,
            "title": title, "hint": message,
        }))
    }

    /// The final result (json and stream-json) or the final text (text).
    pub fn finish(&mut self, outcome: &Outcome, duration_ms: u128) -> std::io::Result<()> {
        self.flush_text()?;
        let is_error = outcome.error.is_some()
            || matches!(
                outcome.stop_reason,
                StopReason::Error | StopReason::MaxTurns
            );
        match self.format {
            OutputFormat::Text => {
                // A failed task's partial text is not an answer; stderr says what happened.
                if !is_error && !self.turn_text.is_empty() {
                    let text = self.safety.apply(self.turn_text.trim_end()).into_owned();
                    writeln!(self.out, "{text}")?;
                }
            }
            OutputFormat::Json | OutputFormat::StreamJson => {
                let subtype = match outcome.stop_reason {
                    StopReason::MaxTurns => "error_max_turns",
                    _ if is_error => "error",
                    StopReason::Cancelled => "cancelled",
                    _ => "success",
                };
                let mut result = json!({
                    "type": "result",
                    "subtype": subtype,
                    "result": self.turn_text,
                    "session_id": self.session_id,
                    "stop_reason": outcome.stop_reason,
                    "num_turns": self.stats.turns,
                    "duration_ms": duration_ms,
                    "usage": self.stats.total(),
                    "usage_by_prompt": self.stats.by_prompt,
                    "tool_use_summaries": self.summaries,
                    "is_error": is_error,
                });
                if let Some(error) = &outcome.error {
                    result["error"] = json!(error);
                }
                if let Some(context) = self.stats.context {
                    result["context"] = json!({
                        "used": context.used,
                        "window": context.window,
                        "percent": context.percent(),
                    });
                }
                self.write_line(&result)?;
            }
        }
        self.out.flush()
    }

    /// Announces a call once; a tool that is not built in carries the ACP cards' `_meta`
    /// (`provenance`, and `serverId` for MCP tools).
    fn tool_use(
        &mut self,
        call_id: &str,
        name: &str,
        input: Value,
        provenance: Option<&Provenance>,
    ) -> std::io::Result<()> {
        if !self.announced_calls.insert(call_id.to_owned()) {
            return Ok(());
        }
        let mut block = json!({"type": "tool_use", "id": call_id, "name": name, "input": input});
        match provenance {
            None | Some(Provenance::Builtin) => {}
            Some(Provenance::Mcp { server_id }) => {
                block["_meta"] = json!({"provenance": "mcp", "serverId": server_id});
            }
            Some(other) => block["_meta"] = json!({"provenance": other.as_str()}),
        }
        self.emit(json!({
            "type": "assistant",
            "message": {"role": "assistant", "content": [block]},
        }))
    }

    /// A call's result as a `user` message; a subagent's carries the `task` call it ran for.
    fn tool_result(
        &mut self,
        call_id: &str,
        content: Value,
        is_error: bool,
        parent: Option<&str>,
    ) -> std::io::Result<()> {
        let mut message = json!({
            "type": "user",
            "message": {"role": "user", "content": [{
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": content,
                "is_error": is_error,
            }]},
        });
        if let Some(parent) = parent {
            message["parent_tool_use_id"] = json!(parent);
        }
        self.emit(message)
    }

    /// Sends text streamed so far as one `assistant` message (stream-json).
    fn flush_text(&mut self) -> std::io::Result<()> {
        if self.pending_text.is_empty() {
            return Ok(());
        }
        let text = std::mem::take(&mut self.pending_text);
        self.emit(json!({
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        }))
    }

    /// Writes a stream-json message (other formats print nothing as it happens).
    fn emit(&mut self, mut message: Value) -> std::io::Result<()> {
        if self.format != OutputFormat::StreamJson {
            return Ok(());
        }
        if let Value::Object(obj) = &mut message {
            obj.insert("session_id".into(), json!(self.session_id));
            obj.insert("uuid".into(), json!(uuid::Uuid::new_v4().to_string()));
        }
        self.write_line(&message)
    }

    fn write_line(&mut self, message: &Value) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, message)?;
        self.out.write_all(b"\n")
    }

    /// Progress for people: stderr, text format only (JSON consumers read the messages).
    fn progress(&self, line: &str) {
        if self.format == OutputFormat::Text {
            eprintln!("{}", self.progress_safety.apply(line));
        }
    }
}

/// A `tool_result`'s content as Claude Code's stream shows it: the text, or, when the tool
/// returned images, a list of a text block and base64 image blocks.
fn tool_result_content(output: &ToolOutput) -> Value {
    if output.images.is_empty() {
        return json!(output.text);
    }
    let text = json!({"type": "text", "text": output.text});
    let images = output.images.iter().map(|image| {
        json!({"type": "image", "source": {
            "type": "base64", "media_type": image.media_type, "data": image.data_base64,
        }})
    });
    Value::Array(std::iter::once(text).chain(images).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A printer of session `s` without the initial system line, writing text verbatim.
    fn printer(format: OutputFormat) -> Printer<Vec<u8>> {
        Printer::new(format, false, "s".into(), Vec::new(), TextSafety::Verbatim)
    }

    fn kinds(out: &[u8]) -> Vec<(String, Value)> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|v| {
                (
                    v["type"].as_str().unwrap().to_owned(),
                    v["message"]["content"][0]["text"].clone(),
                )
            })
            .collect()
    }

    #[test]
    fn a_label_arriving_mid_text_does_not_split_the_assistant_message() {
        let mut p = printer(OutputFormat::StreamJson);
        let text = |t: &str| CoreEvent::TextDelta { text: t.into() };
        p.event(&text("Here is ")).unwrap();
        p.event(&CoreEvent::ToolUseSummary {
            summary: "Read a.txt".into(),
            preceding_tool_use_ids: vec!["c1".into()],
        })
        .unwrap();
        p.event(&text("my plan.")).unwrap();
        p.event(&CoreEvent::TurnStarted {
            turn: 2,
            model: "m".into(),
        })
        .unwrap();
        assert_eq!(
            kinds(&p.out),
            vec![
                ("tool_use_summary".to_owned(), Value::Null),
                ("assistant".to_owned(), json!("Here is my plan.")),
            ]
        );
    }

    #[test]
    fn a_subagents_calls_are_tagged_with_the_task_call_and_its_text_is_not_the_answer() {
        let mut p = printer(OutputFormat::StreamJson);
        let child = |event: CoreEvent| CoreEvent::Subagent {
            parent_call_id: "t1".into(),
            event: Box::new(event),
        };
        p.event(&child(CoreEvent::TextDelta {
            text: "thinking aloud".into(),
        }))
        .unwrap();
        p.event(&child(CoreEvent::ToolStarted {
            call_id: "c1".into(),
            tool_name: "read_file".into(),
            args: json!({"path": "a.rs"}),
            display: corvid_protocol::ToolDisplay {
                title: "Read a.rs".into(),
                kind: corvid_protocol::ToolKind::Read,
                locations: Vec::new(),
            },
            provenance: Provenance::Builtin,
            was_prepared: false,
        }))
        .unwrap();
        p.event(&child(CoreEvent::ToolFinished {
            call_id: "c1".into(),
            tool_name: "read_file".into(),
            status: ToolStatus::Completed,
            output: corvid_protocol::ToolOutput::text("fn a() {}"),
            provenance: Provenance::Builtin,
        }))
        .unwrap();
        let lines: Vec<Value> = String::from_utf8_lossy(&p.out)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|mut v| {
                v.as_object_mut().unwrap().remove("uuid");
                v
            })
            .collect();
        assert_eq!(
            lines,
            vec![
                json!({"type": "assistant", "parent_tool_use_id": "t1", "session_id": "s",
                    "message": {"role": "assistant", "content": [{"type": "tool_use",
                    "id": "c1", "name": "read_file", "input": {"path": "a.rs"}}]}}),
                json!({"type": "user", "parent_tool_use_id": "t1", "session_id": "s",
                    "message": {"role": "user", "content": [{"type": "tool_result",
                    "tool_use_id": "c1", "content": "fn a() {}", "is_error": false}]}}),
            ]
        );
        assert_eq!(p.turn_text, "");
    }

    #[test]
    fn a_tool_results_images_are_base64_image_blocks_after_its_text() {
        let mut p = printer(OutputFormat::StreamJson);
        p.event(&CoreEvent::ToolFinished {
            call_id: "c1".into(),
            tool_name: "mcp__everything__get-tiny-image".into(),
            status: ToolStatus::Completed,
            output: ToolOutput {
                images: vec![corvid_protocol::ImageData {
                    media_type: "image/png".into(),
                    data_base64: "iVBORw==".into(),
                }],
                ..ToolOutput::text("the logo")
            },
            provenance: Provenance::Builtin,
        })
        .unwrap();
        let line: Value = serde_json::from_slice(&p.out).unwrap();
        assert_eq!(
            line["message"]["content"],
            json!([{"type": "tool_result", "tool_use_id": "c1", "is_error": false, "content": [
                {"type": "text", "text": "the logo"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
            ]}])
        );
    }

    #[test]
    fn a_compaction_is_a_stream_json_event_and_the_result_tells_the_context_fill() {
        let mut p = printer(OutputFormat::StreamJson);
        p.event(&CoreEvent::Compacted {
            summary: "the summary".into(),
            kept_messages: 4,
            tokens_before: 33_000,
            tokens_after: 9_000,
        })
        .unwrap();
        p.event(&CoreEvent::ContextUsage {
            used: 9_500,
            window: 40_000,
        })
        .unwrap();
        let ok = Outcome {
            stop_reason: StopReason::EndTurn,
            error: None,
        };
        p.finish(&ok, 1).unwrap();
        let lines: Vec<Value> = String::from_utf8_lossy(&p.out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        for (key, value) in [
            ("type", json!("system")),
            ("subtype", json!("compaction")),
            ("tokens_before", json!(33_000)),
            ("tokens_after", json!(9_000)),
            ("kept_messages", json!(4)),
        ] {
            assert_eq!(lines[0][key], value, "{key}");
        }
        assert_eq!(
            lines[1]["context"],
            json!({"used": 9_500, "window": 40_000, "percent": 23})
        );
    }

    #[test]
    fn text_format_prints_the_last_turns_text_and_nothing_for_a_failed_task() {
        let mut p = printer(OutputFormat::Text);
        for ev in [
            CoreEvent::TextDelta {
                text: "first".into(),
            },
            CoreEvent::TurnStarted {
                turn: 2,
                model: "m".into(),
            },
            CoreEvent::TextDelta {
                text: "second\n".into(),
            },
        ] {
            p.event(&ev).unwrap();
        }
        let ok = Outcome {
            stop_reason: StopReason::EndTurn,
            error: None,
        };
        p.finish(&ok, 1).unwrap();
        assert_eq!(String::from_utf8_lossy(&p.out), "second\n");

        let mut p = printer(OutputFormat::Text);
        p.event(&CoreEvent::TextDelta {
            text: "partial".into(),
        })
        .unwrap();
        let failed = Outcome {
            stop_reason: StopReason::Error,
            error: Some("server error".into()),
        };
        p.finish(&failed, 1).unwrap();
        assert_eq!(String::from_utf8_lossy(&p.out), "");
    }
}
