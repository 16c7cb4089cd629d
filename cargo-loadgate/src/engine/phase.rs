//! One open-loop phase: sessions arrive on the seeded schedule whatever the target does, each
//! request is timed from its intended send time, and the generator reports when it could not
//! keep the schedule.
//!
//! Everything runs on the calling thread (a `LocalSet` inside the caller's runtime): the
//! dispatcher, one task per session, the connection tasks and the pacing timer. One thread keeps
//! the per-request cost low (no cross-thread wake-ups, no atomics on the hot path) and makes the
//! generator's CPU time a single thread's, which `getrusage(RUSAGE_THREAD)` reads. A generator of
//! several loops runs this same loop on each of its threads, each on its shard of the schedule
//! (`super::loops`).

use super::affinity::pinned_core;
use super::classify::{AnswerClass, classify};
use super::clock::Clock;
use super::http1::WireRequest;
use super::loops::{LoopLink, LoopReport, Shard};
use super::pool::{Exchange, Pool};
use super::sessions::SessionSlots;
use super::signal::CancellationSignal;
use super::timer::PreciseTimer;
use crate::config::{
    FailoverPolicy, GeneratorConfig, MAX_CONNECTIONS, RetryPolicy, WorkloadConfig,
};
use crate::measure::{
    CpuScope, FinishInfo, Outcome, PhaseMeasurement, PhaseRecorder, Progress, TransportErrorKind,
    Window, cpu_time,
};
use crate::workload::{CompileError, CompiledWorkload, RenderedRequest, Schedule, SessionPlan};
use http::HeaderValue;
use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::Notify;

/// The length of the windows of the series, of progress reports and of abort checks.
pub const WINDOW: Duration = Duration::from_secs(1);

/// Each wake-up of the pacing timer also sends the requests due within this window after the
/// one it was armed for, early, so that arrivals close together share one wake-up (one
/// `epoll_wait` return, one `timerfd_settime`). The first request of a wake-up is never early, so
/// this adds no pacing lag (the 250 µs grid it replaces rounded wake-ups up and added up to
/// 250 µs). A request sent early is timed from its actual send, never from its later intended
/// time (see [`latency_origin`]): early sending can make latency look worse, never better.
const EARLY_WINDOW: Duration = Duration::from_micros(250);

/// Extra time, past the request timeout, that the end of a phase waits for outstanding requests
/// before counting them as timeouts (the timeout's own timer has 1 ms granularity).
const GRACE_MARGIN: Duration = Duration::from_millis(250);

/// What one phase sends.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseSpec {
    /// The phase's name, e.g. `ramp-50%`.
    pub name: String,
    /// Offered session arrivals per second (a Poisson process).
    pub sessions_per_sec: f64,
    /// How long arrivals are measured, after the warm-up.
    pub duration: Duration,
    /// How long arrivals run before the measured part; their requests are excluded from the
    /// figures. Arrivals run for `warmup + duration` in all.
    pub warmup: Duration,
    /// The seed of the schedule.
    pub seed: u64,
    /// What `{{session}}` renders for the phase's first session; later sessions count up from it.
    /// The plan gives each phase of a run its own range, so a value built from it (a user name,
    /// an idempotency key) is not sent again by a later phase to the same service.
    pub first_session: u64,
    /// Whether the measurement keeps every closed window's histograms (`windows.histograms`):
    /// what `cargo loadgate merge` adds the windows of the shards of `run --shard i/N` from. Off
    /// otherwise, since they cost tens of kilobytes of memory per window (an hour's soak would
    /// hold hundreds of megabytes) and no other reader needs them.
    pub keep_window_histograms: bool,
}

impl PhaseSpec {
    /// The seeded schedule this phase follows: `workload`'s sessions at `sessions_per_sec` for
    /// `warmup + duration`, drawn from `seed`. The plan (or `attack`) builds it once and hands
    /// it to [`run_phase`]; it is also what the phase's schedule hash is computed from.
    pub fn schedule(&self, workload: &WorkloadConfig) -> Schedule {
        Schedule::new(
            workload,
            self.sessions_per_sec,
            self.warmup + self.duration,
            self.seed,
        )
    }
}

/// Whether a phase should go on, decided once per closed window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WindowDecision {
    /// Keep sending.
    Continue,
    /// Stop sending now, for this reason (recorded in the measurement).
    Stop(String),
}

/// Callbacks of a running phase. Both are called on the engine's thread between requests, so
/// they must be quick.
pub struct PhaseHooks<'a> {
    /// Called once per window (1 s) with the live figures, for the CLI's progress line.
    pub progress: &'a dyn Fn(&Progress),
    /// Called with every closed window of the measured part; returning `Stop` ends the phase
    /// (the abort conditions of the phases).
    pub on_window: &'a dyn Fn(&Window) -> WindowDecision,
}

impl Default for PhaseHooks<'_> {
    fn default() -> Self {
        Self {
            progress: &|_| {},
            on_window: &|_| WindowDecision::Continue,
        }
    }
}

/// A phase that could not run at all. Failures of single requests are measured, not errors.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The base URL is not one the engine can send to.
    #[error(
        "invalid target url `{url}`: {reason}\nhint: give a base URL such as http://127.0.0.1:8080"
    )]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The host name of the URL did not resolve.
    #[error("cannot resolve the host of `{url}`")]
    Resolve {
        /// The URL as given.
        url: String,
        /// The resolver's error.
        #[source]
        source: std::io::Error,
    },
    /// The workload's requests could not be compiled.
    #[error("cannot compile the workload's requests")]
    Compile(#[source] CompileError),
    /// The pacing timer could not be created (it needs a tokio runtime with I/O enabled), or it
    /// failed during the phase (`timerfd_settime` refused a deadline, or its descriptor failed).
    #[error("the pacing timer failed")]
    Timer(#[source] std::io::Error),
    /// `generator.connections` asked for a fixed pool the target did not accept in full.
    #[error(
        "the target accepted {opened} of the {wanted} connections of the fixed pool \
         (`generator.connections`) within {timeout:?}\nhint: lower `connections` (or \
         `--connections`) to what the target allows, or set it to 0 to open connections on demand"
    )]
    Prewarm {
        /// Connections opened before one failed or the time ran out.
        opened: usize,
        /// `generator.connections`.
        wanted: usize,
        /// The time allowed for all of them (`generator.timeout`).
        timeout: Duration,
    },
}

/// Where requests go: the socket address, the `Host` header and the base path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetAddr {
    /// The address connected to.
    pub addr: SocketAddr,
    /// The `Host` header sent with every request (`host:port` as written in the URL).
    pub host: String,
    /// The URL's path without a trailing `/`, prepended to every operation's path.
    pub base_path: String,
}

impl TargetAddr {
    /// Parses `url` (`http://host:port/base`) and resolves its host.
    pub async fn resolve(url: &str) -> Result<Self, EngineError> {
        let invalid = |reason: &str| EngineError::InvalidUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: http::Uri = url.parse().map_err(|_| invalid("not a URL"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(invalid(
                    "https is not supported; the engine speaks plain HTTP/1.1",
                ));
            }
            _ => return Err(invalid("the scheme must be http")),
        }
        let authority = uri.authority().ok_or_else(|| invalid("no host"))?;
        let host_name = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(80);
        let addr = match host_name.parse::<std::net::IpAddr>() {
            Ok(ip) => SocketAddr::new(ip, port),
            Err(_) => tokio::net::lookup_host((host_name, port))
                .await
                .map_err(|source| EngineError::Resolve {
                    url: url.to_owned(),
                    source,
                })?
                .next()
                .ok_or_else(|| EngineError::Resolve {
                    url: url.to_owned(),
                    source: std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
                })?,
        };
        if uri.query().is_some() {
            return Err(invalid("a base URL cannot have a query"));
        }
        Ok(Self {
            addr,
            host: authority.as_str().to_owned(),
            base_path: uri.path().trim_end_matches('/').to_owned(),
        })
    }

    /// Whether the address is on the loopback interface.
    pub fn is_loopback(&self) -> bool {
        self.addr.ip().is_loopback()
    }
}

/// Shared state of a running phase; every task of the phase holds an `Rc` of it.
struct Ctx {
    clock: Clock,
    timer: PreciseTimer,
    /// The target's replicas (one unless `[target] replicas` is above one).
    replicas: Box<[Replica]>,
    /// `generator.failover`, used only with more than one replica.
    failover: FailoverPolicy,
    /// The seed the replica each session sticks to is drawn from.
    replica_seed: u64,
    /// Which replicas are ejected, until when.
    ejections: Ejections,
    workload: CompiledWorkload,
    base_path: String,
    recorder: RefCell<PhaseRecorder>,
    in_flight: Cell<usize>,
    /// The requests outstanding, (operation, intended time), so that the end of a phase can count
    /// the ones that never ended.
    outstanding: RefCell<Slab>,
    max_in_flight: usize,
    timeout: Duration,
    /// See [`PhaseSpec::first_session`].
    first_session: u64,
    /// No request is sent at or after this offset (the end of arrivals, or the time of a stop).
    arrivals_end: Cell<Duration>,
    /// Whether the phase was stopped (`stop`, an abort condition): no retry is sent after it.
    /// At the planned end retries go on while the phase drains, within its grace.
    stopped: Cell<bool>,
    idle: Notify,
    /// When the generator thread's CPU time was last read, and what it was: (offset, CPU time).
    cpu_mark: Cell<Option<(Duration, Duration)>>,
    /// Each operation's retry policy, by operation index; `None` when no operation is retried,
    /// so that a workload without retries pays one branch per request for them (see
    /// [`send_again`]).
    retry: Option<Box<[Option<RetryPolicy>]>>,
}

/// One replica of the target as a loop sees it: its connections and its `Host`.
struct Replica {
    pool: Pool,
    host: HeaderValue,
    /// By operation, the request encoded once for the phase when nothing in it varies
    /// ([`CompiledWorkload::render_static`]); empty with several replicas, whose failover encodes
    /// a request again for another replica's `Host`.
    prebuilt: Box<[Option<WireRequest>]>,
}

/// The failover choice: which replicas are ejected, until when, and where a session goes. Times
/// are the phase clock's offsets, given by the caller (the tests give their own).
#[derive(Debug)]
struct Ejections {
    until: Box<[Cell<Duration>]>,
}

impl Ejections {
    fn new(replicas: usize) -> Self {
        Self {
            until: (0..replicas).map(|_| Cell::new(Duration::ZERO)).collect(),
        }
    }

    fn is_ejected(&self, replica: usize, now: Duration) -> bool {
        self.until.get(replica).is_some_and(|u| u.get() > now)
    }

