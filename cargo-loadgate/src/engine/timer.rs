//! The pacing timer: sleeps that end within tens of microseconds of their deadline.
//!
//! Tokio's timer wheel has a 1 ms granularity and rounds deadlines up, which alone costs up to 1 ms
//! of pacing lag per request (at 10,000 req/s most requests would be late). Spinning instead
//! would burn a core and make the generator's CPU cost meaningless. So every sleep of the
//! engine registers its deadline in one heap, and one `timerfd` (armed with an absolute
//! `CLOCK_MONOTONIC` deadline, no timer slack) is kept armed at the earliest deadline. The
//! timerfd sits in the runtime's own epoll set through `AsyncFd`, so its expiry wakes the runtime
//! like any socket: no thread, no spin, one `timerfd_settime` when the earliest deadline changes.

use super::clock::Clock;
use nix::errno::Errno;
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFlags, TimerSetTimeFlags};
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::hash::BuildHasherDefault;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::io::unix::AsyncFd;

/// The timerfd, as `AsyncFd` wants it (`AsRawFd`; nix's type offers `AsFd` only).
struct TimerFd(nix::sys::timerfd::TimerFd);

impl AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

impl TimerFd {
    fn new() -> std::io::Result<Self> {
        nix::sys::timerfd::TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .map(Self)
        .map_err(std::io::Error::from)
    }

    /// Arms the timer at absolute monotonic time `at`. An absolute deadline in the past fires
    /// at once, which is what a late deadline wants. A deadline beyond `time_t` is
    /// `EOVERFLOW` rather than a wrapped (negative, `EINVAL`) or clamped number.
    fn arm(&self, at: Duration) -> Result<(), Errno> {
        // Zero would disarm it.
        let at = at.max(Duration::from_nanos(1));
        let secs = libc::time_t::try_from(at.as_secs()).map_err(|_| Errno::EOVERFLOW)?;
        let spec = TimeSpec::new(secs, libc::c_long::from(at.subsec_nanos() as i32));
        self.0.set(
            Expiration::OneShot(spec),
            TimerSetTimeFlags::TFD_TIMER_ABSTIME,
        )
    }
}

/// The hasher of the sleeps' ids: each is a fresh counter value, never chosen by anyone who could
/// aim at collisions, so a multiply by the golden ratio's odd constant (Fibonacci hashing) spreads
/// them over the table's buckets and control bytes. SipHash, the default, cost about 400
/// instructions a request (callgrind, `attack` at 1,000 req/s: 1.7 M in 4,052 requests).
#[derive(Default)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used (the keys are `u64`); bytes are folded in for completeness.
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = (self.0.rotate_left(5) ^ id).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

struct State {
    /// Pending deadlines (offsets from the clock's origin) with a sequence number for ties.
    heap: BinaryHeap<Reverse<(Duration, u64)>>,
    wakers: std::collections::HashMap<u64, Waker, BuildHasherDefault<IdHasher>>,
    next_id: u64,
    /// The deadline the timerfd is armed at, if armed.
    armed: Option<Duration>,
    /// The first arming error of a sleep: `PreciseSleep::poll` cannot return it, so it is kept
    /// here (an `Errno` is `Copy`: nothing is allocated) and [`PreciseTimer::drive`] returns it.
    arm_error: Option<Errno>,
    /// The waker of the task running [`PreciseTimer::drive`], woken when an arming error is
    /// stored (the timerfd, not armed, would never wake it).
    driver: Option<Waker>,
}

/// A precise timer for one thread. Cloning shares it.
#[derive(Clone)]
pub struct PreciseTimer {
    clock: Clock,
    early: Duration,
    fd: Rc<AsyncFd<TimerFd>>,
    state: Rc<RefCell<State>>,
}

impl PreciseTimer {
    /// A timer on `clock`. Must be created inside a tokio runtime with I/O enabled; call
    /// [`PreciseTimer::drive`] in a task of the same thread for sleeps to end.
    pub fn new(clock: Clock) -> std::io::Result<Self> {
        Self::with_early_window(clock, Duration::ZERO)
    }

    /// A timer whose wake-ups also end the sleeps due within `early` after the one that woke
    /// it: the timerfd fires at the earliest deadline exactly (that sleep is never early), and
    /// the sleeps close behind it share its wake-up (one `timerfd_settime`, one `epoll_wait`
    /// return) and end up to `early` before their deadline. Zero means exact deadlines.
    ///
    /// A sleep ended early knows it ([`PreciseTimer::now`] is below its deadline); callers that
    /// time something from the deadline must take the earlier of the two (see `phase.rs`).
    pub fn with_early_window(clock: Clock, early: Duration) -> std::io::Result<Self> {
        // SAFETY: `TimerFd` owns its descriptor and always returns that same one; it stays open
        // until the `AsyncFd` (which owns the `TimerFd`) is dropped.
        let fd = unsafe {
            AsyncFd::register_with_interest(TimerFd::new()?, tokio::io::Interest::READABLE)
        }
        .map_err(|e| e.into_parts().1)?;
        Ok(Self {
            clock,
            early,
            fd: Rc::new(fd),
            state: Rc::new(RefCell::new(State {
                heap: BinaryHeap::new(),
                wakers: std::collections::HashMap::default(),
                next_id: 0,
                armed: None,
                arm_error: None,
                driver: None,
            })),
        })
    }

