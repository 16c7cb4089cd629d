//! A cancellation signal: the caller asks a running phase to stop (Ctrl-C, an abort condition).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use tokio::sync::Notify;

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    notify: Notify,
    /// Signals made with [`CancellationSignal::child`], cancelled with this one.
    children: Mutex<Vec<Weak<Inner>>>,
}

impl Inner {
    fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        self.notify.notify_waiters();
        // Taken after the flag is set: a child made concurrently either sees the flag or is in
        // the list by now.
        let children =
            std::mem::take(&mut *self.children.lock().unwrap_or_else(PoisonError::into_inner));
        for child in children.iter().filter_map(Weak::upgrade) {
            child.cancel();
        }
    }
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

    /// Cancels: every clone sees it, every waiter wakes, and every child is cancelled too.
    pub fn cancel(&self) {
        self.inner.cancel();
    }

    /// A new signal that is cancelled when this one is (at once if it already is), and that can
    /// be cancelled on its own without cancelling this one: the loops of a phase stop on the
    /// caller's signal and on the phase's own abort, and the caller can still tell a Ctrl-C
    /// from an abort.
    pub fn child(&self) -> Self {
        let child = Self::new();
        let mut children = self
            .inner
            .children
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.is_cancelled() {
            drop(children);
            child.cancel();
        } else {
            children.retain(|c| c.strong_count() > 0);
            children.push(Arc::downgrade(&child.inner));
        }
        child
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

    #[test]
    fn a_child_stops_with_its_parent_but_not_the_other_way_round() {
        let parent = CancellationSignal::new();
        let child = parent.child();
        child.cancel();
        assert!(child.is_cancelled());
        assert!(!parent.is_cancelled(), "a child's cancel stays its own");
        let second = parent.child();
        let grandchild = second.child();
        parent.cancel();
        assert!(second.is_cancelled() && grandchild.is_cancelled());
        assert!(parent.child().is_cancelled(), "made after the cancel");
    }
}
