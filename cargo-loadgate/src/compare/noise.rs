//! The run-to-run noise of a comparison with a stored baseline (issue 12, item 4).
//!
//! A run's own interval comes from windows inside that run, so it cannot see what moves between
//! runs: another boot, another hour, another neighbour. A stored baseline is another run, so the
//! comparison's interval must carry that variation too. It is estimated per primary metric from
//! stored runs of the same config and environment — the base's first-parent ancestors (the
//! *history*, nearest first, the baseline itself first) and the A/A runs `qualify --save` kept with
//! the baseline — on the metric's test scale (ln for ratios, the difference for the error rate).
//!
//! For a metric with value `x_r = μ + b_r + w_r` in run r (`b_r` the run's own level, SD σ_B;
//! `w_r` its sampling error, SD `s_r`, which the run's own standard error estimates), the spread
//! of stored runs estimates `σ_T² = σ_B² + mean(s_r²)`: it already contains their within-run
//! noise. So `σ̂_B² = max(0, σ̂_T² − mean(ŝ_r²))`, and the comparison's variance is
//! `2σ̂_B² + s_base² + s_head²` — the within-run part counted once, from the two runs compared.
//! Its quantile is Student's t with Satterthwaite's degrees of freedom
//! `ν = (SE²)² · df / (2σ̂_T²)²` (df = runs − 1 over the pooled groups), which is the t with
//! `df` when the compared runs are as noisy inside as the stored ones. The derivation and the
//! pinned coverage are in docs/statistics.md.
//!
//! Fewer than [`MIN_NOISE_RUNS`] runs: the figure is not used; the conservative
//! [`DEFAULT_RUN_NOISE`] applies and the verdict says so. Runs beyond a change point of a metric's
//! history (`stats::change_point`) are not pooled: only the segment nearest the base is used.

use super::estimate::{Draft, Estimate, drops_recorded, level_se, side_error_rate};
use super::figures::RunFigures;
use super::options::{CompareOptions, DETECTION_POWER, MIN_TAIL_REQUESTS};
use crate::config::GateConfig;
use crate::measure::LatencyHistogram;
use crate::result::{Metric, MetricNoise, NoiseSource, NoiseSummary, SkippedAncestors};
use crate::stats::bootstrap::{derive_seed, quantile_log_se};
use crate::stats::change_point::{ChangePointOptions, first_segment_len};
use crate::stats::student::t_quantile;

/// The fewest stored runs a noise figure is used from; with fewer, [`DEFAULT_RUN_NOISE`] applies.
pub const MIN_NOISE_RUNS: usize = 3;

/// The weight of [`DEFAULT_RUN_NOISE`] in a figure estimated from stored runs, in degrees of
/// freedom: the default is a prior worth one more run (a scaled inverse-χ² prior with one degree
/// of freedom, the conjugate for a normal variance).
///
/// Without it, three stored runs that happened to agree made the gate sure of itself: on this
/// machine three history runs with a run-to-run SD of 0.016 (within-run error dominating, so
/// Satterthwaite's df was 107) made the next save of the same binary a p50 regression of +54%
/// (interval +24% … +92%), exit 10 (issue 12, stop 22). With the prior the same runs give a
/// run-to-run SD of 0.08 and Satterthwaite's ν ≈ 6, and that change is inside the interval. Like
/// the default alone, the prior counts within-run noise twice (σ₀ was measured as the whole
/// spread): conservative. Its weight fades as
/// runs are stored: at 20 runs it moves a run-to-run SD of 0.05 to 0.057.
pub const PRIOR_DF: f64 = 1.0;

/// The conservative run-to-run standard deviations used when fewer than [`MIN_NOISE_RUNS`] runs
/// are stored, per run, on each metric's test scale.
///
/// Measured on this project's shared 2-core machine (issue 12): 11 runs of the same binary of the
/// demo with its `ci` profile in a container, one after another on a machine otherwise idle
/// (`bench/verdicts.sh demo-service ci 10 none`, 2026-12-02), gave a sample SD of ln(p50) of 0.123
/// and of ln(p99) of 0.641 over all operations (per operation 0.11–0.14 and 0.59–1.02). The
/// defaults round those up: p50 0.13, p99 0.65. They are the whole run-to-run spread, within-run
/// noise included, so adding the runs' own errors on top is conservative. An earlier default
/// (0.070 and 0.199, from the largest A/A moves of +22% and −43% taken as 2 SD) let 2 of those 10
/// A/A runs regress. Capacity has no A/A measurement of its own (the demo's knee lay above the
/// ramp) and moves with the machine's speed as the median does, so it takes the p50 figure. The
/// error rate of the services measured did not move between A/A runs (none had errors): a tenth
/// of a percentage point per run is a guard, a fifth of the default threshold.
pub const DEFAULT_RUN_NOISE: DefaultNoise = DefaultNoise {
    p50: 0.13,
    p99: 0.65,
    error_rate: 0.001,
    capacity: 0.13,
};

