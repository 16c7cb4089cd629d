//! The soak sample's figures: Theil–Sen slopes with block-bootstrap intervals of RSS, p99,
//! threads and file descriptors over time. The leak rule that reads the RSS slope is
//! `compare::leak_finding`.

use crate::measure::Window;
use crate::stats::slope::{BootstrapOptions, SlopeEstimate, theil_sen_bootstrap};
use crate::targets::ResourceSample;
use serde::{Deserialize, Serialize};

/// The slopes of the soak's series, each `null` when the series had fewer than three points (a
/// URL target has no resource samples).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Slopes {
    /// Growth of the target's resident set, in bytes per second.
    pub rss_bytes_per_sec: Option<SlopeEstimate>,
    /// Drift of the per-window p99 latency (from the intended send time), in seconds per second.
    pub p99_seconds_per_sec: Option<SlopeEstimate>,
    /// Growth of the target's thread count, per second.
    pub threads_per_sec: Option<SlopeEstimate>,
    /// Growth of the target's open file descriptors, per second.
    pub fds_per_sec: Option<SlopeEstimate>,
}

/// A slope's name, its estimate if there were enough points, and how one of its values reads.
pub type NamedSlope<'a> = (&'static str, Option<&'a SlopeEstimate>, fn(f64) -> String);

impl Slopes {
    /// The four slopes in the order the readers list them, each with its name and how one of
    /// its values reads (per second, the "/s" left to the reader).
    pub fn named(&self) -> [NamedSlope<'_>; 4] {
        fn bytes(v: f64) -> String {
            format_bytes_per_sec(v).trim_end_matches("/s").to_owned()
        }
        fn millis(v: f64) -> String {
            format!("{:.3} ms", v * 1e3)
        }
        fn count(v: f64) -> String {
            format!("{v:.3}")
        }
        [
            ("RSS", self.rss_bytes_per_sec.as_ref(), bytes),
            ("p99", self.p99_seconds_per_sec.as_ref(), millis),
            ("threads", self.threads_per_sec.as_ref(), count),
            ("fds", self.fds_per_sec.as_ref(), count),
        ]
    }
}

/// Where the soak's capacity figure came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CapacitySource {
    /// The baseline's knee: head and base soak at the same offered load.
    Baseline,
    /// This run's knee (no baseline knee was given).
    ThisRun,
}

/// What the soak sample found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoakOutcome {
    /// The phase's name in the run result (`soak`).
    pub phase: String,
    /// The capacity the soak rate was taken from, in sessions per second.
    pub capacity_sessions_per_sec: f64,
    /// Whose capacity it was.
    pub capacity_from: CapacitySource,
    /// The offered session rate: `soak.at` × capacity.
    pub at_sessions_per_sec: f64,
    /// The request rate actually offered in the measured part: requests that came due (sent or
    /// dropped) per second.
    pub offered_rate_per_sec: f64,
    /// The steady-state request rate the session rate implies (the model's requests per session ×
    /// sessions per second); the measured `offered_rate_per_sec` approaches it as sessions accumulate.
    pub model_rate_per_sec: f64,
    /// Answers received per second of measured time (HTTP responses of any outcome, not timeouts
    /// or other transport errors), as in a ramp step.
    pub achieved_rate_per_sec: f64,
    /// The slopes over the measured part.
    pub slopes: Slopes,
    /// The leak finding, when the RSS slope's interval lies above `gate.rss-slope`: filled in by
    /// `compare::leak_finding` when the run records the soak (the plan leaves it `None`).
    pub leak: Option<String>,
    /// Set when the soak ran below `soak.at` × capacity because the generator reached its limit
    /// in the ramp below that load: from what to what, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowered: Option<String>,
    /// Why the soak stopped early, if it did.
    pub aborted: Option<String>,
    /// Whether the generator kept its schedule.
    pub valid: bool,
    /// Why it did not, one reason per entry.
    pub invalid_reasons: Vec<String>,
    /// The windows the p99 slope was fitted to.
    pub windows: usize,
    /// The resource samples the other slopes were fitted to.
    pub samples: usize,
    /// When the first and the last of those samples were taken, on the sampler's clock
    /// (`resources[].elapsed_s`): the part of the run the probes' soak slopes are fitted to.
    /// Absent without samples, and in results written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled_s: Option<[f64; 2]>,
}

impl SoakOutcome {
    /// The soak's rate as a percentage of the capacity it was set from (0 without a capacity).
    pub fn percent_of_capacity(&self) -> f64 {
        if self.capacity_sessions_per_sec > 0.0 {
            self.at_sessions_per_sec / self.capacity_sessions_per_sec * 100.0
        } else {
            0.0
        }
    }
}

