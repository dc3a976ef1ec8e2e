//! Shell commands in the client's terminals (`terminal/*`), so the editor shows their output
//! live on the tool card.
//!
//! A client terminal runs in the editor's process, outside corvid's OS sandbox. The shell tool
//! therefore hands over only commands that would run unconfined anyway (`tools.sandbox: off`,
//! a sandbox that cannot be set up here, or an approved `outside_sandbox` call); sandboxed
//! commands keep running locally. Every terminal is released, and killed first unless it
//! exited, whatever happens to the call (a dropped call included).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, EnvVariable, KillTerminalRequest, ReleaseTerminalRequest, SessionId,
    SessionNotification, SessionUpdate, Terminal, TerminalExitStatus, TerminalId,
    TerminalOutputRequest, ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
    WaitForTerminalExitRequest,
};
use agent_client_protocol::{Client, Error};
use corvid_tools::ToolError;
use corvid_tools::shell::{CommandHost, HostedCommand, HostedRun};
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// Which cards show which terminal. The embedding update must follow the card's own
/// `in_progress` frame, which the session pump sends from another task, so the pump reports
/// each card it sent and an embedding waits here until its card is out.
#[derive(Debug, Default)]
pub struct TerminalCards {
    inner: Mutex<Cards>,
}

#[derive(Debug, Default)]
struct Cards {
    /// Calls whose `in_progress` frame went out and that have not finished.
    started: HashSet<String>,
    /// Embeddings waiting for their card.
    pending: HashMap<String, TerminalId>,
    /// The terminal each running call shows, kept on its final update.
    shown: HashMap<String, TerminalId>,
}

impl TerminalCards {
    /// Called by the pump once the `in_progress` card of `call_id` is out: the card gets its
    /// waiting terminal.
    pub(crate) fn forwarded(&self, call_id: &str, cx: &ConnectionTo<Client>, sid: &SessionId) {
        let mut cards = self.lock();
        cards.started.insert(call_id.to_owned());
        // Sent under the lock (sending only queues), so no embedding overtakes it.
        if let Some(terminal) = cards.pending.remove(call_id) {
            send_embedding(cx, sid, call_id, terminal);
        }
    }

    /// Shows `terminal` on the card of `call_id`, now or as soon as the card is out.
    fn embed(
        &self,
        cx: &ConnectionTo<Client>,
        sid: &SessionId,
        call_id: &str,
        terminal: TerminalId,
    ) {
        let mut cards = self.lock();
        cards.shown.insert(call_id.to_owned(), terminal.clone());
        if cards.started.contains(call_id) {
            send_embedding(cx, sid, call_id, terminal);
        } else {
            cards.pending.insert(call_id.to_owned(), terminal);
        }
    }

    /// The terminal to keep on a finished call's card; forgets the call.
    pub(crate) fn finish(&self, call_id: &str) -> Option<TerminalId> {
        let mut cards = self.lock();
        cards.started.remove(call_id);
        cards.pending.remove(call_id);
        cards.shown.remove(call_id)
    }

    fn lock(&self) -> MutexGuard<'_, Cards> {
        // Every critical section is a few set updates; a poisoned lock is still consistent.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The card's content becomes the live terminal.
fn send_embedding(cx: &ConnectionTo<Client>, sid: &SessionId, call_id: &str, terminal: TerminalId) {
    let fields = ToolCallUpdateFields::new()
        .content(vec![ToolCallContent::Terminal(Terminal::new(terminal))]);
    let update = SessionNotification::new(
        sid.clone(),
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.to_owned(), fields)),
    );
    if let Err(e) = cx.send_notification(update) {
        tracing::debug!(error = %e, "could not show the terminal on its card");
    }
}

/// Runs commands in the client's terminals.
#[derive(Debug)]
pub struct ClientTerminals {
    cx: ConnectionTo<Client>,
    session_id: SessionId,
    cards: Arc<TerminalCards>,
}

impl ClientTerminals {
    /// The command host of a session, when the client advertised `terminal`.
    pub(crate) fn for_session(
        offered: bool,
        cx: ConnectionTo<Client>,
        session_id: SessionId,
        cards: Arc<TerminalCards>,
    ) -> Option<Arc<dyn CommandHost>> {
        offered.then(|| {
            Arc::new(Self {
                cx,
                session_id,
                cards,
            }) as Arc<dyn CommandHost>
        })
    }
}

