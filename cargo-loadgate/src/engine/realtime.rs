//! The generator thread under `SCHED_FIFO`, for pacing-lag figures that mean something on a
//! shared machine.
//!
//! Under the normal scheduler a thread that wakes for a timer waits until a compiler sharing its
//! core finishes its slice: measured on the shared 2-core VM of bench/README.md, a bare sleeper
//! was late by 1.6–5.5 ms p99, and under `SCHED_FIFO` by 0.09–0.52 ms. A real-time thread that
//! never blocks would own its core, so entering is guarded twice: the kernel's real-time
//! throttling must be on (`/proc/sys/kernel/sched_rt_runtime_us` below its period: the other
//! threads keep that share of every period, 5% by default), and `RLIMIT_RTTIME` makes the kernel
//! stop a thread that runs [`RT_CPU_LIMIT`] without blocking (the engine blocks in `epoll_wait`
//! between wake-ups, so only a bug gets there).

use std::time::Duration;

/// The `SCHED_FIFO` priority of the generator: above every normal thread, below the kernel's
/// own real-time threads (which use 50 and 99).
pub const RT_PRIORITY: i32 = 10;

/// The CPU time the real-time generator may use without blocking before the kernel sends
/// `SIGXCPU` (soft limit); at twice this it sends `SIGKILL` (hard limit).
pub const RT_CPU_LIMIT: Duration = Duration::from_millis(500);

/// Why the generator could not run under `SCHED_FIFO`.
#[derive(Debug, thiserror::Error)]
pub enum RealtimeError {
    /// The kernel's real-time throttling is off, so a real-time thread could starve its core.
    #[error(
        "real-time throttling is off (kernel.sched_rt_runtime_us = -1 or equal to the period), so a real-time generator could starve its core"
    )]
    Unthrottled,
    /// The kernel refused (it needs root, `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` of at least
    /// [`RT_PRIORITY`]).
    #[error(
        "the kernel refused SCHED_FIFO (needs root, CAP_SYS_NICE or RLIMIT_RTPRIO >= {RT_PRIORITY})"
    )]
    Refused(#[source] std::io::Error),
    /// The CPU-time guard could not be set, so the thread was not made real-time.
    #[error("cannot set RLIMIT_RTTIME, the guard of a real-time thread")]
    Guard(#[source] std::io::Error),
}

/// Puts the calling thread under `SCHED_FIFO` at [`RT_PRIORITY`], after setting the process's
/// `RLIMIT_RTTIME` to [`RT_CPU_LIMIT`] and checking that the kernel throttles real-time threads.
/// On error the thread's scheduling is unchanged.
pub fn enter_realtime() -> Result<(), RealtimeError> {
    if !rt_throttled(
        std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").ok(),
        std::fs::read_to_string("/proc/sys/kernel/sched_rt_period_us").ok(),
    ) {
        return Err(RealtimeError::Unthrottled);
    }
    let soft = libc::rlim_t::try_from(RT_CPU_LIMIT.as_micros()).unwrap_or(libc::RLIM_INFINITY);
    let limit = libc::rlimit {
        rlim_cur: soft,
        rlim_max: soft.saturating_mul(2),
    };
    // SAFETY: plain syscall with a valid, initialised rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_RTTIME, &limit) } != 0 {
        return Err(RealtimeError::Guard(std::io::Error::last_os_error()));
    }
    let param = libc::sched_param {
        sched_priority: RT_PRIORITY,
    };
    // SAFETY: plain syscall; pid 0 is the calling thread and `param` is valid.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(RealtimeError::Refused(std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Whether the calling thread runs under `SCHED_FIFO`.
pub fn is_realtime() -> bool {
    // SAFETY: plain syscall; pid 0 is the calling thread.
    unsafe { libc::sched_getscheduler(0) == libc::SCHED_FIFO }
}

/// Whether the kernel throttles real-time threads, from the two sysctl files' contents: a
/// runtime that is not -1 and is below the period. Unknown (unreadable) counts as not throttled.
fn rt_throttled(runtime_us: Option<String>, period_us: Option<String>) -> bool {
    let parse = |s: Option<String>| s.and_then(|s| s.trim().parse::<i64>().ok());
    match (parse(runtime_us), parse(period_us)) {
        (Some(runtime), Some(period)) => runtime >= 0 && runtime < period,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test_case(Some("950000\n"), Some("1000000\n"), true ; "default five percent")]
    #[test_case(Some("-1\n"), Some("1000000\n"), false ; "throttling off")]
    #[test_case(Some("1000000"), Some("1000000"), false ; "runtime is the whole period")]
    #[test_case(None, Some("1000000"), false ; "unreadable")]
    fn real_time_needs_the_kernels_throttling(
        runtime: Option<&str>,
        period: Option<&str>,
        expected: bool,
    ) {
        assert_eq!(
            rt_throttled(runtime.map(str::to_owned), period.map(str::to_owned)),
            expected
        );
    }

    #[test]
    fn entering_real_time_either_works_or_leaves_the_thread_as_it_was() {
        // In a thread of its own, so the test harness's threads keep their policy.
        let (result, realtime) = std::thread::spawn(|| {
            let result = enter_realtime().map_err(|e| e.to_string());
            (result, is_realtime())
        })
        .join()
        .expect("thread");
        assert_eq!(result.is_ok(), realtime, "{result:?}");
    }
}