    /// How early a wake-up ends the sleeps behind the one it was armed for.
    pub fn early_window(&self) -> Duration {
        self.early
    }

    /// The clock the deadlines are read on.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// A future that ends at offset `deadline` of the clock (at once when it has passed).
    pub fn sleep_until(&self, deadline: Duration) -> PreciseSleep {
        PreciseSleep {
            timer: self.clone(),
            deadline,
            id: None,
        }
    }

    fn register(&self, deadline: Duration, id: Option<u64>, waker: &Waker) -> u64 {
        let mut state = self.state.borrow_mut();
        let id = match id {
            Some(id) => id,
            None => {
                let id = state.next_id;
                state.next_id += 1;
                state.heap.push(Reverse((deadline, id)));
                id
            }
        };
        match state.wakers.get_mut(&id) {
            Some(w) if w.will_wake(waker) => {}
            Some(w) => w.clone_from(waker),
            None => {
                state.wakers.insert(id, waker.clone());
            }
        }
        if state.armed.is_none_or(|armed| deadline < armed) {
            match self.fd.get_ref().arm(self.clock.absolute(deadline)) {
                Ok(()) => state.armed = Some(deadline),
                Err(errno) => {
                    state.arm_error.get_or_insert(errno);
                    if let Some(driver) = &state.driver {
                        driver.wake_by_ref();
                    }
                }
            }
        }
        id
    }

    fn cancel(&self, id: u64) {
        // The heap entry stays until it comes due; without a waker it wakes nobody.
        self.state.borrow_mut().wakers.remove(&id);
    }

    /// Wakes due sleeps whenever the timerfd fires. Runs until the timer fails, and returns why:
    /// an arming error (stored by the sleep whose poll armed it) or an error of the descriptor.
    pub async fn drive(&self) -> std::io::Error {
        loop {
            if let Err(e) = std::future::poll_fn(|cx| self.poll_fired(cx)).await {
                return e;
            }
            let horizon = self.clock.now() + self.early;
            let mut state = self.state.borrow_mut();
            while let Some(Reverse((deadline, id))) = state.heap.peek().copied() {
                if deadline > horizon {
                    break;
                }
                state.heap.pop();
                if let Some(waker) = state.wakers.remove(&id) {
                    waker.wake();
                }
            }
            let next = state.heap.peek().map(|Reverse((deadline, _))| *deadline);
            state.armed = next;
            // Re-arming resets the expiry count, so the descriptor stops being readable without
            // a `read`: one syscall per wake-up instead of two. The next expiry wakes the epoll
            // set again (tokio registers it edge-triggered). With nothing left to wait for, the
            // descriptor is left as it is, readable and unarmed: the next sleep's arming resets
            // it, and a `read` now would be a second syscall in the wake-ups of a dispatcher
            // that sleeps alone (its next sleep is registered only after this returns).
            if let Some(next) = next
                && let Err(errno) = self.fd.get_ref().arm(self.clock.absolute(next))
            {
                return errno.into();
            }
        }
    }