impl CommandHost for ClientTerminals {
    fn run(
        &self,
        command: HostedCommand,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<HostedRun, ToolError>> {
        let run = Run {
            cx: self.cx.clone(),
            sid: self.session_id.clone(),
            cards: self.cards.clone(),
        };
        // A task of its own, so kill and release still happen when the call is dropped.
        let task = tokio::spawn(run.run(command, cancel));
        async move {
            task.await
                .unwrap_or_else(|e| Err(ToolError::new(format!("the terminal task failed: {e}"))))
        }
        .boxed()
    }
}

/// How waiting for the command ended.
enum Ended {
    Exited(TerminalExitStatus),
    Failed(Error),
    TimedOut,
    Cancelled,
}

struct Run {
    cx: ConnectionTo<Client>,
    sid: SessionId,
    cards: Arc<TerminalCards>,
}

impl Run {
    async fn run(
        self,
        command: HostedCommand,
        cancel: CancellationToken,
    ) -> Result<HostedRun, ToolError> {
        let env = command
            .env
            .iter()
            .map(|(name, value)| EnvVariable::new(name.clone(), value.clone()))
            .collect();
        let create = CreateTerminalRequest::new(self.sid.clone(), command.program.clone())
            .args(command.args.clone())
            .env(env)
            .cwd(command.cwd.clone())
            .output_byte_limit(command.output_limit);
        // Not raced with the cancel: a terminal created after we stopped waiting would leak.
        let created = self
            .cx
            .send_request(create)
            .block_task()
            .await
            .map_err(|e| refused("start the command", &e))?;
        let id = created.terminal_id;
        // A call cancelled while the client was creating the terminal may be finished already:
        // its card must not show the terminal, and there is nothing to wait for.
        let ended = if cancel.is_cancelled() {
            Ended::Cancelled
        } else {
            self.cards
                .embed(&self.cx, &self.sid, &command.call_id, id.clone());
            self.wait(&id, &command, &cancel).await
        };
        if !matches!(ended, Ended::Exited(_)) {
            let kill = KillTerminalRequest::new(self.sid.clone(), id.clone());
            if let Err(e) = self.cx.send_request(kill).block_task().await {
                tracing::debug!(error = %e, terminal = %id.0, "terminal/kill failed");
            }
        }
        let output = match ended {
            Ended::Exited(_) | Ended::TimedOut => Some(
                self.cx
                    .send_request(TerminalOutputRequest::new(self.sid.clone(), id.clone()))
                    .block_task()
                    .await,
            ),
            Ended::Cancelled | Ended::Failed(_) => None,
        };
        let release = ReleaseTerminalRequest::new(self.sid.clone(), id.clone());
        if let Err(e) = self.cx.send_request(release).block_task().await {
            tracing::debug!(error = %e, terminal = %id.0, "terminal/release failed");
        }
        match (ended, output) {
            (Ended::Cancelled, _) => Err(ToolError::new(
                "cancelled: the command was killed in the editor's terminal",
            )),
            (Ended::Failed(e), _) => Err(refused("wait for the command", &e)),
            (_, Some(Err(e))) => Err(refused("read the command's output", &e)),
            (_, None) => Err(ToolError::new(
                "the editor's terminal gave no output for the command",
            )),
            (ended, Some(Ok(output))) => {
                let timed_out = matches!(ended, Ended::TimedOut);
                let status = match ended {
                    Ended::Exited(status) => Some(status),
                    // Killed: its exit status says only that it was killed.
                    _ => None,
                };
                Ok(HostedRun {
                    output: output.output,
                    truncated: output.truncated,
                    exit_code: status.as_ref().and_then(|s| s.exit_code),
                    signal: status.and_then(|s| s.signal),
                    timed_out,
                    terminal_id: Some(id.0.to_string()),
                })
            }
        }
    }
}

impl Run {
    /// Waits for the command's exit, its timeout or the cancel, whichever comes first.
    async fn wait(
        &self,
        id: &TerminalId,
        command: &HostedCommand,
        cancel: &CancellationToken,
    ) -> Ended {
        let wait = self.cx.send_request(WaitForTerminalExitRequest::new(
            self.sid.clone(),
            id.clone(),
        ));
        tokio::select! {
            biased;
            () = cancel.cancelled() => Ended::Cancelled,
            () = tokio::time::sleep(command.timeout) => Ended::TimedOut,
            answer = wait.block_task() => match answer {
                Ok(exit) => Ended::Exited(exit.exit_status),
                Err(e) => Ended::Failed(e),
            },
        }
    }
}

/// A client error as a tool error naming what failed.
fn refused(what: &str, error: &Error) -> ToolError {
    ToolError::new(format!(
        "the editor's terminal could not {what}: {}",
        error.message
    ))
}
