//! The stress phase (seed 003's "overload, then show no lasting harm"): the soak's load for
//! `stress.before`, an overload at `stress.to` × capacity for `stress.for`, then the soak's load
//! again for `stress.after`, as one phase (no gap in which a queue could drain unseen). On the same
//! boot, the stretch before the overload is compared with the last `stress.before` of the stretch
//! after it, so the service has `after − before` to recover first; and the time to stable SLO is
//! read from the overload's end.
//!
//! The comparison reads each stretch's requests from its windows' latency histograms (p50 and p99
//! of all of them, as ratios on the log scale) and the error rate, each with a moving-block
//! bootstrap standard error over the windows (they are autocorrelated). "Lasting harm" needs a
//! metric's interval to lie wholly beyond its `[gate]` threshold at α/3 (Bonferroni over p50, p99
//! and the error rate), or the abort limits to stop the phase after the overload; "recovered"
//! needs every interval, at α, to lie within. Pure: windows in, a record out.

use super::recovery::{Recovery, time_to_stable};
use super::soak::CapacitySource;
use super::spike::RecoveryCheck;
use crate::config::{GateConfig, SloConfig, StressConfig};
use crate::measure::{LatencyHistogram, Window, WindowHistograms};
use crate::stats::{
    DEFAULT_BOOTSTRAP_SEED, block_bootstrap_sd, derive_seed, median, normal_quantile,
};
use crate::targets::ResourceSample;
use crate::workload::{RateStep, RateSteps, RateStepsError};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The fewest windows a stretch needs before its metrics are compared.
pub const MIN_STRETCH_WINDOWS: usize = 3;

/// The bootstrap resamples of each stretch's standard error.
const RESAMPLES: usize = 2_000;

/// What the stress phase found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StressOutcome {
    /// The phase's name in the run result (`stress`).
    pub phase: String,
    /// The capacity the loads were taken from, in sessions per second (the soak's).
    pub capacity_sessions_per_sec: f64,
    /// Whose capacity it was.
    pub capacity_from: CapacitySource,
    /// The session rate before and after the overload: the soak's.
    pub from_sessions_per_sec: f64,
    /// The session rate during the overload: `stress.to` × capacity.
    pub to_sessions_per_sec: f64,
    /// Where the overload begins, from the start of the phase's measured part.
    #[serde(rename = "starts_ms", with = "crate::measure::millis")]
    pub starts: Duration,
    /// Where it ends: the event the time to stable SLO is measured from.
    #[serde(rename = "ends_ms", with = "crate::measure::millis")]
    pub ends: Duration,
    /// Where the compared stretch after the overload begins (it runs to the phase's end).
    #[serde(rename = "compared_from_ms", with = "crate::measure::millis")]
    pub compared_from: Duration,
    /// The stretch before the overload.
    pub before: StretchFigures,
    /// The compared stretch after it.
    pub after: StretchFigures,
    /// p50, p99 and the error rate, after against before.
    pub changes: Vec<StressChange>,
    /// What the comparison concluded.
    pub harm: Harm,
    /// Why, with the numbers, for people.
    pub reason: String,
    /// The time to stable SLO after the overload's end.
    pub recovery: Recovery,
    /// `recovery.windows`: the consecutive windows that had to hold.
    pub recovery_windows: usize,
    /// The `[slo] recovery` check of the time to stable SLO; `None` without a limit (the run
    /// fills it in when it records the phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<RecoveryCheck>,
    /// Why the phase stopped early, if it did (an abort condition).
    pub aborted: Option<String>,
    /// Whether the generator kept its schedule.
    pub valid: bool,
    /// Why it did not, one reason per entry.
    pub invalid_reasons: Vec<String>,
}

/// One stretch of the stress phase at the soak's load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StretchFigures {
    /// Its windows with at least one answer.
    pub windows: usize,
    /// Requests that got an outcome in it.
    pub completed: u64,
    /// Of those and the dropped ones, the failures.
    pub failures: u64,
    /// The p50 of all its requests, in milliseconds (the median of its windows' when their
    /// histograms were not kept).
    pub p50_ms: Option<f64>,
    /// The p99 of all its requests, in milliseconds (likewise).
    pub p99_ms: Option<f64>,
    /// Failures over requests due (completed and dropped).
    pub error_rate: Option<f64>,
    /// The median of the target's resident set size over the stretch; `None` when the target is
    /// not sampled. Reported, not judged: an allocator keeps memory it grew into, so more RSS after
    /// an overload is not harm by itself (a leak shows in the soak's slope).
    pub rss_bytes: Option<u64>,
}

/// A metric of the stress's comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StressMetric {
    /// The median latency (a ratio after / before).
    P50,
    /// The 99th percentile latency (a ratio).
    P99,
    /// The error rate (a difference after − before).
    ErrorRate,
}

impl StressMetric {
    /// Its name in messages.
    pub fn label(self) -> &'static str {
        match self {
            StressMetric::P50 => "p50",
            StressMetric::P99 => "p99",
            StressMetric::ErrorRate => "error rate",
        }
    }
}