/// Run-to-run standard deviations per metric, on the test scale (see [`DEFAULT_RUN_NOISE`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DefaultNoise {
    /// ln of the median latency.
    pub p50: f64,
    /// ln of the 99th percentile.
    pub p99: f64,
    /// The error rate (a fraction).
    pub error_rate: f64,
    /// ln of the capacity.
    pub capacity: f64,
}

impl DefaultNoise {
    /// The figure of `metric`; 0 for the secondary RSS slope, which has none.
    pub fn of(&self, metric: Metric) -> f64 {
        match metric {
            Metric::P50 => self.p50,
            Metric::P99 => self.p99,
            Metric::ErrorRate => self.error_rate,
            Metric::Capacity => self.capacity,
            Metric::RssSlope => 0.0,
        }
    }
}

/// The stored runs a noise figure is estimated from.
#[derive(Clone, Debug, Default)]
pub struct NoiseRuns {
    /// Stored results of the base's first-parent ancestors with the same config and environment,
    /// nearest first, the baseline itself first.
    pub history: Vec<RunFigures>,
    /// The A/A runs `qualify --save` kept with the baseline (same commit).
    pub qualify: Vec<RunFigures>,
    /// The ancestors passed over while collecting `history`.
    pub skipped: SkippedAncestors,
}

/// Which metric a figure belongs to: the metric and its operation class (`None`: all).
pub(super) type Key = (Metric, Option<String>);

/// One metric's run-to-run figure.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Figure {
    /// σ̂_B²: the variance between runs beyond their own sampling error.
    pub(super) between_var: f64,
    /// σ̂_T²: the variance of the stored runs' values (0 when unknown: the default).
    pub(super) total_var: f64,
    /// Degrees of freedom of `total_var`; infinite for the default.
    pub(super) df: f64,
    /// The mean variance of the stored runs' own sampling errors (0 for the default): what one
    /// run of this config on this machine adds by itself.
    pub(super) within_var: f64,
    /// For the document.
    pub(super) noise: MetricNoise,
}

impl Figure {
    /// The default figure of `metric`, with the runs there were.
    fn default_for(metric: Metric, runs: usize, excluded: usize) -> Self {
        let sd = DEFAULT_RUN_NOISE.of(metric);
        Self {
            between_var: sd * sd,
            total_var: 0.0,
            df: f64::INFINITY,
            within_var: 0.0,
            noise: MetricNoise {
                source: NoiseSource::Default,
                runs: runs as u32,
                run_sd: sd,
                df: None,
                excluded: excluded as u32,
            },
        }
    }

    /// The standard error and degrees of freedom of a comparison whose runs' own standard error
    /// is `se_within` (√(s_base² + s_head²)), with this run-to-run noise added for both runs.
    pub(super) fn combine(&self, se_within: f64) -> (f64, f64) {
        let var = se_within * se_within + 2.0 * self.between_var;
        let uncertain = 2.0 * self.total_var;
        let df = if self.df.is_finite() && uncertain > 0.0 {
            // Satterthwaite: only 2σ̂_T² is estimated (with `df`); the rest is taken as known.
            (var * var * self.df / (uncertain * uncertain)).max(1.0)
        } else {
            f64::INFINITY
        };
        (var.sqrt(), df)
    }
}

/// A figure from stored runs' values and their own sampling variances, nearest first:
/// `history` (searched for a change point; only the segment nearest the base is used) and
/// `qualify` (one commit, no change possible), pooled, then shrunk toward the prior: a run-to-run
/// SD `prior.0` worth `prior.1` degrees of freedom ([`DEFAULT_RUN_NOISE`] and [`PRIOR_DF`]).
/// `None` with fewer than [`MIN_NOISE_RUNS`] runs or too few degrees of freedom; the second value
/// is how many history runs lie beyond a change point.
pub(super) fn estimate_figure(
    history: &[(f64, f64)],
    qualify: &[(f64, f64)],
    change_points: &ChangePointOptions,
    prior: (f64, f64),
) -> (Option<Figure>, usize) {
    let values: Vec<f64> = history.iter().map(|p| p.0).collect();
    let kept = first_segment_len(&values, change_points);
    let segment = &history[..kept];
    let excluded = history.len() - kept;
    let group = |g: &[(f64, f64)]| -> (f64, usize) {
        if g.len() < 2 {
            return (0.0, 0);
        }
        let mean = g.iter().map(|p| p.0).sum::<f64>() / g.len() as f64;
        (g.iter().map(|p| (p.0 - mean).powi(2)).sum(), g.len() - 1)
    };
    let (ss_h, df_h) = group(segment);
    let (ss_q, df_q) = group(qualify);
    let runs = segment.len() + qualify.len();
    let df = df_h + df_q;
    if runs < MIN_NOISE_RUNS || df < MIN_NOISE_RUNS - 1 {
        return (None, excluded);
    }
    let used: Vec<&(f64, f64)> = segment.iter().chain(qualify).collect();
    let within = used.iter().map(|p| p.1).sum::<f64>() / used.len() as f64;
    // The prior's spread is the default between runs plus these runs' own sampling error, as the
    // default alone is used (`Figure::default_for` adds nothing for within-run noise).
    let (prior_sd, prior_df) = prior;
    let prior_total = prior_sd * prior_sd + within;
    let df = df as f64 + prior_df;
    let total_var = (ss_h + ss_q + prior_df * prior_total) / df;
    let source = match (df_h > 0, df_q > 0) {
        (true, true) => NoiseSource::HistoryAndQualify,
        (false, true) => NoiseSource::Qualify,
        _ => NoiseSource::History,
    };
    let between_var = (total_var - within).max(0.0);
    let figure = Figure {
        between_var,
        total_var,
        df,
        within_var: within,
        noise: MetricNoise {
            source,
            runs: runs as u32,
            run_sd: between_var.sqrt(),
            df: Some(df),
            excluded: excluded as u32,
        },
    };
    (Some(figure), excluded)
}

