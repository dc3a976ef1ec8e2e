//! What a project file may not do even in a trusted folder: the keys that pick where the
//! user's key is sent, which key is sent, and how much runs unasked are the user's alone.
//! A project may only make the stricter-only keys stricter. Every limit is one row of
//! [`LIMITED_KEYS`]; a key that needs protecting joins by adding a row.

use std::path::Path;

use corvid_protocol::ApprovalMode;
use corvid_tools::shell::{PROVIDER_KEYS, SandboxLevel};

use super::file::Partial;
use super::{FastModelSetting, FastModelSpec, Settings};

/// One key and what a project file may do with it.
struct LimitedKey {
    key: &'static str,
    limit: Limit,
}

/// The kinds of limits on a project's value.
enum Limit {
    /// Only the user's settings, the environment and flags set it. The function removes the
    /// project's value and says whether there was one.
    UserLevel(fn(&mut Partial) -> bool),
    /// A project value applies only when it is at least as strict as the user's (or the
    /// default when the user set none). The function drops a more permissive project value
    /// and returns `(project's value, user's value)` for the warning.
    NoLooser(fn(user: &Partial, project: &mut Partial) -> Option<(String, String)>),
    /// A list a project may add entries to but not take protections away from. The
    /// function removes the project's loosening entries and returns them.
    AddEntries(fn(&mut Partial) -> Vec<String>),
}

/// The user-level-only keys, in one place.
const LIMITED_KEYS: &[LimitedKey] = &[
    // A repository must not switch off (or starve) the undo that protects its user.
    LimitedKey {
        key: "checkpoints",
        limit: Limit::UserLevel(|p| std::mem::take(&mut p.checkpoints) != Default::default()),
    },
    LimitedKey {
        key: "model.baseUrl",
        limit: Limit::UserLevel(|p| p.base_url.take().is_some()),
    },
    LimitedKey {
        key: "model.apiKeyEnv",
        limit: Limit::UserLevel(|p| p.api_key_env.take().is_some()),
    },
    LimitedKey {
        key: "fastModel.provider",
        limit: Limit::UserLevel(|p| fast_spec(p).is_some_and(|s| s.provider.take().is_some())),
    },
    LimitedKey {
        key: "fastModel.baseUrl",
        limit: Limit::UserLevel(|p| fast_spec(p).is_some_and(|s| s.base_url.take().is_some())),
    },
    LimitedKey {
        key: "fastModel.apiKeyEnv",
        limit: Limit::UserLevel(|p| fast_spec(p).is_some_and(|s| s.api_key_env.take().is_some())),
    },
    LimitedKey {
        key: "tools.approvalMode",
        limit: Limit::NoLooser(|user, project| {
            let mine = user
                .approval_mode
                .unwrap_or(Settings::default().tools.approval_mode);
            let theirs = project.approval_mode?;
            if approval_permissiveness(theirs) <= approval_permissiveness(mine) {
                return None;
            }
            project.approval_mode = None;
            Some((theirs.as_str().to_owned(), mine.as_str().to_owned()))
        }),
    },
    LimitedKey {
        key: "tools.sandbox",
        limit: Limit::NoLooser(|user, project| {
            let mine = user.sandbox.unwrap_or(Settings::default().tools.sandbox);
            let theirs = project.sandbox?;
            if sandbox_permissiveness(theirs) <= sandbox_permissiveness(mine) {
                return None;
            }
            project.sandbox = None;
            Some((theirs.as_str().to_owned(), mine.as_str().to_owned()))
        }),
    },
    LimitedKey {
        // The user's cap on how long the model may let a command run.
        key: "tools.shellTimeoutMs",
        limit: Limit::NoLooser(|user, project| {
            let mine = user
                .shell_timeout_ms
                .unwrap_or(Settings::default().tools.shell_timeout_ms);
            let theirs = project.shell_timeout_ms?;
            if theirs <= mine {
                return None;
            }
            project.shell_timeout_ms = None;
            Some((theirs.to_string(), mine.to_string()))
        }),
    },
    LimitedKey {
        // The user's cap on how many processes the model may leave running.
        key: "tools.maxBackground",
        limit: Limit::NoLooser(|user, project| {
            let mine = user
                .max_background
                .unwrap_or(Settings::default().tools.max_background);
            let theirs = project.max_background?;
            if theirs <= mine {
                return None;
            }
            project.max_background = None;
            Some((theirs.to_string(), mine.to_string()))
        }),
    },
    LimitedKey {
        key: "tools.shellEnv",
        limit: Limit::UserLevel(|p| p.shell_env.take().is_some()),
    },
    LimitedKey {
        // A trusted server's calls run unasked.
        key: "mcpServers.*.trust",
        limit: Limit::UserLevel(|p| {
            let mut any = false;
            for server in &mut p.mcp_servers {
                any |= std::mem::take(&mut server.trust);
            }
            any
        }),
    },
    LimitedKey {
        // A server whose hints are believed runs its "read-only" tools unasked.
        key: "mcpServers.*.trustHints",
        limit: Limit::UserLevel(|p| {
            let mut any = false;
            for server in &mut p.mcp_servers {
                any |= std::mem::take(&mut server.trust_hints);
            }
            any
        }),
    },
    LimitedKey {
        // The model keys are withheld from every server's environment; a project's server
        // must not be handed them by naming them either.
        key: "mcpServers.* naming OPENAI_API_KEY or ANTHROPIC_API_KEY",
        limit: Limit::UserLevel(|p| {
            let before = p.mcp_servers.len();
            p.mcp_servers.retain(|server| {
                !server
                    .variables()
                    .iter()
                    .any(|v| PROVIDER_KEYS.iter().any(|k| v.eq_ignore_ascii_case(k)))
            });
            p.mcp_servers.len() < before
        }),
    },
    LimitedKey {
        // Private hosts `web_fetch` may reach: a repository must not open the user's network.
        key: "web.allowPrivate",
        limit: Limit::UserLevel(|p| p.web_allow_private.take().is_some()),
    },
    LimitedKey {
        // Where searches go with the user's key: a repository's `baseUrl` would receive it.
        key: "webSearch",
        limit: Limit::UserLevel(|p| p.web_search.take().is_some()),
    },
    LimitedKey {
        // Whether and what corvid exports: a repository must not send the session to its
        // collector. The binary reads the block from the user's file alone; this row only
        // tells the user a project's block is ignored.
        key: "telemetry",
        limit: Limit::UserLevel(|p| std::mem::take(&mut p.telemetry)),
    },
    LimitedKey {
        key: "tools.allow",
        limit: Limit::UserLevel(|p| !std::mem::take(&mut p.allow).is_empty()),
    },
    LimitedKey {
        // The names are read in `$CORVID_HOME` too: a project must not pick which of the
        // user's files go to the model.
        key: "context.fileNames",
        limit: Limit::UserLevel(|p| p.context_file_names.take().is_some()),
    },
    LimitedKey {
        key: "tools.protectedPaths",
        // `!glob` lifts a protection (a built-in one or the user's); a plain glob adds one.
        limit: Limit::AddEntries(|p| {
            let (lifted, added) = std::mem::take(&mut p.protected_paths)
                .into_iter()
                .partition(|entry| entry.starts_with('!'));
            p.protected_paths = added;
            lifted
        }),
    },
];

