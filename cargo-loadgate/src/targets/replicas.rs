//! The replicas a run boots beyond the first (`[target] replicas`), and what a `[[fault]]` does to
//! one of them (issue 15): killed with SIGKILL and, when the fault is removed, booted again on the
//! same port from the same build and waited for by its readiness check; or stopped with SIGSTOP
//! and continued with SIGCONT. Each step is timed from the start of the phase's measured part and
//! verified from the instance's own state (exited, stopped, running again), never assumed.
//!
//! The first replica (`target` in the result) is the one whose resources are sampled; it is never
//! faulted, so its samples cover the whole run.

use super::{BootRequest, InstanceState, RunningTarget, TargetError};
use crate::config::{NetworkChoice, ReplicaAction, TargetKind, TargetSource};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a kill, a stop or a continue may take to show in the instance's state.
pub const VERIFY_WITHIN: Duration = Duration::from_secs(2);

/// How often the state is read while waiting for it.
const POLL: Duration = Duration::from_millis(2);

/// The replicas beyond the first: shared between the run and its faults' schedules.
#[derive(Clone, Debug)]
pub struct ReplicaSet {
    /// Replica k (from 1) is `slots[k - 1]`; `None` once it is down for good (its restart failed).
    slots: Arc<tokio::sync::Mutex<Vec<Option<RunningTarget>>>>,
    /// How each is booted again after a kill: its own port, from the build it was booted from.
    restarts: Arc<Vec<BootRequest>>,
    /// Faults whose removal was asked for and has not ended yet (a restart among them).
    removing: Arc<std::sync::atomic::AtomicUsize>,
    /// Told when a removal ends.
    removed: Arc<tokio::sync::Notify>,
    /// The first replica that did not come back after its restart: its number and why.
    down: Arc<Mutex<Option<(u32, TargetError)>>>,
}

impl ReplicaSet {
    /// The set of `replicas` (replica 1 first), each booted from `request`.
    pub fn new(replicas: Vec<RunningTarget>, request: &BootRequest) -> Self {
        let restarts = replicas
            .iter()
            .map(|r| restart_request(request, r))
            .collect();
        Self {
            slots: Arc::new(tokio::sync::Mutex::new(
                replicas.into_iter().map(Some).collect(),
            )),
            restarts: Arc::new(restarts),
            removing: Arc::default(),
            removed: Arc::default(),
            down: Arc::default(),
        }
    }

    /// Waits until no fault's removal is under way (a killed replica booted again), so that the
    /// next phase starts with the replicas the config declares. Returns the replica that did not
    /// come back, if one did not: the run cannot go on as declared.
    pub async fn settled(&self) -> Result<(), (u32, TargetError)> {
        loop {
            let told = self.removed.notified();
            if self.removing.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                break;
            }
            told.await;
        }
        match lock(&self.down).take() {
            Some(down) => Err(down),
            None => Ok(()),
        }
    }

    /// Whether there are none (one replica in all).
    pub async fn is_empty(&self) -> bool {
        self.slots.lock().await.is_empty()
    }

    /// `Ok` while every replica that is up runs; the first one's crash otherwise, with its number.
    pub async fn check_alive(&self) -> Result<(), (u32, TargetError)> {
        for (i, slot) in self.slots.lock().await.iter().enumerate() {
            if let Some(r) = slot {
                r.check_alive().await.map_err(|e| (i as u32 + 1, e))?;
            }
        }
        Ok(())
    }

    /// Stops and removes every replica that is up.
    pub async fn shutdown(&self) {
        let all: Vec<Option<RunningTarget>> = std::mem::take(&mut *self.slots.lock().await);
        for r in all.into_iter().flatten() {
            let _ = r.shutdown().await;
        }
    }
}

/// The request that boots a killed replica again: the same config and environment, its own port
/// (as `PORT`, so the generator's connections find it where they were), from the binary or the
/// image it was booted from rather than a new build, on the same network path.
fn restart_request(request: &BootRequest, replica: &RunningTarget) -> BootRequest {
    let info = replica.info();
    let mut again = request.clone();
    if let Some(port) = info.port {
        again.extra_env.retain(|(k, _)| k != "PORT");
        again.extra_env.push(("PORT".to_owned(), port.to_string()));
    }
    match info.kind {
        TargetKind::Process => again.prebuilt = info.binary.clone(),
        TargetKind::Container => {
            if let Some(image) = &info.image {
                again.config.source = TargetSource::Image {
                    reference: image.tag.clone(),
                };
            }
            // An image target's `auto` publishes its port; this one stays where it was.
            if info
                .network
                .as_ref()
                .is_some_and(|n| n.path == super::NetworkPath::Host)
            {
                again.config.network = NetworkChoice::Host;
            }
        }
        TargetKind::Url => {}
    }
    again
}

