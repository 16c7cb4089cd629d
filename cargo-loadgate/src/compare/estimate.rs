//! The per-metric estimates of a comparison, before the family is judged: each metric's figures on
//! both sides and its estimate (a normal interval on the test scale, a bracket for capacity, or
//! missing with a note). `decide.rs` turns these drafts into outcomes and the verdict.

use super::figures::{KneeBracket, RSS_SLOPE_CONFIDENCE, RunFigures};
use super::options::{CompareOptions, MIN_RSS_SAMPLES, MIN_TAIL_REQUESTS, MIN_WINDOWS};
use crate::config::GateConfig;
use crate::measure::{LatencyHistogram, PhaseMeasurement, Window};
use crate::result::{Metric, MetricNoise, Scale};
use crate::stats::bootstrap::{
    autocorrelation_time, block_bootstrap_sd, block_len, derive_seed, quantile_log_se,
};
use crate::stats::slope::{BootstrapOptions, normal_quantile, theil_sen_bootstrap};
use crate::stats::student::t_cdf;

/// How one metric was estimated, before the family is judged.
#[derive(Clone, Debug)]
pub(super) enum Estimate {
    /// A normal interval on the test scale (ln ratio, or difference) with this standard error.
    Normal { est: f64, se: f64 },
    /// A bracket on the ratio scale (capacity); ends may be 0 or infinite.
    Bracket {
        est: Option<f64>,
        low: f64,
        high: f64,
    },
    /// Per-pair differences of a paired run on the test scale (ln ratio, or difference): the
    /// Hodges–Lehmann estimate with the exact Wilcoxon interval, drawn at the level classified.
    Paired { d: Vec<f64> },
    /// Capacity when both sides held the ramp's highest step: the head lost
    /// nothing the ramp could see, and nothing above the step was measured. A pass within the
    /// ramp, not a hypothesis test: it is no member of Holm's family (docs/decisions.md, "A
    /// service faster than the ramp").
    HeldTop,
    /// Not estimable.
    Missing,
}

/// One metric before the family is judged: its figures, its estimate and its threshold.
#[derive(Clone, Debug)]
pub(super) struct Draft {
    pub(super) metric: Metric,
    pub(super) operation: Option<String>,
    pub(super) primary: bool,
    pub(super) base: Option<f64>,
    pub(super) head: Option<f64>,
    pub(super) estimate: Estimate,
    /// δ: relative for ratios, absolute for differences.
    pub(super) delta: f64,
    /// Forces the outcome to inconclusive, with this note; or only annotates when `estimate` is fine.
    pub(super) note: Option<String>,
    pub(super) forced: bool,
    /// The degrees of freedom of the interval's quantile: infinite (the normal) unless the
    /// standard error rests on a run-to-run variance estimated from few stored runs
    /// (`noise.rs`).
    pub(super) df: f64,
    /// For a bracket: the standard deviation on the ln scale by which the run-to-run noise
    /// widens each end (at the quantile of the level drawn); 0 without it.
    pub(super) spread: f64,
    /// The run-to-run noise folded into the estimate, for the document.
    pub(super) noise: Option<MetricNoise>,
    /// Set when this run's phase was stopped by the `[abort]` limits at the load the baseline
    /// took whole: the metric regressed whatever its interval says (see `compare_with`).
    pub(super) aborted: Option<String>,
    /// Set when the metric may regress but never pass or improve (a capacity the generator's
    /// limit bounds): why.
    pub(super) no_pass: Option<String>,
    /// The accepts that cover this metric (`accept.rs`), until it is classified.
    pub(super) accept: Option<super::accept::DraftAccept>,
}

impl Draft {
    pub(super) fn new(metric: Metric, operation: Option<String>, delta: f64) -> Self {
        // Per-operation latencies are secondary: they warn, the overall figures decide (issue
        // 13, "the same applies in stored mode"). Measured here: an operation's p99 moved ×4
        // and more between A/A runs of the demo's `ci` profile. An operation written with
        // `gate = true` is made primary by `latency_drafts`.
        let primary = metric != Metric::RssSlope && operation.is_none();
        Self {
            metric,
            operation,
            primary,
            base: None,
            head: None,
            estimate: Estimate::Missing,
            delta,
            note: None,
            forced: false,
            df: f64::INFINITY,
            spread: 0.0,
            noise: None,
            aborted: None,
            no_pass: None,
            accept: None,
        }
    }

