//! The sessions of one loop, run from reused slots instead of a task each.
//!
//! A session was a boxed future spawned as a tokio task: two allocations per arrival (the
//! future, 1.5 KB, past glibc's per-thread cache, and the task), measured with dhat. Here each
//! session runs in a slot whose box is kept when the session ends and filled again by the next
//! one (`Pin::set`), and every slot has one waker for its whole life. In the steady state,
//! starting a session allocates nothing: the slots grow to the most sessions alive at once and
//! stay.
//!
//! The runner ([`SessionSlots::run`], a branch of the phase's own future beside the dispatcher)
//! polls the slots that were woken, in the order they were woken, at most [`BATCH`] polls a
//! poll of its own: the dispatcher is looked at between batches, as tokio's `LocalSet` looked at it between
//! batches of tasks. [`SessionSlots::start`] polls a new session once at once, in its caller's
//! poll (the dispatcher sends a due request without waiting for the runner). Each poll is
//! unconstrained by tokio's cooperative budget, as a task of its own would be: one future
//! polling many sessions would otherwise run out of budget and defer their sends.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use tokio::task::coop::Unconstrained;

/// The most sessions the runner polls before the phase's other branches (the dispatcher) are
/// polled again: tokio's `LocalSet` polls its own future between batches of 61 tasks.
const BATCH: usize = 61;

/// The slots of one loop's sessions (see the module's documentation).
pub(super) struct SessionSlots<F> {
    slots: RefCell<Vec<Slot<F>>>,
    /// Slots whose session ended, their boxes kept for the next.
    free: RefCell<Vec<usize>>,
    woken: Arc<Woken>,
}

struct Slot<F> {
    /// `None` only while the slot is being polled (taken out, so no borrow is held meanwhile).
    future: Option<Pin<Box<Unconstrained<F>>>>,
    running: bool,
    handle: Arc<SlotWaker>,
    waker: Waker,
}

/// The slots woken since the runner last looked, and the runner's waker.
#[derive(Default)]
struct Woken {
    slots: Mutex<VecDeque<usize>>,
    runner: Mutex<Option<Waker>>,
}

struct SlotWaker {
    index: usize,
    /// Set while the slot waits in [`Woken::slots`]: a running session is queued once however
    /// often it is woken before its poll (a wake left from its slot's previous session may queue
    /// the slot once more: one poll for nothing).
    queued: AtomicBool,
    woken: Arc<Woken>,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        self.woken
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(self.index);
        let runner = self
            .woken
            .runner
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(runner) = runner.as_ref() {
            runner.wake_by_ref();
        }
    }
}

impl<F: Future<Output = ()>> SessionSlots<F> {
    pub(super) fn new() -> Self {
        Self {
            slots: RefCell::new(Vec::new()),
            free: RefCell::new(Vec::new()),
            woken: Arc::new(Woken::default()),
        }
    }

    /// Starts `session` in a free slot (a new one when none is free) and polls it once now.
    pub(super) fn start(&self, session: F) {
        let session = tokio::task::coop::unconstrained(session);
        let reused = self.free.borrow_mut().pop();
        let index = match reused {
            Some(index) => {
                let mut slots = self.slots.borrow_mut();
                let slot = &mut slots[index];
                slot.future
                    .as_mut()
                    .expect("a free slot keeps its box")
                    .set(session);
                slot.running = true;
                index
            }
            None => {
                let mut slots = self.slots.borrow_mut();
                let index = slots.len();
                let handle = Arc::new(SlotWaker {
                    index,
                    queued: AtomicBool::new(false),
                    woken: Arc::clone(&self.woken),
                });
                slots.push(Slot {
                    future: Some(Box::pin(session)),
                    running: true,
                    waker: Waker::from(Arc::clone(&handle)),
                    handle,
                });
                index
            }
        };
        self.poll_slot(index);
    }

