//! `corvid commands list` and `corvid commands show`: which custom commands and skills a
//! session here would offer, from which file, and the exact prompt one would send (so a
//! file's `$0`/`$1` reads the way its author meant before anything runs).

use std::io::Write;

use corvid_core::commands::{Library, Scope, join_args};
use corvid_core::settings::process_env;

use crate::wiring::{ConfigError, Setup};

fn library(setup: &Setup) -> std::sync::Arc<Library> {
    Library::for_settings(&setup.settings, process_env, &setup.cwd)
}

/// One line per command (`/name`, description, source file), then the overridden ones and
/// the warnings.
pub fn list(setup: &Setup, out: &mut impl Write) -> Result<(), ConfigError> {
    let catalog = library(setup).commands();
    for command in &catalog.commands {
        let source = match (&command.path, command.scope) {
            (Some(path), _) => path.display().to_string(),
            (None, Scope::Builtin) => "built in".to_owned(),
            (None, _) => String::new(),
        };
        let hint = command
            .argument_hint
            .as_deref()
            .map(|h| format!(" {h}"))
            .unwrap_or_default();
        writeln!(
            out,
            "/{}{hint}\n    {}\n    {} ({})",
            command.name, command.description, source, command.origin
        )
        .map_err(write_error)?;
    }
    for command in &catalog.shadowed {
        if command.scope != Scope::Builtin {
            writeln!(
                out,
                "/{} (overridden; reachable as /{})",
                command.name,
                command.qualified()
            )
            .map_err(write_error)?;
        }
    }
    for warning in &catalog.warnings {
        writeln!(out, "warning: {warning}").map_err(write_error)?;
    }
    Ok(())
}

/// The expanded prompt of `/name args`, injections and files named but not run.
pub fn show(
    setup: &Setup,
    name: &str,
    args: &[String],
    out: &mut impl Write,
) -> Result<(), ConfigError> {
    let name = name.strip_prefix('/').unwrap_or(name);
    let catalog = library(setup).commands();
    let command = catalog.find(name).ok_or_else(|| {
        ConfigError(format!(
            "there is no command /{name}; `corvid commands list` shows the commands here"
        ))
    })?;
    let expansion = command
        .expand(&join_args(args))
        .map_err(|why| ConfigError(format!("/{name}: {why}")))?;
    writeln!(out, "{}", expansion.preview()).map_err(write_error)?;
    if !expansion.allowed_tools.is_empty() {
        writeln!(
            out,
            "\n(allowed without asking for this prompt: {})",
            expansion.allowed_tools.join(", ")
        )
        .map_err(write_error)?;
    }
    Ok(())
}

fn write_error(e: std::io::Error) -> ConfigError {
    ConfigError(format!("cannot write the list: {e}"))
}
