//! `corvid sessions list` (SPEC §1.1, §9): this project's recorded sessions, so people can
//! find the one to resume. A fork (`/branch`, `--fork`) is listed under its parent, indented
//! and marked; `--output-format json` carries each session's `forkedFrom`.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;

use corvid_core::session::{SessionHealth, SessionStore, SessionSummary, utc_minutes};
use serde_json::json;

use crate::args::ReportFormat;
use crate::sessions_cmd::{DETAIL_WIDTH, one_line};

/// Longest first prompt shown in a listing row.
pub(crate) const PROMPT_WIDTH: usize = 60;
/// Deepest fork shown indented further (a deeper family stays readable).
const MAX_INDENT: usize = 4;

/// Prints this project's recorded sessions, newest first, each fork right under its parent:
/// id, start time (UTC), model and the first prompt on one line; a friendly line when there
/// are none. As JSON: one array of sessions.
pub fn list_sessions(
    store: &SessionStore,
    cwd: &Path,
    format: ReportFormat,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let sessions = store.list(cwd)?;
    if format == ReportFormat::Json {
        let listed: Vec<serde_json::Value> = sessions.iter().map(json_row).collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&listed)?)?;
        return Ok(());
    }
    if sessions.is_empty() {
        writeln!(
            out,
            "No recorded sessions for {} yet; sessions are recorded as you work.",
            cwd.display()
        )?;
        return Ok(());
    }
    let rows: Vec<[String; 4]> = family_order(&sessions)
        .into_iter()
        .map(|(session, depth)| list_row(session, depth))
        .collect();
    let header = [
        "ID".to_owned(),
        "STARTED (UTC)".to_owned(),
        "MODEL".to_owned(),
        "TITLE OR FIRST PROMPT".to_owned(),
    ];
    let widths: Vec<usize> = (0..3)
        .map(|col| {
            std::iter::once(&header)
                .chain(&rows)
                .map(|row| row[col].chars().count())
                .max()
                .unwrap_or_default()
        })
        .collect();
    for row in std::iter::once(&header).chain(&rows) {
        let line = format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// The sessions (newest first) with each fork right after its parent, and its depth in the
/// family. A fork whose parent is gone is a root; forks naming each other in a loop (a
/// hand-edited file) are listed once each, as roots.
fn family_order(sessions: &[SessionSummary]) -> Vec<(&SessionSummary, usize)> {
    let ids: HashSet<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    fn parent_of<'a>(s: &'a SessionSummary, ids: &HashSet<&str>) -> Option<&'a str> {
        s.forked_from
            .as_ref()
            .map(|f| f.session_id.as_str())
            .filter(|p| *p != s.id && ids.contains(p))
    }
    let mut children: HashMap<&str, Vec<&SessionSummary>> = HashMap::new();
    for s in sessions {
        if let Some(parent) = parent_of(s, &ids) {
            children.entry(parent).or_default().push(s);
        }
    }
    let mut order = Vec::with_capacity(sessions.len());
    let mut seen: HashSet<&str> = HashSet::new();
    let roots = sessions.iter().filter(|s| parent_of(s, &ids).is_none());
    // Sessions only reachable through a loop come last, each as a root.
    for root in roots.chain(sessions.iter()) {
        let mut stack = vec![(root, 0usize)];
        while let Some((s, depth)) = stack.pop() {
            if !seen.insert(s.id.as_str()) {
                continue;
            }
            order.push((s, depth));
            if let Some(kids) = children.get(s.id.as_str()) {
                // Reversed onto the stack: the newest child comes out first.
                stack.extend(kids.iter().rev().map(|k| (*k, depth + 1)));
            }
        }
    }
    order
}

fn list_row(session: &SessionSummary, depth: usize) -> [String; 4] {
    let prompt = match &session.title {
        Some(title) => one_line(title, PROMPT_WIDTH),
        None if session.first_prompt.trim().is_empty() => "(no prompt)".to_owned(),
        None => one_line(&session.first_prompt, PROMPT_WIDTH),
    };
    // Damaged sessions are shown, marked, instead of hidden: the user can still resume or read them.
    let prompt = match &session.health {
        SessionHealth::Intact => prompt,
        SessionHealth::Damaged { warnings } => {
            let n = warnings.len();
            let lines = if n == 1 { "line" } else { "lines" };
            format!("[damaged: {n} {lines} skipped] {prompt}")
        }
        SessionHealth::Unreadable { reason } => {
            format!("[unreadable: {}]", one_line(reason, DETAIL_WIDTH))
        }
    };
    let prompt = match &session.forked_from {
        Some(from) => {
            let at = match from.turn {
                Some(turn) => format!(" before turn {turn}"),
                None => String::new(),
            };
            let parent = one_line(&from.session_id, 12);
            format!("[fork of {parent}{at}] {prompt}")
        }
        None => prompt,
    };
    // A fork listed under its parent is indented under it.
    let id = match depth {
        0 => session.id.clone(),
        d => format!("{}└ {}", "  ".repeat((d - 1).min(MAX_INDENT)), session.id),
    };
    [
        id,
        utc_minutes(session.started_at_ms),
        one_line(&session.model, DETAIL_WIDTH),
        prompt,
    ]
}