/// Removes from `project` (read from `path`) every value it may not set given the user's
/// own file `user`, with a warning naming the file and the key for each.
pub(super) fn restrict(
    path: &Path,
    user: &Partial,
    project: &mut Partial,
    warnings: &mut Vec<String>,
) {
    let file = path.display();
    for LimitedKey { key, limit } in LIMITED_KEYS {
        match limit {
            Limit::UserLevel(take) => {
                if take(project) {
                    warnings.push(format!(
                        "{file}: settings key `{key}` can only be set in your user settings, \
                         not in a project file (ignored)"
                    ));
                }
            }
            Limit::NoLooser(clamp) => {
                if let Some((theirs, mine)) = clamp(user, project) {
                    warnings.push(format!(
                        "{file}: settings key `{key}` is `{theirs}`, more permissive than your \
                         own `{mine}`; a project file may only make it stricter (ignored)"
                    ));
                }
            }
            Limit::AddEntries(drop_lifting) => {
                for entry in drop_lifting(project) {
                    warnings.push(format!(
                        "{file}: settings key `{key}` entry `{entry}` would lift a protection; \
                         a project file may only add entries (ignored)"
                    ));
                }
            }
        }
    }
}

/// The object form of the project's `fastModel`, where its endpoint keys live.
fn fast_spec(p: &mut Partial) -> Option<&mut FastModelSpec> {
    match &mut p.fast_model {
        Some(FastModelSetting::Model(spec)) => Some(spec),
        _ => None,
    }
}

/// How much an approval mode lets run unasked: `plan` < `default` < `auto-edit` < `auto` <
/// `yolo` (`auto` adds sandboxed commands to `auto-edit`'s edits, so a project may not pick it
/// over a user's `auto-edit`).
fn approval_permissiveness(mode: ApprovalMode) -> u8 {
    match mode {
        ApprovalMode::Plan => 0,
        ApprovalMode::Default => 1,
        ApprovalMode::AutoEdit => 2,
        ApprovalMode::Auto => 3,
        ApprovalMode::Yolo => 4,
    }
}

/// How far a sandbox level lets commands reach: `read-only` < `workspace-write` < `off`.
fn sandbox_permissiveness(level: SandboxLevel) -> u8 {
    match level {
        SandboxLevel::ReadOnly => 0,
        SandboxLevel::WorkspaceWrite => 1,
        SandboxLevel::Off => 2,
    }
}
