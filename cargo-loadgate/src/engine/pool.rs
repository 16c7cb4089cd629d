//! Keep-alive HTTP/1.1 connections, and one request on them.
//!
//! Not reqwest, and on the hot path not hyper either (docs/decisions.md, *A minimal HTTP/1.1
//! client on the hot path*): a connection is a `TcpStream` and the bytes read from it, a request
//! is written as the bytes [`WireRequest`] encoded once, and its answer is parsed by
//! [`super::http1`]. No task of its own drives a connection: the request that leases it writes
//! and reads in its own future. An idle connection is not touched at all; a close by the server
//! while it sat idle is seen at its next checkout, before anything is sent on it.
//!
//! The pool opens connections on demand up to a cap, reuses idle ones last-in first-out, and
//! discards a connection at its first error. There are no retries: a failed request is counted
//! as failed.
//!
//! Why a cap: without one, every request that finds all connections busy opens a new one. When
//! the target stalls for a second at 2,000 req/s that is 2,000 connects at once, past nginx's
//! default accept backlog (511): SYNs are dropped and retried a second later, and the measured
//! latencies become the client's connect storm instead of the target's stall (seen in
//! bench/engine.sh: p90 785 ms where the truth is ~1 ms). Above the cap a request waits for a
//! connection, in order; its latency still counts from its intended send time, so the wait is
//! measured, not hidden.

use super::http1::{AnswerReader, WireRequest};
use crate::measure::TransportErrorKind;
use bytes::{Bytes, BytesMut};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::rc::{Rc, Weak};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Spare room a connection's read buffer is given before a read.
pub(super) const READ_CHUNK: usize = 8 * 1024;

/// A complete answer: its status and its whole body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status code.
    pub status: u16,
    /// The body, read to its end.
    pub body: Bytes,
}

/// What became of one request: its answer or failure, and when it was handed to a connection.
#[derive(Debug)]
pub struct Exchange {
    /// The answer, or why there is none.
    pub result: Result<Answer, TransportErrorKind>,
    /// When the request was handed to its connection, after any wait for a free one and any
    /// connect: the absolute `CLOCK_MONOTONIC` reading (see
    /// [`super::clock::Clock::offset_of`]); `None` if it never got one. Service time runs from
    /// here; the wait is the client's, and counts in latency only.
    pub handed_at: Option<Duration>,
}

/// One keep-alive connection. Dropping it closes the socket and frees its slot in the pool.
struct Connection {
    stream: TcpStream,
    /// Bytes read and not yet part of an answer.
    buf: BytesMut,
    /// Set once the connection must not carry another request: an exchange on it failed or is
    /// under way, or its last answer ended it.
    spent: bool,
    _slot: OpenGuard,
}

impl Connection {
    /// Whether the connection can take a request now. An idle connection the server closed (or
    /// sent anything unasked on) is found here, before anything is sent on it. One non-blocking
    /// read, made only when the socket was last seen readable.
    fn usable(&mut self) -> bool {
        if self.spent || !self.buf.is_empty() {
            return false;
        }
        let mut probe = [0_u8; 1];
        matches!(
            self.stream.try_read(&mut probe),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
        )
    }

    /// Writes `request` and reads its whole answer.
    async fn exchange(&mut self, request: &WireRequest) -> Result<Answer, TransportErrorKind> {
        self.spent = true;
        self.stream
            .write_all(request.bytes())
            .await
            .map_err(|e| io_kind(&e))?;
        let mut reader = AnswerReader::new(request.is_head());
        let mut eof = false;
        loop {
            if let Some(parsed) = reader.poll(&mut self.buf, eof)? {
                // Bytes after the answer were not asked for: the connection is not reused; nor
                // when either side asked for the close.
                self.spent = !parsed.keep_alive || request.closes() || !self.buf.is_empty();
                return Ok(Answer {
                    status: parsed.status,
                    body: parsed.body,
                });
            }
            self.buf.reserve(READ_CHUNK);
            let n = self
                .stream
                .read_buf(&mut self.buf)
                .await
                .map_err(|e| io_kind(&e))?;
            eof = n == 0;
        }
    }
}

/// What a request waiting for a connection is handed, in the order the requests asked.
enum Handover {
    /// A connection checked in by a finished request.
    Conn(Connection),
    /// A slot freed by a closed connection, already counted in `open` for this request, so
    /// that a later arrival cannot take it first. Dropping it unused frees it again.
    Slot(OpenGuard),
}

type Waiter = tokio::sync::oneshot::Sender<Handover>;

struct PoolState {
    idle: Vec<Connection>,
    /// Connections established or being established.
    open: usize,
    max_open: usize,
    opened_total: u64,
    waiters: VecDeque<Waiter>,
}

