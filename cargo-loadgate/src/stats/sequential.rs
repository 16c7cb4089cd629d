//! The sequential design of adaptive paired runs (`[paired] adaptive = true`, issue 13): pairs are
//! added until the verdict decides or the budget of pairs ends, with the error rate stated.
//!
//! The design is a group-sequential **repeated confidence interval** design (Jennison & Turnbull
//! 1989; *Group Sequential Methods*, 2000, ch. 9) with a **Pocock-type constant boundary**. The
//! verdict looks at the pairs after the first `m₁` and then every `k` pairs up to a maximum N;
//! at every look the Hodges–Lehmann estimate gets its exact Wilcoxon interval at one nominal
//! one-sided level α′ < α, chosen so that a standard Brownian motion observed at the looks'
//! information crosses the constant boundary z = Φ⁻¹(1 − α′) with probability α. The intervals
//! of all looks then hold their true value together with probability at least 1 − 2α, so
//! stopping at the first look whose interval lies wholly above 1 + δ (a regression) or wholly
//! below it (a pass) calls a false regression with probability at most α, and a false pass with
//! probability at most α, whatever the stopping rule and wherever the true ratio lies. A look
//! whose interval straddles the threshold continues; at the last look it is inconclusive.
//!
//! Pocock's constant boundary, rather than O'Brien–Fleming's, spends α evenly over the looks, so
//! a clear regression stops early; its price is a wider interval at the last look (α′ ≈ α/4
//! at 7 looks and α = 0.01). The signed-rank statistic's increments are not exactly independent
//! normal ones: the canonical joint distribution holds asymptotically (Jennison & Turnbull §11),
//! and the error rate at 10–40 pairs is checked by simulation in the tests.
//!
//! Everything here is a pure function of its inputs.

use super::holm::normal_cdf;
use super::paired::{PairedEstimate, critical_count, min_pairs, wilcoxon_interval_with};
use super::slope::normal_quantile;
use crate::result::Scale;

/// Why a sequential design cannot be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SequentialError {
    /// The pairs between looks must be at least one.
    #[error("the pairs between looks must be at least 1")]
    ZeroStep,
    /// The overall level is outside (0, ½).
    #[error("the one-sided level must lie in (0, 0.5), not {0}")]
    Alpha(f64),
    /// The maximum number of pairs is below what the exact test needs at the design's level.
    #[error(
        "{max_pairs} pairs cannot reach the one-sided level {alpha} of a sequential design: the \
         exact signed-rank test needs at least {needed} pairs at its last look"
    )]
    TooFewPairs {
        /// The maximum asked for.
        max_pairs: usize,
        /// The overall one-sided level.
        alpha: f64,
        /// The fewest pairs that would do.
        needed: usize,
    },
}

/// What a look of the sequential design concluded for one metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LookDecision {
    /// The whole interval lies above the threshold: stop, a regression.
    Regression,
    /// The whole interval lies below the threshold: stop, within the threshold (an improvement
    /// is a pass too).
    Pass,
    /// The interval straddles the threshold and pairs remain: add pairs up to the next look.
    Continue,
    /// The interval straddles the threshold at the last look: inconclusive.
    Inconclusive,
}

/// One look of the sequential design at one metric.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Look {
    /// The number of pairs seen.
    pub pairs: usize,
    /// The repeated confidence interval at the design's nominal level.
    pub interval: PairedEstimate,
    /// What it concluded.
    pub decision: LookDecision,
}

/// A group-sequential design with a Pocock-type constant boundary over repeated Wilcoxon
/// intervals (see the module's documentation for what it guarantees).
#[derive(Clone, Debug, PartialEq)]
pub struct SequentialDesign {
    looks: Vec<usize>,
    alpha: f64,
    boundary: f64,
    /// The Wilcoxon critical count at each look at the nominal level.
    critical: Vec<Option<(usize, f64)>>,
}

