//! Markdown commands (Claude Code, corvid, Qwen Code, Codex prompts) and skill bodies: front
//! matter, then a body where `$ARGUMENTS` and positional `$N` take the typed arguments (split
//! with shell-style quoting), `` !`cmd` `` and ```` ```! ```` blocks run commands, and `@path`
//! attaches a file.
//!
//! `$N` counts from 0 in Claude Code's files (`$0` is the first argument) and from 1 in
//! corvid's, Qwen Code's and Codex's: each file is expanded as the tool it was written for
//! would, so `corvid commands show` is how a user sees the difference.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::{Command, Dialect, Expansion, Piece, Scope};

/// The front matter fields corvid reads (others are ignored, as their tools do).
///
/// Read line by line as `key: value` rather than as YAML: Claude Code's own documentation
/// writes `argument-hint: [file] [focus]`, which YAML rejects (or turns into a list), and a
/// pasted file must keep working.
#[derive(Default)]
pub(super) struct FrontMatter {
    pub name: Option<String>,
    pub description: Option<String>,
    pub argument_hint: Option<String>,
    pub allowed_tools: Vec<String>,
    pub model: Option<String>,
    pub disable_model_invocation: bool,
    pub user_invocable: bool,
}

/// Splits `Bash(git add:*), Read` on commas (and spaces after a `)`) outside parentheses.
fn tool_list(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        let splits = depth == 0 && (c == ',' || (c == ' ' && current.ends_with(')')));
        if splits {
            items.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    items.push(current);
    items
        .into_iter()
        .map(|i| unquote(i.trim()).to_owned())
        .filter(|i| !i.is_empty())
        .collect()
}

fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner;
        }
    }
    value
}

/// The front matter's lines (the file's line 2 onwards) as fields.
fn front_matter(lines: &str) -> Result<FrontMatter, String> {
    let mut fields: Vec<(String, String, Vec<String>)> = Vec::new();
    for (i, line) in lines.lines().enumerate() {
        let number = i + 2;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let continues = line.starts_with([' ', '\t']) || trimmed.starts_with("- ");
        if continues {
            let Some((_, value, list)) = fields.last_mut() else {
                return Err(format!("its front matter line {number} continues no field"));
            };
            match trimmed.strip_prefix("- ") {
                Some(item) => list.push(unquote(item.trim()).to_owned()),
                None => {
                    if !value.is_empty() {
                        value.push(' ');
                    }
                    value.push_str(trimmed);
                }
            }
            continue;
        }
        let (key, value) = line.split_once(':').ok_or_else(|| {
            format!("its front matter is invalid at line {number}: `{trimmed}` is not `key: value`")
        })?;
        let value = value.trim();
        let value = if matches!(value, ">" | "|" | ">-" | "|-") {
            ""
        } else {
            unquote(value)
        };
        fields.push((key.trim().to_owned(), value.to_owned(), Vec::new()));
    }
    let mut front = FrontMatter {
        user_invocable: true,
        ..FrontMatter::default()
    };
    for (key, value, list) in fields {
        let text = || Some(value.clone()).filter(|v| !v.is_empty());
        let flag = |default: bool| match value.as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            "" => Ok(default),
            other => Err(format!(
                "its front matter field `{key}` must be true or false, not `{other}`"
            )),
        };
        match key.as_str() {
            "name" => front.name = text(),
            "description" => front.description = text(),
            "argument-hint" => {
                front.argument_hint = text().or_else(|| (!list.is_empty()).then(|| list.join(" ")))
            }
            "allowed-tools" => {
                front.allowed_tools = if list.is_empty() {
                    tool_list(value.trim_start_matches('[').trim_end_matches(']'))
                } else {
                    list
                };
            }
            "model" => front.model = text(),
            "disable-model-invocation" => front.disable_model_invocation = flag(false)?,
            "user-invocable" => front.user_invocable = flag(true)?,
            _ => {}
        }
    }
    Ok(front)
}

/// The front matter (if any) and the body of a markdown file; the error names the line.
pub(super) fn split(text: &str) -> Result<(FrontMatter, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((
            FrontMatter {
                user_invocable: true,
                ..FrontMatter::default()
            },
            text,
        ));
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let front = front_matter(&rest[..offset])?;
            return Ok((front, &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err("its front matter (opened by `---` on line 1) has no closing `---` line".to_owned())
}

/// A command from a markdown file; name, origin, path and scope are the caller's.
pub(super) fn parse(text: &str, dialect: Dialect) -> Result<Command, String> {
    let (front, body) = split(text)?;
    let description = front
        .description
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| first_line(body));
    Ok(Command {
        name: String::new(),
        origin: String::new(),
        description: description.trim().to_owned(),
        argument_hint: front.argument_hint,
        path: None,
        scope: Scope::User,
        dialect,
        body: body.to_owned(),
        allowed_tools: front.allowed_tools,
        model: front.model.filter(|m| !m.trim().is_empty()),
        skill: None,
    })
}

/// The first non-empty line of `body`, shortened: a description for a file without one.
fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    match line.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// `$$`, `$ARGUMENTS[N]`, `$ARGUMENTS`, `$N`, `$NAME`.
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    // A constant pattern: compiling it cannot fail (the tests compile it).
    Regex::new(r"\$\$|\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS|\$(\d)|\$([A-Z][A-Z0-9_]*)")
        .unwrap_or_else(|_| unreachable!())
});

