//! Slash commands over ACP (issue 14 item 16): the ones that make sense in an editor are
//! advertised with `available_commands_update`, and a prompt starting with one runs it
//! instead of reaching the model.

use corvid_core::models::ModelChoice;
use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, Error};
use corvid_core::commands::Library;
use corvid_protocol::{Op, RewindScope};

use crate::session::Session;

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionId,
    SessionNotification, SessionUpdate, UnstructuredCommandInput,
};

/// A command a prompt asked for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Command {
    /// Answered at once by the session.
    Reply(Reply),
    /// Runs as a task of the agent, answered like a prompt when it ends: compacting the
    /// conversation (`/compress`, or `/compact` as other agents call it).
    Task(Op),
    /// `/undo` and `/rewind`: previewed, confirmed with `session/request_permission`, then
    /// carried out by the agent (`crate::rewind`).
    Rewind(RewindAsk),
    /// `/branch [N]`: a fork of the session (from before turn N, its files restored after
    /// the same preview and confirmation as a rewind), opened with `session/load`.
    Branch(Option<u32>),
}

/// What `/undo` or `/rewind` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RewindAsk {
    /// `/rewind` alone: the earlier turns, with what each changed.
    List,
    /// `/undo` (`turn` `None`: the last one, both), `/rewind N [code|conversation|both]`.
    To {
        turn: Option<u32>,
        scope: RewindScope,
    },
}

fn rewind_args(arg: &str) -> Option<RewindAsk> {
    let mut words = arg.split_whitespace();
    let turn = words.next()?.parse::<u32>().ok()?;
    let scope = match words.next() {
        None | Some("both") => RewindScope::Both,
        Some("code") => RewindScope::Code,
        Some("conversation") => RewindScope::Conversation,
        Some(_) => return None,
    };
    if words.next().is_some() {
        return None;
    }
    Some(RewindAsk::To {
        turn: Some(turn),
        scope,
    })
}

/// A command the session answers at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// Token usage per prompt id, turns and tool calls.
    Stats,
    /// A fresh conversation in the same session.
    Clear,
    /// Show the model (nothing chosen), or switch later turns to a model, an effort or both.
    Model(ModelChoice),
    /// The session's background processes.
    Tasks,
}

/// The command a prompt starts with; anything else (an unknown `/word`, a path such as
/// `/usr/bin`) is a prompt for the model.
pub(crate) fn parse(prompt: &str) -> Option<Command> {
    let line = prompt.trim();
    let (name, arg) = line
        .split_once(char::is_whitespace)
        .map_or((line, ""), |(name, arg)| (name, arg.trim()));
    match name {
        "/stats" if arg.is_empty() => Some(Command::Reply(Reply::Stats)),
        "/clear" if arg.is_empty() => Some(Command::Reply(Reply::Clear)),
        "/tasks" if arg.is_empty() => Some(Command::Reply(Reply::Tasks)),
        "/compress" | "/compact" if arg.is_empty() => Some(Command::Task(Op::Compact)),
        "/undo" if arg.is_empty() => Some(Command::Rewind(RewindAsk::To {
            turn: None,
            scope: RewindScope::Both,
        })),
        "/rewind" if arg.is_empty() => Some(Command::Rewind(RewindAsk::List)),
        "/rewind" => rewind_args(arg).map(Command::Rewind),
        "/branch" if arg.is_empty() => Some(Command::Branch(None)),
        "/branch" => arg.parse::<u32>().ok().map(|n| Command::Branch(Some(n))),
        "/model" => ModelChoice::parse(arg)
            .ok()
            .map(|choice| Command::Reply(Reply::Model(choice))),
        _ => None,
    }
}

/// How often a session's command and skill folders are looked at for changes.
const WATCH_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