/// How one metric compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeOutcome {
    /// Its interval at α lies within the threshold.
    Within,
    /// Its interval at α/3 lies wholly beyond the threshold.
    Harm,
    /// Neither, or too few windows to say.
    Inconclusive,
}

/// One metric after the overload against before it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StressChange {
    /// The metric.
    pub metric: StressMetric,
    /// After / before for latencies, after − before for the error rate; `None` without enough
    /// windows on either side.
    pub estimate: Option<f64>,
    /// The interval's lower end: at α/3 when harm was tested beyond the threshold (found, or the
    /// interval at α lay beyond it), else at α.
    pub low: Option<f64>,
    /// Its upper end.
    pub high: Option<f64>,
    /// The threshold on the estimate's scale: 1 + δ for a ratio (δ raised to the `[gate]` floor
    /// over the before figure), δ for the error rate.
    pub threshold: f64,
    /// What it concluded.
    pub outcome: ChangeOutcome,
}

impl StressChange {
    /// "p99 +40.2% (interval +25.1% … +58.0%, threshold +10.0%)".
    pub fn describe(&self) -> String {
        let ratio = self.metric != StressMetric::ErrorRate;
        let show = |x: f64| {
            if ratio {
                format!("{:+.1}%", (x - 1.0) * 100.0)
            } else {
                format!("{:+.2} pp", x * 100.0)
            }
        };
        match (self.estimate, self.low, self.high) {
            (Some(e), Some(l), Some(h)) => format!(
                "{} {} (interval {} … {}, threshold {})",
                self.metric.label(),
                show(e),
                show(l),
                show(h),
                show(self.threshold)
            ),
            _ => format!("{} not estimated", self.metric.label()),
        }
    }
}

/// What the stress's comparison concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Harm {
    /// Every metric after the overload is within its threshold of before.
    Recovered,
    /// A metric after the overload is beyond its threshold: a regression (exit 10).
    LastingHarm,
    /// The windows cannot tell (too few, too noisy, or the phase invalid).
    Inconclusive,
}

impl Harm {
    /// Its name in messages and JSON.
    pub fn label(self) -> &'static str {
        match self {
            Harm::Recovered => "recovered",
            Harm::LastingHarm => "lasting harm",
            Harm::Inconclusive => "inconclusive",
        }
    }
}

/// The rate steps of a stress phase whose arrivals start with `warmup`: ×`multiplier` from
/// `warmup + before` for `duration`, then ×1 again.
pub fn stress_steps(
    stress: &StressConfig,
    warmup: Duration,
    multiplier: f64,
) -> Result<RateSteps, RateStepsError> {
    let start = warmup + stress.before;
    RateSteps::new(&[
        RateStep {
            at: start,
            multiplier,
        },
        RateStep {
            at: start + stress.duration,
            multiplier: 1.0,
        },
    ])
}

/// What [`stress_figures`] read from the phase.
#[derive(Clone, Debug, PartialEq)]
pub struct StressFigures {
    /// Where the compared stretch after the overload begins.
    pub compared_from: Duration,
    /// The stretch before.
    pub before: StretchFigures,
    /// The compared stretch after.
    pub after: StretchFigures,
    /// Each metric's change.
    pub changes: Vec<StressChange>,
    /// The conclusion.
    pub harm: Harm,
    /// Why.
    pub reason: String,
    /// The time to stable SLO after the overload.
    pub recovery: Recovery,
}

/// What the stress phase's judgement reads besides its windows.
pub struct StressJudge<'a> {
    /// `[stress]`.
    pub stress: &'a StressConfig,
    /// The thresholds.
    pub gate: &'a GateConfig,
    /// The indicators of a stable window.
    pub slo: &'a SloConfig,
    /// `recovery.windows`.
    pub required: usize,
    /// The comparison's α (one-sided, per metric for "recovered").
    pub alpha: f64,
    /// `generator.max-lag`: a stretch whose windows all kept it was paced as planned, whatever
    /// the generator did during the overload.
    pub max_lag: Duration,
}

/// What the stress phase measured.
#[derive(Clone, Copy)]
pub struct StressPhase<'a> {
    /// Its 1 s windows (origin: the measured part's start).
    pub windows: &'a [Window],
    /// Their latency histograms, by window index (empty when not kept).
    pub histograms: &'a [WindowHistograms],
    /// The target's resource samples over the phase.
    pub resources: &'a [ResourceSample],
    /// The measured part's start and end on the samples' clock, when known.
    pub measured_s: Option<[f64; 2]>,
    /// The phase's validity, with its reasons.
    pub valid: Result<(), &'a [String]>,
    /// Why the phase stopped early (an abort condition), if it did.
    pub stopped: Option<&'a str>,
}

