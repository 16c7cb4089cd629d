//! Keep-alive HTTP/1.1 connections on hyper's client connection API, and one request on them.
//!
//! Not reqwest: its pool, its URL handling and its `Send` futures cost about 1.5× the CPU per
//! request (DESIGN §5). Here a connection is a `SendRequest` whose connection task runs on the
//! engine's own thread. The pool opens connections on demand (never more than the requests in
//! flight need), reuses idle ones last-in first-out, and discards a connection at its first
//! error. There are no retries: a failed request is counted as failed.

use crate::measure::TransportErrorKind;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// The body type of every request the engine sends.
pub type RequestBody = Full<Bytes>;

/// A complete answer: its status and its whole body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status code.
    pub status: u16,
    /// The body, read to its end.
    pub body: Bytes,
}

struct Connection {
    sender: SendRequest<RequestBody>,
    task: AbortHandle,
}

impl Connection {
    fn discard(self) {
        // Dropping the connection task closes the socket at once, even mid-answer.
        self.task.abort();
    }
}

#[derive(Default)]
struct PoolState {
    idle: Vec<Connection>,
    open: usize,
    opened_total: u64,
}

/// Connections to one address. Cloning shares the pool. Single-threaded: the connection tasks
/// are spawned with `spawn_local`, so the pool must be used inside a `LocalSet`.
#[derive(Clone)]
pub struct Pool {
    addr: SocketAddr,
    state: Rc<RefCell<PoolState>>,
}

impl Pool {
    /// An empty pool for `addr`.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            state: Rc::new(RefCell::new(PoolState::default())),
        }
    }

    /// Connections open now (idle or busy).
    pub fn open(&self) -> usize {
        self.state.borrow().open
    }

    /// Connections opened since the pool was created.
    pub fn opened_total(&self) -> u64 {
        self.state.borrow().opened_total
    }

    async fn connect(&self) -> Result<Connection, TransportErrorKind> {
        let stream = tokio::net::TcpStream::connect(self.addr)
            .await
            .map_err(|_| TransportErrorKind::Connect)?;
        // Small requests and answers: Nagle's algorithm would hold them back by up to 40 ms.
        stream
            .set_nodelay(true)
            .map_err(|_| TransportErrorKind::Connect)?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|_| TransportErrorKind::Connect)?;
        let state = Rc::clone(&self.state);
        {
            let mut s = state.borrow_mut();
            s.open += 1;
            s.opened_total += 1;
        }
        let guard = OpenGuard(state);
        let task = tokio::task::spawn_local(async move {
            let _guard = guard;
            let _ = conn.await;
        });
        Ok(Connection {
            sender,
            task: task.abort_handle(),
        })
    }

    /// An idle connection ready for a request, or a new one.
    async fn checkout(&self) -> Result<Connection, TransportErrorKind> {
        loop {
            let idle = self.state.borrow_mut().idle.pop();
            let Some(mut conn) = idle else { break };
            if conn.sender.is_closed() {
                conn.discard();
                continue;
            }
            if conn.sender.ready().await.is_ok() {
                return Ok(conn);
            }
            // Closed while idle (the server's keep-alive timeout): nothing was sent on it, so
            // taking another connection is not a retry of the request.
            conn.discard();
        }
        self.connect().await
    }

    fn checkin(&self, conn: Connection) {
        if conn.sender.is_closed() {
            conn.discard();
        } else {
            self.state.borrow_mut().idle.push(conn);
        }
    }

    /// Sends `request` and reads the whole answer, all before `deadline`.
    ///
    /// A connection that fails to open is a [`TransportErrorKind::Connect`] error, an answer not
    /// complete by the deadline a [`TransportErrorKind::Timeout`]; the connection of any failed
    /// request is closed and not reused.
    pub async fn send(
        &self,
        request: http::Request<RequestBody>,
        deadline: Instant,
    ) -> Result<Answer, TransportErrorKind> {
        let mut conn = match tokio::time::timeout_at(deadline, self.checkout()).await {
            Ok(conn) => conn?,
            Err(_) => return Err(TransportErrorKind::Connect),
        };
        let exchange = async {
            let response = conn.sender.send_request(request).await.map_err(classify)?;
            let status = response.status().as_u16();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(classify)?
                .to_bytes();
            Ok(Answer { status, body })
        };
        match tokio::time::timeout_at(deadline, exchange).await {
            Ok(Ok(answer)) => {
                self.checkin(conn);
                Ok(answer)
            }
            Ok(Err(kind)) => {
                conn.discard();
                Err(kind)
            }
            Err(_) => {
                conn.discard();
                Err(TransportErrorKind::Timeout)
            }
        }
    }

    /// Closes every idle connection.
    pub fn close_idle(&self) {
        let idle = std::mem::take(&mut self.state.borrow_mut().idle);
        for conn in idle {
            conn.discard();
        }
    }
}

struct OpenGuard(Rc<RefCell<PoolState>>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        let mut s = self.0.borrow_mut();
        s.open = s.open.saturating_sub(1);
    }
}

/// Sorts a hyper error into the transport error kinds the measurement counts.
fn classify(err: hyper::Error) -> TransportErrorKind {
    if err.is_incomplete_message() || err.is_canceled() || err.is_closed() {
        return TransportErrorKind::Reset;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(&err);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            if matches!(
                io.kind(),
                K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof
            ) {
                return TransportErrorKind::Reset;
            }
        }
        source = cause.source();
    }
    TransportErrorKind::Other
}