/// The `available_commands_update` for a session (names without the slash, as ACP wants):
/// the built-in commands, then every custom command and user-invocable skill of `library`
/// with its description and `argument-hint` (an editor sends them back as `/name args`,
/// which the agent expands).
pub(crate) fn available(session_id: SessionId, library: Option<&Library>) -> SessionNotification {
    let mut commands = vec![
        AvailableCommand::new("stats", "Token usage per prompt id, turns and tool calls"),
        AvailableCommand::new("clear", "Start a fresh conversation in this session"),
        AvailableCommand::new(
            "tasks",
            "The background processes of this session: id, state, command",
        ),
        AvailableCommand::new(
            "compress",
            "Summarize the older conversation to free the context window",
        ),
        AvailableCommand::new(
            "undo",
            "Undo the last turn: its file changes (shell commands included) and the conversation",
        ),
        AvailableCommand::new(
            "rewind",
            "List earlier turns, or go back to before turn N (code, conversation or both)",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("N [code|conversation|both] (empty lists the turns)"),
        )),
        AvailableCommand::new(
            "branch",
            "Fork this session into a new one (kept as it is); N: from before turn N, its files \
             restored. Open the fork with session/load",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("N (empty forks the whole conversation)"),
        )),
        AvailableCommand::new(
            "model",
            "Show the model, or switch later turns to another model or reasoning effort",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new(
                "model name and/or effort (minimal, low, medium, high, xhigh); empty shows them",
            ),
        )),
    ];
    let builtin = [
        "stats", "clear", "tasks", "compress", "compact", "model", "undo", "rewind", "branch",
    ];
    if let Some(library) = library {
        for command in library.commands().commands {
            if builtin.contains(&command.name.as_str()) {
                continue;
            }
            let mut available = AvailableCommand::new(command.name.clone(), command.description);
            if let Some(hint) = command.argument_hint {
                available = available.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint),
                ));
            }
            commands.push(available);
        }
    }
    SessionNotification::new(
        session_id,
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
    )
}

/// Sends a session's command list, then again whenever a command or skill file changes
/// (while the session lives).
pub(crate) fn announce(
    session: Option<Arc<Session>>,
    session_id: SessionId,
    cx: &ConnectionTo<Client>,
) -> Result<(), Error> {
    let library = session.as_ref().and_then(|s| s.commands.clone());
    cx.send_notification(available(session_id.clone(), library.as_deref()))?;
    let (Some(library), Some(session)) = (library, session) else {
        return Ok(());
    };
    let session = Arc::downgrade(&session);
    let cx = cx.clone();
    tokio::spawn(async move {
        let mut seen = library.fingerprint();
        loop {
            tokio::time::sleep(WATCH_INTERVAL).await;
            if session.upgrade().is_none() {
                return;
            }
            let now = library.fingerprint();
            if now != seen {
                seen = now;
                let update = available(session_id.clone(), Some(&library));
                if cx.send_notification(update).is_err() {
                    return;
                }
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn only_known_commands_are_taken_from_a_prompt() {
        let parsed: Vec<Option<Command>> = [
            "/stats",
            "  /clear \n",
            "/tasks",
            "/compress",
            "/compact",
            "/model",
            "/model gpt-5-mini",
            "/model gpt-5 high",
            "/model two words",
            "/stats please",
            "/usr/bin is odd",
            "hello /stats",
        ]
        .iter()
        .map(|p| parse(p))
        .collect();
        assert_eq!(
            parsed,
            vec![
                Some(Command::Reply(Reply::Stats)),
                Some(Command::Reply(Reply::Clear)),
                Some(Command::Reply(Reply::Tasks)),
                Some(Command::Task(Op::Compact)),
                Some(Command::Task(Op::Compact)),
                Some(Command::Reply(Reply::Model(ModelChoice::default()))),
                Some(Command::Reply(Reply::Model(ModelChoice {
                    model: Some("gpt-5-mini".into()),
                    effort: None
                }))),
                Some(Command::Reply(Reply::Model(ModelChoice {
                    model: Some("gpt-5".into()),
                    effort: Some(corvid_protocol::ReasoningEffort::High)
                }))),
                None,
                None,
                None,
                None,
            ]
        );
    }
}
