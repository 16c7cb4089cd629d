//! Where the generator runs: one core of its own when the machine has two or more, so that the
//! target (given the other cores) and the generator do not steal time from each other.

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

/// The cores this process may run on, in ascending order (empty when the kernel does not say).
pub fn allowed_cores() -> Vec<usize> {
    let Ok(set) = sched_getaffinity(Pid::from_raw(0)) else {
        return Vec::new();
    };
    (0..CpuSet::count())
        .filter(|&core| set.is_set(core).unwrap_or(false))
        .collect()
}

/// The core the generator should be pinned to: the first allowed core when at least two are
/// allowed, `None` on a one-core machine (pinning would then only fight the target).
///
/// The target should get [`target_cores`].
pub fn generator_core() -> Option<usize> {
    let cores = allowed_cores();
    (cores.len() >= 2).then(|| cores[0])
}

/// The cores left for the target when the generator takes [`generator_core`]: every allowed core
/// but that one (all of them when the generator is not pinned).
pub fn target_cores() -> Vec<usize> {
    let cores = allowed_cores();
    match generator_core() {
        Some(g) => cores.into_iter().filter(|&c| c != g).collect(),
        None => cores,
    }
}

/// Pins the calling thread to `core`.
pub fn pin_current_thread(core: usize) -> nix::Result<()> {
    let mut set = CpuSet::new();
    set.set(core)?;
    sched_setaffinity(Pid::from_raw(0), &set)
}

/// The single core the calling thread is pinned to, if it is pinned to exactly one.
pub fn pinned_core() -> Option<usize> {
    let set = sched_getaffinity(Pid::from_raw(0)).ok()?;
    let mut cores = (0..CpuSet::count()).filter(|&core| set.is_set(core).unwrap_or(false));
    match (cores.next(), cores.next()) {
        (Some(core), None) => Some(core),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_a_thread_is_seen_and_the_target_gets_the_rest() {
        let cores = allowed_cores();
        assert!(!cores.is_empty());
        let target = target_cores();
        match generator_core() {
            Some(g) => {
                assert_eq!(target.len(), cores.len() - 1);
                assert!(!target.contains(&g));
            }
            None => assert_eq!(target, cores),
        }
        // In a thread of its own, so the test harness's threads stay unpinned.
        let core = cores[cores.len() - 1];
        let seen = std::thread::spawn(move || {
            pin_current_thread(core).expect("pin");
            pinned_core()
        })
        .join()
        .expect("thread");
        assert_eq!(seen, Some(core));
    }
}