    pub(super) fn missing(mut self, note: String) -> Self {
        self.estimate = Estimate::Missing;
        self.note = Some(note);
        self
    }

    pub(super) fn scale(&self) -> Scale {
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
    pub(super) fn p_value(&self) -> f64 {
        match &self.estimate {
            _ if self.forced => 1.0,
            _ if self.aborted.is_some() => 0.0,
            Estimate::Normal { est, se } => {
                let tau = self.test_threshold();
                if *se > 0.0 {
                    1.0 - t_cdf((est - tau) / se, self.df)
                } else if *est > tau {
                    0.0
                } else {
                    1.0
                }
            }
            // The bracket's most favourable end against the threshold; with run-to-run noise,
            // how likely an end that low is when the true ratio sits at the threshold.
            Estimate::Bracket { high, .. } if self.spread > 0.0 => {
                1.0 - t_cdf(((1.0 - self.delta).ln() - high.ln()) / self.spread, self.df)
            }
            Estimate::Bracket { high, .. } => {
                if *high < 1.0 - self.delta {
                    0.0
                } else {
                    1.0
                }
            }
            Estimate::Paired { d } => {
                crate::stats::paired::signed_rank_p_value(d, self.test_threshold())
            }
            Estimate::Missing | Estimate::HeldTop => 1.0,
        }
    }
}

/// The overall p50, p99 and error-rate drafts, all missing for the same reason `why`: no phase
/// (or block) was measured at the comparison's load.
pub(super) fn missing_same_load(gate: &GateConfig, why: &str) -> Vec<Draft> {
    [
        (Metric::P50, gate.p50_change),
        (Metric::P99, gate.p99_change),
        (Metric::ErrorRate, gate.error_rate_increase),
    ]
    .into_iter()
    .map(|(metric, delta)| Draft::new(metric, None, delta).missing(why.to_owned()))
    .collect()
}

/// Whether a stop by the `[abort]` limits with reason `reason` names `metric`: p99 for a p99
/// limit, the error rate for an error-rate limit.
pub(super) fn abort_names(reason: &str, metric: Metric) -> bool {
    match metric {
        Metric::P99 => reason.contains("p99 "),
        Metric::ErrorRate => reason.contains("error rate "),
        _ => false,
    }
}

/// `x` when it is finite.
pub(super) fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
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
pub(super) fn level_se(
    phase: &PhaseMeasurement,
    options: &CompareOptions,
    label: &str,
) -> Option<f64> {
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

/// The p50 and p99 of all operations and of each operation class (with two or more).
pub(super) fn latency_drafts(
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
    for (metric, q, relative, floor) in [
        (Metric::P50, 0.5_f64, gate.p50_change, gate.p50_floor),
        (Metric::P99, 0.99, gate.p99_change, gate.p99_floor),
    ] {
        let label = metric.label();
        for (operation, head_hist, base_hist) in &classes {
            let mut d = Draft::new(metric, operation.clone(), relative);
            if let Some(name) = operation {
                d.primary = options.gated_operations.contains(name);
            }
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
            // The absolute floor, as a relative change of the base's figure, where it is larger.
            let delta = match metric {
                Metric::P50 => gate.p50_delta(vb),
                _ => gate.p99_delta(vb),
            };
            let note = (delta > relative).then(|| floor_note(delta, floor, label));
            drafts.push(Draft {
                base: Some(vb),
                head: Some(vh),
                // Histogram resolution (3 significant digits) bounds the error from below.
                estimate: Estimate::Normal {
                    est: (vh / vb).ln(),
                    se: se.max(1e-3),
                },
                delta,
                note,
                ..d
            });
        }
    }
    drafts
}

/// How the note of a latency whose threshold a floor raised begins.
pub(super) const FLOOR_RAISED: &str = "threshold raised to";

/// The note of a latency metric whose relative threshold the absolute `floor` raised to `delta`.
pub(super) fn floor_note(delta: f64, floor: std::time::Duration, label: &str) -> String {
    format!(
        "{FLOOR_RAISED} {:.1}% by the {} floor (`gate.{label}-floor`)",
        delta * 100.0,
        crate::config::format_duration(floor)
    )
}

/// Whether a phase counted its drops at the in-flight cap window by window. Results written
/// before that have drops in their counters and none in their windows; their error rates left the
/// drops out, so a comparison with them leaves them out on both sides.
pub(super) fn drops_recorded(phase: &PhaseMeasurement) -> bool {
    phase.counters.dropped == 0 || phase.windows.windows.iter().any(|w| w.dropped > 0)
}

/// A side's error rate over its windows, with a block-bootstrap standard error: failures (errors
/// of the requests that ended in a window, plus, with `with_drops`, the arrivals dropped at the
/// in-flight cap in it) over the requests that came due there. A window in which everything was
/// dropped counts too. `Err` with the number of windows when there are fewer than
/// [`MIN_WINDOWS`]; `Ok(None)` when nothing ended at all.
pub(super) fn side_error_rate(
    phase: &PhaseMeasurement,
    options: &CompareOptions,
    side: &str,
    with_drops: bool,
) -> Result<Option<(f64, f64)>, usize> {
    let dropped = |w: &Window| if with_drops { w.dropped } else { 0 };
    let series: Vec<(f64, f64)> = phase
        .windows
        .windows
        .iter()
        .filter(|w| w.completed + dropped(w) > 0)
        .map(|w| {
            (
                (w.errors + dropped(w)) as f64,
                (w.completed + dropped(w)) as f64,
            )
        })
        .collect();
    if series.len() < MIN_WINDOWS {
        return Err(series.len());
    }
    let rate = |s: &[(f64, f64)]| {
        let (e, c) = s.iter().fold((0.0, 0.0), |(e, c), w| (e + w.0, c + w.1));
        (c > 0.0).then(|| e / c)
    };
    let Some(r) = rate(&series) else {
        return Ok(None);
    };
    let rates: Vec<f64> = series.iter().map(|(e, c)| e / c).collect();
    let se = block_bootstrap_sd(
        &series,
        block_len(&rates),
        options.resamples,
        derive_seed(options.seed, &format!("{side}/error-rate")),
        rate,
    )
    .unwrap_or(0.0);
    Ok(Some((r, se)))
}

/// The error rate over the windows with answers, head − base.
pub(super) fn error_rate_draft(
    base: &PhaseMeasurement,
    head: &PhaseMeasurement,
    gate: &GateConfig,
    options: &CompareOptions,
) -> Draft {
    let d = Draft::new(Metric::ErrorRate, None, gate.error_rate_increase);
    let with_drops = drops_recorded(base) && drops_recorded(head);
    let (b, h) = match (
        side_error_rate(base, options, "base", with_drops),
        side_error_rate(head, options, "head", with_drops),
    ) {
        (Ok(b), Ok(h)) => (b, h),
        _ => {
            return d.missing(format!(
                "fewer than {MIN_WINDOWS} windows with answers: {} (base), {} (head)",
                answered(base).len(),
                answered(head).len()
            ));
        }
    };
    let (Some((rb, se_b)), Some((rh, se_h))) = (b, h) else {
        return d.missing("no answers".to_owned());
    };
    Draft {
        base: Some(rb),
        head: Some(rh),
        estimate: Estimate::Normal {
            est: rh - rb,
            se: se_b.hypot(se_h),
        },
        ..d
    }
}

/// The capacity from the knee brackets; `None` when neither side ran a ramp.
pub(super) fn capacity_draft(
    base: Option<&KneeBracket>,
    head: Option<&KneeBracket>,
    gate: &GateConfig,
) -> Option<Draft> {
    let d = Draft::new(Metric::Capacity, None, gate.capacity_loss);
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
    // Both held the highest step, the head at least where the base did (the same ramp), neither
    // stopped by its generator: no loss where the ramp looked (`Estimate::HeldTop`).
    if let (Some(held_b), None, Some(held_h), None, None, None) = (
        b.last_held_sessions_per_sec,
        b.first_broke_sessions_per_sec,
        h.last_held_sessions_per_sec,
        h.first_broke_sessions_per_sec,
        b.generator_limit_sessions_per_sec,
        h.generator_limit_sessions_per_sec,
    ) && held_h >= held_b * (1.0 - 1e-9)
    {
        return Some(Draft {
            base: Some(held_b),
            head: Some(held_h),
            estimate: Estimate::HeldTop,
            note: Some(format!(
                "both held the ramp's highest step ({held_b:.3} sessions/s): no capacity lost \
                 where the ramp looked; above it capacity is not compared (a higher \
                 `[ramp] steps` compares it)"
            )),
            ..d
        });
    }
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

/// The RSS slope, head − base (the head alone when the baseline has none); `None` when the
/// head has no slope.
pub(super) fn rss_draft(
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
