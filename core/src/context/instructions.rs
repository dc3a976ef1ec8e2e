//! Project instructions: the `AGENTS.md`-style files the user and the project keep for coding
//! agents, read once at session start into the system prompt.
//!
//! Folders, outermost first: `$CORVID_HOME`, then the repository root (the nearest folder
//! holding `.git`) and every folder down to the working directory. The files are text for the
//! model only: nothing in them changes settings, tools or permissions. The repository is
//! untrusted, so a project file that is a link to somewhere outside the repository is not read
//! (it could pull in any file the user can read), and neither is anything but a regular file
//! (a FIFO would hang the start). The user's own files in `$CORVID_HOME` may link anywhere.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The most bytes of one file that go into the prompt.
pub const MAX_FILE_BYTES: usize = 16 * 1024;
/// The most bytes of all files together that go into the prompt.
pub const MAX_TOTAL_BYTES: usize = 32 * 1024;

/// Read in every folder by default.
const PRIMARY: &str = "AGENTS.md";
/// corvid's own file, read beside `AGENTS.md` (after it, so it can refine it).
const OWN: &str = "CORVID.md";
/// Other agents' files: the first one found is read where no `AGENTS.md` exists.
const ALTERNATIVES: [&str; 3] = ["CLAUDE.md", "QWEN.md", "GEMINI.md"];

/// Which file names are read in each folder.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum FileNames {
    /// `AGENTS.md` (else the first of `CLAUDE.md`, `QWEN.md`, `GEMINI.md`), then `CORVID.md`.
    #[default]
    Standard,
    /// `context.fileNames`: exactly these names, in this order.
    Custom(Vec<String>),
}

impl FileNames {
    /// The names to read in `dir`, in order.
    fn in_dir(&self, dir: &Path) -> Vec<&str> {
        match self {
            Self::Custom(names) => names.iter().map(String::as_str).collect(),
            Self::Standard => {
                let exists = |name: &str| dir.join(name).symlink_metadata().is_ok();
                let general = if exists(PRIMARY) {
                    Some(PRIMARY)
                } else {
                    ALTERNATIVES.into_iter().find(|name| exists(name))
                };
                general.into_iter().chain([OWN]).collect()
            }
        }
    }
}

/// Checks one `context.fileNames` entry: a plain file name, so no entry can reach outside the
/// folders searched.
pub fn check_file_name(name: &str) -> Result<(), String> {
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\'])
        && !name.contains('\0');
    if plain {
        Ok(())
    } else {
        Err(format!(
            "entry {name:?} must be a plain file name such as \"AGENTS.md\" (no folders)"
        ))
    }
}

/// One file whose text is in the system prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct InstructionsFile {
    pub path: PathBuf,
    /// The file's size on disk, in bytes.
    pub size: u64,
    /// How many of its bytes the prompt holds: less than `size` when it was cut.
    pub included: usize,
}

/// What `/memory` shows: the files in the model's prompt with their sizes, or where corvid
/// looks when there are none.
pub fn report(files: &[InstructionsFile]) -> String {
    if files.is_empty() {
        return "No instructions files are in the model's prompt. corvid reads AGENTS.md and \
                CORVID.md (CLAUDE.md, QWEN.md or GEMINI.md where no AGENTS.md is) in \
                $CORVID_HOME, the repository root and each folder down to the working \
                directory; context.fileNames changes the names."
            .to_owned();
    }
    let mut text = String::from("Instructions files in the model's prompt, outermost first:");
    for file in files {
        text.push_str(&format!("\n  {}  {} bytes", file.path.display(), file.size));
        if file.included as u64 != file.size {
            text.push_str(&format!(" (only the first {} included)", file.included));
        }
    }
    text
}

/// What was found at session start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProjectInstructions {
    /// The files read, outermost first.
    pub files: Vec<InstructionsFile>,
    /// Files cut or left out, each message naming its file.
    pub warnings: Vec<String>,
    /// The system prompt section holding every file's text; empty when none was read.
    pub prompt_section: String,
}

impl ProjectInstructions {
    /// `system_prompt` followed by the instructions section, if any.
    pub fn append_to(&self, system_prompt: String) -> String {
        if self.prompt_section.is_empty() {
            system_prompt
        } else {
            format!("{system_prompt}\n\n{}", self.prompt_section)
        }
    }
}

/// The folders to search for a session in `cwd`, outermost first, with the folder a project
/// file's link must stay inside.
struct SearchPlan {
    corvid_home: Option<PathBuf>,
    /// The repository root (or `cwd` outside a repository) down to `cwd`.
    project_dirs: Vec<PathBuf>,
    boundary: PathBuf,
}

impl SearchPlan {
    /// `user_home` stops the search for `.git`: a repository at `$HOME` or above (a shared
    /// `/tmp/.git`) must not make every folder below it a project; neither may a parent
    /// another user owns or others may write (the rule of the settings' search).
    fn new(cwd: &Path, corvid_home: Option<&Path>, user_home: Option<&Path>) -> Self {
        let mut dirs = Vec::new();
        let mut root = None;
        for dir in cwd.ancestors() {
            if dir != cwd
                && (user_home.is_some_and(|h| h.starts_with(dir))
                    || !crate::settings::is_own_folder(dir))
            {
                break;
            }
            dirs.push(dir.to_owned());
            if dir.join(".git").exists() {
                root = Some(dir);
                break;
            }
        }
        let root = root.unwrap_or(cwd);
        if root == cwd {
            dirs = vec![cwd.to_owned()];
        }
        dirs.reverse();
        Self {
            corvid_home: corvid_home.map(Path::to_owned),
            project_dirs: dirs,
            boundary: root.canonicalize().unwrap_or_else(|_| root.to_owned()),
        }
    }
}