/// Reads the stress phase: its windows with their latency histograms (when some stretch window
/// has none, its p50 and p99 are the medians of its windows' instead), and the target's resource
/// samples over it (their clock's origin at `measured_s[0]`, else at the first sample).
///
/// An invalid phase is judged all the same when every window of both stretches kept
/// `generator.max-lag` (the generator fell behind only during the overload, where nothing is
/// compared); otherwise it is inconclusive. A phase the abort limits stopped after the overload's
/// end is lasting harm: the service was still beyond the envelope when it should have been at the
/// soak's load again; one stopped during the overload is inconclusive.
pub fn stress_figures(phase: &StressPhase<'_>, judge: &StressJudge<'_>) -> StressFigures {
    let StressPhase {
        windows,
        histograms,
        resources,
        measured_s,
        valid,
        stopped,
    } = *phase;
    let stress = judge.stress;
    let starts = stress.before;
    let ends = stress.before + stress.duration;
    let end = ends + stress.after;
    let compared_from = end.saturating_sub(stress.before);
    let in_stretch = |from: Duration, to: Duration| -> Vec<(usize, &Window)> {
        windows
            .iter()
            .enumerate()
            .filter(|(_, w)| w.start >= from && w.start + w.length <= to && w.completed > 0)
            .collect()
    };
    let (before_indexed, after_indexed) = (
        in_stretch(Duration::ZERO, starts),
        in_stretch(compared_from, end),
    );
    let before: Vec<&Window> = before_indexed.iter().map(|(_, w)| *w).collect();
    let after: Vec<&Window> = after_indexed.iter().map(|(_, w)| *w).collect();
    let seed = |label: &str| derive_seed(DEFAULT_BOOTSTRAP_SEED, label);
    let histogram_of = |indexed: &[(usize, &Window)], label: &str| {
        let hs: Option<Vec<&LatencyHistogram>> = indexed
            .iter()
            .map(|(i, _)| {
                histograms
                    .iter()
                    .find(|h| h.index == *i)
                    .map(|h| &h.latency)
            })
            .collect();
        hs.and_then(|hs| HistogramStretch::of(&hs, seed(label)))
    };
    let (hist_before, hist_after) = (
        histogram_of(&before_indexed, "before"),
        histogram_of(&after_indexed, "after"),
    );
    let origin = measured_s
        .map(|m| m[0])
        .or_else(|| resources.first().map(|r| r.elapsed_s))
        .unwrap_or(0.0);
    let rss = |from: Duration, to: Duration| {
        let (from, to) = (from.as_secs_f64(), to.as_secs_f64());
        let values: Vec<f64> = resources
            .iter()
            .filter(|r| {
                let t = r.elapsed_s - origin;
                t >= from && t < to
            })
            .map(|r| r.rss_bytes as f64)
            .collect();
        median(&values).map(|m| m.round() as u64)
    };
    let before_figures = stretch(&before, hist_before.as_ref(), rss(Duration::ZERO, starts));
    let after_figures = stretch(&after, hist_after.as_ref(), rss(compared_from, end));
    let z_pass = normal_quantile(1.0 - judge.alpha);
    let z_harm = normal_quantile(1.0 - judge.alpha / 3.0);
    let latency = |metric: StressMetric, pick: fn(&Window) -> Duration| {
        let logs = |ws: &[&Window]| -> Vec<f64> {
            ws.iter()
                .map(|w| pick(w).as_secs_f64() * 1e3)
                .filter(|ms| *ms > 0.0)
                .map(f64::ln)
                .collect()
        };
        let (b, a) = (logs(&before), logs(&after));
        let label = metric.label();
        // The quantile of every request in each stretch when both kept their histograms, else
        // the median of the windows' figures.
        let (base_ms, estimate) = match (&hist_before, &hist_after) {
            (Some(hb), Some(ha))
                if before.len() >= MIN_STRETCH_WINDOWS && after.len() >= MIN_STRETCH_WINDOWS =>
            {
                let (b, a) = (hb.log_quantile(metric), ha.log_quantile(metric));
                (
                    Some(b.0.exp()),
                    Some((a.0 - b.0, (a.1.powi(2) + b.1.powi(2)).sqrt())),
                )
            }
            _ => (
                median(&b).map(f64::exp),
                two_stretch(&b, &a, |s: &[f64]| median(s), seed(label)),
            ),
        };
        let delta = match (metric, base_ms) {
            (StressMetric::P50, Some(ms)) => judge.gate.p50_delta(ms),
            (StressMetric::P50, None) => judge.gate.p50_change,
            (_, Some(ms)) => judge.gate.p99_delta(ms),
            (_, None) => judge.gate.p99_change,
        };
        judged(metric, estimate, 1.0 + delta, z_pass, z_harm, f64::exp)
    };
    let mut changes = vec![
        latency(StressMetric::P50, |w| w.p50),
        latency(StressMetric::P99, |w| w.p99),
    ];
    let due = |ws: &[&Window]| -> Vec<(f64, f64)> {
        ws.iter()
            .map(|w| {
                (
                    (w.errors + w.dropped) as f64,
                    (w.completed + w.dropped) as f64,
                )
            })
            .collect()
    };
    let rate = |s: &[(f64, f64)]| {
        let (f, d) = s
            .iter()
            .fold((0.0, 0.0), |(f, d), (wf, wd)| (f + wf, d + wd));
        (d > 0.0).then(|| f / d)
    };
    let errors = two_stretch(&due(&before), &due(&after), rate, seed("error-rate"));
    changes.push(judged(
        StressMetric::ErrorRate,
        errors,
        judge.gate.error_rate_increase,
        z_pass,
        z_harm,
        |x| x,
    ));
    let last_end = windows
        .iter()
        .map(|w| w.start + w.length)
        .max()
        .unwrap_or_default();
    let paced = |ws: &[&Window]| ws.iter().all(|w| w.lag_p99 <= judge.max_lag);
    let valid = match valid {
        Err(_) if paced(&before) && paced(&after) && !after.is_empty() => Ok(()),
        other => other,
    };
    let stopped = stopped.map(|why| (why, last_end, ends));
    let (harm, reason) = conclude(&changes, valid, stopped, before.len(), after.len());
    StressFigures {
        compared_from,
        before: before_figures,
        after: after_figures,
        changes,
        harm,
        reason,
        recovery: time_to_stable(windows, ends, judge.required, judge.slo),
    }
}