impl SequentialDesign {
    /// The design that looks every `look_every` pairs up to `max_pairs` (always a look) at overall
    /// one-sided level `alpha` per side. The first look is at the first multiple of `look_every`
    /// where the exact Wilcoxon can reach the nominal level; looks before it could never decide
    /// and would only widen the boundary.
    pub fn new(look_every: usize, max_pairs: usize, alpha: f64) -> Result<Self, SequentialError> {
        if look_every == 0 {
            return Err(SequentialError::ZeroStep);
        }
        if !(alpha > 0.0 && alpha < 0.5) {
            return Err(SequentialError::Alpha(alpha));
        }
        let needed = min_pairs(alpha);
        if max_pairs < needed {
            return Err(SequentialError::TooFewPairs {
                max_pairs,
                alpha,
                needed,
            });
        }
        // Fewer looks lower the boundary, which may let an earlier look reach the level: iterate
        // to the fixed point (the first look only moves later, so this ends).
        let mut nominal = alpha;
        let mut design = Self::with_first(look_every, max_pairs, alpha, needed);
        for _ in 0..64 {
            let first = min_pairs(nominal).max(needed);
            design = Self::with_first(look_every, max_pairs, alpha, first);
            let next = design.nominal_alpha();
            if min_pairs(next) <= design.looks[0] {
                break;
            }
            nominal = next;
        }
        if min_pairs(design.nominal_alpha()) > max_pairs {
            return Err(SequentialError::TooFewPairs {
                max_pairs,
                alpha,
                needed: min_pairs(design.nominal_alpha()),
            });
        }
        Ok(design)
    }

    fn with_first(look_every: usize, max_pairs: usize, alpha: f64, first: usize) -> Self {
        let first = first.div_ceil(look_every) * look_every;
        let mut looks: Vec<usize> = (first..max_pairs).step_by(look_every).collect();
        looks.push(max_pairs);
        let boundary = pocock_boundary(&looks, alpha);
        let nominal = 1.0 - normal_cdf(boundary);
        let critical = looks.iter().map(|&n| critical_count(n, nominal)).collect();
        Self {
            looks,
            alpha,
            boundary,
            critical,
        }
    }

    /// The numbers of pairs at which the verdict looks, ascending; the last is the maximum.
    pub fn looks(&self) -> &[usize] {
        &self.looks
    }

    /// The most pairs the design runs.
    pub fn max_pairs(&self) -> usize {
        *self.looks.last().unwrap_or(&0)
    }

    /// The overall one-sided level per side: the chance of a false regression (or of a false
    /// pass) over all looks together.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The constant boundary on the z scale (Pocock's c for these looks and α).
    pub fn boundary(&self) -> f64 {
        self.boundary
    }

    /// The one-sided level every look's interval is drawn at, 1 − Φ(c).
    pub fn nominal_alpha(&self) -> f64 {
        1.0 - normal_cdf(self.boundary)
    }

    /// The look at the pairs `d` seen so far (on the test scale: ln ratios, or differences) for
    /// a metric with threshold `delta` on `scale`; `None` when `d.len()` is not a look or a value
    /// is not finite (the caller leaves pairs without a figure out before counting).
    pub fn look(&self, d: &[f64], scale: Scale, delta: f64) -> Option<Look> {
        let pairs = d.len();
        let at = self.looks.iter().position(|&n| n == pairs)?;
        if d.iter().any(|x| !x.is_finite()) {
            // A pair without a figure changes n; the cached count would not be the right one.
            return None;
        }
        let interval = wilcoxon_interval_with(d, scale, self.nominal_alpha(), self.critical[at])?;
        let threshold = match scale {
            Scale::Ratio => 1.0 + delta,
            Scale::Difference => delta,
        };
        let decision = if interval.above(threshold) {
            LookDecision::Regression
        } else if interval.below(threshold) {
            LookDecision::Pass
        } else if pairs >= self.max_pairs() {
            LookDecision::Inconclusive
        } else {
            LookDecision::Continue
        };
        Some(Look {
            pairs,
            interval,
            decision,
        })
    }