/// The smallest true change of `metric` a comparison would call a regression with
/// [`DETECTION_POWER`] if it alone moved, judged at one-sided `level` (α/m for a primary metric):
/// `(1 + δ) · exp((t(1 − level) + t(power)) · se) − 1` for latency, `δ + (…) · se` for the error
/// rate, and for capacity the loss `1 − (1 − δ) / (width · exp((…) · se))` with `width` the
/// knee bracket's width factor (1 when unknown, which gives a floor). `se` is on the test scale,
/// its quantiles Student's t with `df` (infinite: the normal).
pub fn detectable_change(
    metric: Metric,
    delta: f64,
    se: f64,
    df: f64,
    level: f64,
    width: f64,
) -> f64 {
    let q = t_quantile(1.0 - level, df) + t_quantile(DETECTION_POWER, df);
    match metric {
        Metric::Capacity => 1.0 - (1.0 - delta) / (width * (q * se).exp()),
        Metric::P50 | Metric::P99 => (1.0 + delta) * (q * se).exp() - 1.0,
        Metric::ErrorRate | Metric::RssSlope => delta + q * se,
    }
}

/// A threshold a profile can reach on this machine: the smallest change of one metric (all
/// operations) a stored comparison can decide, and what it rests on.
#[derive(Clone, Debug, PartialEq)]
pub struct Reachable {
    /// The metric.
    pub metric: Metric,
    /// The smallest detectable change: relative for latency (0.57 = +57%) and capacity (a loss),
    /// absolute for the error rate.
    pub change: f64,
    /// The configured threshold it is compared with (δ).
    pub threshold: f64,
    /// The smallest threshold an unchanged head passes at half the time: its interval at α lies
    /// within `1 + this` when its estimate is 0 (same scale as `change`). When it exceeds
    /// `threshold`, unchanged code cannot be expected to pass.
    pub pass_threshold: f64,
    /// Where the noise figure came from and how many runs it rests on.
    pub noise: MetricNoise,
    /// Whether the figure includes a run's own sampling error (measured by the stored runs), or is
    /// the run-to-run floor alone.
    pub with_within: bool,
}

/// The run-to-run noise of a comparison with a stored baseline: one figure per primary metric.
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseModel {
    figures: Vec<(Key, Figure)>,
    summary: NoiseSummary,
    /// History runs per metric; a metric without a figure of its own gets the default with these.
    history_runs: usize,
    qualify_runs: usize,
}

/// Each primary metric's value in one run and the variance of its own sampling error, on the
/// test scale. `label` seeds the bootstraps.
pub(super) fn run_points(
    f: &RunFigures,
    options: &CompareOptions,
    label: &str,
) -> Vec<(Key, f64, f64)> {
    let mut points = Vec::new();
    if let Some(phase) = &f.phase {
        if let Some(level) = level_se(phase, options, &format!("{label}/level")) {
            let total = phase.total();
            let mut classes: Vec<(Option<String>, &LatencyHistogram)> =
                vec![(None, &total.latency)];
            if phase.operations.len() >= 2 {
                classes.extend(
                    phase
                        .operations
                        .iter()
                        .map(|o| (Some(o.name.clone()), &o.latency)),
                );
            }
            for (metric, q) in [(Metric::P50, 0.5_f64), (Metric::P99, 0.99)] {
                for (operation, hist) in &classes {
                    let need = (MIN_TAIL_REQUESTS / q.min(1.0 - q)).ceil();
                    if (hist.count() as f64) < need {
                        continue;
                    }
                    let value = (hist.quantile(q).as_secs_f64() * 1e3).max(1e-3).ln();
                    let os = quantile_log_se(hist, q).unwrap_or(0.0);
                    points.push(((metric, operation.clone()), value, os * os + level * level));
                }
            }
        }
        if let Ok(Some((rate, se))) = side_error_rate(phase, options, label, drops_recorded(phase))
        {
            points.push(((Metric::ErrorRate, None), rate, se * se));
        }
    }
    if let Some(k) = &f.knee
        && let (Some(held), Some(broke)) =
            (k.last_held_sessions_per_sec, k.first_broke_sessions_per_sec)
        && held > 0.0
        && broke >= held
    {
        // The bracket's own resolution: uniform on the ln scale over its width.
        let width = (broke / held).ln();
        points.push((
            (Metric::Capacity, None),
            0.5 * (held * broke).ln(),
            width * width / 12.0,
        ));
    }
    points
}

