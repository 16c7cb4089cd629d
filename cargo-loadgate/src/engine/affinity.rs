//! Where the generator runs: one core of its own when the machine has two or more, so that the
//! target (given the other cores) and the generator do not steal time from each other; with
//! `generator.threads = N`, one core per loop ([`place`]).

use crate::config::GeneratorThreads;
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

/// Where a generator of several loops and its target run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The core each loop is pinned to, in loop order (`None`: not pinned).
    pub loops: Vec<Option<usize>>,
    /// The cores the target is pinned to; `None` when it is not pinned (it may run anywhere).
    pub target: Option<Vec<usize>>,
    /// Whether the generator runs on cores the target may run on too: the target was given every
    /// core, or the machine has one.
    pub shared: bool,
}

/// More loops were asked for than this process has cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{threads} generator threads need a core each, and this process may run on {available} core(s)"
)]
pub struct TooManyThreads {
    /// The loops asked for.
    pub threads: usize,
    /// The cores this process may run on.
    pub available: usize,
}

/// Places `threads` loops on the `allowed` cores (ascending): loop i on the i-th core, the target
/// on the cores after them. With one loop this is [`generator_core`] and [`target_cores`]
/// exactly. Loops on every core leave the target none of its own: it is then not pinned and
/// shares theirs. On a one-core machine nothing is pinned (pinning would only fight the target);
/// when the kernel does not say which cores are allowed, nothing is pinned either.
pub fn place(allowed: &[usize], threads: usize) -> Result<Placement, TooManyThreads> {
    let threads = threads.max(1);
    let unpinned = |loops: usize| Placement {
        loops: vec![None; loops],
        target: None,
        shared: true,
    };
    match allowed.len() {
        0 => Ok(unpinned(threads)),
        n if threads > n => Err(TooManyThreads {
            threads,
            available: n,
        }),
        1 => Ok(unpinned(1)),
        n if threads == n => Ok(Placement {
            loops: allowed.iter().copied().map(Some).collect(),
            target: None,
            shared: true,
        }),
        _ => Ok(Placement {
            loops: allowed[..threads].iter().copied().map(Some).collect(),
            target: Some(allowed[threads..].to_vec()),
            shared: false,
        }),
    }
}

/// The loops `generator.threads` asks for on this machine: `"auto"` is one loop per core the
/// target is not given, and the target is given every allowed core but the generator's first
/// ([`target_cores`]), so it is one.
pub fn resolve_threads(threads: GeneratorThreads) -> usize {
    match threads {
        GeneratorThreads::Auto => allowed_cores()
            .len()
            .saturating_sub(target_cores().len())
            .max(1),
        GeneratorThreads::Count(n) => n.max(1),
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

    #[test]
    fn loops_take_the_first_cores_and_the_target_the_rest() {
        let pinned = |cores: &[usize]| cores.iter().copied().map(Some).collect::<Vec<_>>();
        // One loop: what generator_core and target_cores give.
        assert_eq!(
            place(&[0, 1], 1),
            Ok(Placement {
                loops: pinned(&[0]),
                target: Some(vec![1]),
                shared: false,
            })
        );
        assert_eq!(
            place(&[2, 3, 5, 7], 2),
            Ok(Placement {
                loops: pinned(&[2, 3]),
                target: Some(vec![5, 7]),
                shared: false,
            })
        );
        // Every core: the target is not pinned and shares them.
        assert_eq!(
            place(&[0, 1], 2),
            Ok(Placement {
                loops: pinned(&[0, 1]),
                target: None,
                shared: true,
            })
        );
        // One core: nothing pinned, shared.
        assert_eq!(
            place(&[4], 1),
            Ok(Placement {
                loops: vec![None],
                target: None,
                shared: true,
            })
        );
        assert_eq!(
            place(&[0, 1], 3),
            Err(TooManyThreads {
                threads: 3,
                available: 2
            })
        );
        assert_eq!(place(&[], 2).map(|p| p.loops.len()), Ok(2));
    }

    #[test]
    fn auto_is_one_loop_and_a_count_is_itself() {
        assert_eq!(resolve_threads(GeneratorThreads::Auto), 1);
        assert_eq!(resolve_threads(GeneratorThreads::Count(3)), 3);
        // The machine's own placement of one loop is today's: generator_core and target_cores.
        let one = place(&allowed_cores(), 1).expect("one loop fits");
        assert_eq!(one.loops, vec![generator_core()]);
        if generator_core().is_some() {
            assert_eq!(one.target, Some(target_cores()));
        }
    }
}
