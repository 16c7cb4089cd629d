//! The calibration figure: a fixed reference load against a built-in trivial HTTP server, measured
//! before and after the run's phases, on the same cores as the generator and the target.
//!
//! The figure is closed-loop round trips per second over one keep-alive connection on 127.0.0.1:
//! the client thread on the generator's core sends `GET /` and waits for the 2-byte answer of a
//! server thread on the target's first core, again and again, for a few short bursts; the figure
//! is the median burst's rate. Each round trip is two cross-core wake-ups, two small writes and two
//! reads, so it moves with the things that move a service's latency on a shared machine: CPU speed,
//! steal, a neighbour on either core, the kernel. It does not depend on the service.
//!
//! Two uses (STATISTICS.md §9): the base's and the head's figures must agree within a tolerance,
//! or the machines (or their moods) differ and the comparison is inconclusive; and the run's own
//! figures before and after its phases must agree, or the machine drifted during the run.

use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// Bursts measured; the figure is their median.
pub const BURSTS: usize = 5;
/// How long each burst runs.
pub const BURST: Duration = Duration::from_millis(200);
/// Round trips run and discarded before the first burst (connection, caches, frequency).
pub const WARMUP_ROUND_TRIPS: usize = 200;

const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: calibration\r\n\r\n";
const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// One calibration measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The median burst's round trips per second.
    pub round_trips_per_sec: f64,
    /// Every burst's round trips per second, in order.
    pub bursts: Vec<f64>,
}

/// The run's calibration, as recorded in the result (top-level `calibration`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The figure compared between base and head: the mean of `before` and `after` (or the one
    /// that was measured) in round trips per second.
    pub figure: f64,
    /// What the figure is, for people reading the result.
    pub method: String,
    /// Measured before the first phase.
    pub before: Measurement,
    /// Measured after the last phase; absent when the run stopped before it.
    pub after: Option<Measurement>,
    /// `after / before − 1`, when both exist: the machine's drift during the run.
    pub drift: Option<f64>,
}

impl Calibration {
    /// The calibration of a run measured `before` its phases.
    pub fn started(before: Measurement) -> Self {
        Self {
            figure: before.round_trips_per_sec,
            method: format!(
                "closed-loop HTTP/1.1 round trips per second over one keep-alive connection on \
                 127.0.0.1 to a built-in trivial server, median of {BURSTS} bursts of {} ms",
                BURST.as_millis()
            ),
            before,
            after: None,
            drift: None,
        }
    }

    /// Adds the measurement taken `after` the phases.
    pub fn finish(&mut self, after: Measurement) {
        let (b, a) = (self.before.round_trips_per_sec, after.round_trips_per_sec);
        self.figure = (a + b) / 2.0;
        self.drift = (b > 0.0).then(|| a / b - 1.0);
        self.after = Some(after);
    }
}

/// Measures the figure with the client pinned to `client_core` and the server to `server_core`
/// (each when given). Blocking: call it from a thread that may block for about a second.
pub fn measure(client_core: Option<usize>, server_core: Option<usize>) -> io::Result<Measurement> {
    let listener = TcpListener::bind(("127.0.0.1", 0))?;
    let addr = listener.local_addr()?;
    let (connected, client_addr) = channel();
    let server = std::thread::Builder::new()
        .name("loadgate-calibration-server".to_owned())
        .spawn(move || -> io::Result<()> {
            if let Some(core) = server_core {
                let _ = crate::engine::pin_current_thread(core);
            }
            let stream = accept_own(&listener, &client_addr)?;
            serve(stream)
        })?;
    let client = std::thread::Builder::new()
        .name("loadgate-calibration-client".to_owned())
        .spawn(move || -> io::Result<Measurement> {
            if let Some(core) = client_core {
                let _ = crate::engine::pin_current_thread(core);
            }
            let mut stream = TcpStream::connect(addr)?;
            // A failed send means the server thread is gone; its error is the one reported.
            let _ = connected.send(stream.local_addr()?);
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(Duration::from_secs(5)))?;
            let outcome = drive(&mut stream);
            let _ = stream.shutdown(Shutdown::Both);
            outcome
        })?;
    let measured = client
        .join()
        .map_err(|_| io::Error::other("the calibration client panicked"))?;
    let served = server
        .join()
        .map_err(|_| io::Error::other("the calibration server panicked"))?;
    let measured = measured?;
    served?;
    Ok(measured)
}

