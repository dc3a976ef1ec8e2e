//! Reviewing a project's hooks: `corvid hooks trust` lists the project handlers that wait for
//! the user's approval (new, or changed since approved) and approves them, and the terminal UI
//! asks the same before it starts. An approval pins exactly the handler shown (see
//! `corvid_core::hooks::review`); a byte changed in its command makes it wait again.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use corvid_core::hooks::{HooksConfig, PendingHook};
use corvid_core::settings::{
    Settings, SettingsFiles, Trust, TrustedFolders, corvid_home, process_env,
};

use crate::wiring::{ConfigError, Setup};

/// How many hex digits of a pin are shown; at least this many must be given to approve one.
const SHOWN_DIGITS: usize = 12;

/// The project handlers of the session in `cwd` that wait for review.
fn pending(settings: &Settings, cwd: &std::path::Path) -> Result<Vec<PendingHook>, ConfigError> {
    let files = SettingsFiles::discover(cwd, process_env);
    let home = process_env("HOME").map(PathBuf::from);
    let config = HooksConfig::load(&files, &settings.project, home.as_deref())
        .map_err(|e| ConfigError(e.to_string()))?;
    Ok(config.pending)
}

/// `corvid hooks trust`: without pins (or with `--list`) shows what waits; with `--all` or
/// pins (unique prefixes of at least [`SHOWN_DIGITS`] digits) approves them.
pub fn trust(
    setup: &Setup,
    list_only: bool,
    all: bool,
    pins: &[String],
    out: &mut impl Write,
) -> Result<(), ConfigError> {
    let waiting = pending(&setup.settings, &setup.cwd)?;
    if waiting.is_empty() {
        let note = if setup.settings.project.trust == Trust::Untrusted {
            " This folder is not trusted, so its hooks are not read at all: start corvid here \
             in a terminal and answer yes to trust it, or pass --trust."
        } else {
            ""
        };
        writeln!(out, "No project hooks wait for review.{note}").map_err(write_error)?;
        return Ok(());
    }
    if list_only || (!all && pins.is_empty()) {
        show(&waiting, out).map_err(write_error)?;
        writeln!(
            out,
            "Approve all shown with `corvid hooks trust --all`, or some with \
             `corvid hooks trust HASH...`. Only approve commands you have read."
        )
        .map_err(write_error)?;
        return Ok(());
    }
    let chosen: Vec<&PendingHook> = if all {
        waiting.iter().collect()
    } else {
        pins.iter()
            .map(|given| choose(&waiting, given))
            .collect::<Result<_, _>>()?
    };
    approve(&chosen)?;
    for hook in &chosen {
        writeln!(out, "approved {}", describe(hook)).map_err(write_error)?;
    }
    Ok(())
}

/// The one waiting handler whose pin starts with `given`.
fn choose<'a>(waiting: &'a [PendingHook], given: &str) -> Result<&'a PendingHook, ConfigError> {
    let given = given.trim().to_ascii_lowercase();
    if given.len() < SHOWN_DIGITS || !given.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ConfigError(format!(
            "`{given}` is not a hook's hash: give the {SHOWN_DIGITS} hex digits \
             `corvid hooks trust --list` shows (nothing was approved)"
        )));
    }
    let mut found = waiting.iter().filter(|h| h.pin.starts_with(&given));
    match (found.next(), found.next()) {
        (Some(hook), None) => Ok(hook),
        (None, _) => Err(ConfigError(format!(
            "no project hook waiting for review has the hash {given} (it may have changed: \
             run `corvid hooks trust --list`); nothing was approved"
        ))),
        (Some(_), Some(_)) => Err(ConfigError(format!(
            "{given} names more than one waiting hook; give more digits (nothing was approved)"
        ))),
    }
}

/// Remembers `hooks` as approved in the user's trusted folders.
fn approve(hooks: &[&PendingHook]) -> Result<(), ConfigError> {
    let home = corvid_home(process_env).ok_or_else(|| {
        ConfigError("no home directory to remember the approval in: set CORVID_HOME".into())
    })?;
    let mut trusted = TrustedFolders::load(&home).map_err(|e| ConfigError(e.to_string()))?;
    let pins: Vec<String> = hooks.iter().map(|h| h.pin.clone()).collect();
    trusted
        .approve_hooks(&pins)
        .map_err(|e| ConfigError(e.to_string()))
}