    /// The approximate chance that a true change of `change` (on `scale`) beyond the threshold
    /// `delta` is called a regression by the last look, with per-pair SD `sigma_d` on the test
    /// scale: Φ(θ √(N · 3/π) / σ_d − c), θ the change beyond the threshold on the test scale.
    /// A lower bound of the design's power up to the small-sample loss of the Wilcoxon, which
    /// the tests measure.
    pub fn approximate_power(&self, change: f64, sigma_d: f64, scale: Scale, delta: f64) -> f64 {
        let theta = match scale {
            Scale::Ratio => change.ln_1p() - delta.ln_1p(),
            Scale::Difference => change - delta,
        };
        let n = self.max_pairs() as f64 * super::paired::WILCOXON_EFFICIENCY;
        normal_cdf(theta * n.sqrt() / sigma_d - self.boundary)
    }
}

/// Pocock's constant boundary c for looks at the given information (numbers of pairs) and
/// overall one-sided level `alpha`: the c with P(S_k > c √n_k for some k) = α, S a sum of
/// independent standard normal increments. Found by bisection over [`crossing_probability`].
pub fn pocock_boundary(looks: &[usize], alpha: f64) -> f64 {
    let (mut low, mut high) = (
        normal_quantile(1.0 - alpha),
        normal_quantile(1.0 - alpha / looks.len().max(1) as f64),
    );
    if looks.len() <= 1 {
        return low;
    }
    // The crossing probability falls as c rises; Bonferroni's c is an upper bound.
    for _ in 0..32 {
        let mid = (low + high) / 2.0;
        if crossing_probability(looks, mid) > alpha {
            low = mid;
        } else {
            high = mid;
        }
    }
    (low + high) / 2.0
}

