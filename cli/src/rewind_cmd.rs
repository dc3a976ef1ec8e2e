//! `corvid rewind` and `corvid checkpoints list|prune`: the core's checkpoint operations on a
//! recorded session, for scripts and for sessions no front end is running.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use corvid_core::checkpoints::{self, CheckpointError, RewindPreview, SessionCheckpoints};
use corvid_core::session::{LoadedSession, Record, SessionStore};
use corvid_core::settings::{corvid_home, process_env};
use corvid_protocol::{Message, RewindReport, RewindScope};
use serde_json::json;

use crate::args::{CheckpointsCommand, ReportFormat, RewindArgs};
use crate::wiring::{ConfigError, Setup};

/// Conflicts (the user's later edits) stopped the rewind.
const EXIT_CONFLICTS: u8 = 3;
/// Bad arguments (an unknown session or turn).
const EXIT_USAGE: u8 = 2;

/// How `corvid rewind` ended.
enum Failure {
    /// Exit 2: the message says what to pass instead.
    Usage(String),
    /// Exit 1.
    Failed(String),
}

impl From<CheckpointError> for Failure {
    fn from(e: CheckpointError) -> Self {
        match e {
            CheckpointError::UnknownTurn(_) | CheckpointError::NoTurns => {
                Failure::Usage(e.to_string())
            }
            e => Failure::Failed(e.to_string()),
        }
    }
}