    /// The replica after `from` that is not ejected at `now` (the next one when all are).
    fn next(&self, from: usize, now: Duration) -> usize {
        let n = self.until.len().max(1);
        (1..n)
            .map(|k| (from + k) % n)
            .find(|&r| !self.is_ejected(r, now))
            .unwrap_or((from + 1) % n)
    }

    /// Where a session that sticks to `replica` sends at `now`: `None` to stay, or the replica it
    /// moves to because its own is ejected and that one is not.
    fn route(&self, replica: usize, now: Duration) -> Option<usize> {
        if !self.is_ejected(replica, now) {
            return None;
        }
        let next = self.next(replica, now);
        (!self.is_ejected(next, now)).then_some(next)
    }

    /// Ejects `replica` from `now` for `eject` (nothing for zero); whether it was not ejected
    /// already (a new ejection, to count).
    fn eject(&self, replica: usize, now: Duration, eject: Duration) -> bool {
        if eject.is_zero() {
            return false;
        }
        let fresh = !self.is_ejected(replica, now);
        if let Some(u) = self.until.get(replica) {
            u.set(now + eject);
        }
        fresh
    }
}

impl Ctx {
    /// Whether the target has more than one replica (the only case that records per replica,
    /// fails over and ejects).
    fn replicated(&self) -> bool {
        self.replicas.len() > 1
    }

    /// The replica session number `session` sticks to: drawn from the seed, so the same sessions
    /// go to the same replica whatever the generator's loops (which shard sessions by number).
    fn home_replica(&self, session: u64) -> usize {
        pick_replica(self.replica_seed, session, self.replicas.len())
    }

    /// Moves a session that sticks to an ejected replica to the next one that is not, counting
    /// the move.
    fn route(&self, replica: &mut usize, now: Duration) {
        if let Some(next) = self.ejections.route(*replica, now) {
            self.recorder.borrow_mut().replica_moved(*replica);
            *replica = next;
        }
    }

    /// Ejects `replica` from `now` for the policy's `eject` (counted once per ejection).
    fn eject(&self, replica: usize, now: Duration) {
        if self.ejections.eject(replica, now, self.failover.eject) {
            self.recorder.borrow_mut().replica_ejected(replica);
        }
    }
}

/// The replica (of `n`) session number `session` sticks to, drawn from `seed`.
fn pick_replica(seed: u64, session: u64, n: usize) -> usize {
    if n < 2 {
        return 0;
    }
    let mut z =
        (seed ^ session.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    // Lemire's multiply-shift: unbiased enough for a handful of replicas.
    ((u128::from(z) * n as u128) >> 64) as usize
}

/// Runs one open-loop phase against `target` (a base URL) and returns what it measured.
///
/// Sessions arrive on `schedule`, which the caller built from `spec` with
/// [`PhaseSpec::schedule`] (so the seed is drawn from once per phase, where its hash is taken),
/// for `spec.warmup + spec.duration`; step 0 of a session is intended at its arrival, step n at the answer of step n − 1 plus its think time.
/// Latency is measured from the intended time (from the actual send for a request sent early, see
/// `EARLY_WINDOW`), service time from the actual send. An arrival that
/// finds `generator.max_in_flight` requests outstanding is dropped and counted. Requests still
/// outstanding when arrivals end get the request timeout (plus a small margin) to finish, then
/// count as timeouts. `stop` and `hooks.on_window` end a phase early.
///
/// The returned future is not `Send`: run it on a current-thread runtime (ideally on a thread
/// pinned with [`super::pin_current_thread`]); its tasks run on the thread that polls it.
#[expect(
    clippy::too_many_arguments,
    reason = "the phase's inputs, each from its own owner (config, plan, shell); a struct would only rename them"
)]
pub async fn run_phase(
    target: &str,
    workload: &WorkloadConfig,
    generator: &GeneratorConfig,
    slo_latency: Duration,
    spec: &PhaseSpec,
    schedule: &Schedule,
    hooks: PhaseHooks<'_>,
    stop: CancellationSignal,
) -> Result<PhaseMeasurement, EngineError> {
    let pacing = Pacing {
        early_window: EARLY_WINDOW,
    };
    run_phase_paced(
        &[target],
        workload,
        generator,
        slo_latency,
        spec,
        schedule,
        hooks,
        stop,
        pacing,
        LoopRole::whole(generator),
    )
    .await
}

/// How the pacing timer wakes the engine (the tests widen the early window to see its effect).
#[derive(Clone, Copy, Debug)]
pub(super) struct Pacing {
    pub(super) early_window: Duration,
}

impl Pacing {
    /// The pacing every phase runs with.
    pub(super) const DEFAULT: Pacing = Pacing {
        early_window: EARLY_WINDOW,
    };
}

/// What one loop of the generator is: which sessions it sends, its share of the generator's
/// limits, and, when it is one of several, its line to the others.
#[derive(Debug)]
pub(super) struct LoopRole<'a> {
    /// The sessions of the schedule this loop sends.
    pub(super) shard: Shard,
    /// Its share of `generator.max-in-flight`.
    pub(super) max_in_flight: usize,
    /// Its share of `generator.connections` (0: opened on demand).
    pub(super) connections: usize,
    /// The most connections it opens on demand.
    pub(super) connection_cap: usize,
    /// The start line and the report channel of a loop of several; `None` for one loop alone.
    pub(super) link: Option<&'a LoopLink>,
}

impl LoopRole<'_> {
    /// The only loop: the whole schedule and the whole limits.
    pub(super) fn whole(generator: &GeneratorConfig) -> Self {
        Self {
            shard: Shard::WHOLE,
            max_in_flight: generator.max_in_flight,
            connections: generator.connections,
            connection_cap: MAX_CONNECTIONS.min(generator.max_in_flight),
            link: None,
        }
    }
}

/// [`run_phase`] with the pacing given, as one loop of the generator (`role`).
#[expect(
    clippy::too_many_arguments,
    reason = "run_phase's arguments plus the pacing and the loop's role; a private seam for the tests and the loops"
)]
pub(super) async fn run_phase_paced(
    targets: &[&str],
    workload: &WorkloadConfig,
    generator: &GeneratorConfig,
    slo_latency: Duration,
    spec: &PhaseSpec,
    schedule: &Schedule,
    hooks: PhaseHooks<'_>,
    stop: CancellationSignal,
    pacing: Pacing,
    role: LoopRole<'_>,
) -> Result<PhaseMeasurement, EngineError> {
    let mut addrs = Vec::with_capacity(targets.len());
    for target in targets {
        let addr = TargetAddr::resolve(target).await?;
        let host = HeaderValue::from_str(&addr.host).map_err(|_| EngineError::InvalidUrl {
            url: (*target).to_owned(),
            reason: "the host is not a valid header value".to_owned(),
        })?;
        addrs.push((addr, host));
    }
    let Some(base_path) = addrs.first().map(|(addr, _)| addr.base_path.clone()) else {
        return Err(EngineError::InvalidUrl {
            url: String::new(),
            reason: "no target".to_owned(),
        });
    };
    let compiled = CompiledWorkload::new(workload).map_err(EngineError::Compile)?;
    let total = spec.warmup + spec.duration;
    debug_assert!(
        schedule.duration() == total && schedule.sessions_per_sec() == spec.sessions_per_sec,
        "the schedule was not built from the spec (PhaseSpec::schedule)"
    );
    let names: Vec<String> = compiled
        .operations()
        .iter()
        .map(|op| op.name.clone())
        .collect();
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            // Warm connections are opened before the clock and the CPU count start: they are
            // the state the phase starts from, like the target's own warm-up.
            // Each replica has a pool of its own; a fixed pool is shared out among them.
            let n = addrs.len();
            let replicas: Box<[Replica]> = addrs
                .into_iter()
                .enumerate()
                .map(|(i, (addr, host))| Replica {
                    pool: Pool::new(
                        addr.addr,
                        match role.connections {
                            0 => role.connection_cap.max(1),
                            fixed => super::loops::share(fixed, i, n).max(1),
                        },
                    ),
                    prebuilt: if n == 1 {
                        prebuild(&compiled, &base_path, &host)
                    } else {
                        Box::default()
                    },
                    host,
                })
                .collect();
            let shares: Vec<usize> = (0..n)
                .map(|i| match role.connections {
                    0 => 0,
                    fixed => super::loops::share(fixed, i, n).max(1),
                })
                .collect();
            let wanted: usize = shares.iter().sum();
            let deadline = tokio::time::Instant::now() + generator.timeout;
            let opened = tokio::select! {
                biased;
                // Stopped while connecting: the dispatcher sees the signal at once.
                () = stop.cancelled() => wanted,
                opened = async {
                    let mut opened = 0;
                    for (r, share) in replicas.iter().zip(&shares) {
                        opened += r.pool.prewarm(*share, deadline).await;
                    }
                    opened
                } => opened,
            };
            // A replica may be down (a fault killed it, its sessions fail over): with several,
            // the pools of the others are enough to start.
            if opened < wanted && !(n > 1 && opened > 0) {
                return Err(EngineError::Prewarm {
                    opened,
                    wanted,
                    timeout: generator.timeout,
                });
            }
            // The loops of one phase start together, on one clock: each has opened its
            // connections by now. One that failed before the line has let the others go
            // (`None`): this loop then sends nothing, and the coordinator reports that failure.
            let clock = match role.link.map(|link| link.start.arrive()) {
                None => Clock::start(),
                Some(Some(origin)) => Clock::with_origin(origin),
                Some(None) => {
                    stop.cancel();
                    Clock::start()
                }
            };
            let cpu_start = cpu_time(CpuScope::Thread);
            let timer = PreciseTimer::with_early_window(clock, pacing.early_window)
                .map_err(EngineError::Timer)?;
            let driver = timer.clone();
            let mut recorder = PhaseRecorder::new(&names, spec.warmup, slo_latency, WINDOW);
            recorder.track_replicas(replicas.len());
            if role.link.is_some() {
                // Its windows are merged with the other loops' from their histograms.
                recorder.retain_window_histograms();
            } else if spec.keep_window_histograms {
                recorder.keep_window_histograms();
            }
            let ctx = Rc::new(Ctx {
                clock,
                timer,
                ejections: Ejections::new(replicas.len()),
                replicas,
                failover: generator.failover_policy().clone(),
                replica_seed: spec.seed,
                workload: compiled,
                base_path,
                recorder: RefCell::new(recorder),
                in_flight: Cell::new(0),
                outstanding: RefCell::new(Slab::default()),
                max_in_flight: role.max_in_flight.max(1),
                timeout: generator.timeout,
                first_session: spec.first_session,
                arrivals_end: Cell::new(total),
                stopped: Cell::new(false),
                idle: Notify::new(),
                cpu_mark: Cell::new(cpu_start.map(|cpu| (Duration::ZERO, cpu))),
                retry: retry_policies(workload, generator),
            });
            // The pacing timer, the dispatcher and the sessions are polled in this future. The
            // sessions run from reused slots (`engine::sessions`), whose runner polls at most 61
            // of them before this future's other branches are polled again: a timer expiry
            // reaches the dispatcher after at most one batch of answers, and the dispatcher
            // sends inline (see `launch`).
            let sessions = SessionSlots::new();
            let start = |plan: SessionPlan| sessions.start(run_session(Rc::clone(&ctx), plan));
            let phase = async {
                let stopped = dispatch(&ctx, &start, schedule, spec, &hooks, &stop, &role).await;
                let arrivals_end = ctx.arrivals_end.get();
                drain(&ctx).await;
                (stopped, arrivals_end)
            };
            let (stopped, arrivals_end) = tokio::select! {
                biased;
                failed = driver.drive() => return Err(EngineError::Timer(failed)),
                () = keep_time_driver_ahead(generator.timeout) => unreachable_keeper(),
                ended = phase => ended,
                () = sessions.run() => unreachable_keeper(),
            };
            let end = ctx.clock.now();
            let generator_cpu = match (cpu_start, cpu_time(CpuScope::Thread)) {
                (Some(start), Some(end)) => Some(end.saturating_sub(start)),
                _ => None,
            };
            for r in &ctx.replicas {
                r.pool.close_idle();
            }
            let recorder = std::mem::replace(
                &mut *ctx.recorder.borrow_mut(),
                PhaseRecorder::new(&[], Duration::ZERO, Duration::ZERO, WINDOW),
            );
            Ok(recorder.finish(FinishInfo {
                name: spec.name.clone(),
                seed: spec.seed,
                sessions_per_sec: spec.sessions_per_sec,
                arrivals_end,
                end,
                max_lag: generator.max_lag,
                max_drop_rate: generator.max_drop_rate,
                generator_cpu,
                generator_core: pinned_core(),
                stopped,
            }))
        })
        .await
}