/// One line per handler: hash, event, matcher, command, and the file it is in.
fn show(waiting: &[PendingHook], out: &mut impl Write) -> std::io::Result<()> {
    let (noun, verb) = if waiting.len() == 1 {
        ("hook", "waits")
    } else {
        ("hooks", "wait")
    };
    writeln!(
        out,
        "{} project {noun} {verb} for review (they do not run until approved):",
        waiting.len()
    )?;
    for hook in waiting {
        writeln!(out, "  {}", describe(hook))?;
    }
    Ok(())
}

fn describe(hook: &PendingHook) -> String {
    let h = &hook.handler;
    let matcher = match h.matcher.as_str() {
        "" => "*",
        m => m,
    };
    let condition = h
        .condition
        .as_ref()
        .map(|c| format!("  if {}", c.source()))
        .unwrap_or_default();
    format!(
        "{}  {}  {matcher}{condition}  {}\n      from {}",
        &hook.pin[..SHOWN_DIGITS.min(hook.pin.len())],
        h.event,
        h.command,
        h.source.path.display()
    )
}

/// The terminal UI's question before it starts: shows the waiting project hooks and approves
/// them all on an explicit yes. Without a terminal nothing is asked (the session warns).
/// Returns the settings with the approved handlers applied.
pub fn ask_before_ui(
    mut settings: Settings,
    cwd: &std::path::Path,
) -> Result<Settings, ConfigError> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Ok(settings);
    }
    let waiting = pending(&settings, cwd)?;
    if waiting.is_empty() {
        return Ok(settings);
    }
    let yes = ask(
        &mut std::io::stdin().lock(),
        &mut std::io::stdout(),
        &waiting,
    )
    .map_err(|e| ConfigError(format!("cannot ask about the project's hooks: {e}")))?;
    if yes {
        let chosen: Vec<&PendingHook> = waiting.iter().collect();
        approve(&chosen)?;
        settings.project = settings
            .project
            .approving_hooks(waiting.into_iter().map(|h| h.pin));
    }
    Ok(settings)
}

/// The question itself; true only for an explicit yes.
fn ask(
    input: &mut impl BufRead,
    output: &mut impl Write,
    waiting: &[PendingHook],
) -> std::io::Result<bool> {
    show(waiting, output)?;
    write!(
        output,
        "Hooks run as you, unsandboxed, whenever their event fires.\nApprove all shown? \
         Only say yes if you have read these commands. [y/N] (N: not now) "
    )?;
    output.flush()?;
    let mut answer = String::new();
    input.read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

fn write_error(e: std::io::Error) -> ConfigError {
    ConfigError(format!("cannot write the output: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use corvid_core::hooks::{Handler, HookEvent, HookScope, HookSource, Matcher};

    fn waiting() -> Vec<PendingHook> {
        let handler = Handler {
            event: HookEvent::PreToolUse,
            matcher: Matcher::new("Bash").unwrap(),
            command: "./guard.sh".into(),
            timeout: std::time::Duration::from_secs(5),
            block_on_error: false,
            condition: None,
            source: HookSource {
                path: "/p/.claude/settings.local.json".into(),
                scope: HookScope::Project,
            },
        };
        vec![PendingHook {
            pin: "0123456789abcdef".repeat(4),
            handler,
        }]
    }

    #[test]
    fn only_an_explicit_yes_approves_the_hooks_shown() {
        for (text, expected) in [("y\n", true), ("yes\n", true), ("\n", false), ("", false)] {
            let mut out = Vec::new();
            let yes = ask(&mut text.as_bytes(), &mut out, &waiting()).unwrap();
            assert_eq!(yes, expected, "{text:?}");
            let shown = String::from_utf8(out).unwrap();
            assert!(
                shown.contains("0123456789ab  PreToolUse  Bash  ./guard.sh\n      from /p/.claude/settings.local.json"),
                "{shown}"
            );
        }
    }

    #[test]
    fn a_short_or_unknown_hash_approves_nothing() {
        let waiting = waiting();
        assert!(choose(&waiting, "0123").is_err());
        assert!(choose(&waiting, "ffffffffffff").is_err());
        assert!(choose(&waiting, "0123456789AB").is_ok());
    }
}
