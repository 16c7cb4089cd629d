//! A stub served by loadgate on loopback: HTTP/1.1 with keep-alive, on a thread and runtime of its
//! own so that its timers never share the generator's loop. Each request is matched to a route,
//! then, from the stub's seeded stream (three draws per request, in arrival order), held
//! unanswered (a timeout), answered with the error status, or answered with the route's answer,
//! each after a delay drawn from the latency distribution. A fault ([`StubFault`]) changes the
//! delays and the error share from the moment it is applied; every request records the fault it
//! was served under, so that the run can verify the fault from the stub's own figures.

use super::latency::Latency;
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// The largest request head or body line a stub reads, in bytes.
const MAX_LINE: usize = 64 * 1024;

/// The largest request body a stub reads, in bytes.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// What one stub serves.
#[derive(Clone, Debug, PartialEq)]
pub struct StubSpec {
    /// Its name in the config and the result.
    pub name: String,
    /// The port on 127.0.0.1; 0 takes a free one.
    pub port: u16,
    /// The routes, matched in order; a request no route matches gets 404 at once.
    pub routes: Vec<Route>,
    /// The delay of every answer (a route may have its own).
    pub latency: Latency,
    /// The share of requests answered with `error_status` (after the delay).
    pub errors: f64,
    /// The status of those answers.
    pub error_status: u16,
    /// The share of requests never answered: the connection is held until the client closes it
    /// or the stub stops.
    pub timeouts: f64,
    /// The seed of its stream of draws.
    pub seed: u64,
}

/// One route of a stub.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Route {
    /// The method it answers (`GET`); `None` answers every method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The path, without the query: exact, or a prefix when it ends with `*`.
    pub path: String,
    /// The status of its answer.
    pub status: u16,
    /// The body of its answer.
    pub body: String,
    /// The `content-type` of its answer.
    pub content_type: String,
    /// Its own latency, instead of the stub's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
}

impl Route {
    /// Whether `method` and `target` (a request target, with its query) reach this route.
    pub fn matches(&self, method: &str, target: &str) -> bool {
        let path = target.split(['?', '#']).next().unwrap_or(target);
        let method_ok = self
            .method
            .as_deref()
            .is_none_or(|m| m.eq_ignore_ascii_case(method));
        let path_ok = match self.path.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => path == self.path,
        };
        method_ok && path_ok
    }

    /// `GET /price` or `* /price*`.
    pub fn label(&self) -> String {
        format!("{} {}", self.method.as_deref().unwrap_or("*"), self.path)
    }
}

/// A change to a stub's answers, applied by a `[[fault]]` until it is removed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StubFault {
    /// Added to every delay.
    pub extra: Duration,
    /// Every drawn delay is multiplied by it first (1 leaves it).
    pub factor: f64,
    /// The error share while it holds, instead of the stub's.
    pub errors: Option<f64>,
}

impl StubFault {
    /// The delay `drawn` becomes under this fault.
    pub fn delay(&self, drawn: Duration) -> Duration {
        let factor = if self.factor.is_finite() && self.factor >= 0.0 {
            self.factor
        } else {
            1.0
        };
        // In seconds, bounded before it becomes a Duration: a large factor cannot overflow.
        let max = super::latency::MAX_DELAY.as_secs_f64();
        let secs = (drawn.as_secs_f64() * factor + self.extra.as_secs_f64()).min(max);
        Duration::from_secs_f64(secs.max(0.0))
    }
}

/// What the stub did under one state of its faults: the figures that verify a fault from the
/// stub's side (every request it served while the fault held, and the delays it applied).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    /// The state's number: 0 before any fault, then one more at each change.
    pub generation: u64,
    /// Requests served in that state.
    pub requests: u64,
    /// Of those, answered with the error status.
    pub errors: u64,
    /// Of those, held unanswered.
    pub timeouts: u64,
    /// The least delay applied, in milliseconds.
    pub delay_min_ms: f64,
    /// The mean delay applied, in milliseconds.
    pub delay_mean_ms: f64,
    /// The largest delay applied, in milliseconds.
    pub delay_max_ms: f64,
    /// The sum of the delays, for the mean.
    #[serde(skip)]
    pub(crate) delay_sum_ms: f64,
}

