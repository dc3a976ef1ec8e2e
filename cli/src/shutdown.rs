//! Stopping on a signal by unwinding instead of dying: the work future is dropped, so its
//! sessions end and their MCP servers are killed (a server that ignores the end of its stdin
//! would otherwise outlive corvid).

use std::future::Future;
use std::process::ExitCode;

use tokio::signal::unix::{SignalKind, signal};

/// Which signals stop the work besides SIGTERM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlsoStopOn {
    /// SIGTERM only: the mode handles SIGINT itself (headless cancels its task).
    Nothing,
    /// SIGINT too (ACP, where nothing else listens for it).
    Interrupt,
}

/// Runs `work` to its end, or until a stop signal arrives: then `work` is dropped and the
/// exit code is 128 plus the signal's number. A signal that cannot be listened for keeps its
/// default action.
pub async fn until_stopped(work: impl Future<Output = ExitCode>, also: AlsoStopOn) -> ExitCode {
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = match also {
        AlsoStopOn::Interrupt => signal(SignalKind::interrupt()).ok(),
        AlsoStopOn::Nothing => None,
    };
    let term_received = async {
        match term.as_mut() {
            Some(s) => s.recv().await,
            None => std::future::pending().await,
        }
    };
    let int_received = async {
        match int.as_mut() {
            Some(s) => s.recv().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        code = work => code,
        _ = term_received => {
            tracing::info!("SIGTERM received; stopping");
            ExitCode::from(143)
        }
        _ = int_received => {
            tracing::info!("SIGINT received; stopping");
            ExitCode::from(130)
        }
    }
}
