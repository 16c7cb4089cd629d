//! The time to stable SLO after a declared event (seed 002) and the admission behaviour of a
//! spike, both read from a phase's 1 s windows. Pure: windows in, a record out; tests build
//! windows by hand.
//!
//! A window *holds* when every required indicator holds in it (see [`window_check`]): the SLO's
//! latency limits, its error rate, and goodput. Recovery begins at the event and is reached at the
//! first window of the first run of `windows` consecutive windows that hold; one good window
//! between bad ones is not recovery, and a phase that ends before such a run is "not recovered",
//! never a number.

use crate::config::SloConfig;
use crate::measure::Window;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How many standard deviations of Poisson counting noise a window's goodput may fall short by
/// before it counts as lost: with one window a second at a few dozen requests, an exact count
/// would call a window bad for a request that completed a millisecond into the next one.
pub const GOODPUT_NOISE_SDS: f64 = 2.0;

/// Why one window did not hold; empty when it did.
pub fn window_check(w: &Window, slo: &SloConfig) -> Vec<String> {
    let mut reasons = Vec::new();
    if w.completed == 0 {
        // No answer at all in a window in which requests came due (or none came due): there is
        // nothing to say the service holds.
        reasons.push("nothing completed".to_owned());
        return reasons;
    }
    for limit in &slo.latency {
        let (label, value) = window_quantile(w, limit.quantile);
        if value > limit.limit {
            reasons.push(format!(
                "{label} {} ms > {} ms",
                value.as_millis(),
                limit.limit.as_millis()
            ));
        }
    }
    let failures = w.failure_rate().unwrap_or(0.0);
    if failures > slo.error_rate {
        reasons.push(format!(
            "errors {:.1}% > {:.1}%",
            failures * 100.0,
            slo.error_rate * 100.0
        ));
    }
    let due = (w.sent + w.dropped) as f64;
    let good = w.completed.saturating_sub(w.errors) as f64;
    if good + GOODPUT_NOISE_SDS * due.sqrt() < (1.0 - slo.error_rate) * due {
        reasons.push(format!("goodput {good:.0} of {due:.0} due"));
    }
    reasons
}

/// The statistic a window records that judges a latency limit at quantile `q`: the smallest of
/// p50, p99 and max at or above `q` (a window keeps no histogram), so a limit is never judged on a
/// lower quantile than its own.
fn window_quantile(w: &Window, q: f64) -> (&'static str, Duration) {
    if q <= 0.5 {
        ("p50", w.p50)
    } else if q <= 0.99 {
        ("p99", w.p99)
    } else {
        ("max", w.max)
    }
}

/// The time to stable SLO after an event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Recovery {
    /// Every indicator held for the required consecutive windows.
    Recovered {
        /// From the event to the start of the first of those windows: when the service was
        /// stable again.
        #[serde(rename = "after_ms", with = "crate::measure::millis")]
        after: Duration,
        /// From the event to the end of the last of them: when the recovery was confirmed.
        #[serde(rename = "confirmed_after_ms", with = "crate::measure::millis")]
        confirmed_after: Duration,
    },
    /// The phase ended first.
    NotRecovered {
        /// How long the phase went on after the event.
        #[serde(rename = "observed_ms", with = "crate::measure::millis")]
        observed: Duration,
        /// The longest run of windows that held after the event.
        longest_run: usize,
    },
}

impl Recovery {
    /// The time to stable SLO, when it was reached.
    pub fn after(&self) -> Option<Duration> {
        match self {
            Recovery::Recovered { after, .. } => Some(*after),
            Recovery::NotRecovered { .. } => None,
        }
    }

    /// "stable after 3.0 s (confirmed at 8.0 s)" or "not stable within 20.0 s (longest run of
    /// good windows: 2)".
    pub fn describe(&self, required: usize) -> String {
        match self {
            Recovery::Recovered {
                after,
                confirmed_after,
            } => format!(
                "stable after {:.1} s ({required} good windows confirmed at {:.1} s)",
                after.as_secs_f64(),
                confirmed_after.as_secs_f64()
            ),
            Recovery::NotRecovered {
                observed,
                longest_run,
            } => format!(
                "not stable within {:.1} s (needs {required} good windows in a row, longest run {longest_run})",
                observed.as_secs_f64()
            ),
        }
    }
}

