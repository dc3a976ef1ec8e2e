//! Where a session's project configuration is: the search for the project folder (the one
//! whose `.corvid/` configures the session), and the files in it that need the user's trust.
//!
//! The search climbs from the working folder to the repository root, but never into `$HOME`
//! or above, and never into a folder someone else could have written: a parent owned by
//! another user, or writable by others (a shared `/tmp`), could hold a planted `.git` and
//! `.corvid/settings.json` configuring every project below it (git's `safe.directory` rule).

use std::path::{Path, PathBuf};

use super::trust::{self, ConfigFile, GrantedFolders, ProjectTrust, TrustGrant};
use super::{SettingsError, corvid_home, user_home};

/// Where the settings files are; missing files are simply skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsFiles {
    pub user: Option<PathBuf>,
    pub project: Option<PathBuf>,
}

impl SettingsFiles {
    /// The standard locations for a session working in `cwd`. The project file is the
    /// nearest `.corvid/settings.json` in `cwd` or above it inside the repository (the
    /// directory holding `.git` is the last one looked at), so starting in a subdirectory
    /// still finds the project's settings. Outside a repository only `cwd` itself is looked
    /// at, and the search never reaches `$HOME` or above, nor a folder another user owns or
    /// others may write: a file in a shared parent such as `/tmp` must not configure every
    /// folder below it. The user's own file is never taken for a project file.
    pub fn discover(cwd: &Path, env: impl Fn(&str) -> Option<String>) -> Self {
        let home = user_home(&env);
        let user = corvid_home(env).map(|home| home.join("settings.json"));
        let project = project_search_dirs(cwd, home.as_deref())
            .into_iter()
            .map(|dir| dir.join(".corvid").join("settings.json"))
            .find(|candidate| {
                candidate.is_file() && !user.as_deref().is_some_and(|u| same_file(u, candidate))
            });
        Self {
            user,
            project: project.or_else(|| Some(cwd.join(".corvid").join("settings.json"))),
        }
    }

    /// The folder whose `.corvid` holds the project's configuration: the one trust is
    /// decided for, and where its agent files are read.
    pub fn project_folder(&self) -> Option<&Path> {
        self.project.as_deref()?.parent()?.parent()
    }

    /// The project file unless it is the user's own file (working in the home directory can
    /// make both locations the same file).
    pub(crate) fn project_file(&self) -> Option<&Path> {
        self.project
            .as_deref()
            .filter(|p| !self.user.as_deref().is_some_and(|u| same_file(u, p)))
    }

    /// The trust of the project folder: `--trust`, or a remembered trusted folder, with the
    /// configuration files accepted in it.
    pub fn trust(
        &self,
        grant: &TrustGrant,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ProjectTrust, SettingsError> {
        match self.project_folder() {
            Some(folder) => trust::decide(folder, grant, corvid_home(env).as_deref()),
            None => Ok(ProjectTrust::default()),
        }
    }

    /// The project's configuration files as they are now (its settings file and agent
    /// files), each with the digest of its content: what trusting the folder accepts.
    pub fn config_files(&self) -> Vec<ConfigFile> {
        let mut files = Vec::new();
        if let Some(path) = self.project_file()
            && let Ok(Some(content)) = read_project_file(path)
        {
            files.push(ConfigFile::new(path, &content));
        }
        if let Some(folder) = self.project_folder() {
            let mut ignored = Vec::new();
            let corvid_home = self.user.as_deref().and_then(Path::parent);
            for (path, content) in
                crate::agents::files::read_project_files(folder, corvid_home, &mut ignored)
            {
                files.push(ConfigFile::new(&path, &content));
            }
            let env = |name: &str| match name {
                super::CORVID_HOME_ENV => corvid_home.map(|h| h.display().to_string()),
                _ => super::process_env(name),
            };
            for (path, content) in crate::commands::project_command_files(folder, env) {
                files.push(ConfigFile::new(&path, &content));
            }
        }
        files
    }
}

/// The most bytes a project settings file may have: more is a mistake (or a trap).
const MAX_PROJECT_FILE_BYTES: u64 = 1024 * 1024;

/// The content of the project settings file at `path`; `None` when there is none. Only a
/// regular file is read (a FIFO planted there would hang the start, a device never end),
/// and at most [`MAX_PROJECT_FILE_BYTES`].
pub(super) fn read_project_file(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = match open_regular(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut content = Vec::new();
    file.take(MAX_PROJECT_FILE_BYTES + 1)
        .read_to_end(&mut content)?;
    if content.len() as u64 > MAX_PROJECT_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("it has more than the {MAX_PROJECT_FILE_BYTES} bytes a settings file may have"),
        ));
    }
    Ok(Some(content))
}

/// Opens `path` for reading if it is a regular file. It is opened non-blocking and checked
/// once open, so a FIFO swapped in after any earlier check cannot hang the open.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "it is not a regular file",
        ));
    }
    Ok(file)
}

/// `--trust DIR...`: for each folder, the project folder a session there would use, trusted
/// with the configuration files it holds now. The error names a folder that cannot be used.
pub fn grant_folders(
    dirs: &[PathBuf],
    env: impl Fn(&str) -> Option<String>,
) -> Result<TrustGrant, SettingsError> {
    let mut folders = Vec::new();
    let mut files = Vec::new();
    for dir in dirs {
        let real = dir.canonicalize().map_err(|source| SettingsError::Read {
            path: dir.clone(),
            source,
        })?;
        let found = SettingsFiles::discover(&real, &env);
        let folder = found.project_folder().unwrap_or(&real).to_owned();
        files.extend(found.config_files());
        folders.push(folder);
    }
    Ok(TrustGrant::Folders(GrantedFolders::new(folders, &files)))
}

/// The folders that may hold the project file, nearest first: `cwd` up to the repository
/// root, or `cwd` alone outside a repository; never `$HOME` (unless it is `cwd`) or above,
/// and never a parent that is not safely the user's own ([`is_own_folder`]).
pub(crate) fn project_search_dirs<'a>(cwd: &'a Path, home: Option<&Path>) -> Vec<&'a Path> {
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        if dir != cwd && (home.is_some_and(|h| h.starts_with(dir)) || !is_own_folder(dir)) {
            break;
        }
        dirs.push(dir);
        if dir.join(".git").exists() {
            return dirs;
        }
    }
    vec![cwd]
}

/// Whether `dir` is the user's own: owned by this user and writable by no one else. A
/// group-writable folder passes only when its group is the user's own primary group (the
/// per-user group that systems with `umask 002` give every user), so such checkouts keep
/// working while a folder shared with a group, or with everyone (`/tmp`, sticky or not),
/// does not. A folder that cannot be examined is not the user's.
pub(crate) fn is_own_folder(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(dir) else {
        return false;
    };
    let others_write = meta.mode() & 0o002 != 0;
    let group_write = meta.mode() & 0o020 != 0;
    meta.uid() == nix::unistd::geteuid().as_raw()
        && !others_write
        && (!group_write || meta.gid() == nix::unistd::getegid().as_raw())
}

/// Whether two paths name the same file, however they are spelled.
pub(super) fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
