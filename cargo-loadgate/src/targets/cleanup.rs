//! Always-cleanup: a process-wide registry of what this run started (containers, process groups,
//! the base's git worktree, a dependency's temporary data directory), emptied on SIGINT, SIGTERM and panic, so that no container, child
//! process or worktree outlives a run.
//!
//! testcontainers' own reaping (async drop, watchdog) is not relied on: drop needs a live runtime,
//! and a signal or a panic at the wrong moment would skip it.

use super::TargetError;
use bollard::query_parameters::{ListContainersOptionsBuilder, RemoveContainerOptionsBuilder};
use nix::{
    sys::signal::{Signal, killpg},
    unistd::Pid,
};
use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Mutex, OnceLock, PoisonError},
    time::{Duration, Instant},
};

/// The label naming the run a container belongs to.
pub const LABEL_RUN: &str = "loadgate.run";

/// The label naming the `[[dependency]]` a container runs: a signal removes it after the
/// `[teardown]` steps (which may reach it), not with the target's.
pub const LABEL_DEPENDENCY: &str = "loadgate.dependency";

/// How long the removal waits before it looks for the run's containers a second time.
const SECOND_SWEEP_AFTER: Duration = Duration::from_millis(300);

#[derive(Debug, Default)]
struct Registry {
    containers: Vec<String>,
    /// The containers of dependencies: removed after the teardown, which may reach them.
    dependency_containers: Vec<String>,
    run_ids: Vec<String>,
    process_groups: Vec<i32>,
    /// (repository, worktree path) of each base worktree checked out (`targets::base`).
    worktrees: Vec<(PathBuf, PathBuf)>,
    /// Temporary directories (a dependency's data directory), removed after the processes.
    temp_dirs: Vec<PathBuf>,
    /// Process groups whose leader stops on another signal than SIGTERM (PostgreSQL: SIGINT, its
    /// fast shutdown); the signal goes to the leader alone, which stops its group itself.
    leader_signals: Vec<(i32, Signal)>,
    /// The `[teardown]` steps still to run, prepared: on a signal or a panic they run once the
    /// target and the data steps are stopped, while the dependencies they reach still run.
    teardown: Vec<super::data::PreparedStep>,
    /// The process groups of dependencies (a subset of `process_groups`): stopped after the
    /// teardown, which may reach them.
    dependency_groups: Vec<i32>,
    /// The process groups of teardown steps the normal path runs (a subset of `process_groups`):
    /// a signal lets the one running finish (within the teardown's budget) instead of killing it.
    teardown_groups: Vec<i32>,
}

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
        containers: Vec::new(),
        dependency_containers: Vec::new(),
        run_ids: Vec::new(),
        process_groups: Vec::new(),
        worktrees: Vec::new(),
        temp_dirs: Vec::new(),
        leader_signals: Vec::new(),
        teardown: Vec::new(),
        dependency_groups: Vec::new(),
        teardown_groups: Vec::new(),
    });
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Records a container this run created (before it is started), and the run id it is labelled with.
pub fn register_container(id: &str, run_id: &str) {
    register_run_id(run_id);
    let mut r = registry();
    if !r.containers.iter().any(|c| c == id) {
        r.containers.push(id.to_owned());
    }
}

/// Records the run id the containers this run is about to create are labelled with, before the
/// engine is asked to create one: a signal during the create call then still finds the container
/// by its label.
pub fn register_run_id(run_id: &str) {
    let mut r = registry();
    if !r.run_ids.iter().any(|c| c == run_id) {
        r.run_ids.push(run_id.to_owned());
    }
}

/// Records a dependency's container (before it is started), and the run id it is labelled with:
/// a signal removes it after the `[teardown]` steps, with the dependencies' process groups.
pub fn register_dependency_container(id: &str, run_id: &str) {
    register_run_id(run_id);
    let mut r = registry();
    if !r.dependency_containers.iter().any(|c| c == id) {
        r.dependency_containers.push(id.to_owned());
    }
}

/// Forgets a container after it was removed.
pub fn unregister_container(id: &str) {
    let mut r = registry();
    r.containers.retain(|c| c != id);
    r.dependency_containers.retain(|c| c != id);
}

