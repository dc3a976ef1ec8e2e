//! Where command files are, and reading them: the user's folders, then the project's (from
//! the repository root down to the project folder), each source in its own folder.
//!
//! A project's files are project configuration: they apply only in a trusted folder with
//! content the user accepted (the same pinning as project settings and agent files), and are
//! never read through a link leading out of the project folder.

use std::hash::{Hash, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{Command, Dialect, Scope, gemini, markdown};
use crate::settings::{ProjectTrust, Verdict};

/// Larger command files are left out: a prompt that long is a mistake, not a command.
pub(super) const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Folders below a commands folder that are looked into.
const MAX_DEPTH: usize = 6;
/// Files one commands folder may offer.
const MAX_FILES: usize = 1000;

/// The folders a session's commands and skills come from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Roots {
    /// The working folder: `@path` and relative paths resolve here.
    pub cwd: PathBuf,
    /// `~`: `~/.claude/commands`, `~/.gemini/commands`, `~/.qwen/commands`, skills.
    pub user_home: Option<PathBuf>,
    /// `$CORVID_HOME`: its `commands/` and `skills/`.
    pub corvid_home: Option<PathBuf>,
    /// `$CODEX_HOME` (default `~/.codex`): its `prompts/`.
    pub codex_home: Option<PathBuf>,
    /// The project's folders, the repository root first, the project folder last.
    pub project_dirs: Vec<PathBuf>,
}

impl Roots {
    /// The roots of a session in `cwd` whose project folder is `project` (the folder whose
    /// `.corvid/` configures it): the project's folders climb from it to the repository
    /// root, never into `$HOME` or a folder someone else could write.
    pub fn discover(
        cwd: &Path,
        project: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let user_home = crate::settings::user_home(&env);
        let codex_home = env("CODEX_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| user_home.as_ref().map(|h| h.join(".codex")));
        Self {
            cwd: cwd.to_owned(),
            corvid_home: crate::settings::corvid_home(&env),
            codex_home,
            project_dirs: project_dirs(project.unwrap_or(cwd), user_home.as_deref()),
            user_home,
        }
    }
}

/// The project's folders for project folder `project`, the repository root first.
pub(super) fn project_dirs(project: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = crate::settings::project_search_dirs(project, home)
        .into_iter()
        .map(Path::to_owned)
        .collect();
    dirs.reverse();
    dirs
}

/// One folder of command files and how they are read.
struct Source {
    dir: PathBuf,
    origin: String,
    scope: Scope,
    /// Extensions and the dialect of each.
    kinds: &'static [(&'static str, Dialect)],
    recursive: bool,
}

const TOML: &[(&str, Dialect)] = &[("toml", Dialect::Toml)];
const QWEN: &[(&str, Dialect)] = &[("toml", Dialect::Toml), ("md", Dialect::Qwen)];
const CLAUDE: &[(&str, Dialect)] = &[("md", Dialect::Claude)];
const CORVID: &[(&str, Dialect)] = &[("md", Dialect::Corvid)];
const CODEX: &[(&str, Dialect)] = &[("md", Dialect::Codex)];

/// The command folders of `base` (a project folder or `~`), lowest precedence first.
fn folder_sources(base: &Path, corvid: Option<&Path>, scope: Scope, who: &str) -> Vec<Source> {
    let source = |dir: PathBuf, tool: &str, kinds| Source {
        dir,
        origin: format!("{who}-{tool}"),
        scope,
        kinds,
        recursive: true,
    };
    let mut out = vec![
        source(base.join(".gemini/commands"), "gemini", TOML),
        source(base.join(".qwen/commands"), "qwen", QWEN),
        source(base.join(".claude/commands"), "claude", CLAUDE),
    ];
    if let Some(corvid) = corvid {
        out.push(source(corvid.join("commands"), "corvid", CORVID));
    }
    out
}