/// The noise model of `runs`: per primary metric, its run-to-run figure from the history and the
/// qualify runs, or the default.
pub fn noise_model(runs: &NoiseRuns, options: &CompareOptions) -> NoiseModel {
    let points = |set: &[RunFigures], name: &str| -> Vec<Vec<(Key, f64, f64)>> {
        set.iter()
            .enumerate()
            .map(|(i, f)| run_points(f, options, &format!("noise/{name}/{i}")))
            .collect()
    };
    let history = points(&runs.history, "history");
    let qualify = points(&runs.qualify, "qualify");
    let mut keys: Vec<Key> = Vec::new();
    for (key, _, _) in history.iter().chain(&qualify).flatten() {
        if !keys.contains(key) {
            keys.push(key.clone());
        }
    }
    let of = |set: &[Vec<(Key, f64, f64)>], key: &Key| -> Vec<(f64, f64)> {
        set.iter()
            .filter_map(|run| run.iter().find(|p| &p.0 == key).map(|p| (p.1, p.2)))
            .collect()
    };
    let figures = keys
        .into_iter()
        .map(|key| {
            let (h, q) = (of(&history, &key), of(&qualify, &key));
            let label = format!(
                "noise/change/{}/{}",
                key.0.as_str(),
                key.1.as_deref().unwrap_or("")
            );
            let cp = ChangePointOptions {
                seed: derive_seed(options.seed, &label),
                ..ChangePointOptions::default()
            };
            let prior = (DEFAULT_RUN_NOISE.of(key.0), PRIOR_DF);
            let (figure, excluded) = estimate_figure(&h, &q, &cp, prior);
            let figure = figure.unwrap_or_else(|| {
                Figure::default_for(key.0, h.len() - excluded + q.len(), excluded)
            });
            (key, figure)
        })
        .collect();
    let (df_h, df_q) = (
        runs.history.len().saturating_sub(1),
        runs.qualify.len().saturating_sub(1),
    );
    let source = match (df_h > 0, df_q > 0) {
        _ if df_h + df_q < MIN_NOISE_RUNS - 1
            || runs.history.len() + runs.qualify.len() < MIN_NOISE_RUNS =>
        {
            NoiseSource::Default
        }
        (true, true) => NoiseSource::HistoryAndQualify,
        (false, true) => NoiseSource::Qualify,
        _ => NoiseSource::History,
    };
    NoiseModel {
        figures,
        summary: NoiseSummary {
            source,
            history_runs: runs.history.len() as u32,
            qualify_runs: runs.qualify.len() as u32,
            skipped: runs.skipped.clone(),
        },
        history_runs: runs.history.len(),
        qualify_runs: runs.qualify.len(),
    }
}

impl NoiseModel {
    /// The model when nothing is stored but the baseline: every metric gets the default.
    pub fn default_only(skipped: SkippedAncestors) -> Self {
        noise_model(
            &NoiseRuns {
                skipped,
                ..NoiseRuns::default()
            },
            &CompareOptions::default(),
        )
    }

    /// Where the figures came from, for the document.
    pub fn summary(&self) -> &NoiseSummary {
        &self.summary
    }

    /// The figure of `metric` for `operation` (`None`: all operations): its own, or the default.
    pub(super) fn figure(&self, metric: Metric, operation: Option<&str>) -> Figure {
        self.figures
            .iter()
            .find(|((m, o), _)| *m == metric && o.as_deref() == operation)
            .map(|(_, f)| f.clone())
            .unwrap_or_else(|| {
                Figure::default_for(metric, self.history_runs + self.qualify_runs, 0)
            })
    }

    /// The per-run SD and degrees of freedom of `metric` (all operations), for the smallest
    /// detectable change `check` and `qualify` quote.
    pub fn run_sd(&self, metric: Metric) -> (f64, Option<f64>) {
        let f = self.figure(metric, None);
        (f.between_var.sqrt(), f.df.is_finite().then_some(f.df))
    }

