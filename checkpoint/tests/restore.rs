//! Undoing what a turn did to a workspace, whatever did it: each test changes a temporary
//! folder the way a tool or a shell command would, then restores the snapshot taken before.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use common::Fixture;
use corvid_checkpoint::{Action, Change, Error, Options, Store, UnrestorableReason};

fn change(path: &str, action: Action, conflict: bool) -> Change {
    Change {
        path: PathBuf::from(path),
        action,
        conflict,
    }
}

#[test]
fn sed_in_place_rewrite_is_undone() {
    let mut f = Fixture::new();
    f.write("src/a.txt", "hello world\n");
    f.write("b.txt", "untouched\n");
    let before = f.snapshot();
    f.sh("sed -i 's/world/there/' src/a.txt");
    let after = f.snapshot();
    let plan = f.undo(before, after);
    assert_eq!(
        plan.changes,
        vec![change("src/a.txt", Action::Modify, false)]
    );
    assert_eq!(f.read("src/a.txt"), b"hello world\n");
    assert_eq!(f.read("b.txt"), b"untouched\n");
}

#[test]
fn file_created_by_a_heredoc_is_removed_by_undo() {
    let mut f = Fixture::new();
    f.write("keep.txt", "k");
    let before = f.snapshot();
    f.sh("mkdir -p gen && cat > gen/new.txt <<'EOF'\ncreated\nEOF");
    let after = f.snapshot();
    let plan = f.undo(before, after);
    assert_eq!(
        plan.changes,
        vec![change("gen/new.txt", Action::Delete, false)]
    );
    assert!(!f.exists("gen/new.txt"));
    assert!(
        !f.exists("gen"),
        "the folder the turn created and emptied is removed"
    );
    assert_eq!(f.read("keep.txt"), b"k");
}

#[test]
fn rename_by_mv_is_undone() {
    let mut f = Fixture::new();
    f.write("a.txt", "content of a");
    let before = f.snapshot();
    f.sh("mv a.txt b.txt");
    let after = f.snapshot();
    let plan = f.undo(before, after);
    assert_eq!(
        plan.changes,
        vec![
            change("a.txt", Action::Recreate, false),
            change("b.txt", Action::Delete, false)
        ]
    );
    assert_eq!(f.read("a.txt"), b"content of a");
    assert!(!f.exists("b.txt"));
}

#[test]
fn folder_removed_by_rm_r_is_recreated() {
    let mut f = Fixture::new();
    f.write("dir/x.txt", "x");
    f.write("dir/sub/y.txt", "y");
    let before = f.snapshot();
    f.sh("rm -r dir");
    let after = f.snapshot();
    let plan = f.undo(before, after);
    assert_eq!(plan.changes.len(), 2);
    assert!(plan.changes.iter().all(|c| c.action == Action::Recreate));
    assert_eq!(f.read("dir/x.txt"), b"x");
    assert_eq!(f.read("dir/sub/y.txt"), b"y");
}