/// What a replica fault did, as it happened: each time in ms from the start of the phase's
/// measured part.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplicaFaultTimes {
    /// When the signal was sent (SIGKILL or SIGSTOP).
    pub applied_at_ms: Option<f64>,
    /// When the replica was seen exited (kill) or stopped (pause).
    pub confirmed_at_ms: Option<f64>,
    /// When the removal began: the new instance's boot (kill), or SIGCONT (pause).
    pub removed_at_ms: Option<f64>,
    /// When the replica was seen back: ready again (kill), or running (pause).
    pub back_at_ms: Option<f64>,
    /// Why it is not verified, when it is not.
    pub problem: Option<String>,
    /// The restarted replica's output when it did not come back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_tail: Vec<String>,
    /// Whether the phase ended before the removal was due (it was removed then).
    #[serde(default)]
    pub cut_short: bool,
}

impl ReplicaFaultTimes {
    fn fail(&mut self, why: String) {
        self.problem.get_or_insert(why);
    }
}

/// A replica fault whose schedule runs.
#[derive(Debug)]
pub struct ScheduledReplicaFault {
    set: ReplicaSet,
    times: Arc<Mutex<ReplicaFaultTimes>>,
    /// Tells the schedule to remove the fault now (its phase is over). The schedule itself
    /// removes it, so that a removal is never aborted halfway through a boot.
    end: Arc<tokio::sync::Notify>,
    task: tokio::task::JoinHandle<()>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Starts `action` on `replica` (from 1) of `set`: applied at `apply_at`, removed `duration`
/// later or, with `None`, when [`ScheduledReplicaFault::finish`] is called (a fault that holds
/// through the whole ramp: its removal then is on schedule, not cut short). Times are recorded in
/// ms from `origin` (the start of the phase's measured part, which `apply_at` may precede). Needs
/// a tokio runtime.
pub fn schedule(
    set: &ReplicaSet,
    replica: u32,
    action: ReplicaAction,
    origin: Instant,
    apply_at: Instant,
    duration: Option<Duration>,
) -> ScheduledReplicaFault {
    let times = Arc::new(Mutex::new(ReplicaFaultTimes::default()));
    let end = Arc::new(tokio::sync::Notify::new());
    let task = {
        let set = set.clone();
        let times = Arc::clone(&times);
        let end = Arc::clone(&end);
        let apply_at = tokio::time::Instant::from_std(apply_at);
        tokio::spawn(async move {
            tokio::select! {
                biased;
                () = end.notified() => return,
                () = tokio::time::sleep_until(apply_at) => {}
            }
            apply(&set, replica, action, origin, &times).await;
            match duration {
                Some(duration) => {
                    tokio::select! {
                        biased;
                        () = end.notified() => lock(&times).cut_short = true,
                        () = tokio::time::sleep_until(apply_at + duration) => {}
                    }
                }
                None => end.notified().await,
            }
            remove(&set, replica, action, origin, &times).await;
        })
    };
    ScheduledReplicaFault {
        set: set.clone(),
        times,
        end,
        task,
    }
}

impl ScheduledReplicaFault {
    /// Ends the schedule: a fault not yet applied never will be; one still applied is removed now
    /// (`cut_short`, unless it was to hold until now); a removal under way runs to its end.
    /// Returns what happened.
    pub async fn finish(self) -> ReplicaFaultTimes {
        self.end().wait().await
    }

