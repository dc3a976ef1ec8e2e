//! `corvid sessions delete ID [--yes]`: deletes a recorded session and frees the checkpoints
//! only it needed (they live as long as the recording, issue 26). Asks first on a terminal;
//! elsewhere `--yes` must say so.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use anyhow::bail;
use corvid_core::session::{SessionError, SessionStore};

/// Deletes session `id` of the project `cwd` after `confirm` agreed (skipped with `yes`).
pub fn delete_session(
    store: &SessionStore,
    cwd: &Path,
    id: &str,
    yes: bool,
    confirm: impl FnOnce(&str) -> anyhow::Result<bool>,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    // Found first (an id that could name a path is refused here), so an unknown id is an
    // error before any question is asked.
    let session = store.load(cwd, id)?;
    let full = &session.header.session_id;
    if full != id {
        return Err(SessionError::NotFullId {
            id: id.to_owned(),
            full: full.clone(),
        }
        .into());
    }
    if !yes
        && !confirm(&format!(
            "Delete session {full} and its checkpoints (its turns can no longer be resumed or \
             undone)? [y/N] "
        ))?
    {
        writeln!(out, "Nothing was deleted.")?;
        return Ok(());
    }
    let freed = store.delete(cwd, id)?;
    writeln!(out, "Deleted session {full}.")?;
    if let Some(freed) = freed {
        writeln!(out, "{freed}")?;
    }
    Ok(())
}

/// Asks on the terminal; without one there is nobody to ask, so `--yes` must be passed.
pub fn ask_on_terminal(question: &str) -> anyhow::Result<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        bail!("deleting a session needs a confirmation but stdin is not a terminal; pass --yes");
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(question.as_bytes())?;
    stdout.flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

#[cfg(test)]
mod tests {
    use corvid_core::session::Record;
    use corvid_protocol::Message;

    use super::*;

    #[test]
    fn the_question_names_the_session_and_a_no_deletes_nothing() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let store = SessionStore::new(home.path());
        let recorder = store.create(cwd.path(), "s-1", "m").unwrap();
        recorder
            .append(&Record::Message {
                message: Message::user_text("hello"),
            })
            .unwrap();
        drop(recorder);
        let mut asked = String::new();
        let mut out = Vec::new();
        delete_session(
            &store,
            cwd.path(),
            "s-1",
            false,
            |question| {
                asked = question.to_owned();
                Ok(false)
            },
            &mut out,
        )
        .unwrap();
        assert!(
            asked.starts_with("Delete session s-1 and its checkpoints"),
            "{asked}"
        );
        assert_eq!(String::from_utf8(out).unwrap(), "Nothing was deleted.\n");
        assert!(store.load(cwd.path(), "s-1").is_ok());

        let mut out = Vec::new();
        delete_session(&store, cwd.path(), "s-1", false, |_| Ok(true), &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "Deleted session s-1.\n");
        assert!(store.load(cwd.path(), "s-1").is_err());
    }
}
