//! A generator of several event loops (`generator.threads`): one thread per loop, each pinned to a
//! core of its own and running the phase's loop (`super::phase`) on its shard of the schedule, and
//! a coordinator on the calling thread that merges what they measure.
//!
//! Session k of the seeded schedule goes to loop k mod N ([`Shard`]), so the requests sent are the
//! same whatever N is: the same session numbers, paths and think times at the same intended times
//! (every loop starts on one clock, [`StartLine`]). The loops share nothing on their hot path:
//! once a window (1 s) each sends the coordinator its counts and the windows it closed, with their
//! histograms. The coordinator merges a window once every loop has closed it, shows the loops'
//! total progress, asks the abort hook about the merged window, and stops every loop when it says
//! stop. At the end it merges the loops' measurements (`measure::PhaseMerge`): histograms added,
//! counters summed, validity judged on the merged figures by the rules of one loop.

use super::affinity::pin_current_thread;
use super::clock::monotonic_now;
use super::phase::{
    EngineError, LoopRole, Pacing, PhaseHooks, PhaseSpec, WindowDecision, run_phase_paced,
};
use super::signal::CancellationSignal;
use crate::config::{GeneratorConfig, MAX_CONNECTIONS, WorkloadConfig};
use crate::measure::{
    PhaseMeasurement, PhaseMerge, Progress, ValidityLimits, Window, WindowHistograms,
};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use crate::workload::Schedule;
/// Which sessions of a schedule one loop sends: the project's one sharding rule
/// ([`crate::workload::Shard`]), here with loop i of N taking the sessions k ≡ i (mod N) of the
/// schedule it is given (itself a process's shard under `run --shard`: the two compose).
pub use crate::workload::Shard;

/// Loop `index`'s share of `total` among `loops` loops: the first `total % loops` loops take one
/// more, so the shares add up to `total`.
pub fn share(total: usize, index: usize, loops: usize) -> usize {
    let loops = loops.max(1);
    total / loops + usize::from(index < total % loops)
}

/// Where the loops of one phase line up before they start: the last to arrive (every loop has
/// opened its connections by then) sets the origin of the phase's one clock and lets all go.
#[derive(Debug)]
pub(super) struct StartLine {
    loops: usize,
    state: Mutex<LineState>,
    go: Condvar,
}

#[derive(Debug, Default)]
struct LineState {
    arrived: usize,
    origin: Option<Duration>,
    abandoned: bool,
}

impl StartLine {
    fn new(loops: usize) -> Self {
        Self {
            loops: loops.max(1),
            state: Mutex::default(),
            go: Condvar::new(),
        }
    }

    /// Arrives and waits for every other loop: the phase's origin (an absolute `CLOCK_MONOTONIC`
    /// reading), or `None` when a loop gave up before it arrived (the phase is then stopped).
    /// Blocks the thread: its loop has nothing to run before its clock starts.
    pub(super) fn arrive(&self) -> Option<Duration> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.arrived += 1;
        if state.arrived >= self.loops && !state.abandoned {
            state.origin.get_or_insert_with(monotonic_now);
            self.go.notify_all();
        }
        while state.origin.is_none() && !state.abandoned {
            state = self.go.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state.origin
    }

    /// Lets the others go without this loop (it failed before the line, or ended); a no-op once
    /// every loop has arrived.
    fn abandon(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.origin.is_none() {
            state.abandoned = true;
            self.go.notify_all();
        }
    }
}

/// Abandons the start line when a loop's thread ends, whether it returns or panics, so that no
/// other loop waits for it for ever; and when it panics, halts the other loops, so the phase ends
/// at once with the lost loop's error instead of being run out without it.
struct Release {
    start: Arc<StartLine>,
    halt: CancellationSignal,
}

impl Drop for Release {
    fn drop(&mut self) {
        self.start.abandon();
        if std::thread::panicking() {
            self.halt.cancel();
        }
    }
}

