//! Slopes of a series over time: the Theil–Sen estimator with a moving-block bootstrap interval,
//! and Sen's classic rank interval for comparison.
//!
//! The soak's series (RSS, p99, threads, fds sampled once a second) are autocorrelated: a window
//! that is slow makes the next one likely slow too. Sen's interval assumes independent errors and
//! is then too narrow, so the interval of record is a percentile interval from a moving-block
//! bootstrap (Künsch 1989), which keeps the dependence within blocks of about n^(1/3) points.
//! Everything here is a pure function of its inputs; the bootstrap is seeded, so the same series
//! gives the same interval.

use super::median::median_in_place;
use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The seed of the bootstrap when the caller has no reason to pick another.
pub const DEFAULT_BOOTSTRAP_SEED: u64 = 0x5eed_510e;

/// Resamples of the bootstrap by default.
pub const DEFAULT_RESAMPLES: usize = 1_000;

/// The confidence of intervals by default.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// Above this many points, the bootstrap works on consecutive means of the series (at most this
/// many), so 1,000 resamples of an O(n²) estimator stay within a fraction of a second. The point
/// estimate always uses every point.
pub const MAX_BOOTSTRAP_POINTS: usize = 400;

/// A slope with its confidence interval, in units of value per unit of time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlopeEstimate {
    /// The Theil–Sen estimate: the median of the slopes between every pair of points.
    pub estimate: f64,
    /// The lower end of the confidence interval.
    pub low: f64,
    /// The upper end of the confidence interval.
    pub high: f64,
}

impl SlopeEstimate {
    /// Whether `value` lies within the interval (ends included).
    pub fn contains(&self, value: f64) -> bool {
        self.low <= value && value <= self.high
    }

    /// Whether the whole interval lies above `threshold`: the slope is beyond it with the
    /// interval's confidence.
    pub fn above(&self, threshold: f64) -> bool {
        self.low > threshold
    }

    /// The same slope in other units: every figure multiplied by `factor`.
    pub fn scaled(&self, factor: f64) -> Self {
        let (a, b) = (self.low * factor, self.high * factor);
        Self {
            estimate: self.estimate * factor,
            low: a.min(b),
            high: a.max(b),
        }
    }
}

/// How the bootstrap interval is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BootstrapOptions {
    /// The number of resamples.
    pub resamples: usize,
    /// The confidence of the percentile interval, in (0, 1).
    pub confidence: f64,
    /// The seed of the resampling.
    pub seed: u64,
    /// The block length; `None` picks ⌈n^(1/3)⌉.
    pub block_len: Option<usize>,
}

impl Default for BootstrapOptions {
    fn default() -> Self {
        Self {
            resamples: DEFAULT_RESAMPLES,
            confidence: DEFAULT_CONFIDENCE,
            seed: DEFAULT_BOOTSTRAP_SEED,
            block_len: None,
        }
    }
}

/// The finite points of `points`, in their order.
fn finite(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect()
}

/// The slopes between every pair of points with distinct times, unsorted.
fn pairwise_slopes(points: &[(f64, f64)], out: &mut Vec<f64>) {
    out.clear();
    for (i, &(xi, yi)) in points.iter().enumerate() {
        for &(xj, yj) in &points[i + 1..] {
            let dx = xj - xi;
            if dx != 0.0 {
                out.push((yj - yi) / dx);
            }
        }
    }
}

/// The Theil–Sen slope of `points` (time, value): the median of the slopes between every pair of
/// points with distinct times. Non-finite points are left out. `None` when fewer than two
/// distinct times remain.
///
/// It is robust: up to 29% of the points may be arbitrarily wrong before the estimate follows
/// them, so one slow window or one odd sample does not make a trend.
pub fn theil_sen(points: &[(f64, f64)]) -> Option<f64> {
    let points = finite(points);
    let mut slopes = Vec::with_capacity(points.len() * points.len().saturating_sub(1) / 2);
    pairwise_slopes(&points, &mut slopes);
    median_in_place(&mut slopes)
}

