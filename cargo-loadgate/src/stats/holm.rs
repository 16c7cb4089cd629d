//! Holm's step-down procedure (Holm 1979) and the normal distribution function it is fed with.
//!
//! A run tests several primary metrics at once; testing each at α would make some alarm fire on
//! most runs. Holm keeps the chance of any false regression at α over the family, and is never
//! less powerful than Bonferroni.

/// What Holm's procedure decided for one hypothesis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HolmStep {
    /// The one-sided level the hypothesis was judged at: α/(m − k) at its rank k (from 0) in
    /// ascending p-value order, or the level of the step where the procedure stopped.
    pub level: f64,
    /// Whether the hypothesis was rejected (a regression was found).
    pub rejected: bool,
}

/// Holm's step-down procedure at family-wise level `alpha` over `p_values`, returned in the
/// input's order. Hypotheses after the first one kept are judged at that step's level, so an
/// interval drawn at a hypothesis's level agrees with its decision.
pub fn holm(p_values: &[f64], alpha: f64) -> Vec<HolmStep> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]).then(a.cmp(&b)));
    let mut out = vec![
        HolmStep {
            level: alpha,
            rejected: false
        };
        m
    ];
    let mut stopped: Option<f64> = None;
    for (rank, &i) in order.iter().enumerate() {
        let level = alpha / (m - rank) as f64;
        out[i] = match stopped {
            Some(level) => HolmStep {
                level,
                rejected: false,
            },
            None if p_values[i] <= level => HolmStep {
                level,
                rejected: true,
            },
            None => {
                stopped = Some(level);
                HolmStep {
                    level,
                    rejected: false,
                }
            }
        };
    }
    out
}

/// The standard normal distribution function Φ(x), through the complementary error function
/// (Numerical Recipes' Chebyshev fit, relative error below 1.2e-7).
pub fn normal_cdf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::normal_quantile;
    use test_case::test_case;

    #[test_case(0.0, 0.5)]
    #[test_case(1.959_963_985, 0.975)]
    #[test_case(-2.326_347_874, 0.01)]
    #[test_case(3.090_232_306, 0.999)]
    fn normal_cdf_matches_tables(x: f64, p: f64) {
        assert!((normal_cdf(x) - p).abs() < 1e-6, "{}", normal_cdf(x));
        assert!((normal_quantile(normal_cdf(x)) - x).abs() < 1e-4);
    }

    #[test]
    fn holm_rejects_in_ascending_order_until_the_first_keep() {
        // m = 4, α = 0.01: levels 0.0025, 0.00333, 0.005, 0.01 by rank.
        let p = [0.004, 0.0001, 0.2, 0.003];
        let steps = holm(&p, 0.01);
        let rejected: Vec<bool> = steps.iter().map(|s| s.rejected).collect();
        // 0.0001 ≤ 0.0025 rejected; 0.003 ≤ 0.00333 rejected; 0.004 ≤ 0.005 rejected; 0.2 kept.
        assert_eq!(rejected, [true, true, false, true]);
        assert!((steps[1].level - 0.0025).abs() < 1e-12);
        assert!((steps[3].level - 0.01 / 3.0).abs() < 1e-12);
        assert!((steps[2].level - 0.01).abs() < 1e-12);
    }

    #[test]
    fn holm_stops_at_the_first_keep_even_when_a_later_p_would_pass_its_own_level() {
        // Sorted: 0.004 (level 0.00333, kept) — 0.0049 would pass 0.005 alone, but Holm stopped.
        let steps = holm(&[0.0049, 0.004, 0.5], 0.01);
        assert!(steps.iter().all(|s| !s.rejected));
        // Everything after the stop is judged at the stop's level.
        assert!((steps[0].level - 0.01 / 3.0).abs() < 1e-12);
        assert!((steps[2].level - 0.01 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn holm_of_one_is_the_plain_test_and_of_none_is_empty() {
        assert_eq!(
            holm(&[0.009], 0.01),
            vec![HolmStep {
                level: 0.01,
                rejected: true
            }]
        );
        assert!(holm(&[], 0.01).is_empty());
    }

    fn rejected(p: &[f64], alpha: f64) -> Vec<bool> {
        holm(p, alpha).iter().map(|s| s.rejected).collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// A larger α rejects everything a smaller one did.
        #[test]
        fn rejections_are_monotone_in_alpha(
            p in proptest::collection::vec(0.0f64..1.0, 0..20),
            alpha in 0.0001f64..0.2,
            more in 1.0f64..5.0,
        ) {
            let strict = rejected(&p, alpha);
            let loose = rejected(&p, alpha * more);
            for (i, (s, l)) in strict.iter().zip(&loose).enumerate() {
                proptest::prop_assert!(!s || *l, "p[{}] = {} rejected at {} but not at {}", i, p[i], alpha, alpha * more);
            }
        }

        /// A rejected p-value implies that every smaller one is rejected too.
        #[test]
        fn every_smaller_p_value_than_a_rejected_one_is_rejected(
            p in proptest::collection::vec(0.0f64..0.05, 1..20),
            alpha in 0.001f64..0.2,
        ) {
            let r = rejected(&p, alpha);
            for (i, _) in r.iter().enumerate().filter(|(_, r)| **r) {
                for (j, q) in p.iter().enumerate() {
                    proptest::prop_assert!(*q >= p[i] || r[j], "p[{}] = {} rejected, p[{}] = {} kept", i, p[i], j, q);
                }
            }
        }

        /// With a single hypothesis Holm is the plain test at α.
        #[test]
        fn with_one_p_value_holm_is_the_plain_test(p in 0.0f64..1.0, alpha in 0.0001f64..0.5) {
            proptest::prop_assert_eq!(
                holm(&[p], alpha),
                vec![HolmStep { level: alpha, rejected: p <= alpha }]
            );
        }
    }
}