/// A loop's line to the others: its number, the start line, and the coordinator's channel.
#[derive(Debug)]
pub(super) struct LoopLink {
    pub(super) index: usize,
    pub(super) start: Arc<StartLine>,
    pub(super) reports: Sender<LoopReport>,
}

/// What a loop tells the coordinator.
#[derive(Debug)]
pub(super) enum LoopReport {
    /// Once a window (at the loop's tick): its counts so far, and the windows it closed since the
    /// last tick with their histograms and its busy share.
    Tick {
        index: usize,
        elapsed: Duration,
        sent: u64,
        answered: u64,
        in_flight: usize,
        dropped: u64,
        closed: Vec<(Window, WindowHistograms)>,
    },
    /// The loop ended: its own measurement (holding the histograms of the windows it closed after
    /// its last tick), or why it could not run.
    Done {
        index: usize,
        result: Result<Box<PhaseMeasurement>, EngineError>,
    },
}

/// A loop's counts, as of its last tick.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    sent: u64,
    answered: u64,
    in_flight: usize,
    dropped: u64,
}

/// Runs one phase on `cores.len()` loops, loop i on a thread of its own pinned to `cores[i]` (not
/// pinned when `None`), and returns the loops' merged measurement.
///
/// Each loop sends its shard of `schedule` ([`Shard`]) with its share of `max-in-flight`, of a
/// fixed pool of `connections` and of the on-demand connection limit ([`share`]). The calling
/// thread coordinates and blocks until every loop has ended: `hooks` are called on it, progress
/// once a window with the loops' totals (when loop 0 reports), the abort hook with every window
/// all loops have closed while sending, merged. `stop`, and a `Stop` from the abort hook, stop
/// every loop; a loop that fails stops the others and its error is the phase's.
#[expect(
    clippy::too_many_arguments,
    reason = "run_phase's arguments plus the loops' cores; a struct would only rename them"
)]
pub fn run_phase_on_loops(
    targets: &[String],
    workload: &WorkloadConfig,
    generator: &GeneratorConfig,
    slo_latency: Duration,
    spec: &PhaseSpec,
    schedule: &Schedule,
    cores: &[Option<usize>],
    hooks: PhaseHooks<'_>,
    stop: CancellationSignal,
) -> Result<PhaseMeasurement, EngineError> {
    // One loop is the engine itself, on the calling thread (pinned to its core when it has one):
    // no coordinator, nothing merged, the hot path as it is without threads.
    if let [] | [_] = cores {
        if let Some(&Some(core)) = cores.first() {
            // Unpinned is slower but still measures honestly (lag is recorded), so go on.
            let _ = super::pin_current_thread(core);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(EngineError::Timer)?;
        let targets: Vec<&str> = targets.iter().map(String::as_str).collect();
        return runtime.block_on(run_phase_paced(
            &targets,
            workload,
            generator,
            slo_latency,
            spec,
            schedule,
            hooks,
            stop,
            Pacing::DEFAULT,
            LoopRole::whole(generator),
        ));
    }
    let cores: Vec<Option<usize>> = cores.to_vec();
    let loops = cores.len();
    // The loops stop on the caller's signal and on the abort hook; the caller's signal stays
    // uncancelled by an abort, so it still tells a Ctrl-C apart.
    let halt = stop.child();
    let start = Arc::new(StartLine::new(loops));
    let limits = ValidityLimits {
        max_lag: generator.max_lag,
        max_drop_rate: generator.max_drop_rate,
        slo_latency,
    };
    let (reports, rx) = channel();
    let targets: Vec<&str> = targets.iter().map(String::as_str).collect();
    let targets = &targets[..];
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(loops);
        let mut failed = None;
        for (index, core) in cores.iter().copied().enumerate() {
            let link = LoopLink {
                index,
                start: Arc::clone(&start),
                reports: reports.clone(),
            };
            let loop_halt = halt.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("loadgate-loop-{index}"))
                .spawn_scoped(scope, move || {
                    let release = Release {
                        start: Arc::clone(&link.start),
                        halt: loop_halt.clone(),
                    };
                    if let Some(core) = core {
                        // Unpinned is slower but still measures honestly (lag is recorded).
                        let _ = pin_current_thread(core);
                    }
                    let role = LoopRole {
                        shard: Shard {
                            index,
                            count: loops,
                        },
                        max_in_flight: share(generator.max_in_flight, index, loops).max(1),
                        connections: match generator.connections {
                            0 => 0,
                            fixed => share(fixed, index, loops).max(1),
                        },
                        connection_cap: share(
                            MAX_CONNECTIONS.min(generator.max_in_flight),
                            index,
                            loops,
                        )
                        .max(1),
                        link: Some(&link),
                    };
                    let result = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(runtime) => runtime.block_on(run_phase_paced(
                            targets,
                            workload,
                            generator,
                            slo_latency,
                            spec,
                            schedule,
                            PhaseHooks::default(),
                            loop_halt,
                            Pacing::DEFAULT,
                            role,
                        )),
                        Err(e) => Err(EngineError::Timer(e)),
                    };
                    drop(release);
                    let _ = link.reports.send(LoopReport::Done {
                        index,
                        result: result.map(Box::new),
                    });
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    failed = Some(EngineError::Timer(e));
                    halt.cancel();
                    start.abandon();
                    break;
                }
            }
        }
        // The coordinator's receiver ends once every loop has sent `Done` and dropped its sender.
        drop(reports);
        let merged = coordinate(&rx, loops, spec, &hooks, &halt, &limits);
        for handle in handles {
            // A loop that panicked sent no `Done`: `coordinate` reports it.
            let _ = handle.join();
        }
        match failed {
            Some(e) => Err(e),
            None => merged,
        }
    })
}