    /// Asks the schedule to end now, and counts it among the set's removals under way until
    /// [`EndingReplicaFault::wait`] sees it done ([`ReplicaSet::settled`] waits for it).
    pub fn end(self) -> EndingReplicaFault {
        self.set
            .removing
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        // A permit: the schedule sees it at its next wait, even if it is not waiting yet.
        self.end.notify_one();
        EndingReplicaFault { fault: self }
    }
}

/// A replica fault asked to end ([`ScheduledReplicaFault::end`]).
#[derive(Debug)]
pub struct EndingReplicaFault {
    fault: ScheduledReplicaFault,
}

impl EndingReplicaFault {
    /// Waits for the schedule's end (its removal, a restart among them); returns what happened.
    pub async fn wait(self) -> ReplicaFaultTimes {
        let ScheduledReplicaFault {
            set, times, task, ..
        } = self.fault;
        let joined = task.await;
        set.removing
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        set.removed.notify_waiters();
        if let Err(e) = joined
            && e.is_panic()
        {
            std::panic::resume_unwind(e.into_panic());
        }
        lock(&times).clone()
    }
}

fn ms_since(origin: Instant) -> f64 {
    Instant::now()
        .saturating_duration_since(origin)
        .as_secs_f64()
        * 1e3
        - origin
            .saturating_duration_since(Instant::now())
            .as_secs_f64()
            * 1e3
}

/// Waits until `replica`'s state is `wanted` (read every 2 ms, for at most [`VERIFY_WITHIN`]);
/// returns when it was seen, or the last state read.
async fn wait_for(
    target: &RunningTarget,
    wanted: InstanceState,
    origin: Instant,
) -> Result<f64, String> {
    let deadline = Instant::now() + VERIFY_WITHIN;
    loop {
        match target.state().await {
            Ok(state) if state == wanted => return Ok(ms_since(origin)),
            Ok(state) if Instant::now() >= deadline => {
                return Err(format!(
                    "{} after the signal it was still {state:?}",
                    crate::config::format_duration(VERIFY_WITHIN)
                ));
            }
            Err(e) => return Err(format!("its state could not be read: {e}")),
            Ok(_) => tokio::time::sleep(POLL).await,
        }
    }
}

async fn apply(
    set: &ReplicaSet,
    replica: u32,
    action: ReplicaAction,
    origin: Instant,
    times: &Mutex<ReplicaFaultTimes>,
) {
    let slots = set.slots.lock().await;
    let Some(Some(target)) = slots.get(replica as usize - 1) else {
        lock(times).fail(format!(
            "replica {replica} was not up when the fault was due"
        ));
        return;
    };
    // When the signal is sent: an engine's kill API answers after the container is gone.
    lock(times).applied_at_ms = Some(ms_since(origin));
    let sent = match action {
        ReplicaAction::Kill => target.kill().await,
        ReplicaAction::Pause => target.stop_or_continue(true),
    };
    if let Err(e) = sent {
        lock(times).fail(format!("the {} failed: {e}", action.as_str()));
        return;
    }
    let wanted = match action {
        ReplicaAction::Kill => InstanceState::Exited,
        ReplicaAction::Pause => InstanceState::Stopped,
    };
    match wait_for(target, wanted, origin).await {
        Ok(at) => lock(times).confirmed_at_ms = Some(at),
        Err(why) => lock(times).fail(format!("replica {replica} was not seen {wanted:?}: {why}")),
    }
}

async fn remove(
    set: &ReplicaSet,
    replica: u32,
    action: ReplicaAction,
    origin: Instant,
    times: &Mutex<ReplicaFaultTimes>,
) {
    let index = replica as usize - 1;
    match action {
        ReplicaAction::Pause => {
            let slots = set.slots.lock().await;
            let Some(Some(target)) = slots.get(index) else {
                lock(times).fail(format!(
                    "replica {replica} was gone when it was due to continue"
                ));
                return;
            };
            lock(times).removed_at_ms = Some(ms_since(origin));
            let sent = target.stop_or_continue(false);
            if let Err(e) = sent {
                lock(times).fail(format!("SIGCONT failed: {e}"));
                return;
            }
            match wait_for(target, InstanceState::Running, origin).await {
                Ok(at) => lock(times).back_at_ms = Some(at),
                Err(why) => lock(times).fail(format!(
                    "replica {replica} was not seen running again: {why}"
                )),
            }
        }
        ReplicaAction::Kill => {
            // The dead instance is reaped and removed (its container too) before the new one
            // takes its port.
            let dead = set.slots.lock().await.get_mut(index).and_then(Option::take);
            if let Some(dead) = dead {
                let _ = dead.shutdown().await;
            }
            lock(times).removed_at_ms = Some(ms_since(origin));
            let Some(request) = set.restarts.get(index).cloned() else {
                lock(times).fail(format!("replica {replica} has no boot request"));
                return;
            };
            // `boot` holds its event callback across awaits, so its future is not `Send`: it runs
            // on a blocking thread, on this runtime (its output readers stay tasks of it).
            let handle = tokio::runtime::Handle::current();
            let booted =
                tokio::task::spawn_blocking(move || handle.block_on(super::boot(request, &|_| {})))
                    .await
                    .unwrap_or_else(|e| match e.try_into_panic() {
                        Ok(panic) => std::panic::resume_unwind(panic),
                        Err(e) => Err(TargetError::io(
                            "boot the replica again",
                            std::io::Error::other(e.to_string()),
                        )),
                    });
            match booted {
                Ok(again) => {
                    lock(times).back_at_ms = Some(ms_since(origin));
                    if let Some(slot) = set.slots.lock().await.get_mut(index) {
                        *slot = Some(again);
                    }
                }
                Err(e) => {
                    let mut t = lock(times);
                    t.log_tail = e.log_tail().to_vec();
                    let mut down = lock(&set.down);
                    if down.is_none() {
                        *down = Some((
                            replica,
                            TargetError::Crashed {
                                status: format!(
                                    "replica {replica} did not come back after its restart: {}",
                                    e.to_string().lines().next().unwrap_or_default()
                                ),
                                log_tail: e.log_tail().to_vec(),
                            },
                        ));
                    }
                    drop(down);
                    let first = e.to_string();
                    let first = first.lines().next().unwrap_or_default();
                    t.fail(format!(
                        "replica {replica} did not come back after its restart: {first}"
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ReadyConfig, TargetConfig};
    use std::collections::BTreeMap;

    #[test]
    fn times_are_from_the_measured_start_and_negative_before_it() {
        let origin = Instant::now() + Duration::from_millis(500);
        let before = ms_since(origin);
        assert!((-501.0..=-450.0).contains(&before), "{before}");
        let past = Instant::now() - Duration::from_millis(100);
        let after = ms_since(past);
        assert!((100.0..200.0).contains(&after), "{after}");
    }

    /// A tiny HTTP server on `$PORT` (Python's standard library), answering 200 to every GET.
    const SERVER: &str = "import http.server, os\n\
        class H(http.server.BaseHTTPRequestHandler):\n\
        \x20   def do_GET(self):\n\
        \x20       self.send_response(200)\n\
        \x20       self.send_header('content-length', '2')\n\
        \x20       self.end_headers()\n\
        \x20       self.wfile.write(b'ok')\n\
        \x20   def log_message(self, *args):\n\
        \x20       pass\n\
        http.server.HTTPServer(('127.0.0.1', int(os.environ['PORT'])), H).serve_forever()\n";

    /// A process replica running [`SERVER`] (Python is on every machine this project runs on:
    /// bench/ uses it too).
    fn python_request() -> BootRequest {
        let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
            .into_iter()
            .map(std::path::PathBuf::from)
            .find(|p| p.exists())
            .expect("python3 in /usr/bin or /usr/local/bin (the replica under test)");
        BootRequest {
            kind: TargetKind::Process,
            config: TargetConfig {
                source: TargetSource::Bin {
                    name: "python3".into(),
                },
                port: 8080,
                ready: ReadyConfig {
                    path: "/health".into(),
                    timeout: Duration::from_secs(20),
                    interval: Duration::from_millis(20),
                },
                cpus: None,
                memory_bytes: None,
                env: BTreeMap::new(),
                args: vec!["-c".into(), SERVER.into()],
                network: NetworkChoice::Auto,
                replicas: 2,
            },
            package: None,
            extra_env: Vec::new(),
            allow_remote: false,
            url: None,
            run_id: "replica-test".into(),
            cpuset: None,
            prebuilt: Some(python),
        }
    }

    async fn one_replica() -> (ReplicaSet, u16) {
        let request = python_request();
        let replica = super::super::boot(request.clone(), &|_| {})
            .await
            .expect("the replica boots");
        let port = replica.info().port.expect("a port");
        (ReplicaSet::new(vec![replica], &request), port)
    }

    async fn answers(port: u16) -> bool {
        reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_millis(500))
            .build()
            .expect("client")
            .get(format!("http://127.0.0.1:{port}/"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_killed_replica_is_seen_exited_and_comes_back_on_its_port() {
        let (set, port) = one_replica().await;
        let origin = Instant::now();
        let fault = schedule(
            &set,
            1,
            ReplicaAction::Kill,
            origin,
            origin + Duration::from_millis(100),
            Some(Duration::from_millis(400)),
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!answers(port).await, "killed, it must not answer");
        // The removal boots it again; `finish` waits for a removal under way.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let times = fault.finish().await;
        assert_eq!(times.problem, None, "{times:?}");
        let applied = times.applied_at_ms.expect("applied");
        assert!((90.0..400.0).contains(&applied), "{times:?}");
        let exited = times.confirmed_at_ms.expect("seen exited");
        assert!(exited >= applied && exited - applied < 2_000.0, "{times:?}");
        let removed = times.removed_at_ms.expect("removed");
        assert!(removed >= 490.0, "{times:?}");
        assert!(times.back_at_ms.expect("back") > removed, "{times:?}");
        assert!(!times.cut_short);
        assert!(answers(port).await, "back on its own port");
        set.check_alive().await.expect("the new instance runs");
        set.shutdown().await;
        assert!(!answers(port).await, "shut down");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_paused_replica_is_seen_stopped_then_running() {
        let (set, port) = one_replica().await;
        let origin = Instant::now();
        let fault = schedule(
            &set,
            1,
            ReplicaAction::Pause,
            origin,
            origin + Duration::from_millis(50),
            Some(Duration::from_millis(1000)),
        );
        // Asked while it is stopped, with a timeout that ends before it continues.
        tokio::time::sleep(Duration::from_millis(250)).await;
        let answered = answers(port).await;
        tokio::time::sleep(Duration::from_millis(900)).await;
        let times = fault.finish().await;
        assert!(!answered, "stopped, it must not answer: {times:?}");
        assert_eq!(times.problem, None, "{times:?}");
        assert!(
            times.confirmed_at_ms.is_some() && times.back_at_ms.is_some(),
            "{times:?}"
        );
        assert!(answers(port).await, "continued, it answers again");
        set.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_fault_whose_phase_ends_first_is_removed_and_flagged() {
        let (set, port) = one_replica().await;
        let now = Instant::now();
        let fault = schedule(
            &set,
            1,
            ReplicaAction::Pause,
            now,
            now + Duration::from_millis(20),
            Some(Duration::from_secs(60)),
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        let times = fault.finish().await;
        assert!(times.cut_short, "{times:?}");
        assert!(
            times.back_at_ms.is_some(),
            "resumed at the finish: {times:?}"
        );
        assert!(answers(port).await);
        set.shutdown().await;
    }

    /// A replica whose port was taken while it was down cannot come back: the fault is not
    /// verified, the replica's output says why, and the set reports it down to the next phase.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_replica_that_does_not_come_back_is_reported_down_with_its_output() {
        let (set, port) = one_replica().await;
        let origin = Instant::now();
        let fault = schedule(
            &set,
            1,
            ReplicaAction::Kill,
            origin,
            origin + Duration::from_millis(50),
            Some(Duration::from_millis(500)),
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
        // Killed: another listener takes its port before the restart.
        let squatter = std::net::TcpListener::bind(("127.0.0.1", port)).expect("the port is free");
        let times = fault.finish().await;
        let problem = times.problem.clone().expect("not verified");
        assert!(
            problem.contains("replica 1 did not come back after its restart"),
            "{times:?}"
        );
        assert!(times.back_at_ms.is_none(), "{times:?}");
        assert!(
            times
                .log_tail
                .iter()
                .any(|l| l.contains("Address already in use")),
            "the replica's own words: {times:?}"
        );
        let (index, down) = set.settled().await.expect_err("reported down");
        assert_eq!(index, 1);
        assert!(down.to_string().contains("did not come back"), "{down}");
        assert!(set.check_alive().await.is_ok(), "nothing left up to check");
        set.shutdown().await;
        drop(squatter);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_fault_until_the_finish_is_removed_on_schedule_then() {
        let (set, port) = one_replica().await;
        // Applied before its origin, as a fault through the ramp is (before the first step's
        // warm-up): its times are negative.
        let now = Instant::now();
        let fault = schedule(
            &set,
            1,
            ReplicaAction::Kill,
            now + Duration::from_secs(1),
            now,
            None,
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!answers(port).await, "killed until the finish");
        let times = fault.finish().await;
        assert!(!times.cut_short, "{times:?}");
        assert_eq!(times.problem, None, "{times:?}");
        assert!(
            times.applied_at_ms.is_some_and(|ms| ms < -900.0),
            "{times:?}"
        );
        assert!(times.back_at_ms.is_some(), "{times:?}");
        assert!(answers(port).await);
        set.shutdown().await;
    }
}
