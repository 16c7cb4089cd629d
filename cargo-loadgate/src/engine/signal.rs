//! A cancellation signal: the caller asks a running phase to stop (Ctrl-C, an abort condition).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::Notify;

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    notify: Notify,
}

/// A cloneable flag that, once cancelled, stays cancelled. Usable from any thread, including a
/// signal-handling task.
#[derive(Clone, Debug, Default)]
pub struct CancellationSignal {
    inner: Arc<Inner>,
}

impl CancellationSignal {
    /// A signal that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: every clone sees it, and every waiter wakes.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::Release);
        self.inner.notify.notify_waiters();
    }

    /// Whether [`CancellationSignal::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// Ends once the signal is cancelled.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn cancel_wakes_waiters_on_other_tasks() {
        let signal = CancellationSignal::new();
        let waiter = signal.clone();
        let task = tokio::spawn(async move { waiter.cancelled().await });
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!signal.is_cancelled());
        signal.cancel();
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("woke")
            .expect("task");
        assert!(signal.is_cancelled());
        // Already cancelled: returns at once.
        signal.cancelled().await;
    }
}