/// The coordinator: merges the loops' windows as they close, reports progress and asks the abort
/// hook, until every loop has ended; then merges their measurements.
fn coordinate(
    rx: &Receiver<LoopReport>,
    loops: usize,
    spec: &PhaseSpec,
    hooks: &PhaseHooks<'_>,
    halt: &CancellationSignal,
    limits: &ValidityLimits,
) -> Result<PhaseMeasurement, EngineError> {
    let mut merge = PhaseMerge::new(loops).keeping_window_histograms(spec.keep_window_histograms);
    let mut counts = vec![Counts::default(); loops];
    let mut parts: Vec<Option<PhaseMeasurement>> = vec![None; loops];
    let mut error = None;
    let mut aborted: Option<String> = None;
    let mut fresh: Option<Window> = None;
    while let Ok(report) = rx.recv() {
        match report {
            LoopReport::Tick {
                index,
                elapsed,
                sent,
                answered,
                in_flight,
                dropped,
                closed,
            } => {
                if let Some(c) = counts.get_mut(index) {
                    *c = Counts {
                        sent,
                        answered,
                        in_flight,
                        dropped,
                    };
                }
                for (window, histograms) in closed {
                    merge.add_closed(&window, histograms);
                }
                for window in merge.complete() {
                    if aborted.is_none()
                        && !halt.is_cancelled()
                        && let WindowDecision::Stop(reason) = (hooks.on_window)(&window)
                    {
                        aborted = Some(reason);
                        halt.cancel();
                    }
                    fresh = Some(window);
                }
                // Loop 0 paces the display: one report a window, with every loop's latest counts.
                if index == 0 {
                    (hooks.progress)(&Progress {
                        phase: spec.name.clone(),
                        elapsed,
                        warming_up: elapsed < spec.warmup,
                        sent: counts.iter().map(|c| c.sent).sum(),
                        answered: counts.iter().map(|c| c.answered).sum(),
                        in_flight: counts.iter().map(|c| c.in_flight).sum(),
                        dropped: counts.iter().map(|c| c.dropped).sum(),
                        window: fresh.take(),
                    });
                }
            }
            LoopReport::Done { index, result } => match result {
                Ok(m) => {
                    if let Some(slot) = parts.get_mut(index) {
                        *slot = Some(*m);
                    }
                }
                Err(e) => {
                    halt.cancel();
                    error.get_or_insert(e);
                }
            },
        }
    }
    if let Some(e) = error {
        return Err(e);
    }
    let lost = || {
        EngineError::Timer(std::io::Error::other(
            "a generator loop ended without a measurement (its thread panicked)",
        ))
    };
    let parts: Vec<PhaseMeasurement> = parts.into_iter().collect::<Option<_>>().ok_or_else(lost)?;
    merge.finish(parts, limits, aborted).ok_or_else(lost)
}