/// Records a process group this run started.
pub fn register_process_group(pgid: i32) {
    let mut r = registry();
    if !r.process_groups.contains(&pgid) {
        r.process_groups.push(pgid);
    }
}

/// Forgets a process group after it was reaped.
pub fn unregister_process_group(pgid: i32) {
    let mut r = registry();
    r.process_groups.retain(|&p| p != pgid);
    r.leader_signals.retain(|&(p, _)| p != pgid);
    r.dependency_groups.retain(|&p| p != pgid);
    r.teardown_groups.retain(|&p| p != pgid);
}

/// Records that the registered process group `pgid` is a dependency's: a signal stops it after
/// the `[teardown]` steps, which may reach it, instead of with the target.
pub fn register_dependency_group(pgid: i32) {
    let mut r = registry();
    if !r.dependency_groups.contains(&pgid) {
        r.dependency_groups.push(pgid);
    }
}

/// Records that the registered process group `pgid` is a teardown step's, run by the normal path:
/// a signal lets it finish, within the teardown's budget, instead of killing it with the target.
pub fn register_teardown_group(pgid: i32) {
    let mut r = registry();
    if !r.teardown_groups.contains(&pgid) {
        r.teardown_groups.push(pgid);
    }
}

/// The groups a signal stops first, of `groups`: all but the dependencies' and the teardown
/// steps' (the rest, in the second list, wait for the teardown).
fn first_to_stop(groups: Vec<i32>, dependencies: &[i32], teardown: &[i32]) -> (Vec<i32>, Vec<i32>) {
    groups
        .into_iter()
        .partition(|p| !dependencies.contains(p) && !teardown.contains(p))
}

/// Takes the registered process groups a signal stops first ([`first_to_stop`]) out of the
/// registry.
fn take_first_to_stop() -> Vec<i32> {
    let mut r = registry();
    let (first, later) = first_to_stop(
        std::mem::take(&mut r.process_groups),
        &r.dependency_groups,
        &r.teardown_groups,
    );
    r.process_groups = later;
    first
}

/// Records that the leader of process group `pgid` stops on `signal` (sent to it alone) rather
/// than on SIGTERM to the whole group.
pub fn register_leader_signal(pgid: i32, signal: Signal) {
    let mut r = registry();
    r.leader_signals.retain(|&(p, _)| p != pgid);
    r.leader_signals.push((pgid, signal));
}

fn leader_signal(pgid: i32) -> Option<Signal> {
    registry()
        .leader_signals
        .iter()
        .find(|&&(p, _)| p == pgid)
        .map(|&(_, s)| s)
}

/// Records the `[teardown]` steps of this run (replacing any recorded before), to be run if the
/// run ends by a signal or a panic.
pub fn register_teardown(steps: Vec<super::data::PreparedStep>) {
    registry().teardown = steps;
}

/// Takes the next `[teardown]` step still to run out of the registry, one at a time: of the
/// normal path and a signal arriving while it runs them, each step is run by one, and the signal
/// runs those the normal path has not reached.
pub fn take_next_teardown() -> Option<super::data::PreparedStep> {
    let mut r = registry();
    (!r.teardown.is_empty()).then(|| r.teardown.remove(0))
}

/// Records a temporary directory this run created, to be removed (after every registered process
/// is gone) if the run ends by a signal or a panic.
pub fn register_temp_dir(path: &Path) {
    let mut r = registry();
    if !r.temp_dirs.iter().any(|p| p == path) {
        r.temp_dirs.push(path.to_path_buf());
    }
}

/// Forgets the temporary directory at `path`; `true` when it was registered, so that of a `Drop`
/// and a signal racing to remove it, only one does.
pub fn take_temp_dir(path: &Path) -> bool {
    let mut r = registry();
    let before = r.temp_dirs.len();
    r.temp_dirs.retain(|p| p != path);
    r.temp_dirs.len() != before
}

/// Removes the temporary directory at `path` when it is still registered (and forgets it), so
/// that of a `Drop` and a signal racing to remove it only one does; `Ok` when another already
/// did.
pub fn remove_temp_dir(path: &Path) -> std::io::Result<()> {
    if take_temp_dir(path) {
        std::fs::remove_dir_all(path)
    } else {
        Ok(())
    }
}

