//! The one leak rule. This run's RSS slope whose whole interval lies above `gate.rss-slope` is a
//! **leak finding**, recorded with the soak (`soak.leak`) and in the verdict (`verdict.leak`),
//! also when there is no baseline. Against a baseline the difference head − base decides a
//! regression (the comparison's RSS slope metric, `decide.rs`); the finding says whether the
//! verdict counts it, so JUnit and the verdict show the same outcome.

use super::format::describe;
use crate::config::GateConfig;
use crate::plan::{Slopes, format_bytes_per_sec};
use crate::result::{
    Comparison, LeakFinding, Metric, MetricOutcome, RunResult, Verdict, VerdictOutcome,
};

/// The leak finding: RSS grows beyond `gate.rss-slope` when the whole interval of this run's
/// slope lies above it. The other slopes are reported, never judged.
pub fn leak_finding(slopes: &Slopes, gate: &GateConfig) -> Option<String> {
    let rss = slopes.rss_bytes_per_sec?;
    rss.above(gate.rss_slope_bytes_per_sec).then(|| {
        format!(
            "RSS grows {} (95% interval {} to {}), beyond the limit of {} (gate.rss-slope)",
            format_bytes_per_sec(rss.estimate),
            format_bytes_per_sec(rss.low),
            format_bytes_per_sec(rss.high),
            format_bytes_per_sec(gate.rss_slope_bytes_per_sec)
        )
    })
}

/// The leak finding of run `head` under `gate`: [`leak_finding`] of its soak's slopes, `None`
/// without a soak. Computed from the slopes rather than read from `soak.leak`, so that
/// `cargo loadgate compare --config …` judges the leak by the same `gate.rss-slope` as the
/// comparison (for `run` the two are the same: it records `soak.leak` with this gate).
pub fn head_leak(head: &RunResult, gate: &GateConfig) -> Option<String> {
    head.soak
        .as_ref()
        .and_then(|soak| leak_finding(&soak.slopes, gate))
}

/// The finding `message` as the verdict counts it: a regression exactly when the verdict is one
/// and the comparison's RSS slope metric is among the metrics behind it.
fn leak_in_verdict(
    message: &str,
    comparison: Option<&Comparison>,
    verdict: &Verdict,
) -> LeakFinding {
    let rss = comparison.and_then(|c| {
        c.metrics
            .iter()
            .enumerate()
            .find(|(_, m)| m.metric == Metric::RssSlope)
    });
    let (regression, reason) = match rss {
        Some((i, m))
            if verdict.outcome == VerdictOutcome::Regression && verdict.metrics.contains(&i) =>
        {
            (true, format!("against the baseline, {}", describe(m)))
        }
        Some((_, m)) => {
            let outcome = match m.outcome {
                MetricOutcome::Regression => {
                    "beyond the threshold, but the verdict is not a regression"
                }
                MetricOutcome::Pass => "within the threshold",
                MetricOutcome::Inconclusive => "inconclusive",
                MetricOutcome::Improvement => "an improvement",
                MetricOutcome::Accepted => "within the accepted change",
            };
            (
                false,
                format!(
                    "not a regression: against the baseline the RSS slope (head − base) is {outcome}"
                ),
            )
        }
        None if verdict.outcome == VerdictOutcome::NoBaseline => (
            false,
            "not a regression: there is no baseline to compare with".to_owned(),
        ),
        None => (
            false,
            "not a regression: the RSS slope was not compared with the baseline".to_owned(),
        ),
    };
    LeakFinding {
        message: message.to_owned(),
        regression,
        reason,
    }
}