#[cfg(test)]
mod tests {
    use super::super::phase::tests::{op, workload as one_entry};
    use super::super::test_server::{Logged, Reply, TestServer};
    use super::*;
    use crate::config::{GeneratorThreads, ThinkTime, Transition};
    use crate::workload::SessionPlan;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_loop_that_panics_halts_the_others_and_one_that_returns_does_not() {
        let halt = CancellationSignal::new();
        let start = Arc::new(StartLine::new(2));
        let guard = Release {
            start: Arc::clone(&start),
            halt: halt.clone(),
        };
        let panicked = std::thread::spawn(move || {
            let _release = guard;
            panic!("a loop's bug");
        })
        .join();
        assert!(panicked.is_err());
        assert!(halt.is_cancelled(), "the other loops are halted");

        let calm = CancellationSignal::new();
        drop(Release {
            start,
            halt: calm.clone(),
        });
        assert!(
            !calm.is_cancelled(),
            "a loop that returns leaves the others running"
        );
    }

    /// Two operations, a coin-flip second step after a think time: sessions differ in length,
    /// path and timing, all drawn from the seed.
    fn workload() -> WorkloadConfig {
        let mut first = op("first", "GET", "/a/{{session}}/{{seq}}?r={{rand}}");
        first.next = vec![Transition {
            to: 1,
            p: 0.5,
            think: ThinkTime::Exponential(5 * MS),
        }];
        one_entry(
            vec![
                first,
                op("second", "GET", "/b/{{session}}/{{seq}}?r={{rand}}"),
            ],
            100.0,
        )
    }

    fn spec(rate: f64, duration: Duration, seed: u64) -> PhaseSpec {
        PhaseSpec {
            name: "test".to_owned(),
            sessions_per_sec: rate,
            duration,
            warmup: Duration::ZERO,
            seed,
            first_session: 1_000,
            keep_window_histograms: false,
        }
    }

    /// A generator for tests on a noisy machine: a lag limit no wake-up noise reaches.
    fn generator() -> GeneratorConfig {
        GeneratorConfig {
            timeout: 5_000 * MS,
            max_in_flight: 1_000,
            max_lag: 5_000 * MS,
            max_drop_rate: 0.01,
            connections: 0,
            threads: GeneratorThreads::Auto,
            retry: None,
            failover: None,
        }
    }

    #[test_case::test_case(1 ; "one loop")]
    #[test_case::test_case(2 ; "two loops")]
    #[test_case::test_case(3 ; "three loops")]
    fn the_shards_of_a_schedule_are_the_schedule(loops: usize) {
        let schedule = spec(200.0, 2_000 * MS, 5).schedule(&workload());
        let whole: Vec<SessionPlan> = schedule.sessions().collect();
        assert!(whole.len() > 300, "{}", whole.len());
        let mut union: Vec<SessionPlan> = Vec::new();
        for index in 0..loops {
            let shard: Vec<SessionPlan> = schedule
                .sharded(Shard {
                    index,
                    count: loops,
                })
                .sessions()
                .collect();
            assert!(
                shard.iter().all(|p| p.index % loops as u64 == index as u64),
                "shard {index} of {loops} holds only its own sessions"
            );
            assert!(
                shard.windows(2).all(|w| w[0].start <= w[1].start),
                "in order of arrival"
            );
            union.extend(shard);
        }
        union.sort_by_key(|p| p.index);
        assert_eq!(union, whole, "the same sessions, the same plans, once each");
    }

