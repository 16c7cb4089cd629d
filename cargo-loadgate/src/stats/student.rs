//! Student's t distribution: its distribution function and quantile, for intervals whose standard
//! error rests on a variance estimated from few runs (the run-to-run noise of stored baselines).
//!
//! The distribution function goes through the regularized incomplete beta function (Numerical
//! Recipes' continued fraction, Lentz's method) with a Lanczos log-gamma; the quantile inverts it
//! by bisection. Infinite degrees of freedom are the normal distribution.

use super::holm::normal_cdf;
use super::slope::normal_quantile;

/// Degrees of freedom from which the t distribution is taken as the normal (the quantiles differ
/// by less than 1e-5 at the 0.9999 level).
const NORMAL_DF: f64 = 1e7;

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine coefficients; relative error below 1e-13).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The continued fraction of the incomplete beta function (Lentz's method).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom (`df` ≥ [`NORMAL_DF`] or infinite: the
/// normal distribution). `df` must be positive.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if df >= NORMAL_DF {
        return normal_cdf(t);
    }
    if t.is_infinite() {
        return if t > 0.0 { 1.0 } else { 0.0 };
    }
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    if t > 0.0 { 1.0 - tail } else { tail }
}

/// The quantile of Student's t with `df` degrees of freedom at probability `p` in (0, 1): the `t`
/// with `t_cdf(t, df) = p` (to 1e-10), the normal quantile for `df` ≥ [`NORMAL_DF`].
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if df >= NORMAL_DF {
        return normal_quantile(p);
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    // The t quantile is at least the normal one; double the bracket until it holds p.
    let mut lo = normal_quantile(p).max(0.0);
    let mut hi = lo.max(1.0);
    while t_cdf(hi, df) < p {
        lo = hi;
        hi *= 2.0;
        if hi > 1e12 {
            return hi;
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-10 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use test_case::test_case;

    // Reference values: the tables of any statistics text (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
    #[test_case(0.975, 1.0, 12.706; "one df")]
    #[test_case(0.975, 4.0, 2.776; "four df")]
    #[test_case(0.99, 9.0, 2.821; "nine df")]
    #[test_case(0.995, 19.0, 2.861; "nineteen df")]
    #[test_case(0.95, 30.0, 1.697; "thirty df")]
    #[test_case(0.999, 4.0, 7.173; "four df far tail")]
    #[test_case(0.975, f64::INFINITY, 1.960; "normal")]
    fn quantiles_match_the_tables(p: f64, df: f64, expected: f64) {
        let q = t_quantile(p, df);
        assert!((q - expected).abs() < 1.5e-3, "t({p}, {df}) = {q}");
        assert!((t_quantile(1.0 - p, df) + q).abs() < 1e-9);
    }

    #[test]
    fn the_cdf_is_symmetric_and_tends_to_the_normal() {
        assert!((t_cdf(0.0, 3.0) - 0.5).abs() < 1e-12);
        assert!((t_cdf(1.3, 5.0) + t_cdf(-1.3, 5.0) - 1.0).abs() < 1e-12);
        // One df is the Cauchy distribution: P(T ≤ 1) = 3/4.
        assert!((t_cdf(1.0, 1.0) - 0.75).abs() < 1e-10);
        assert!((t_cdf(2.0, 1e6) - normal_cdf(2.0)).abs() < 1e-5);
        assert!(t_cdf(f64::NAN, 3.0).is_nan() && t_quantile(1.0, 3.0).is_nan());
    }

    proptest! {
        #[test]
        fn the_quantile_inverts_the_cdf(p in 0.001f64..0.999, df in 1.0f64..200.0) {
            let q = t_quantile(p, df);
            prop_assert!((t_cdf(q, df) - p).abs() < 1e-8);
            // Heavier tails than the normal.
            if p > 0.5 {
                prop_assert!(q >= normal_quantile(p) - 1e-9);
            }
        }
    }
}