/// A stretch's figures: p50 and p99 of all its requests when its histograms were kept, else the
/// medians of its windows'.
fn stretch(
    windows: &[&Window],
    histogram: Option<&HistogramStretch>,
    rss_bytes: Option<u64>,
) -> StretchFigures {
    let ms = |pick: fn(&Window) -> Duration, metric: StressMetric| {
        if let Some(h) = histogram {
            return Some(h.log_quantile(metric).0.exp());
        }
        let values: Vec<f64> = windows
            .iter()
            .map(|w| pick(w).as_secs_f64() * 1e3)
            .collect();
        median(&values)
    };
    let completed: u64 = windows.iter().map(|w| w.completed).sum();
    let dropped: u64 = windows.iter().map(|w| w.dropped).sum();
    let failures: u64 = windows.iter().map(|w| w.errors + w.dropped).sum();
    let due = completed + dropped;
    StretchFigures {
        windows: windows.len(),
        completed,
        failures,
        p50_ms: ms(|w| w.p50, StressMetric::P50),
        p99_ms: ms(|w| w.p99, StressMetric::P99),
        error_rate: (due > 0).then(|| failures as f64 / due as f64),
        rss_bytes,
    }
}

/// A stretch read from its windows' latency histograms: ln p50 and ln p99 of all its requests,
/// each with a standard error from a moving-block bootstrap over the windows (blocks of
/// ⌈n^(1/3)⌉ windows, each resample's counts added up), which carries both the sampling noise
/// of a quantile and the windows' autocorrelation.
struct HistogramStretch {
    p50: (f64, f64),
    p99: (f64, f64),
}

/// The bootstrap resamples of a stretch read from histograms.
const HISTOGRAM_RESAMPLES: usize = 1_000;

impl HistogramStretch {
    /// `None` for no window or an empty stretch. Each window's histogram is first reduced to its
    /// counts over the values recorded anywhere in the stretch, so a resample adds short vectors
    /// instead of merging whole histograms.
    fn of(windows: &[&LatencyHistogram], seed: u64) -> Option<Self> {
        let n = windows.len();
        let mut values: Vec<u64> = windows
            .iter()
            .flat_map(|h| h.as_hdr().iter_recorded().map(|v| v.value_iterated_to()))
            .collect();
        values.sort_unstable();
        values.dedup();
        if values.is_empty() {
            return None;
        }
        let counts: Vec<Vec<u64>> = windows
            .iter()
            .map(|h| {
                let mut c = vec![0u64; values.len()];
                for v in h.as_hdr().iter_recorded() {
                    if let Ok(i) = values.binary_search(&v.value_iterated_to()) {
                        c[i] += v.count_at_value();
                    }
                }
                c
            })
            .collect();
        // ln ms of the q quantile of summed counts: the smallest value whose cumulative count
        // reaches ⌈q · total⌉ (at least the first).
        let log_ms = |sum: &[u64], q: f64| {
            let total: u64 = sum.iter().sum();
            let rank = ((q * total as f64).ceil() as u64).max(1);
            let mut seen = 0;
            let at = sum
                .iter()
                .position(|c| {
                    seen += c;
                    seen >= rank
                })
                .unwrap_or(sum.len() - 1);
            (values[at] as f64 / 1e3).max(1e-3).ln()
        };
        let add = |into: &mut Vec<u64>, c: &[u64]| {
            for (a, b) in into.iter_mut().zip(c) {
                *a += b;
            }
        };
        let mut all = vec![0u64; values.len()];
        for c in &counts {
            add(&mut all, c);
        }
        // `stats::block_bootstrap_sd` over the windows' indices: each resample adds the counts of
        // the windows it drew. The same seed draws the same resamples for both quantiles.
        let block = ((n as f64).cbrt().ceil() as usize).clamp(1, n);
        let indices: Vec<usize> = (0..n).collect();
        let sd = |q: f64| {
            let mut resample = vec![0u64; values.len()];
            block_bootstrap_sd(&indices, block, HISTOGRAM_RESAMPLES, seed, |drawn| {
                resample.iter_mut().for_each(|c| *c = 0);
                for &i in drawn {
                    add(&mut resample, &counts[i]);
                }
                Some(log_ms(&resample, q))
            })
        };
        Some(Self {
            p50: (log_ms(&all, 0.5), sd(0.5)?),
            p99: (log_ms(&all, 0.99), sd(0.99)?),
        })
    }

