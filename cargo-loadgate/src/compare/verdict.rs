//! The comparison of a run with its baseline, metric by metric, and the verdict.
//!
//! Every metric is estimated as a ratio head/base (latency percentiles, capacity) or a
//! difference head − base (error rate, RSS slope) with an interval, and judged by the interval
//! rule of `STATISTICS.md`: **Regression** when the whole interval lies beyond the metric's
//! threshold, **Pass** when it lies within, **Improvement** when it lies beyond the threshold on
//! the good side, **Inconclusive** otherwise. The primary metrics (p50 and p99 of all operations
//! and of each operation class, the error rate, the capacity) form one family tested with Holm's
//! procedure at α = 0.01; the RSS slope is secondary: it warns when inconclusive and fails the
//! gate only when its interval at α lies wholly beyond the threshold. The verdict names the rule
//! that fired and the numbers behind it; see `docs/statistics.md` for the derivations.

use super::figures::{KneeBracket, RSS_SLOPE_CONFIDENCE, RunFigures};
use crate::config::GateConfig;
use crate::measure::{LatencyHistogram, PhaseMeasurement, Window};
use crate::result::{
    Comparison, Metric, MetricComparison, Outcome, Scale, Verdict, VerdictOutcome,
};
use crate::stats::bootstrap::{
    DEFAULT_RESAMPLES, autocorrelation_time, block_bootstrap_sd, block_len, derive_seed,
    quantile_log_se,
};
use crate::stats::holm::{holm, normal_cdf};
use crate::stats::slope::{BootstrapOptions, normal_quantile, theil_sen_bootstrap};

/// The family-wise error rate of false regressions over the primary metrics.
pub const DEFAULT_ALPHA: f64 = 0.01;
/// The power at which the smallest detectable change is reported.
pub const DETECTION_POWER: f64 = 0.8;
/// The largest relative difference of the calibration figures before the machines are considered
/// not comparable. `STATISTICS.md` §9 says "a few percent"; measured on a quiet shared 2-core VM,
/// the figure moved by 5–14% between runs (and 6–11% within one) while the service's p50 and p99
/// under the same load stayed within ±3%, so 5% only hid regressions (docs/statistics.md).
pub const CALIBRATION_TOLERANCE: f64 = 0.20;
/// The largest relative difference of the compared phases' offered loads.
pub const LOAD_TOLERANCE: f64 = 0.01;
/// The fewest windows with answers a side needs for the window-based estimates.
pub const MIN_WINDOWS: usize = 5;
/// A quantile q needs n · min(q, 1 − q) of at least this on each side before it is compared.
pub const MIN_TAIL_REQUESTS: f64 = 5.0;
/// The fewest RSS samples a side needs for a slope.
pub const MIN_RSS_SAMPLES: usize = 10;

/// How the comparison is made; the defaults are the documented design.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareOptions {
    /// The family-wise α over the primary metrics.
    pub alpha: f64,
    /// The seed of every bootstrap.
    pub seed: u64,
    /// Bootstrap resamples per estimate.
    pub resamples: usize,
    /// See [`CALIBRATION_TOLERANCE`].
    pub calibration_tolerance: f64,
    /// See [`LOAD_TOLERANCE`].
    pub load_tolerance: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        Self {
            alpha: DEFAULT_ALPHA,
            seed: crate::stats::DEFAULT_BOOTSTRAP_SEED,
            resamples: DEFAULT_RESAMPLES,
            calibration_tolerance: CALIBRATION_TOLERANCE,
            load_tolerance: LOAD_TOLERANCE,
        }
    }
}

/// Compares `head` with `base` under the thresholds of `gate`, with the default options.
pub fn compare(base: &RunFigures, head: &RunFigures, gate: &GateConfig) -> Comparison {
    compare_with(base, head, gate, &CompareOptions::default())
}

/// How one metric was estimated, before the family is judged.
#[derive(Clone, Debug)]
enum Estimate {
    /// A normal interval on the test scale (ln ratio, or difference) with this standard error.
    Normal { est: f64, se: f64 },
    /// A bracket on the ratio scale (capacity); ends may be 0 or infinite.
    Bracket {
        est: Option<f64>,
        low: f64,
        high: f64,
    },
    /// Not estimable.
    Missing,
}

#[derive(Clone, Debug)]
struct Draft {
    metric: Metric,
    operation: Option<String>,
    primary: bool,
    base: Option<f64>,
    head: Option<f64>,
    estimate: Estimate,
    /// δ: relative for ratios, absolute for differences.
    delta: f64,
    /// Forces the outcome to inconclusive, with this note; or only annotates when `estimate` is fine.
    note: Option<String>,
    forced: bool,
}

impl Draft {
    fn new(metric: Metric, operation: Option<String>, delta: f64) -> Self {
        Self {
            metric,
            operation,
            primary: metric != Metric::RssSlope,
            base: None,
            head: None,
            estimate: Estimate::Missing,
            delta,
            note: None,
            forced: false,
        }
    }

    fn missing(mut self, note: String) -> Self {
        self.estimate = Estimate::Missing;
        self.note = Some(note);
        self
    }

    fn scale(&self) -> Scale {
        match self.metric {
            Metric::P50 | Metric::P99 | Metric::Capacity => Scale::Ratio,
            Metric::ErrorRate | Metric::RssSlope => Scale::Difference,
        }
    }

    /// The threshold on the test scale: ln(1 + δ) for latency, δ for differences.
    fn test_threshold(&self) -> f64 {
        match self.scale() {
            Scale::Ratio => self.delta.ln_1p(),
            Scale::Difference => self.delta,
        }
    }

