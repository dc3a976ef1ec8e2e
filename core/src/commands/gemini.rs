//! TOML commands (Gemini CLI, Qwen Code): `prompt` and `description`; in the prompt
//! `{{args}}` is the typed text (raw outside `!{...}`, shell-escaped inside it), `!{cmd}`
//! runs a command and `@{path}` puts a file's text in place. Without `{{args}}`, the command
//! as typed is appended after a blank line, as Gemini CLI does.

use serde::Deserialize;

use super::markdown::merge_text;
use super::{Command, Dialect, Expansion, Piece, Scope};

#[derive(Deserialize)]
struct File {
    prompt: Option<String>,
    description: Option<String>,
}

const ARGS: &str = "{{args}}";

/// A command from a TOML file; the error names what is wrong and where.
pub(super) fn parse(text: &str) -> Result<Command, String> {
    let file: File = toml::from_str(text).map_err(|e| {
        let at = e
            .span()
            .map(|s| format!(" at line {}", line_of(text, s.start)))
            .unwrap_or_default();
        format!("it is not valid TOML{at}: {}", e.message())
    })?;
    let prompt = file
        .prompt
        .filter(|p| !p.trim().is_empty())
        .ok_or("it has no `prompt` (the text sent to the model); add `prompt = \"...\"`")?;
    if let Some(unknown) = unknown_placeholder(&prompt) {
        let line = text.find(&unknown).map_or(0, |at| line_of(text, at));
        return Err(format!(
            "its prompt uses the unknown placeholder `{unknown}` (line {line}); only `{ARGS}` \
             is known"
        ));
    }
    Ok(Command {
        name: String::new(),
        origin: String::new(),
        description: file.description.unwrap_or_default().trim().to_owned(),
        argument_hint: None,
        path: None,
        scope: Scope::User,
        dialect: Dialect::Toml,
        body: prompt,
        allowed_tools: Vec::new(),
        model: None,
        skill: None,
    })
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// The first `{{...}}` that is not `{{args}}`.
fn unknown_placeholder(prompt: &str) -> Option<String> {
    let mut rest = prompt;
    while let Some(start) = rest.find("{{") {
        let end = rest[start..].find("}}")? + start + 2;
        let found = &rest[start..end];
        if found != ARGS {
            return Some(found.to_owned());
        }
        rest = &rest[end..];
    }
    None
}

/// The prompt expanded for `args` typed after `/name`.
pub(super) fn expand(prompt: &str, args: &str, name: &str) -> Result<Expansion, String> {
    let mut pieces = Vec::new();
    let mut rest = prompt;
    while let Some((at, kind)) = next_injection(rest) {
        pieces.push(Piece::Text(rest[..at].replace(ARGS, args)));
        let open = at + 2;
        let close = closing_brace(&rest[open..]).ok_or_else(|| {
            format!(
                "its prompt opens `{kind}{{` without a matching `}}`; braces inside must be balanced"
            )
        })? + open;
        let inner = &rest[open..close];
        match kind {
            '!' => pieces.push(Piece::Shell(
                inner
                    .replace(ARGS, &shell_words::quote(args))
                    .trim()
                    .to_owned(),
            )),
            _ => pieces.push(Piece::File {
                path: inner.trim().to_owned(),
                inline: true,
            }),
        }
        rest = &rest[close + 1..];
    }
    pieces.push(Piece::Text(rest.replace(ARGS, args)));
    if !prompt.contains(ARGS) && !args.is_empty() {
        pieces.push(Piece::Text(format!("\n\n/{name} {args}")));
    }
    Ok(Expansion {
        pieces: merge_text(pieces),
        ..Expansion::default()
    })
}

/// The next `!{` or `@{`.
fn next_injection(text: &str) -> Option<(usize, char)> {
    let shell = text.find("!{").map(|i| (i, '!'));
    let file = text.find("@{").map(|i| (i, '@'));
    match (shell, file) {
        (Some(s), Some(f)) => Some(if s.0 < f.0 { s } else { f }),
        (s, f) => s.or(f),
    }
}

/// The index of the `}` closing an opened brace, counting nested pairs.
fn closing_brace(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}
