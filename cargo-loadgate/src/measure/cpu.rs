//! The generator's own CPU time, from `getrusage(2)`: user plus system time.

use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::time::TimeVal;
use std::time::Duration;

/// Whose CPU time to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuScope {
    /// The calling thread only (the engine runs on one thread, so this is the generator).
    Thread,
    /// The whole process, every thread.
    Process,
}

/// User plus system CPU time used so far by `scope`, or `None` when the kernel does not say.
pub fn cpu_time(scope: CpuScope) -> Option<Duration> {
    let who = match scope {
        CpuScope::Thread => UsageWho::RUSAGE_THREAD,
        CpuScope::Process => UsageWho::RUSAGE_SELF,
    };
    let usage = getrusage(who).ok()?;
    Some(timeval(usage.user_time()) + timeval(usage.system_time()))
}

fn timeval(tv: TimeVal) -> Duration {
    let secs = u64::try_from(tv.tv_sec()).unwrap_or(0);
    let micros = u32::try_from(tv.tv_usec()).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(u64::from(micros))
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test_case(CpuScope::Thread ; "thread")]
    #[test_case(CpuScope::Process ; "process")]
    fn cpu_time_grows_with_work(scope: CpuScope) {
        let before = cpu_time(scope).expect("getrusage works on Linux");
        // A fixed amount of work, not a fixed wall time: on a loaded machine this thread may be
        // off the CPU for most of any wall-clock interval, but the work takes the CPU it takes
        // (10^7 dependent multiply-adds: about 0.1 s in a test build on this project's 2-core VM;
        // 5 ms is asserted).
        let mut x = 0u64;
        for _ in 0..10_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let after = cpu_time(scope).expect("getrusage works on Linux");
        assert!(
            after >= before + Duration::from_millis(5),
            "{before:?} -> {after:?}"
        );
    }
}