/// Records a git worktree at `path` of the repository `repo`, to be removed with
/// `git worktree remove --force` and `git worktree prune` if the run ends by a signal or a panic.
pub fn register_worktree(repo: &Path, path: &Path) {
    let mut r = registry();
    if !r.worktrees.iter().any(|(_, p)| p == path) {
        r.worktrees.push((repo.to_path_buf(), path.to_path_buf()));
    }
}

/// Forgets the worktree at `path`; `true` when it was registered, so that of a `Drop` and a panic
/// hook racing to remove it, only one does.
pub fn take_worktree(path: &Path) -> bool {
    let mut r = registry();
    let before = r.worktrees.len();
    r.worktrees.retain(|(_, p)| p != path);
    r.worktrees.len() != before
}

/// The worktree paths registered now.
pub fn registered_worktrees() -> Vec<PathBuf> {
    registry()
        .worktrees
        .iter()
        .map(|(_, p)| p.clone())
        .collect()
}

/// Removes every registered worktree (taking it out of the registry first), synchronously.
/// Returns the paths removed. Part of [`cleanup_all_blocking`].
pub fn remove_registered_worktrees() -> Vec<PathBuf> {
    let worktrees = std::mem::take(&mut registry().worktrees);
    worktrees
        .into_iter()
        .filter(|(repo, path)| super::base::remove_worktree_blocking(repo, path).is_ok())
        .map(|(_, path)| path)
        .collect()
}

/// What is registered now: (containers, run ids, process groups).
pub fn registered() -> (Vec<String>, Vec<String>, Vec<i32>) {
    let r = registry();
    (
        r.containers.clone(),
        r.run_ids.clone(),
        r.process_groups.clone(),
    )
}

/// The signal that stopped a run, as the cleanup task reports it to whoever ends the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

/// Installs the cleanup handlers, once per process (later calls do nothing):
///
/// - a tokio task that waits for SIGINT or SIGTERM, then runs [`cleanup_all_blocking`] (the
///   target's containers and process groups, the teardown steps not run yet, the dependencies, the
///   worktrees and temporary directories, in that order; a second signal meanwhile skips the rest
///   of the teardown), and hands the signal to `on_signal`, which ends the process (the command
///   line picks the exit code: this module knows none);
/// - a panic hook that does the same cleanup synchronously before the previous hook runs.
///
/// Must be called inside a tokio runtime.
pub fn install_cleanup_handlers(on_signal: fn(StopSignal) -> !) -> Result<(), TargetError> {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigint = signal(SignalKind::interrupt())
        .map_err(|e| TargetError::io("install the SIGINT handler", e))?;
    let mut sigterm = signal(SignalKind::terminate())
        .map_err(|e| TargetError::io("install the SIGTERM handler", e))?;
    if INSTALLED.set(()).is_err() {
        return Ok(());
    }
    tokio::spawn(async move {
        let signal = tokio::select! {
            _ = sigint.recv() => StopSignal::Interrupt,
            _ = sigterm.recv() => StopSignal::Terminate,
        };
        STOPPING.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut cleanup = tokio::task::spawn_blocking(cleanup_all_blocking);
        // A second signal while the cleanup runs cuts the teardown short (whoever pressed Ctrl-C
        // twice is not waiting for it); the rest of the cleanup still runs.
        loop {
            tokio::select! {
                _ = &mut cleanup => break,
                _ = sigint.recv() => hurry(),
                _ = sigterm.recv() => hurry(),
            }
        }
        on_signal(signal);
    });
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        cleanup_all_blocking();
        previous(info);
    }));
    Ok(())
}