impl PoolState {
    /// A slot was freed: hands it, reserved, to the first waiter still waiting, if any. `pool`
    /// is this state's own pool (the reservation's guard points back at it).
    fn free_slot(&mut self, pool: &Weak<RefCell<PoolState>>) {
        while let Some(waiter) = self.waiters.pop_front() {
            self.open += 1;
            match waiter.send(Handover::Slot(OpenGuard(Weak::clone(pool)))) {
                Ok(()) => return,
                Err(back) => {
                    // That request gave up (timed out). The guard's drop would need the state,
                    // which is borrowed here: release the reservation by hand instead.
                    self.open -= 1;
                    if let Handover::Slot(guard) = back {
                        std::mem::forget(guard);
                    }
                }
            }
        }
    }
}

/// Connections to one address. Cloning shares the pool. Single-threaded (`Rc`): use it on one
/// thread, from futures polled on that thread.
#[derive(Clone)]
pub struct Pool {
    addr: SocketAddr,
    state: Rc<RefCell<PoolState>>,
}

impl Pool {
    /// An empty pool for `addr` that keeps at most `max_open` connections (at least one).
    pub fn new(addr: SocketAddr, max_open: usize) -> Self {
        let state = PoolState {
            idle: Vec::new(),
            open: 0,
            max_open: max_open.max(1),
            opened_total: 0,
            waiters: VecDeque::new(),
        };
        Self {
            addr,
            state: Rc::new(RefCell::new(state)),
        }
    }

    /// Connections open now (idle, busy or being established).
    pub fn open(&self) -> usize {
        self.state.borrow().open
    }

    /// Connections opened since the pool was created.
    pub fn opened_total(&self) -> u64 {
        self.state.borrow().opened_total
    }

    /// Reserves a slot under the cap (`open` counts it), or `None` at the cap. The slot is freed
    /// when the guard is dropped: by a failed connect, or with the connection it was used for.
    fn reserve(&self) -> Option<OpenGuard> {
        let mut state = self.state.borrow_mut();
        if state.open >= state.max_open {
            return None;
        }
        state.open += 1;
        Some(OpenGuard(Rc::downgrade(&self.state)))
    }

    /// Opens a connection in a reserved `slot`, ready for a request.
    async fn connect(&self, slot: OpenGuard) -> Result<Connection, TransportErrorKind> {
        let stream = TcpStream::connect(self.addr)
            .await
            .map_err(|_| TransportErrorKind::Connect)?;
        // Small requests and answers: Nagle's algorithm would hold them back by up to 40 ms.
        stream
            .set_nodelay(true)
            .map_err(|_| TransportErrorKind::Connect)?;
        self.state.borrow_mut().opened_total += 1;
        Ok(Connection {
            stream,
            buf: BytesMut::new(),
            spent: false,
            _slot: slot,
        })
    }

    /// An idle connection ready for a request, a new one when under the cap, or else the next
    /// one checked in (in the order the requests asked).
    async fn checkout(&self) -> Result<Connection, TransportErrorKind> {
        loop {
            let idle = self.state.borrow_mut().idle.pop();
            if let Some(mut conn) = idle {
                if conn.usable() {
                    return Ok(conn);
                }
                continue;
            }
            let slot = match self.reserve() {
                Some(slot) => slot,
                None => {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    self.state.borrow_mut().waiters.push_back(tx);
                    match rx.await {
                        Ok(Handover::Conn(mut conn)) => {
                            if conn.usable() {
                                return Ok(conn);
                            }
                            // It closed on the way: ask again.
                            continue;
                        }
                        Ok(Handover::Slot(slot)) => slot,
                        // The pool is being dropped.
                        Err(_) => return Err(TransportErrorKind::Connect),
                    }
                }
            };
            return self.connect(slot).await;
        }
    }

    fn checkin(&self, mut conn: Connection) {
        if conn.spent {
            return;
        }
        let mut state = self.state.borrow_mut();
        while let Some(waiter) = state.waiters.pop_front() {
            match waiter.send(Handover::Conn(conn)) {
                Ok(()) => return,
                // That request gave up (timed out): offer the connection to the next one.
                Err(Handover::Conn(back)) => conn = back,
                // Not what was sent; nothing to offer (dropped outside the borrow, as guards
                // must be).
                Err(other) => {
                    drop(state);
                    drop(other);
                    return;
                }
            }
        }
        state.idle.push(conn);
    }