    /// The one-sided p-value of "not beyond the threshold on the bad side".
    fn p_value(&self) -> f64 {
        match &self.estimate {
            _ if self.forced => 1.0,
            Estimate::Normal { est, se } => {
                let tau = self.test_threshold();
                if *se > 0.0 {
                    1.0 - normal_cdf((est - tau) / se)
                } else if *est > tau {
                    0.0
                } else {
                    1.0
                }
            }
            Estimate::Bracket { high, .. } => {
                if *high < 1.0 - self.delta {
                    0.0
                } else {
                    1.0
                }
            }
            Estimate::Missing => 1.0,
        }
    }
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// Judges one metric. A regression found by Holm is drawn at its Holm `level`; anything else at
/// `alpha`, the level the pass rule needs (a pass of the run is an intersection–union test: every
/// metric within, each at α). `detect_level` is the level a regression of this metric would have
/// to clear alone, α/m for a primary metric, which the smallest detectable change is quoted at.
fn judge(
    mut draft: Draft,
    alpha: f64,
    holm_level: f64,
    rejected: bool,
    detect_level: f64,
) -> MetricComparison {
    let level = if rejected { holm_level } else { alpha };
    let z = normal_quantile(1.0 - level);
    let z_detect = normal_quantile(1.0 - detect_level);
    let z_power = normal_quantile(DETECTION_POWER);
    let scale = draft.scale();
    let delta = draft.delta;
    let (threshold, good) = match (scale, draft.metric) {
        (_, Metric::Capacity) => (1.0 - delta, 1.0 + delta),
        (Scale::Ratio, _) => (1.0 + delta, 1.0 - delta),
        (Scale::Difference, _) => (delta, -delta),
    };
    let p_value = match draft.estimate {
        Estimate::Missing => None,
        _ if draft.forced => None,
        _ => Some(draft.p_value()),
    };
    let (estimate, low, high, detectable, mut outcome) = match draft.estimate {
        Estimate::Normal { est, se } => {
            let (lo, hi) = (est - z * se, est + z * se);
            let (estimate, low, high, detectable) = match scale {
                Scale::Ratio => (
                    est.exp(),
                    lo.exp(),
                    hi.exp(),
                    (1.0 + delta) * ((z_detect + z_power) * se).exp() - 1.0,
                ),
                Scale::Difference => (est, lo, hi, delta + (z_detect + z_power) * se),
            };
            let outcome = if rejected || (!draft.primary && low > threshold) {
                Outcome::Regression
            } else if low > threshold {
                draft.note = Some(format!(
                    "beyond the threshold at {:.0}% confidence, but not after Holm's correction \
                     for the number of metrics",
                    (1.0 - 2.0 * alpha) * 100.0
                ));
                Outcome::Inconclusive
            } else if high < good {
                Outcome::Improvement
            } else if high < threshold {
                Outcome::Pass
            } else {
                Outcome::Inconclusive
            };
            (
                Some(estimate),
                finite(low),
                finite(high),
                finite(detectable),
                outcome,
            )
        }
        Estimate::Bracket { est, low, high } => {
            let outcome = if high < threshold {
                Outcome::Regression
            } else if low > good {
                Outcome::Improvement
            } else if low > threshold {
                Outcome::Pass
            } else {
                Outcome::Inconclusive
            };
            // The bracket's width factor: a true loss is seen once the whole bracket of the
            // ratio fits below 1 − δ, so the smallest loss seen is 1 − (1 − δ) / width.
            let width = high / low;
            let detectable = width
                .is_finite()
                .then(|| 1.0 - (1.0 - delta) / width)
                .filter(|d| *d > 0.0);
            (
                est,
                finite(low).filter(|l| *l > 0.0),
                finite(high),
                detectable,
                outcome,
            )
        }
        Estimate::Missing => (None, None, None, None, Outcome::Inconclusive),
    };
    if draft.forced {
        outcome = Outcome::Inconclusive;
    }
    MetricComparison {
        metric: draft.metric,
        operation: draft.operation,
        primary: draft.primary,
        scale,
        base: draft.base,
        head: draft.head,
        estimate,
        low,
        high,
        confidence: 1.0 - 2.0 * level,
        threshold,
        p_value,
        outcome,
        detectable,
        note: draft.note,
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The windows of a phase that saw answers.
fn answered(phase: &PhaseMeasurement) -> Vec<&Window> {
    phase
        .windows
        .windows
        .iter()
        .filter(|w| w.completed > 0)
        .collect()
}

/// The standard error of a side's latency *level*: a block bootstrap of the mean of ln(window
/// p50) over the windows with answers. It carries what independent sampling misses — the
/// slowdowns a whole window shares, and their autocorrelation — and is added to every quantile's
/// order-statistic error on that side. `None` with fewer than [`MIN_WINDOWS`] windows.
fn level_se(phase: &PhaseMeasurement, options: &CompareOptions, label: &str) -> Option<f64> {
    let values: Vec<f64> = answered(phase)
        .iter()
        .map(|w| ms(w.p50).max(1e-3).ln())
        .collect();
    if values.len() < MIN_WINDOWS {
        return None;
    }
    let boot = block_bootstrap_sd(
        &values,
        block_len(&values),
        options.resamples,
        derive_seed(options.seed, label),
        |s| Some(s.iter().sum::<f64>() / s.len() as f64),
    )?;
    Some(boot * short_series_factor(&values))
}

/// Widens the standard error of a mean of a short autocorrelated series: centring on the sample
/// mean biases the variance down by about τ/n (τ the integrated autocorrelation time), and a
/// block bootstrap with blocks of about 2τ misses part of the correlation beyond the block.
fn short_series_factor(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let tau = autocorrelation_time(values).unwrap_or(1.0);
    let b = block_len(values) as f64;
    // Centring bias, then the block bootstrap's own bias, 1 − τ/b (Künsch 1989), each bounded.
    let centring = n / (n - tau).max(n / 2.0);
    let blocks = 1.0 / (1.0 - tau / (2.0 * b)).max(0.5);
    (centring * blocks).sqrt()
}

fn latency_drafts(
    base: &PhaseMeasurement,
    head: &PhaseMeasurement,
    gate: &GateConfig,
    options: &CompareOptions,
) -> Vec<Draft> {
    let levels = level_se(base, options, "base/level").zip(level_se(head, options, "head/level"));
    let (base_total, head_total) = (base.total(), head.total());
    let mut classes: Vec<(Option<String>, &LatencyHistogram, Option<&LatencyHistogram>)> =
        vec![(None, &head_total.latency, Some(&base_total.latency))];
    if head.operations.len() >= 2 {
        for op in &head.operations {
            let base_op = base.operations.iter().find(|o| o.name == op.name);
            classes.push((
                Some(op.name.clone()),
                &op.latency,
                base_op.map(|o| &o.latency),
            ));
        }
    }
    let mut drafts = Vec::new();
    for (metric, q, delta) in [
        (Metric::P50, 0.5_f64, gate.p50),
        (Metric::P99, 0.99, gate.p99),
    ] {
        let label = metric.label();
        for (operation, head_hist, base_hist) in &classes {
            let d = Draft::new(metric, operation.clone(), delta);
            let Some(base_hist) = base_hist else {
                drafts.push(d.missing("the baseline did not run this operation".to_owned()));
                continue;
            };
            let Some((level_b, level_h)) = levels else {
                drafts.push(d.missing(format!(
                    "fewer than {MIN_WINDOWS} windows with answers: {} (base), {} (head)",
                    answered(base).len(),
                    answered(head).len()
                )));
                continue;
            };
            let need = (MIN_TAIL_REQUESTS / q.min(1.0 - q)).ceil();
            let (nb, nh) = (base_hist.count(), head_hist.count());
            if (nb.min(nh) as f64) < need {
                drafts.push(d.missing(format!(
                    "too few requests for {label}: {nb} (base), {nh} (head); it needs {need}"
                )));
                continue;
            }
            let value = |h: &LatencyHistogram| ms(h.quantile(q)).max(1e-3);
            let (vb, vh) = (value(base_hist), value(head_hist));
            let os_b = quantile_log_se(base_hist, q).unwrap_or(0.0);
            let os_h = quantile_log_se(head_hist, q).unwrap_or(0.0);
            let se = (os_b.powi(2) + level_b.powi(2) + os_h.powi(2) + level_h.powi(2)).sqrt();
            drafts.push(Draft {
                base: Some(vb),
                head: Some(vh),
                // Histogram resolution (3 significant digits) bounds the error from below.
                estimate: Estimate::Normal {
                    est: (vh / vb).ln(),
                    se: se.max(1e-3),
                },
                ..d
            });
        }
    }
    drafts
}

fn error_rate_draft(
    base: &PhaseMeasurement,
    head: &PhaseMeasurement,
    gate: &GateConfig,
    options: &CompareOptions,
) -> Draft {
    let d = Draft::new(Metric::ErrorRate, None, gate.error_rate);
    let series = |p: &PhaseMeasurement| -> Vec<(f64, f64)> {
        answered(p)
            .iter()
            .map(|w| (w.errors as f64, w.completed as f64))
            .collect()
    };
    let rate = |s: &[(f64, f64)]| {
        let (e, c) = s.iter().fold((0.0, 0.0), |(e, c), w| (e + w.0, c + w.1));
        (c > 0.0).then(|| e / c)
    };
    let (sb, sh) = (series(base), series(head));
    if sb.len() < MIN_WINDOWS || sh.len() < MIN_WINDOWS {
        return d.missing(format!(
            "fewer than {MIN_WINDOWS} windows with answers: {} (base), {} (head)",
            sb.len(),
            sh.len()
        ));
    }
    let se = |s: &[(f64, f64)], side: &str| {
        let rates: Vec<f64> = s.iter().map(|(e, c)| e / c).collect();
        block_bootstrap_sd(
            s,
            block_len(&rates),
            options.resamples,
            derive_seed(options.seed, &format!("{side}/error-rate")),
            rate,
        )
        .unwrap_or(0.0)
    };
    let (Some(rb), Some(rh)) = (rate(&sb), rate(&sh)) else {
        return d.missing("no answers".to_owned());
    };
    Draft {
        base: Some(rb),
        head: Some(rh),
        estimate: Estimate::Normal {
            est: rh - rb,
            se: se(&sb, "base").hypot(se(&sh, "head")),
        },
        ..d
    }
}

fn capacity_draft(
    base: Option<&KneeBracket>,
    head: Option<&KneeBracket>,
    gate: &GateConfig,
) -> Option<Draft> {
    let d = Draft::new(Metric::Capacity, None, gate.capacity);
    let (b, h) = match (base, head) {
        (None, None) => return None,
        (Some(b), Some(h)) => (b, h),
        (b, _) => {
            let side = if b.is_none() {
                "the baseline"
            } else {
                "this run"
            };
            return Some(d.missing(format!("{side} has no knee: no ramp was run")));
        }
    };
    let mid = |k: &KneeBracket| match (k.last_held_sessions_per_sec, k.first_broke_sessions_per_sec)
    {
        (Some(a), Some(b)) => Some((a * b).sqrt()),
        _ => None,
    };
    let low = h.last_held_sessions_per_sec.unwrap_or(0.0)
        / b.first_broke_sessions_per_sec.unwrap_or(f64::INFINITY);
    let high = h.first_broke_sessions_per_sec.unwrap_or(f64::INFINITY)
        / b.last_held_sessions_per_sec.unwrap_or(0.0);
    let (mb, mh) = (mid(b), mid(h));
    Some(Draft {
        base: mb,
        head: mh,
        estimate: Estimate::Bracket {
            est: mb.zip(mh).map(|(b, h)| h / b),
            low: if low.is_nan() { 0.0 } else { low },
            high: if high.is_nan() { f64::INFINITY } else { high },
        },
        note: Some(
            "the ratio of the brackets [last held, first broke] of both knees; the estimate is \
             the ratio of their geometric midpoints"
                .to_owned(),
        ),
        ..d
    })
}

/// A side's RSS slope and its standard error: the plan's stored slope when there is one, else a
/// Theil–Sen fit with a block bootstrap over the raw series.
fn side_slope(f: &RunFigures, options: &CompareOptions, side: &str) -> Option<(f64, f64)> {
    if let Some(s) = f.rss_slope {
        let z = normal_quantile(0.5 + RSS_SLOPE_CONFIDENCE / 2.0);
        return Some((s.estimate, (s.high - s.low) / (2.0 * z)));
    }
    if f.rss.len() < MIN_RSS_SAMPLES {
        return None;
    }
    let z = normal_quantile(1.0 - options.alpha);
    theil_sen_bootstrap(
        &f.rss,
        &BootstrapOptions {
            resamples: 1_000,
            confidence: 1.0 - 2.0 * options.alpha,
            seed: derive_seed(options.seed, &format!("{side}/rss")),
            block_len: None,
        },
    )
    .map(|s| (s.estimate, (s.high - s.low) / (2.0 * z)))
}

fn rss_draft(
    base: &RunFigures,
    head: &RunFigures,
    gate: &GateConfig,
    options: &CompareOptions,
) -> Option<Draft> {
    let (sh, se_h) = side_slope(head, options, "head")?;
    let d = Draft::new(Metric::RssSlope, None, gate.rss_slope_bytes_per_sec);
    let base_slope = side_slope(base, options, "base");
    let note = match base_slope {
        Some(_) => "head slope minus baseline slope (Theil–Sen, block bootstrap)".to_owned(),
        None => "the baseline has no RSS slope: this run's slope is judged alone".to_owned(),
    };
    let (sb, se_b) = base_slope.unwrap_or((0.0, 0.0));
    Some(Draft {
        base: base_slope.map(|s| s.0),
        head: Some(sh),
        estimate: Estimate::Normal {
            est: sh - sb,
            se: se_h.hypot(se_b),
        },
        note: Some(note),
        ..d
    })
}

/// Compares `head` with `base` under the thresholds of `gate`.
pub fn compare_with(
    base: &RunFigures,
    head: &RunFigures,
    gate: &GateConfig,
    options: &CompareOptions,
) -> Comparison {
    let mut drafts = Vec::new();
    let mut blockers: Vec<String> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    match (&base.phase, &head.phase) {
        (Some(bp), Some(hp)) => {
            let mut same_load = latency_drafts(bp, hp, gate, options);
            same_load.push(error_rate_draft(bp, hp, gate, options));
            let load_ratio = hp.sessions_per_sec / bp.sessions_per_sec;
            if !(load_ratio.is_finite() && (load_ratio - 1.0).abs() <= options.load_tolerance) {
                let why = format!(
                    "not measured at the same offered load: {:.3} sessions/s (base) vs {:.3} (head)",
                    bp.sessions_per_sec, hp.sessions_per_sec
                );
                for d in &mut same_load {
                    d.forced = true;
                    d.note = Some(why.clone());
                }
                blockers.push(why);
            }
            drafts.extend(same_load);
            for (side, p) in [("the baseline's", bp), ("this run's", hp)] {
                if !p.validity.is_valid() {
                    let reasons: Vec<String> =
                        p.validity.reasons.iter().map(ToString::to_string).collect();
                    blockers.push(format!(
                        "{side} phase `{}` is invalid: {}",
                        p.name,
                        reasons.join("; ")
                    ));
                }
            }
        }
        (b, _) => {
            let side = if b.is_none() {
                "the baseline"
            } else {
                "this run"
            };
            blockers.push(format!(
                "{side} has no phase measured at the comparison's load point (the soak)"
            ));
        }
    }
    if let Some(d) = capacity_draft(base.knee.as_ref(), head.knee.as_ref(), gate) {
        drafts.push(d);
    }
    // The machines (or one machine at two moments) differ: no pass, and a regression only beyond
    // what the difference could explain. `slack` is the largest relative difference seen.
    let mut machine: Vec<String> = Vec::new();
    let mut slack: f64 = 0.0;
    match (base.calibration, head.calibration) {
        (Some(b), Some(h)) => {
            let drift = h / b - 1.0;
            if drift.abs() > options.calibration_tolerance {
                machine.push(format!(
                    "the calibration differs by {:+.1}% between the baseline's machine and this \
                     one, beyond {:.0}%: the numbers are not comparable",
                    drift * 100.0,
                    options.calibration_tolerance * 100.0
                ));
                slack = slack.max(drift.abs());
            }
        }
        (None, None) => warnings.push(
            "no calibration was measured: a drift of the machine between the runs is not detected"
                .to_owned(),
        ),
        (b, _) => warnings.push(format!(
            "{} has no calibration figure: a drift of the machine between the runs is not detected",
            if b.is_none() {
                "the baseline"
            } else {
                "this run"
            }
        )),
    }
    for (side, figures) in [("the baseline", base), ("this run", head)] {
        if let Some(drift) = figures.calibration_drift
            && drift.abs() > options.calibration_tolerance
        {
            machine.push(format!(
                "the machine drifted during {side}: its calibration moved {:+.1}% between before \
                 and after the phases, beyond {:.0}%",
                drift * 100.0,
                options.calibration_tolerance * 100.0
            ));
            slack = slack.max(drift.abs());
        }
    }
    if slack > 0.0 {
        for d in &mut drafts {
            widen_for_machine(d, slack);
        }
    }
    let rss = rss_draft(base, head, gate, options);

    // Holm over the primary family; the secondary metric is judged alone at α.
    let p: Vec<f64> = drafts.iter().map(Draft::p_value).collect();
    let steps = holm(&p, options.alpha);
    let family = p.len().max(1) as f64;
    let mut metrics: Vec<MetricComparison> = drafts
        .into_iter()
        .zip(steps)
        .map(|(d, s)| {
            judge(
                d,
                options.alpha,
                s.level,
                s.rejected,
                options.alpha / family,
            )
        })
        .collect();
    let primaries = metrics.len();
    if let Some(d) = rss {
        metrics.push(judge(d, options.alpha, options.alpha, false, options.alpha));
    }
    let verdict = decide(&metrics, primaries, blockers, machine, warnings);
    Comparison {
        base_commit: base.commit.clone(),
        head_commit: head.commit.clone(),
        alpha: options.alpha,
        metrics,
        verdict,
    }
}

/// The metric's name with its operation, e.g. ``p99 of `login` ``.
pub fn metric_name(m: &MetricComparison) -> String {
    match &m.operation {
        Some(op) => format!("{} of `{op}`", m.metric.label()),
        None if matches!(m.metric, Metric::P50 | Metric::P99) => {
            format!("{} (all operations)", m.metric.label())
        }
        None => m.metric.label().to_owned(),
    }
}

/// A figure on the metric's scale for people: a signed percent change for ratios, percentage
/// points for the error rate, MiB/min for the RSS slope.
pub fn format_change(m: &MetricComparison, value: Option<f64>) -> String {
    let Some(v) = value else {
        return if m.scale == Scale::Ratio && value.is_none() {
            "unbounded".to_owned()
        } else {
            "?".to_owned()
        };
    };
    match m.metric {
        Metric::ErrorRate => format!("{:+.2} pp", v * 100.0),
        Metric::RssSlope => format!("{:+.2} MiB/min", v * 60.0 / (1024.0 * 1024.0)),
        _ => format!("{:+.1}%", (v - 1.0) * 100.0),
    }
}

/// The metric's threshold on its own scale, for people: `+10.0%`, `0.50 pp`, `2.00 MiB/min`.
pub fn format_threshold(m: &MetricComparison) -> String {
    match m.metric {
        Metric::ErrorRate => format!("{:.2} pp", m.threshold * 100.0),
        Metric::RssSlope => format!("{:.2} MiB/min", m.threshold * 60.0 / (1024.0 * 1024.0)),
        _ => format!("{:+.1}%", (m.threshold - 1.0) * 100.0),
    }
}

fn describe(m: &MetricComparison) -> String {
    format!(
        "{} changed {} (interval {} to {} at {:.2}% confidence) against a threshold of {}",
        metric_name(m),
        format_change(m, m.estimate),
        format_change(m, m.low),
        format_change(m, m.high),
        m.confidence * 100.0,
        format_threshold(m)
    )
}

/// Widens a latency or capacity metric's threshold by a machine difference of `slack` (relative):
/// the head must be worse than the threshold *and* than what a machine that much slower could
/// explain before the metric is a regression. Timing-free metrics (error rate) keep theirs.
fn widen_for_machine(d: &mut Draft, slack: f64) {
    if !matches!(d.metric, Metric::P50 | Metric::P99 | Metric::Capacity) {
        return;
    }
    let widened = (1.0 + d.delta) * (1.0 + slack) - 1.0;
    // Capacity's threshold is 1 − δ, which must stay above 0.
    d.delta = if d.metric == Metric::Capacity {
        widened.min(0.99)
    } else {
        widened
    };
    if d.note.is_none() {
        d.note = Some(format!(
            "threshold widened by the {:.1}% calibration difference",
            slack * 100.0
        ));
    }
}

/// Decides the verdict: `blockers` make it inconclusive whatever the metrics say; `machine`
/// (calibration differences) allow a regression beyond the widened thresholds but never a pass.
fn decide(
    metrics: &[MetricComparison],
    primaries: usize,
    blockers: Vec<String>,
    machine: Vec<String>,
    mut warnings: Vec<String>,
) -> Verdict {
    let regressed: Vec<usize> = (0..metrics.len())
        .filter(|&i| metrics[i].outcome == Outcome::Regression)
        .collect();
    let inconclusive: Vec<usize> = (0..primaries)
        .filter(|&i| metrics[i].outcome == Outcome::Inconclusive)
        .collect();
    for m in &metrics[primaries..] {
        if m.outcome == Outcome::Inconclusive {
            warnings.push(format!(
                "{} is inconclusive: {}",
                metric_name(m),
                m.note.clone().unwrap_or_else(|| describe(m))
            ));
        }
    }
    if !blockers.is_empty() {
        let first = blockers[0].clone();
        warnings.extend(blockers.into_iter().skip(1));
        return Verdict {
            outcome: VerdictOutcome::Inconclusive,
            rule_fired: first,
            metrics: Vec::new(),
            warnings,
        };
    }
    if let Some(&first) = regressed.first() {
        let mut rule = format!("regression: {}", describe(&metrics[first]));
        if regressed.len() > 1 {
            rule.push_str(&format!("; {} more metrics regressed", regressed.len() - 1));
        }
        warnings.extend(machine);
        return Verdict {
            outcome: VerdictOutcome::Regression,
            rule_fired: rule,
            metrics: regressed,
            warnings,
        };
    }
    if !machine.is_empty() {
        let mut machine = machine.into_iter();
        let first = machine.next().unwrap_or_default();
        warnings.extend(machine);
        return Verdict {
            outcome: VerdictOutcome::Inconclusive,
            rule_fired: format!("{first}; no metric regressed beyond what that could explain"),
            metrics: Vec::new(),
            warnings,
        };
    }
    if let Some(&first) = inconclusive.first() {
        let m = &metrics[first];
        let mut rule = match (&m.estimate, &m.note) {
            (None, Some(note)) => format!("inconclusive: {}: {note}", metric_name(m)),
            _ => format!(
                "inconclusive: {}; the interval straddles the threshold",
                describe(m)
            ),
        };
        if let Some(d) = m.detectable {
            rule.push_str(&format!(
                "; this run could detect a change of {} or more",
                format_change(
                    m,
                    Some(match (m.metric, m.scale) {
                        (Metric::Capacity, _) => 1.0 - d,
                        (_, Scale::Ratio) => 1.0 + d,
                        (_, Scale::Difference) => d,
                    })
                )
            ));
        }
        if inconclusive.len() > 1 {
            rule.push_str(&format!(
                "; {} more metrics inconclusive",
                inconclusive.len() - 1
            ));
        }
        return Verdict {
            outcome: VerdictOutcome::Inconclusive,
            rule_fired: rule,
            metrics: inconclusive,
            warnings,
        };
    }
    let improved: Vec<usize> = (0..metrics.len())
        .filter(|&i| metrics[i].outcome == Outcome::Improvement)
        .collect();
    let mut rule = format!("pass: all {primaries} primary metrics are within their thresholds");
    if !improved.is_empty() {
        let names: Vec<String> = improved.iter().map(|&i| metric_name(&metrics[i])).collect();
        rule.push_str(&format!("; improved: {}", names.join(", ")));
    }
    Verdict {
        outcome: VerdictOutcome::Pass,
        rule_fired: rule,
        metrics: improved,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{FinishInfo, Outcome as RequestOutcome, PhaseRecorder};
    use rand::{Rng as _, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::time::Duration;

    fn gate() -> GateConfig {
        GateConfig {
            p50: 0.05,
            p99: 0.10,
            capacity: 0.10,
            error_rate: 0.005,
            rss_slope_bytes_per_sec: 2.0 * 1024.0 * 1024.0 / 60.0,
        }
    }

    /// How a synthetic soak is drawn.
    #[derive(Clone, Copy)]
    struct Shape {
        windows: u32,
        per_window: u32,
        /// Every latency is multiplied by this.
        scale: f64,
        /// The slow path (3% of requests, which makes p99) is multiplied by this too.
        tail: f64,
        /// Standard deviation of the log of a window's slowdown (AR(1), φ = 0.7).
        drift: f64,
        /// The share of requests answered wrongly.
        errors: f64,
        sessions_per_sec: f64,
    }

    const SHAPE: Shape = Shape {
        windows: 40,
        per_window: 150,
        scale: 1.0,
        tail: 1.0,
        drift: 0.02,
        errors: 0.0,
        sessions_per_sec: 50.0,
    };

    fn normal(rng: &mut ChaCha8Rng) -> f64 {
        let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// A soak of two operation classes, `fast` and `slow`, drawn from `seed`.
    fn soak(seed: u64, s: Shape) -> PhaseMeasurement {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let names = ["fast".to_owned(), "slow".to_owned()];
        let mut r = PhaseRecorder::new(
            &names,
            Duration::ZERO,
            Duration::from_millis(500),
            Duration::from_secs(1),
        );
        let mut events = Vec::new();
        let mut level = 0.0;
        for w in 0..s.windows {
            level = 0.7 * level + (1.0f64 - 0.49).sqrt() * s.drift * normal(&mut rng);
            for j in 0..s.per_window {
                let intended =
                    Duration::from_secs(u64::from(w)) + Duration::from_secs(1) * j / s.per_window;
                let op = usize::from(j % 3 == 0);
                let body = if op == 0 { 2.0 } else { 4.0 } * (0.3 * normal(&mut rng)).exp();
                let slow = if rng.random::<f64>() < 0.03 {
                    20.0 * (0.2 * normal(&mut rng)).exp() * s.tail
                } else {
                    0.0
                };
                let ms = (body + slow) * s.scale * level.exp();
                let done = intended + Duration::from_secs_f64(ms / 1e3);
                let error = rng.random::<f64>() < s.errors;
                events.push((done, intended, op, error));
            }
        }
        events.sort_by_key(|e| e.0);
        for (done, intended, op, error) in events {
            r.arrival(intended);
            r.sent(op, intended, intended);
            let outcome = if error {
                RequestOutcome::HttpError(500)
            } else {
                RequestOutcome::Ok
            };
            r.completed(op, intended, intended, done, &outcome);
        }
        let end = Duration::from_secs(u64::from(s.windows));
        r.finish(FinishInfo {
            name: "soak".to_owned(),
            seed,
            sessions_per_sec: s.sessions_per_sec,
            arrivals_end: end,
            end,
            max_lag: Duration::from_secs(1),
            max_drop_rate: 0.01,
            generator_cpu: None,
            generator_core: None,
            stopped: None,
        })
    }

    fn figures(phase: PhaseMeasurement) -> RunFigures {
        RunFigures {
            commit: None,
            phase: Some(phase),
            knee: None,
            rss: Vec::new(),
            rss_slope: None,
            calibration: None,
            calibration_drift: None,
        }
    }

    fn fast_options() -> CompareOptions {
        CompareOptions {
            resamples: 300,
            ..CompareOptions::default()
        }
    }

    fn outcome_of(c: &Comparison, metric: Metric, operation: Option<&str>) -> Outcome {
        c.metrics
            .iter()
            .find(|m| m.metric == metric && m.operation.as_deref() == operation)
            .unwrap_or_else(|| panic!("{metric:?} {operation:?} in {c:#?}"))
            .outcome
    }

    #[test]
    fn a_sample_compared_with_itself_never_regresses() {
        for seed in 0..40 {
            let f = figures(soak(seed, SHAPE));
            let c = compare_with(&f, &f, &gate(), &fast_options());
            assert_ne!(c.verdict.outcome, VerdictOutcome::Regression, "seed {seed}");
            for m in &c.metrics {
                assert_ne!(m.outcome, Outcome::Regression, "seed {seed}: {m:?}");
                let none = if m.scale == Scale::Ratio { 1.0 } else { 0.0 };
                assert_eq!(m.estimate, Some(none), "seed {seed}: {m:?}");
            }
        }
    }

    #[test]
    fn two_samples_of_the_same_service_never_regress() {
        // A/A: independent draws of the same distribution, including window drift.
        for seed in 0..40 {
            let base = figures(soak(2 * seed, SHAPE));
            let head = figures(soak(2 * seed + 1, SHAPE));
            let c = compare_with(&base, &head, &gate(), &fast_options());
            assert_ne!(
                c.verdict.outcome,
                VerdictOutcome::Regression,
                "seed {seed}: {}",
                c.verdict.rule_fired
            );
        }
    }

    #[test]
    fn a_machine_difference_forbids_a_pass_but_not_a_clear_regression() {
        let medium = Shape {
            windows: 60,
            per_window: 300,
            ..SHAPE
        };
        let calibrated = |mut f: RunFigures, c: f64| {
            f.calibration = Some(c);
            f
        };
        let base = calibrated(figures(soak(1, medium)), 1000.0);
        // The same service on a machine 25% slower: would pass, is inconclusive.
        let same = calibrated(figures(soak(2, medium)), 750.0);
        let c = compare(&base, &same, &gate());
        assert_eq!(c.verdict.outcome, VerdictOutcome::Inconclusive, "{c:#?}");
        assert!(
            c.verdict
                .rule_fired
                .contains("calibration differs by -25.0%"),
            "{}",
            c.verdict.rule_fired
        );
        // A 2× slower tail is far beyond (1 + 10%)(1 + 25%): still a regression, thresholds widened.
        let slower = calibrated(
            figures(soak(
                2,
                Shape {
                    tail: 2.0,
                    ..medium
                },
            )),
            750.0,
        );
        let c = compare(&base, &slower, &gate());
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression, "{c:#?}");
        let p99 = c
            .metrics
            .iter()
            .find(|m| m.metric == Metric::P99 && m.operation.is_none())
            .or_else(|| c.metrics.iter().find(|m| m.metric == Metric::P99))
            .expect("p99 compared");
        assert!(
            (p99.threshold - 1.1 * 1.25).abs() < 1e-9,
            "threshold widened to (1 + 10%)(1 + 25%): {p99:?}"
        );
        assert!(c.verdict.warnings.iter().any(|w| w.contains("calibration")));
    }

    #[test]
    fn a_thirty_percent_p99_increase_is_a_regression() {
        // 18,000 requests a side: the slow path (3%) holds p99. With 6,000 the same change is
        // found about 85% of the time (51 of 60 seeds) and inconclusive otherwise.
        let medium = Shape {
            windows: 60,
            per_window: 300,
            ..SHAPE
        };
        let base = figures(soak(1, medium));
        let head = figures(soak(
            2,
            Shape {
                tail: 1.3,
                ..medium
            },
        ));
        let c = compare(&base, &head, &gate());
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression, "{c:#?}");
        assert_eq!(outcome_of(&c, Metric::P99, None), Outcome::Regression);
        // The body of the distribution did not move.
        assert_ne!(outcome_of(&c, Metric::P50, None), Outcome::Regression);
        let first = &c.metrics[c.verdict.metrics[0]];
        assert_eq!(first.metric, Metric::P99);
        assert!(first.low.unwrap() > 1.1, "{first:?}");
        assert!(
            c.verdict.rule_fired.starts_with("regression: p99"),
            "{}",
            c.verdict.rule_fired
        );
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression);
    }

    #[test]
    fn a_two_percent_increase_passes_a_ten_percent_gate() {
        let mut g = gate();
        g.p50 = 0.10;
        // p99 needs many requests (STATISTICS.md: 10,000 per class): 36,000 here, 12,000 in the
        // smaller class.
        let big = Shape {
            windows: 60,
            per_window: 600,
            ..SHAPE
        };
        let base = figures(soak(3, big));
        let head = figures(soak(4, Shape { scale: 1.02, ..big }));
        let c = compare(&base, &head, &g);
        assert_eq!(
            c.verdict.outcome,
            VerdictOutcome::Pass,
            "{}",
            c.verdict.rule_fired
        );
        for m in c.metrics.iter().filter(|m| m.metric == Metric::P50) {
            assert_eq!(m.outcome, Outcome::Pass, "{m:?}");
            // The estimate is close to the true 2%.
            assert!((m.estimate.unwrap() - 1.02).abs() < 0.03, "{m:?}");
        }
    }

    #[test]
    fn wide_noise_is_inconclusive_and_says_what_it_could_detect() {
        let noisy = Shape {
            drift: 0.3,
            windows: 12,
            ..SHAPE
        };
        let base = figures(soak(5, noisy));
        let head = figures(soak(
            6,
            Shape {
                scale: 1.08,
                ..noisy
            },
        ));
        let c = compare(&base, &head, &gate());
        assert_eq!(c.verdict.outcome, VerdictOutcome::Inconclusive, "{c:#?}");
        assert!(
            c.verdict.rule_fired.contains("could detect a change of"),
            "{}",
            c.verdict.rule_fired
        );
        let m = &c.metrics[c.verdict.metrics[0]];
        assert!(m.detectable.unwrap() > 0.2, "{m:?}");
    }

    #[test]
    fn holm_gives_the_strongest_evidence_the_strictest_level() {
        let base = figures(soak(7, SHAPE));
        let head = figures(soak(8, Shape { tail: 1.6, ..SHAPE }));
        let c = compare(&base, &head, &gate());
        let primaries: Vec<&MetricComparison> = c.metrics.iter().filter(|m| m.primary).collect();
        let m = primaries.len() as f64;
        let strongest = primaries
            .iter()
            .min_by(|a, b| a.p_value.unwrap().total_cmp(&b.p_value.unwrap()))
            .unwrap();
        assert!((strongest.confidence - (1.0 - 2.0 * 0.01 / m)).abs() < 1e-12);
        // Levels never get stricter as the evidence weakens.
        let mut by_p = primaries.clone();
        by_p.sort_by(|a, b| a.p_value.unwrap().total_cmp(&b.p_value.unwrap()));
        assert!(by_p.windows(2).all(|w| w[0].confidence >= w[1].confidence));
        // 2 percentiles × (all + 2 classes) + error rate.
        assert_eq!(primaries.len(), 7);
    }

    #[test]
    fn more_errors_are_a_regression_and_none_on_both_sides_pass() {
        let base = figures(soak(9, SHAPE));
        let head = figures(soak(
            10,
            Shape {
                errors: 0.03,
                ..SHAPE
            },
        ));
        let c = compare(&base, &head, &gate());
        assert_eq!(outcome_of(&c, Metric::ErrorRate, None), Outcome::Regression);
        let same = compare(&base, &base, &gate());
        let m = same
            .metrics
            .iter()
            .find(|m| m.metric == Metric::ErrorRate)
            .unwrap();
        assert_eq!((m.outcome, m.estimate), (Outcome::Pass, Some(0.0)));
    }

    fn knee(held: Option<f64>, broke: Option<f64>) -> Option<KneeBracket> {
        Some(KneeBracket {
            last_held_sessions_per_sec: held,
            first_broke_sessions_per_sec: broke,
        })
    }

    #[test_case::test_case(knee(Some(30.0), Some(35.0)), Outcome::Regression; "clearly lower")]
    #[test_case::test_case(knee(Some(45.0), Some(55.0)), Outcome::Inconclusive; "overlapping")]
    #[test_case::test_case(knee(Some(50.0), Some(60.0)), Outcome::Pass; "same or better")]
    #[test_case::test_case(knee(Some(60.0), Some(70.0)), Outcome::Improvement; "clearly higher")]
    #[test_case::test_case(knee(None, Some(10.0)), Outcome::Regression; "broke at once")]
    #[test_case::test_case(knee(Some(45.0), None), Outcome::Inconclusive; "never broke below the base")]
    fn capacity_is_judged_by_the_knee_brackets(head_knee: Option<KneeBracket>, expected: Outcome) {
        let phase = soak(11, SHAPE);
        let mut base = figures(phase.clone());
        base.knee = knee(Some(40.0), Some(50.0));
        let mut head = figures(phase);
        head.knee = head_knee;
        let c = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(outcome_of(&c, Metric::Capacity, None), expected, "{c:#?}");
    }

    #[test]
    fn the_same_load_an_invalid_phase_and_the_calibration_are_preconditions() {
        let phase = soak(12, SHAPE);
        let base = figures(phase.clone());
        let rule = |head: &RunFigures, base: &RunFigures| {
            let c = compare_with(base, head, &gate(), &fast_options());
            assert_eq!(c.verdict.outcome, VerdictOutcome::Inconclusive, "{c:#?}");
            c.verdict.rule_fired
        };
        let mut other_load = figures(phase.clone());
        other_load.phase.as_mut().unwrap().sessions_per_sec = 40.0;
        let mut invalid = figures(phase.clone());
        invalid.phase.as_mut().unwrap().validity.reasons.push(
            crate::measure::InvalidReason::Drops {
                rate: 0.05,
                limit: 0.01,
            },
        );
        let mut calibrated_base = base.clone();
        calibrated_base.calibration = Some(1000.0);
        let mut slower_machine = figures(phase.clone());
        slower_machine.calibration = Some(700.0);
        let mut drifting = figures(phase.clone());
        drifting.calibration_drift = Some(0.25);
        let mut no_soak = figures(phase);
        no_soak.phase = None;
        insta::assert_snapshot!([
            rule(&other_load, &base),
            rule(&invalid, &base),
            rule(&slower_machine, &calibrated_base),
            rule(&drifting, &base),
            rule(&no_soak, &base),
        ].join("\n"), @r"
        not measured at the same offered load: 50.000 sessions/s (base) vs 40.000 (head)
        this run's phase `soak` is invalid: 5.00% of arrivals were dropped at the in-flight cap, above the limit of 1.00%
        the calibration differs by -30.0% between the baseline's machine and this one, beyond 20%: the numbers are not comparable; no metric regressed beyond what that could explain
        the machine drifted during this run: its calibration moved +25.0% between before and after the phases, beyond 20%; no metric regressed beyond what that could explain
        this run has no phase measured at the comparison's load point (the soak)
        ");
    }

    fn rss(per_sec: f64, noise: f64, seed: u64) -> Vec<(f64, f64)> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..60)
            .map(|t| {
                let t = f64::from(t);
                (t, 100e6 + per_sec * t + noise * normal(&mut rng))
            })
            .collect()
    }

    #[test]
    fn an_rss_leak_fails_and_a_noisy_slope_only_warns() {
        let phase = soak(13, SHAPE);
        let mib_min = 1024.0 * 1024.0 / 60.0;
        let mut base = figures(phase.clone());
        base.rss = rss(0.0, 50_000.0, 1);
        let mut leaky = figures(phase.clone());
        leaky.rss = rss(8.0 * mib_min, 50_000.0, 2);
        let c = compare_with(&base, &leaky, &gate(), &fast_options());
        assert_eq!(outcome_of(&c, Metric::RssSlope, None), Outcome::Regression);
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression);
        assert!(
            c.verdict
                .rule_fired
                .starts_with("regression: RSS slope changed +7.9"),
            "{}",
            c.verdict.rule_fired
        );

        let mut noisy = figures(phase);
        noisy.rss = rss(2.0 * mib_min, 5e6, 3);
        let c = compare_with(&base, &noisy, &gate(), &fast_options());
        assert_eq!(
            outcome_of(&c, Metric::RssSlope, None),
            Outcome::Inconclusive
        );
        assert_ne!(c.verdict.outcome, VerdictOutcome::Regression);
        assert!(
            c.verdict
                .warnings
                .iter()
                .any(|w| w.starts_with("RSS slope is inconclusive")),
            "{:?}",
            c.verdict.warnings
        );
    }

    #[test]
    fn the_plans_stored_slopes_are_used_when_present() {
        use crate::stats::SlopeEstimate;
        let phase = soak(16, SHAPE);
        let per_min = 1024.0 * 1024.0 / 60.0;
        let slope = |mib: f64, half: f64| SlopeEstimate {
            estimate: mib * per_min,
            low: (mib - half) * per_min,
            high: (mib + half) * per_min,
        };
        let mut base = figures(phase.clone());
        base.rss_slope = Some(slope(0.1, 0.2));
        let mut head = figures(phase);
        head.rss_slope = Some(slope(6.0, 0.5));
        let c = compare_with(&base, &head, &gate(), &fast_options());
        let m = c
            .metrics
            .iter()
            .find(|m| m.metric == Metric::RssSlope)
            .unwrap();
        assert_eq!(m.outcome, Outcome::Regression, "{m:?}");
        assert!(!m.primary);
        head.rss_slope = Some(slope(0.5, 0.5));
        let c = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(outcome_of(&c, Metric::RssSlope, None), Outcome::Pass);
    }

    #[test]
    fn comparisons_are_deterministic_and_serialize() {
        let base = figures(soak(14, SHAPE));
        let head = figures(soak(15, Shape { tail: 1.2, ..SHAPE }));
        let a = compare_with(&base, &head, &gate(), &fast_options());
        let b = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(a, b);
        let json = serde_json::to_string(&a).unwrap();
        let back: Comparison = serde_json::from_str(&json).unwrap();
        assert_eq!(back.verdict, a.verdict);
        assert_eq!(back.metrics.len(), a.metrics.len());
    }

    #[test]
    fn no_baseline_is_a_verdict_with_its_exit_codes() {
        let v = Verdict::no_baseline(vec!["no baseline stored for 3f2a91c".to_owned()]);
        assert_eq!(v.outcome, VerdictOutcome::NoBaseline);
    }
}
