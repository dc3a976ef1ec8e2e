//! Skills: folders holding a `SKILL.md` (front matter `name` and `description`, then
//! instructions) and whatever files those instructions use. Progressive disclosure: only
//! each skill's name and description go into the system prompt; the model loads one with
//! the `skill` tool when a task matches it. A user-invocable skill is also `/name`.
//!
//! Read from `.agents/skills/`, `.corvid/skills/` and `.claude/skills/` in the project's
//! folders (the repository root down to the project folder) and their `~` forms
//! (`$CORVID_HOME/skills` for corvid's); a project's skills need the folder's trust, like
//! its commands.

use std::path::{Path, PathBuf};

use super::discover::{Roots, read_capped};
use super::markdown::split;
use super::{Command, Dialect, Scope};
use crate::settings::{ProjectTrust, Verdict};

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// One skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill's `SKILL.md`.
    pub path: PathBuf,
    /// The instructions after the front matter.
    pub body: String,
    /// `disable-model-invocation: true`: only the user may run it (as `/name`).
    pub model_invocable: bool,
    /// `user-invocable: false`: only the model may load it.
    pub user_invocable: bool,
    pub allowed_tools: Vec<String>,
    pub argument_hint: Option<String>,
    pub scope: Scope,
}

impl Skill {
    /// The skill's folder.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(&self.path)
    }

    /// The skill's other files (not `SKILL.md`), sorted, at most 200.
    pub fn other_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        super::discover::walk(self.dir(), 4, &mut files, &mut Vec::new());
        files.retain(|f| f != &self.path);
        files.sort();
        files.truncate(200);
        files
    }
}

/// Every skill of a session, later folders overriding earlier ones of the same name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillSet {
    pub skills: Vec<Skill>,
    /// Skill folders left out, naming the folder and why.
    pub warnings: Vec<String>,
}

/// The skill folders of `roots`, lowest precedence first, with their scope.
fn skill_dirs(roots: &Roots) -> Vec<(PathBuf, Scope)> {
    let mut out = Vec::new();
    if let Some(home) = &roots.user_home {
        out.push((home.join(".agents/skills"), Scope::User));
    }
    if let Some(corvid) = &roots.corvid_home {
        out.push((corvid.join("skills"), Scope::User));
    }
    if let Some(home) = &roots.user_home {
        out.push((home.join(".claude/skills"), Scope::User));
    }
    let users: Vec<PathBuf> = out
        .iter()
        .filter_map(|(d, _)| d.canonicalize().ok())
        .collect();
    for dir in &roots.project_dirs {
        for sub in [".agents/skills", ".corvid/skills", ".claude/skills"] {
            let skills = dir.join(sub);
            if !skills.canonicalize().is_ok_and(|d| users.contains(&d)) {
                out.push((skills, Scope::Project));
            }
        }
    }
    out
}

/// Every `SKILL.md` of `roots` with its scope and, for a project's, the project folder it
/// must stay inside.
fn skill_paths(roots: &Roots) -> Vec<(PathBuf, Scope, Option<PathBuf>)> {
    let mut out = Vec::new();
    for (dir, scope) in skill_dirs(roots) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        folders.sort();
        let boundary = match scope {
            Scope::Project => dir
                .parent()
                .and_then(Path::parent)
                .and_then(|p| p.canonicalize().ok()),
            Scope::User | Scope::Builtin => None,
        };
        for folder in folders.into_iter().filter(|f| f.is_dir()).take(500) {
            out.push((folder.join(SKILL_FILE), scope, boundary.clone()));
        }
    }
    out
}

/// The project's `SKILL.md` files and the folder each must stay inside.
pub(super) fn project_skill_files(roots: &Roots) -> Vec<(PathBuf, PathBuf)> {
    skill_paths(roots)
        .into_iter()
        .filter_map(|(path, scope, boundary)| {
            (scope == Scope::Project && path.is_file()).then_some((path, boundary?))
        })
        .collect()
}

/// Every `SKILL.md` path (for change detection).
pub(super) fn skill_files(roots: &Roots) -> Vec<PathBuf> {
    skill_paths(roots).into_iter().map(|(p, _, _)| p).collect()
}