impl Applied {
    fn add(&mut self, delay: Duration, outcome: Outcome) {
        let ms = delay.as_secs_f64() * 1e3;
        if self.requests == 0 || ms < self.delay_min_ms {
            self.delay_min_ms = ms;
        }
        self.delay_max_ms = self.delay_max_ms.max(ms);
        self.delay_sum_ms += ms;
        self.requests += 1;
        self.delay_mean_ms = self.delay_sum_ms / self.requests as f64;
        match outcome {
            Outcome::Error => self.errors += 1,
            Outcome::Timeout => self.timeouts += 1,
            Outcome::Answer | Outcome::Unmatched => {}
        }
    }
}

/// One second of a stub's life, counted from its start.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StubSecond {
    /// Requests that arrived in it.
    pub requests: u64,
    /// Of those, answered with the error status.
    pub errors: u64,
    /// Of those, held unanswered.
    pub timeouts: u64,
    /// The mean delay applied to them, in milliseconds.
    pub delay_mean_ms: f64,
    /// The largest.
    pub delay_max_ms: f64,
}

/// Percentiles of a stub's delays or serving times.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StubPercentiles {
    /// Median, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile, in milliseconds.
    pub p99_ms: f64,
    /// Largest, in milliseconds.
    pub max_ms: f64,
}

/// The requests one route of a stub received.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RouteRecord {
    /// `GET /price`.
    pub route: String,
    /// Requests it answered (errors and timeouts included).
    pub requests: u64,
}

/// What a stub saw and did, as the result records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StubRecord {
    /// Its name.
    pub name: String,
    /// Where it listened.
    pub url: String,
    /// Its latency, as configured.
    pub latency: String,
    /// Requests received.
    pub requests: u64,
    /// Answered with the error status (configured or by a fault).
    pub errors: u64,
    /// Held unanswered.
    pub timeouts: u64,
    /// Matched no route (answered 404 at once).
    pub unmatched: u64,
    /// The delays it applied: the dependency's latency as the service met it.
    pub delay: StubPercentiles,
    /// From a request's last byte read to its answer's last byte written: the delay plus the
    /// stub's own time (a stub that lags behind its delays is named).
    pub served: StubPercentiles,
    /// Per route.
    pub routes: Vec<RouteRecord>,
    /// Per state of its faults (generation 0: before any).
    pub states: Vec<Applied>,
    /// Second by second from its start.
    pub seconds: Vec<StubSecond>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Answer,
    Error,
    Timeout,
    Unmatched,
}

/// The state every connection shares.
struct Shared {
    spec: StubSpec,
    started: Instant,
    rng: Mutex<ChaCha8Rng>,
    fault: Mutex<(u64, Option<StubFault>)>,
    stats: Mutex<Stats>,
}