    /// Ready when the timerfd has fired (its readiness cleared), or with the stored arming error
    /// or the descriptor's error. Keeps the driver's waker for [`PreciseTimer::register`].
    fn poll_fired(&self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        {
            let mut state = self.state.borrow_mut();
            if let Some(errno) = state.arm_error {
                return Poll::Ready(Err(errno.into()));
            }
            match &mut state.driver {
                Some(w) if w.will_wake(cx.waker()) => {}
                Some(w) => w.clone_from(cx.waker()),
                None => state.driver = Some(cx.waker().clone()),
            }
        }
        match self.fd.poll_read_ready(cx) {
            Poll::Ready(Ok(mut guard)) => {
                guard.clear_ready();
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A sleep of a [`PreciseTimer`].
pub struct PreciseSleep {
    timer: PreciseTimer,
    deadline: Duration,
    id: Option<u64>,
}

impl Future for PreciseSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        // Ended by a wake-up (its waker taken), possibly up to the early window before the
        // deadline.
        let fired = this
            .id
            .is_some_and(|id| !this.timer.state.borrow().wakers.contains_key(&id));
        if fired || this.timer.clock.now() >= this.deadline {
            if let Some(id) = this.id.take() {
                this.timer.cancel(id);
            }
            return Poll::Ready(());
        }
        this.id = Some(this.timer.register(this.deadline, this.id, cx.waker()));
        Poll::Pending
    }
}

impl Drop for PreciseSleep {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.timer.cancel(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_end_in_deadline_order_and_close_to_it() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let local = tokio::task::LocalSet::new();
        let lags = local.block_on(&rt, async {
            let clock = Clock::start();
            let timer = PreciseTimer::new(clock).expect("timerfd");
            let driver = timer.clone();
            tokio::task::spawn_local(async move { driver.drive().await });
            let order = Rc::new(RefCell::new(Vec::new()));
            let mut handles = Vec::new();
            // Registered out of order, spread over 200 ms.
            for (i, ms) in [150u64, 10, 90, 30, 200, 60].into_iter().enumerate() {
                let timer = timer.clone();
                let order = Rc::clone(&order);
                handles.push(tokio::task::spawn_local(async move {
                    let deadline = Duration::from_millis(ms);
                    timer.sleep_until(deadline).await;
                    let lag = timer.clock().now() - deadline;
                    order.borrow_mut().push(i);
                    lag
                }));
            }
            let mut lags = Vec::new();
            for h in handles {
                lags.push(h.await.expect("task"));
            }
            assert_eq!(*order.borrow(), vec![1, 3, 5, 2, 0, 4]);
            lags
        });
        // Generous for a loaded CI box; the point is well below tokio's 1 ms rounding most of the time.
        assert!(
            lags.iter().all(|lag| *lag < Duration::from_millis(50)),
            "{lags:?}"
        );
    }

    #[test]
    fn a_passed_deadline_is_ready_at_once_and_dropped_sleeps_wake_nobody() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let timer = PreciseTimer::new(Clock::start()).expect("timerfd");
            let driver = timer.clone();
            tokio::task::spawn_local(async move { driver.drive().await });
            timer.sleep_until(Duration::ZERO).await;
            let dropped = tokio::time::timeout(
                Duration::from_millis(5),
                timer.sleep_until(Duration::from_secs(60)),
            )
            .await;
            assert!(dropped.is_err());
            assert!(timer.state.borrow().wakers.is_empty());
            timer
                .sleep_until(timer.clock().now() + Duration::from_millis(3))
                .await;
        });
    }

    #[test]
    fn an_arming_error_in_a_sleeps_poll_ends_drive_with_that_error() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let timer = PreciseTimer::new(Clock::start()).expect("timerfd");
            let driver = timer.clone();
            let drive = tokio::task::spawn_local(async move { driver.drive().await });
            // The driver parks on the descriptor first, so the error has to wake it.
            tokio::task::yield_now().await;
            assert!(timer.state.borrow().driver.is_some());
            // Beyond `time_t` once the clock's origin is added: `timerfd_settime` cannot take it.
            let beyond = Duration::from_secs(u64::try_from(i64::MAX).expect("fits"));
            let never = tokio::time::timeout(Duration::from_millis(20), timer.sleep_until(beyond));
            assert!(never.await.is_err(), "an unarmed sleep must not end");
            let error = tokio::time::timeout(Duration::from_secs(5), drive)
                .await
                .expect("drive returns the arming error")
                .expect("task");
            assert_eq!(error.raw_os_error(), Some(libc::EOVERFLOW), "{error}");
            assert_eq!(timer.state.borrow().armed, None);
        });
    }

    #[test]
    fn an_early_window_ends_close_sleeps_together_but_never_the_first_early() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let ms = Duration::from_millis;
            let timer = PreciseTimer::with_early_window(Clock::start(), ms(300)).expect("timerfd");
            let driver = timer.clone();
            tokio::task::spawn_local(async move { driver.drive().await });
            let ended = |deadline: Duration| {
                let timer = timer.clone();
                tokio::task::spawn_local(async move {
                    timer.sleep_until(deadline).await;
                    timer.clock().now()
                })
            };
            let (first, close, far) = (ended(ms(30)), ended(ms(250)), ended(ms(600)));
            let first = first.await.expect("task");
            let close = close.await.expect("task");
            let far = far.await.expect("task");
            // The earliest sleep is never early; the one 220 ms behind it (within the window)
            // ends at the same wake-up, early; the one 570 ms behind gets a wake-up of its own.
            assert!(first >= ms(30), "{first:?}");
            assert!(close >= ms(30) && close < ms(250), "{close:?}");
            assert!(far >= ms(600), "{far:?}");
            // 300 sleeps one after another: the timerfd is re-armed after every expiry without
            // being read, and each expiry must still wake the driver.
            let exact = PreciseTimer::new(Clock::start()).expect("timerfd");
            let driver = exact.clone();
            tokio::task::spawn_local(async move { driver.drive().await });
            let step = Duration::from_micros(300);
            let sleeps = async {
                for i in 1..=300u32 {
                    let deadline = step * i;
                    exact.sleep_until(deadline).await;
                    assert!(exact.clock().now() >= deadline);
                }
            };
            // A lost wake-up leaves a sleep waiting for ever: fail instead of hanging (90 ms of
            // sleeps, so the limit is far from any slow runner's).
            tokio::time::timeout(Duration::from_secs(30), sleeps)
                .await
                .expect("every expiry wakes the driver (a sleep was never woken)");
        });
    }
}