#[test]
fn chmod_plus_x_is_undone() {
    let mut f = Fixture::new();
    f.write("run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(f.path("run.sh"), PermissionsExt::from_mode(0o640)).unwrap();
    let before = f.snapshot();
    f.sh("chmod +x run.sh");
    let after = f.snapshot();
    let plan = f.undo(before, after);
    assert_eq!(plan.changes, vec![change("run.sh", Action::Modify, false)]);
    let mode = f.path("run.sh").metadata().unwrap().mode() & 0o7777;
    assert_eq!(mode, 0o640);
    assert_eq!(f.read("run.sh"), b"#!/bin/sh\n");
}

#[test]
fn rewritten_binary_file_is_restored_byte_for_byte() {
    let mut f = Fixture::new();
    let original: Vec<u8> = (0..70_000u32).map(|i| (i * 7 % 256) as u8).collect();
    f.write("blob.bin", &original);
    let before = f.snapshot();
    f.sh("head -c 5000 /dev/zero > blob.bin");
    let after = f.snapshot();
    f.undo(before, after);
    assert_eq!(f.read("blob.bin"), original);
}

#[test]
fn symlinks_are_restored_as_links_and_outside_targets_are_never_read() {
    let mut f = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-OUTSIDE-THE-WORKSPACE").unwrap();
    f.write("a.txt", "a");
    f.write("b.txt", "b");
    std::os::unix::fs::symlink("a.txt", f.path("link")).unwrap();
    std::os::unix::fs::symlink(&secret, f.path("out")).unwrap();
    let before = f.snapshot();
    assert!(
        !f.store_contains(b"TOP-SECRET"),
        "a link's target outside the workspace was read into the store"
    );

    f.sh("ln -sfn b.txt link && rm out && ln -s a.txt new-link");
    let after = f.snapshot();
    f.undo(before, after);
    assert_eq!(
        std::fs::read_link(f.path("link")).unwrap(),
        Path::new("a.txt")
    );
    assert!(
        f.path("out")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_link(f.path("out")).unwrap(), secret);
    assert!(!f.exists("new-link"));
    assert_eq!(
        std::fs::read(&secret).unwrap(),
        b"TOP-SECRET-OUTSIDE-THE-WORKSPACE"
    );
}

#[test]
fn a_restore_never_writes_through_a_folder_replaced_by_a_link() {
    let mut f = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    f.write("src/main.rs", "fn main() {}");
    let before = f.snapshot();
    // The turn replaces the folder with a link to somewhere else.
    std::fs::remove_dir_all(f.path("src")).unwrap();
    std::os::unix::fs::symlink(outside.path(), f.path("src")).unwrap();
    let after = f.snapshot();
    f.undo(before, after);
    assert!(f.path("src").symlink_metadata().unwrap().is_dir());
    assert_eq!(f.read("src/main.rs"), b"fn main() {}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn works_in_a_folder_that_is_not_a_git_repository_and_honours_gitignore() {
    let mut f = Fixture::new();
    assert!(!f.exists(".git"));
    f.write(".gitignore", "build/\n*.log\n");
    f.write("src/lib.rs", "pub fn a() {}");
    f.write("build/out.bin", "IGNORED-BUILD-OUTPUT");
    f.write("debug.log", "IGNORED-LOG-LINE");
    let before = f.snapshot();
    assert!(!f.store_contains(b"IGNORED-BUILD-OUTPUT"));
    assert!(!f.store_contains(b"IGNORED-LOG-LINE"));

    f.write("src/lib.rs", "pub fn b() {}");
    f.write("build/out.bin", "rebuilt");
    f.write("build/new.bin", "new output");
    f.write("debug.log", "more log");
    let after = f.snapshot();
    let plan = f.undo(before, after);
    assert_eq!(
        plan.changes,
        vec![change("src/lib.rs", Action::Modify, false)]
    );
    assert_eq!(f.read("src/lib.rs"), b"pub fn a() {}");
    assert_eq!(f.read("build/out.bin"), b"rebuilt");
    assert_eq!(f.read("build/new.bin"), b"new output");
    assert_eq!(f.read("debug.log"), b"more log");
}

#[test]
fn git_folder_is_never_stored_nor_touched_by_a_restore() {
    let mut f = Fixture::new();
    f.write(".git/config", "GIT-CONFIG-MARKER");
    f.write(".git/objects/ab/cd", "GIT-OBJECT-MARKER");
    f.write("tracked.txt", "v1");
    let before = f.snapshot();
    assert!(!f.store_contains(b"GIT-CONFIG-MARKER"));
    assert!(!f.store_contains(b"GIT-OBJECT-MARKER"));

    f.write("tracked.txt", "v2");
    f.write(".git/config", "changed by a commit");
    f.write(".git/objects/ef/01", "new object");
    let after = f.snapshot();
    let plan = f.undo(before, after);
    assert_eq!(
        plan.changes,
        vec![change("tracked.txt", Action::Modify, false)]
    );
    assert_eq!(f.read("tracked.txt"), b"v1");
    assert_eq!(f.read(".git/config"), b"changed by a commit");
    assert_eq!(f.read(".git/objects/ef/01"), b"new object");
}

#[test]
fn user_edit_after_the_turn_is_a_conflict_and_kept_unless_overwritten() {
    let mut f = Fixture::new();
    f.write("agent.txt", "before");
    f.write("shared.txt", "before");
    let before = f.snapshot();
    f.write("agent.txt", "agent");
    f.write("shared.txt", "agent");
    let after = f.snapshot();
    // The user edits a file after the agent's turn, and creates one.
    f.write("shared.txt", "user's own work");
    f.write("notes.txt", "user's notes");

    let plan = f.preview(before, after);
    assert_eq!(
        plan.changes,
        vec![
            change("agent.txt", Action::Modify, false),
            change("notes.txt", Action::Delete, true),
            change("shared.txt", Action::Modify, true),
        ]
    );
    f.store.restore(&plan, false).unwrap();
    assert_eq!(f.read("agent.txt"), b"before");
    assert_eq!(f.read("shared.txt"), b"user's own work");
    assert_eq!(f.read("notes.txt"), b"user's notes");

    let plan = f.preview(before, after);
    assert!(plan.has_conflicts());
    f.store.restore(&plan, true).unwrap();
    assert_eq!(f.read("shared.txt"), b"before");
    assert!(!f.exists("notes.txt"));
}

#[test]
fn file_over_the_size_limit_is_named_in_the_preview_and_not_stored() {
    let mut f = Fixture::with(Options {
        max_file_bytes: 1024,
    });
    f.write("big.bin", vec![b'Z'; 4096]);
    f.write("small.txt", "s");
    let before = f.snapshot();
    assert!(!f.store_contains(&[b'Z'; 2048]));
    f.sh("rm big.bin small.txt");
    let after = f.snapshot();
    let plan = f.preview(before, after);
    assert_eq!(
        plan.changes,
        vec![change("small.txt", Action::Recreate, false)]
    );
    assert_eq!(plan.unrestorable.len(), 1);
    assert_eq!(plan.unrestorable[0].path, PathBuf::from("big.bin"));
    assert_eq!(
        plan.unrestorable[0].reason,
        UnrestorableReason::TooLarge {
            size: 4096,
            limit: 1024
        }
    );
    f.store.restore(&plan, false).unwrap();
    assert_eq!(f.read("small.txt"), b"s");
    assert!(!f.exists("big.bin"));
}

#[test]
fn a_restore_is_a_snapshot_and_can_itself_be_undone() {
    let mut f = Fixture::new();
    f.write("a.txt", "one");
    let before = f.snapshot();
    f.write("a.txt", "two");
    let after = f.snapshot();
    let plan = f.preview(before, after);
    let restored = f.store.restore(&plan, false).unwrap();
    assert_eq!(f.read("a.txt"), b"one");
    f.undo(plan.current, restored);
    assert_eq!(f.read("a.txt"), b"two");
}

#[test]
fn an_unchanged_workspace_gives_the_same_snapshot_and_stores_nothing() {
    let mut f = Fixture::new();
    for i in 0..50 {
        f.write(&format!("d{}/f{i}.txt", i % 5), format!("file {i}"));
    }
    let first = f.snapshot();
    let bytes = f.store.stored_bytes().unwrap();
    assert_eq!(f.snapshot(), first);
    assert_eq!(f.store.stored_bytes().unwrap(), bytes);
    assert_eq!(f.store.list().unwrap().len(), 1);
}

#[test]
fn a_workspace_changed_after_the_preview_is_not_restored() {
    let mut f = Fixture::new();
    f.write("a.txt", "one");
    let before = f.snapshot();
    f.write("a.txt", "two");
    let after = f.snapshot();
    let plan = f.preview(before, after);
    f.write("a.txt", "three, typed after the preview");
    let err = f.store.restore(&plan, true).unwrap_err();
    assert!(matches!(err, Error::WorkspaceChanged), "{err}");
    assert_eq!(f.read("a.txt"), b"three, typed after the preview");
}

#[test]
fn the_store_is_private_and_project_keys_cannot_escape_it() {
    let f = Fixture::new();
    for dir in [
        f.home.path().join("checkpoints"),
        f.store.dir().to_path_buf(),
    ] {
        assert_eq!(
            dir.metadata().unwrap().mode() & 0o777,
            0o700,
            "{}",
            dir.display()
        );
    }
    for key in ["../evil", "a/b", "", ".", ".."] {
        let err = Store::open(f.home.path(), key).unwrap_err();
        assert!(matches!(err, Error::BadProjectKey(_)), "{key:?}: {err}");
    }
}

#[test]
fn changes_lists_what_a_turn_touched() {
    let mut f = Fixture::new();
    f.write("a.txt", "a");
    let before = f.snapshot();
    f.write("a.txt", "A");
    f.write("b.txt", "b");
    let after = f.snapshot();
    let (changes, unrestorable) = f.store.changes(before, after).unwrap();
    assert_eq!(
        changes,
        vec![
            change("a.txt", Action::Modify, false),
            change("b.txt", Action::Delete, false)
        ]
    );
    assert!(unrestorable.is_empty());
}

#[test]
fn a_same_size_rewrite_with_the_old_mtime_is_still_undone() {
    let mut f = Fixture::new();
    f.write("a.txt", "old content");
    // Size and mtime alone cannot tell the versions apart.
    f.sh("touch -d '2020-01-01 00:00:00' a.txt");
    let before = f.snapshot();
    assert_eq!(f.snapshot(), before);
    f.write("a.txt", "new content");
    f.sh("touch -d '2020-01-01 00:00:00' a.txt");
    let after = f.snapshot();
    assert_ne!(
        after, before,
        "a rewrite hidden from size and mtime was missed"
    );
    f.undo(before, after);
    assert_eq!(f.read("a.txt"), b"old content");
}

#[test]
fn a_same_size_rewrite_in_place_right_after_a_snapshot_is_seen_although_its_stat_data_may_not_change()
 {
    let mut f = Fixture::new();
    // Rewritten in place (same inode) within the filesystem's timestamp tick, a file keeps
    // size, mtime and ctime: the racily clean case. Each round is likely to hit it.
    for round in 0..20u8 {
        let old = [b'a' + round % 2; 64];
        let new = [b'c' + round % 2; 64];
        f.write("racy.txt", old);
        let before = f.snapshot();
        f.write("racy.txt", new);
        let after = f.snapshot();
        assert_ne!(
            after, before,
            "round {round}: a same-size rewrite was missed"
        );

        // The same holds between a preview and its restore: the restore checks the paths it
        // is about to change, and a rewrite the stat data may hide is caught there too.
        let plan = f.preview(before, after);
        f.write("racy.txt", old);
        f.write("racy.txt", [b'x'; 64]);
        let err = f.store.restore(&plan, true).unwrap_err();
        assert!(
            matches!(err, Error::WorkspaceChanged),
            "round {round}: {err}"
        );
        assert_eq!(f.read("racy.txt"), [b'x'; 64]);
    }
}

#[test]
fn a_change_elsewhere_after_the_preview_is_kept_and_the_restore_still_runs() {
    let mut f = Fixture::new();
    f.write("a.txt", "one");
    f.write("notes.txt", "mine");
    let before = f.snapshot();
    f.write("a.txt", "two");
    let after = f.snapshot();
    let plan = f.preview(before, after);
    f.write("notes.txt", "mine, edited while the preview was shown");
    let restored = f.store.restore(&plan, false).unwrap();
    assert_eq!(f.read("a.txt"), b"one");
    assert_eq!(
        f.read("notes.txt"),
        b"mine, edited while the preview was shown"
    );
    // Undoing the restore treats that edit as the user's: a conflict, kept.
    let undo = f.preview(plan.current, restored);
    assert_eq!(
        undo.changes,
        vec![
            change("a.txt", Action::Modify, false),
            change("notes.txt", Action::Modify, true),
        ]
    );
    f.store.restore(&undo, false).unwrap();
    assert_eq!(f.read("a.txt"), b"two");
    assert_eq!(
        f.read("notes.txt"),
        b"mine, edited while the preview was shown"
    );
}

#[test]
fn a_workspace_named_through_a_symlink_is_captured() {
    let mut f = Fixture::new();
    f.write("a.txt", "one");
    let alias_dir = tempfile::tempdir().unwrap();
    let alias = alias_dir.path().join("ws");
    std::os::unix::fs::symlink(f.ws.path(), &alias).unwrap();
    let before = f.store.snapshot(&alias).unwrap();
    f.write("a.txt", "two");
    let after = f.store.snapshot(&alias).unwrap();
    let plan = f.store.preview(&alias, before, after).unwrap();
    assert_eq!(plan.changes, vec![change("a.txt", Action::Modify, false)]);
    f.store.restore(&plan, false).unwrap();
    assert_eq!(f.read("a.txt"), b"one");
}

#[test]
fn a_preview_serialises_for_json_output() {
    let mut f = Fixture::with(Options { max_file_bytes: 8 });
    f.write("a.txt", "a");
    f.write("big.txt", "more than eight bytes");
    let before = f.snapshot();
    f.sh("rm a.txt big.txt");
    let after = f.snapshot();
    let plan = f.preview(before, after);
    assert_eq!(
        serde_json::to_value(&plan.changes).unwrap(),
        serde_json::json!([{"path": "a.txt", "action": "recreate", "conflict": false}])
    );
    assert_eq!(
        serde_json::to_value(&plan.unrestorable).unwrap(),
        serde_json::json!([{"path": "big.txt", "reason": "too_large", "size": 21, "limit": 8}])
    );
}