    /// The smallest change per primary metric (all operations) a stored comparison under `gate`
    /// can decide with this noise, at α/`family` (Holm's strictest level over `family` primary
    /// metrics) and [`DETECTION_POWER`]: what `check` and `qualify` state. A run's own sampling
    /// error is the stored runs' mean (twice: base and head); with the default it is unknown and
    /// the figure is a floor. Capacity is left out when no stored run has a knee bracket and the
    /// profile has no ramp (`with_capacity`).
    pub fn reachable(
        &self,
        gate: &GateConfig,
        alpha: f64,
        family: usize,
        with_capacity: bool,
    ) -> Vec<Reachable> {
        let level = alpha / family.max(1) as f64;
        let mut out = Vec::new();
        for (metric, delta) in [
            (Metric::P50, gate.p50_change),
            (Metric::P99, gate.p99_change),
            (Metric::ErrorRate, gate.error_rate_increase),
            (Metric::Capacity, gate.capacity_loss),
        ] {
            if metric == Metric::Capacity && !with_capacity {
                continue;
            }
            let figure = self.figure(metric, None);
            let (se, df) = figure.combine((2.0 * figure.within_var).sqrt());
            let half = t_quantile(1.0 - alpha, df) * se;
            out.push(Reachable {
                metric,
                change: detectable_change(metric, delta, se, df, level, 1.0),
                threshold: delta,
                pass_threshold: match metric {
                    Metric::Capacity => 1.0 - (-half).exp(),
                    Metric::P50 | Metric::P99 => half.exp() - 1.0,
                    Metric::ErrorRate | Metric::RssSlope => half,
                },
                with_within: figure.within_var > 0.0,
                noise: figure.noise,
            });
        }
        out
    }

    /// Folds the run-to-run noise into every primary metric's estimate.
    pub(super) fn apply(&self, drafts: &mut [Draft]) {
        for d in drafts.iter_mut().filter(|d| d.primary) {
            let figure = self.figure(d.metric, d.operation.as_deref());
            match d.estimate {
                Estimate::Normal { est, se } => {
                    let (se, df) = figure.combine(se);
                    d.estimate = Estimate::Normal { est, se };
                    d.df = df;
                }
                Estimate::Bracket { .. } => {
                    let (spread, df) = figure.combine(0.0);
                    d.spread = spread;
                    d.df = df;
                }
                // Pairs measured side by side carry no run-to-run noise: nothing to fold in.
                Estimate::Paired { .. } => continue,
                // Both held the top step: an observation of each side, not an estimate that
                // run-to-run noise could move.
                Estimate::HeldTop => continue,
                Estimate::Missing => {}
            }
            let mut noise = figure.noise;
            noise.df = d.df.is_finite().then_some(d.df);
            d.noise = Some(noise);
        }
    }