/// The probability that the partial sums S_k of independent N(0, 1) increments, observed at the
/// looks' information n₁ < n₂ < …, cross z = c at some look (S_k > c √n_k): the recursive
/// numerical integration of Armitage, McPherson and Rowe (1969). The density of S on the
/// continuation region is carried from look to look on grids of one common step (12 points per
/// SD of the smallest increment), each ending exactly on its look's boundary and reaching 8 SD
/// below the mean, integrated by the trapezoid rule; with one step the kernel between two grids
/// depends only on the difference of indices, so it is tabulated once per look.
pub fn crossing_probability(looks: &[usize], c: f64) -> f64 {
    let Some(&first) = looks.first() else {
        return 0.0;
    };
    let phi = |x: f64| (-0.5 * x * x).exp() / std::f64::consts::TAU.sqrt();
    let increment = |k: usize| {
        let prev = if k == 0 { 0 } else { looks[k - 1] };
        looks[k].saturating_sub(prev).max(1) as f64
    };
    let h = (0..looks.len())
        .map(|k| increment(k).sqrt())
        .fold(f64::INFINITY, f64::min)
        / 12.0;
    // Grid k: u_m = upper_k − h·m for m = 0 … count_k − 1.
    let upper = |k: usize| c * (looks[k] as f64).sqrt();
    let count = |k: usize| (((c + 8.0) * (looks[k] as f64).sqrt() / h).ceil() as usize + 1).max(2);
    let trapezoid = |m: usize, len: usize| if m == 0 || m + 1 == len { h / 2.0 } else { h };
    let n1 = (first as f64).sqrt();
    let mut total = 1.0 - normal_cdf(c);
    let mut len = count(0);
    // The density times the trapezoid weight, on grid k − 1.
    let mut mass: Vec<f64> = (0..len)
        .map(|m| trapezoid(m, len) * phi((upper(0) - h * m as f64) / n1) / n1)
        .collect();
    for k in 1..looks.len() {
        let sd = increment(k).sqrt();
        let offset = upper(k) - upper(k - 1);
        // Exit: the next increment carries S above the boundary.
        total += mass
            .iter()
            .enumerate()
            .map(|(m, w)| w * (1.0 - normal_cdf((offset + h * m as f64) / sd)))
            .sum::<f64>();
        if k + 1 == looks.len() {
            break;
        }
        let next_len = count(k);
        // s_j − u_i = offset − h (j − i): the kernel at t = j − i + len − 1.
        let kernel: Vec<f64> = (0..next_len + len - 1)
            .map(|t| phi((offset - h * (t as f64 - (len - 1) as f64)) / sd) / sd)
            .collect();
        mass = (0..next_len)
            .map(|j| {
                let density: f64 = mass
                    .iter()
                    .enumerate()
                    .map(|(i, w)| w * kernel[j + len - 1 - i])
                    .sum();
                trapezoid(j, next_len) * density
            })
            .collect();
        len = next_len;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::paired::tests::{normal, t3};
    use crate::stats::paired::wilcoxon_interval;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn pocock_constants_match_the_published_tables() {
        // One look is the fixed design.
        assert!((pocock_boundary(&[10], 0.01) - normal_quantile(0.99)).abs() < 1e-12);
        // Pocock (1977), Jennison & Turnbull Table 2.1 (two-sided 0.05, which is one-sided 0.025
        // to three decimals at these c): K = 2 → 2.178, K = 5 → 2.413.
        let c2 = pocock_boundary(&[10, 20], 0.025);
        let c5 = pocock_boundary(&[10, 20, 30, 40, 50], 0.025);
        assert!((c2 - 2.178).abs() < 0.005, "{c2}");
        assert!((c5 - 2.413).abs() < 0.005, "{c5}");
        // The information scale does not matter, only its ratios.
        assert!((pocock_boundary(&[3, 6], 0.025) - c2).abs() < 0.005);
    }

    #[test]
    fn the_design_looks_from_where_the_exact_test_can_decide() {
        let d = SequentialDesign::new(5, 40, 0.01).unwrap();
        // Seven looks at α = 0.01: the nominal level is about 0.0023 (c ≈ 2.83), which needs 9
        // pairs (2⁻⁹ = 0.00195): the first multiple of 5 from there is 10.
        assert_eq!(d.looks(), [10, 15, 20, 25, 30, 35, 40]);
        assert!((2.7..3.0).contains(&d.boundary()), "{}", d.boundary());
        assert!(min_pairs(d.nominal_alpha()) <= 10);
        assert_eq!(d.max_pairs(), 40);
        assert_eq!(d.alpha(), 0.01);
        // An uneven last look is kept.
        assert_eq!(
            SequentialDesign::new(4, 22, 0.01).unwrap().looks(),
            [12, 16, 20, 22]
        );
        assert_eq!(
            SequentialDesign::new(0, 40, 0.01),
            Err(SequentialError::ZeroStep)
        );
        assert_eq!(
            SequentialDesign::new(5, 40, 0.5),
            Err(SequentialError::Alpha(0.5))
        );
        assert!(matches!(
            SequentialDesign::new(5, 6, 0.01),
            Err(SequentialError::TooFewPairs { needed: 7, .. })
        ));
        assert_eq!(d.look(&[0.0; 11], Scale::Ratio, 0.05), None);
    }

    /// Runs the design on `series` synthetic runs whose pairs have centre ln(`ratio`) and noise
    /// `sigma` × `noise`, stopping at the first look that decides. Returns (regressions, passes,
    /// mean pairs used).
    fn simulate(
        design: &SequentialDesign,
        series: usize,
        ratio: f64,
        sigma: f64,
        noise: fn(&mut ChaCha8Rng) -> f64,
        seed: u64,
    ) -> (usize, usize, f64) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut regressions, mut passes, mut pairs) = (0, 0, 0);
        for _ in 0..series {
            let d: Vec<f64> = (0..design.max_pairs())
                .map(|_| ratio.ln() + sigma * noise(&mut rng))
                .collect();
            for &n in design.looks() {
                let look = design.look(&d[..n], Scale::Ratio, 0.05).unwrap();
                match look.decision {
                    LookDecision::Regression => regressions += 1,
                    LookDecision::Pass => passes += 1,
                    LookDecision::Continue => continue,
                    LookDecision::Inconclusive => {}
                }
                pairs += n;
                break;
            }
        }
        (regressions, passes, pairs as f64 / series as f64)
    }

    #[test]
    fn the_false_regression_rate_stays_at_alpha_at_the_worst_null() {
        // The worst case for a false regression is a true ratio exactly at the threshold, 1.05.
        // 2,000 runs each with normal and with heavy-tailed (t₃) noise of 3% per pair; the
        // stated rate is α = 0.01 and the bound allows 2.6 binomial SD (0.0058) above it.
        let design = SequentialDesign::new(5, 40, 0.01).unwrap();
        let bound = 0.01 + 2.6 * (0.01 * 0.99 / 2_000.0f64).sqrt();
        for (noise, seed) in [(normal as fn(&mut ChaCha8Rng) -> f64, 1), (t3, 2)] {
            let (regressions, passes, _) = simulate(&design, 2_000, 1.05, 0.03, noise, seed);
            let rate = regressions as f64 / 2_000.0;
            assert!(rate <= bound, "false regressions {rate}");
            // A pass at the threshold is as false as a regression: the other side, same bound.
            assert!(passes as f64 / 2_000.0 <= bound, "false passes {passes}");
        }
        // Looking seven times at the fixed design's level instead breaks the bound: the reason
        // for the boundary.
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let naive = (0..2_000)
            .filter(|_| {
                let d: Vec<f64> = (0..40)
                    .map(|_| 1.05f64.ln() + 0.03 * normal(&mut rng))
                    .collect();
                design.looks().iter().any(|&n| {
                    wilcoxon_interval(&d[..n], Scale::Ratio, 0.01)
                        .unwrap()
                        .above(1.05)
                })
            })
            .count();
        assert!(naive as f64 / 2_000.0 > bound, "naive {naive}");
    }

    #[test]
    fn an_a_a_run_passes_early_and_never_regresses() {
        let design = SequentialDesign::new(5, 40, 0.01).unwrap();
        let (regressions, passes, pairs) = simulate(&design, 1_000, 1.0, 0.03, normal, 3);
        assert_eq!(regressions, 0);
        // 5% away at 3% per-pair SD: nearly every run passes, most at the first look or two.
        assert!(passes >= 990, "{passes}");
        assert!(pairs < 15.0, "mean pairs {pairs}");
    }

    #[test]
    fn a_known_shift_is_detected_with_the_expected_power() {
        // +7% against a 5% threshold at 3% per-pair SD: the approximate power at 40 pairs is
        // about 0.84; 1,000 runs, allowed 4 SD (0.046) below it.
        let design = SequentialDesign::new(5, 40, 0.01).unwrap();
        let expected = design.approximate_power(0.07, 0.03, Scale::Ratio, 0.05);
        assert!((0.75..0.95).contains(&expected), "{expected}");
        let (regressions, passes, pairs) = simulate(&design, 1_000, 1.07, 0.03, normal, 4);
        let power = regressions as f64 / 1_000.0;
        assert!(
            power >= expected - 0.046,
            "power {power}, expected {expected}"
        );
        assert!(passes <= 10, "false passes {passes}");
        // A clear regression stops early.
        let (hits, _, early) = simulate(&design, 300, 1.15, 0.03, normal, 5);
        assert_eq!(hits, 300);
        assert!(early < 12.0, "mean pairs {early}");
        assert!(pairs > early);
    }

    #[test]
    fn the_computed_crossing_probability_matches_simulated_gaussian_sums() {
        // 50,000 paths of standard normal partial sums observed at the design's looks: the share
        // crossing c √n at some look is the computed α within 3.5 binomial SD (0.0016).
        let design = SequentialDesign::new(5, 40, 0.01).unwrap();
        let c = design.boundary();
        assert!((crossing_probability(design.looks(), c) - 0.01).abs() < 1e-6);
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let crossed = (0..50_000)
            .filter(|_| {
                let (mut sum, mut n) = (0.0, 0);
                design.looks().iter().any(|&look| {
                    while n < look {
                        sum += normal(&mut rng);
                        n += 1;
                    }
                    sum > c * (n as f64).sqrt()
                })
            })
            .count();
        let share = crossed as f64 / 50_000.0;
        assert!((share - 0.01).abs() < 0.0016, "{share}");
    }
}
