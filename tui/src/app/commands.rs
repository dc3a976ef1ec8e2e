//! Slash commands: `/help`, `/stats`, `/clear`, `/resume` and the rest.

use corvid_core::commands::Library;
use corvid_core::context::instructions;
use corvid_protocol::Op;

use super::{Action, App};
use crate::cells::{HistoryCell, NoticeKind};
use crate::model_picker::ModelPicker;
use crate::picker::SessionPicker;
use crate::wrap::printable;
use corvid_protocol::ReasoningEffort;

/// The slash commands: name, argument hint and what they do (for `/help` and the popup).
pub const COMMANDS: &[(&str, &str, &str)] = &[
    ("/help", "", "this list"),
    (
        "/stats",
        "",
        "tokens per prompt id and model, time (wall, model, tools), tool success",
    ),
    (
        "/memory",
        "",
        "the instructions files (AGENTS.md...) in the model's prompt",
    ),
    (
        "/mcp",
        "",
        "the MCP servers of this session: status, tools, errors",
    ),
    (
        "/tasks",
        "",
        "the background processes of this session: id, state, command",
    ),
    (
        "/view",
        "[MODE]",
        "tool groups `compact` or `full` from now on; alone toggles (ctrl+o shows all in full)",
    ),
    (
        "/model",
        "[NAME]",
        "pick a listed model for later turns (also NAME EFFORT, or EFFORT alone)",
    ),
    (
        "/resume",
        "[ID]",
        "go back to an earlier session of this project",
    ),
    (
        "/undo",
        "",
        "undo the last prompt: its file changes and the conversation (previewed first)",
    ),
    (
        "/rewind",
        "[N]",
        "go back to before an earlier prompt: code, conversation or both (also esc esc)",
    ),
    (
        "/branch",
        "[N]",
        "go on in a new session with this conversation (N: from before turn N, files restored)",
    ),
    (
        "/compress",
        "",
        "summarize the older conversation to free the context window (also /compact)",
    ),
    (
        "/clear",
        "",
        "start a new session (the old one stays resumable) on a clear screen",
    ),
    (
        "/init",
        "",
        "study the repository and write or improve AGENTS.md",
    ),
    ("/skills", "", "the skills the model can load"),
    ("/quit", "", "exit"),
];

const KEYS_HELP: &str = "Keys: enter send (queued while a task runs) · shift+enter, ctrl+j or \\+enter newline · up/down rows, then history · ctrl+r search history · esc or ctrl+c cancel · esc esc clear (empty: rewind) · ctrl+c twice exit · shift+tab mode (default, auto, auto-edit, plan) · ctrl+s send into the running task · ctrl+o transcript (every diff and output; esc closes) · ctrl+l clear screen · ctrl+g or ctrl+x ctrl+e edit in $EDITOR
Editing: ctrl+a/e line start/end · ctrl+w, alt+backspace cut word · ctrl+k cut to end · ctrl+u cut to start · ctrl+y paste cut · alt+b/f, ctrl+←/→ word moves";

/// `/help`: the commands, the custom commands and skills of `library`, then the keys.
fn help_text(library: Option<&Library>) -> String {
    let mut out = String::from("Commands\n");
    for (name, arg, what) in COMMANDS {
        let usage = format!("{name} {arg}");
        out.push_str(&format!("{:<16}{what}\n", usage.trim_end()));
    }
    let custom: Vec<_> = library
        .map(|l| l.commands().commands)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.path.is_some())
        .collect();
    if !custom.is_empty() {
        out.push_str("\nCustom commands and skills\n");
        for command in custom {
            let usage = format!(
                "/{} {}",
                command.name,
                command.argument_hint.unwrap_or_default()
            );
            out.push_str(&format!(
                "{:<16}{} ({})\n",
                usage.trim_end(),
                command.description,
                command.origin
            ));
        }
    }
    out.push_str(KEYS_HELP);
    out
}

/// `/skills`: each skill with its description, who may run it, and its file.
fn skills_text(library: Option<&Library>) -> String {
    let set = library.map(|l| l.skills()).unwrap_or_default();
    if set.skills.is_empty() && set.warnings.is_empty() {
        return "No skills. Add a folder with a SKILL.md under .claude/skills/, .agents/skills/ \
                or .corvid/skills/ (here or in your home folder)."
            .to_owned();
    }
    let mut out = String::from("Skills\n");
    for skill in &set.skills {
        let who = match (skill.model_invocable, skill.user_invocable) {
            (true, true) => "model and /name",
            (true, false) => "model only",
            (false, true) => "/name only",
            (false, false) => "nobody",
        };
        out.push_str(&format!(
            "{}: {} [{who}]\n    {}\n",
            skill.name,
            skill.description,
            skill.path.display()
        ));
    }
    for warning in &set.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    out
}