struct Stats {
    requests: u64,
    errors: u64,
    timeouts: u64,
    unmatched: u64,
    per_route: Vec<u64>,
    delays_us: Histogram<u64>,
    served_us: Histogram<u64>,
    states: BTreeMap<u64, Applied>,
    seconds: Vec<(StubSecond, f64)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn histogram() -> Histogram<u64> {
    // 1 µs to an hour, 3 significant digits.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

fn percentiles(h: &Histogram<u64>) -> StubPercentiles {
    if h.is_empty() {
        return StubPercentiles::default();
    }
    let ms = |us: u64| us as f64 / 1e3;
    StubPercentiles {
        p50_ms: ms(h.value_at_quantile(0.5)),
        p99_ms: ms(h.value_at_quantile(0.99)),
        max_ms: ms(h.max()),
    }
}

impl Shared {
    /// Draws the request's fate: its outcome, its delay and the fault state it is served under.
    fn decide(&self, method: &str, target: &str) -> (Outcome, Option<usize>, Duration, u64) {
        let route = self
            .spec
            .routes
            .iter()
            .position(|r| r.matches(method, target));
        let (generation, fault) = *lock(&self.fault);
        let Some(index) = route else {
            return (Outcome::Unmatched, None, Duration::ZERO, generation);
        };
        // Three draws for every routed request, whatever it becomes: the stream stays aligned.
        let (u_timeout, u_error, u_delay) = {
            let mut rng = lock(&self.rng);
            (
                rng.random::<f64>(),
                rng.random::<f64>(),
                rng.random::<f64>(),
            )
        };
        let errors = fault.and_then(|f| f.errors).unwrap_or(self.spec.errors);
        let outcome = if u_timeout < self.spec.timeouts {
            Outcome::Timeout
        } else if u_error < errors {
            Outcome::Error
        } else {
            Outcome::Answer
        };
        let latency = self.spec.routes[index]
            .latency
            .as_ref()
            .unwrap_or(&self.spec.latency);
        let drawn = latency.sample(u_delay);
        let delay = match fault {
            Some(f) => f.delay(drawn),
            None => drawn,
        };
        (outcome, Some(index), delay, generation)
    }

    fn record(
        &self,
        outcome: Outcome,
        route: Option<usize>,
        delay: Duration,
        generation: u64,
        arrived: Instant,
    ) {
        let mut stats = lock(&self.stats);
        stats.requests += 1;
        match outcome {
            Outcome::Error => stats.errors += 1,
            Outcome::Timeout => stats.timeouts += 1,
            Outcome::Unmatched => stats.unmatched += 1,
            Outcome::Answer => {}
        }
        if outcome == Outcome::Unmatched {
            return;
        }
        if let Some(i) = route
            && let Some(n) = stats.per_route.get_mut(i)
        {
            *n += 1;
        }
        let us = (delay.as_micros() as u64).clamp(1, 3_600_000_000);
        let _ = stats.delays_us.record(us);
        stats
            .states
            .entry(generation)
            .or_insert_with(|| Applied {
                generation,
                ..Applied::default()
            })
            .add(delay, outcome);
        let second = arrived.saturating_duration_since(self.started).as_secs() as usize;
        if stats.seconds.len() <= second {
            stats
                .seconds
                .resize(second + 1, (StubSecond::default(), 0.0));
        }
        let (s, sum) = &mut stats.seconds[second];
        let ms = delay.as_secs_f64() * 1e3;
        s.requests += 1;
        match outcome {
            Outcome::Error => s.errors += 1,
            Outcome::Timeout => s.timeouts += 1,
            Outcome::Answer | Outcome::Unmatched => {}
        }
        *sum += ms;
        s.delay_mean_ms = *sum / s.requests as f64;
        s.delay_max_ms = s.delay_max_ms.max(ms);
    }

    fn served(&self, took: Duration) {
        let us = (took.as_micros() as u64).clamp(1, 3_600_000_000);
        let _ = lock(&self.stats).served_us.record(us);
    }

    fn snapshot(&self, url: &str) -> StubRecord {
        let stats = lock(&self.stats);
        StubRecord {
            name: self.spec.name.clone(),
            url: url.to_owned(),
            latency: self.spec.latency.describe(),
            requests: stats.requests,
            errors: stats.errors,
            timeouts: stats.timeouts,
            unmatched: stats.unmatched,
            delay: percentiles(&stats.delays_us),
            served: percentiles(&stats.served_us),
            routes: self
                .spec
                .routes
                .iter()
                .zip(&stats.per_route)
                .map(|(r, n)| RouteRecord {
                    route: r.label(),
                    requests: *n,
                })
                .collect(),
            states: stats.states.values().cloned().collect(),
            seconds: stats.seconds.iter().map(|(s, _)| s.clone()).collect(),
        }
    }
}

/// A handle that applies faults to a running stub and reads what it served under them, for a task
/// that outlives a borrow of the stub (a fault's schedule).
#[derive(Clone)]
pub struct StubController {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for StubController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StubController")
            .field("name", &self.shared.spec.name)
            .finish()
    }
}

impl StubController {
    /// The stub's name.
    pub fn name(&self) -> &str {
        &self.shared.spec.name
    }

    /// Applies `fault` (or removes any with `None`) from the next request on; returns the new
    /// state's generation, under which the stub counts what it serves.
    pub fn apply(&self, fault: Option<StubFault>) -> u64 {
        let mut state = lock(&self.shared.fault);
        state.0 += 1;
        state.1 = fault;
        state.0
    }

    /// What the stub served under state `generation` so far (`None`: no request yet).
    pub fn applied(&self, generation: u64) -> Option<Applied> {
        lock(&self.shared.stats).states.get(&generation).cloned()
    }
}

/// A stub that is serving; stopped by [`RunningStub::stop`] or when dropped.
pub struct RunningStub {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for RunningStub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningStub")
            .field("name", &self.shared.spec.name)
            .field("addr", &self.addr)
            .finish()
    }
}