/// Runs `corvid rewind`.
pub fn rewind(setup: &Setup, args: &RewindArgs) -> ExitCode {
    match run(setup, args) {
        Ok(code) => code,
        Err(Failure::Usage(message)) => {
            eprintln!("corvid: {message}");
            ExitCode::from(EXIT_USAGE)
        }
        Err(Failure::Failed(message)) => {
            eprintln!("corvid: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(setup: &Setup, args: &RewindArgs) -> Result<ExitCode, Failure> {
    let home = corvid_home(process_env)
        .ok_or_else(|| Failure::Usage("no home directory: set CORVID_HOME".into()))?;
    let store = SessionStore::new(&home);
    let loaded = match &args.session {
        Some(id) => store
            .load(&setup.cwd, id)
            .map_err(|e| Failure::Usage(e.to_string()))?,
        None => store
            .latest(&setup.cwd)
            .map_err(|e| Failure::Failed(e.to_string()))?
            .ok_or_else(|| {
                Failure::Usage(format!(
                    "no recorded session in {}; pass --session ID",
                    setup.cwd.display()
                ))
            })?,
    };
    let session_id = loaded.header.session_id.clone();
    let cps = SessionCheckpoints::open(
        &home,
        &loaded.header.cwd,
        &session_id,
        setup.settings.checkpoints,
    )?;
    let turn = match args.turn {
        Some(turn) => turn,
        None => cps.last_turn()?,
    };
    let scope = if args.code {
        RewindScope::Code
    } else if args.conversation {
        RewindScope::Conversation
    } else {
        RewindScope::Both
    };
    let preview = cps.preview(turn, scope)?;
    let history_len = u32::try_from(loaded.history().len()).unwrap_or(u32::MAX);
    if preview.keep_messages.is_some_and(|keep| keep > history_len) {
        return Err(Failure::Usage(format!(
            "the conversation was compacted or cleared since turn {turn}, so it cannot be cut \
             back to it; pass --code to restore the files only"
        )));
    }
    let json_out = args.output_format == ReportFormat::Json;
    let stopped = preview.has_conflicts() && !args.overwrite_conflicts && !args.keep_conflicts;
    if args.dry_run || stopped {
        let status = if stopped { "conflicts" } else { "dry_run" };
        print_result(json_out, &session_id, status, &preview, None);
        if stopped && !json_out {
            eprintln!(
                "corvid: files you changed after the agent are in the way (marked CONFLICT); \
                 pass --keep-conflicts to restore the rest and keep them, or \
                 --overwrite-conflicts to replace them too"
            );
        }
        return Ok(if stopped {
            ExitCode::from(EXIT_CONFLICTS)
        } else {
            ExitCode::SUCCESS
        });
    }
    if !args.yes {
        if !json_out {
            say(&preview.to_text());
        }
        if !confirm()? {
            eprintln!("corvid: nothing was rewound");
            return Ok(ExitCode::FAILURE);
        }
    }
    // Taken before any file changes: a session another corvid is running is refused here.
    let recorder = store
        .reopen(&loaded)
        .map_err(|e| Failure::Failed(format!("{e}; rewind it from that corvid (/rewind)")))?;
    let report = cps.rewind(&preview, args.overwrite_conflicts, history_len)?;
    record(&recorder, &loaded, turn, &report)?;
    print_result(json_out, &session_id, "done", &preview, Some(&report));
    Ok(ExitCode::SUCCESS)
}

/// Records the rewind in the session, as a live session would have: the cut, or the note
/// telling the model which files were restored.
fn record(
    recorder: &corvid_core::session::SessionRecorder,
    loaded: &LoadedSession,
    turn: u32,
    report: &RewindReport,
) -> Result<(), Failure> {
    let record = match (
        report.kept_messages,
        checkpoints::restored_files_note(turn, report),
    ) {
        (Some(kept_messages), _) => Record::HistoryRewound { kept_messages },
        (None, Some(note)) => Record::Message {
            message: Message::user_text(note),
        },
        (None, None) => return Ok(()),
    };
    recorder.append(&record).map_err(|e| {
        Failure::Failed(format!(
            "the files were rewound but {} could not record it: {e}",
            loaded.path.display()
        ))
    })
}

/// Writes to stdout; a closed pipe (`| head`) is not worth failing a finished rewind over.
fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

fn confirm() -> Result<bool, Failure> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(Failure::Usage(
            "confirmation needed but stdin is not a terminal; pass --yes (or --dry-run to look)"
                .into(),
        ));
    }
    say("Rewind? [y/N] ");
    let mut answer = String::new();
    stdin
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Failure::Failed(e.to_string()))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

fn print_result(
    json_out: bool,
    session: &str,
    status: &str,
    preview: &RewindPreview,
    report: Option<&RewindReport>,
) {
    if json_out {
        let value = json!({
            "session_id": session,
            "status": status,
            "preview": preview,
            "report": report,
        });
        say(&format!("{value}\n"));
        return;
    }
    match report {
        Some(report) => say(&format!(
            "{}\n",
            report.describe(preview.turn, preview.scope, None)
        )),
        None => say(&preview.to_text()),
    }
}

/// Runs `corvid checkpoints list|prune`.
pub fn checkpoints(setup: &Setup, command: &CheckpointsCommand) -> Result<(), ConfigError> {
    let home = corvid_home(process_env)
        .ok_or_else(|| ConfigError("no home directory: set CORVID_HOME".into()))?;
    match command {
        CheckpointsCommand::List => {
            let project = checkpoints::describe_project(&home, &setup.cwd)
                .map_err(|e| ConfigError(e.to_string()))?;
            say(&format!("store: {}\n", project.dir.display()));
            say(&format!(
                "size: {} in {} checkpoints (budget `checkpoints.maxBytes`: {})\n",
                checkpoints::human_bytes(project.stored_bytes),
                project.snapshots,
                checkpoints::human_bytes(setup.settings.checkpoints.max_bytes)
            ));
            for session in &project.sessions {
                let orphaned = if session.orphaned {
                    " (orphaned: its recording is gone; `corvid checkpoints prune` frees it)"
                } else {
                    ""
                };
                say(&format!(
                    "session {}: {} undoable turn(s){orphaned}\n",
                    session.id, session.turns
                ));
            }
        }
        CheckpointsCommand::Prune { max_bytes } => {
            let budget = max_bytes.unwrap_or(setup.settings.checkpoints.max_bytes);
            let notices = checkpoints::prune_project(&home, &setup.cwd, budget)
                .map_err(|e| ConfigError(e.to_string()))?;
            for notice in &notices {
                say(&format!("{notice}\n"));
            }
            if notices.is_empty() {
                say(&format!(
                    "nothing to prune: the store fits in {} and every session's recording is \
                     there\n",
                    checkpoints::human_bytes(budget)
                ));
            }
        }
    }
    Ok(())
}