/// `@path` at the start of the text or after white space.
static FILE_REF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|\s)@([^\s@`]+)").unwrap_or_else(|_| unreachable!()));

/// The body expanded for `args` by `dialect`'s rules.
pub(super) fn expand(dialect: Dialect, body: &str, args: &str) -> Result<Expansion, String> {
    let positional = shell_words::split(args).map_err(|e| {
        format!("the arguments `{args}` cannot be split like a shell would: {e} (close the quote)")
    })?;
    let named = named_args(dialect, body, &positional)?;
    let mut used = false;
    let mut substitute = |text: &str| -> String {
        PLACEHOLDER
            .replace_all(text, |caps: &Captures| {
                let whole = &caps[0];
                let positional_at = |i: usize| positional.get(i).cloned().unwrap_or_default();
                if whole == "$$" {
                    return if dialect == Dialect::Codex {
                        "$".to_owned()
                    } else {
                        whole.to_owned()
                    };
                }
                if let Some(n) = caps.get(1) {
                    used = true;
                    return positional_at(n.as_str().parse().unwrap_or(usize::MAX));
                }
                if whole == "$ARGUMENTS" {
                    used = true;
                    return args.to_owned();
                }
                if let Some(n) = caps.get(2) {
                    let n: usize = n.as_str().parse().unwrap_or(0);
                    used = true;
                    return match dialect {
                        Dialect::Claude => positional_at(n),
                        _ if n == 0 => whole.to_owned(),
                        _ => positional_at(n - 1),
                    };
                }
                match named
                    .iter()
                    .find(|(k, _)| caps.get(3).is_some_and(|m| m.as_str() == k))
                {
                    Some((_, value)) => {
                        used = true;
                        value.clone()
                    }
                    None => whole.to_owned(),
                }
            })
            .into_owned()
    };
    let mut pieces = Vec::new();
    let mut files = Vec::new();
    for segment in segments(body) {
        match segment {
            Segment::Text(text) => {
                let text = substitute(text);
                for caps in FILE_REF.captures_iter(&text) {
                    let path = caps[1]
                        .trim_end_matches(['.', ',', ';', ':', ')', ']', '}', '"', '\'', '!', '?']);
                    if !path.is_empty() {
                        files.push(Piece::File {
                            path: path.to_owned(),
                            inline: false,
                        });
                    }
                }
                pieces.push(Piece::Text(text));
            }
            Segment::Shell(command) => pieces.push(Piece::Shell(substitute(command))),
        }
    }
    let appends = matches!(
        dialect,
        Dialect::Claude | Dialect::Corvid | Dialect::Qwen | Dialect::Builtin
    );
    if !used && appends && !args.is_empty() {
        pieces.push(Piece::Text(format!("\n\nARGUMENTS: {args}")));
    }
    pieces.extend(files);
    Ok(Expansion {
        pieces: merge_text(pieces),
        ..Expansion::default()
    })
}

/// Codex's named placeholders (`$FILE`) take `FILE=value` arguments; each one the body uses
/// must be given.
fn named_args(
    dialect: Dialect,
    body: &str,
    positional: &[String],
) -> Result<Vec<(String, String)>, String> {
    if dialect != Dialect::Codex {
        return Ok(Vec::new());
    }
    let mut wanted: Vec<&str> = PLACEHOLDER
        .captures_iter(body)
        .filter_map(|c| c.get(3).map(|m| m.as_str()))
        .filter(|n| *n != "ARGUMENTS")
        .collect();
    wanted.dedup();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let given: Vec<(String, String)> = positional
        .iter()
        .filter_map(|a| a.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect();
    let missing: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|w| !given.iter().any(|(k, _)| k == w))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "this prompt needs {} (type them as NAME=value)",
            missing
                .iter()
                .map(|m| format!("{m}=..."))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    Ok(given)
}

enum Segment<'a> {
    Text(&'a str),
    Shell(&'a str),
}

/// The body cut into text and shell commands: ```` ```! ```` fenced blocks (to the closing
/// ```` ``` ````) and `` !`cmd` `` at the start or after white space.
fn segments(body: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut text_start = 0;
    let mut i = 0;
    let bytes = body.as_bytes();
    while i < body.len() {
        let line_start = i == 0 || bytes[i - 1] == b'\n';
        if line_start && body[i..].starts_with("```!") {
            let open_end = body[i..].find('\n').map_or(body.len(), |n| i + n + 1);
            if let Some(close) = find_fence_close(body, open_end) {
                out.push(Segment::Text(&body[text_start..i]));
                out.push(Segment::Shell(body[open_end..close].trim_end_matches('\n')));
                let after = body[close..]
                    .find('\n')
                    .map_or(body.len(), |n| close + n + 1);
                i = after;
                text_start = after;
                continue;
            }
        }
        let after_space = i == 0 || bytes[i - 1].is_ascii_whitespace();
        if after_space
            && body[i..].starts_with("!`")
            && let Some(len) = body[i + 2..].find('`')
        {
            out.push(Segment::Text(&body[text_start..i]));
            out.push(Segment::Shell(&body[i + 2..i + 2 + len]));
            i += 2 + len + 1;
            text_start = i;
            continue;
        }
        i += body[i..].chars().next().map_or(1, char::len_utf8);
    }
    out.push(Segment::Text(&body[text_start..]));
    out
}

/// Where the line closing a fence opened before `from` starts.
fn find_fence_close(body: &str, from: usize) -> Option<usize> {
    let mut at = from;
    for line in body[from..].split_inclusive('\n') {
        if line.trim_end() == "```" {
            return Some(at);
        }
        at += line.len();
    }
    None
}

/// Adjacent text pieces joined; empty ones dropped.
pub(super) fn merge_text(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for piece in pieces {
        match (out.last_mut(), piece) {
            (_, Piece::Text(t)) if t.is_empty() => {}
            (Some(Piece::Text(prev)), Piece::Text(t)) => prev.push_str(&t),
            (_, piece) => out.push(piece),
        }
    }
    out
}
