//! Standard errors for the comparison: a seeded moving-block bootstrap over a run's windows
//! (which are autocorrelated), and the order-statistic error of a quantile read from a histogram.
//!
//! The comparison works with standard errors on the log scale (or the absolute scale for rates)
//! and normal intervals rather than bootstrap percentile intervals: the Holm-adjusted levels go
//! down to α/m (0.01/14 ≈ 0.0007 per tail), where a percentile interval would rest on one or two
//! resamples, while a standard error from 2,000 resamples is stable to a few percent.

use crate::measure::LatencyHistogram;
use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The resamples of every bootstrap by default.
pub const DEFAULT_RESAMPLES: usize = 2_000;

/// The moving-block length for `series`: at least ⌈n^(1/3)⌉ (Künsch 1989; Hall, Horowitz and
/// Jing 1995 for the rate) and at least twice its integrated autocorrelation time, capped at n/3.
///
/// The n^(1/3) rule alone is too short for a soak: with 60 windows it gives blocks of 4, which
/// for an AR(1) drift with φ = 0.7 (correlation time 5.7 windows) captures about half the variance
/// of the mean, and intervals came out 1.5 times too narrow in our A/A simulations.
pub fn block_len(series: &[f64]) -> usize {
    let n = series.len();
    let rule = (n as f64).cbrt().ceil();
    let tau = autocorrelation_time(series).unwrap_or(1.0);
    (rule.max((2.0 * tau).ceil()) as usize).clamp(1, (n / 3).max(1))
}

/// The integrated autocorrelation time of `series` (1 for independent points): −1 + 2 Σ of
/// Geyer's (1992) initial monotone sequence of paired autocorrelations. `None` for fewer than 4
/// points or a constant series.
pub fn autocorrelation_time(series: &[f64]) -> Option<f64> {
    let n = series.len();
    if n < 4 {
        return None;
    }
    let mean = series.iter().sum::<f64>() / n as f64;
    let gamma = |k: usize| {
        series[..n - k]
            .iter()
            .zip(&series[k..])
            .map(|(a, b)| (a - mean) * (b - mean))
            .sum::<f64>()
            / n as f64
    };
    let g0 = gamma(0);
    if g0 <= 0.0 {
        return None;
    }
    let mut sum = 0.0;
    let mut last = f64::INFINITY;
    for m in 0..n / 2 {
        let pair = (gamma(2 * m) + gamma(2 * m + 1)) / g0;
        if pair <= 0.0 {
            break;
        }
        let pair = pair.min(last);
        sum += pair;
        last = pair;
    }
    Some((2.0 * sum - 1.0).max(1.0))
}

/// A seed derived from `seed` and a label, so every metric draws its own stream and adding a
/// metric does not change the others' intervals (FNV-1a over the label).
pub fn derive_seed(seed: u64, label: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in label.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^ seed
}

/// The standard deviation of `statistic` over `resamples` moving-block bootstrap resamples of
/// `series` with blocks of `block` points (1 is the ordinary bootstrap). Resamples where the
/// statistic is `None` or not finite are skipped. `None` when `series` is empty or fewer than two
/// draws were usable.
pub fn block_bootstrap_sd<T: Copy>(
    series: &[T],
    block: usize,
    resamples: usize,
    seed: u64,
    mut statistic: impl FnMut(&[T]) -> Option<f64>,
) -> Option<f64> {
    let n = series.len();
    if n == 0 {
        return None;
    }
    let block = block.clamp(1, n);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut resample = Vec::with_capacity(n);
    let (mut count, mut mean, mut m2) = (0.0f64, 0.0f64, 0.0f64);
    for _ in 0..resamples {
        resample.clear();
        while resample.len() < n {
            let start = rng.random_range(0..=n - block);
            let take = block.min(n - resample.len());
            resample.extend_from_slice(&series[start..start + take]);
        }
        if let Some(x) = statistic(&resample).filter(|x| x.is_finite()) {
            // Welford's running variance.
            count += 1.0;
            let d = x - mean;
            mean += d / count;
            m2 += d * (x - mean);
        }
    }
    (count >= 2.0).then(|| (m2 / (count - 1.0)).sqrt())
}