/// Records this run's leak finding `leak` (from [`leak_finding`]) in `verdict` and in the
/// comparison's copy of it.
pub fn record_leak(leak: Option<&str>, comparison: Option<&mut Comparison>, verdict: &mut Verdict) {
    let finding = leak.map(|message| leak_in_verdict(message, comparison.as_deref(), verdict));
    if let Some(comparison) = comparison {
        comparison.verdict.leak = finding.clone();
    }
    verdict.leak = finding;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::testkit::{SHAPE, fast_options, figures, gate, soak};
    use crate::compare::{RunFigures, compare_with};
    use crate::plan::soak_slopes;
    use crate::stats::SlopeEstimate;
    use crate::stats::slope::BootstrapOptions;
    use crate::targets::ResourceSample;

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

    #[test]
    fn a_growing_rss_is_a_leak() {
        let slopes = soak_slopes(&[], &samples(100.0 * 1024.0), &BootstrapOptions::default());
        let leak = leak_finding(&slopes, &gate()).expect("100 KiB/s is past 34 KiB/s");
        assert!(
            leak.starts_with("RSS grows 100.0 KiB/s (95% interval"),
            "{leak}"
        );
        assert!(
            leak.ends_with("beyond the limit of 34.1 KiB/s (gate.rss-slope)"),
            "{leak}"
        );
    }

    #[test]
    fn a_slope_within_the_threshold_is_not_a_leak() {
        let slopes = soak_slopes(&[], &samples(4.0 * 1024.0), &BootstrapOptions::default());
        assert!(slopes.rss_bytes_per_sec.expect("samples").low > 0.0);
        assert_eq!(leak_finding(&slopes, &gate()), None);
    }

    /// A side whose stored RSS slope is `mib` MiB/min ± 0.3.
    fn leaking(seed: u64, mib: f64) -> RunFigures {
        let per_min = 1024.0 * 1024.0 / 60.0;
        let mut f = figures(soak(seed, SHAPE));
        f.rss_slope = Some(SlopeEstimate {
            estimate: mib * per_min,
            low: (mib - 0.3) * per_min,
            high: (mib + 0.3) * per_min,
        });
        f
    }

    /// The leak finding of `head`'s stored slope, as the plan's slopes would give it.
    fn finding_of(head: &RunFigures) -> String {
        let slopes = Slopes {
            rss_bytes_per_sec: head.rss_slope,
            ..Slopes::default()
        };
        leak_finding(&slopes, &gate()).expect("the head leaks")
    }

    #[test]
    fn a_leak_the_baseline_does_not_share_is_a_regression_the_finding_counts() {
        let (base, head) = (leaking(21, 0.0), leaking(21, 6.0));
        let mut c = compare_with(&base, &head, &gate(), &fast_options());
        let mut verdict = c.verdict.clone();
        record_leak(Some(&finding_of(&head)), Some(&mut c), &mut verdict);
        assert_eq!(verdict.outcome, VerdictOutcome::Regression, "{c:#?}");
        let leak = verdict.leak.as_ref().expect("recorded");
        assert!(leak.regression, "{leak:?}");
        assert!(
            leak.reason
                .starts_with("against the baseline, RSS slope changed +6.00 MiB/min"),
            "{}",
            leak.reason
        );
        assert_eq!(c.verdict, verdict, "the comparison's copy agrees");
    }

    /// Regression: the plan flagged the head's slope as a leak (JUnit failed "no leak") while the
    /// comparison of head − base passed. Now the finding is recorded as not counted.
    #[test]
    fn a_leak_the_baseline_shares_is_recorded_but_not_a_regression() {
        let (base, head) = (leaking(22, 6.0), leaking(22, 6.0));
        let mut c = compare_with(&base, &head, &gate(), &fast_options());
        let mut verdict = c.verdict.clone();
        record_leak(Some(&finding_of(&head)), Some(&mut c), &mut verdict);
        assert_ne!(verdict.outcome, VerdictOutcome::Regression, "{c:#?}");
        let leak = verdict.leak.as_ref().expect("recorded");
        assert!(!leak.regression, "{leak:?}");
        assert_eq!(
            leak.reason,
            "not a regression: against the baseline the RSS slope (head − base) is within the \
             threshold"
        );
    }

    #[test]
    fn a_leak_without_a_baseline_is_recorded_in_the_verdict() {
        let mut verdict = Verdict::no_baseline(vec!["no baseline stored".to_owned()]);
        record_leak(Some("RSS grows"), None, &mut verdict);
        assert_eq!(
            verdict.leak,
            Some(LeakFinding {
                message: "RSS grows".to_owned(),
                regression: false,
                reason: "not a regression: there is no baseline to compare with".to_owned(),
            })
        );
        record_leak(None, None, &mut verdict);
        assert_eq!(verdict.leak, None);
    }
}
