//! Loading a session recording: never panics, whatever the file holds.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use corvid_core::session::SessionStore;
use libfuzzer_sys::fuzz_target;

fn dir() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary folder"))
}

fuzz_target!(|data: &[u8]| {
    let store = SessionStore::new(dir().path());
    let cwd = Path::new("/fuzz/project");
    let folder = store.project_dir(cwd);
    std::fs::create_dir_all(&folder).expect("the session folder");
    std::fs::write(folder.join("fuzz.jsonl"), data).expect("writing the session file");
    if let Ok(session) = store.load(cwd, "fuzz") {
        let _ = session.history();
        let _ = session.whole_history();
        let _ = session.recorded_model();
        let _ = session.recorded_approval_mode();
        let _ = session.model_turns();
        let _ = session.since_clear();
    }
});
