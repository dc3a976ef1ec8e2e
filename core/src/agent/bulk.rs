//! Bulk steps of a turn wait until the work already ready on their worker has run.
//!
//! A turn mostly forwards small stream events (a chunk in, a card out), but two of its steps
//! are bulk: sending a model request (building the body, connecting, writing tens of KB) and
//! running a tool. With many sessions on few cores, a bulk step taken in the same poll that
//! emitted a card holds the worker while other sessions' chunks wait behind it in the queue.
//! At 100 sessions on two cores that wait was most of finish → `in_progress` (p99 12–28 ms;
//! `cargo bench -p corvid-cli --bench acp_sessions -- --keep-alive`, issue 16).

/// Lets the work already ready on this worker run before the caller's next step.
///
/// tokio runs a task that yields only once its worker has run out of queued tasks, or at the
/// worker's periodic I/O poll (after the I/O it finds), so every chunk already read, and every
/// card already due, goes first. When nothing else is ready this costs one non-blocking poll of
/// the I/O driver.
pub(super) async fn after_ready_work() {
    tokio::task::yield_now().await;
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::after_ready_work;

    /// A task woken while a bulk step is running goes first, even though it was queued later.
    #[tokio::test]
    async fn a_task_woken_before_the_bulk_step_runs_first() {
        let order = Arc::new(Mutex::new(Vec::new()));
        let (wake_tx, wake_rx) = tokio::sync::oneshot::channel::<()>();
        let hot = tokio::spawn({
            let order = order.clone();
            async move {
                wake_rx.await.ok();
                order.lock().unwrap().push("hot");
            }
        });
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
}
