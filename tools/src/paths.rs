//! Confines tool paths to the session's working directory.

use std::path::{Component, Path, PathBuf};

use crate::ToolError;

/// Joins `raw` onto `cwd` and removes `.` and `..` without touching the disk, for titles
/// and locations (which must not do I/O).
pub fn lexical(cwd: &Path, raw: &str) -> PathBuf {
    normalize(&cwd.join(raw))
}

/// `path` relative to `cwd` when inside it, for short titles; otherwise `path` itself.
pub fn relative(cwd: &Path, path: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// Resolves `raw` against `cwd` and refuses it when it escapes `cwd`, lexically (`..`,
/// absolute paths) or through a symlink. The result is absolute and spelled under `cwd`.
pub fn resolve(cwd: &Path, raw: &str) -> Result<PathBuf, ToolError> {
    if raw.trim().is_empty() {
        return Err(ToolError::new("the path is empty"));
    }
    let outside = || {
        ToolError::new(format!(
            "`{raw}` is outside the working directory {}; only paths inside it can be used",
            cwd.display()
        ))
    };
    let joined = lexical(cwd, raw);
    let cwd_norm = normalize(cwd);
    let rel = joined.strip_prefix(&cwd_norm).map_err(|_| outside())?;
    let cwd_real = cwd.canonicalize().map_err(|e| {
        ToolError::new(format!(
            "the working directory {} is not usable: {e}",
            cwd.display()
        ))
    })?;
    // Walk down from the working directory: every existing component is resolved by the
    // OS (following symlinks); once a component does not exist, nothing below it can be
    // a symlink.
    let mut real = cwd_real.clone();
    let mut components = rel.components();
    for component in components.by_ref() {
        let next = real.join(component);
        match std::fs::symlink_metadata(&next) {
            Ok(_) => match next.canonicalize() {
                Ok(resolved) => real = resolved,
                Err(_) => {
                    return Err(ToolError::new(format!(
                        "`{raw}` goes through a broken symbolic link ({})",
                        next.display()
                    )));
                }
            },
            Err(_) => {
                real = next;
                break;
            }
        }
        if !real.starts_with(&cwd_real) {
            return Err(outside());
        }
    }
    real.extend(components);
    let inside = real.strip_prefix(&cwd_real).map_err(|_| outside())?;
    // Joining an empty path would add a trailing slash to the working directory.
    if inside.as_os_str().is_empty() {
        Ok(cwd_norm)
    } else {
        Ok(cwd_norm.join(inside))
    }
}

/// `path` with `.` and `..` removed lexically.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn relative_paths_are_spelled_under_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        let cwd = dir.path();
        assert_eq!(
            resolve(cwd, "src/../src/./a.rs").unwrap(),
            cwd.join("src/a.rs")
        );
        assert_eq!(resolve(cwd, ".").unwrap(), cwd.to_path_buf());
        assert_eq!(
            resolve(cwd, cwd.join("new/deep.txt").to_str().unwrap()).unwrap(),
            cwd.join("new/deep.txt")
        );
    }

    #[test]
    fn parent_directories_and_outside_absolute_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        for raw in ["../x", "a/../../x", "/etc/passwd"] {
            let err = resolve(cwd, raw).unwrap_err();
            assert_eq!(
                err.message,
                format!(
                    "`{raw}` is outside the working directory {}; only paths inside it can be used",
                    cwd.display()
                )
            );
        }
    }

    #[test]
    fn symlinks_pointing_out_are_refused_and_inside_ones_allowed() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::create_dir(cwd.join("real")).unwrap();
        std::os::unix::fs::symlink(outside.path(), cwd.join("out")).unwrap();
        std::os::unix::fs::symlink(cwd.join("real"), cwd.join("in")).unwrap();
        std::os::unix::fs::symlink(cwd.join("missing"), cwd.join("dangling")).unwrap();

        assert!(
            resolve(cwd, "out/file.txt")
                .unwrap_err()
                .message
                .contains("outside")
        );
        assert!(resolve(cwd, "out").unwrap_err().message.contains("outside"));
        assert_eq!(resolve(cwd, "in/x.txt").unwrap(), cwd.join("real/x.txt"));
        assert!(
            resolve(cwd, "dangling")
                .unwrap_err()
                .message
                .contains("broken symbolic link")
        );
    }
}
