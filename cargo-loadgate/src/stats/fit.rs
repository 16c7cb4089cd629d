//! Estimates from counts and samples: the Wilson score interval of a proportion, the
//! Kolmogorov–Smirnov test of the exponential with its mean estimated (Lilliefors' problem, with
//! Stephens' modified statistic and critical values), and empirical quantiles.

use super::normal_quantile;

/// A proportion's point estimate and interval.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Proportion {
    /// `k / n`.
    pub point: f64,
    /// The interval's lower bound.
    pub low: f64,
    /// The interval's upper bound.
    pub high: f64,
}

impl Proportion {
    /// Whether `p` lies in the interval.
    pub fn covers(&self, p: f64) -> bool {
        self.low - 1e-12 <= p && p <= self.high + 1e-12
    }
}

/// The Wilson score interval of `k` successes in `n` trials at two-sided normal quantile `z`.
///
/// Wilson's interval keeps its coverage near the nominal level for small counts and proportions
/// near 0 or 1, where the Wald interval `p ± z·√(p(1−p)/n)` collapses to a point (Brown, Cai and
/// DasGupta 2001, "Interval estimation for a binomial proportion"). With `n = 0` it is `[0, 1]`.
pub fn wilson(k: u64, n: u64, z: f64) -> Proportion {
    if n == 0 {
        return Proportion {
            point: 0.0,
            low: 0.0,
            high: 1.0,
        };
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Proportion {
        point: p,
        low: (center - half).max(0.0),
        high: (center + half).min(1.0),
    }
}

/// The two-sided normal quantile for `family` intervals that hold together with probability at
/// least `confidence` (Bonferroni: each at `1 − (1 − confidence) / family`).
pub fn bonferroni_z(confidence: f64, family: usize) -> f64 {
    normal_quantile(1.0 - (1.0 - confidence) / (2.0 * family.max(1) as f64))
}

/// The Lilliefors test of exponentiality: the sample's Kolmogorov–Smirnov distance to the
/// exponential with the sample's own mean.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExponentialFit {
    /// The samples tested.
    pub samples: usize,
    /// The KS distance `D`.
    pub statistic: f64,
    /// Stephens' modified statistic `(D − 0.2/n)(√n + 0.26 + 0.5/√n)`.
    pub modified: f64,
    /// The critical value of the modified statistic at the test's level (1.308 at 1%).
    pub critical: f64,
    /// Whether the exponential is not rejected at 1%.
    pub fits: bool,
}

/// Stephens' (1974, "EDF statistics for goodness of fit", table 1A, case of the exponential with
/// estimated scale) critical value of the modified statistic at the 1% level.
pub const EXPONENTIAL_KS_CRITICAL_1PCT: f64 = 1.308;

/// Tests `samples` (sorted in place) against the exponential with their mean, at 1%. `None` for
/// fewer than 5 samples or a mean of 0.
pub fn exponential_fit(samples: &mut [f64]) -> Option<ExponentialFit> {
    let n = samples.len();
    if n < 5 {
        return None;
    }
    samples.sort_by(f64::total_cmp);
    let mean = samples.iter().sum::<f64>() / n as f64;
    if mean <= 0.0 || !mean.is_finite() {
        return None;
    }
    let nf = n as f64;
    let d = samples
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = 1.0 - (-x.max(0.0) / mean).exp();
            let above = (i + 1) as f64 / nf - f;
            let below = f - i as f64 / nf;
            above.max(below)
        })
        .fold(0.0, f64::max);
    let modified = (d - 0.2 / nf) * (nf.sqrt() + 0.26 + 0.5 / nf.sqrt());
    Some(ExponentialFit {
        samples: n,
        statistic: d,
        modified,
        critical: EXPONENTIAL_KS_CRITICAL_1PCT,
        fits: modified <= EXPONENTIAL_KS_CRITICAL_1PCT,
    })
}

/// The `q` quantile of sorted `samples` by linear interpolation between order statistics
/// (Hyndman and Fan's type 7, as R and NumPy default to). `None` when empty.
pub fn sorted_quantile(samples: &[f64], q: f64) -> Option<f64> {
    let n = samples.len();
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    Some(samples[lo] + (h - lo as f64) * (samples[hi] - samples[lo]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn wilson_matches_a_hand_computation() {
        // k = 8, n = 10, z = 1.96: center = (0.8 + 0.19208)/1.38416 = 0.716738,
        // half = 1.96/1.38416 · √(0.016 + 0.00096040) = 0.226581: [0.4902, 0.9433].
        let p = wilson(8, 10, 1.96);
        assert!((p.low - 0.490_157).abs() < 1e-5, "{p:?}");
        assert!((p.high - 0.943_319).abs() < 1e-5, "{p:?}");
        assert_eq!(p.point, 0.8);
        assert_eq!(wilson(0, 0, 2.0).high, 1.0);
        let zero = wilson(0, 100, 2.576);
        assert_eq!(zero.low, 0.0);
        assert!(zero.high > 0.0 && zero.high < 0.07, "{zero:?}");
    }

    #[test]
    fn the_exponential_fits_exponential_samples_and_not_fixed_ones() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut rejected = 0;
        for _ in 0..100 {
            let mut xs: Vec<f64> = (0..500)
                .map(|_| -(1.0 - rng.random::<f64>()).ln() * 2.0)
                .collect();
            rejected += u32::from(!exponential_fit(&mut xs).unwrap().fits);
        }
        // At 1%, about 1 of 100 correct samples is rejected; 5 would be 1 in 300 or so.
        assert!(rejected <= 5, "{rejected}");
        let mut fixed: Vec<f64> = (0..500).map(|i| 1.0 + f64::from(i % 7) * 1e-4).collect();
        assert!(!exponential_fit(&mut fixed).unwrap().fits);
        let mut uniform: Vec<f64> = (0..500).map(|_| 1.0 + 2.0 * rng.random::<f64>()).collect();
        assert!(!exponential_fit(&mut uniform).unwrap().fits);
        assert!(exponential_fit(&mut [1.0, 2.0]).is_none());
    }

    #[test]
    fn quantiles_interpolate() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(sorted_quantile(&xs, 0.0), Some(1.0));
        assert_eq!(sorted_quantile(&xs, 0.5), Some(2.5));
        assert_eq!(sorted_quantile(&xs, 1.0), Some(4.0));
        assert_eq!(sorted_quantile(&[], 0.5), None);
    }
}
