//! Slash commands over ACP (issue 14 item 16): the ones that make sense in an editor are
//! advertised with `available_commands_update`, and a prompt starting with one runs it
//! instead of reaching the model.

use corvid_protocol::{Op, RewindScope};

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
    /// Show the model (`None`) or switch later turns to it.
    Model(Option<String>),
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
        "/compress" | "/compact" if arg.is_empty() => Some(Command::Task(Op::Compact)),
        "/undo" if arg.is_empty() => Some(Command::Rewind(RewindAsk::To {
            turn: None,
            scope: RewindScope::Both,
        })),
        "/rewind" if arg.is_empty() => Some(Command::Rewind(RewindAsk::List)),
        "/rewind" => rewind_args(arg).map(Command::Rewind),
        "/model" if arg.is_empty() => Some(Command::Reply(Reply::Model(None))),
        "/model" if !arg.contains(char::is_whitespace) => {
            Some(Command::Reply(Reply::Model(Some(arg.into()))))
        }
        _ => None,
    }
}

/// The `available_commands_update` for a session (names without the slash, as ACP wants).
pub(crate) fn available(session_id: SessionId) -> SessionNotification {
    let commands = vec![
        AvailableCommand::new("stats", "Token usage per prompt id, turns and tool calls"),
        AvailableCommand::new("clear", "Start a fresh conversation in this session"),
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
        AvailableCommand::new("model", "Show the model, or switch later turns to another").input(
            AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
                "model name (empty shows the current one)",
            )),
        ),
    ];
    SessionNotification::new(
        session_id,
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
    )
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
            "/compress",
            "/compact",
            "/model",
            "/model gpt-5-mini",
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
                Some(Command::Task(Op::Compact)),
                Some(Command::Task(Op::Compact)),
                Some(Command::Reply(Reply::Model(None))),
                Some(Command::Reply(Reply::Model(Some("gpt-5-mini".into())))),
                None,
                None,
                None,
                None,
            ]
        );
    }
}
