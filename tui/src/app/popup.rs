//! The slash-command popup: the built-in commands, then the session's custom commands and
//! user-invocable skills, matching the command name being typed.

use super::{App, COMMANDS};

/// One entry of the slash-command popup.
#[derive(Debug, Clone, PartialEq)]
pub struct PopupEntry {
    /// `/name`.
    pub name: String,
    /// The argument hint (`FILE`, `[ID]`); empty when it takes none.
    pub arg: String,
    /// What it does.
    pub what: String,
    /// Where a custom command or skill comes from (`project-claude`, `skill`); `None` for
    /// a built-in.
    pub source: Option<String>,
}

impl App {
    /// The slash commands the box's text starts, built-ins first, then the custom commands
    /// and skills with their source, while a command name is being typed; empty otherwise.
    pub fn command_popup(&self) -> Vec<PopupEntry> {
        let text = self.composer.text();
        if !text.starts_with('/')
            || text.contains(char::is_whitespace)
            || self.picker.is_some()
            || self.model_picker.is_some()
            || self.rewind.is_some()
            || self.composer.browsing_history()
        {
            return Vec::new();
        }
        let builtin = COMMANDS.iter().map(|(name, arg, what)| PopupEntry {
            name: (*name).to_owned(),
            arg: (*arg).to_owned(),
            what: (*what).to_owned(),
            source: None,
        });
        let custom = self
            .commands
            .as_ref()
            .map(|l| l.commands().commands)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.path.is_some())
            .map(|c| PopupEntry {
                name: format!("/{}", c.name),
                arg: c.argument_hint.unwrap_or_default(),
                what: c.description,
                source: Some(c.origin.to_string()),
            });
        builtin
            .chain(custom)
            .filter(|e| e.name.starts_with(text))
            .collect()
    }
}