    /// Sends `request` and reads the whole answer, all before `deadline`.
    ///
    /// The request is written in the poll that finds a ready connection. A connection that fails
    /// to open is a [`TransportErrorKind::Connect`] error, an answer not complete by the deadline
    /// a [`TransportErrorKind::Timeout`]; the connection of any failed request is closed and not
    /// reused.
    pub async fn send(&self, request: &WireRequest, deadline: Instant) -> Exchange {
        // One timer for the wait, the connect and the exchange: each tokio timer registration
        // costs a lock of the time driver, and one whose deadline is the earliest pending an
        // eventfd write to unpark the driver.
        let mut leased: Option<Connection> = None;
        let mut handed_at = None;
        let exchange = async {
            let conn = leased.insert(self.checkout().await?);
            handed_at = Some(super::clock::monotonic_now());
            conn.exchange(request).await
        };
        let result = match tokio::time::timeout_at(deadline, exchange).await {
            Ok(result) => result,
            // Waiting for a free connection, the connect or the answer took the whole timeout.
            Err(_) => Err(TransportErrorKind::Timeout),
        };
        if let Some(conn) = leased
            && result.is_ok()
        {
            // Spent connections (failed, or ended by their answer) are dropped there, which
            // closes their sockets at once.
            self.checkin(conn);
        }
        Exchange { result, handed_at }
    }

    /// Opens up to `n` connections (within the cap) and keeps them idle, one after another;
    /// stops at the first that fails to open, or at `deadline`. Returns how many it opened.
    pub async fn prewarm(&self, n: usize, deadline: Instant) -> usize {
        let mut opened = 0;
        while opened < n {
            let Some(slot) = self.reserve() else {
                break;
            };
            let Ok(Ok(conn)) = tokio::time::timeout_at(deadline, self.connect(slot)).await else {
                break;
            };
            self.state.borrow_mut().idle.push(conn);
            opened += 1;
        }
        opened
    }

    /// Closes every idle connection.
    pub fn close_idle(&self) {
        let idle = std::mem::take(&mut self.state.borrow_mut().idle);
        drop(idle);
    }
}

/// A connection's slot in the pool, freed when the connection is dropped. Weak: the pool keeps
/// its idle connections, so a strong reference would be a cycle.
struct OpenGuard(Weak<RefCell<PoolState>>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        let Some(state) = self.0.upgrade() else {
            // The pool is gone (its idle connections are being dropped with it).
            return;
        };
        // Connections are never dropped while the state is borrowed (checkin and close_idle
        // drop them outside their borrows); a slot is never freed twice either way.
        if let Ok(mut s) = state.try_borrow_mut() {
            s.open = s.open.saturating_sub(1);
            s.free_slot(&self.0);
        }
    }
}