    /// (ln ms, its standard error) of `metric`'s quantile (the error rate has none: p99's).
    fn log_quantile(&self, metric: StressMetric) -> (f64, f64) {
        match metric {
            StressMetric::P50 => self.p50,
            _ => self.p99,
        }
    }
}

/// The estimate after − before of `statistic` on the test scale, with its standard error (each
/// stretch's by a moving-block bootstrap over its windows); `None` when either stretch has fewer
/// than [`MIN_STRETCH_WINDOWS`] windows or a statistic cannot be computed.
fn two_stretch<T: Copy>(
    before: &[T],
    after: &[T],
    statistic: impl Fn(&[T]) -> Option<f64>,
    seed: u64,
) -> Option<(f64, f64)> {
    if before.len() < MIN_STRETCH_WINDOWS || after.len() < MIN_STRETCH_WINDOWS {
        return None;
    }
    let estimate = statistic(after)? - statistic(before)?;
    let sd = |series: &[T], seed: u64| {
        // Blocks of ⌈n^(1/3)⌉ windows (Künsch): a stretch is too short to read its own
        // autocorrelation time from (`stats::block_len` needs a soak's length).
        let block = (series.len() as f64).cbrt().ceil() as usize;
        block_bootstrap_sd(series, block.max(1), RESAMPLES, seed, &statistic)
    };
    let se = (sd(before, seed)?.powi(2) + sd(after, seed ^ 0x5eed)?.powi(2)).sqrt();
    Some((estimate, se))
}

/// Judges one metric: `estimate` (on the test scale, with its SE) against `threshold` (on the
/// reported scale; `map` takes the test scale to it, `exp` for a log ratio).
fn judged(
    metric: StressMetric,
    estimate: Option<(f64, f64)>,
    threshold: f64,
    z_pass: f64,
    z_harm: f64,
    map: fn(f64) -> f64,
) -> StressChange {
    let Some((e, se)) = estimate else {
        return StressChange {
            metric,
            estimate: None,
            low: None,
            high: None,
            threshold,
            outcome: ChangeOutcome::Inconclusive,
        };
    };
    let harm = map(e - z_harm * se) > threshold;
    // Harm is tested at α/3: an interval at α wholly beyond the threshold whose α/3 interval is
    // not is shown at α/3, so the interval agrees with "neither within nor beyond".
    let beyond_at_alpha = map(e - z_pass * se) > threshold;
    let z = if harm || beyond_at_alpha {
        z_harm
    } else {
        z_pass
    };
    let (low, high) = (map(e - z * se), map(e + z * se));
    let outcome = if harm {
        ChangeOutcome::Harm
    } else if high < threshold {
        ChangeOutcome::Within
    } else {
        ChangeOutcome::Inconclusive
    };
    StressChange {
        metric,
        estimate: Some(map(e)),
        low: Some(low),
        high: Some(high),
        threshold,
        outcome,
    }
}

/// The conclusion and its reason.
fn conclude(
    changes: &[StressChange],
    valid: Result<(), &[String]>,
    stopped: Option<(&str, Duration, Duration)>,
    before: usize,
    after: usize,
) -> (Harm, String) {
    // (why, where the last window ended, where the overload ended)
    if let Some((why, stopped_at, ends)) = stopped {
        return if stopped_at > ends {
            (
                Harm::LastingHarm,
                format!(
                    "lasting harm: the service was still beyond the abort limits {:.0} s after \
                     the overload ended ({why})",
                    (stopped_at - ends).as_secs_f64()
                ),
            )
        } else {
            (
                Harm::Inconclusive,
                format!(
                    "the abort limits stopped the phase during the overload ({why}): nothing \
                     after it to compare"
                ),
            )
        };
    }
    if let Err(reasons) = valid {
        return (
            Harm::Inconclusive,
            format!(
                "the stress phase is invalid ({}): its windows do not show what the service did",
                reasons.join("; ")
            ),
        );
    }
    if before < MIN_STRETCH_WINDOWS || after < MIN_STRETCH_WINDOWS {
        return (
            Harm::Inconclusive,
            format!(
                "too few windows to compare: {before} before the overload and {after} in the \
                 compared stretch after it (at least {MIN_STRETCH_WINDOWS} each)"
            ),
        );
    }
    let harmed: Vec<String> = changes
        .iter()
        .filter(|c| c.outcome == ChangeOutcome::Harm)
        .map(StressChange::describe)
        .collect();
    if !harmed.is_empty() {
        return (
            Harm::LastingHarm,
            format!("lasting harm: {} after the stress", harmed.join("; ")),
        );
    }
    let open: Vec<String> = changes
        .iter()
        .filter(|c| c.outcome != ChangeOutcome::Within)
        .map(StressChange::describe)
        .collect();
    if open.is_empty() {
        let all: Vec<String> = changes.iter().map(StressChange::describe).collect();
        (
            Harm::Recovered,
            format!(
                "recovered: {} after the stress, each within its threshold",
                all.join("; ")
            ),
        )
    } else {
        (
            Harm::Inconclusive,
            format!(
                "neither recovered nor harmed: {} after the stress lies neither within nor beyond \
                 its threshold",
                open.join("; ")
            ),
        )
    }
}