/// The time to stable SLO after `event` (an offset from the start of the measured part, as the
/// windows' starts are): windows that start before the event are not read; the first run of
/// `required` consecutive windows that hold ([`window_check`]) ends it. `required` below 1 counts
/// as 1. The phase's last window counts only when it is a full window.
pub fn time_to_stable(
    windows: &[Window],
    event: Duration,
    required: usize,
    slo: &SloConfig,
) -> Recovery {
    let required = required.max(1);
    let mut run_start: Option<Duration> = None;
    let (mut run, mut longest) = (0usize, 0usize);
    let mut end = event;
    let full = windows.first().map_or(Duration::ZERO, |w| w.length);
    for w in windows
        .iter()
        .filter(|w| w.start >= event && w.length >= full)
    {
        end = w.start + w.length;
        if window_check(w, slo).is_empty() {
            run_start.get_or_insert(w.start);
            run += 1;
            longest = longest.max(run);
            if run == required {
                let start = run_start.unwrap_or(w.start);
                return Recovery::Recovered {
                    after: start - event,
                    confirmed_after: end - event,
                };
            }
        } else {
            run = 0;
            run_start = None;
        }
    }
    Recovery::NotRecovered {
        observed: end.saturating_sub(event),
        longest_run: longest,
    }
}

/// How a service met a spike, named from what the spike's windows measured (docs/phases.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Admission {
    /// Every indicator held through the spike: it was within capacity.
    Absorbed,
    /// Failed answers beyond the SLO's error rate came back fast (the median stayed within the
    /// loosest latency limit) and goodput did not fall: load shedding (429/503).
    RejectedCheaply,
    /// Latency grew past a limit with errors within the SLO's rate: the service queued.
    Queued,
    /// Transport failures (timeouts, refused or reset connections) beyond the SLO's error rate, or
    /// goodput below the level before the spike.
    Collapsed,
}

impl Admission {
    /// How the report names it.
    pub fn label(self) -> &'static str {
        match self {
            Admission::Absorbed => "absorbed",
            Admission::RejectedCheaply => "rejected cheaply",
            Admission::Queued => "queued",
            Admission::Collapsed => "collapsed",
        }
    }
}

/// The figures the admission rule read, kept with its name so a reader sees why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdmissionFigures {
    /// What the rule named.
    pub admission: Admission,
    /// Correct answers per second before the spike.
    pub goodput_before_per_sec: f64,
    /// Correct answers per second during the spike.
    pub goodput_during_per_sec: f64,
    /// Failed HTTP answers (wrong answers, 4xx, 5xx) per completed request during the spike.
    pub rejected_share: f64,
    /// Transport failures (timeouts, connection errors) per completed request during the spike.
    pub transport_failure_share: f64,
    /// The median of the spike windows' medians, from the intended send time.
    #[serde(rename = "p50_ms", with = "crate::measure::millis")]
    pub p50: Duration,
    /// The highest p99 of a spike window, from the intended send time.
    #[serde(rename = "p99_ms", with = "crate::measure::millis")]
    pub p99: Duration,
}