/// Every command folder of `roots`, lowest precedence first.
fn sources(roots: &Roots) -> Vec<Source> {
    let mut out = Vec::new();
    if let Some(codex) = &roots.codex_home {
        out.push(Source {
            dir: codex.join("prompts"),
            origin: "codex".to_owned(),
            scope: Scope::User,
            kinds: CODEX,
            recursive: false,
        });
    }
    if let Some(home) = &roots.user_home {
        let corvid = roots.corvid_home.clone();
        out.extend(folder_sources(home, corvid.as_deref(), Scope::User, "user"));
    } else if let Some(corvid) = &roots.corvid_home {
        out.push(Source {
            dir: corvid.join("commands"),
            origin: "user-corvid".to_owned(),
            scope: Scope::User,
            kinds: CORVID,
            recursive: true,
        });
    }
    let users: Vec<PathBuf> = out
        .iter()
        .filter_map(|s| s.dir.canonicalize().ok())
        .collect();
    for dir in &roots.project_dirs {
        let corvid = dir.join(".corvid");
        for source in folder_sources(dir, Some(&corvid), Scope::Project, "project") {
            // Working in the home folder: its folders are the user's, read once as such.
            if !source.dir.canonicalize().is_ok_and(|d| users.contains(&d)) {
                out.push(source);
            }
        }
    }
    out
}

/// The commands of every file in `roots`, lowest precedence first; files left out and
/// project files the trust does not accept become warnings.
pub(super) fn commands(
    roots: &Roots,
    trust: &ProjectTrust,
    warnings: &mut Vec<String>,
) -> Vec<Command> {
    let mut found = Vec::new();
    let mut untrusted = Vec::new();
    for source in sources(roots) {
        let boundary = match source.scope {
            Scope::Project => match source.dir.parent().and_then(Path::parent) {
                Some(project) => project.canonicalize().ok(),
                None => None,
            },
            Scope::User | Scope::Builtin => None,
        };
        for (path, dialect) in files(&source, warnings) {
            let content = match read_capped(&path, boundary.as_deref()) {
                Ok(content) => content,
                Err(why) => {
                    warnings.push(format!(
                        "command file {} was left out: {why}",
                        path.display()
                    ));
                    continue;
                }
            };
            if source.scope == Scope::Project {
                match trust.verdict(&path, &content) {
                    Verdict::Apply => {}
                    Verdict::NotTrusted => {
                        untrusted.push(path);
                        continue;
                    }
                    verdict => {
                        warnings.extend(ProjectTrust::ignored_warning(
                            &path,
                            "project command",
                            verdict,
                        ));
                        continue;
                    }
                }
            }
            match parse(&source, &path, dialect, &content) {
                Ok(command) => found.push(command),
                Err(why) => warnings.push(format!(
                    "command file {} was left out: {why}",
                    path.display()
                )),
            }
        }
    }
    if let Some(first) = untrusted.first() {
        warnings.extend(ProjectTrust::ignored_warning(
            first,
            &format!(
                "this and the project's other commands ({} files)",
                untrusted.len()
            ),
            Verdict::NotTrusted,
        ));
    }
    found
}

fn parse(
    source: &Source,
    path: &Path,
    dialect: Dialect,
    content: &[u8],
) -> Result<Command, String> {
    let text = std::str::from_utf8(content).map_err(|_| "it is not UTF-8 text".to_owned())?;
    let name = command_name(&source.dir, path)?;
    let mut command = match dialect {
        Dialect::Toml => gemini::parse(text)?,
        _ => markdown::parse(text, dialect)?,
    };
    command.name = name;
    command.origin = source.origin.clone();
    command.path = Some(path.to_owned());
    command.scope = source.scope;
    Ok(command)
}

/// `git/commit.toml` under the commands folder `dir` is `git:commit`.
fn command_name(dir: &Path, path: &Path) -> Result<String, String> {
    let rel = path.strip_prefix(dir).unwrap_or(path).with_extension("");
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let name = parts.join(":");
    let valid = !name.is_empty()
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || "-_.".contains(c)));
    if valid {
        Ok(name)
    } else {
        Err(format!(
            "its name `{name}` must be letters, digits, `-`, `_` or `.` (rename the file)"
        ))
    }
}

