//! Project hooks wait for the user's review: a trusted folder's hooks run only once the user
//! approved each handler (`corvid hooks trust`), because a hook is a command run unasked and
//! trusting a folder once must not let whatever lands in its settings later run too (a
//! sandboxed command, a pulled commit or a dependency may write `.claude/settings.local.json`).
//!
//! A handler is pinned by the SHA-256 of what decides what runs and when: the project folder
//! (canonical; the same command line runs a different `./script` in another repository), the
//! event, the matcher, the command and the `if` rule. `timeout` and `onError` are left out:
//! they change neither the program nor the calls it sees, and a project could as well remove
//! the handler, which needs no review. A script the command runs is not pinned: it is the
//! project's code, like its build scripts.

use std::path::Path;

use super::config::{Handler, HookScope, HooksConfig};
use crate::settings::ProjectTrust;

/// A project handler that does not run until the user approves it.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingHook {
    /// Lower-case hex SHA-256 naming exactly this handler in this folder.
    pub pin: String,
    pub handler: Handler,
}

/// The pin of `handler` configured for the project `folder`.
pub fn pin(folder: &Path, handler: &Handler) -> String {
    let folder = folder
        .canonicalize()
        .unwrap_or_else(|_| folder.to_path_buf());
    let pinned = serde_json::json!({
        "folder": folder.to_string_lossy(),
        "event": handler.event.as_str(),
        "matcher": handler.matcher.as_str(),
        "command": handler.command,
        "if": handler.condition.as_ref().map(|c| c.source()),
    });
    crate::settings::trust::digest(pinned.to_string().as_bytes())
}

/// Moves the project handlers of `config` that `project` has not approved to
/// `config.pending`, with one warning saying how many wait and how to review them.
pub(super) fn hold_back(config: &mut HooksConfig, folder: &Path, project: &ProjectTrust) {
    let handlers = std::mem::take(&mut config.handlers);
    for handler in handlers {
        if handler.source.scope == HookScope::User {
            config.handlers.push(handler);
            continue;
        }
        let pin = pin(folder, &handler);
        if project.hook_approved(&pin) {
            config.handlers.push(handler);
        } else {
            config.pending.push(PendingHook { pin, handler });
        }
    }
    if let Some(warning) = waiting_warning(config.pending.len(), folder) {
        config.warnings.push(warning);
    }
}

/// "N project hooks wait for review", naming the command that shows and approves them.
pub fn waiting_warning(count: usize, folder: &Path) -> Option<String> {
    let (noun, verb) = match count {
        0 => return None,
        1 => ("hook", "waits"),
        _ => ("hooks", "wait"),
    };
    Some(format!(
        "{count} project {noun} {verb} for review and will not run until you approve: run \
         `corvid hooks trust` in {} to see them and approve them",
        folder.display()
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::settings::{ConfigFile, Trust};

    fn config(block: &str) -> HooksConfig {
        let mut config = HooksConfig::default();
        config
            .add_file(
                Path::new("/p/.corvid/settings.json"),
                block,
                HookScope::Project,
            )
            .unwrap();
        config
    }

    const BLOCK: &str = r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "./guard.sh", "if": "Bash(git *)", "timeout": 5}]}]}}"#;

    #[test]
    fn the_pin_covers_folder_event_matcher_command_and_if_but_not_the_timeout() {
        let base = pin(Path::new("/p"), &config(BLOCK).handlers[0]);
        for changed in [
            BLOCK.replace("./guard.sh", "./guard.sh "),
            BLOCK.replace("\"Bash\"", "\"Bash|Edit\""),
            BLOCK.replace("PreToolUse", "PostToolUse"),
            BLOCK.replace("git *", "git push *"),
        ] {
            assert_ne!(pin(Path::new("/p"), &config(&changed).handlers[0]), base);
        }
        assert_ne!(pin(Path::new("/q"), &config(BLOCK).handlers[0]), base);
        let longer = BLOCK.replace("\"timeout\": 5", "\"timeout\": 50");
        assert_eq!(pin(Path::new("/p"), &config(&longer).handlers[0]), base);
    }

    #[test]
    fn only_approved_project_handlers_stay_and_user_handlers_need_no_approval() {
        let mut both = config(BLOCK);
        both.add_file(
            Path::new("/u/settings.json"),
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine"}]}]}}"#,
            HookScope::User,
        )
        .unwrap();
        let trusted = ProjectTrust::accepting(Path::new("/p"), &[] as &[ConfigFile]);
        assert_eq!(trusted.trust, Trust::Trusted);
        let mut held = both.clone();
        hold_back(&mut held, Path::new("/p"), &trusted);
        assert_eq!(held.handlers.len(), 1);
        assert_eq!(held.handlers[0].command, "mine");
        assert_eq!(held.pending.len(), 1);
        assert!(held.warnings[0].starts_with("1 project hook waits for review"));

        let approved = trusted.approving_hooks([held.pending[0].pin.clone()]);
        let mut kept = both;
        hold_back(&mut kept, Path::new("/p"), &approved);
        assert_eq!(kept.handlers.len(), 2);
        assert!(kept.pending.is_empty() && kept.warnings.is_empty());
    }
}
