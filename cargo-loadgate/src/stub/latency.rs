//! A stub's latency distributions (issue 15, seed 000's "downstream stubs with realistic
//! latency"): fixed, exponential, lognormal from two percentiles, or a percentile table. Each is
//! sampled by its inverse CDF at a uniform `u` drawn from the stub's seeded stream, so a stub's
//! delays are reproducible from its seed and the order its requests arrive in.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The standard normal's 99th percentile, Φ⁻¹(0.99).
const Z99: f64 = 2.326_347_874_040_840_8;

/// The longest delay a stub draws: a distribution's tail is cut here (an hour is no latency).
pub const MAX_DELAY: Duration = Duration::from_secs(3600);

/// How long a stub waits before it answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Latency {
    /// Always the same.
    Fixed {
        /// The delay.
        #[serde(rename = "ms", with = "crate::measure::millis")]
        delay: Duration,
    },
    /// Memoryless, with this mean.
    Exponential {
        /// The mean delay.
        #[serde(rename = "mean_ms", with = "crate::measure::millis")]
        mean: Duration,
    },
    /// Lognormal through two percentiles: its median and its 99th percentile.
    Lognormal {
        /// The median.
        #[serde(rename = "p50_ms", with = "crate::measure::millis")]
        p50: Duration,
        /// The 99th percentile (at least the median).
        #[serde(rename = "p99_ms", with = "crate::measure::millis")]
        p99: Duration,
    },
    /// A percentile table, linear between its points: below the lowest the lowest delay, above
    /// the highest the highest (so each stated percentile is exact).
    Table {
        /// (quantile in (0, 1], delay), by increasing quantile and delay.
        points: Vec<TablePoint>,
    },
}

/// One point of a percentile table.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TablePoint {
    /// The quantile, in [0, 1] (`p50` is 0.5, `min` 0, `max` 1).
    pub quantile: f64,
    /// The delay at it.
    #[serde(rename = "ms", with = "crate::measure::millis")]
    pub delay: Duration,
}

impl Latency {
    /// No delay.
    pub const NONE: Latency = Latency::Fixed {
        delay: Duration::ZERO,
    };

    /// The delay at quantile `u` (a uniform draw in [0, 1)).
    pub fn sample(&self, u: f64) -> Duration {
        let u = if u.is_finite() {
            u.clamp(0.0, 1.0)
        } else {
            0.5
        };
        let seconds = match self {
            Latency::Fixed { delay } => delay.as_secs_f64(),
            Latency::Exponential { mean } => {
                // 1 − u lies in (0, 1]: ln never sees 0.
                -mean.as_secs_f64() * (1.0 - u).max(f64::MIN_POSITIVE).ln()
            }
            Latency::Lognormal { p50, p99 } => {
                let (m, q) = (p50.as_secs_f64(), p99.as_secs_f64());
                if m <= 0.0 {
                    0.0
                } else {
                    let sigma = (q.max(m) / m).ln() / Z99;
                    let z = crate::stats::normal_quantile(u.clamp(1e-12, 1.0 - 1e-12));
                    m * (sigma * z).exp()
                }
            }
            Latency::Table { points } => table_at(points, u),
        };
        if !seconds.is_finite() || seconds <= 0.0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(seconds.min(MAX_DELAY.as_secs_f64()))
    }

    /// The median, as the distribution states it.
    pub fn median(&self) -> Duration {
        self.sample(0.5)
    }

    /// One line for people: `fixed 20ms`, `lognormal, p50 20ms, p99 180ms`.
    pub fn describe(&self) -> String {
        let ms = |d: &Duration| crate::config::format_duration(*d);
        match self {
            Latency::Fixed { delay } => format!("fixed {}", ms(delay)),
            Latency::Exponential { mean } => format!("exponential, mean {}", ms(mean)),
            Latency::Lognormal { p50, p99 } => {
                format!("lognormal, p50 {}, p99 {}", ms(p50), ms(p99))
            }
            Latency::Table { points } => {
                let parts: Vec<String> = points
                    .iter()
                    .map(|p| format!("{} {}", quantile_name(p.quantile), ms(&p.delay)))
                    .collect();
                format!("table: {}", parts.join(", "))
            }
        }
    }
}

/// `p50`, `p99.9`, `min`, `max` for a quantile.
pub fn quantile_name(q: f64) -> String {
    if q <= 0.0 {
        "min".to_owned()
    } else if q >= 1.0 {
        "max".to_owned()
    } else {
        crate::plan::quantile_label(q)
    }
}

