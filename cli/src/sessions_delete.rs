//! `corvid sessions delete ID [--yes]`: deletes a recorded session and frees the checkpoints
//! only it needed (they live as long as the recording, issue 26). Asks first on a terminal;
//! elsewhere `--yes` must say so.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use anyhow::bail;
use corvid_core::session::{SessionStore, is_session_id};

/// Deletes session `id` of the project `cwd` after `confirm` agreed (skipped with `yes`).
pub fn delete_session(
    store: &SessionStore,
    cwd: &Path,
    id: &str,
    yes: bool,
    confirm: impl FnOnce(&str) -> anyhow::Result<bool>,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    if !is_session_id(id) {
        bail!(
            "{id:?} is not a session id: corvid's ids are letters, digits and `-` (as `corvid \
             sessions list` shows them)"
        );
    }
    // Found first, so an unknown id is an error before any question is asked.
    let session = store.load(cwd, id)?;
    let full = &session.header.session_id;
    if full != id {
        return Err(corvid_core::session::SessionError::NotFullId {
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
