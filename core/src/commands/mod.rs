//! Custom commands and skills: the files users already keep for other agents (Claude Code's
//! `.claude/commands/*.md` and `SKILL.md` skills, Gemini CLI's and Qwen Code's TOML commands,
//! Codex's prompts, the cross-tool `.agents/skills/`), read where those tools read them and
//! expanded by each tool's own rules, so a pasted file behaves as its author tested it.
//!
//! This module only turns files and typed arguments into an [`Expansion`] (text, shell
//! injections, file references) and a command list; the agent runs the injections through
//! the shell tool's approval, and front ends only list commands and submit `/name args`.

mod discover;
mod gemini;
mod markdown;
pub mod skill_tool;
pub mod skills;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use discover::{Roots, project_command_files};
pub use skills::{Skill, SkillSet};

use crate::settings::ProjectTrust;

/// How a command file's arguments and injections are read: each source keeps its own rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `.claude/commands/*.md` and skills: `$ARGUMENTS`, 0-based `$N` (Claude Code's rule).
    Claude,
    /// `.corvid/commands/*.md`: as Claude's, but `$1` is the first argument.
    Corvid,
    /// `.qwen/commands/*.md`: as corvid's, 1-based.
    Qwen,
    /// `~/.codex/prompts/*.md`: `$1`..`$9`, `$ARGUMENTS`, `$NAME` from `NAME=value`, `$$`.
    Codex,
    /// `.gemini/commands/*.toml` and `.qwen/commands/*.toml`: `{{args}}`, `!{cmd}`, `@{path}`.
    Toml,
    /// corvid's own built-in commands (`/init`).
    Builtin,
}

/// Where a command comes from, lowest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    Builtin,
    User,
    Project,
}

/// One command a user can type as `/name`.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// What follows the slash: `review`, `git:commit` (a subfolder namespaces with `:`).
    pub name: String,
    /// Which source it comes from (`project-claude`, `user-gemini`, `codex`, `skill`...):
    /// `/origin:name` reaches it even when another command of the same name wins.
    pub origin: String,
    pub description: String,
    /// `argument-hint`: what to type after the name.
    pub argument_hint: Option<String>,
    /// The file it was read from (`None` for a built-in).
    pub path: Option<PathBuf>,
    pub scope: Scope,
    pub dialect: Dialect,
    /// The template: a markdown body or a TOML `prompt`.
    pub(crate) body: String,
    /// `allowed-tools`: rules granted for this prompt only.
    pub allowed_tools: Vec<String>,
    /// `model`: the model this prompt runs on.
    pub model: Option<String>,
    /// Set for a skill invoked as a command: its name, remembered as loaded.
    pub skill: Option<String>,
}

impl Command {
    /// `/origin:name`, the spelling that reaches this very command.
    pub fn qualified(&self) -> String {
        format!("{}:{}", self.origin, self.name)
    }

    /// The prompt for `args` (what the user typed after the name), by this command's rules.
    /// Nothing runs: shell injections and file references stay pieces of the expansion.
    pub fn expand(&self, args: &str) -> Result<Expansion, String> {
        let args = args.trim();
        let mut expansion = match self.dialect {
            Dialect::Toml => gemini::expand(&self.body, args, &self.name)?,
            dialect => markdown::expand(dialect, &self.body, args)?,
        };
        expansion.allowed_tools = self.allowed_tools.clone();
        expansion.model = self.model.clone();
        if let (Some(skill), Some(path)) = (&self.skill, &self.path) {
            let dir = path.parent().unwrap_or(path);
            expansion.pieces.insert(
                0,
                Piece::Text(format!(
                    "Base directory for the skill `{skill}`: {}\n\n",
                    dir.display()
                )),
            );
        }
        Ok(expansion)
    }
}

/// A command's prompt before anything ran.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Expansion {
    pub pieces: Vec<Piece>,
    /// Rules (`tools.allow` syntax, Claude's `Bash(git diff:*)` too) granted for this prompt.
    pub allowed_tools: Vec<String>,
    pub model: Option<String>,
}