fn json_row(session: &SessionSummary) -> serde_json::Value {
    let health = match &session.health {
        SessionHealth::Intact => json!({"state": "intact"}),
        SessionHealth::Damaged { warnings } => json!({"state": "damaged", "warnings": warnings}),
        SessionHealth::Unreadable { reason } => json!({"state": "unreadable", "reason": reason}),
    };
    json!({
        "id": session.id,
        "path": session.path,
        "startedAtMs": session.started_at_ms,
        "model": session.model,
        "firstPrompt": session.first_prompt,
        "title": session.title,
        "health": health,
        "forkedFrom": session.forked_from,
    })
}

#[cfg(test)]
mod tests {
    use corvid_core::session::{ForkedFrom, RECORD_VERSION, Record, RecordHeader};
    use corvid_protocol::Message;
    use pretty_assertions::assert_eq;

    use super::*;

    const NOV_30: u64 = 1_796_029_200_000;

    fn write(
        store: &SessionStore,
        cwd: &Path,
        id: &str,
        minutes: u64,
        parent: Option<(&str, Option<u32>)>,
    ) {
        let dir = store.project_dir(cwd);
        std::fs::create_dir_all(&dir).unwrap();
        let header = Record::Header(RecordHeader {
            version: RECORD_VERSION,
            session_id: id.into(),
            cwd: cwd.into(),
            model: "m".into(),
            started_at_ms: NOV_30 + minutes * 60_000,
            forked_from: parent.map(|(p, turn)| ForkedFrom {
                session_id: p.into(),
                turn,
            }),
        });
        let prompt = Record::Message {
            message: Message::user_text(format!("prompt of {id}")),
        };
        let text = format!(
            "{}\n{}\n",
            serde_json::to_string(&header).unwrap(),
            serde_json::to_string(&prompt).unwrap()
        );
        std::fs::write(dir.join(format!("{id}.jsonl")), text).unwrap();
    }

    fn listed(store: &SessionStore, cwd: &Path, format: ReportFormat) -> String {
        let mut out = Vec::new();
        list_sessions(store, cwd, format, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn forks_are_listed_under_their_parent_and_a_loop_of_forks_is_listed_once_each() {
        let home = tempfile::tempdir().unwrap();
        let cwd = Path::new("/work/project");
        let store = SessionStore::new(home.path());
        write(&store, cwd, "p1", 0, None);
        write(&store, cwd, "p2", 10, None);
        write(&store, cwd, "f1", 20, Some(("p1", Some(2))));
        write(&store, cwd, "f2", 30, Some(("f1", None)));
        write(&store, cwd, "orphan", 40, Some(("gone", None)));
        write(&store, cwd, "la", 1, Some(("lb", None)));
        write(&store, cwd, "lb", 2, Some(("la", None)));
        assert_eq!(
            listed(&store, cwd, ReportFormat::Text),
            "\
ID      STARTED (UTC)     MODEL  TITLE OR FIRST PROMPT
orphan  2026-11-30 09:40  m      [fork of gone] prompt of orphan
p2      2026-11-30 09:10  m      prompt of p2
p1      2026-11-30 09:00  m      prompt of p1
└ f1    2026-11-30 09:20  m      [fork of p1 before turn 2] prompt of f1
  └ f2  2026-11-30 09:30  m      [fork of f1] prompt of f2
lb      2026-11-30 09:02  m      [fork of la] prompt of lb
└ la    2026-11-30 09:01  m      [fork of lb] prompt of la
"
        );
    }

    #[test]
    fn the_json_listing_carries_each_sessions_forked_from() {
        let home = tempfile::tempdir().unwrap();
        let cwd = Path::new("/work/project");
        let store = SessionStore::new(home.path());
        write(&store, cwd, "p1", 0, None);
        write(&store, cwd, "f1", 20, Some(("p1", Some(2))));
        let value: serde_json::Value =
            serde_json::from_str(&listed(&store, cwd, ReportFormat::Json)).unwrap();
        assert_eq!(value[0]["id"], "f1");
        assert_eq!(
            value[0]["forkedFrom"],
            json!({"sessionId": "p1", "turn": 2})
        );
        assert_eq!(value[1]["id"], "p1");
        assert_eq!(value[1]["forkedFrom"], serde_json::Value::Null);
        assert_eq!(value[1]["firstPrompt"], "prompt of p1");
    }
}
