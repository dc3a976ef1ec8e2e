//! Agent files: markdown with front matter (`name`, `description`, `tools`, `model`) in
//! `$CORVID_HOME/agents/` and `<project>/.corvid/agents/`, the format Claude Code users
//! already write. The body is the agent's instructions.
//!
//! A project's agent files are project configuration like its settings: they apply only in
//! a trusted folder, with content the user accepted ([`ProjectTrust`]), and a project file
//! is never read through a link leading out of the project folder (it could pull in any
//! file the user can read). The user's own files in `$CORVID_HOME` may link anywhere.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{AgentType, AgentTypes, ToolChoice};
use crate::settings::ProjectTrust;

/// Larger agent files are left out: instructions that long are a mistake, not an agent.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// The agent types of a session: built-ins, then the user's files, then those of the
/// project folder `project` that `trust` accepts (each directory's files in name order).
pub fn load(corvid_home: Option<&Path>, project: &Path, trust: &ProjectTrust) -> AgentTypes {
    let mut defined = Vec::new();
    let mut warnings = Vec::new();
    let mut add = |path: &Path, content: Result<Vec<u8>, String>, warnings: &mut Vec<String>| {
        let parsed = content.and_then(|bytes| {
            let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())?;
            parse_agent(&text, &stem(path))
        });
        match parsed {
            Ok(agent) => defined.push(agent),
            Err(why) => warnings.push(format!("agent file {} was left out: {why}", path.display())),
        }
    };
    if let Some(home) = corvid_home {
        for path in markdown_files(&home.join("agents"), &mut warnings) {
            let content = read_capped(&path, None);
            add(&path, content, &mut warnings);
        }
    }
    for (path, content) in read_project_files(project, corvid_home, &mut warnings) {
        match trust.verdict(&path, &content) {
            crate::settings::Verdict::Apply => add(&path, Ok(content), &mut warnings),
            verdict => warnings.extend(ProjectTrust::ignored_warning(
                &path,
                "project agent file",
                verdict,
            )),
        }
    }
    AgentTypes::with_defined(defined, warnings)
}

/// The agent files of the project folder `project` with their content; the ones that cannot
/// be read (a link out of the project, not a regular file, too large) get a warning instead.
/// None when the folder is the user's own agent folder (a session in the home folder).
pub(crate) fn read_project_files(
    project: &Path,
    corvid_home: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(boundary) = project.canonicalize() else {
        return Vec::new();
    };
    let dir = project.join(".corvid").join("agents");
    let users = corvid_home.and_then(|home| home.join("agents").canonicalize().ok());
    if users.is_some() && dir.canonicalize().ok() == users {
        return Vec::new();
    }
    let mut out = Vec::new();
    for path in markdown_files(&dir, warnings) {
        match read_capped(&path, Some(&boundary)) {
            Ok(content) => out.push((path, content)),
            Err(why) => warnings.push(format!("agent file {} was left out: {why}", path.display())),
        }
    }
    out
}

/// The name of the file without `.md`: the agent's name when its front matter has none.
fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The content of the regular file at `path`, at most [`MAX_FILE_BYTES`]; with a
/// `boundary`, its real path (links resolved) must lie inside it.
fn read_capped(path: &Path, boundary: Option<&Path>) -> Result<Vec<u8>, String> {
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
    // A folder swapped for a link between the check above and the open would have led the
    // open elsewhere: check where the opened file really is.
    if let Some(boundary) = boundary
        && let Some(opened) = opened_path(&file)
        && !opened.starts_with(boundary)
    {
        return Err(format!(
            "it leads to {}, outside the project folder {}",
            opened.display(),
            boundary.display()
        ));
    }
    let size = file.metadata().map_err(|e| e.to_string())?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "it has {size} bytes, more than the {MAX_FILE_BYTES} an agent file may have"
        ));
    }
    let mut content = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut content)
        .map_err(|e| e.to_string())?;
    if content.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "it has more than the {MAX_FILE_BYTES} bytes an agent file may have"
        ));
    }
    Ok(content)
}