/// Sorts an I/O error on an open connection into the transport error kinds the measurement
/// counts.
fn io_kind(err: &std::io::Error) -> TransportErrorKind {
    use std::io::ErrorKind as K;
    match err.kind() {
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
            TransportErrorKind::Reset
        }
        _ => TransportErrorKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_server::{Reply, TestServer};
    use super::*;
    use std::future::Future;
    use std::time::Duration;

    fn addr_of(server: &TestServer) -> SocketAddr {
        server
            .url
            .trim_start_matches("http://")
            .parse()
            .expect("addr")
    }

    fn get() -> WireRequest {
        let host = http::HeaderValue::from_static("test");
        WireRequest::encode(&http::Method::GET, &["/"], &host, &[], false, b"").expect("request")
    }

    /// Runs `f` on a current-thread runtime inside a `LocalSet` (the pool is `!Send`).
    fn block_on_local<F: Future>(f: F) -> F::Output {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        tokio::task::LocalSet::new().block_on(&rt, f)
    }

    #[test]
    fn requests_past_the_cap_wait_for_a_connection_instead_of_opening_one() {
        let server = TestServer::start(|_| Reply {
            delay: Duration::from_millis(100),
            ..Reply::ok("ok")
        });
        let addr = addr_of(&server);
        let (statuses, elapsed, opened) = block_on_local(async {
            let pool = Pool::new(addr, 2);
            let started = std::time::Instant::now();
            let deadline = Instant::now() + Duration::from_secs(5);
            let mut tasks = Vec::new();
            for _ in 0..6 {
                let pool = pool.clone();
                tasks.push(tokio::task::spawn_local(async move {
                    let request = get();
                    pool.send(&request, deadline).await.result.map(|a| a.status)
                }));
            }
            let mut statuses = Vec::new();
            for t in tasks {
                statuses.push(t.await.expect("task"));
            }
            (statuses, started.elapsed(), pool.opened_total())
        });
        assert_eq!(statuses, vec![Ok(200); 6]);
        assert_eq!(opened, 2);
        assert_eq!(server.connections(), 2);
        // Three rounds of 100 ms on two connections.
        assert!(elapsed >= Duration::from_millis(290), "{elapsed:?}");
    }

    #[test]
    fn a_connection_is_reused_unless_the_request_asked_for_the_close() {
        let server = TestServer::start(|_| Reply::ok("ok"));
        let addr = addr_of(&server);
        let host = http::HeaderValue::from_static("test");
        let close = WireRequest::encode(
            &http::Method::GET,
            &["/"],
            &host,
            &[(
                http::header::CONNECTION,
                http::HeaderValue::from_static("close"),
            )],
            false,
            b"",
        )
        .expect("request");
        let opened = block_on_local(async {
            let pool = Pool::new(addr, 4);
            let deadline = Instant::now() + Duration::from_secs(5);
            let mut opened = Vec::new();
            for request in [get(), get(), close.clone(), get()] {
                let status = pool.send(&request, deadline).await.result.map(|a| a.status);
                assert_eq!(status, Ok(200));
                opened.push(pool.opened_total());
            }
            opened
        });
        // Two requests on one connection; the one that asked for the close ends it, so the next
        // opens another.
        assert_eq!(opened, vec![1, 1, 1, 2]);
        assert_eq!(server.connections(), 2);
    }

    #[test]
    fn prewarm_opens_idle_connections_within_the_cap_that_requests_then_reuse() {
        let server = TestServer::start(|_| Reply::ok("ok"));
        let addr = addr_of(&server);
        let (warm, capped, status, opened, open) = block_on_local(async {
            let pool = Pool::new(addr, 3);
            let deadline = Instant::now() + Duration::from_secs(5);
            let warm = pool.prewarm(2, deadline).await;
            // Asking for more than the cap opens only up to it.
            let capped = pool.prewarm(10, deadline).await;
            let request = get();
            let deadline = Instant::now() + Duration::from_secs(5);
            let exchange = pool.send(&request, deadline).await;
            assert!(exchange.handed_at.is_some());
            let status = exchange.result.map(|a| a.status);
            (warm, capped, status, pool.opened_total(), pool.open())
        });
        assert_eq!((warm, capped), (2, 1));
        assert_eq!(status, Ok(200));
        // The request went out on a warm connection: none was opened for it.
        assert_eq!(opened, 3);
        assert_eq!(open, 3);
    }

    #[test]
    fn prewarm_stops_at_a_refused_connect_and_frees_its_slot() {
        // A port nothing listens on: bind, read the port, close.
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port");
        let (warm, open) = block_on_local(async {
            let pool = Pool::new(addr, 4);
            let warm = pool
                .prewarm(4, Instant::now() + Duration::from_secs(5))
                .await;
            (warm, pool.open())
        });
        assert_eq!((warm, open), (0, 0));
    }

    #[test]
    fn a_freed_slot_is_reserved_for_the_first_waiter_not_taken_by_a_later_arrival() {
        let addr: SocketAddr = "127.0.0.1:9".parse().expect("addr");
        block_on_local(async {
            let pool = Pool::new(addr, 1);
            let held = pool.reserve().expect("a slot under the cap");
            assert!(pool.reserve().is_none(), "the cap is 1");
            let (gave_up, _) = tokio::sync::oneshot::channel::<Handover>();
            let (tx, rx) = tokio::sync::oneshot::channel();
            {
                let mut state = pool.state.borrow_mut();
                // A waiter that timed out, then one still waiting.
                state.waiters.push_back(gave_up);
                state.waiters.push_back(tx);
            }
            drop(held);
            // The slot went to the waiter: a request arriving now finds the pool at its cap.
            assert_eq!(pool.open(), 1);
            assert!(pool.reserve().is_none());
            let Ok(Handover::Slot(slot)) = rx.await else {
                panic!("the waiter was handed the slot");
            };
            // Unused, the reservation frees the slot again.
            drop(slot);
            assert_eq!(pool.open(), 0);
            assert!(pool.reserve().is_some());
        });
    }

    #[test]
    fn waiting_past_the_deadline_is_a_timeout() {
        let server = TestServer::start(|_| Reply {
            delay: Duration::from_millis(400),
            ..Reply::ok("ok")
        });
        let addr = addr_of(&server);
        let results = block_on_local(async {
            let pool = Pool::new(addr, 1);
            let deadline = Instant::now() + Duration::from_millis(200);
            let send = |pool: Pool| async move {
                let request = get();
                pool.send(&request, deadline).await.result.map(|a| a.status)
            };
            let a = tokio::task::spawn_local(send(pool.clone()));
            let b = tokio::task::spawn_local(send(pool.clone()));
            (a.await.expect("task"), b.await.expect("task"))
        });
        assert_eq!(
            results,
            (
                Err(TransportErrorKind::Timeout),
                Err(TransportErrorKind::Timeout)
            )
        );
    }
}