/// The quantile a table key names: `min` (0), `max` (1), `p50` (0.5), `p99.9` (0.999).
pub fn parse_quantile_name(name: &str) -> Option<f64> {
    match name {
        "min" => Some(0.0),
        "max" => Some(1.0),
        _ => {
            let pct: f64 = name.strip_prefix('p')?.parse().ok()?;
            (pct > 0.0 && pct < 100.0 && pct.is_finite()).then_some(pct / 100.0)
        }
    }
}

/// The table's delay at `u`: linear between the points around it, flat beyond the ends.
fn table_at(points: &[TablePoint], u: f64) -> f64 {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return 0.0;
    };
    if u <= first.quantile {
        return first.delay.as_secs_f64();
    }
    if u >= last.quantile {
        return last.delay.as_secs_f64();
    }
    for pair in points.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if u <= b.quantile {
            let span = b.quantile - a.quantile;
            let t = if span > 0.0 {
                (u - a.quantile) / span
            } else {
                1.0
            };
            let (da, db) = (a.delay.as_secs_f64(), b.delay.as_secs_f64());
            return da + t * (db - da);
        }
    }
    last.delay.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// The sample quantile `q` of `n` evenly spaced draws (the inverse CDF at the midpoints).
    fn quantile_of(latency: &Latency, q: f64) -> Duration {
        let n = 100_000;
        let mut draws: Vec<Duration> = (0..n)
            .map(|i| latency.sample((i as f64 + 0.5) / n as f64))
            .collect();
        draws.sort();
        draws[((q * n as f64) as usize).min(n - 1)]
    }

    fn close(a: Duration, b: Duration, rel: f64) -> bool {
        let (a, b) = (a.as_secs_f64(), b.as_secs_f64());
        (a - b).abs() <= rel * b.max(1e-9)
    }

    #[test]
    fn a_fixed_latency_is_always_itself() {
        let l = Latency::Fixed { delay: ms(20) };
        for u in [0.0, 0.3, 0.999, 1.0] {
            assert_eq!(l.sample(u), ms(20));
        }
    }

    #[test]
    fn an_exponential_latency_has_its_mean_and_median() {
        let l = Latency::Exponential { mean: ms(20) };
        let n = 100_000;
        let mean: f64 = (0..n)
            .map(|i| l.sample((i as f64 + 0.5) / n as f64).as_secs_f64())
            .sum::<f64>()
            / n as f64;
        assert!((mean - 0.020).abs() < 0.0005, "{mean}");
        // The median of an exponential is mean × ln 2.
        assert!(close(
            l.median(),
            Duration::from_secs_f64(0.020 * 2f64.ln()),
            0.01
        ));
    }

    #[test]
    fn a_lognormal_latency_passes_through_its_two_percentiles() {
        let l = Latency::Lognormal {
            p50: ms(20),
            p99: ms(180),
        };
        assert!(close(quantile_of(&l, 0.5), ms(20), 0.01));
        assert!(close(quantile_of(&l, 0.99), ms(180), 0.02));
        // A p99 equal to the median is a fixed delay.
        let flat = Latency::Lognormal {
            p50: ms(5),
            p99: ms(5),
        };
        assert_eq!(flat.sample(0.999), ms(5));
    }

    #[test]
    fn a_table_is_exact_at_its_points_linear_between_and_flat_beyond() {
        let l = Latency::Table {
            points: vec![
                TablePoint {
                    quantile: 0.5,
                    delay: ms(20),
                },
                TablePoint {
                    quantile: 0.99,
                    delay: ms(180),
                },
            ],
        };
        assert_eq!(l.sample(0.1), ms(20));
        assert_eq!(l.sample(0.5), ms(20));
        assert_eq!(l.sample(0.99), ms(180));
        assert_eq!(l.sample(0.9999), ms(180));
        let mid = l.sample(0.745).as_secs_f64();
        assert!((mid - 0.100).abs() < 1e-6, "{mid}");
        assert!(close(quantile_of(&l, 0.5), ms(20), 0.001));
        assert!(close(quantile_of(&l, 0.99), ms(180), 0.01));
    }

    #[test]
    fn quantile_names_read_back() {
        for (name, q) in [("min", 0.0), ("p50", 0.5), ("p99.9", 0.999), ("max", 1.0)] {
            let parsed = parse_quantile_name(name).expect(name);
            assert!((parsed - q).abs() < 1e-12, "{name}: {parsed}");
            assert_eq!(quantile_name(q), name);
        }
        for bad in ["p0", "p100", "p", "50", "px", "p-1"] {
            assert_eq!(parse_quantile_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn out_of_range_draws_and_huge_tails_stay_bounded() {
        let l = Latency::Exponential { mean: ms(20) };
        assert!(l.sample(1.0) <= MAX_DELAY);
        assert_eq!(l.sample(f64::NAN), l.median());
        assert_eq!(Latency::NONE.sample(0.7), Duration::ZERO);
    }
}