/// Keeps one tokio timer pending that is due before any request's timeout.
///
/// Tokio's time driver unparks itself (an eventfd write and an extra `epoll_wait` return) when a
/// timer is registered that is due before the one it is parked on. With no other timer pending,
/// that was every request's timeout at low rates (0.38 eventfd writes per request at 2,000 req/s,
/// measured with `strace -c`). A timer always due earlier than `now + timeout` makes the
/// registrations of request timeouts silent, at the cost of two wake-ups per `timeout`.
async fn keep_time_driver_ahead(timeout: Duration) {
    let period = (timeout / 2).clamp(Duration::from_millis(1), Duration::from_secs(1));
    loop {
        tokio::time::sleep(period).await;
    }
}

/// The keeper and the sessions' runner loop forever; this is their (never taken) way out of the
/// phase's `select!`.
fn unreachable_keeper() -> (Option<String>, Duration) {
    (Some("a loop of the phase ended".to_owned()), Duration::ZERO)
}

/// Starts a session (`start`: into a slot of the loop's [`SessionSlots`]), which polls it once
/// right here: that sends its first request when a connection is ready (the pool's connections
/// are driven by the request's own future); the slots' runner polls it for the rest. Sending
/// from the dispatcher's own poll keeps arrivals on time when a burst of answers is queued: a
/// session left to the runner would wait behind all of them before its first poll.
///
/// At the in-flight cap the first step is dropped here, as `run_session` would drop it, without
/// building the session's future: drops come when the generator is short of time.
fn launch(ctx: &Rc<Ctx>, start: &dyn Fn(SessionPlan), plan: SessionPlan) {
    if ctx.in_flight.get() >= ctx.max_in_flight {
        if let Some(first) = plan.first_operation() {
            let origin = latency_origin(plan.start, ctx.clock.now());
            let mut recorder = ctx.recorder.borrow_mut();
            recorder.arrival(origin);
            recorder.dropped(first, origin);
        }
        return;
    }
    start(plan);
}

/// Launches the sessions at their arrival times until the schedule ends or the phase is stopped;
/// returns why it stopped early, if it did.
async fn dispatch(
    ctx: &Rc<Ctx>,
    start: &dyn Fn(SessionPlan),
    schedule: &Schedule,
    spec: &PhaseSpec,
    hooks: &PhaseHooks<'_>,
    stop: &CancellationSignal,
    role: &LoopRole<'_>,
) -> Option<String> {
    let mut sessions = schedule.sharded(role.shard).sessions();
    let mut next = sessions.next();
    let mut next_tick = WINDOW;
    let total = spec.warmup + spec.duration;
    loop {
        let now = ctx.clock.now();
        // Launch everything due, and what is due within the early window. A burst of due
        // sessions (after a stall of this thread) is sent at once and its lag recorded: the
        // schedule is kept, not shifted.
        let horizon = now + ctx.timer.early_window();
        while let Some(plan) = next.take_if(|plan| plan.start <= horizon) {
            launch(ctx, start, plan);
            next = sessions.next();
        }
        if now >= next_tick {
            next_tick = now.max(next_tick) + WINDOW;
            let decision = tick(ctx, spec, hooks, now, role.link);
            if let WindowDecision::Stop(reason) = decision {
                ctx.arrivals_end.set(now);
                ctx.stopped.set(true);
                return Some(reason);
            }
        }
        let wake = match &next {
            Some(plan) => plan.start.min(next_tick),
            None if now >= total => return None,
            None => total.min(next_tick),
        };
        tokio::select! {
            biased;
            () = stop.cancelled() => {
                ctx.arrivals_end.set(ctx.clock.now());
                ctx.stopped.set(true);
                return Some("stopped".to_owned());
            }
            () = ctx.timer.sleep_until(wake) => {}
        }
    }
}

/// Closes the windows that ended, reports progress, and asks the abort hook; a loop of several
/// also hands its closed windows and its counts to the coordinator, which merges them.
fn tick(
    ctx: &Ctx,
    spec: &PhaseSpec,
    hooks: &PhaseHooks<'_>,
    now: Duration,
    link: Option<&LoopLink>,
) -> WindowDecision {
    // One getrusage per tick: the share of its core the loop used since the last tick, recorded on
    // the windows that closed in between (the attribution of lag and drops reads it).
    let busy = match (ctx.cpu_mark.get(), cpu_time(CpuScope::Thread)) {
        (Some((at, before)), Some(cpu)) if now > at => {
            ctx.cpu_mark.set(Some((now, cpu)));
            Some(cpu.saturating_sub(before).as_secs_f64() / (now - at).as_secs_f64())
        }
        _ => None,
    };
    let (windows, sent, answered, dropped, closed) = {
        let mut recorder = ctx.recorder.borrow_mut();
        let windows = recorder.roll_to(now);
        if let Some(busy) = busy {
            recorder.generator_busy(busy);
        }
        (
            windows,
            recorder.requests_total(),
            recorder.answers_total(),
            recorder.dropped_so_far(),
            recorder.take_closed(),
        )
    };
    if let Some(link) = link {
        // A coordinator that is gone has stopped the phase already; nothing to do about it here.
        let _ = link.reports.send(LoopReport::Tick {
            index: link.index,
            elapsed: now,
            sent,
            answered,
            in_flight: ctx.in_flight.get(),
            dropped,
            closed,
        });
    }
    (hooks.progress)(&Progress {
        phase: spec.name.clone(),
        elapsed: now,
        warming_up: now < spec.warmup,
        sent,
        answered,
        in_flight: ctx.in_flight.get(),
        dropped,
        window: windows.last().cloned(),
    });
    for window in &windows {
        if let WindowDecision::Stop(reason) = (hooks.on_window)(window) {
            return WindowDecision::Stop(reason);
        }
    }
    WindowDecision::Continue
}

/// Waits for outstanding requests: each ends by its own timeout; whatever is left after the
/// timeout and a margin is counted as a timeout.
async fn drain(ctx: &Rc<Ctx>) {
    let deadline = tokio::time::Instant::now() + ctx.timeout + GRACE_MARGIN;
    while ctx.in_flight.get() > 0 {
        let idle = ctx.idle.notified();
        if ctx.in_flight.get() == 0 {
            break;
        }
        if tokio::time::timeout_at(deadline, idle).await.is_err() {
            break;
        }
    }
    let now = ctx.clock.now();
    let left = std::mem::take(&mut *ctx.outstanding.borrow_mut());
    let mut recorder = ctx.recorder.borrow_mut();
    for (op, intended) in left.slots.into_iter().flatten() {
        recorder.completed(
            op,
            intended,
            intended,
            now,
            &Outcome::Transport(TransportErrorKind::Timeout),
        );
    }
}