impl RunningStub {
    /// Binds 127.0.0.1:`spec.port` (so a port in use fails here, before anything boots) and
    /// serves on a thread of its own.
    pub fn start(spec: StubSpec) -> io::Result<Self> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", spec.port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let routes = spec.routes.len();
        let shared = Arc::new(Shared {
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(spec.seed)),
            spec,
            started: Instant::now(),
            fault: Mutex::new((0, None)),
            stats: Mutex::new(Stats {
                requests: 0,
                errors: 0,
                timeouts: 0,
                unmatched: 0,
                per_route: vec![0; routes],
                delays_us: histogram(),
                served_us: histogram(),
                states: BTreeMap::new(),
                seconds: Vec::new(),
            }),
        });
        let (shutdown, stop_rx) = watch::channel(false);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let serving = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("stub-{}", shared.spec.name))
            .spawn(move || {
                runtime.block_on(accept_loop(listener, serving, stop_rx));
            })?;
        Ok(Self {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.shared.spec.name
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// A handle on this stub's faults.
    pub fn controller(&self) -> StubController {
        StubController {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Its latency, as configured.
    pub fn latency(&self) -> &Latency {
        &self.shared.spec.latency
    }

    /// The figures so far.
    pub fn record(&self) -> StubRecord {
        self.shared.snapshot(&self.url())
    }

    /// Stops serving (held requests are released, connections closed) and returns the figures.
    pub fn stop(mut self) -> StubRecord {
        self.halt();
        self.record()
    }

    fn halt(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(true);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RunningStub {
    fn drop(&mut self) {
        self.halt();
    }
}

async fn accept_loop(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            // Finished connections are reaped as they end, not kept until the stub stops.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors, say: no busy loop while it lasts.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let shared = Arc::clone(&shared);
                let stop = stop.clone();
                connections.spawn(async move {
                    let _ = serve(stream, shared, stop).await;
                });
            }
        }
    }
    // Every connection sees the stop too; give them a moment to close, then drop them.
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    connections.abort_all();
}

/// Reads one line (up to CRLF) into `line`; `Ok(false)` at the end of the stream.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut String,
) -> io::Result<bool> {
    line.clear();
    let n = (&mut *reader).take(MAX_LINE as u64).read_line(line).await?;
    if n == 0 {
        return Ok(false);
    }
    if !line.ends_with('\n') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a request line longer than the stub reads",
        ));
    }
    Ok(true)
}

/// Reads a chunked body to its end.
async fn skip_chunked<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<()> {
    let mut line = String::new();
    let mut total = 0usize;
    loop {
        if !read_line(reader, &mut line).await? {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let size_text = line.trim().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a bad chunk size"))?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                if !read_line(reader, &mut line).await? || line.trim().is_empty() {
                    return Ok(());
                }
            }
        }
        total = total.saturating_add(size);
        if total > MAX_BODY {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a body larger than the stub reads",
            ));
        }
        let mut chunk = vec![0u8; size + 2];
        reader.read_exact(&mut chunk).await?;
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