/// One piece of an expanded prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Text(String),
    /// A shell command whose output takes its place (`` !`cmd` ``, ```` ```! ````, `!{cmd}`).
    Shell(String),
    /// A file: its text in place (`@{path}`, `inline`), or attached as context while the
    /// prompt keeps `@path` (markdown).
    File {
        path: String,
        inline: bool,
    },
}

impl Expansion {
    /// The prompt as `corvid commands show` prints it: injections and files named, not run.
    pub fn preview(&self) -> String {
        let mut out = String::new();
        let mut attached = Vec::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Shell(command) => out.push_str(&format!("[output of `{command}`]")),
                Piece::File { path, inline: true } => out.push_str(&format!("[content of {path}]")),
                Piece::File {
                    path,
                    inline: false,
                } => attached.push(path.as_str()),
            }
        }
        for path in attached {
            out.push_str(&format!("\n[attached: {path}]"));
        }
        out
    }
}

/// Every command of a session, after precedence.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    /// The winners, one per name, sorted by name.
    pub commands: Vec<Command>,
    /// Commands another one of the same name overrides (reachable as `/origin:name`).
    pub shadowed: Vec<Command>,
    /// One message per file left out or clash, naming the file.
    pub warnings: Vec<String>,
}

impl Catalog {
    /// Builds the catalog from `found` in precedence order, lowest first: a later command
    /// of the same name wins and the clash is reported.
    pub(crate) fn from_ordered(found: Vec<Command>, mut warnings: Vec<String>) -> Self {
        let mut commands: Vec<Command> = Vec::new();
        let mut shadowed = Vec::new();
        for command in found {
            match commands.iter_mut().find(|c| c.name == command.name) {
                Some(existing) => {
                    if existing.scope != Scope::Builtin {
                        warnings.push(format!(
                            "/{} from {} overrides the one from {}; that one stays \
                             reachable as /{}",
                            command.name,
                            shown(&command),
                            shown(existing),
                            existing.qualified()
                        ));
                    }
                    shadowed.push(std::mem::replace(existing, command));
                }
                None => commands.push(command),
            }
        }
        commands.sort_by(|a, b| a.name.cmp(&b.name));
        Self {
            commands,
            shadowed,
            warnings,
        }
    }

    /// The command `name` names: a winner by name, else any by `origin:name`.
    pub fn find(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|c| c.name == name).or_else(|| {
            self.commands
                .iter()
                .chain(&self.shadowed)
                .find(|c| c.qualified() == name)
        })
    }
}

fn shown(command: &Command) -> String {
    match &command.path {
        Some(path) => path.display().to_string(),
        None => "corvid".to_owned(),
    }
}

/// `/name args` from a prompt: `None` unless the prompt starts with a slash and a name made
/// of letters, digits, `-`, `_`, `.` and `:` (a path such as `/usr/bin` is no command).
pub fn invocation(prompt: &str) -> Option<(&str, &str)> {
    let line = prompt.trim_start();
    let rest = line.strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || "-_.:".contains(c));
    valid.then(|| (name, rest[end..].trim()))
}

/// Arguments already split (a command line's) as one typed string: each quoted as a shell
/// would need, so a command that splits them again gets the same words.
pub fn join_args(args: &[String]) -> String {
    shell_words::join(args)
}

/// The commands and skills of one session: where to look, the project's trust, and the
/// skills the model loaded (re-attached after a compaction). Files are read again on each
/// use, so a command added while corvid runs works at once.
#[derive(Debug)]
pub struct Library {
    roots: Roots,
    trust: ProjectTrust,
    loaded: Mutex<Vec<String>>,
}

impl Library {
    /// The library of a session whose folders are `roots`, the project's ones applying as
    /// `trust` decides.
    pub fn new(roots: Roots, trust: ProjectTrust) -> Arc<Self> {
        Arc::new(Self {
            roots,
            trust,
            loaded: Mutex::new(Vec::new()),
        })
    }

