//! `session/list` (issue 14 item 17): the recorded sessions of a working directory, newest
//! first, as `session/load` takes them.

use agent_client_protocol::v1::schema::{ListSessionsRequest, ListSessionsResponse, SessionInfo};
use agent_client_protocol::{Error, ErrorCode};
use corvid_core::session::{SessionHealth, SessionStore, utc_iso8601, utc_minutes};
use serde_json::json;

/// How much of a session's first prompt its title shows.
const TITLE_CHARS: usize = 80;

/// The sessions recorded for the request's `cwd` (corvid's own working directory when the
/// client gives none). Every session fits in one page.
pub(crate) fn list_sessions(
    store: Option<SessionStore>,
    req: &ListSessionsRequest,
) -> Result<ListSessionsResponse, Error> {
    let cwd = match &req.cwd {
        Some(cwd) if cwd.is_absolute() => cwd.clone(),
        Some(cwd) => {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!("cwd must be an absolute path, got `{}`", cwd.display()),
            ));
        }
        None => std::env::current_dir().map_err(|e| {
            Error::new(
                ErrorCode::INVALID_PARAMS,
                format!("no cwd given and corvid's own working directory is unknown: {e}"),
            )
        })?,
    };
    let Some(store) = store else {
        // Nothing is recorded, so there is nothing to list (and nothing to load).
        return Ok(ListSessionsResponse::new(Vec::new()));
    };
    let sessions = store.list(&cwd).map_err(|e| {
        Error::new(
            ErrorCode::INTERNAL_ERROR,
            format!("cannot list the sessions of {}: {e}", cwd.display()),
        )
    })?;
    let infos = sessions
        .into_iter()
        // A session that cannot be loaded is no use to a client that would load it.
        .filter(|s| !matches!(s.health, SessionHealth::Unreadable { .. }))
        .map(|s| {
            let mut meta = serde_json::Map::new();
            meta.insert(
                "corvid".into(),
                json!({
                    "model": s.model,
                    "startedAt": utc_minutes(s.started_at_ms),
                    "damaged": matches!(s.health, SessionHealth::Damaged { .. }),
                }),
            );
            SessionInfo::new(s.id, cwd.clone())
                // The fast model's title when the session has one, else the first prompt.
                .title(title(s.title.as_deref().unwrap_or(&s.first_prompt)))
                .updated_at(updated_at(&s.path, s.started_at_ms))
                .meta(meta)
        })
        .collect();
    Ok(ListSessionsResponse::new(infos))
}

/// When the session last changed: its recording's last write (every record is appended as it
/// happens), else its start.
fn updated_at(path: &std::path::Path, started_at_ms: u64) -> String {
    let written = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| u64::try_from(d.as_millis()).ok());
    utc_iso8601(written.unwrap_or(started_at_ms).max(started_at_ms))
}

/// The first line of a title or the first prompt, cut to a title's length.
fn title(first_prompt: &str) -> String {
    let line = first_prompt.lines().next().unwrap_or_default().trim();
    let mut title: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        title.push('…');
    }
    title
}