/// Accepts the calibration client's own connection, whose address the client sends once it is
/// connected. Any other connection to the port (another program that found it free a moment
/// before and connects to it) is closed and skipped: served instead, it would take the one
/// connection the figure is measured on, and the client would wait in the backlog of a listener
/// that is gone.
fn accept_own(listener: &TcpListener, client: &Receiver<SocketAddr>) -> io::Result<TcpStream> {
    let own = client
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| io::Error::other("the calibration client did not connect"))?;
    loop {
        let (stream, peer) = listener.accept()?;
        if peer == own {
            return Ok(stream);
        }
    }
}

fn drive(stream: &mut TcpStream) -> io::Result<Measurement> {
    let mut buf = [0u8; 256];
    for _ in 0..WARMUP_ROUND_TRIPS {
        round_trip(stream, &mut buf)?;
    }
    let mut bursts = Vec::with_capacity(BURSTS);
    for _ in 0..BURSTS {
        let started = Instant::now();
        let mut n = 0u64;
        while started.elapsed() < BURST {
            round_trip(stream, &mut buf)?;
            n += 1;
        }
        bursts.push(n as f64 / started.elapsed().as_secs_f64());
    }
    Ok(Measurement {
        round_trips_per_sec: crate::stats::median(&bursts).unwrap_or(0.0),
        bursts,
    })
}

fn round_trip(stream: &mut TcpStream, buf: &mut [u8]) -> io::Result<()> {
    stream.write_all(REQUEST)?;
    // `read_exact` reads again after `Interrupted`: a signal (a child's SIGCHLD, say) interrupts
    // a read with a timeout even under SA_RESTART, and is not the end of the peer.
    stream.read_exact(&mut buf[..RESPONSE.len()])
}

/// Answers every request on `stream` with the fixed response until the client closes.
fn serve(mut stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut buf = [0u8; 256];
    loop {
        match stream.read_exact(&mut buf[..REQUEST.len()]) {
            Ok(()) => stream.write_all(RESPONSE)?,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset
                ) =>
            {
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_round_trips_on_loopback() {
        let m = measure(None, None).expect("calibration runs");
        assert_eq!(m.bursts.len(), BURSTS);
        // A loopback round trip takes microseconds to a few milliseconds even on a busy machine;
        // zero would mean the loop never ran.
        assert!(m.round_trips_per_sec > 10.0, "{m:?}");
        assert!(m.bursts.iter().all(|b| *b > 0.0), "{m:?}");
        let mut sorted = m.bursts.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(m.round_trips_per_sec, sorted[BURSTS / 2]);
    }

    #[test]
    fn a_connection_from_anyone_else_is_skipped_for_the_clients_own() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind");
        let addr = listener.local_addr().expect("addr");
        // Connected first, so the first in the backlog.
        let _stranger = TcpStream::connect(addr).expect("a stranger connects");
        let own = TcpStream::connect(addr).expect("the client connects");
        let (connected, client_addr) = channel();
        connected
            .send(own.local_addr().expect("addr"))
            .expect("send");
        let accepted = accept_own(&listener, &client_addr).expect("accepts the client");
        assert_eq!(
            accepted.peer_addr().expect("peer"),
            own.local_addr().expect("addr")
        );
    }

    #[test]
    fn a_client_that_never_connects_is_an_error_not_a_hang() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind");
        let (connected, client_addr) = channel::<SocketAddr>();
        drop(connected);
        assert!(accept_own(&listener, &client_addr).is_err());
    }

    #[test]
    fn drift_is_after_over_before() {
        let at = |r: f64| Measurement {
            round_trips_per_sec: r,
            bursts: vec![r],
        };
        let mut c = Calibration::started(at(10_000.0));
        assert_eq!(c.figure, 10_000.0);
        assert_eq!(c.drift, None);
        c.finish(at(9_000.0));
        assert_eq!(c.figure, 9_500.0);
        assert!((c.drift.unwrap() + 0.1).abs() < 1e-12);
    }

    #[test]
    fn the_server_answers_http() {
        // The fixed response is a complete HTTP/1.1 answer that any client could parse.
        let text = std::str::from_utf8(RESPONSE).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK"));
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
    }
}