/// Runs one session's steps in order; records everything on the phase's recorder.
async fn run_session(ctx: Rc<Ctx>, plan: SessionPlan) {
    let start = plan.start;
    // Its number in the run (`{{session}}`): each phase has its own range.
    let session = ctx.first_session.saturating_add(plan.index);
    // Drawn step by step: the path's generator lives in this future, which lives in a reused slot.
    let path = plan.into_path();
    let mut vars = ctx.workload.new_session_vars();
    // The replica the session sticks to (it moves only when that one fails or is ejected).
    let mut replica = ctx.home_replica(session);
    let mut intended = start;
    let mut completed = true;
    let mut started = false;
    for (seq, step) in path.enumerate() {
        if seq > 0 {
            // Step n is intended at the answer of step n − 1 plus the user's think time.
            intended += step.think_before;
            if intended >= ctx.arrivals_end.get() {
                // The phase ended first: the session is cut, neither completed nor abandoned.
                return;
            }
            ctx.timer.sleep_until(intended).await;
            if intended >= ctx.arrivals_end.get() {
                return;
            }
        }
        let seq = u32::try_from(seq).unwrap_or(u32::MAX);
        let origin = latency_origin(intended, ctx.clock.now());
        ctx.recorder.borrow_mut().arrival(origin);
        if ctx.in_flight.get() >= ctx.max_in_flight {
            let mut recorder = ctx.recorder.borrow_mut();
            recorder.dropped(step.operation, origin);
            if started {
                recorder.session_ended(start, false);
            }
            return;
        }
        let prebuilt = ctx.replicas[replica]
            .prebuilt
            .get(step.operation)
            .and_then(Option::as_ref)
            .cloned();
        let (request, rendered) = if let Some(request) = prebuilt {
            // Nothing in it varies: encoded once for the phase.
            (request, None)
        } else {
            let rendered = ctx.workload.render(step.operation, session, seq, &vars);
            if ctx.replicated() {
                ctx.route(&mut replica, ctx.clock.now());
            }
            let request = match &rendered {
                Ok(rendered) => build_request(&ctx, replica, rendered),
                Err(_) => None,
            };
            let (Some(request), Ok(rendered)) = (request, rendered) else {
                // A missing variable (an earlier capture failed) or an unsendable request.
                if started {
                    ctx.recorder.borrow_mut().session_ended(start, false);
                }
                return;
            };
            // Kept for a failover only, which encodes the request again for another replica's
            // `Host`: with one replica it is dropped before the send.
            (request, ctx.replicated().then_some(rendered))
        };
        let op = step.operation;
        let slot = ctx.outstanding.borrow_mut().insert((op, origin));
        ctx.in_flight.set(ctx.in_flight.get() + 1);
        let sent_at = ctx.clock.now();
        {
            let mut recorder = ctx.recorder.borrow_mut();
            recorder.sent(op, origin, sent_at);
            if !started {
                recorder.session_started(start);
                started = true;
            }
        }
        let deadline = tokio::time::Instant::now() + ctx.timeout;
        let mut exchange = ctx.replicas[replica].pool.send(&request, deadline).await;
        if ctx.replicated() {
            note_attempt(&ctx, replica, &exchange);
        }
        let mut sent_at = sent_at;
        let policy = ctx
            .retry
            .as_ref()
            .and_then(|policies| policies.get(op))
            .and_then(Option::as_ref);
        if policy.is_some() || ctx.replicated() {
            (exchange, sent_at) = send_again(
                &ctx,
                policy,
                Resend {
                    request,
                    rendered: rendered.as_ref(),
                    replica: &mut replica,
                },
                (op, origin),
                (session, seq),
                exchange,
                sent_at,
            )
            .await;
        }
        let done = ctx.clock.now();
        ctx.in_flight.set(ctx.in_flight.get() - 1);
        ctx.outstanding.borrow_mut().remove(slot);
        if ctx.in_flight.get() == 0 {
            ctx.idle.notify_waiters();
        }
        // Service time runs from the moment the request had a connection (a wait for a free one
        // is the client's queue, counted in latency from the intended time, not in service time).
        let service_from = exchange
            .handed_at
            .map_or(sent_at, |at| ctx.clock.offset_of(at).max(sent_at));
        let AnswerClass { outcome, abandon } = match exchange.result {
            Ok(answer) => classify(&ctx.workload, op, &answer, &mut vars),
            Err(kind) => AnswerClass {
                outcome: Outcome::Transport(kind),
                abandon: true,
            },
        };
        if ctx.replicated() && outcome.is_error() {
            ctx.recorder.borrow_mut().replica_error(replica, done);
        }
        ctx.recorder
            .borrow_mut()
            .completed(op, origin, service_from, done, &outcome);
        if abandon {
            completed = false;
            break;
        }
        intended = done;
    }
    if started {
        ctx.recorder.borrow_mut().session_ended(start, completed);
    }
}

/// The retry policy of every operation (its own, else `generator.retry`), or `None` when no
/// operation is retried.
fn retry_policies(
    workload: &WorkloadConfig,
    generator: &GeneratorConfig,
) -> Option<Box<[Option<RetryPolicy>]>> {
    let policies: Box<[Option<RetryPolicy>]> = workload
        .operations
        .iter()
        .map(|op| op.retry_policy(generator.retry.as_ref()).cloned())
        .collect();
    policies.iter().any(Option::is_some).then_some(policies)
}

/// Whether `policy` retries what `exchange` brought: a connect error, a timeout, or a 5xx status
/// the operation does not expect (an expected 503 is a correct answer, not a failure).
fn is_retryable(policy: &RetryPolicy, exchange: &Exchange, expected: &[u16]) -> bool {
    match &exchange.result {
        Err(TransportErrorKind::Connect) => policy.on.connect,
        Err(TransportErrorKind::Timeout) => policy.on.timeout,
        Err(TransportErrorKind::Reset | TransportErrorKind::Other) => false,
        Ok(answer) => {
            policy.on.status_5xx && answer.status >= 500 && !expected.contains(&answer.status)
        }
    }
}

/// Whether `policy` fails over what `exchange` brought: a connect error, a reset, a timeout, or a
/// 5xx status the operation does not expect.
fn fails_over(policy: &FailoverPolicy, exchange: &Exchange, expected: &[u16]) -> bool {
    match &exchange.result {
        Err(TransportErrorKind::Connect) => policy.on.connect,
        Err(TransportErrorKind::Reset) => policy.on.reset,
        Err(TransportErrorKind::Timeout) => policy.on.timeout,
        Err(TransportErrorKind::Other) => false,
        Ok(answer) => {
            policy.on.status_5xx && answer.status >= 500 && !expected.contains(&answer.status)
        }
    }
}

/// Records an attempt's end on its replica: failed when with a transport error.
fn note_attempt(ctx: &Ctx, replica: usize, exchange: &Exchange) {
    let now = ctx.clock.now();
    ctx.recorder
        .borrow_mut()
        .replica_attempt(replica, exchange.result.is_err(), now);
}

/// What [`send_again`] sends: the encoded request, what it was encoded from (a failover encodes
/// it again for the other replica's `Host`), and the replica the session sticks to, which a
/// failover moves.
struct Resend<'a> {
    request: WireRequest,
    /// `None` with one replica, where no failover encodes it again.
    rendered: Option<&'a RenderedRequest>,
    replica: &'a mut usize,
}

/// Sends a failed attempt again, as long as attempts are left: to the next replica when the target
/// has several and `generator.failover` names the failure (the session then sticks to it, and the
/// failed replica is ejected), else to the same replica when the operation's retry `policy`
/// names it, after its seeded backoff. Returns the last attempt's exchange and when it was sent.
/// The logical operation keeps its slot in flight and its intended time (`key.1`) throughout: its
/// latency runs from that time to the last answer. Attempts go on while the phase drains after
/// its planned end (within the drain's grace, past which the operation counts as a timeout), but
/// none is sent once the phase was stopped: the failure then stands.
async fn send_again(
    ctx: &Ctx,
    policy: Option<&RetryPolicy>,
    resend: Resend<'_>,
    (op, intended): (usize, Duration),
    (session, seq): (u64, u32),
    mut exchange: Exchange,
    mut sent_at: Duration,
) -> (Exchange, Duration) {
    let Resend {
        mut request,
        rendered,
        replica,
    } = resend;
    let expected = ctx
        .workload
        .operations()
        .get(op)
        .map_or(&[][..], |o| o.expect.status.as_slice());
    let failover = &ctx.failover;
    let (mut retries, mut failovers) = (0, 0);
    loop {
        let failed_here = ctx.replicated() && fails_over(failover, &exchange, expected);
        if failed_here {
            // The replica failed in a way the policy names: ejected, whether or not an attempt
            // is left to send elsewhere.
            ctx.eject(*replica, ctx.clock.now());
        }
        let over = failed_here && failovers + 1 < failover.attempts;
        let again = !over
            && policy
                .is_some_and(|p| retries + 1 < p.attempts && is_retryable(p, &exchange, expected));
        if !over && !again {
            break;
        }
        let wait = match policy {
            Some(p) if again => ctx.workload.retry_backoff(p, session, seq, retries + 1),
            _ => failover.backoff,
        };
        let at = ctx.clock.now() + wait;
        if ctx.stopped.get() {
            break;
        }
        // The failed answer stays (it is the result if no attempt follows) through the wait and
        // the next send, while its connection reads again: its body is copied off that
        // connection's buffer, which would otherwise be kept whole and make the next read
        // allocate.
        if let Ok(answer) = &mut exchange.result {
            answer.body = bytes::Bytes::copy_from_slice(&answer.body);
        }
        if over {
            // The session moves on at once, to the next replica not ejected.
            let now = ctx.clock.now();
            ctx.recorder.borrow_mut().replica_failover(*replica);
            *replica = ctx.ejections.next(*replica, now);
            match rendered.and_then(|r| build_request(ctx, *replica, r)) {
                Some(encoded) => request = encoded,
                None => break,
            }
            failovers += 1;
        } else {
            retries += 1;
        }
        if !wait.is_zero() {
            ctx.timer.sleep_until(at).await;
            if ctx.stopped.get() {
                break;
            }
        }
        sent_at = ctx.clock.now();
        ctx.recorder
            .borrow_mut()
            .retried(op, intended, retries + failovers);
        let deadline = tokio::time::Instant::now() + ctx.timeout;
        exchange = ctx.replicas[*replica].pool.send(&request, deadline).await;
        if ctx.replicated() {
            note_attempt(ctx, *replica, &exchange);
        }
    }
    (exchange, sent_at)
}

/// Where a request's latency is timed from: its intended time, or, when it goes out early (the
/// early window), the earlier moment it was actually sent. Timing an early request from its later
/// intended time would subtract the earliness from its latency and make the target look faster
/// than it is; this way latency is never below service time.
fn latency_origin(intended: Duration, now: Duration) -> Duration {
    intended.min(now)
}

/// Slots with a free list: O(1) insert and remove, memory bounded by the most ever outstanding.
#[derive(Debug, Default)]
struct Slab {
    slots: Vec<Option<(usize, Duration)>>,
    free: Vec<usize>,
}

impl Slab {
    fn insert(&mut self, value: (usize, Duration)) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(value);
                i
            }
            None => {
                self.slots.push(Some(value));
                self.slots.len() - 1
            }
        }
    }

    fn remove(&mut self, i: usize) {
        if let Some(slot) = self.slots.get_mut(i)
            && slot.take().is_some()
        {
            self.free.push(i);
        }
    }
}

/// Encodes a rendered request for the target: origin-form target under the base path, `Host`
/// first, `content-type` for JSON bodies. `None` for a target that is not sendable.
fn build_request(ctx: &Ctx, replica: usize, rendered: &RenderedRequest) -> Option<WireRequest> {
    encode(&ctx.base_path, &ctx.replicas[replica].host, rendered)
}

/// By operation, the bytes of each request that never varies, encoded once
/// ([`CompiledWorkload::render_static`]); `None` for one rendered per request.
fn prebuild(
    compiled: &CompiledWorkload,
    base_path: &str,
    host: &HeaderValue,
) -> Box<[Option<WireRequest>]> {
    (0..compiled.operations().len())
        .map(|op| encode(base_path, host, &compiled.render_static(op)?))
        .collect()
}