/// Names the admission behaviour from the windows before the spike (`before`) and during it
/// (`during`), in this order of precedence: collapsed, rejected cheaply, queued, absorbed.
///
/// - **collapsed**: transport failures above `slo.error-rate` of completions, or correct answers
///   per second during the spike below the level before it by more than
///   [`GOODPUT_NOISE_SDS`] standard deviations of counting noise;
/// - **rejected cheaply**: failed HTTP answers above `slo.error-rate`, while the median latency
///   stayed within the loosest latency limit (rejections cost little);
/// - **queued**: a latency limit broken in a spike window, errors within `slo.error-rate`;
/// - **absorbed**: otherwise.
pub fn classify_admission(
    before: &[Window],
    during: &[Window],
    slo: &SloConfig,
) -> AdmissionFigures {
    let rate = |ws: &[Window]| -> (f64, f64) {
        let secs: f64 = ws.iter().map(|w| w.length.as_secs_f64()).sum();
        let good: f64 = ws
            .iter()
            .map(|w| w.completed.saturating_sub(w.errors) as f64)
            .sum();
        (good, secs)
    };
    let (good_before, secs_before) = rate(before);
    let (good_during, secs_during) = rate(during);
    let per_sec = |good: f64, secs: f64| if secs > 0.0 { good / secs } else { 0.0 };
    let before_per_sec = per_sec(good_before, secs_before);
    let during_per_sec = per_sec(good_during, secs_during);
    let completed: u64 = during.iter().map(|w| w.completed).sum();
    let errors: u64 = during.iter().map(|w| w.errors).sum();
    let answered: u64 = during
        .iter()
        .map(|w| w.answered.unwrap_or(w.completed))
        .sum();
    let transport = completed.saturating_sub(answered);
    let rejected = errors.saturating_sub(transport);
    let share = |n: u64| {
        if completed > 0 {
            n as f64 / completed as f64
        } else {
            0.0
        }
    };
    let mut medians: Vec<Duration> = during
        .iter()
        .filter(|w| w.completed > 0)
        .map(|w| w.p50)
        .collect();
    medians.sort();
    let p50 = medians.get(medians.len() / 2).copied().unwrap_or_default();
    let p99 = during.iter().map(|w| w.p99).max().unwrap_or_default();
    let loosest = slo
        .latency
        .iter()
        .map(|l| l.limit)
        .max()
        .unwrap_or(Duration::MAX);
    // The goodput the spike's seconds would have had at the level before it, less counting noise.
    let expected = before_per_sec * secs_during;
    let goodput_fell =
        secs_during > 0.0 && good_during + GOODPUT_NOISE_SDS * expected.sqrt() < expected;
    let latency_broke = during.iter().any(|w| {
        w.completed > 0
            && slo
                .latency
                .iter()
                .any(|l| window_quantile(w, l.quantile).1 > l.limit)
    });
    let admission = if completed == 0 && during.iter().any(|w| w.sent > 0)
        || share(transport) > slo.error_rate
        || goodput_fell
    {
        Admission::Collapsed
    } else if share(rejected) > slo.error_rate && p50 <= loosest {
        Admission::RejectedCheaply
    } else if latency_broke {
        Admission::Queued
    } else {
        Admission::Absorbed
    };
    AdmissionFigures {
        admission,
        goodput_before_per_sec: before_per_sec,
        goodput_during_per_sec: during_per_sec,
        rejected_share: share(rejected),
        transport_failure_share: share(transport),
        p50,
        p99,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::LatencyLimit;

    pub(crate) fn slo() -> SloConfig {
        SloConfig {
            latency: vec![LatencyLimit {
                quantile: 0.99,
                limit: Duration::from_millis(200),
            }],
            error_rate: 0.01,
            min_requests: 100,
            headroom: None,
            recovery: None,
        }
    }

    /// A window of `sent` requests, all completed, `errors` of them failed (`transport` of those
    /// without an answer), with the given p50 and p99 in ms.
    pub(crate) fn window(
        second: u64,
        sent: u64,
        errors: u64,
        transport: u64,
        p50: u64,
        p99: u64,
    ) -> Window {
        Window {
            start: Duration::from_secs(second),
            length: Duration::from_secs(1),
            sent,
            completed: sent,
            errors,
            answered: Some(sent - transport),
            p50: Duration::from_millis(p50),
            p99: Duration::from_millis(p99),
            max: Duration::from_millis(p99 + 10),
            dropped: 0,
            lag_p99: Duration::ZERO,
            generator_busy: None,
        }
    }

    fn good(second: u64) -> Window {
        window(second, 100, 0, 0, 5, 40)
    }

    fn slow(second: u64) -> Window {
        window(second, 100, 0, 0, 150, 900)
    }

    /// Good from `from` on, slow before; 20 windows.
    fn series(pattern: &str) -> Vec<Window> {
        pattern
            .chars()
            .enumerate()
            .map(|(i, c)| {
                if c == 'g' {
                    good(i as u64)
                } else {
                    slow(i as u64)
                }
            })
            .collect()
    }

    #[test]
    fn recovery_needs_n_consecutive_good_windows_and_starts_at_the_first_of_them() {
        // Event at 2 s; windows 2..6 bad, then good from 7 on.
        let windows = series("ggbbbbbgggggggg");
        let r = time_to_stable(&windows, Duration::from_secs(2), 5, &slo());
        assert_eq!(
            r,
            Recovery::Recovered {
                after: Duration::from_secs(5),
                confirmed_after: Duration::from_secs(10),
            }
        );
    }

    #[test]
    fn a_single_good_window_between_bad_ones_is_not_recovery() {
        // One good window at 4 s, then bad again; the stable run starts at 9 s.
        let windows = series("ggbbgbbbbgggggg");
        let r = time_to_stable(&windows, Duration::from_secs(2), 3, &slo());
        assert_eq!(r.after(), Some(Duration::from_secs(7)));
        // With one window required, the lone good window is enough: the rule is the count.
        let one = time_to_stable(&windows, Duration::from_secs(2), 1, &slo());
        assert_eq!(one.after(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn never_recovered_within_the_phase_is_not_a_number() {
        let windows = series("ggbbgbbgg");
        let r = time_to_stable(&windows, Duration::from_secs(2), 3, &slo());
        assert_eq!(
            r,
            Recovery::NotRecovered {
                observed: Duration::from_secs(7),
                longest_run: 2,
            }
        );
        assert_eq!(r.after(), None);
        assert!(
            r.describe(3).starts_with("not stable within 7.0 s"),
            "{}",
            r.describe(3)
        );
    }

    #[test]
    fn windows_before_the_event_do_not_count() {
        // Good before the event at 5 s is not recovery from it.
        let windows = series("gggggbgggg");
        let r = time_to_stable(&windows, Duration::from_secs(5), 3, &slo());
        assert_eq!(r.after(), Some(Duration::from_secs(1)));
    }

    #[test]
    fn each_indicator_can_break_a_window() {
        let slo = slo();
        assert!(window_check(&good(0), &slo).is_empty());
        assert_eq!(window_check(&slow(0), &slo), vec!["p99 900 ms > 200 ms"]);
        assert_eq!(
            window_check(&window(0, 100, 5, 0, 5, 40), &slo),
            vec!["errors 5.0% > 1.0%"]
        );
        // Requests due but nothing completed: no evidence of holding.
        let mut stuck = good(0);
        stuck.completed = 0;
        assert_eq!(window_check(&stuck, &slo), vec!["nothing completed"]);
        // Goodput alone: answers missing (still in flight) beyond counting noise.
        let mut behind = good(0);
        behind.completed = 70;
        behind.answered = Some(70);
        assert_eq!(window_check(&behind, &slo), vec!["goodput 70 of 100 due"]);
        // Within counting noise (2 sd of 100 = 20): holds.
        behind.completed = 90;
        assert!(window_check(&behind, &slo).is_empty());
    }

    fn before() -> Vec<Window> {
        (0..5).map(good).collect()
    }

    #[test]
    fn admission_is_named_from_the_spike_windows() {
        let slo = slo();
        let name = |during: Vec<Window>| classify_admission(&before(), &during, &slo).admission;
        // Within capacity.
        assert_eq!(
            name((5..8).map(|s| window(s, 300, 0, 0, 5, 60)).collect()),
            Admission::Absorbed
        );
        // Two thirds answered 503 at once, the rest served: cheap rejection.
        assert_eq!(
            name((5..8).map(|s| window(s, 300, 200, 0, 3, 30)).collect()),
            Admission::RejectedCheaply
        );
        // Latency grows, no errors: a queue.
        assert_eq!(
            name((5..8).map(|s| window(s, 300, 0, 0, 120, 1500)).collect()),
            Admission::Queued
        );
        // Timeouts: collapse.
        assert_eq!(
            name((5..8).map(|s| window(s, 300, 60, 60, 900, 5000)).collect()),
            Admission::Collapsed
        );
        // Rejections that are slow (median past the limit) are not cheap: the service wasted
        // work on them, and its goodput fell below the level before the spike.
        let mut slow_rejections: Vec<Window> =
            (5..8).map(|s| window(s, 300, 260, 0, 400, 2000)).collect();
        assert_eq!(name(slow_rejections.clone()), Admission::Collapsed);
        // Slow rejections with goodput kept: not cheap, so queued.
        for w in &mut slow_rejections {
            w.errors = 150;
        }
        assert_eq!(name(slow_rejections), Admission::Queued);
        // Nothing completes during the spike: collapse.
        let mut dead: Vec<Window> = (5..8).map(|s| window(s, 300, 0, 0, 0, 0)).collect();
        for w in &mut dead {
            w.completed = 0;
            w.answered = Some(0);
        }
        assert_eq!(name(dead), Admission::Collapsed);
    }

    #[test]
    fn admission_figures_say_why() {
        let f = classify_admission(
            &before(),
            &(5..8)
                .map(|s| window(s, 300, 200, 0, 3, 30))
                .collect::<Vec<_>>(),
            &slo(),
        );
        assert_eq!(f.goodput_before_per_sec, 100.0);
        assert_eq!(f.goodput_during_per_sec, 100.0);
        assert!((f.rejected_share - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(f.transport_failure_share, 0.0);
        assert_eq!(
            (f.p50, f.p99),
            (Duration::from_millis(3), Duration::from_millis(30))
        );
    }
}