/// The files of a source with their dialect, sorted, at most [`MAX_FILES`].
fn files(source: &Source, warnings: &mut Vec<String>) -> Vec<(PathBuf, Dialect)> {
    let mut out = Vec::new();
    let depth = if source.recursive { MAX_DEPTH } else { 0 };
    walk(&source.dir, depth, &mut out, warnings);
    out.sort();
    if out.len() > MAX_FILES {
        warnings.push(format!(
            "{} holds more than {MAX_FILES} files; only the first {MAX_FILES} are read",
            source.dir.display()
        ));
        out.truncate(MAX_FILES);
    }
    out.into_iter()
        .filter_map(|path| {
            let ext = path.extension()?.to_str()?;
            let dialect = source.kinds.iter().find(|(e, _)| *e == ext)?.1;
            Some((path, dialect))
        })
        .collect()
}

/// Files under `dir` (links to folders are not followed: they could loop).
pub(super) fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>, warnings: &mut Vec<String>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => return,
        Err(e) => {
            warnings.push(format!("{} could not be listed: {e}", dir.display()));
            return;
        }
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => {
                if depth > 0 && out.len() <= MAX_FILES {
                    walk(&path, depth - 1, out, warnings);
                }
            }
            Ok(_) => out.push(path),
            Err(_) => {}
        }
    }
}

/// The content of the regular file at `path`, at most [`MAX_FILE_BYTES`]; with a
/// `boundary`, its real path (links resolved) must lie inside it.
pub(super) fn read_capped(path: &Path, boundary: Option<&Path>) -> Result<Vec<u8>, String> {
    let real = path.canonicalize().map_err(|e| e.to_string())?;
    if let Some(boundary) = boundary
        && !real.starts_with(boundary)
    {
        return Err(format!(
            "it leads to {}, outside the project folder {}",
            real.display(),
            boundary.display()
        ));
    }
    let file = crate::settings::open_regular(&real).map_err(|e| e.to_string())?;
    let mut content = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut content)
        .map_err(|e| e.to_string())?;
    if content.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "it has more than the {MAX_FILE_BYTES} bytes a command file may have"
        ));
    }
    Ok(content)
}

/// The project's command files and `SKILL.md` files under `project` with their content:
/// what trusting the folder accepts (see [`crate::settings::SettingsFiles::config_files`]).
pub fn project_command_files(
    project: &Path,
    env: impl Fn(&str) -> Option<String>,
) -> Vec<(PathBuf, Vec<u8>)> {
    let roots = Roots::discover(project, Some(project), env);
    let mut warnings = Vec::new();
    let mut out = Vec::new();
    let project_sources = sources(&roots)
        .into_iter()
        .filter(|s| s.scope == Scope::Project);
    for source in project_sources {
        let boundary = source
            .dir
            .parent()
            .and_then(Path::parent)
            .and_then(|p| p.canonicalize().ok());
        for (path, _) in files(&source, &mut warnings) {
            if let Ok(content) = read_capped(&path, boundary.as_deref()) {
                out.push((path, content));
            }
        }
    }
    for (path, boundary) in super::skills::project_skill_files(&roots) {
        if let Ok(content) = read_capped(&path, Some(&boundary)) {
            out.push((path, content));
        }
    }
    out
}

/// A hash of every command and skill file's path, size and modification time.
pub(super) fn fingerprint(roots: &Roots) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    let mut warnings = Vec::new();
    let mut paths: Vec<PathBuf> = sources(roots)
        .iter()
        .flat_map(|s| files(s, &mut warnings).into_iter().map(|(p, _)| p))
        .collect();
    paths.extend(super::skills::skill_files(roots));
    for path in paths {
        path.hash(&mut hasher);
        if let Ok(meta) = std::fs::metadata(&path) {
            meta.len().hash(&mut hasher);
            meta.modified().ok().hash(&mut hasher);
        }
    }
    hasher.finish()
}