/// Where an open file is, as the kernel says (`/proc/self/fd`); `None` without `/proc`.
fn opened_path(file: &std::fs::File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

/// The `.md` files of `dir`, sorted; a missing directory has none.
fn markdown_files(dir: &Path, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(err) => {
            warnings.push(format!(
                "agent files in {} could not be listed: {err}",
                dir.display()
            ));
            return Vec::new();
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "md") && p.is_file())
        .collect();
    paths.sort();
    paths
}

/// The front matter of an agent file.
#[derive(Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    tools: Option<Tools>,
    model: Option<String>,
}

/// `tools: [read_file, grep]`, a YAML list, or `tools: read_file, grep`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Tools {
    List(Vec<String>),
    Text(String),
}

/// An agent type from an agent file's text; `stem` names it when the front matter does not.
fn parse_agent(text: &str, stem: &str) -> Result<AgentType, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("it does not start with a `---` front matter block")?;
    let (yaml, body) = split_front_matter(rest).ok_or("its front matter has no closing `---`")?;
    let front: FrontMatter =
        serde_yaml_ng::from_str(yaml).map_err(|e| format!("its front matter is invalid: {e}"))?;
    let name = front.name.unwrap_or_else(|| stem.to_owned());
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
    {
        return Err(format!(
            "its name `{name}` must be letters, digits, `-` or `_`"
        ));
    }
    let description = front
        .description
        .filter(|d| !d.trim().is_empty())
        .ok_or("its front matter has no `description` (the model needs it to choose the agent)")?;
    let tools = match front.tools {
        None => ToolChoice::All,
        Some(Tools::List(names)) => ToolChoice::Named(names),
        Some(Tools::Text(names)) => ToolChoice::Named(
            names
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect(),
        ),
    };
    Ok(AgentType {
        name: name.to_owned(),
        description: description.trim().to_owned(),
        tools,
        model: front.model.filter(|m| !m.trim().is_empty()),
        instructions: body.trim().to_owned(),
    })
}

/// The YAML before the closing `---` line, and the body after it.
fn split_front_matter(rest: &str) -> Option<(&str, &str)> {
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_file_with_a_tool_list_gives_an_agent_with_only_those_tools() {
        let agent = parse_agent(
            "---\nname: reviewer\ndescription: Reviews a diff\ntools: [read_file, grep]\n\
             model: small\ncolor: blue\n---\nReview carefully.\n",
            "ignored",
        )
        .unwrap();
        assert_eq!(
            agent,
            AgentType {
                name: "reviewer".into(),
                description: "Reviews a diff".into(),
                tools: ToolChoice::Named(vec!["read_file".into(), "grep".into()]),
                model: Some("small".into()),
                instructions: "Review carefully.".into(),
            }
        );
    }

    #[test]
    fn comma_separated_tools_and_a_missing_name_use_the_file_stem() {
        let agent = parse_agent(
            "---\ndescription: d\ntools: read_file, grep\n---\n",
            "finder",
        )
        .unwrap();
        assert_eq!(agent.name, "finder");
        assert_eq!(
            agent.tools,
            ToolChoice::Named(vec!["read_file".into(), "grep".into()])
        );
    }

    #[test]
    fn malformed_files_are_refused_with_the_reason() {
        let cases = [
            (
                "no front matter",
                "it does not start with a `---` front matter block",
            ),
            (
                "---\ndescription: d\n",
                "its front matter has no closing `---`",
            ),
            (
                "---\nname: x\n---\n",
                "its front matter has no `description` (the model needs it to choose the agent)",
            ),
            (
                "---\nname: a b\ndescription: d\n---\n",
                "its name `a b` must be letters, digits, `-` or `_`",
            ),
        ];
        for (text, why) in cases {
            assert_eq!(parse_agent(text, "stem").unwrap_err(), why, "{text}");
        }
        let invalid = parse_agent("---\ndescription: [unclosed\n---\n", "s").unwrap_err();
        assert!(
            invalid.starts_with("its front matter is invalid: "),
            "{invalid}"
        );
    }
}