    /// The sessions running now.
    #[cfg(test)]
    pub(super) fn running(&self) -> usize {
        self.slots.borrow().iter().filter(|s| s.running).count()
    }

    /// The slots made so far: the most sessions that were running at once.
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        self.slots.borrow().len()
    }

    /// Polls the slots as they are woken; never ends (it is dropped with the phase's future).
    pub(super) async fn run(&self) {
        std::future::poll_fn(|cx| {
            {
                let mut runner = self
                    .woken
                    .runner
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if !runner.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *runner = Some(cx.waker().clone());
                }
            }
            // The slots in the order they were woken, a batch at most: a slot woken while
            // another is polled (a connection handed over, an answer read) is polled in this
            // same poll while the batch lasts; what is left waits for the next.
            for _ in 0..BATCH {
                let next = self
                    .woken
                    .slots
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .pop_front();
                let Some(index) = next else {
                    return Poll::Pending;
                };
                self.poll_slot(index);
            }
            let more = !self
                .woken
                .slots
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_empty();
            if more {
                cx.waker().wake_by_ref();
            }
            Poll::<()>::Pending
        })
        .await;
    }

    /// Polls the session in slot `index` if it is running (a slot woken after its session ended,
    /// by a waker left somewhere, is passed over); frees the slot when the session ends.
    fn poll_slot(&self, index: usize) {
        let (mut future, waker) = {
            let mut slots = self.slots.borrow_mut();
            let slot = &mut slots[index];
            // Cleared before the poll: a wake during it queues the slot again.
            slot.handle.queued.store(false, Ordering::Release);
            if !slot.running {
                return;
            }
            let Some(future) = slot.future.take() else {
                // Being polled already (a poll nested in its own, which nothing does today): the
                // wake is kept for a later poll instead of lost.
                slot.handle.queued.store(true, Ordering::Release);
                drop(slots);
                self.woken
                    .slots
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push_back(index);
                return;
            };
            (future, slot.waker.clone())
        };
        let done = future
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_ready();
        let mut slots = self.slots.borrow_mut();
        let slot = &mut slots[index];
        slot.future = Some(future);
        if done {
            slot.running = false;
            drop(slots);
            self.free.borrow_mut().push(index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;
    use std::time::Duration;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    /// Slots whose runner is a local task of its own (in a phase, a branch of its future).
    fn with_runner<F: Future<Output = ()> + 'static>() -> Rc<SessionSlots<F>> {
        let slots = Rc::new(SessionSlots::new());
        let runner = Rc::clone(&slots);
        tokio::task::spawn_local(async move { runner.run().await });
        slots
    }

    /// Sessions that wait run to their end through the runner; the slots of ended sessions are
    /// reused, so the slots never outnumber the sessions alive at once.
    #[test]
    fn sessions_run_to_their_end_and_their_slots_are_reused() {
        let local = tokio::task::LocalSet::new();
        runtime().block_on(local.run_until(async {
            let ended = Rc::new(Cell::new(0u32));
            let slots = with_runner();
            let session = |ms: u64, ended: Rc<Cell<u32>>| async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                tokio::task::yield_now().await;
                ended.set(ended.get() + 1);
            };
            for round in 0..5u64 {
                for i in 0..20u64 {
                    slots.start(session(1 + (i + round) % 5, Rc::clone(&ended)));
                }
                assert_eq!(slots.running(), 20);
                tokio::time::timeout(Duration::from_secs(30), async {
                    while slots.running() > 0 {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                })
                .await
                .expect("every session ends");
            }
            assert_eq!(ended.get(), 100);
            assert_eq!(slots.capacity(), 20, "ended sessions' slots are reused");
        }));
    }

    /// More sessions woken at once than one batch: the runner comes back for the rest by itself
    /// (nothing else wakes them), and a session that wakes itself while polled is polled again.
    #[test]
    fn a_burst_beyond_a_batch_and_self_wakes_all_run_to_their_end() {
        let local = tokio::task::LocalSet::new();
        runtime().block_on(local.run_until(async {
            let slots = with_runner();
            let go = Rc::new(tokio::sync::Notify::new());
            let ended = Rc::new(Cell::new(0usize));
            let n = 4 * BATCH + 7;
            for _ in 0..n {
                let (go, ended) = (Rc::clone(&go), Rc::clone(&ended));
                slots.start(async move {
                    go.notified().await;
                    ended.set(ended.get() + 1);
                });
            }
            let polls = Rc::new(Cell::new(0u32));
            let p = Rc::clone(&polls);
            let selfish = with_runner();
            selfish.start(std::future::poll_fn(move |cx| {
                p.set(p.get() + 1);
                if p.get() < 4 {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                } else {
                    Poll::Ready(())
                }
            }));
            assert_eq!(slots.running(), n);
            go.notify_waiters();
            tokio::time::timeout(Duration::from_secs(30), async {
                while slots.running() + selfish.running() > 0 {
                    tokio::task::yield_now().await;
                }
            })
            .await
            .expect("every woken session ends");
            assert_eq!(ended.get(), n);
            assert_eq!(polls.get(), 4);
        }));
    }

    /// Dropping the slots (the phase's end) drops the sessions still running and what they hold.
    #[test]
    fn dropping_the_slots_drops_the_sessions_still_running() {
        let local = tokio::task::LocalSet::new();
        runtime().block_on(local.run_until(async {
            let held = Rc::new(());
            let slots = SessionSlots::new();
            for _ in 0..10 {
                let held = Rc::clone(&held);
                slots.start(async move {
                    std::future::pending::<()>().await;
                    drop(held);
                });
            }
            assert_eq!(Rc::strong_count(&held), 11);
            drop(slots);
            assert_eq!(Rc::strong_count(&held), 1);
        }));
    }

    /// A session that needs no wait ends in `start`'s own poll and frees its slot at once.
    #[test]
    fn a_session_that_ends_in_its_first_poll_frees_its_slot_at_once() {
        let local = tokio::task::LocalSet::new();
        runtime().block_on(local.run_until(async {
            let slots = Rc::new(SessionSlots::new());
            let ran = Rc::new(Cell::new(0u32));
            for _ in 0..10 {
                let ran = Rc::clone(&ran);
                slots.start(async move { ran.set(ran.get() + 1) });
                assert_eq!(slots.running(), 0);
            }
            assert_eq!(ran.get(), 10);
            assert_eq!(slots.capacity(), 1);
        }));
    }

    /// A slot woken after its session ended (by a waker its session left behind) polls nothing,
    /// and one woken many times before its poll is polled once.
    #[test]
    fn stale_and_repeated_wakes_poll_nothing_twice() {
        let local = tokio::task::LocalSet::new();
        runtime().block_on(local.run_until(async {
            let slots = with_runner();
            let polls = Rc::new(Cell::new(0u32));
            let kept: Rc<RefCell<Option<Waker>>> = Rc::default();
            let (p, k) = (Rc::clone(&polls), Rc::clone(&kept));
            let mut first = true;
            slots.start(std::future::poll_fn(move |cx| {
                p.set(p.get() + 1);
                *k.borrow_mut() = Some(cx.waker().clone());
                if std::mem::take(&mut first) {
                    Poll::Pending
                } else {
                    Poll::Ready(())
                }
            }));
            assert_eq!(polls.get(), 1);
            let waker = kept.borrow().clone().expect("the session kept its waker");
            for _ in 0..5 {
                waker.wake_by_ref();
            }
            tokio::time::timeout(Duration::from_secs(30), async {
                while slots.running() > 0 {
                    tokio::task::yield_now().await;
                }
            })
            .await
            .expect("the woken session ends");
            assert_eq!(polls.get(), 2, "five wakes before a poll are one poll");
            // The session has ended: its waker wakes a slot with nothing to poll.
            waker.wake_by_ref();
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            assert_eq!(polls.get(), 2);
        }));
    }
}
