//! A skill's bundled files (issue 29): the unasked `skill` tool reads them even outside the
//! workspace, so they are pinned to what the user trusted. A project skill is read only when
//! its folder really lies in the (trusted) project, and a file only when its resolved path
//! lies inside the skill's folder: a linked folder, a `..` path or an absolute path inside a
//! skill reads nothing else.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use corvid_core::commands::skill_tool::SkillTool;
use corvid_core::commands::{Library, Roots};
use corvid_core::settings::{ProjectTrust, Trust};
use corvid_tools::{Tool, ToolContext, ToolError};
use serde_json::json;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const SKILL: &str = "---\nname: notes\ndescription: Keeps notes.\n---\nRead guide.md first.\n";
const SECRET: &str = "PRIVATE KEY\n";

/// A home with `~/.ssh/id_ed25519`, a trusted project inside it, and the project's skill
/// `notes` (`.claude/skills/notes/`, with `guide.md`).
struct Setup {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let home = dir.path().join("home").canonicalize().unwrap();
        let project = home.join("src/app");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        write(&home.join(".ssh/id_ed25519"), SECRET);
        Self {
            _dir: dir,
            home,
            project,
        }
    }

    fn skill_dir(&self) -> PathBuf {
        self.project.join(".claude/skills/notes")
    }

    fn tool(&self) -> SkillTool {
        let roots = Roots {
            cwd: self.project.clone(),
            user_home: Some(self.home.join("elsewhere")),
            project_dirs: vec![self.project.clone()],
            ..Roots::default()
        };
        let trust = ProjectTrust::vouched(Some(self.project.clone()), Trust::Trusted);
        SkillTool::new(Library::new(roots, trust))
    }

    async fn load(&self, args: serde_json::Value) -> Result<String, ToolError> {
        let ctx = ToolContext {
            call_id: "c".into(),
            cwd: self.project.clone(),
            fs: Arc::new(corvid_tools::LocalFs),
            cancel: Default::default(),
            shell_timeout: std::time::Duration::from_secs(5),
            shell: Default::default(),
            live_output: None,
        };
        self.tool().execute(args, ctx).await.map(|o| o.text)
    }
}

#[tokio::test]
async fn a_project_skill_reads_its_own_files_but_no_linked_folder_dot_dot_or_absolute_path() {
    let s = Setup::new();
    write(&s.skill_dir().join("SKILL.md"), SKILL);
    write(&s.skill_dir().join("guide.md"), "Be brief.\n");
    std::os::unix::fs::symlink(s.home.join(".ssh"), s.skill_dir().join("keys")).unwrap();
    assert_eq!(
        s.load(json!({"name": "notes", "file": "guide.md"}))
            .await
            .unwrap(),
        "Be brief.\n"
    );
    let secret = s.home.join(".ssh/id_ed25519");
    for file in [
        "keys/id_ed25519".to_owned(),
        "../../../../.ssh/id_ed25519".to_owned(),
        "guide.md/../../../../../.ssh/id_ed25519".to_owned(),
        secret.display().to_string(),
    ] {
        let refused = s
            .load(json!({"name": "notes", "file": file}))
            .await
            .unwrap_err();
        assert!(
            !refused.message.contains("PRIVATE KEY"),
            "{file}: {refused:?}"
        );
        assert!(
            refused.message.contains("is not one of the files")
                || refused
                    .message
                    .contains("a link leading outside the folder"),
            "{file}: {refused:?}"
        );
    }
}

#[tokio::test]
async fn a_project_skill_folder_linked_outside_the_project_is_not_offered_at_all() {
    let s = Setup::new();
    // The folder the link leads to has a SKILL.md and the key next to it.
    let outside = s.home.join(".ssh");
    write(&outside.join("SKILL.md"), SKILL);
    std::fs::create_dir_all(s.skill_dir().parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&outside, s.skill_dir()).unwrap();
    let refused = s.load(json!({"name": "notes"})).await.unwrap_err();
    assert!(
        refused.message.contains("there is no skill `notes`"),
        "{refused:?}"
    );
    let refused = s
        .load(json!({"name": "notes", "file": "id_ed25519"}))
        .await
        .unwrap_err();
    assert!(!refused.message.contains("PRIVATE KEY"), "{refused:?}");
}