/// The slopes of a soak: p99 of each window in which something completed, against the window's
/// middle; RSS, threads and fds of each sample against its time. Samples should cover only the
/// measured part of the phase (see [`super::PhaseRun::resources`]); their time origin does not
/// matter.
pub fn soak_slopes(
    windows: &[Window],
    samples: &[ResourceSample],
    options: &BootstrapOptions,
) -> Slopes {
    let p99: Vec<(f64, f64)> = windows
        .iter()
        .filter(|w| w.completed > 0)
        .map(|w| ((w.start + w.length / 2).as_secs_f64(), w.p99.as_secs_f64()))
        .collect();
    let series = |value: fn(&ResourceSample) -> f64| -> Vec<(f64, f64)> {
        samples.iter().map(|s| (s.elapsed_s, value(s))).collect()
    };
    Slopes {
        rss_bytes_per_sec: theil_sen_bootstrap(&series(|s| s.rss_bytes as f64), options),
        p99_seconds_per_sec: theil_sen_bootstrap(&p99, options),
        threads_per_sec: theil_sen_bootstrap(&series(|s| s.threads as f64), options),
        fds_per_sec: theil_sen_bootstrap(&series(|s| s.fds as f64), options),
    }
}

/// Bytes per second for people, in B, KiB or MiB per second.
pub fn format_bytes_per_sec(value: f64) -> String {
    let abs = value.abs();
    if abs >= 1024.0 * 1024.0 {
        format!("{:.2} MiB/s", value / (1024.0 * 1024.0))
    } else if abs >= 1024.0 {
        format!("{:.1} KiB/s", value / 1024.0)
    } else {
        format!("{value:.0} B/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// 20 samples a second apart; RSS grows by `growth` bytes per second with a sawtooth of
    /// ±64 KiB (an allocator's arenas), threads and fds constant.
    fn samples(growth: f64) -> Vec<ResourceSample> {
        (0..20)
            .map(|i| {
                let t = 100.0 + f64::from(i);
                let saw = f64::from(i % 4) * 32.0 * 1024.0 - 48.0 * 1024.0;
                ResourceSample {
                    elapsed_s: t,
                    cpu_seconds: f64::from(i) * 0.5,
                    rss_bytes: (50.0 * 1024.0 * 1024.0 + growth * f64::from(i) + saw) as u64,
                    threads: 3,
                    fds: 12,
                }
            })
            .collect()
    }

    fn windows(p99_ms: impl Fn(u32) -> u64) -> Vec<Window> {
        (0..20)
            .map(|i| Window {
                start: Duration::from_secs(u64::from(i)),
                length: Duration::from_secs(1),
                sent: 100,
                completed: 100,
                errors: 0,
                answered: Some(100),
                p50: Duration::from_millis(5),
                p99: Duration::from_millis(p99_ms(i)),
                max: Duration::from_millis(p99_ms(i)),
                dropped: 0,
                lag_p99: Duration::ZERO,
                generator_busy: None,
            })
            .collect()
    }

    #[test]
    fn a_growing_rss_slopes_up_and_constant_counts_are_flat() {
        let slopes = soak_slopes(
            &windows(|_| 20),
            &samples(100.0 * 1024.0),
            &BootstrapOptions::default(),
        );
        let rss = slopes.rss_bytes_per_sec.expect("20 samples");
        assert!(
            (rss.estimate / (100.0 * 1024.0) - 1.0).abs() < 0.1,
            "{rss:?}"
        );
        assert!(rss.low > 0.0, "{rss:?}");
        let threads = slopes.threads_per_sec.expect("20 samples");
        assert_eq!((threads.low, threads.high), (0.0, 0.0));
        let p99 = slopes.p99_seconds_per_sec.expect("20 windows");
        assert!(p99.contains(0.0), "{p99:?}");
    }

    #[test]
    fn a_rising_p99_is_measured_in_seconds_per_second() {
        let slopes = soak_slopes(
            &windows(|i| 20 + 5 * u64::from(i)),
            &[],
            &BootstrapOptions::default(),
        );
        let p99 = slopes.p99_seconds_per_sec.expect("windows");
        assert!((p99.estimate - 0.005).abs() < 1e-4, "{p99:?}");
        assert_eq!(slopes.rss_bytes_per_sec, None, "no samples, no slope");
    }

    #[test]
    fn slopes_serialize_under_their_keys() {
        let slopes = Slopes {
            rss_bytes_per_sec: Some(SlopeEstimate {
                estimate: 1024.0,
                low: 512.0,
                high: 2048.0,
            }),
            ..Slopes::default()
        };
        insta::assert_snapshot!(serde_json::to_string(&slopes).expect("serializes"), @r#"{"rss_bytes_per_sec":{"estimate":1024.0,"low":512.0,"high":2048.0},"p99_seconds_per_sec":null,"threads_per_sec":null,"fds_per_sec":null}"#);
    }
}
