//! The `skill` tool: the model loads a skill listed in its system prompt (the body of its
//! `SKILL.md` and the list of its other files), or one of those files. Read-only and never
//! asked about; a skill's files are readable through it even outside the workspace (the
//! user installed the skill), and nothing else is.

use std::sync::Arc;

use corvid_protocol::{ToolDisplay, ToolKind, ToolOutput};
use corvid_tools::{ApprovalNeed, Tool, ToolContext, ToolError};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::Library;

/// The tool's name.
pub const SKILL_TOOL: &str = "skill";

/// The most bytes of one bundled file returned.
const MAX_FILE_BYTES: usize = 256 * 1024;

/// Loads skills from a session's [`Library`].
#[derive(Debug)]
pub struct SkillTool {
    library: Arc<Library>,
}

impl SkillTool {
    pub fn new(library: Arc<Library>) -> Self {
        Self { library }
    }
}

fn arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

impl Tool for SkillTool {
    fn name(&self) -> &str {
        SKILL_TOOL
    }

    fn display_name(&self) -> &str {
        "Skill"
    }

    fn description(&self) -> &str {
        "Loads a skill listed under \"Skills\" in your instructions: returns its instructions \
         and the list of its other files. Call it before doing a task that matches a skill's \
         description, then follow the instructions. With `file` (a path from that list, \
         relative to the skill's folder), returns that file's text instead."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name, as listed."},
                "file": {
                    "type": "string",
                    "description": "Optional: one of the skill's files, relative to its folder."
                }
            },
            "required": ["name"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn mutates(&self) -> bool {
        false
    }

    fn display(&self, args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        let name = arg(args, "name").unwrap_or("?");
        let title = match arg(args, "file") {
            Some(file) => format!("Skill {name}: {file}"),
            None => format!("Skill {name}"),
        };
        ToolDisplay {
            title,
            kind: ToolKind::Read,
            locations: Vec::new(),
        }
    }

    fn approval(&self, _args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        futures::future::ready(ApprovalNeed::None).boxed()
    }

    fn execute(
        &self,
        args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let library = self.library.clone();
        async move { load(&library, &args) }.boxed()
    }
}

fn load(library: &Library, args: &Value) -> Result<ToolOutput, ToolError> {
    let name = arg(args, "name").ok_or_else(|| ToolError::new("`name` is required"))?;
    let skills = library.skills();
    let Some(skill) = skills.for_model(name) else {
        let known: Vec<&str> = skills
            .skills
            .iter()
            .filter(|s| s.model_invocable)
            .map(|s| s.name.as_str())
            .collect();
        return Err(ToolError::new(format!(
            "there is no skill `{name}` you can load; the skills are: {}",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )));
    };
    let files = skill.other_files();
    if let Some(file) = arg(args, "file") {
        let wanted = skill.dir().join(file);
        let Some(path) = files.iter().find(|f| **f == wanted) else {
            return Err(ToolError::new(format!(
                "`{file}` is not one of the files of the skill `{name}`; call the tool without \
                 `file` to list them"
            )));
        };
        // A link in a skill's folder must not turn this unasked tool into a reader of any
        // file (`notes.md -> ~/.ssh/id_ed25519` in a repository's skill): only what really
        // lies inside the skill's folder is read, by its resolved path.
        let real = path
            .canonicalize()
            .ok()
            .filter(|real| {
                skill
                    .dir()
                    .canonicalize()
                    .is_ok_and(|dir| real.starts_with(dir))
            })
            .ok_or_else(|| {
                ToolError::new(format!(
                    "`{file}` is a link leading outside the folder of the skill `{name}` (or \
                     cannot be resolved); a skill's files are read only from inside its folder"
                ))
            })?;
        let (mut reader, _) = corvid_tools::regular_file::open_regular(&real)
            .map_err(|e| ToolError::new(format!("{} could not be read: {e}", path.display())))?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(&mut reader, MAX_FILE_BYTES as u64),
            &mut bytes,
        )
        .map_err(|e| ToolError::new(format!("{} could not be read: {e}", path.display())))?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        return Ok(ToolOutput::text(text));
    }
    library.mark_loaded(name);
    Ok(ToolOutput::text(render(skill, &files)))
}

/// What the model gets for a loaded skill.
pub(crate) fn render(skill: &super::Skill, files: &[std::path::PathBuf]) -> String {
    let mut out = format!(
        "<skill name=\"{}\" folder=\"{}\">\n{}\n</skill>",
        skill.name,
        skill.dir().display(),
        skill.body.trim()
    );
    if !files.is_empty() {
        out.push_str(
            "\n\nThe skill's other files (read one with this tool's `file` argument; run a \
             script with its full path):\n",
        );
        for file in files {
            let rel = file.strip_prefix(skill.dir()).unwrap_or(file);
            out.push_str(&format!("- {}\n", rel.display()));
        }
    }
    out
}