    #[test]
    fn shares_add_up_to_the_total() {
        for (total, loops) in [(10_000, 3), (7, 2), (2, 2), (256, 3), (5, 1)] {
            let shares: Vec<usize> = (0..loops).map(|i| share(total, i, loops)).collect();
            assert_eq!(shares.iter().sum::<usize>(), total, "{total} over {loops}");
            let (min, max) = (shares.iter().min(), shares.iter().max());
            assert!(max.zip(min).is_some_and(|(a, b)| a - b <= 1), "{shares:?}");
        }
    }

    /// The phase the 1-loop and 2-loop runs send: 150 sessions/s for 1 s, from session 1000.
    fn same_load() -> PhaseSpec {
        spec(150.0, 1_000 * MS, 11)
    }

    /// The requests a run sent, as the server logged them, sorted.
    fn sent_with(loops: usize, server: &TestServer) -> (PhaseMeasurement, Vec<Logged>) {
        let w = workload();
        let s = same_load();
        let schedule = s.schedule(&w);
        let cores = vec![None; loops];
        let m = run_phase_on_loops(
            std::slice::from_ref(&server.url),
            &w,
            &generator(),
            Duration::from_millis(250),
            &s,
            &schedule,
            &cores,
            PhaseHooks::default(),
            CancellationSignal::new(),
        )
        .expect("phase runs");
        (m, server.sorted_log())
    }

    /// The session number in a logged path (`/a/{{session}}/…`).
    fn session_of(r: &Logged) -> u64 {
        r.path
            .split('/')
            .nth(2)
            .and_then(|s| s.parse().ok())
            .unwrap_or(u64::MAX)
    }

    #[test]
    fn two_loops_send_the_requests_one_loop_sends_and_their_counts_add_up() {
        let one_server = TestServer::start(|_| Reply::ok("ok"));
        let (one, one_log) = sent_with(1, &one_server);
        let two_server = TestServer::start(|_| Reply::ok("ok"));
        let (two, two_log) = sent_with(2, &two_server);
        assert!(one_log.len() > 100, "{}", one_log.len());
        // A session's second step is intended 5 ms (mean) after its first answer and is cut when
        // the phase has ended by then, which depends on answer times. Leave out the sessions
        // that arrive in the phase's last 100 ms; every other request is the same, whichever
        // loop sent it: paths, session numbers (from `first_session`), sequence numbers and
        // seeded random numbers.
        let s = same_load();
        let tail: Vec<u64> = s
            .schedule(&workload())
            .sessions()
            .filter(|p| p.start + 100 * MS >= s.duration)
            .map(|p| s.first_session + p.index)
            .collect();
        let settled = |log: &[Logged]| -> Vec<Logged> {
            log.iter()
                .filter(|r| !tail.contains(&session_of(r)))
                .cloned()
                .collect()
        };
        assert!(settled(&one_log).len() + 40 > one_log.len());
        assert_eq!(settled(&two_log), settled(&one_log));
        assert!(
            one_log
                .iter()
                .all(|r| (1_000..u64::MAX).contains(&session_of(r)))
        );
        // Both loops sent some, and the merged measurement counts every request once.
        assert_eq!(two.loops.len(), 2);
        assert!(one.loops.is_empty(), "one loop is recorded as before");
        assert!(
            two.loops.iter().all(|l| l.requests_total > 0),
            "{:?}",
            two.loops
        );
        let sent = |m: &PhaseMeasurement| m.total().counters.sent;
        assert_eq!(sent(&two), two_log.len() as u64);
        assert_eq!(sent(&one), one_log.len() as u64);
        assert_eq!(
            two.requests_total,
            two.loops.iter().map(|l| l.requests_total).sum::<u64>()
        );
        assert_eq!(two.requests_total, sent(&two), "no warm-up");
        assert_eq!(
            two.operations
                .iter()
                .map(|o| o.latency.count())
                .sum::<u64>(),
            sent(&two),
            "every answer in the merged histograms"
        );
        assert_eq!(
            two.windows.windows.iter().map(|w| w.sent).sum::<u64>(),
            sent(&two),
            "every request in one merged window"
        );
        assert_eq!(two.counters.arrivals, sent(&two), "nothing dropped");
        // Every session of the schedule started, on one loop or the other.
        assert_eq!(two.counters.sessions_started, one.counters.sessions_started);
        assert!(two.validity.is_valid(), "{:?}", two.validity);
    }