    /// The library of a session in `cwd` with `settings` (their project folder and trust).
    pub fn for_settings(
        settings: &crate::settings::Settings,
        env: impl Fn(&str) -> Option<String>,
        cwd: &Path,
    ) -> Arc<Self> {
        let roots = Roots::discover(cwd, settings.project.folder.as_deref(), env);
        Self::new(roots, settings.project.clone())
    }

    /// Every command: built-ins, then the user's files, then the project's, then the
    /// user-invocable skills.
    pub fn commands(&self) -> Catalog {
        let mut warnings = Vec::new();
        let mut found = vec![builtin_init()];
        found.extend(discover::commands(&self.roots, &self.trust, &mut warnings));
        let skills = self.skills();
        warnings.extend(skills.warnings.iter().cloned());
        found.extend(skills.commands());
        Catalog::from_ordered(found, warnings)
    }

    /// Every skill.
    pub fn skills(&self) -> SkillSet {
        skills::discover(&self.roots, &self.trust)
    }

    /// A fingerprint of every command and skill file (path, size, modification time), for a
    /// front end that re-lists commands when it changes.
    pub fn fingerprint(&self) -> u64 {
        discover::fingerprint(&self.roots)
    }

    /// Remembers that the skill `name` was loaded (the latest last, no repeats).
    pub fn mark_loaded(&self, name: &str) {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        loaded.retain(|n| n != name);
        loaded.push(name.to_owned());
    }

    /// The skills loaded so far, latest last.
    pub fn loaded(&self) -> Vec<String> {
        self.loaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The latest loaded skills (at most three), as they are re-attached to the summary of
    /// a compacted conversation; `None` when none was loaded.
    pub fn reattached(&self) -> Option<String> {
        let loaded = self.loaded();
        let skills = self.skills();
        let texts: Vec<String> = loaded
            .iter()
            .rev()
            .take(3)
            .rev()
            .filter_map(|name| skills.skills.iter().find(|s| &s.name == name))
            .map(|skill| skill_tool::render(skill, &skill.other_files()))
            .collect();
        (!texts.is_empty()).then(|| {
            format!(
                "Skills loaded earlier in this conversation (their instructions still apply):\n{}",
                texts.join("\n\n")
            )
        })
    }

    /// The working folder relative paths resolve in.
    pub fn cwd(&self) -> &Path {
        &self.roots.cwd
    }
}

/// The prompt of `/init`.
const INIT_PROMPT: &str = "Study this repository and write AGENTS.md at its root (or improve \
the one that is there): a short guide for coding agents working here.\n\n\
First look around: the layout (top-level folders and what each holds), the build, test, lint \
and format commands (from the build files, CI configuration, scripts and README), the \
language versions and tools, and the conventions the code follows (naming, error handling, \
tests, commit style). Read existing AGENTS.md, CLAUDE.md, GEMINI.md, .cursorrules and \
CONTRIBUTING files and keep what is still true.\n\n\
Then write AGENTS.md in Markdown, about 20 to 60 lines: what the project is in one or two \
sentences, the exact commands to build, test (a single test too) and lint, the layout, the \
conventions that are not obvious, and anything an agent must never do. Be specific to this \
repository; leave out generic advice. If AGENTS.md exists, edit it rather than replacing good \
content.";

fn builtin_init() -> Command {
    Command {
        name: "init".to_owned(),
        origin: "corvid".to_owned(),
        description: "Study the repository and write or improve AGENTS.md".to_owned(),
        argument_hint: None,
        path: None,
        scope: Scope::Builtin,
        dialect: Dialect::Builtin,
        body: INIT_PROMPT.to_owned(),
        allowed_tools: Vec::new(),
        model: None,
        skill: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn an_invocation_is_a_slash_and_a_name_with_the_rest_as_arguments() {
        assert_eq!(
            invocation("/review src/lib.rs"),
            Some(("review", "src/lib.rs"))
        );
        assert_eq!(invocation("  /git:commit  "), Some(("git:commit", "")));
        assert_eq!(invocation("/usr/bin/env is odd"), None);
        assert_eq!(invocation("hello /review"), None);
        assert_eq!(invocation("/"), None);
    }
}