/// What `/mcp` says in a session without MCP servers.
const NO_MCP_SERVERS: &str = "No MCP servers in this session. Add them under `mcpServers` in \
~/.corvid/settings.json or the project's .corvid/settings.json.";

impl App {
    /// Runs a slash command.
    pub fn command(&mut self, line: &str) -> Vec<Action> {
        let mut parts = line.splitn(2, char::is_whitespace);
        let name = parts.next().unwrap_or_default();
        let arg = parts.next().unwrap_or_default().trim();
        let info = |app: &mut Self, text: String| {
            app.chat.commit(HistoryCell::Notice(NoticeKind::Info, text));
        };
        match name {
            "/help" => info(self, help_text(self.commands.as_deref())),
            "/skills" => info(self, skills_text(self.commands.as_deref())),
            "/stats" => {
                let now = std::time::Instant::now();
                let text = format!(
                    "{}\n{}",
                    self.stats.report(),
                    self.times.report(&self.stats, now)
                );
                info(self, text);
            }
            "/compress" | "/compact" if self.chat.is_running() => {
                self.chat.commit(HistoryCell::Notice(
                    NoticeKind::Warning,
                    "A task is running; /compress works between tasks".into(),
                ))
            }
            "/compress" | "/compact" => return vec![Action::Submit(Op::Compact)],
            "/memory" => info(self, instructions::report(&self.instructions)),
            "/mcp" => info(
                self,
                self.tools
                    .source_report()
                    .unwrap_or_else(|| NO_MCP_SERVERS.to_owned()),
            ),
            "/tasks" => info(
                self,
                self.background.as_ref().map_or_else(
                    || "This session runs no background processes.".to_owned(),
                    |b| b.report(),
                ),
            ),
            "/view" => self.view_command(arg),
            "/model" if arg.is_empty() => self.open_model_picker(),
            "/model" => return self.model_command(arg),
            // The model's history is cleared with the screen; mid-task the core would keep it,
            // so neither is cleared then.
            "/clear" if self.chat.is_running() => self.chat.commit(HistoryCell::Notice(
                NoticeKind::Warning,
                "A task is running; /clear works between tasks (Esc stops this one)".into(),
            )),
            "/clear" => {
                self.chat.clear_transcript();
                // The model's history is gone: so is what filled its context window.
                self.stats.context = None;
                self.status.context = None;
                self.queued = None;
                // A new recorded session where sessions are kept (the old one stays
                // resumable); else the model's history is cleared in place.
                let fresh = if self.sessions.is_some() {
                    Action::NewSession
                } else {
                    Action::Submit(Op::ClearHistory)
                };
                return vec![fresh, Action::ClearScreen];
            }
            "/quit" | "/exit" => return vec![Action::Quit],
            "/resume" => return self.open_picker(arg),
            "/undo" => return self.undo_command(),
            "/rewind" => return self.rewind_command(arg),
            "/branch" => return self.branch_command(arg),
            _ if self.is_custom(name) && self.chat.is_running() => self.notice(
                NoticeKind::Warning,
                format!("A task is running; {name} works between tasks"),
            ),
            // The core expands it (injections asked like any shell command).
            _ if self.is_custom(name) => return vec![self.send_prompt(line.to_owned())],
            _ => self.chat.commit(HistoryCell::Notice(
                NoticeKind::Warning,
                format!("Unknown command {name} · /help lists the commands"),
            )),
        }
        Vec::new()
    }

    /// `/model NAME [EFFORT]` or `/model EFFORT`: the model and reasoning effort of later
    /// turns (the agent warns when the model takes no effort). A name the provider does not
    /// list is refused with the close matches; without a listing it is taken, with a note.
    fn model_command(&mut self, arg: &str) -> Vec<Action> {
        let choice = match corvid_core::models::ModelChoice::parse(arg) {
            Ok(choice) => choice,
            Err(message) => {
                self.notice(NoticeKind::Warning, message);
                return Vec::new();
            }
        };
        if let (Some(model), Some(listed)) = (&choice.model, &self.models)
            && !listed.contains(model)
        {
            let close = crate::model_picker::close_matches(model, listed);
            let hint = if close.is_empty() {
                String::new()
            } else {
                format!("; close matches: {}", close.join(", "))
            };
            let text = format!(
                "Unknown model {} for this provider{hint} · /model lists them all",
                printable(model)
            );
            self.notice(NoticeKind::Warning, printable(&text));
            return Vec::new();
        }
        let note = if choice.model.is_some() && self.models.is_none() {
            " (the provider's model list is unavailable, so the name was not checked)"
        } else {
            ""
        };
        self.use_model(choice.model, choice.effort, note)
    }