    /// What the verdict should say about the noise figures: the default, and change points.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.summary.source == NoiseSource::Default {
            out.push(format!(
                "fewer than {MIN_NOISE_RUNS} stored runs of this config and machine ({} stored, {} \
                 from qualify): the run-to-run noise is the conservative default (per run: p50 \
                 ±{:.1}%, p99 ±{:.1}%); store baselines of more commits, or keep qualify's A/A \
                 runs with `cargo loadgate qualify --save`",
                self.history_runs,
                self.qualify_runs,
                DEFAULT_RUN_NOISE.p50 * 100.0,
                DEFAULT_RUN_NOISE.p99 * 100.0
            ));
        }
        for ((metric, operation), f) in &self.figures {
            if f.noise.excluded > 0 {
                out.push(format!(
                    "{}{}: {} older stored run(s) lie beyond a change point and were not pooled \
                     into its noise figure",
                    metric.label(),
                    operation
                        .as_deref()
                        .map(|o| format!(" {o}"))
                        .unwrap_or_default(),
                    f.noise.excluded
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::compare_with;
    use crate::compare::testkit::{SHAPE, Shape, fast_options, figures, gate, normal, soak};
    use crate::stats::student::t_quantile;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn the_defaults_follow_from_the_measured_aa_spread() {
        // p50 and p99 (ms) of all operations in 11 A/A runs of the demo's `ci` profile, the
        // baseline first (bench/verdicts.sh demo-service ci 10 none, 2026-12-02).
        let p50 = [
            0.381, 0.383, 0.476, 0.425, 0.493, 0.418, 0.42, 0.39, 0.35, 0.489, 0.503,
        ];
        let p99 = [
            1.033, 1.184, 7.255, 1.257, 2.573, 1.467, 2.935, 0.946, 0.897, 2.255, 2.815,
        ];
        let sd_ln = |v: &[f64]| {
            let l: Vec<f64> = v.iter().map(|x: &f64| x.ln()).collect();
            let mean = l.iter().sum::<f64>() / l.len() as f64;
            (l.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (l.len() - 1) as f64).sqrt()
        };
        let (m50, m99) = (sd_ln(&p50), sd_ln(&p99));
        assert!(
            (m50 - 0.123).abs() < 0.001 && (m99 - 0.641).abs() < 0.001,
            "{m50} {m99}"
        );
        // The defaults are the measured spread, rounded up, never below it.
        let defaults = DEFAULT_RUN_NOISE;
        assert!(defaults.p50 >= m50 && defaults.p50 < m50 + 0.01);
        assert!(defaults.p99 >= m99 && defaults.p99 < m99 + 0.01);
        assert_eq!(defaults.capacity, defaults.p50);
    }

    /// One synthetic series: `k` stored runs and a head, each `μ + σ_B·Z + s·Z'`, the head moved
    /// by `delta`; the baseline is the first stored run, as the lookup returns it.
    struct Draw {
        history: Vec<(f64, f64)>,
        head: f64,
    }

    fn draw(rng: &mut ChaCha8Rng, k: usize, sigma_b: f64, s: f64, delta: f64) -> Draw {
        let mut run = |shift: f64| shift + sigma_b * normal(rng) + s * normal(rng);
        let history = (0..k).map(|_| (run(0.0), s * s)).collect();
        Draw {
            history,
            head: run(delta),
        }
    }

    /// How an interval is formed in [`coverage`].
    #[derive(Clone, Copy)]
    enum Model {
        /// The runs' own standard errors only (the interval before the noise model).
        WithinOnly,
        /// The noise model with this prior (SD, df); the prior's SD is also the default a figure
        /// falls back to when a spurious change point leaves fewer than 3 runs, as in `run`.
        Runs(f64, f64),
    }

    /// No prior: the stored runs alone.
    const NO_PRIOR: (f64, f64) = (0.0, 0.0);

    /// The model as `run` uses it for p50.
    const P50_MODEL: Model = Model::Runs(DEFAULT_RUN_NOISE.p50, PRIOR_DF);

    /// The share of `seeds` intervals at two-sided `confidence` that cover the true change: `k`
    /// stored runs with between-run SD `sigma_b` and within-run SD `s`.
    fn coverage(seeds: u64, k: usize, sigma_b: f64, s: f64, confidence: f64, model: Model) -> f64 {
        let delta = 0.1;
        let cp = ChangePointOptions {
            permutations: 49,
            ..ChangePointOptions::default()
        };
        let mut covered = 0;
        for seed in 0..seeds {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let d = draw(&mut rng, k, sigma_b, s, delta);
            let est = d.head - d.history[0].0;
            let se_within = s * 2f64.sqrt();
            let (se, df) = match model {
                Model::Runs(prior_sd, prior_df) => {
                    let (figure, _) = estimate_figure(&d.history, &[], &cp, (prior_sd, prior_df));
                    let fallback = || Figure {
                        between_var: prior_sd * prior_sd,
                        total_var: 0.0,
                        df: f64::INFINITY,
                        within_var: 0.0,
                        noise: Figure::default_for(Metric::P50, 0, 0).noise,
                    };
                    figure.unwrap_or_else(fallback).combine(se_within)
                }
                Model::WithinOnly => (se_within, f64::INFINITY),
            };
            let q = t_quantile(0.5 + confidence / 2.0, df);
            covered += u32::from((est - q * se..=est + q * se).contains(&delta));
        }
        f64::from(covered) / seeds as f64
    }

    #[test]
    fn the_interval_covers_the_true_change_at_its_level_and_the_within_only_one_does_not() {
        // The stored runs' estimator alone (no prior), as drawn from the model it assumes.
        // 2,000 seeds: a binomial share at 90% has an SD of 0.67 points, at 98% 0.31 points; the
        // tolerance below the level is 3 SDs (4 at 98%). Above it, 4 points: the baseline is one
        // of the pooled runs, so a baseline far from the others also widens the spread, which
        // makes the interval conservative with few runs (measured: 92.6% at k = 5, 91.1% at
        // k = 20, 98.8% for 98% at k = 10). Between-run noise is twice the within-run error, as
        // in the A/A runs.
        let runs_alone = Model::Runs(0.2, 0.0);
        for (k, confidence, tolerance) in [(5, 0.90, 0.02), (20, 0.90, 0.02), (10, 0.98, 0.012)] {
            let got = coverage(2_000, k, 0.10, 0.05, confidence, runs_alone);
            eprintln!("k = {k}, confidence {confidence}: coverage {got}");
            assert!(
                (confidence - tolerance..=confidence + 0.04).contains(&got),
                "k = {k}: coverage {got} at {confidence}"
            );
            let old = coverage(2_000, k, 0.10, 0.05, confidence, Model::WithinOnly);
            eprintln!("k = {k}, confidence {confidence}: within-only coverage {old}");
            assert!(
                old < confidence - 0.2,
                "k = {k}: within-only coverage {old}"
            );
        }
        // Without between-run noise the model does not over-widen much: it still covers at its
        // level (t quantiles make it somewhat conservative, never anti-conservative).
        let got = coverage(2_000, 10, 0.0, 0.05, 0.90, runs_alone);
        eprintln!("no between-run noise: coverage {got}");
        assert!((0.88..=0.97).contains(&got), "{got}");
    }

    #[test]
    fn the_prior_keeps_coverage_when_it_is_wrong_either_way() {
        // `run`'s p50 model (the default 0.13 as a prior of one df) on runs whose true
        // between-run SD is far below it, equal to it, and three times it, at the gate's 98%:
        // never below the level by more than 4 binomial SDs (1.2 points). Measured (2,000 seeds,
        // within-run SD 0.05): k = 3: 100%, 99.9%, 97.8%; k = 10: 100%, 99.4%, 98.2%.
        for k in [3, 10] {
            for sigma_b in [0.02, 0.13, 0.40] {
                let got = coverage(2_000, k, sigma_b, 0.05, 0.98, P50_MODEL);
                eprintln!("k = {k}, sigma_b {sigma_b}: coverage {got}");
                assert!(got >= 0.968, "k = {k}, sigma_b {sigma_b}: coverage {got}");
            }
        }
    }

    #[test]
    fn three_runs_that_agree_do_not_make_a_regression_of_the_next_state_of_the_machine() {
        // Stop 22's false regression, on its own numbers: three stored runs of one binary with
        // p50 0.190, 0.193 and 0.187 ms (run-to-run SD 0.016, each run's own SE 1%), then a run of
        // the same binary at +54% whose own SE is 7% (with the base's, se_within 0.072). At the
        // gate's strictest level (α/m = 0.01/4, one-sided) the stored runs alone call it a
        // regression beyond +5%; with the prior it is not.
        let cp = ChangePointOptions::default();
        let history: Vec<(f64, f64)> = [0.190_f64, 0.193, 0.187]
            .iter()
            .map(|ms| (ms.ln(), 0.01 * 0.01))
            .collect();
        let est = 1.54_f64.ln();
        let lower = |prior: (f64, f64)| {
            let (figure, _) = estimate_figure(&history, &[], &cp, prior);
            let (se, df) = figure.expect("three runs").combine(0.072);
            (est - t_quantile(1.0 - 0.01 / 4.0, df) * se, df)
        };
        let (alone, df_alone) = lower(NO_PRIOR);
        assert!(
            alone > 1.05_f64.ln() && df_alone > 50.0,
            "{alone} {df_alone}"
        );
        let (with_prior, df) = lower((DEFAULT_RUN_NOISE.p50, PRIOR_DF));
        assert!(with_prior < 1.05_f64.ln() && df < 10.0, "{with_prior} {df}");
    }

    #[test]
    fn fewer_than_three_runs_give_no_figure_and_a_step_is_not_pooled() {
        let cp = ChangePointOptions::default();
        assert!(
            estimate_figure(&[(0.0, 0.0), (0.1, 0.0)], &[], &cp, NO_PRIOR)
                .0
                .is_none()
        );
        assert!(
            estimate_figure(&[(0.0, 0.0)], &[(0.1, 0.0)], &cp, NO_PRIOR)
                .0
                .is_none()
        );
        // Two qualify runs and two history runs: 2 df, 4 runs: enough, pooled.
        let pooled = [(0.0, 0.0), (0.1, 0.0)];
        let (f, _) = estimate_figure(&pooled, &[(0.5, 0.0), (0.6, 0.0)], &cp, NO_PRIOR);
        let f = f.expect("pooled");
        assert_eq!(f.noise.source, NoiseSource::HistoryAndQualify);
        // Each group around its own mean: (0.005 + 0.005) / 2.
        assert!((f.total_var - 0.005).abs() < 1e-12, "{f:?}");
        // The prior adds its spread with the weight of one more degree of freedom.
        let (f, _) = estimate_figure(&pooled, &[(0.5, 0.0), (0.6, 0.0)], &cp, (0.13, 1.0));
        let f = f.expect("pooled");
        assert!((f.total_var - (0.01 + 0.0169) / 3.0).abs() < 1e-12, "{f:?}");
        assert_eq!(f.df, 3.0);
        // A history with a step of 10 SDs after 8 runs: only the 8 nearest are pooled.
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let history: Vec<(f64, f64)> = (0..16)
            .map(|i| {
                (
                    0.02 * normal(&mut rng) + if i >= 8 { 0.2 } else { 0.0 },
                    0.0,
                )
            })
            .collect();
        let (f, excluded) = estimate_figure(&history, &[], &cp, NO_PRIOR);
        assert_eq!(excluded, 8);
        let f = f.unwrap();
        assert!(f.between_var.sqrt() < 0.04, "{f:?}");
        assert_eq!(f.noise.runs, 8);
    }

    #[test]
    fn stored_runs_own_noise_is_not_counted_twice() {
        // Runs that differ only by their own sampling error: no between-run variance is left.
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let history: Vec<(f64, f64)> = (0..20)
            .map(|_| (0.05 * normal(&mut rng), 0.05f64.powi(2) * 1.5))
            .collect();
        let (f, _) = estimate_figure(&history, &[], &ChangePointOptions::default(), NO_PRIOR);
        let f = f.unwrap();
        assert_eq!(f.between_var, 0.0, "{f:?}");
        let (se, _) = f.combine(0.07);
        assert!((se - 0.07).abs() < 1e-12);
    }

    fn shifted(seed: u64, level: f64) -> RunFigures {
        figures(soak(
            seed,
            Shape {
                scale: level.exp(),
                ..SHAPE
            },
        ))
    }

    #[test]
    fn a_stored_comparison_carries_the_noise_and_says_where_it_came_from() {
        // Base and head differ by a run-to-run level shift of 25%: within-only intervals call it a
        // regression; with a history whose runs move as much, it is not one.
        let base = shifted(1, 0.0);
        let head = shifted(2, 0.22);
        let plain = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(
            plain.verdict.outcome,
            crate::result::VerdictOutcome::Regression
        );
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut history = vec![base.clone()];
        history.extend((0..7).map(|i| shifted(10 + i, 0.15 * normal(&mut rng))));
        let runs = NoiseRuns {
            history,
            qualify: Vec::new(),
            skipped: SkippedAncestors {
                different_config: 2,
                different_environment: 1,
                unreadable: 0,
            },
        };
        let options = CompareOptions {
            noise: Some(noise_model(&runs, &fast_options())),
            ..fast_options()
        };
        let c = compare_with(&base, &head, &gate(), &options);
        assert_ne!(
            c.verdict.outcome,
            crate::result::VerdictOutcome::Regression,
            "{}",
            c.verdict.rule_fired
        );
        let noise = c.noise.as_ref().unwrap();
        assert_eq!(noise.source, NoiseSource::History);
        insta::assert_snapshot!(noise.describe(), @"run-to-run noise: from stored history (8 stored run(s), 0 qualify run(s); the default weighs as one more); 3 ancestor result(s) skipped: 2 different config, 1 different environment");
        let p50 = c
            .metrics
            .iter()
            .find(|m| m.metric == Metric::P50 && m.operation.is_none())
            .unwrap();
        let n = p50.noise.as_ref().unwrap();
        assert_eq!((n.source, n.runs), (NoiseSource::History, 8));
        assert!(n.df.is_some() && n.run_sd > 0.05, "{n:?}");

        // With the baseline alone, the default applies and the verdict says so.
        let options = CompareOptions {
            noise: Some(noise_model(
                &NoiseRuns {
                    history: vec![base.clone()],
                    ..NoiseRuns::default()
                },
                &fast_options(),
            )),
            ..fast_options()
        };
        let c = compare_with(&base, &head, &gate(), &options);
        assert_eq!(c.noise.as_ref().unwrap().source, NoiseSource::Default);
        assert!(
            c.verdict
                .warnings
                .iter()
                .any(|w| w.contains("conservative default")),
            "{:?}",
            c.verdict.warnings
        );
        assert!(c.metrics.iter().filter(|m| m.primary).all(|m| {
            m.noise
                .as_ref()
                .is_some_and(|n| n.source == NoiseSource::Default)
        }));
    }

    #[test]
    fn reachable_thresholds_follow_the_noise_figure() {
        // The default for the demo's `ci` family (4 primary metrics): p50 needs
        // 1.05 · exp((z(1 − 0.01/4) + z(0.8)) · √2 · 0.13) − 1 ≈ +105%.
        let model = NoiseModel::default_only(SkippedAncestors::default());
        let r = model.reachable(&gate(), 0.01, 4, true);
        let p50 = &r[0];
        assert_eq!(p50.metric, Metric::P50);
        assert!((p50.change - 1.054).abs() < 0.003, "{p50:?}");
        assert!(!p50.with_within && p50.pass_threshold > p50.threshold);
        assert_eq!(r.len(), 4);
        assert_eq!(model.reachable(&gate(), 0.01, 16, false).len(), 3);
        // Quiet stored runs (level SD 1%): the smallest detectable p50 change shrinks as runs
        // are stored, and it includes the runs' own sampling error. The prior (the default, one
        // df) keeps it from shrinking at once: 8 runs give a run-to-run SD of about
        // 0.13/√8 = 0.046 (measured: 0.047, detectable +56%), 20 runs about 0.13/√20 = 0.029.
        let quiet = |runs: u64| {
            let mut rng = ChaCha8Rng::seed_from_u64(4);
            let history: Vec<RunFigures> = (0..runs)
                .map(|i| shifted(40 + i, 0.01 * normal(&mut rng)))
                .collect();
            let model = noise_model(
                &NoiseRuns {
                    history,
                    ..NoiseRuns::default()
                },
                &fast_options(),
            );
            model.reachable(&gate(), 0.01, 16, false)[0].clone()
        };
        let (eight, twenty) = (quiet(8), quiet(20));
        assert!(eight.with_within && eight.change < 0.6, "{eight:?}");
        assert!((0.04..0.06).contains(&eight.noise.run_sd), "{eight:?}");
        assert!(
            twenty.change < eight.change - 0.1 && twenty.noise.run_sd < 0.035,
            "{twenty:?}"
        );
        let q = eight;
        assert_eq!(q.noise.source, NoiseSource::History);
    }
}