async fn serve(
    stream: TcpStream,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut line = String::new();
    loop {
        let more = tokio::select! {
            _ = stop.changed() => return Ok(()),
            more = read_line(&mut reader, &mut line) => more?,
        };
        if !more {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_owned();
        let target = parts.next().unwrap_or_default().to_owned();
        let version = parts.next().unwrap_or_default().to_owned();
        let mut content_length = 0usize;
        let mut chunked = false;
        let mut close = version.eq_ignore_ascii_case("HTTP/1.0");
        loop {
            if !read_line(&mut reader, &mut line).await? {
                return Ok(());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let value = value.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    content_length = value.parse().map_err(|_| {
                        io::Error::new(io::ErrorKind::InvalidData, "a bad content-length")
                    })?;
                } else if name.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = value.to_ascii_lowercase().contains("chunked");
                } else if name.eq_ignore_ascii_case("connection") {
                    let value = value.to_ascii_lowercase();
                    if value.contains("close") {
                        close = true;
                    } else if value.contains("keep-alive") {
                        close = false;
                    }
                }
            }
        }
        if chunked {
            skip_chunked(&mut reader).await?;
        } else if content_length > 0 {
            if content_length > MAX_BODY {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a body larger than the stub reads",
                ));
            }
            let mut body = vec![0u8; content_length];
            reader.read_exact(&mut body).await?;
        }
        let arrived = Instant::now();
        let (outcome, route, delay, generation) = shared.decide(&method, &target);
        shared.record(outcome, route, delay, generation, arrived);
        let (status, content_type, body) = match outcome {
            Outcome::Unmatched => (
                404,
                "text/plain",
                format!("no stub route for {method} {target}\n"),
            ),
            Outcome::Timeout => {
                // Never answered: held until the client gives up (closes) or the stub stops.
                let mut sink = [0u8; 1024];
                loop {
                    tokio::select! {
                        _ = stop.changed() => return Ok(()),
                        n = reader.read(&mut sink) => match n {
                            Ok(0) | Err(_) => return Ok(()),
                            Ok(_) => {}
                        },
                    }
                }
            }
            Outcome::Error => (
                shared.spec.error_status,
                "text/plain",
                format!("stub {} injected error\n", shared.spec.name),
            ),
            Outcome::Answer => {
                let r = route.and_then(|i| shared.spec.routes.get(i));
                let r = r.expect("an answered request has its route");
                (r.status, r.content_type.as_str(), r.body.clone())
            }
        };
        if !delay.is_zero() && outcome != Outcome::Unmatched {
            tokio::select! {
                _ = stop.changed() => return Ok(()),
                _ = tokio::time::sleep(delay) => {}
            }
        }
        // 204 and 304 have no body (nor its length); a HEAD answer has the length, not the body.
        let bodiless = status == 204 || status == 304;
        let length = if bodiless {
            String::new()
        } else {
            format!("content-length: {}\r\n", body.len())
        };
        let head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\n{length}{}\r\n",
            reason(status),
            if close { "connection: close\r\n" } else { "" }
        );
        write.write_all(head.as_bytes()).await?;
        if !bodiless && !method.eq_ignore_ascii_case("HEAD") {
            write.write_all(body.as_bytes()).await?;
        }
        shared.served(arrived.elapsed());
        if close {
            let _ = write.shutdown().await;
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(routes: Vec<Route>) -> StubSpec {
        StubSpec {
            name: "price".to_owned(),
            port: 0,
            routes,
            latency: Latency::NONE,
            errors: 0.0,
            error_status: 503,
            timeouts: 0.0,
            seed: 7,
        }
    }

    fn route(method: Option<&str>, path: &str) -> Route {
        Route {
            method: method.map(str::to_owned),
            path: path.to_owned(),
            status: 200,
            body: "{\"price\":42}".to_owned(),
            content_type: "application/json".to_owned(),
            latency: None,
        }
    }

    /// Sends `request` on a fresh connection and reads the answer's status line and body.
    async fn send(url: &str, request: &str) -> (u16, String) {
        let addr = url.trim_start_matches("http://");
        let stream = TcpStream::connect(addr).await.expect("connect");
        let (read, mut write) = stream.into_split();
        write.write_all(request.as_bytes()).await.expect("write");
        let mut reader = BufReader::new(read);
        let mut line = String::new();
        reader.read_line(&mut line).await.expect("status");
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .expect("code")
            .parse()
            .expect("num");
        let mut length = 0usize;
        loop {
            line.clear();
            reader.read_line(&mut line).await.expect("header");
            if line.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().expect("length");
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).await.expect("body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    fn get(path: &str) -> String {
        format!("GET {path} HTTP/1.1\r\nhost: stub\r\nconnection: close\r\n\r\n")
    }

    #[test]
    fn routes_match_method_and_path_exactly_or_by_prefix() {
        let r = route(Some("GET"), "/price");
        assert!(r.matches("GET", "/price"));
        assert!(r.matches("get", "/price?sku=1"));
        assert!(!r.matches("POST", "/price"));
        assert!(!r.matches("GET", "/prices"));
        let any = route(None, "/fraud/*");
        assert!(any.matches("POST", "/fraud/check"));
        assert!(!any.matches("POST", "/fraudulent"));
        assert_eq!(any.label(), "* /fraud/*");
    }

    #[test]
    fn a_fault_scales_then_adds() {
        let f = StubFault {
            extra: Duration::from_millis(180),
            factor: 2.0,
            errors: None,
        };
        assert_eq!(
            f.delay(Duration::from_millis(10)),
            Duration::from_millis(200)
        );
    }

    #[tokio::test]
    async fn a_stub_answers_its_routes_and_counts_what_it_served() {
        let stub = RunningStub::start(spec(vec![route(Some("GET"), "/price")])).expect("start");
        let url = stub.url();
        assert_eq!(
            send(&url, &get("/price")).await,
            (200, "{\"price\":42}".to_owned())
        );
        let (status, _) = send(&url, &get("/nothing")).await;
        assert_eq!(status, 404);
        // A body with a content-length, then a chunked one, on one connection each.
        let post = "POST /price HTTP/1.1\r\ncontent-length: 3\r\nconnection: close\r\n\r\nabc";
        assert_eq!(send(&url, post).await.0, 404, "POST is not routed");
        let chunked = "GET /price HTTP/1.1\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        assert_eq!(send(&url, chunked).await.0, 200);
        let record = stub.stop();
        assert_eq!(record.requests, 4);
        assert_eq!(record.unmatched, 2);
        assert_eq!(record.routes[0].requests, 2);
        assert_eq!(record.states.len(), 1);
        assert_eq!(record.states[0].generation, 0);
        assert_eq!(record.states[0].requests, 2);
    }

    #[tokio::test]
    async fn a_fault_is_applied_from_the_next_request_and_verified_from_the_stubs_figures() {
        let mut s = spec(vec![route(None, "/price")]);
        s.latency = Latency::Fixed {
            delay: Duration::from_millis(1),
        };
        let stub = RunningStub::start(s).expect("start");
        let url = stub.url();
        send(&url, &get("/price")).await;
        let generation = stub.controller().apply(Some(StubFault {
            extra: Duration::from_millis(30),
            factor: 1.0,
            errors: Some(1.0),
        }));
        assert_eq!(generation, 1);
        assert_eq!(
            stub.controller().applied(generation),
            None,
            "nothing served under it yet"
        );
        let started = Instant::now();
        assert_eq!(send(&url, &get("/price")).await.0, 503);
        assert!(started.elapsed() >= Duration::from_millis(31));
        let applied = stub
            .controller()
            .applied(generation)
            .expect("served under the fault");
        assert_eq!((applied.requests, applied.errors), (1, 1));
        assert!((applied.delay_min_ms - 31.0).abs() < 1e-6, "{applied:?}");
        let removed = stub.controller().apply(None);
        assert_eq!(send(&url, &get("/price")).await.0, 200);
        let after = stub.controller().applied(removed).expect("served after");
        assert!((after.delay_max_ms - 1.0).abs() < 1e-6, "{after:?}");
        let record = stub.stop();
        assert_eq!(record.states.len(), 3);
        assert_eq!(record.errors, 1);
    }

    #[tokio::test]
    async fn the_stream_of_draws_is_the_seeds() {
        let mut s = spec(vec![route(None, "/")]);
        s.errors = 0.5;
        let outcomes = |s: StubSpec| async move {
            let stub = RunningStub::start(s).expect("start");
            let url = stub.url();
            let mut statuses = Vec::new();
            for _ in 0..40 {
                statuses.push(send(&url, &get("/")).await.0);
            }
            statuses
        };
        let a = outcomes(s.clone()).await;
        let b = outcomes(s.clone()).await;
        assert_eq!(a, b);
        assert!(a.contains(&503) && a.contains(&200), "{a:?}");
        s.seed = 8;
        assert_ne!(outcomes(s).await, a);
    }

    #[tokio::test]
    async fn a_timed_out_request_is_held_until_the_stub_stops() {
        let mut s = spec(vec![route(None, "/")]);
        s.timeouts = 1.0;
        let stub = RunningStub::start(s).expect("start");
        let addr = stub.url().trim_start_matches("http://").to_owned();
        let mut stream = TcpStream::connect(&addr).await.expect("connect");
        stream.write_all(get("/").as_bytes()).await.expect("write");
        let mut buf = [0u8; 64];
        let waited = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await;
        assert!(waited.is_err(), "no answer within 200 ms");
        let record = tokio::task::spawn_blocking(move || stub.stop())
            .await
            .expect("stopped");
        assert_eq!(record.timeouts, 1);
        // The stub closed the connection without an answer.
        let n = stream.read(&mut buf).await.unwrap_or(0);
        assert_eq!(n, 0);
    }

    #[test]
    fn a_port_in_use_fails_at_start() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut s = spec(vec![]);
        s.port = taken.local_addr().expect("addr").port();
        let err = RunningStub::start(s).expect_err("the port is taken");
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
    }
}
