//! [`Op::Rewind`](corvid_protocol::Op::Rewind) on a live session: the files through the
//! session's checkpoints, the history here (the actor owns it), one `Rewound` event for both.

use corvid_protocol::{CoreEvent, Message, Messages, RewindReport, RewindScope};

use super::session::{Emitter, SessionState, Static};
use crate::checkpoints::{CheckpointError, SessionCheckpoints};

/// Rewinds `scope` to before `turn`, between tasks.
pub(super) async fn rewind(
    stat: &Static,
    state: &mut SessionState,
    events: &Emitter,
    turn: u32,
    scope: RewindScope,
    overwrite_conflicts: bool,
) -> bool {
    let result = match &stat.policy.checkpoints {
        None => Err(
            "checkpoints are off in this session (`checkpoints.enabled`), so nothing can be \
             rewound"
                .to_owned(),
        ),
        Some(checkpoints) => {
            let checkpoints = checkpoints.clone();
            let history_len = u32::try_from(state.history.len()).unwrap_or(u32::MAX);
            tokio::task::spawn_blocking(move || {
                run(&checkpoints, turn, scope, overwrite_conflicts, history_len)
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()))
        }
    };
    let (report, error) = match result {
        Ok(report) => (report, None),
        Err(e) => (RewindReport::default(), Some(e)),
    };
    let cut = error.is_none();
    if cut {
        if let Some(keep) = report.kept_messages {
            let kept: Vec<Message> = state.history.iter().take(keep as usize).cloned().collect();
            state.replace_history(Messages::from(kept));
        } else if let Some(note) = crate::checkpoints::restored_files_note(turn, &report) {
            state.append(Message::user_text(note));
        }
    }
    events.emit(CoreEvent::Rewound {
        turn,
        scope,
        report,
        error,
    });
    cut
}

fn run(
    checkpoints: &SessionCheckpoints,
    turn: u32,
    scope: RewindScope,
    overwrite_conflicts: bool,
    history_len: u32,
) -> Result<RewindReport, CheckpointError> {
    let preview = checkpoints.preview(turn, scope)?;
    if let Some(keep) = preview.keep_messages
        && keep > history_len
    {
        return Err(CheckpointError::Off(format!(
            "the conversation was compacted or cleared since turn {turn}, so it cannot be cut \
             back to it; rewind the code only"
        )));
    }
    checkpoints.rewind(&preview, overwrite_conflicts, history_len)
}