/// The Theil–Sen intercept of `points` (time, value) for `slope`: the median of
/// value − slope·time, so an outlier does not move the line; `None` without points.
pub fn theil_sen_intercept(points: &[(f64, f64)], slope: f64) -> Option<f64> {
    let mut residuals: Vec<f64> = points.iter().map(|(x, y)| y - slope * x).collect();
    median_in_place(&mut residuals)
}

/// The Theil–Sen slope of `points` with a moving-block bootstrap percentile interval.
///
/// Each resample concatenates blocks of consecutive points (each keeping its own time) starting
/// at uniformly drawn positions until it has as many points as the series; its Theil–Sen slope
/// is one draw. The interval is the (1 − c)/2 and (1 + c)/2 quantiles of the draws. Series longer
/// than [`MAX_BOOTSTRAP_POINTS`] are bootstrapped on consecutive means. `None` when fewer than
/// three finite points with at least two distinct times are given.
pub fn theil_sen_bootstrap(
    points: &[(f64, f64)],
    options: &BootstrapOptions,
) -> Option<SlopeEstimate> {
    let points = finite(points);
    if points.len() < 3 {
        return None;
    }
    let estimate = theil_sen(&points)?;
    let series = if points.len() > MAX_BOOTSTRAP_POINTS {
        bin_means(&points, MAX_BOOTSTRAP_POINTS)
    } else {
        points
    };
    let n = series.len();
    let block = options
        .block_len
        .unwrap_or_else(|| (n as f64).cbrt().ceil() as usize)
        .clamp(1, n);
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let mut resample = Vec::with_capacity(n);
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    let mut draws = Vec::with_capacity(options.resamples);
    for _ in 0..options.resamples.max(1) {
        resample.clear();
        while resample.len() < n {
            let start = rng.random_range(0..=n - block);
            let take = block.min(n - resample.len());
            resample.extend_from_slice(&series[start..start + take]);
        }
        pairwise_slopes(&resample, &mut slopes);
        // A resample made of one repeated block can have a single distinct time; it says nothing.
        if let Some(slope) = median_in_place(&mut slopes) {
            draws.push(slope);
        }
    }
    if draws.is_empty() {
        return None;
    }
    draws.sort_by(f64::total_cmp);
    let tail = (1.0 - options.confidence.clamp(0.0, 1.0)) / 2.0;
    Some(SlopeEstimate {
        estimate,
        low: quantile_sorted(&draws, tail),
        high: quantile_sorted(&draws, 1.0 - tail),
    })
}

/// Consecutive means of `points` in `bins` groups of (nearly) equal size.
fn bin_means(points: &[(f64, f64)], bins: usize) -> Vec<(f64, f64)> {
    let n = points.len();
    (0..bins)
        .filter_map(|b| {
            let chunk = &points[b * n / bins..(b + 1) * n / bins];
            if chunk.is_empty() {
                return None;
            }
            let len = chunk.len() as f64;
            let x = chunk.iter().map(|p| p.0).sum::<f64>() / len;
            let y = chunk.iter().map(|p| p.1).sum::<f64>() / len;
            Some((x, y))
        })
        .collect()
}