/// The skills of `roots`; a project's only as `trust` accepts them.
pub(super) fn discover(roots: &Roots, trust: &ProjectTrust) -> SkillSet {
    let mut set = SkillSet::default();
    let mut untrusted = Vec::new();
    for (path, scope, boundary) in skill_paths(roots) {
        let content = match read_capped(&path, boundary.as_deref()) {
            Ok(content) => content,
            Err(_) if !path.exists() => {
                set.warnings.push(format!(
                    "skill folder {} was skipped: it has no {SKILL_FILE}",
                    path.parent().unwrap_or(&path).display()
                ));
                continue;
            }
            Err(why) => {
                set.warnings
                    .push(format!("skill {} was skipped: {why}", path.display()));
                continue;
            }
        };
        if scope == Scope::Project {
            match trust.verdict(&path, &content) {
                Verdict::Apply => {}
                Verdict::NotTrusted => {
                    untrusted.push(path);
                    continue;
                }
                verdict => {
                    set.warnings.extend(ProjectTrust::ignored_warning(
                        &path,
                        "project skill",
                        verdict,
                    ));
                    continue;
                }
            }
        }
        match parse(&path, &content, scope) {
            Ok(skill) => match set.skills.iter_mut().find(|s| s.name == skill.name) {
                Some(existing) => *existing = skill,
                None => set.skills.push(skill),
            },
            Err(why) => set
                .warnings
                .push(format!("skill {} was skipped: {why}", path.display())),
        }
    }
    if let Some(first) = untrusted.first() {
        set.warnings.extend(ProjectTrust::ignored_warning(
            first,
            &format!(
                "this and the project's other skills ({} skills)",
                untrusted.len()
            ),
            Verdict::NotTrusted,
        ));
    }
    set.skills.sort_by(|a, b| a.name.cmp(&b.name));
    set
}

fn parse(path: &Path, content: &[u8], scope: Scope) -> Result<Skill, String> {
    let text = std::str::from_utf8(content).map_err(|_| "it is not UTF-8 text".to_owned())?;
    let (front, body) = split(text)?;
    let name = front
        .name
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .ok_or("its front matter has no `name`")?;
    if !name
        .chars()
        .all(|c| c.is_alphanumeric() || "-_.:".contains(c))
    {
        return Err(format!(
            "its name `{name}` must be letters, digits, `-`, `_` or `.`"
        ));
    }
    let description = front
        .description
        .map(|d| d.trim().to_owned())
        .filter(|d| !d.is_empty())
        .ok_or("its front matter has no `description` (the model needs it to choose the skill)")?;
    Ok(Skill {
        name,
        description,
        path: path.to_owned(),
        body: body.to_owned(),
        model_invocable: !front.disable_model_invocation,
        user_invocable: front.user_invocable,
        allowed_tools: front.allowed_tools,
        argument_hint: front.argument_hint,
        scope,
    })
}

impl SkillSet {
    /// The skill the model may load by `name`.
    pub fn for_model(&self, name: &str) -> Option<&Skill> {
        self.skills
            .iter()
            .find(|s| s.name == name && s.model_invocable)
    }

    /// The user-invocable skills as commands (`/name`, origin `skill`).
    pub fn commands(&self) -> Vec<Command> {
        self.skills
            .iter()
            .filter(|s| s.user_invocable)
            .map(|s| Command {
                name: s.name.clone(),
                origin: "skill".to_owned(),
                description: s.description.clone(),
                argument_hint: s.argument_hint.clone(),
                path: Some(s.path.clone()),
                scope: s.scope,
                dialect: Dialect::Claude,
                body: s.body.clone(),
                allowed_tools: s.allowed_tools.clone(),
                model: None,
                skill: Some(s.name.clone()),
            })
            .collect()
    }

    /// The system prompt's section listing the skills the model may load, within
    /// `budget_chars`: descriptions are shortened first, then skills left out; the warning
    /// names what was cut. `None` when there is nothing to list.
    pub fn listing(&self, budget_chars: usize) -> Option<(String, Option<String>)> {
        let listed: Vec<&Skill> = self.skills.iter().filter(|s| s.model_invocable).collect();
        if listed.is_empty() {
            return None;
        }
        let head = "# Skills\nSkills are folders of instructions (and files they use) for \
                    particular tasks. When a task matches a skill's description, call the \
                    `skill` tool with its name first and follow what it returns.\n";
        let render = |limit: usize, count: usize| -> String {
            let mut out = head.to_owned();
            for skill in &listed[..count] {
                out.push_str(&format!(
                    "- {}: {}\n",
                    skill.name,
                    shorten(&skill.description, limit)
                ));
            }
            out
        };
        let mut warning = None;
        let mut text = render(usize::MAX, listed.len());
        for limit in [200, 100, 50] {
            if text.len() <= budget_chars {
                break;
            }
            text = render(limit, listed.len());
            warning = Some(format!(
                "the skills' descriptions were shortened to {limit} characters to fit the \
                 system prompt's budget for skills ({budget_chars} characters)"
            ));
        }
        let mut count = listed.len();
        while text.len() > budget_chars && count > 0 {
            count -= 1;
            text = render(50, count);
        }
        if count < listed.len() {
            let cut: Vec<&str> = listed[count..].iter().map(|s| s.name.as_str()).collect();
            warning = Some(format!(
                "skills left out of the system prompt (over its budget of {budget_chars} \
                 characters for skills): {}; they can still be run as /name",
                cut.join(", ")
            ));
        }
        Some((text, warning))
    }
}

fn shorten(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}