    #[test]
    fn the_abort_hook_sees_merged_windows_and_stops_every_loop() {
        let server = TestServer::start(|_| Reply::ok("ok"));
        let w = workload();
        let s = spec(100.0, 20_000 * MS, 3);
        let schedule = s.schedule(&w);
        let seen = std::cell::RefCell::new(Vec::new());
        let on_window = |window: &Window| {
            seen.borrow_mut().push(window.clone());
            WindowDecision::Stop("abort: test".to_owned())
        };
        let progress_calls = std::cell::Cell::new(0u32);
        let progress = |_: &Progress| progress_calls.set(progress_calls.get() + 1);
        let hooks = PhaseHooks {
            progress: &progress,
            on_window: &on_window,
        };
        let caller = CancellationSignal::new();
        let started = std::time::Instant::now();
        let m = run_phase_on_loops(
            std::slice::from_ref(&server.url),
            &w,
            &generator(),
            Duration::from_millis(250),
            &s,
            &schedule,
            &[None, None],
            hooks,
            caller.clone(),
        )
        .expect("phase runs");
        assert_eq!(m.stopped.as_deref(), Some("abort: test"));
        assert!(m.measured < 10_000 * MS, "{:?}", m.measured);
        assert!(started.elapsed() < 15_000 * MS, "{:?}", started.elapsed());
        assert!(!caller.is_cancelled(), "an abort is not the caller's stop");
        let seen = seen.borrow();
        assert_eq!(seen.len(), 1, "asked once, then stopped");
        assert_eq!(seen[0].start, Duration::ZERO);
        // The window the hook saw is both loops' merged: as many sends as the merged series has
        // in its first window.
        assert_eq!(seen[0].sent, m.windows.windows[0].sent);
        assert!(progress_calls.get() >= 1);
    }

    #[test]
    fn the_callers_stop_ends_every_loop() {
        let server = TestServer::start(|_| Reply::ok("ok"));
        let w = workload();
        let s = spec(100.0, 20_000 * MS, 3);
        let schedule = s.schedule(&w);
        let stop = CancellationSignal::new();
        let stopper = stop.clone();
        let progress = move |_: &Progress| stopper.cancel();
        let hooks = PhaseHooks {
            progress: &progress,
            ..PhaseHooks::default()
        };
        let m = run_phase_on_loops(
            std::slice::from_ref(&server.url),
            &w,
            &generator(),
            Duration::from_millis(250),
            &s,
            &schedule,
            &[None, None],
            hooks,
            stop.clone(),
        )
        .expect("phase runs");
        assert_eq!(m.stopped.as_deref(), Some("stopped"));
        assert!(m.measured < 10_000 * MS, "{:?}", m.measured);
        assert!(stop.is_cancelled());
    }

    #[test]
    fn a_loop_that_cannot_run_is_the_phases_error_and_releases_the_others() {
        // A port nothing listens on and a fixed pool: every loop fails to open its connections.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let w = workload();
        let s = spec(50.0, 200 * MS, 1);
        let g = GeneratorConfig {
            connections: 4,
            timeout: 1_000 * MS,
            ..generator()
        };
        let err = run_phase_on_loops(
            &[format!("http://127.0.0.1:{port}")],
            &w,
            &g,
            Duration::from_millis(250),
            &s,
            &s.schedule(&w),
            &[None, None],
            PhaseHooks::default(),
            CancellationSignal::new(),
        )
        .expect_err("refused");
        // Each loop asked for its share of the pool: two of the four.
        assert!(
            matches!(err, EngineError::Prewarm { wanted: 2, .. }),
            "{err}"
        );
    }
}