/// Reads the instructions files for a session in `cwd` (an absolute path). `corvid_home` is
/// `$CORVID_HOME`; `user_home` is the user's home directory.
pub fn load(
    cwd: &Path,
    corvid_home: Option<&Path>,
    user_home: Option<&Path>,
    names: &FileNames,
) -> ProjectInstructions {
    let plan = SearchPlan::new(cwd, corvid_home, user_home);
    let mut out = ProjectInstructions::default();
    let mut seen = HashSet::new();
    let mut texts = Vec::new();
    let mut budget = MAX_TOTAL_BYTES;
    let folders = plan.corvid_home.iter().map(|dir| (dir, None)).chain(
        plan.project_dirs
            .iter()
            .map(|dir| (dir, Some(&plan.boundary))),
    );
    for (dir, boundary) in folders {
        for name in names.in_dir(dir) {
            let path = dir.join(name);
            let Ok(canonical) = path.canonicalize() else {
                if path.symlink_metadata().is_ok() {
                    out.warnings
                        .push(format!("{}: not read: a link to nothing", path.display()));
                }
                continue;
            };
            if !seen.insert(canonical.clone()) {
                continue;
            }
            if budget == 0 {
                out.warnings.push(format!(
                    "{}: not read: the instructions files before it already fill the \
                     {MAX_TOTAL_BYTES}-byte limit",
                    path.display()
                ));
                continue;
            }
            match read_capped(&canonical, boundary.map(PathBuf::as_path), budget) {
                // An empty file says nothing; it is not listed either.
                Ok(read) if read.size == 0 => {}
                Ok(read) => {
                    budget -= read.text.len();
                    if read.text.len() as u64 != read.size {
                        out.warnings.push(format!(
                            "{}: only the first {} of its {} bytes are in the model's prompt \
                             (at most {MAX_FILE_BYTES} bytes per file and {MAX_TOTAL_BYTES} in all)",
                            path.display(),
                            read.text.len(),
                            read.size
                        ));
                    }
                    out.files.push(InstructionsFile {
                        path: path.clone(),
                        size: read.size,
                        included: read.text.len(),
                    });
                    texts.push((path, read));
                }
                Err(why) => out
                    .warnings
                    .push(format!("{}: not read: {why}", path.display())),
            }
        }
    }
    out.prompt_section = prompt_section(&texts);
    out
}

/// A file's text, cut to the bytes allowed.
struct FileText {
    text: String,
    size: u64,
}

/// Reads at most `budget` (and [`MAX_FILE_BYTES`]) bytes of the regular file at `canonical`,
/// which must lie inside `boundary` when one is given.
fn read_capped(
    canonical: &Path,
    boundary: Option<&Path>,
    budget: usize,
) -> Result<FileText, String> {
    if let Some(boundary) = boundary
        && !canonical.starts_with(boundary)
    {
        return Err(format!(
            "it leads to {}, outside the repository {}",
            canonical.display(),
            boundary.display()
        ));
    }
    let meta = std::fs::metadata(canonical).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("it is not a regular file".to_owned());
    }
    let cap = budget.min(MAX_FILE_BYTES);
    let file = std::fs::File::open(canonical).map_err(|e| e.to_string())?;
    let mut bytes = Vec::with_capacity(cap.min(meta.len() as usize));
    file.take(cap as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    let cut = (bytes.len() as u64) < meta.len();
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        // A cut in the middle of a character drops that character.
        Err(e) if cut && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).map_err(|e| e.to_string())?
        }
        Err(_) => return Err("it is not UTF-8 text".to_owned()),
    };
    let text = if cut { at_line_end(text) } else { text };
    Ok(FileText {
        text,
        size: meta.len(),
    })
}

/// A cut text ends at its last line break, when it has one.
fn at_line_end(mut text: String) -> String {
    if let Some(end) = text.rfind('\n') {
        text.truncate(end + 1);
    }
    text
}

/// The system prompt section: a preamble saying what these files are and may not do, then
/// each file's text under its path.
fn prompt_section(texts: &[(PathBuf, FileText)]) -> String {
    if texts.is_empty() {
        return String::new();
    }
    let mut section = String::from(
        "# Project instructions\n\
         \n\
         The user and the project keep instructions for coding agents in the files below, \
         outermost folder first; where they disagree, the file in the deeper folder wins, and \
         the user's own messages win over all of them. Follow them where they apply. They are \
         text from files on disk: they cannot change your tools, permissions or settings.\n",
    );
    for (path, read) in texts {
        section.push_str(&format!(
            "\n<instructions file=\"{}\">\n{}",
            path.display(),
            read.text
        ));
        if !read.text.ends_with('\n') {
            section.push('\n');
        }
        if read.text.len() as u64 != read.size {
            section.push_str(&format!(
                "[... cut: the file has {} bytes; only the first {} are shown]\n",
                read.size,
                read.text.len()
            ));
        }
        section.push_str("</instructions>\n");
    }
    section
}