    /// `/model` alone: the picker over the provider's listed models.
    fn open_model_picker(&mut self) {
        match &self.models {
            Some(models) => {
                self.model_picker = Some(ModelPicker::new(models.clone(), &self.status.model));
            }
            None => self.notice(
                NoticeKind::Info,
                format!(
                    "Model: {} · the provider's model list is unavailable; /model NAME sets one",
                    printable(&self.status.model)
                ),
            ),
        }
    }

    /// Uses `model` and `effort` (when given) for later turns, with a notice ending in `note`.
    pub(super) fn use_model(
        &mut self,
        model: Option<String>,
        effort: Option<ReasoningEffort>,
        note: &str,
    ) -> Vec<Action> {
        let mut actions = Vec::new();
        let mut said = Vec::new();
        if let Some(model) = model {
            self.status.model = model.clone();
            said.push(format!("Model set to {}", printable(&model)));
            actions.push(Action::Submit(Op::SetModel { model }));
        }
        if let Some(effort) = effort {
            said.push(format!("reasoning effort {}", effort.as_str()));
            actions.push(Action::Submit(Op::SetReasoningEffort { effort }));
        }
        let mut text = format!("{} for later turns{note}", said.join(", "));
        if let Some(first) = text.get(..1) {
            text = first.to_uppercase() + &text[1..];
        }
        self.notice(NoticeKind::Info, text);
        actions
    }

    /// Whether `/name` is one of the session's custom commands or skills (or `/init`).
    fn is_custom(&self, name: &str) -> bool {
        let name = name.strip_prefix('/').unwrap_or(name);
        self.commands
            .as_ref()
            .is_some_and(|l| l.commands().find(name).is_some())
    }

    /// `/view [compact|full]`: sets the display mode (alone: toggles it), like Ctrl+O.
    fn view_command(&mut self, arg: &str) {
        let compact = match arg {
            "" => !self.chat.compact,
            "compact" => true,
            "full" => false,
            _ => {
                self.notice(
                    NoticeKind::Warning,
                    format!("Unknown view {arg:?}: use /view compact, /view full or /view alone to toggle"),
                );
                return;
            }
        };
        if compact != self.chat.compact {
            self.chat.toggle_compact();
        }
        let mode = if compact { "compact" } else { "full" };
        // Groups already printed are in the terminal's scrollback, which is not redrawn.
        self.notice(
            NoticeKind::Info,
            format!("View: {mode} tool groups from now on; ctrl+o shows the whole session in full"),
        );
    }

    /// `/resume [ID]`: resumes ID directly, else opens the picker over this project's sessions.
    fn open_picker(&mut self, id: &str) -> Vec<Action> {
        let Some(sessions) = self.sessions.clone() else {
            self.notice(
                NoticeKind::Warning,
                "Sessions are not available here: restart with `corvid --resume [ID]` or `corvid --continue`".into(),
            );
            return Vec::new();
        };
        if self.chat.is_running() || !id.is_empty() {
            return self.resume_action(id.to_string());
        }
        match sessions.list() {
            Ok(mut list) => {
                // A session without a prompt (opened and left) has nothing to go back to.
                list.retain(|s| s.id != self.session_id && !s.first_prompt.trim().is_empty());
                if list.is_empty() {
                    self.notice(
                        NoticeKind::Info,
                        "No earlier session of this project to resume".into(),
                    );
                } else {
                    self.picker = Some(SessionPicker::new(list));
                }
            }
            Err(e) => self.notice(NoticeKind::Error, format!("Cannot list sessions: {e}")),
        }
        Vec::new()
    }

    /// Resuming swaps the agent, so it waits until no task is running.
    pub(super) fn resume_action(&mut self, id: String) -> Vec<Action> {
        if self.chat.is_running() {
            self.notice(
                NoticeKind::Warning,
                "A task is running: cancel it (esc) or let it finish before /resume".into(),
            );
            return Vec::new();
        }
        vec![Action::Resume(id)]
    }
}