/// A recorded stress for the reporters' and the verdict's tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use crate::plan::CapacitySource;

    pub(crate) fn outcome() -> StressOutcome {
        let stretch = |p99: f64, rss: u64| StretchFigures {
            windows: 10,
            completed: 1000,
            failures: 0,
            p50_ms: Some(5.0),
            p99_ms: Some(p99),
            error_rate: Some(0.0),
            rss_bytes: Some(rss),
        };
        StressOutcome {
            phase: "stress".to_owned(),
            capacity_sessions_per_sec: 100.0,
            capacity_from: CapacitySource::ThisRun,
            from_sessions_per_sec: 60.0,
            to_sessions_per_sec: 200.0,
            starts: Duration::from_secs(10),
            ends: Duration::from_secs(15),
            compared_from: Duration::from_secs(35),
            before: stretch(40.0, 10 << 20),
            after: stretch(56.0, 12 << 20),
            changes: vec![StressChange {
                metric: StressMetric::P99,
                estimate: Some(1.4),
                low: Some(1.25),
                high: Some(1.58),
                threshold: 1.1,
                outcome: ChangeOutcome::Harm,
            }],
            harm: Harm::LastingHarm,
            reason: "lasting harm: p99 +40.0% (interval +25.0% … +58.0%, threshold +10.0%) after \
                     the stress"
                .to_owned(),
            recovery: Recovery::Recovered {
                after: Duration::from_secs(4),
                confirmed_after: Duration::from_secs(9),
            },
            recovery_windows: 5,
            check: None,
            aborted: None,
            valid: true,
            invalid_reasons: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::recovery::tests::{slo, window};
    use rand::{Rng as _, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn stress() -> StressConfig {
        StressConfig {
            to: 2.0,
            duration: Duration::from_secs(5),
            before: Duration::from_secs(10),
            after: Duration::from_secs(25),
        }
    }

    fn gate() -> GateConfig {
        GateConfig {
            p50_change: 0.05,
            p99_change: 0.10,
            capacity_loss: 0.10,
            error_rate_increase: 0.005,
            rss_slope_bytes_per_sec: 2.0 * 1024.0 * 1024.0 / 60.0,
            p50_floor: Duration::ZERO,
            p99_floor: Duration::ZERO,
            operations: Vec::new(),
        }
    }

    /// 40 windows: 10 before at p50 100 ms and p99 150 ms (±2% noise), the overload's 5 at 800 ms,
    /// 10 slow ones, then 15 with p50 and p99 multiplied by `after` (the compared stretch is the
    /// last 10), the last 10 with `errors_after` failures in 100.
    fn phase(seed: u64, after: f64, errors_after: u64) -> Vec<Window> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut noisy = |x: f64| (x * (0.98 + 0.04 * rng.random::<f64>())).round() as u64;
        let mut windows: Vec<Window> = (0..10)
            .map(|s| window(s, 100, 0, 0, noisy(100.0), noisy(150.0)))
            .collect();
        windows.extend((10..15).map(|s| window(s, 200, 0, 0, 800, 1500)));
        windows.extend((15..25).map(|s| window(s, 100, 0, 0, 60, 400)));
        windows.extend((25..40).map(|s| {
            let errors = if s >= 30 { errors_after } else { 0 };
            window(
                s,
                100,
                errors,
                0,
                noisy(100.0 * after),
                noisy(150.0 * after),
            )
        }));
        windows
    }

    fn figures(
        windows: &[Window],
        histograms: &[WindowHistograms],
        resources: &[ResourceSample],
        measured_s: Option<[f64; 2]>,
        judge: &StressJudge<'_>,
        valid: Result<(), &[String]>,
    ) -> StressFigures {
        stress_figures(
            &StressPhase {
                windows,
                histograms,
                resources,
                measured_s,
                valid,
                stopped: None,
            },
            judge,
        )
    }

    fn judge<'a>(
        stress: &'a StressConfig,
        gate: &'a GateConfig,
        slo: &'a SloConfig,
    ) -> StressJudge<'a> {
        StressJudge {
            stress,
            gate,
            slo,
            required: 3,
            alpha: 0.01,
            max_lag: Duration::from_millis(25),
        }
    }

    #[test]
    fn a_service_as_fast_after_the_stress_as_before_recovered() {
        let (stress, gate, slo) = (stress(), gate(), slo());
        for seed in 0..20 {
            let f = figures(
                &phase(seed, 1.0, 0),
                &[],
                &[],
                None,
                &judge(&stress, &gate, &slo),
                Ok(()),
            );
            assert_eq!(f.harm, Harm::Recovered, "seed {seed}: {}", f.reason);
            assert_eq!(f.compared_from, Duration::from_secs(30));
            assert_eq!((f.before.windows, f.after.windows), (10, 10));
            // Stable again once the slow windows after the overload are over.
            assert_eq!(
                f.recovery.after(),
                Some(Duration::from_secs(10)),
                "seed {seed}"
            );
        }
    }

    #[test]
    fn a_service_left_slower_is_harmed_and_the_reason_names_the_metric() {
        let (stress, gate, slo) = (stress(), gate(), slo());
        let f = figures(
            &phase(1, 1.5, 0),
            &[],
            &[],
            None,
            &judge(&stress, &gate, &slo),
            Ok(()),
        );
        assert_eq!(f.harm, Harm::LastingHarm, "{}", f.reason);
        assert!(f.reason.starts_with("lasting harm: p50 +"), "{}", f.reason);
        assert!(f.reason.contains("p99 +"), "{}", f.reason);
        let p99 = &f.changes[1];
        assert_eq!(p99.outcome, ChangeOutcome::Harm);
        let estimate = p99.estimate.expect("estimated");
        assert!((1.35..1.65).contains(&estimate), "{estimate}");
        assert!(p99.low.unwrap() > 1.1 && p99.high.unwrap() > estimate);
    }

    #[test]
    fn errors_that_stay_after_the_stress_are_harm() {
        let (stress, gate, slo) = (stress(), gate(), slo());
        // 5 failed answers of every 100: +5 pp against a 0.5 pp threshold.
        let f = figures(
            &phase(2, 1.0, 5),
            &[],
            &[],
            None,
            &judge(&stress, &gate, &slo),
            Ok(()),
        );
        assert_eq!(f.harm, Harm::LastingHarm, "{}", f.reason);
        assert_eq!(f.changes[2].outcome, ChangeOutcome::Harm);
        assert!(f.reason.contains("error rate +5.00 pp"), "{}", f.reason);
    }

    #[test]
    fn a_small_change_is_neither_and_an_invalid_or_short_phase_is_inconclusive() {
        let (stress, gate, slo) = (stress(), gate(), slo());
        let judge = judge(&stress, &gate, &slo);
        // +5% p50 against a 5% threshold: neither within nor beyond.
        let f = figures(&phase(3, 1.05, 0), &[], &[], None, &judge, Ok(()));
        assert_eq!(f.harm, Harm::Inconclusive, "{}", f.reason);
        // An invalid phase whose stretches fell behind: inconclusive, naming why.
        let reasons = vec!["pacing lag".to_owned()];
        let mut late = phase(3, 2.0, 0);
        late[35].lag_p99 = Duration::from_millis(300);
        let f = figures(&late, &[], &[], None, &judge, Err(&reasons));
        assert_eq!(f.harm, Harm::Inconclusive);
        assert!(f.reason.contains("pacing lag"), "{}", f.reason);
        // The generator fell behind during the overload only: the stretches are judged.
        let mut overload_late = phase(3, 2.0, 0);
        overload_late[12].lag_p99 = Duration::from_millis(300);
        let f = figures(&overload_late, &[], &[], None, &judge, Err(&reasons));
        assert_eq!(f.harm, Harm::LastingHarm, "{}", f.reason);
        // Stopped during the overload: nothing after it to compare.
        let short: Vec<Window> = phase(3, 1.0, 0).into_iter().take(13).collect();
        let f = figures(&short, &[], &[], None, &judge, Ok(()));
        assert_eq!(f.harm, Harm::Inconclusive);
        assert!(f.reason.starts_with("too few windows"), "{}", f.reason);
    }

    /// Stopped by the abort limits after the overload ended: lasting harm (the worst harm must
    /// not pass as "too few windows"); stopped during it: inconclusive.
    #[test]
    fn an_abort_after_the_overload_is_lasting_harm_and_during_it_inconclusive() {
        let (stress, gate, slo) = (stress(), gate(), slo());
        let judge = judge(&stress, &gate, &slo);
        let why = "p99 5.09 s > 5.00 s in 2 consecutive windows (abort limits)";
        let stopped = |n: usize| {
            let windows: Vec<Window> = phase(5, 1.0, 0).into_iter().take(n).collect();
            stress_figures(
                &StressPhase {
                    windows: &windows,
                    histograms: &[],
                    resources: &[],
                    measured_s: None,
                    valid: Ok(()),
                    stopped: Some(why),
                },
                &judge,
            )
        };
        // The overload ends at 15 s; windows to 22 s.
        let f = stopped(22);
        assert_eq!(f.harm, Harm::LastingHarm, "{}", f.reason);
        assert_eq!(
            f.reason,
            format!(
                "lasting harm: the service was still beyond the abort limits 7 s after the \
                 overload ended ({why})"
            )
        );
        let f = stopped(13);
        assert_eq!(f.harm, Harm::Inconclusive, "{}", f.reason);
        assert!(f.reason.contains("during the overload"), "{}", f.reason);
    }

    #[test]
    fn rss_is_read_on_the_stretches_of_the_resource_clock() {
        let (stress, gate, slo) = (stress(), gate(), slo());
        // Samples once a second from 100 s on the sampler's clock: 10 MB before, 30 MB after.
        let resources: Vec<ResourceSample> = (0..40)
            .map(|s| ResourceSample {
                elapsed_s: 100.0 + f64::from(s),
                cpu_seconds: 0.0,
                rss_bytes: if s < 12 { 10_000_000 } else { 30_000_000 },
                threads: 1,
                fds: 0,
            })
            .collect();
        let f = figures(
            &phase(4, 1.0, 0),
            &[],
            &resources,
            Some([100.0, 140.0]),
            &judge(&stress, &gate, &slo),
            Ok(()),
        );
        assert_eq!(f.before.rss_bytes, Some(10_000_000));
        assert_eq!(f.after.rss_bytes, Some(30_000_000));
        // Reported, not judged.
        assert_eq!(f.harm, Harm::Recovered, "{}", f.reason);
    }

    /// 40 windows of 1,000 requests each, latencies lognormal around 10 ms (σ 0.3) seeded, the
    /// overload's 5 windows at 800 ms, those after it multiplied by `after`; with their
    /// histograms, so each stretch's quantiles are read from all its 10,000 requests.
    fn with_histograms(seed: u64, after: f64) -> (Vec<Window>, Vec<WindowHistograms>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut windows = Vec::new();
        let mut histograms = Vec::new();
        for s in 0..40u64 {
            let scale = match s {
                10..15 => 80.0,
                15.. => after,
                _ => 1.0,
            };
            let mut h = LatencyHistogram::new();
            for _ in 0..1000 {
                // Box–Muller: a standard normal from two uniforms.
                let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
                let z = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
                h.record(Duration::from_secs_f64(0.010 * scale * (0.3 * z).exp()));
            }
            windows.push(Window {
                p50: h.quantile(0.5),
                p99: h.quantile(0.99),
                max: h.max(),
                ..window(s, 1000, 0, 0, 0, 0)
            });
            histograms.push(WindowHistograms {
                index: s as usize,
                latency: h,
                lag: LatencyHistogram::new(),
            });
        }
        (windows, histograms)
    }

    /// From histograms: an unchanged service recovered in every seed (its p99 read from 10,000
    /// requests a stretch: within 10% at 98%, where 2,000 would leave ±8%), one 30% slower is
    /// harmed on both percentiles, and the stretch figures are the quantiles of all their
    /// requests.
    #[test]
    fn read_from_histograms_the_quantiles_of_every_request_decide() {
        let (stress, gate, mut slo) = (stress(), gate(), slo());
        slo.latency[0].limit = Duration::from_secs(2);
        let judge = judge(&stress, &gate, &slo);
        for seed in 0..10 {
            let (windows, histograms) = with_histograms(seed, 1.0);
            let f = figures(&windows, &histograms, &[], None, &judge, Ok(()));
            assert_eq!(f.harm, Harm::Recovered, "seed {seed}: {}", f.reason);
            let p50 = f.before.p50_ms.expect("a p50");
            assert!((9.5..10.5).contains(&p50), "{p50}");
            let p99 = f.before.p99_ms.expect("a p99");
            // exp(2.326 × 0.3) × 10 ms ≈ 20.1 ms.
            assert!((18.5..21.5).contains(&p99), "{p99}");
        }
        let (windows, histograms) = with_histograms(3, 1.3);
        let f = figures(&windows, &histograms, &[], None, &judge, Ok(()));
        assert_eq!(f.harm, Harm::LastingHarm, "{}", f.reason);
        assert_eq!(f.changes[0].outcome, ChangeOutcome::Harm);
        assert_eq!(f.changes[1].outcome, ChangeOutcome::Harm);
        let p99 = f.changes[1].estimate.expect("estimated");
        assert!((1.2..1.4).contains(&p99), "{p99}");
        // A window without its histogram: the medians of the windows' decide instead.
        let f = figures(&windows, &histograms[1..], &[], None, &judge, Ok(()));
        assert_eq!(
            f.before.p50_ms,
            median(
                &windows[..10]
                    .iter()
                    .map(|w| w.p50.as_secs_f64() * 1e3)
                    .collect::<Vec<_>>()
            )
        );
    }

    #[test]
    fn the_steps_go_up_at_the_overload_and_back_at_its_end() {
        let steps = stress_steps(&stress(), Duration::from_secs(1), 3.0).expect("valid");
        assert_eq!(steps.multiplier_at(10.9), 1.0);
        assert_eq!(steps.multiplier_at(11.0), 3.0);
        assert_eq!(steps.multiplier_at(15.9), 3.0);
        assert_eq!(steps.multiplier_at(16.0), 1.0);
    }
}