/// Set once a signal is being handled: the cleanup is under way and ends the process with the
/// signal's exit code. See [`stopping`].
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a signal is being handled. What the cleanup kills fails in the run's own task (a data
/// step, the target), whose error would end the process with its own code while the cleanup still
/// removes what is left; a command that sees this waits for the signal path to end it instead.
pub fn stopping() -> bool {
    STOPPING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Set once [`cleanup_all_blocking`] began (a signal, or a panic's hook): the teardown steps are
/// its to run from then on.
static CLEANING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the cleanup began: the normal path runs no more teardown steps.
pub fn cleaning() -> bool {
    CLEANING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Set by a second signal: the teardown steps still running are killed and the rest skipped.
static HURRY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn hurry() {
    if !HURRY.swap(true, std::sync::atomic::Ordering::SeqCst) {
        eprintln!("    Stopping at once: a second signal skips the rest of the teardown");
    }
}

/// Whether a second signal asked to skip the rest of the teardown. See [`hurry`].
pub fn hurried() -> bool {
    HURRY.load(std::sync::atomic::Ordering::SeqCst)
}

/// What a cleanup removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanupSummary {
    /// Containers removed.
    pub containers: Vec<String>,
    /// Process groups signalled.
    pub process_groups: Vec<i32>,
    /// Base worktrees removed.
    pub worktrees: Vec<PathBuf>,
    /// Temporary directories removed.
    pub temp_dirs: Vec<PathBuf>,
}

/// Removes everything registered, synchronously and bounded in time (a few seconds per kind).
/// Safe to call from a panic hook, a signal task or `Drop`, inside or outside a runtime.
///
/// In this order: what drives or reads the dependencies (the target's process groups and
/// containers, the data steps, a base build), then the `[teardown]` steps still to run (bounded
/// by [`super::data::TEARDOWN_ON_SIGNAL`] in all, and skipped by a second signal), then the
/// dependencies, then the worktrees and temporary directories.
pub fn cleanup_all_blocking() -> CleanupSummary {
    CLEANING.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut groups = take_first_to_stop();
    let (containers, run_ids) = {
        let mut r = registry();
        (std::mem::take(&mut r.containers), r.run_ids.clone())
    };
    for &pgid in &groups {
        kill_group_blocking(pgid, Duration::from_secs(2));
    }
    let mut removed = if containers.is_empty() && run_ids.is_empty() {
        Vec::new()
    } else {
        remove_containers_blocking(&containers, &run_ids, false, Duration::from_secs(15))
    };
    // The teardown while the dependencies it reaches still run: first the step the normal path
    // was running, to its end, then the steps not started.
    let deadline = Instant::now() + super::data::TEARDOWN_ON_SIGNAL;
    let running: Vec<i32> = std::mem::take(&mut registry().teardown_groups);
    for pgid in running {
        while group_has_live_members(pgid) && !hurried() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        kill_group_blocking(pgid, Duration::from_millis(500));
    }
    while let Some(step) = take_next_teardown() {
        // What started since the first sweep (a step or a target in the middle of its start)
        // does not run beside the teardown either.
        for pgid in take_first_to_stop() {
            kill_group_blocking(pgid, Duration::from_secs(2));
            groups.push(pgid);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if hurried() || left.is_zero() {
            eprintln!("    Teardown step `{}`: skipped", step.name);
            continue;
        }
        let outcome = super::data::run_blocking(&step, left);
        eprintln!("    Teardown step `{}`: {outcome}", step.name);
    }
    // Then the dependencies, and whatever else was registered meanwhile.
    // The run ids again: a dependency's create call may have begun since the first sweep.
    let (later, more_containers, temp_dirs, run_ids) = {
        let mut r = registry();
        r.dependency_groups.clear();
        r.teardown_groups.clear();
        let mut containers = std::mem::take(&mut r.containers);
        containers.append(&mut r.dependency_containers);
        (
            std::mem::take(&mut r.process_groups),
            containers,
            std::mem::take(&mut r.temp_dirs),
            r.run_ids.clone(),
        )
    };
    for &pgid in &later {
        kill_group_blocking(pgid, Duration::from_secs(2));
    }
    // The dependencies' containers, and a container whose creation was in flight during the
    // first sweep, by its run's label.
    if !more_containers.is_empty() || !run_ids.is_empty() {
        for id in
            remove_containers_blocking(&more_containers, &run_ids, true, Duration::from_secs(15))
        {
            if !removed.contains(&id) {
                removed.push(id);
            }
        }
    }
    groups.extend(later);
    // After the processes: a base build still running in the worktree is gone by now, and so is
    // a database writing into its data directory.
    let worktrees = remove_registered_worktrees();
    let temp_dirs = temp_dirs
        .into_iter()
        .filter(|p| std::fs::remove_dir_all(p).is_ok())
        .collect();
    CleanupSummary {
        containers: removed,
        process_groups: groups,
        worktrees,
        temp_dirs,
    }
}

/// SIGTERM to a process group (or its leader's own stop signal to the leader, see
/// [`register_leader_signal`]), up to `grace` for it to go, then SIGKILL. Does not reap.
pub fn kill_group_blocking(pgid: i32, grace: Duration) {
    if pgid <= 1 {
        return;
    }
    let pg = Pid::from_raw(pgid);
    let sent = match leader_signal(pgid) {
        Some(signal) => nix::sys::signal::kill(pg, signal),
        None => killpg(pg, Signal::SIGTERM),
    };
    if sent.is_err() {
        return;
    }
    // A group a fault paused (SIGSTOP) would hold the signal until the grace ends: continued, it
    // handles it now. Harmless for a running group.
    let _ = killpg(pg, Signal::SIGCONT);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if !group_has_live_members(pgid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = killpg(pg, Signal::SIGKILL);
}

/// Whether any process of group `pgid` is still running (zombies waiting to be reaped do not count).
pub fn group_has_live_members(pgid: i32) -> bool {
    if killpg(Pid::from_raw(pgid), None).is_err() {
        return false;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|text| parse_state_and_pgrp(&text))
        .any(|(state, pgrp)| pgrp == pgid && state != 'Z' && state != 'X')
}

/// The state (field 3) and process group (field 5) of a `/proc/<pid>/stat` line.
pub fn parse_state_and_pgrp(text: &str) -> Option<(char, i32)> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Force-removes these containers and every container labelled with one of these run ids (those
/// labelled as a dependency's only with `dependencies`), on a fresh thread with its own runtime
/// (so it works from a panic hook or `Drop`), waiting at most `timeout`. Returns the ids removed.
pub fn remove_containers_blocking(
    ids: &[String],
    run_ids: &[String],
    dependencies: bool,
    timeout: Duration,
) -> Vec<String> {
    let ids = ids.to_vec();
    let run_ids = run_ids.to_vec();
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("loadgate-cleanup".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let removed = rt.block_on(async {
                tokio::time::timeout(timeout, remove_containers(&ids, &run_ids, dependencies))
                    .await
                    .unwrap_or_default()
            });
            let _ = tx.send(removed);
        });
    if spawned.is_err() {
        return Vec::new();
    }
    rx.recv_timeout(timeout + Duration::from_secs(1))
        .unwrap_or_default()
}

/// Force-removes these containers and those labelled with these run ids (a dependency's among
/// them only with `dependencies`: the first sweep of a signal leaves them to the teardown).
/// Errors are swallowed: this is the last line of defence, and a container that is already gone
/// is the goal.
pub async fn remove_containers(
    ids: &[String],
    run_ids: &[String],
    dependencies: bool,
) -> Vec<String> {
    let Ok(docker) = super::docker::connect(Duration::from_secs(5)).await else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    // Twice by label: a create call in flight when the first list was taken has answered by the
    // second (the engine creates in tens of milliseconds).
    for sweep in 0..2 {
        if sweep == 1 {
            if run_ids.is_empty() {
                break;
            }
            tokio::time::sleep(SECOND_SWEEP_AFTER).await;
        }
        let mut all: Vec<String> = if sweep == 0 { ids.to_vec() } else { Vec::new() };
        for run in run_ids {
            let filters = HashMap::from([("label".to_owned(), vec![format!("{LABEL_RUN}={run}")])]);
            let opts = ListContainersOptionsBuilder::new()
                .all(true)
                .filters(&filters)
                .build();
            if let Ok(list) = docker.list_containers(Some(opts)).await {
                all.extend(
                    list.into_iter()
                        .filter(|c| {
                            dependencies
                                || !c
                                    .labels
                                    .as_ref()
                                    .is_some_and(|l| l.contains_key(LABEL_DEPENDENCY))
                        })
                        .filter_map(|c| c.id),
                );
            }
        }
        all.sort();
        all.dedup();
        for id in all {
            let opts = RemoveContainerOptionsBuilder::new()
                .force(true)
                .v(true)
                .build();
            if docker.remove_container(&id, Some(opts)).await.is_ok() && !removed.contains(&id) {
                removed.push(id.clone());
            }
            unregister_container(&id);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    #[test]
    fn parses_state_and_group() {
        let text = "123 (a (b) c) S 1 456 456 0 -1 0";
        assert_eq!(parse_state_and_pgrp(text), Some(('S', 456)));
        assert_eq!(parse_state_and_pgrp("garbage"), None);
    }

    #[test]
    fn registry_adds_once_and_forgets() {
        register_process_group(999_991);
        register_process_group(999_991);
        register_container("c-test-registry", "run-test-registry");
        let (c, r, g) = registered();
        assert_eq!(g.iter().filter(|&&p| p == 999_991).count(), 1);
        assert!(
            c.contains(&"c-test-registry".to_owned())
                && r.contains(&"run-test-registry".to_owned())
        );
        unregister_process_group(999_991);
        unregister_container("c-test-registry");
        let (c, _, g) = registered();
        assert!(!g.contains(&999_991) && !c.contains(&"c-test-registry".to_owned()));
    }

    /// A run id is known before any container of it exists: what a signal during the engine's
    /// create call sweeps by label.
    #[test]
    fn a_run_id_is_registered_before_its_container() {
        register_run_id("run-test-before-create");
        let (c, r, _) = registered();
        assert!(r.contains(&"run-test-before-create".to_owned()));
        assert!(!c.iter().any(|id| id.contains("before-create")));
        // Registering the container later adds it once, the run id still once.
        register_container("c-test-before-create", "run-test-before-create");
        let (_, r, _) = registered();
        assert_eq!(
            r.iter()
                .filter(|id| *id == "run-test-before-create")
                .count(),
            1
        );
        unregister_container("c-test-before-create");
    }

    /// A signal stops the target's groups (and data steps', builds') first; the dependencies'
    /// and a running teardown step's wait for the teardown.
    #[test]
    fn a_signal_stops_all_but_the_dependencies_and_the_teardown_first() {
        let (first, later) = first_to_stop(vec![10, 20, 30, 40], &[20], &[40]);
        assert_eq!(first, [10, 30]);
        assert_eq!(later, [20, 40]);
        assert_eq!(first_to_stop(vec![], &[1], &[2]), (vec![], vec![]));
    }

    #[test]
    fn teardown_steps_are_taken_one_at_a_time_in_order() {
        // The registry is shared by the tests of this process: only this test registers steps.
        let step = |name: &str| super::super::data::PreparedStep {
            name: name.to_owned(),
            section: "teardown",
            program: PathBuf::from("true"),
            args: Vec::new(),
            env: Vec::new(),
            dir: PathBuf::from("."),
            timeout: Duration::from_secs(1),
            log_dir: PathBuf::from("."),
        };
        register_teardown(vec![step("a"), step("b")]);
        assert_eq!(take_next_teardown().map(|s| s.name), Some("a".to_owned()));
        assert_eq!(take_next_teardown().map(|s| s.name), Some("b".to_owned()));
        assert_eq!(take_next_teardown(), None);
    }

    #[test]
    fn kills_a_process_group_that_ignores_nothing() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("spawn sleep");
        let pgid = child.id() as i32;
        assert!(group_has_live_members(pgid));
        let started = Instant::now();
        kill_group_blocking(pgid, Duration::from_secs(2));
        let status = child.wait().expect("reap");
        assert!(!status.success());
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "SIGTERM should have been enough"
        );
        assert!(!group_has_live_members(pgid));
    }

    #[test]
    fn kills_a_process_group_that_ignores_sigterm() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; sleep 30 & wait"])
            .process_group(0)
            .spawn()
            .expect("spawn sh");
        let pgid = child.id() as i32;
        std::thread::sleep(Duration::from_millis(100));
        kill_group_blocking(pgid, Duration::from_millis(300));
        let status = child.wait().expect("reap");
        assert!(!status.success());
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !group_has_live_members(pgid),
            "the background sleep is killed too"
        );
    }
}