/// The bytes of `rendered` for a target under `base_path` on `host`.
fn encode(base_path: &str, host: &HeaderValue, rendered: &RenderedRequest) -> Option<WireRequest> {
    WireRequest::encode(
        &rendered.method,
        &[base_path, &rendered.path_and_query],
        host,
        &rendered.headers,
        rendered.json,
        &rendered.body,
    )
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::test_server::{Logged, Reply, TestServer};
    use super::*;
    use crate::config::{
        Capture, EntryPoint, Expect, OperationConfig, RequestTemplate, ThinkTime, Transition,
    };
    use crate::measure::InvalidReason;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    const MS: Duration = Duration::from_millis(1);

    pub(in crate::engine) fn op(name: &str, method: &str, path: &str) -> OperationConfig {
        OperationConfig {
            name: name.to_owned(),
            request: RequestTemplate {
                method: method.to_owned(),
                path: path.to_owned(),
                headers: Vec::new(),
                body: None,
            },
            expect: Expect::default(),
            capture: Vec::new(),
            next: Vec::new(),
            gate: false,
            retry: crate::config::OperationRetry::Inherit,
            idempotent: false,
        }
    }

    fn then(to: usize, think: Duration) -> Transition {
        Transition {
            to,
            p: 1.0,
            think: ThinkTime::Fixed(think),
        }
    }

    pub(in crate::engine) fn workload(
        operations: Vec<OperationConfig>,
        rate: f64,
    ) -> WorkloadConfig {
        WorkloadConfig {
            seed: 7,
            sessions_per_sec: rate,
            entry: vec![EntryPoint {
                operation: 0,
                p: 1.0,
            }],
            operations,
        }
    }

    fn generator(timeout: Duration, max_in_flight: usize) -> GeneratorConfig {
        GeneratorConfig {
            timeout,
            max_in_flight,
            max_lag: 20 * MS,
            max_drop_rate: 0.01,
            connections: 0,
            threads: crate::config::GeneratorThreads::Auto,
            retry: None,
            failover: None,
        }
    }

    /// A generator for tests that must not be voided by wake-up noise: on a CI runner shared
    /// with compilers this thread can fall tens of ms behind, so the lag limit is 150 ms (a
    /// closed loop stuck behind a slow answer falls further behind than that).
    fn lenient_generator() -> GeneratorConfig {
        GeneratorConfig {
            max_lag: 150 * MS,
            ..generator(5 * 1000 * MS, 1000)
        }
    }

    fn spec(rate: f64, duration: Duration, seed: u64) -> PhaseSpec {
        PhaseSpec {
            name: "test".to_owned(),
            sessions_per_sec: rate,
            duration,
            warmup: Duration::ZERO,
            seed,
            first_session: 0,
            keep_window_histograms: false,
        }
    }

    fn run(
        url: &str,
        w: &WorkloadConfig,
        g: &GeneratorConfig,
        spec: &PhaseSpec,
        hooks: PhaseHooks<'_>,
    ) -> Result<PhaseMeasurement, EngineError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(run_phase(
            url,
            w,
            g,
            Duration::from_millis(250),
            spec,
            &spec.schedule(w),
            hooks,
            CancellationSignal::new(),
        ))
    }

    #[test]
    fn open_loop_keeps_sending_while_the_server_stalls() {
        // Every 10th request takes 300 ms; the schedule must not slow down for them.
        let n = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&n);
        let server = TestServer::start(move |_| {
            let i = counter.fetch_add(1, Ordering::Relaxed);
            let delay = if i % 10 == 9 {
                300 * MS
            } else {
                Duration::ZERO
            };
            Reply {
                delay,
                ..Reply::ok("hi")
            }
        });
        let w = workload(vec![op("get", "GET", "/")], 200.0);
        // A closed loop would fall 300 ms behind at every slow answer; an open loop falls behind
        // only by this thread's own wake-up noise (see `lenient_generator`).
        let m = run(
            &server.url,
            &w,
            &lenient_generator(),
            &spec(200.0, 2000 * MS, 1),
            PhaseHooks::default(),
        )
        .expect("phase runs");
        let s = m.summary();
        // Poisson: 400 expected; every arrival was sent (none dropped, none waiting).
        assert_eq!(m.counters.arrivals, s.total.requests);
        assert!(
            (300..=500).contains(&s.total.requests),
            "{}",
            s.total.requests
        );
        assert_eq!(s.total.errors, 0);
        assert!(s.total.p50 < 100 * MS, "p50 {:?}", s.total.p50);
        assert!(s.total.max >= 300 * MS, "max {:?}", s.total.max);
        assert!(s.lag_p99 < 150 * MS, "lag p99 {:?}", s.lag_p99);
        assert!(s.valid);
    }

    #[test]
    fn a_fixed_pool_opens_exactly_its_connections_and_waiting_for_one_counts_in_latency() {
        // 20 ms answers at 200 req/s need ~4 connections on average; a fixed pool of 2 must not
        // open more, and the requests that wait for one of the two carry the wait in latency.
        let server = TestServer::start(|_| Reply {
            delay: 20 * MS,
            ..Reply::ok("hi")
        });
        let w = workload(vec![op("get", "GET", "/")], 200.0);
        let g = GeneratorConfig {
            connections: 2,
            ..lenient_generator()
        };
        let m = run(
            &server.url,
            &w,
            &g,
            &spec(200.0, 1000 * MS, 3),
            PhaseHooks::default(),
        )
        .expect("phase runs");
        let s = m.summary();
        assert_eq!(server.connections(), 2);
        assert_eq!(s.total.errors, 0);
        // Two connections serve at most 100 answers/s of 20 ms against ~200 arrivals/s: the
        // queue grows through the second, so the late requests wait hundreds of ms.
        assert!(s.total.p99 > 200 * MS, "p99 {:?}", s.total.p99);
        // Service time runs from the actual send: it stays near 20 ms while latency grows.
        assert!(
            s.total.service_p50 < 100 * MS,
            "service p50 {:?}",
            s.total.service_p50
        );
        assert!(
            s.total.p50 > 2 * s.total.service_p50,
            "p50 {:?} vs service p50 {:?}",
            s.total.p50,
            s.total.service_p50
        );
    }

    #[test]
    fn a_fixed_pool_the_target_refuses_is_an_engine_error_not_a_silent_on_demand_run() {
        // A port nothing listens on: bind, read the port, close.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let w = workload(vec![op("get", "GET", "/")], 50.0);
        let g = GeneratorConfig {
            connections: 3,
            ..generator(1000 * MS, 100)
        };
        let err = run(
            &format!("http://127.0.0.1:{port}"),
            &w,
            &g,
            &spec(50.0, 200 * MS, 1),
            PhaseHooks::default(),
        )
        .expect_err("refused");
        assert!(
            matches!(
                err,
                EngineError::Prewarm {
                    opened: 0,
                    wanted: 3,
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string().contains("hint: lower `connections`"),
            "{err}"
        );
    }

    #[test]
    fn latency_from_intended_includes_a_generator_stall_that_service_time_does_not() {
        let server = TestServer::start(|_| Reply::ok("hi"));
        let w = workload(vec![op("get", "GET", "/")], 200.0);
        let stalled = Cell::new(false);
        // The progress hook runs on the engine's thread: blocking it 300 ms is a generator stall,
        // and the requests due meanwhile go out late.
        let progress = |_: &Progress| {
            if !stalled.replace(true) {
                std::thread::sleep(300 * MS);
            }
        };
        let hooks = PhaseHooks {
            progress: &progress,
            ..PhaseHooks::default()
        };
        let m = run(
            &server.url,
            &w,
            &generator(5 * 1000 * MS, 1000),
            &spec(200.0, 2000 * MS, 2),
            hooks,
        )
        .expect("phase runs");
        let op = &m.operations[0];
        assert!(
            op.latency.max() >= 250 * MS,
            "latency max {:?}",
            op.latency.max()
        );
        // Requests due during the stall went out late: slow from their intended time, fast from
        // their send. (The one or two in flight when the stall began are slow either way.)
        let slow =
            |h: &crate::measure::LatencyHistogram| h.as_hdr().count_between(100_000, u64::MAX);
        assert!(
            slow(&op.latency) >= 20,
            "{} slow by latency",
            slow(&op.latency)
        );
        assert!(
            slow(&op.service) <= 3,
            "{} slow by service time",
            slow(&op.service)
        );
        assert!(m.lag.max() >= 250 * MS);
        // About 60 of ~400 requests were late by up to 300 ms: far past a 20 ms lag limit.
        assert!(
            matches!(m.validity.reasons.as_slice(), [InvalidReason::Lag { .. }]),
            "{:?}",
            m.validity
        );
        assert_eq!(m.counters.dropped, 0);
    }

    #[test]
    fn requests_sent_early_are_timed_from_their_send_not_their_later_intended_time() {
        // Every answer takes 20 ms. With a 50 ms early window most requests go out early, by
        // 25 ms on average; timed from their intended time they would look faster than 20 ms.
        let received = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let server = TestServer::start(move |_| {
            log.lock().expect("log").push(std::time::Instant::now());
            Reply {
                delay: 20 * MS,
                ..Reply::ok("hi")
            }
        });
        let w = workload(vec![op("get", "GET", "/")], 100.0);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let m = rt
            .block_on(run_phase_paced(
                &[server.url.as_str()],
                &w,
                &generator(5 * 1000 * MS, 1000),
                Duration::from_millis(250),
                &spec(100.0, 2000 * MS, 11),
                &spec(100.0, 2000 * MS, 11).schedule(&w),
                PhaseHooks::default(),
                CancellationSignal::new(),
                Pacing {
                    early_window: 50 * MS,
                },
                LoopRole::whole(&generator(5 * 1000 * MS, 1000)),
            ))
            .expect("phase runs");
        let op = &m.operations[0];
        assert!(op.latency.count() > 100, "{}", op.latency.count());
        // Microseconds; 19,900 leaves room for the histogram's 3 significant digits.
        let min = |h: &crate::measure::LatencyHistogram| h.as_hdr().min();
        assert!(
            min(&op.latency) >= 19_900,
            "latency min {} µs below the 20 ms every answer took",
            min(&op.latency)
        );
        assert!(min(&op.latency) >= min(&op.service));
        // The window was used: requests arrived in bunches. Poisson at 100/s puts 18% of gaps
        // under 2 ms; one wake-up per 50 ms window puts most of them there.
        let times = received.lock().expect("log").clone();
        let bunched = times
            .windows(2)
            .filter(|w| w[1].duration_since(w[0]) < 2 * MS)
            .count();
        assert!(
            bunched * 2 > times.len(),
            "{bunched} of {} close together",
            times.len()
        );
    }

    #[test]
    fn a_later_step_due_at_the_cap_is_dropped_and_abandons_its_session() {
        // `/a` holds the only in-flight slot for 50 ms; a session's `/b`, due 10 ms after its
        // `/a` answered, finds the slot taken whenever another session's `/a` went out meanwhile.
        let server = TestServer::start(|r| Reply {
            delay: if r.path.starts_with("/a") {
                50 * MS
            } else {
                Duration::ZERO
            },
            ..Reply::ok("ok")
        });
        let mut a = op("a", "GET", "/a/{{session}}");
        a.next = vec![then(1, 10 * MS)];
        let w = workload(vec![a, op("b", "GET", "/b/{{session}}")], 100.0);
        let m = run(
            &server.url,
            &w,
            &generator(5 * 1000 * MS, 1),
            &spec(100.0, 2000 * MS, 36),
            PhaseHooks::default(),
        )
        .expect("phase runs");
        let (first, later) = (&m.operations[0].counters, &m.operations[1].counters);
        assert!(later.dropped > 0, "{:?} {later:?}", m.counters);
        assert!(later.sent > 0, "{later:?}");
        assert_eq!(m.counters.dropped, first.dropped + later.dropped);
        // A dropped later step abandons its started session; nothing else abandons one here.
        assert_eq!(
            m.counters.sessions_abandoned, later.dropped,
            "{:?}",
            m.counters
        );
    }

    #[test]
    fn arrivals_past_max_in_flight_are_dropped_and_make_the_phase_invalid() {
        let server = TestServer::start(|_| Reply {
            delay: 200 * MS,
            ..Reply::ok("slow")
        });
        let w = workload(vec![op("get", "GET", "/")], 100.0);
        let m = run(
            &server.url,
            &w,
            &generator(5 * 1000 * MS, 2),
            &spec(100.0, 1000 * MS, 3),
            PhaseHooks::default(),
        )
        .expect("phase runs");
        let s = m.summary();
        assert!(m.counters.dropped > 50, "{:?}", m.counters);
        let sent = m.total().counters.sent;
        assert_eq!(m.counters.arrivals, m.counters.dropped + sent);
        assert_eq!(s.total.requests, m.counters.arrivals, "drops are requests");
        assert_eq!(s.total.dropped, m.counters.dropped);
        assert!((2..=14).contains(&sent), "{sent}");
        // 200 ms answers within the 250 ms SLO: the cap, not the service, is too small.
        assert!(
            m.validity.reasons.iter().any(|r| matches!(
                r,
                InvalidReason::Drops {
                    cause: crate::measure::DropCause::CapTooLow,
                    ..
                }
            )),
            "{:?}",
            m.validity
        );
        assert!(!s.valid);
    }

    #[test]
    fn wrong_status_and_body_are_wrong_answers_and_5xx_are_http_errors() {
        let server = TestServer::start(|r| match r.path.as_str() {
            "/ok" => Reply::ok("hello world"),
            "/wrong" => Reply::ok("goodbye"),
            "/created" => Reply::ok("hello"),
            _ => Reply {
                status: 503,
                ..Reply::ok("down")
            },
        });
        let mut ok = op("ok", "GET", "/ok");
        ok.expect.body_contains = Some("hello".to_owned());
        ok.next = vec![then(1, Duration::ZERO)];
        let mut wrong = op("wrong", "GET", "/wrong");
        wrong.expect.body_contains = Some("hello".to_owned());
        wrong.next = vec![then(2, Duration::ZERO)];
        let mut created = op("created", "POST", "/created");
        created.expect.status = vec![201];
        created.next = vec![then(3, Duration::ZERO)];
        let down = op("down", "GET", "/down");
        let w = workload(vec![ok, wrong, created, down], 50.0);
        let m = run(
            &server.url,
            &w,
            &generator(5 * 1000 * MS, 100),
            &spec(50.0, 1000 * MS, 4),
            PhaseHooks::default(),
        )
        .expect("phase runs");
        let [ok, wrong, created, down] = &m.operations[..] else {
            panic!("four operations")
        };
        assert!(ok.counters.sent > 0);
        assert_eq!(ok.counters.ok, ok.counters.sent);
        assert_eq!(wrong.counters.wrong_answer, wrong.counters.sent);
        assert_eq!(created.counters.wrong_answer, created.counters.sent);
        assert_eq!(
            down.counters.http_error.get(&503).copied(),
            Some(down.counters.sent)
        );
        assert!(down.counters.sent > 0);
        let examples = wrong.counters.wrong_answer_examples.join("\n");
        assert!(examples.contains("hello"), "{examples}");
        assert!(wrong.counters.wrong_answer_examples.len() <= 3);
        assert!(m.counters.sessions_completed > 0);
    }

    #[test]
    fn captures_flow_into_the_next_request_and_a_failed_capture_abandons_the_session() {
        let server = TestServer::start(|r| {
            if r.path == "/login" {
                // Sessions whose user is odd get no token.
                let user: u64 = r.body.trim_start_matches("user=").parse().unwrap_or(0);
                if user % 2 == 1 {
                    return Reply::ok("{}");
                }
                return Reply::ok(&format!("{{\"token\":\"t-{user}\"}}"));
            }
            Reply::ok("me")
        });
        let mut login = op("login", "POST", "/login");
        login.request.body = Some(crate::config::BodyTemplate::Raw(
            "user={{session}}".to_owned(),
        ));
        login.capture = vec![Capture {
            variable: "token".to_owned(),
            pointer: "/token".to_owned(),
        }];
        login.next = vec![then(1, 5 * MS)];
        let me = op("me", "GET", "/me/{{session}}?token={{token}}");
        let w = workload(vec![login, me], 40.0);
        let m = run(
            &server.url,
            &w,
            &generator(5 * 1000 * MS, 100),
            &spec(40.0, 1000 * MS, 5),
            PhaseHooks::default(),
        )
        .expect("phase runs");
        let log = server.sorted_log();
        let me_requests: Vec<&Logged> = log.iter().filter(|r| r.path.starts_with("/me/")).collect();
        assert!(!me_requests.is_empty());
        for r in &me_requests {
            let (session, token) = r.path["/me/".len()..]
                .split_once("?token=")
                .expect("token in query");
            assert_eq!(token, format!("t-{session}"));
        }
        let logins = log.iter().filter(|r| r.path == "/login").count() as u64;
        assert_eq!(m.counters.sessions_started, logins);
        assert_eq!(m.counters.sessions_completed, me_requests.len() as u64);
        assert_eq!(
            m.counters.sessions_abandoned,
            logins - me_requests.len() as u64
        );
        assert!(m.counters.sessions_abandoned > 0);
        assert_eq!(
            m.operations[0].counters.wrong_answer,
            m.counters.sessions_abandoned
        );
    }

    #[test]
    fn a_request_past_its_timeout_is_counted_as_a_timeout() {
        let server = TestServer::start(|r| {
            let delay = if r.path == "/slow" {
                3000 * MS
            } else {
                Duration::ZERO
            };
            Reply {
                delay,
                ..Reply::ok("late")
            }
        });
        let w = workload(vec![op("slow", "GET", "/slow")], 20.0);
        let started = std::time::Instant::now();
        let m = run(
            &server.url,
            &w,
            &generator(200 * MS, 100),
            &spec(20.0, 500 * MS, 6),
            PhaseHooks::default(),
        )
        .expect("phase runs");
        let c = &m.operations[0].counters;
        assert!(c.sent > 0);
        assert_eq!(c.transport.timeout, c.sent);
        // The grace is the timeout (plus a margin), not the server's 3 s.
        assert!(started.elapsed() < 2000 * MS, "{:?}", started.elapsed());
        // Timeouts keep their latency: at least the timeout.
        assert!(m.operations[0].latency.quantile(0.5) >= 190 * MS);
    }

    #[test]
    fn connection_refused_is_counted_as_a_connect_error() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            listener.local_addr().expect("addr").port()
        };
        let w = workload(vec![op("get", "GET", "/")], 50.0);
        let m = run(
            &format!("http://127.0.0.1:{port}"),
            &w,
            &generator(1000 * MS, 100),
            &spec(50.0, 500 * MS, 7),
            PhaseHooks::default(),
        )
        .expect("phase runs");
        let c = &m.operations[0].counters;
        assert!(c.sent > 0);
        assert_eq!(c.transport.connect, c.sent);
        assert_eq!(m.operations[0].latency.count(), 0);
        assert_eq!(m.counters.sessions_abandoned, c.sent);
    }

    #[test]
    fn only_requests_that_never_vary_are_prebuilt_and_their_bytes_are_a_per_request_encode() {
        let mut fixed = op("fixed", "POST", "/items?x=1");
        fixed.request.headers = vec![("host".to_owned(), "virtual.test".to_owned())];
        fixed.request.body = Some(crate::config::BodyTemplate::Json(
            serde_json::json!({"a": 1}),
        ));
        let varying = op("varying", "GET", "/s/{{session}}");
        let compiled = CompiledWorkload::new(&workload(vec![fixed, varying], 1.0)).unwrap();
        let host = HeaderValue::from_static("127.0.0.1:9");
        let prebuilt = prebuild(&compiled, "/api", &host);
        assert_eq!(prebuilt.len(), 2);
        let vars = compiled.new_session_vars();
        let per_request = encode("/api", &host, &compiled.render(0, 5, 2, &vars).unwrap());
        assert_eq!(prebuilt[0], per_request);
        let bytes = prebuilt[0].as_ref().expect("nothing in it varies").bytes();
        assert!(bytes.starts_with(b"POST /api/items?x=1 HTTP/1.1\r\nhost: virtual.test\r\n"));
        assert_eq!(prebuilt[1], None, "its path varies by session");
    }

    #[test]
    fn a_request_that_never_varies_is_sent_whole_under_the_base_path_every_time() {
        // Encoded once for the phase (`Replica::prebuilt`); each send must still be the whole
        // request, on a connection of its own or a reused one.
        let mut fixed = op("fixed", "POST", "/items?x=1");
        fixed.request.body = Some(crate::config::BodyTemplate::Json(
            serde_json::json!({"a": [1, "two"]}),
        ));
        fixed.request.headers = vec![("x-fixed".to_owned(), "yes".to_owned())];
        let w = workload(vec![fixed], 200.0);
        let server = TestServer::start(|_| Reply::ok("ok"));
        let m = run(
            &format!("{}/api", server.url),
            &w,
            &generator(5000 * MS, 1000),
            &spec(200.0, 500 * MS, 7),
            PhaseHooks::default(),
        )
        .expect("phase runs");
        let log = server.sorted_log();
        assert!(log.len() > 50, "{}", log.len());
        assert_eq!(log.len() as u64, m.total().counters.sent);
        assert_eq!(m.summary().total.errors, 0);
        for request in &log {
            assert_eq!(
                (
                    request.method.as_str(),
                    request.path.as_str(),
                    request.body.as_str()
                ),
                ("POST", "/api/items?x=1", r#"{"a":[1,"two"]}"#)
            );
        }
    }

    #[test]
    fn the_same_seed_sends_byte_identical_requests() {
        let mut first = op("first", "POST", "/s/{{session}}/{{seq}}?r={{rand}}");
        first.request.body = Some(crate::config::BodyTemplate::Json(
            serde_json::json!({"s": "{{session}}"}),
        ));
        first.next = vec![Transition {
            to: 1,
            p: 0.5,
            think: ThinkTime::Exponential(5 * MS),
        }];
        let second = op("second", "GET", "/t/{{session}}/{{seq}}?r={{rand}}");
        let w = workload(vec![first, second], 100.0);
        let logs: Vec<Vec<Logged>> = (0..2)
            .map(|_| {
                let server = TestServer::start(|_| Reply::ok("ok"));
                let m = run(
                    &server.url,
                    &w,
                    &generator(5000 * MS, 1000),
                    &spec(100.0, 700 * MS, 99),
                    PhaseHooks::default(),
                )
                .expect("phase runs");
                assert_eq!(m.summary().total.errors, 0);
                server.sorted_log()
            })
            .collect();
        assert!(logs[0].len() > 40, "{}", logs[0].len());
        assert_eq!(logs[0], logs[1]);
        let other_seed = TestServer::start(|_| Reply::ok("ok"));
        run(
            &other_seed.url,
            &w,
            &generator(5000 * MS, 1000),
            &spec(100.0, 700 * MS, 100),
            PhaseHooks::default(),
        )
        .expect("phase runs");
        assert_ne!(other_seed.sorted_log(), logs[0]);
    }

    /// A server that fails the first `session % 3` attempts of each logical operation with a
    /// 503, keyed by the body (which carries `{{rand}}`, so a retry is only recognized if it
    /// re-sends the same bytes), and the retry policy of the tests.
    fn flaky_transfers() -> TestServer {
        let seen = Arc::new(std::sync::Mutex::new(std::collections::HashMap::<
            String,
            u64,
        >::new()));
        TestServer::start(move |r| {
            let mut seen = seen.lock().expect("seen");
            let attempt = seen.entry(r.body.clone()).or_default();
            *attempt += 1;
            let session: u64 = r.path.trim_start_matches("/t/").parse().unwrap_or(0);
            if *attempt <= session % 3 {
                Reply {
                    status: 503,
                    ..Reply::ok("busy")
                }
            } else {
                Reply {
                    status: 201,
                    ..Reply::ok("booked")
                }
            }
        })
    }

    fn transfer_op(attempts: u32) -> OperationConfig {
        let mut transfer = op("transfer", "POST", "/t/{{session}}");
        transfer.request.body = Some(crate::config::BodyTemplate::Raw(
            "key={{session}}-{{rand}}".to_owned(),
        ));
        transfer.expect.status = vec![201];
        transfer.retry = crate::config::OperationRetry::Policy(RetryPolicy {
            attempts,
            on: crate::config::RetryOn::ALL,
            backoff: MS,
        });
        transfer
    }

    #[test_case::test_case(3, 0 ; "enough attempts for every operation")]
    #[test_case::test_case(2, 1 ; "one in three fails every attempt")]
    fn a_retried_operation_is_one_logical_operation_of_several_attempts_of_the_same_bytes(
        attempts: u32,
        failing_residue: u64,
    ) {
        let server = flaky_transfers();
        let w = workload(vec![transfer_op(attempts)], 60.0);
        let m = run(
            &server.url,
            &w,
            &lenient_generator(),
            &spec(60.0, 1000 * MS, 21),
            PhaseHooks::default(),
        )
        .expect("phase runs");
        let log = server.sorted_log();
        let mut by_body = std::collections::BTreeMap::<&str, (u64, u64)>::new();
        for r in &log {
            let session: u64 = r.path.trim_start_matches("/t/").parse().expect("session");
            let entry = by_body.entry(r.body.as_str()).or_insert((session, 0));
            assert_eq!(entry.0, session, "one body, one session: {}", r.body);
            entry.1 += 1;
        }
        let logical = by_body.len() as u64;
        assert!(logical > 30, "{logical}");
        // Each logical operation was sent as often as its session's failures asked, up to the
        // policy's attempts: the same bytes each time.
        for (body, (session, sent)) in &by_body {
            assert_eq!(*sent, (session % 3 + 1).min(u64::from(attempts)), "{body}");
        }
        let c = &m.operations[0].counters;
        let retried = by_body.values().filter(|(s, _)| s % 3 > 0).count() as u64;
        let failed = if failing_residue > 0 {
            by_body.values().filter(|(s, _)| s % 3 == 2).count() as u64
        } else {
            0
        };
        assert_eq!(c.sent, logical, "logical operations, not attempts");
        assert_eq!(c.attempts(), log.len() as u64);
        assert_eq!(c.retries, log.len() as u64 - logical);
        assert_eq!(c.retried, retried);
        assert_eq!(c.ok, logical - failed);
        assert_eq!(c.http_error.get(&503).copied().unwrap_or(0), failed);
        assert_eq!(c.errors(), failed, "a retry that succeeded is no error");
        assert_eq!(m.operations[0].latency.count(), logical);
        let tally = &m.operations[0].tally;
        assert_eq!(
            (tally.logical, tally.attempts, tally.acknowledged),
            (logical, log.len() as u64, logical - failed)
        );
        assert_eq!(m.requests_total, log.len() as u64);
        let per_op = c.attempts_per_operation().expect("sent");
        assert!(per_op > 1.2 && per_op <= f64::from(attempts), "{per_op}");
    }

    #[test]
    fn without_a_policy_a_5xx_is_sent_once() {
        let server = flaky_transfers();
        let mut transfer = transfer_op(3);
        transfer.retry = crate::config::OperationRetry::Inherit;
        let w = workload(vec![transfer], 40.0);
        let m = run(
            &server.url,
            &w,
            &lenient_generator(),
            &spec(40.0, 500 * MS, 22),
            PhaseHooks::default(),
        )
        .expect("phase runs");
        let c = &m.operations[0].counters;
        assert_eq!(c.sent, server.sorted_log().len() as u64);
        assert_eq!((c.retries, c.retried), (0, 0));
        assert!(c.http_error.get(&503).copied().unwrap_or(0) > 0);
    }

    #[test]
    fn retry_policies_are_none_unless_an_operation_is_retried() {
        let plain = workload(vec![op("get", "GET", "/")], 1.0);
        assert!(retry_policies(&plain, &generator(MS, 1)).is_none());
        let mixed = workload(vec![op("get", "GET", "/"), transfer_op(2)], 1.0);
        let policies = retry_policies(&mixed, &generator(MS, 1)).expect("one is retried");
        assert_eq!(policies[0], None);
        assert_eq!(policies[1].as_ref().map(|p| p.attempts), Some(2));
    }

    #[test_case::test_case(Err(TransportErrorKind::Connect), true ; "connect")]
    #[test_case::test_case(Err(TransportErrorKind::Timeout), true ; "timeout")]
    #[test_case::test_case(Err(TransportErrorKind::Reset), false ; "a reset may have reached the service")]
    #[test_case::test_case(Ok(503), true ; "an unexpected 503")]
    #[test_case::test_case(Ok(502), false ; "an expected 502 is an answer")]
    #[test_case::test_case(Ok(429), false ; "4xx")]
    #[test_case::test_case(Ok(201), false ; "success")]
    fn what_is_retried(result: Result<u16, TransportErrorKind>, retried: bool) {
        let exchange = Exchange {
            result: result.map(|status| super::super::pool::Answer {
                status,
                body: bytes::Bytes::new(),
            }),
            handed_at: None,
        };
        let all = RetryPolicy {
            attempts: 2,
            on: crate::config::RetryOn::ALL,
            backoff: MS,
        };
        assert_eq!(is_retryable(&all, &exchange, &[201, 502]), retried);
        let none = RetryPolicy {
            on: crate::config::RetryOn::default(),
            ..all
        };
        assert!(!is_retryable(&none, &exchange, &[201, 502]));
    }

    /// Runs one phase against several replicas (base URLs) with `failover`.
    fn run_replicas(
        urls: &[&str],
        w: &WorkloadConfig,
        failover: Option<FailoverPolicy>,
        spec: &PhaseSpec,
    ) -> PhaseMeasurement {
        let g = GeneratorConfig {
            failover,
            ..lenient_generator()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(run_phase_paced(
            urls,
            w,
            &g,
            Duration::from_millis(250),
            spec,
            &spec.schedule(w),
            PhaseHooks::default(),
            CancellationSignal::new(),
            Pacing::DEFAULT,
            LoopRole::whole(&g),
        ))
        .expect("phase runs")
    }

    /// A session of two steps, `/a/{{session}}` then `/b/{{session}}`.
    fn two_steps(rate: f64) -> WorkloadConfig {
        let mut a = op("a", "GET", "/a/{{session}}");
        a.next = vec![then(1, MS)];
        workload(vec![a, op("b", "GET", "/b/{{session}}")], rate)
    }

    /// The sessions a server saw, from paths `/x/<session>`.
    fn sessions_of(server: &TestServer) -> std::collections::BTreeSet<u64> {
        server
            .sorted_log()
            .iter()
            .filter_map(|r| r.path.rsplit('/').next()?.parse().ok())
            .collect()
    }

    /// A loopback port nothing listens on: connections to it are refused. The port stays bound
    /// (without SO_REUSEADDR, and not listening) while the returned socket lives, so that no other
    /// test's listener takes it meanwhile and receives this test's connections.
    fn refused_url() -> (String, tokio::net::TcpSocket) {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("bind");
        let port = socket.local_addr().expect("addr").port();
        (format!("http://127.0.0.1:{port}"), socket)
    }

    #[test]
    fn sessions_stick_to_one_replica_and_spread_across_them() {
        let first = TestServer::start(|_| Reply::ok("one"));
        let second = TestServer::start(|_| Reply::ok("two"));
        let w = two_steps(80.0);
        let m = run_replicas(
            &[first.url.as_str(), second.url.as_str()],
            &w,
            None,
            &spec(80.0, 1000 * MS, 31),
        );
        let (a, b) = (sessions_of(&first), sessions_of(&second));
        assert!(a.is_disjoint(&b), "a session went to both replicas");
        let total = (a.len() + b.len()) as f64;
        assert!(total > 40.0, "{total}");
        let share = a.len() as f64 / total;
        assert!(
            (0.25..=0.75).contains(&share),
            "replica 0 had {share:.2} of the sessions"
        );
        // Each session sent its steps to its replica (a late one's second may be cut by the end).
        let sent = first.sorted_log().len();
        assert!(
            sent >= a.len() && sent <= 2 * a.len(),
            "{sent} for {} sessions",
            a.len()
        );
        assert_eq!(m.replicas.len(), 2);
        assert_eq!(m.replicas[0].attempts, first.sorted_log().len() as u64);
        assert_eq!(m.replicas[1].attempts, second.sorted_log().len() as u64);
        assert!(m.replicas.iter().all(|r| r.failed == 0 && r.errors == 0));
    }

    #[test]
    fn a_replica_that_refuses_connections_is_failed_over_and_ejected() {
        let up = TestServer::start(|_| Reply::ok("up"));
        let (down, _held) = refused_url();
        let w = two_steps(80.0);
        let m = run_replicas(
            &[up.url.as_str(), down.as_str()],
            &w,
            None,
            &spec(80.0, 1000 * MS, 32),
        );
        let (live, dead) = (&m.replicas[0], &m.replicas[1]);
        // Every failed attempt on the dead replica went again to the live one: no errors.
        assert!(dead.failed > 0, "{dead:?}");
        assert_eq!(dead.failovers, dead.failed, "{dead:?}");
        assert_eq!((dead.errors, live.errors, live.failed), (0, 0, 0));
        assert_eq!(m.total().counters.errors(), 0);
        // Ejected for the default 1 s after its first failure: the sessions that stuck to it then
        // went to the live one without trying it, so it failed few attempts.
        assert!(dead.ejections >= 1 && dead.failed <= 3, "{dead:?}");
        assert!(dead.moved > 0, "{dead:?}");
        assert!(
            dead.first_failed_ms.is_some_and(|ms| ms < 200.0),
            "{dead:?}"
        );
        let c = &m.operations[0].counters;
        let retries: u64 = m.operations.iter().map(|o| o.counters.retries).sum();
        assert_eq!(retries, dead.failovers, "a failover is an attempt");
        assert_eq!(live.attempts, up.sorted_log().len() as u64);
        assert!(c.sent > 20);
    }

    #[test]
    fn without_failover_the_sessions_of_a_dead_replica_fail() {
        let up = TestServer::start(|_| Reply::ok("up"));
        let (down, _held) = refused_url();
        let w = two_steps(80.0);
        let m = run_replicas(
            &[up.url.as_str(), down.as_str()],
            &w,
            Some(FailoverPolicy::OFF),
            &spec(80.0, 1000 * MS, 33),
        );
        let dead = &m.replicas[1];
        assert!(dead.failed > 10, "{dead:?}");
        assert_eq!((dead.failovers, dead.ejections, dead.moved), (0, 0, 0));
        // A connect error abandons the session: one error per session that stuck to it.
        assert_eq!(dead.errors, dead.failed);
        assert_eq!(m.total().counters.transport.connect, dead.failed);
        assert!(dead.first_error_ms <= dead.last_error_ms);
    }

    #[test]
    fn a_request_that_never_varies_is_failed_over_and_routed_too() {
        // A fixed request is encoded once per phase only with one replica (`prebuild`): with
        // several, every send is routed past ejected replicas and a failover encodes it again for
        // the other replica.
        let up = TestServer::start(|_| Reply::ok("up"));
        let (down, _held) = refused_url();
        let w = workload(vec![op("get", "GET", "/fixed")], 80.0);
        let m = run_replicas(
            &[up.url.as_str(), down.as_str()],
            &w,
            None,
            &spec(80.0, 1000 * MS, 35),
        );
        let dead = &m.replicas[1];
        assert!(dead.failed > 0, "{dead:?}");
        assert_eq!(dead.failovers, dead.failed, "{dead:?}");
        assert!(dead.ejections >= 1 && dead.moved > 0, "{dead:?}");
        assert_eq!(m.total().counters.errors(), 0);
        let log = up.sorted_log();
        assert!(log.len() > 40, "{}", log.len());
        assert!(log.iter().all(|r| r.path == "/fixed"), "{log:?}");
    }

    #[test]
    fn one_replica_records_nothing_per_replica() {
        let server = TestServer::start(|_| Reply::ok("ok"));
        let w = two_steps(40.0);
        let m = run_replicas(&[server.url.as_str()], &w, None, &spec(40.0, 300 * MS, 34));
        assert!(m.replicas.is_empty());
        let json = serde_json::to_value(&m).expect("json");
        assert!(json.get("replicas").is_none());
    }

    #[test]
    fn the_failover_choice_skips_ejected_replicas_until_their_time_is_up() {
        let e = Ejections::new(3);
        let at = |ms: u64| Duration::from_millis(ms);
        assert_eq!(e.route(0, at(0)), None, "nobody is ejected: stay");
        assert_eq!(e.next(0, at(0)), 1);
        assert!(e.eject(1, at(100), at(1000)), "a new ejection");
        assert!(
            !e.eject(1, at(500), at(1000)),
            "ejected already: extended, not counted"
        );
        // Replica 1 is out until 1.5 s: its sessions move to 2, and failovers from 0 skip it.
        assert_eq!(e.route(1, at(600)), Some(2));
        assert_eq!(e.next(0, at(600)), 2);
        assert_eq!(e.next(2, at(600)), 0);
        // Every other replica ejected too: there is nowhere better, so the session stays.
        assert!(e.eject(2, at(600), at(1000)));
        assert!(e.eject(0, at(600), at(1000)));
        assert_eq!(e.route(1, at(700)), None);
        assert_eq!(e.next(1, at(700)), 2, "all ejected: the next one");
        // After its time, replica 1 is tried again.
        assert_eq!(e.route(1, at(1500)), None);
        assert!(!e.is_ejected(1, at(1500)));
        assert!(e.is_ejected(1, at(1499)));
        // `eject = "0s"` never ejects.
        assert!(!e.eject(1, at(2000), Duration::ZERO));
        assert!(!e.is_ejected(1, at(2000)));
    }

    #[test]
    fn the_replica_of_a_session_is_seeded_and_even() {
        let mut counts = [0usize; 3];
        for session in 0..30_000 {
            counts[pick_replica(7, session, 3)] += 1;
        }
        for c in counts {
            assert!((9_000..=11_000).contains(&c), "{counts:?}");
        }
        assert_eq!(pick_replica(7, 12, 3), pick_replica(7, 12, 3));
        assert_eq!(pick_replica(7, 12, 1), 0);
        let moved = (0..1000)
            .filter(|&s| pick_replica(7, s, 2) != pick_replica(8, s, 2))
            .count();
        assert!(moved > 300, "another seed draws other replicas: {moved}");
    }

    #[test_case::test_case(Err(TransportErrorKind::Connect), [true, true, true] ; "connect")]
    #[test_case::test_case(Err(TransportErrorKind::Reset), [false, true, true] ; "reset")]
    #[test_case::test_case(Err(TransportErrorKind::Timeout), [false, false, true] ; "timeout")]
    #[test_case::test_case(Err(TransportErrorKind::Other), [false, false, false] ; "another transport error")]
    #[test_case::test_case(Ok(503), [false, false, true] ; "an unexpected 503")]
    #[test_case::test_case(Ok(502), [false, false, false] ; "an expected 502 is an answer")]
    #[test_case::test_case(Ok(200), [false, false, false] ; "success")]
    fn what_fails_over(result: Result<u16, TransportErrorKind>, by_policy: [bool; 3]) {
        let exchange = Exchange {
            result: result.map(|status| super::super::pool::Answer {
                status,
                body: bytes::Bytes::new(),
            }),
            handed_at: None,
        };
        let on = |reset, timeout, status_5xx| FailoverPolicy {
            on: crate::config::FailoverOn {
                connect: true,
                reset,
                timeout,
                status_5xx,
            },
            ..FailoverPolicy::DEFAULT
        };
        let policies = [
            FailoverPolicy::DEFAULT,
            on(true, false, false),
            on(true, true, true),
        ];
        for (policy, expected) in policies.iter().zip(by_policy) {
            assert_eq!(
                fails_over(policy, &exchange, &[200, 502]),
                expected,
                "{policy:?}"
            );
        }
        assert!(!fails_over(&FailoverPolicy::OFF, &exchange, &[200, 502]));
    }

    #[test]
    fn stop_and_on_window_end_the_phase_early() {
        let server = TestServer::start(|_| Reply::ok("ok"));
        let w = workload(vec![op("get", "GET", "/")], 50.0);
        let on_window = |_: &Window| WindowDecision::Stop("abort: test".to_owned());
        let hooks = PhaseHooks {
            on_window: &on_window,
            ..PhaseHooks::default()
        };
        let started = std::time::Instant::now();
        let m = run(
            &server.url,
            &w,
            &generator(1000 * MS, 100),
            &spec(50.0, 10_000 * MS, 8),
            hooks,
        )
        .expect("phase runs");
        assert!(started.elapsed() < 4000 * MS);
        assert_eq!(m.stopped.as_deref(), Some("abort: test"));
        assert!(m.measured < 2000 * MS, "{:?}", m.measured);
    }

    #[test_case::test_case("ftp://127.0.0.1/" ; "wrong scheme")]
    #[test_case::test_case("https://127.0.0.1/" ; "tls")]
    #[test_case::test_case("not a url" ; "garbage")]
    fn bad_urls_are_engine_errors(url: &str) {
        let w = workload(vec![op("get", "GET", "/")], 1.0);
        let err = run(
            url,
            &w,
            &generator(MS, 1),
            &spec(1.0, MS, 1),
            PhaseHooks::default(),
        )
        .expect_err("refused");
        assert!(matches!(err, EngineError::InvalidUrl { .. }), "{err}");
    }

    #[test]
    fn base_path_and_host_header_come_from_the_url() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let t = rt
            .block_on(TargetAddr::resolve("http://127.0.0.1:8080/api/"))
            .expect("resolves");
        assert_eq!(t.host, "127.0.0.1:8080");
        assert_eq!(t.base_path, "/api");
        assert!(t.is_loopback());
        let t = rt
            .block_on(TargetAddr::resolve("http://[::1]:9"))
            .expect("resolves");
        assert!(t.is_loopback());
        assert_eq!(t.base_path, "");
    }
}