/// The standard error of ln(the `q` quantile) of `histogram` as if its values were independent:
/// half the log distance between the quantiles at `q ± √(q(1−q)/n)` (the normal approximation to
/// the rank of the order statistic). `None` when the histogram is empty.
pub fn quantile_log_se(histogram: &LatencyHistogram, q: f64) -> Option<f64> {
    let count = histogram.count();
    if count == 0 {
        return None;
    }
    let spread = (q * (1.0 - q) / count as f64).sqrt();
    let at = |p: f64| {
        let d = histogram.quantile(p.clamp(0.0, 1.0));
        (d.as_secs_f64() * 1e3).max(1e-3).ln()
    };
    Some((at(q + spread) - at(q - spread)) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn block_bootstrap_is_deterministic_and_matches_the_textbook_se_of_a_mean() {
        // 400 independent-looking values with standard deviation about 1: the SE of the mean is
        // about 1/√400 = 0.05.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let xs: Vec<f64> = (0..400)
            .map(|_| rng.random::<f64>() * 12f64.sqrt())
            .collect();
        let mean = |s: &[f64]| Some(s.iter().sum::<f64>() / s.len() as f64);
        let a = block_bootstrap_sd(&xs, 1, 2_000, 1, mean).unwrap();
        let b = block_bootstrap_sd(&xs, 1, 2_000, 1, mean).unwrap();
        assert_eq!(a, b);
        assert!((0.04..0.06).contains(&a), "{a}");
    }

    #[test]
    fn autocorrelation_time_of_ar1_is_about_its_theoretical_value() {
        // AR(1) with φ = 0.7: τ = (1 + φ)/(1 − φ) ≈ 5.7.
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut x = 0.0;
        let xs: Vec<f64> = (0..20_000)
            .map(|_| {
                x = 0.7 * x + (rng.random::<f64>() - 0.5);
                x
            })
            .collect();
        let tau = autocorrelation_time(&xs).unwrap();
        assert!((4.8..6.6).contains(&tau), "{tau}");
        let iid: Vec<f64> = (0..20_000).map(|_| rng.random::<f64>()).collect();
        let tau = autocorrelation_time(&iid).unwrap();
        assert!((0.9..1.2).contains(&tau), "{tau}");
        assert_eq!(autocorrelation_time(&[1.0; 10]), None);
    }

    #[test]
    fn blocks_see_autocorrelation_that_the_plain_bootstrap_misses() {
        // A strongly autocorrelated AR(1) series (φ = 0.9): the SE of its mean is about
        // √((1+φ)/(1−φ)) ≈ 4.4 times the independent one.
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut x = 0.0;
        let xs: Vec<f64> = (0..1_000)
            .map(|_| {
                x = 0.9 * x + (rng.random::<f64>() - 0.5);
                x
            })
            .collect();
        let mean = |s: &[f64]| Some(s.iter().sum::<f64>() / s.len() as f64);
        let plain = block_bootstrap_sd(&xs, 1, 1_000, 1, mean).unwrap();
        let blocked = block_bootstrap_sd(&xs, 25, 1_000, 1, mean).unwrap();
        assert!(blocked > 2.5 * plain, "plain {plain}, blocked {blocked}");
    }

    #[test]
    fn block_lengths_and_seeds() {
        assert_eq!(block_len(&[]), 1);
        // Alternating values are anti-correlated: the n^(1/3) rule decides.
        let alternating: Vec<f64> = (0..27).map(|i| f64::from(i % 2)).collect();
        assert_eq!(block_len(&alternating), 3);
        // A slow trend-like series is strongly correlated: blocks grow, up to n/3.
        let trend: Vec<f64> = (0..30).map(f64::from).collect();
        assert_eq!(block_len(&trend), 10);
        assert_ne!(derive_seed(1, "p99"), derive_seed(1, "p50"));
    }

    #[test]
    fn quantile_se_shrinks_with_the_square_root_of_n() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut small = LatencyHistogram::new();
        let mut large = LatencyHistogram::new();
        for i in 0..100_000 {
            let d = Duration::from_micros(1_000 + (rng.random::<f64>() * 9_000.0) as u64);
            if i < 1_000 {
                small.record(d);
            }
            large.record(d);
        }
        let s = quantile_log_se(&small, 0.5).unwrap();
        let l = quantile_log_se(&large, 0.5).unwrap();
        // SE ∝ 1/√n: 100 times the requests, a tenth of the error (within histogram resolution).
        assert!((s / l - 10.0).abs() < 2.0, "{s} {l}");
        // Uniform on 1–10 ms: the SE of the median of n = 1,000 is 9/(2·5.5·√1000) ≈ 0.026.
        assert!((s - 0.026).abs() < 0.005, "{s}");
        assert_eq!(quantile_log_se(&LatencyHistogram::new(), 0.5), None);
    }

    fn mean(s: &[f64]) -> Option<f64> {
        Some(s.iter().sum::<f64>() / s.len() as f64)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// A standard deviation is never negative, and a seed gives the same draws every time.
        #[test]
        fn the_sd_is_not_negative_and_a_seed_repeats_it(
            xs in proptest::collection::vec(-1e6f64..1e6, 1..60),
            block in 1usize..10,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let a = block_bootstrap_sd(&xs, block, 50, seed, mean);
            proptest::prop_assert_eq!(a, block_bootstrap_sd(&xs, block, 50, seed, mean));
            let a = a.expect("50 usable draws");
            proptest::prop_assert!(a >= 0.0, "{}", a);
        }

        /// Every resample of a constant series is that series: its statistic never varies.
        #[test]
        fn a_constant_series_has_sd_zero(
            c in -1e6f64..1e6,
            n in 1usize..60,
            block in 1usize..10,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let xs = vec![c; n];
            proptest::prop_assert_eq!(block_bootstrap_sd(&xs, block, 50, seed, mean), Some(0.0));
        }

        /// The block length stays within one point and a third of the series (at least one).
        #[test]
        fn the_block_length_stays_within_bounds(
            xs in proptest::collection::vec(-1e6f64..1e6, 1..200),
        ) {
            let len = block_len(&xs);
            proptest::prop_assert!(len >= 1 && len <= (xs.len() / 3).max(1), "{}", len);
        }
    }
}
