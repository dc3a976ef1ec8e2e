//! Bulk steps of a turn wait until the work already ready on their worker has run.
//!
//! A turn mostly forwards small stream events (a chunk in, a card out), but two of its steps
//! are bulk: sending a model request (building the body, connecting, writing tens of KB) and
//! running a tool. With many sessions on few cores, a bulk step taken in the same poll that
//! emitted a card holds the worker while other sessions' chunks wait behind it in the queue.
//! At 100 sessions on two cores that wait was most of finish → `in_progress` (p99 12–28 ms;
//! `cargo bench -p corvid-cli --bench acp_sessions -- --keep-alive`, issue 16).

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Semaphore;

/// Lets the work already ready on this worker run before the caller's next step.
///
/// tokio runs a task that yields only once its worker has run out of queued tasks, or at the
/// worker's periodic I/O poll (after the I/O it finds), so every chunk already read, and every
/// card already due, goes first. When nothing else is ready this costs one non-blocking poll of
/// the I/O driver.
///
/// The yield alone let every waiting bulk step go at the same poll: 100 sessions prompted at
/// once queued 100 request sends, and the first chunks read after that poll waited behind all
/// of them (chunk → preparing p99 5–7 ms). So bulk steps take turns: at most [`BULK_TURNS`]
/// of a runtime are between their yield and their work at once, and a chunk read meanwhile
/// waits behind about that many bulk steps, not behind every session's.
pub(super) async fn after_ready_work() {
    // The semaphore is never closed, so `acquire` cannot fail; should it ever, or should this
    // run outside tokio, the step simply goes without its turn.
    let gate = tokio::runtime::Handle::try_current()
        .ok()
        .map(|runtime| gate_of(runtime.id()));
    let turn = match &gate {
        Some(gate) => gate.acquire().await.ok(),
        None => None,
    };
    tokio::task::yield_now().await;
    drop(turn);
}

/// How many bulk steps may be released at one I/O poll: one per worker of the 2-core machine
/// measured best (`cargo bench -p corvid-cli --bench acp_sessions`; 1 left a worker idle).
const BULK_TURNS: usize = 2;

/// The turns of [`after_ready_work`] of each runtime, shared by all its sessions (FIFO, so no
/// session's bulk step waits for long).
///
/// Per runtime, not per process: the turns are about the queues of one runtime's workers, and
/// a step must never wait for another runtime's. A test thread's runtime between two polls
/// (or one no longer driven) held turns that every other runtime of the process waited for;
/// under a paused clock the waiting runtime, idle, let time jump to its next timer, and a
/// turn "never finished" (issue 33). corvid itself runs one runtime.
static GATES: Mutex<Vec<(tokio::runtime::Id, Arc<Semaphore>)>> = Mutex::new(Vec::new());

/// The gate of runtime `id`, made on its first bulk step.
fn gate_of(id: tokio::runtime::Id) -> Arc<Semaphore> {
    let mut gates = GATES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, gate)) = gates.iter().find(|(of, _)| *of == id) {
        return gate.clone();
    }
    // A gate only this list holds has no step waiting for or taking a turn: forgetting it loses
    // nothing (its runtime, perhaps gone, gets a new one), and the list stays as short as the
    // number of runtimes taking turns right now.
    gates.retain(|(_, gate)| Arc::strong_count(gate) > 1);
    let gate = Arc::new(Semaphore::new(BULK_TURNS));
    gates.push((id, gate.clone()));
    gate
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::{BULK_TURNS, GATES, after_ready_work, gate_of};

    /// What the tasks of a test did, in the order they did it.
    type Order = Arc<Mutex<Vec<&'static str>>>;

    /// A task that records "hot" once woken through the returned sender.
    fn spawn_hot(
        order: &Order,
    ) -> (
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    ) {
        let (wake_tx, wake_rx) = tokio::sync::oneshot::channel::<()>();
        let order = order.clone();
        let hot = tokio::spawn(async move {
            wake_rx.await.ok();
            order.lock().unwrap().push("hot");
        });
        (wake_tx, hot)
    }

    /// A task woken while a bulk step is running goes first, even though it was queued later.
    #[tokio::test]
    async fn a_task_woken_before_the_bulk_step_runs_first() {
        let order = Order::default();
        let (wake_tx, hot) = spawn_hot(&order);
        let bulk = tokio::spawn({
            let order = order.clone();
            async move {
                order.lock().unwrap().push("card");
                wake_tx.send(()).ok();
                after_ready_work().await;
                order.lock().unwrap().push("bulk");
            }
        });
        bulk.await.unwrap();
        hot.await.unwrap();
        assert_eq!(*order.lock().unwrap(), ["card", "hot", "bulk"]);
    }

    /// Bulk steps released together take turns: a task woken by the first one's work runs
    /// after at most [`BULK_TURNS`] of them, not after all ten (with a bare yield it ran last).
    #[tokio::test]
    async fn bulk_steps_take_turns_so_woken_work_does_not_wait_behind_all_of_them() {
        let order = Order::default();
        let (wake_tx, hot) = spawn_hot(&order);
        let mut wake_tx = Some(wake_tx);
        let mut steps = Vec::new();
        for _ in 0..10 {
            let order = order.clone();
            let wake = wake_tx.take();
            steps.push(tokio::spawn(async move {
                after_ready_work().await;
                order.lock().unwrap().push("bulk");
                if let Some(wake) = wake {
                    wake.send(()).ok();
                }
            }));
        }
        for step in steps {
            step.await.unwrap();
        }
        hot.await.unwrap();
        let order = order.lock().unwrap();
        let hot_at = order.iter().position(|&entry| entry == "hot").unwrap();
        assert!(
            hot_at <= BULK_TURNS,
            "the woken task ran after {hot_at} bulk steps: {order:?}"
        );
    }

    /// Issue 33: another runtime's steps, stopped with every turn of their gate taken, do not
    /// hold this runtime's (on a paused clock the wait let time jump to the 1 h timeout).
    #[test]
    fn a_runtime_takes_its_turns_while_another_runtime_holds_all_of_its_own() {
        let other = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let other_gate = gate_of(other.handle().id());
        other.block_on(async {
            for _ in 0..BULK_TURNS {
                tokio::spawn(after_ready_work());
            }
            while other_gate.available_permits() > 0 {
                tokio::task::yield_now().await;
            }
        });
        let paused = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let took_turn = paused.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(3600), after_ready_work()).await
        });
        assert!(
            took_turn.is_ok(),
            "the step waited for another runtime's turns"
        );
        assert_eq!(other_gate.available_permits(), 0);
    }

    /// A test process makes thousands of runtimes: the gates of those gone are not kept.
    #[test]
    fn the_gates_of_runtimes_that_are_gone_are_forgotten() {
        let mut ids = Vec::new();
        for _ in 0..20 {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            ids.push(runtime.handle().id());
            runtime.block_on(after_ready_work());
        }
        let gates = GATES.lock().unwrap();
        let kept = gates.iter().filter(|(id, _)| ids.contains(id)).count();
        assert!(kept <= 1, "{kept} gates of finished runtimes are kept");
    }
}