/// The `q` quantile of sorted `values` by linear interpolation between order statistics.
fn quantile_sorted(values: &[f64], q: f64) -> f64 {
    let pos = q.clamp(0.0, 1.0) * (values.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    values[lo] + (values[hi] - values[lo]) * frac
}

/// The Theil–Sen slope with Sen's (1968) rank interval at `confidence`.
///
/// With N pairwise slopes sorted and Kendall's S having variance
/// `[n(n−1)(2n+5) − Σ t(t−1)(2t+5)] / 18` (t the sizes of groups of tied values), the interval runs
/// from slope number `(N − C)/2` to slope number `(N + C)/2 + 1`, where `C = z · √Var(S)`. It
/// assumes independent errors, which a soak's windows are not: it is kept for comparison, and the
/// bootstrap interval is the one reported. `None` when fewer than three finite points with at
/// least two distinct times are given.
pub fn sen_interval(points: &[(f64, f64)], confidence: f64) -> Option<SlopeEstimate> {
    let points = finite(points);
    if points.len() < 3 {
        return None;
    }
    let mut slopes = Vec::new();
    pairwise_slopes(&points, &mut slopes);
    if slopes.is_empty() {
        return None;
    }
    let estimate = median_in_place(&mut slopes)?;
    slopes.sort_by(f64::total_cmp);
    let n = points.len() as f64;
    let mut values: Vec<f64> = points.iter().map(|p| p.1).collect();
    values.sort_by(f64::total_cmp);
    let ties: f64 = values
        .chunk_by(|a, b| a == b)
        .map(|g| g.len() as f64)
        .filter(|&t| t > 1.0)
        .map(|t| t * (t - 1.0) * (2.0 * t + 5.0))
        .sum();
    let var_s = ((n * (n - 1.0) * (2.0 * n + 5.0) - ties) / 18.0).max(0.0);
    let z = normal_quantile(0.5 + confidence.clamp(0.0, 1.0) / 2.0);
    let c = z * var_s.sqrt();
    let count = slopes.len() as f64;
    // Ranks are 1-based in Sen's paper; clamp to the slopes there are.
    let rank = |r: f64| (r.round().clamp(1.0, count) as usize) - 1;
    Some(SlopeEstimate {
        estimate,
        low: slopes[rank((count - c) / 2.0)],
        high: slopes[rank((count + c) / 2.0 + 1.0)],
    })
}

/// The standard normal quantile function (Acklam's rational approximation, relative error below
/// 1.2e-9), for `p` in (0, 1); infinite at the ends.
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.024_25;
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand_chacha::ChaCha8Rng;
    use test_case::test_case;

    #[test]
    fn the_intercept_is_the_median_of_the_residuals() {
        let points = [(0.0, 1.0), (1.0, 3.0), (2.0, 5.0), (3.0, 100.0)];
        // Residuals 1, 1, 1, 94 for slope 2: the outlier does not move the line.
        assert_eq!(theil_sen_intercept(&points, 2.0), Some(1.0));
        assert_eq!(theil_sen_intercept(&[], 2.0), None);
    }

    proptest! {
        /// Points on an exact line y = a + b·x have that line's intercept for its slope.
        #[test]
        fn the_intercept_of_points_on_a_line_is_the_lines(
            a in -1e6f64..1e6,
            b in -1e3f64..1e3,
            xs in prop::collection::vec(0.0f64..1e4, 1..50),
        ) {
            let points: Vec<(f64, f64)> = xs.iter().map(|x| (*x, a + b * x)).collect();
            let intercept = theil_sen_intercept(&points, b).unwrap();
            let tolerance = 1e-9 * (a.abs() + b.abs() * 1e4 + 1.0);
            prop_assert!((intercept - a).abs() <= tolerance, "{intercept} vs {a}");
        }
    }

    /// A seeded standard normal draw (Box–Muller), so the tests need no extra crate.
    fn normal(rng: &mut ChaCha8Rng) -> f64 {
        let u1: f64 = rng.random_range(f64::EPSILON..1.0);
        let u2: f64 = rng.random_range(0.0..1.0);
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// `n` points one second apart: `slope · t + noise`, the noise AR(1) with coefficient `phi`.
    fn series(n: usize, slope: f64, sigma: f64, phi: f64, seed: u64) -> Vec<(f64, f64)> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut e = 0.0;
        (0..n)
            .map(|i| {
                e = phi * e + sigma * (1.0 - phi * phi).sqrt() * normal(&mut rng);
                let t = i as f64;
                (t, slope * t + e)
            })
            .collect()
    }

    fn line(n: usize, slope: f64, intercept: f64) -> Vec<(f64, f64)> {
        (0..n)
            .map(|i| (i as f64 * 0.5, intercept + slope * i as f64 * 0.5))
            .collect()
    }

    #[test_case(2.5, 0.0; "rising")]
    #[test_case(-1.25, 100.0; "falling")]
    #[test_case(0.0, 7.0; "flat")]
    #[test_case(4096.0, 1e8; "rss-like magnitudes")]
    fn slope_of_a_perfect_line_is_exact(slope: f64, intercept: f64) {
        let points = line(40, slope, intercept);
        let estimate = theil_sen(&points).expect("enough points");
        assert!(
            (estimate - slope).abs() <= 1e-9 * slope.abs().max(1.0),
            "{estimate}"
        );
        let boot = theil_sen_bootstrap(&points, &BootstrapOptions::default()).expect("enough");
        assert!(
            (boot.low - slope).abs() <= 1e-9 * slope.abs().max(1.0),
            "{boot:?}"
        );
        assert!(
            (boot.high - slope).abs() <= 1e-9 * slope.abs().max(1.0),
            "{boot:?}"
        );
        let sen = sen_interval(&points, 0.95).expect("enough");
        assert!(
            sen.contains(slope) || (sen.low - slope).abs() < 1e-9,
            "{sen:?}"
        );
    }

    /// Fewer resamples keep the property tests quick in debug builds; the properties do not
    /// depend on the count.
    const QUICK: BootstrapOptions = BootstrapOptions {
        resamples: 200,
        confidence: 0.95,
        seed: 9,
        block_len: None,
    };

    #[test]
    fn adding_a_constant_does_not_change_the_slope() {
        for seed in 0..10 {
            let points = series(60, 0.3, 2.0, 0.5, seed);
            let shifted: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x, y + 1234.5)).collect();
            let a = theil_sen_bootstrap(&points, &QUICK).expect("enough");
            let b = theil_sen_bootstrap(&shifted, &QUICK).expect("enough");
            for (u, v) in [(a.estimate, b.estimate), (a.low, b.low), (a.high, b.high)] {
                assert!((u - v).abs() < 1e-9, "seed {seed}: {a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn scaling_values_scales_the_slope() {
        for seed in 0..5 {
            let points = series(60, -0.7, 3.0, 0.3, seed);
            for factor in [3.0, 0.001, -2.0] {
                let scaled: Vec<(f64, f64)> =
                    points.iter().map(|&(x, y)| (x, y * factor)).collect();
                let a = theil_sen_bootstrap(&points, &QUICK)
                    .expect("enough")
                    .scaled(factor);
                let b = theil_sen_bootstrap(&scaled, &QUICK).expect("enough");
                let tol = 1e-9 * a.estimate.abs().max(a.high.abs()).max(1.0);
                assert!((a.estimate - b.estimate).abs() < tol, "{a:?} vs {b:?}");
                assert!((a.low - b.low).abs() < tol, "{a:?} vs {b:?}");
                assert!((a.high - b.high).abs() < tol, "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn shifting_time_does_not_change_the_slope() {
        let points = series(50, 1.5, 1.0, 0.0, 7);
        let shifted: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x + 1e4, y)).collect();
        let a = theil_sen_bootstrap(&points, &BootstrapOptions::default()).expect("enough");
        let b = theil_sen_bootstrap(&shifted, &BootstrapOptions::default()).expect("enough");
        assert!((a.estimate - b.estimate).abs() < 1e-9);
        assert!((a.low - b.low).abs() < 1e-9 && (a.high - b.high).abs() < 1e-9);
    }

    /// Coverage of zero by the interval over 100 seeds of a flat noisy series: (bootstrap, Sen).
    fn flat_coverage(n: usize, phi: f64) -> (usize, usize) {
        let mut boot = 0;
        let mut sen = 0;
        for seed in 0..100 {
            let points = series(n, 0.0, 5.0, phi, 1_000 + seed);
            let options = BootstrapOptions {
                seed,
                ..BootstrapOptions::default()
            };
            boot += usize::from(
                theil_sen_bootstrap(&points, &options)
                    .expect("enough")
                    .contains(0.0),
            );
            sen += usize::from(sen_interval(&points, 0.95).expect("enough").contains(0.0));
        }
        (boot, sen)
    }

    #[test]
    fn flat_white_noise_interval_contains_zero_in_most_seeds() {
        let (boot, sen) = flat_coverage(30, 0.0);
        assert!(boot >= 90, "bootstrap covered 0 in {boot} of 100");
        assert!(sen >= 90, "sen covered 0 in {sen} of 100");
    }

    #[test]
    fn flat_autocorrelated_noise_interval_contains_zero_in_most_seeds() {
        // AR(1) with φ = 0.5, as 1 s windows of a service with a slow GC or a slow cache are.
        let (boot, _sen) = flat_coverage(30, 0.5);
        assert!(boot >= 90, "bootstrap covered 0 in {boot} of 100");
    }

    #[test]
    fn a_clear_trend_is_found_with_an_interval_excluding_zero() {
        // 50 KiB/s of growth over 20 s of 1 s samples with 200 KiB of noise.
        let points = series(20, 50.0 * 1024.0, 200.0 * 1024.0, 0.3, 3);
        let s = theil_sen_bootstrap(&points, &BootstrapOptions::default()).expect("enough");
        assert!(s.low > 0.0, "{s:?}");
        assert!(
            s.contains(50.0 * 1024.0) || (s.estimate / (50.0 * 1024.0) - 1.0).abs() < 0.25,
            "{s:?}"
        );
    }

    #[test]
    fn bootstrap_is_deterministic_for_a_seed() {
        let points = series(40, 0.1, 1.0, 0.4, 11);
        let a = theil_sen_bootstrap(&points, &BootstrapOptions::default());
        let b = theil_sen_bootstrap(&points, &BootstrapOptions::default());
        assert_eq!(a, b);
    }

    #[test]
    fn outliers_do_not_make_a_trend() {
        let mut points = line(30, 0.0, 10.0);
        points[3].1 = 1e9;
        points[29].1 = 1e9;
        assert_eq!(theil_sen(&points), Some(0.0));
    }

    #[test]
    fn long_series_are_bootstrapped_on_means() {
        let points = series(2_000, 2.0, 10.0, 0.5, 5);
        let s = theil_sen_bootstrap(&points, &BootstrapOptions::default()).expect("enough");
        assert!(s.contains(2.0), "{s:?}");
        assert!(s.high - s.low < 0.1, "{s:?}");
    }

    #[test_case(&[]; "empty")]
    #[test_case(&[(1.0, 2.0), (2.0, 3.0)]; "two points")]
    #[test_case(&[(1.0, 2.0), (1.0, 3.0), (1.0, 4.0)]; "one time")]
    #[test_case(&[(1.0, f64::NAN), (2.0, 1.0), (f64::INFINITY, 4.0)]; "non-finite")]
    fn too_little_data_gives_no_interval(points: &[(f64, f64)]) {
        assert_eq!(
            theil_sen_bootstrap(points, &BootstrapOptions::default()),
            None
        );
        assert_eq!(sen_interval(points, 0.95), None);
    }

    #[test]
    fn constant_series_has_a_zero_interval() {
        let points: Vec<(f64, f64)> = (0..10).map(|i| (f64::from(i), 12.0)).collect();
        let s = theil_sen_bootstrap(&points, &BootstrapOptions::default()).expect("enough");
        assert_eq!((s.estimate, s.low, s.high), (0.0, 0.0, 0.0));
        let sen = sen_interval(&points, 0.95).expect("enough");
        assert_eq!((sen.low, sen.high), (0.0, 0.0));
    }

    #[test_case(0.975, 1.959_963_985; "upper 95")]
    #[test_case(0.5, 0.0; "median")]
    #[test_case(0.01, -2.326_347_874; "lower tail")]
    fn normal_quantile_matches_tables(p: f64, z: f64) {
        assert!(
            (normal_quantile(p) - z).abs() < 1e-6,
            "{}",
            normal_quantile(p)
        );
    }

    #[test]
    fn estimate_serializes_as_estimate_low_high() {
        let s = SlopeEstimate {
            estimate: 1.5,
            low: 1.0,
            high: 2.0,
        };
        insta::assert_snapshot!(serde_json::to_string(&s).expect("serializes"), @r#"{"estimate":1.5,"low":1.0,"high":2.0}"#);
    }

    /// Few resamples: the laws below hold for any count, and 64 cases stay quick in debug builds.
    const LAWS: BootstrapOptions = BootstrapOptions {
        resamples: 40,
        confidence: 0.95,
        seed: 3,
        block_len: None,
    };

    /// Values at times 0, 1, 2, …: a series as a soak's windows give it.
    fn at_unit_times(ys: &[f64]) -> Vec<(f64, f64)> {
        ys.iter().enumerate().map(|(i, y)| (i as f64, *y)).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Points on an exact line y = a + b·x, at distinct times, have its slope.
        #[test]
        fn the_slope_of_an_exact_line_is_the_lines(
            a in -1e6f64..1e6,
            b in -1e3f64..1e3,
            step in 0.1f64..10.0,
            n in 2usize..40,
        ) {
            let points: Vec<(f64, f64)> =
                (0..n).map(|i| (i as f64 * step, a + b * i as f64 * step)).collect();
            let slope = theil_sen(&points).unwrap();
            // y is exact to about ulp(|a| + |b|·x), divided by a time difference of at least `step`.
            let tolerance = 1e-12 * (a.abs() + b.abs() * n as f64 * step + 1.0) / step;
            prop_assert!((slope - b).abs() <= tolerance, "{slope} vs {b}");
        }

        /// Adding a constant to every value moves neither the slope nor its interval.
        #[test]
        fn adding_a_constant_changes_no_slope(
            ys in prop::collection::vec(-1e3f64..1e3, 3..30),
            c in -1e6f64..1e6,
        ) {
            let points = at_unit_times(&ys);
            let shifted: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x, y + c)).collect();
            let a = theil_sen_bootstrap(&points, &LAWS).unwrap();
            let b = theil_sen_bootstrap(&shifted, &LAWS).unwrap();
            // Rounding of y + c: at most ulp(1e6) per value, twice per pairwise slope.
            let tolerance = 1e-9;
            for (u, v) in [(a.estimate, b.estimate), (a.low, b.low), (a.high, b.high)] {
                prop_assert!((u - v).abs() <= tolerance, "{a:?} vs {b:?}");
            }
        }

        /// Scaling every value by k scales the slope and its interval by k (a negative k swaps
        /// the interval's ends).
        #[test]
        fn scaling_the_values_scales_the_slope(
            ys in prop::collection::vec(-1e3f64..1e3, 3..30),
            k in prop_oneof![-1e3f64..-1e-3, 1e-3f64..1e3],
        ) {
            let points = at_unit_times(&ys);
            let scaled: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x, y * k)).collect();
            let a = theil_sen_bootstrap(&points, &LAWS).unwrap().scaled(k);
            let b = theil_sen_bootstrap(&scaled, &LAWS).unwrap();
            let tolerance = 1e-9 * (1.0 + k.abs() * 2e3);
            for (u, v) in [(a.estimate, b.estimate), (a.low, b.low), (a.high, b.high)] {
                prop_assert!((u - v).abs() <= tolerance, "{a:?} vs {b:?}");
            }
        }

        /// Sen's rank interval always holds the Theil–Sen estimate (the median slope's rank lies
        /// between its ends at any confidence), and the bootstrap's ends are ordered.
        #[test]
        fn the_interval_contains_the_point_estimate(
            ys in prop::collection::vec(-1e3f64..1e3, 3..30),
            confidence in 0.5f64..0.999,
        ) {
            let points = at_unit_times(&ys);
            let sen = sen_interval(&points, confidence).unwrap();
            prop_assert!(sen.contains(sen.estimate), "{sen:?}");
            prop_assert_eq!(Some(sen.estimate), theil_sen(&points));
            let boot = theil_sen_bootstrap(&points, &LAWS).unwrap();
            prop_assert!(boot.low <= boot.high, "{boot:?}");
        }
    }
}
