//! The safety envelope of a phase: when to stop sending.
//!
//! A phase stops when the error rate or p99 is past `[abort]`'s limit in two consecutive windows
//! (one bad window is a hiccup, two are a trend), or when it has run longer than
//! `abort.max-duration`. What was measured up to then is kept and reported; the phase is marked
//! aborted with the reason.

use super::judge::format_latency;
use crate::config::AbortConfig;
use crate::engine::WindowDecision;
use crate::measure::Window;
use std::cell::Cell;
use std::time::Duration;

/// How many bad windows in a row stop a phase.
pub const CONSECUTIVE_BAD_WINDOWS: u32 = 2;

/// How the reason of a phase stopped by the abort limits ends (not by `abort.max-duration`): the
/// comparison reads it as the service failing at that load.
pub const ABORT_LIMITS: &str = "consecutive windows (abort limits)";

/// Watches the closed windows of one phase and says when to stop. It counts bad windows in a
/// [`Cell`], so [`AbortWatch::observe`] takes `&self` and fits the engine's `Fn` hook; it is `Send`,
/// so it can be moved to the generator's thread, but not `Sync`.
#[derive(Debug)]
pub struct AbortWatch {
    error_rate: f64,
    p99: Duration,
    max_duration: Duration,
    warmup: Duration,
    bad_in_a_row: Cell<u32>,
}

impl AbortWatch {
    /// A watch for a phase whose measured part starts after `warmup` (window times count from
    /// there, the phase's duration from its start).
    pub fn new(abort: &AbortConfig, warmup: Duration) -> Self {
        Self {
            error_rate: abort.error_rate_limit,
            p99: abort.p99_limit,
            max_duration: abort.max_duration,
            warmup,
            bad_in_a_row: Cell::new(0),
        }
    }

    /// Judges one closed window. The error rate of a window is its failures (errors of the
    /// requests that completed in it, and arrivals dropped at the in-flight cap in it) over both; a
    /// window in which nothing completed or was dropped has no error rate, and one in which nothing
    /// completed has no p99.
    pub fn observe(&self, window: &Window) -> WindowDecision {
        let elapsed = self.warmup + window.start + window.length;
        if elapsed >= self.max_duration {
            return WindowDecision::Stop(format!(
                "the phase ran {:.0} s, the limit of abort.max-duration",
                elapsed.as_secs_f64()
            ));
        }
        let mut bad = Vec::new();
        if let Some(rate) = window.failure_rate()
            && rate > self.error_rate
        {
            bad.push(format!(
                "error rate {:.1}% > {:.1}%",
                rate * 100.0,
                self.error_rate * 100.0
            ));
        }
        if window.completed > 0 && window.p99 > self.p99 {
            bad.push(format!(
                "p99 {} > {}",
                format_latency(window.p99),
                format_latency(self.p99)
            ));
        }
        if bad.is_empty() {
            self.bad_in_a_row.set(0);
            return WindowDecision::Continue;
        }
        let n = self.bad_in_a_row.get() + 1;
        self.bad_in_a_row.set(n);
        if n >= CONSECUTIVE_BAD_WINDOWS {
            WindowDecision::Stop(format!("{} in {n} {ABORT_LIMITS}", bad.join(" and ")))
        } else {
            WindowDecision::Continue
        }
    }
}

/// The abort conditions of a phase as the engine's window hook: see [`AbortWatch`].
pub fn abort_watch(
    abort: &AbortConfig,
    warmup: Duration,
) -> impl Fn(&Window) -> WindowDecision + Send + 'static {
    let watch = AbortWatch::new(abort, warmup);
    move |window| watch.observe(window)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn abort() -> AbortConfig {
        AbortConfig {
            error_rate_limit: 0.5,
            p99_limit: Duration::from_secs(5),
            max_duration: Duration::from_secs(60),
        }
    }

    fn window(i: u32, completed: u64, errors: u64, p99_ms: u64) -> Window {
        Window {
            start: Duration::from_secs(u64::from(i)),
            length: Duration::from_secs(1),
            sent: completed,
            completed,
            errors,
            answered: Some(completed),
            p50: MS,
            p99: Duration::from_millis(p99_ms),
            max: Duration::from_millis(p99_ms),
            dropped: 0,
            lag_p99: Duration::ZERO,
            generator_busy: None,
        }
    }

    fn decisions(windows: &[Window]) -> Vec<WindowDecision> {
        let watch = abort_watch(&abort(), Duration::from_secs(1));
        windows.iter().map(&watch).collect()
    }

    #[test]
    fn two_consecutive_slow_windows_stop_the_phase() {
        let d = decisions(&[
            window(0, 100, 0, 20),
            window(1, 100, 0, 6_000),
            window(2, 100, 0, 7_000),
        ]);
        assert_eq!(d[..2], [WindowDecision::Continue, WindowDecision::Continue]);
        insta::assert_debug_snapshot!(d[2], @r#"
        Stop(
            "p99 7.00 s > 5.00 s in 2 consecutive windows (abort limits)",
        )
        "#);
    }

    #[test]
    fn one_bad_window_between_good_ones_does_not_stop() {
        let d = decisions(&[
            window(0, 100, 60, 20),
            window(1, 100, 0, 20),
            window(2, 100, 70, 20),
            window(3, 100, 0, 20),
            window(4, 100, 0, 9_000),
        ]);
        assert!(d.iter().all(|d| *d == WindowDecision::Continue), "{d:?}");
    }

    #[test]
    fn errors_then_slowness_are_two_bad_windows() {
        let d = decisions(&[window(0, 100, 60, 20), window(1, 100, 0, 9_000)]);
        assert!(
            matches!(&d[1], WindowDecision::Stop(r) if r.starts_with("p99 9.00 s > 5.00 s")),
            "{d:?}"
        );
    }

    #[test]
    fn error_rate_counts_completed_requests() {
        let d = decisions(&[window(0, 10, 6, 20), window(1, 10, 9, 20)]);
        assert_eq!(
            d[1],
            WindowDecision::Stop(
                "error rate 90.0% > 50.0% in 2 consecutive windows (abort limits)".into()
            )
        );
    }

    #[test]
    fn empty_windows_are_not_bad() {
        let d = decisions(&[window(0, 0, 0, 0), window(1, 0, 0, 0)]);
        assert_eq!(d, vec![WindowDecision::Continue; 2]);
    }

    #[test]
    fn a_phase_past_the_max_duration_stops() {
        // Warm-up 1 s + windows 0..=58 end at 60 s.
        let d = decisions(&[window(57, 100, 0, 20), window(58, 100, 0, 20)]);
        assert_eq!(d[0], WindowDecision::Continue);
        assert_eq!(
            d[1],
            WindowDecision::Stop("the phase ran 60 s, the limit of abort.max-duration".into())
        );
    }
}
