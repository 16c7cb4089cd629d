//! Whether a step holds: the SLO judged per operation class, and the classes that fail from the
//! first step (a bug, not a capacity limit).

use crate::config::SloConfig;
use crate::measure::{OperationMeasurement, PhaseMeasurement};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The SLO's judgement of one step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepJudgement {
    /// Whether every judged class met every limit (and the step was valid and not aborted).
    pub holds: bool,
    /// Why it did not hold, one limit per entry, e.g. "`login` p99 340 ms > 200 ms".
    pub reasons: Vec<String>,
    /// Classes with fewer than `slo.min-requests` requests, whose figures were not judged.
    pub unjudged: Vec<String>,
}

/// `0.99` → `p99`, `0.999` → `p99.9`, `0.5` → `p50`.
pub fn quantile_label(q: f64) -> String {
    let percent = format!("{:.3}", q * 100.0);
    let trimmed = percent.trim_end_matches('0').trim_end_matches('.');
    format!("p{trimmed}")
}

/// A latency for people: `0.42 ms`, `4.2 ms`, `340 ms`, `12.50 s`.
pub fn format_latency(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 1.0 {
        format!("{ms:.2} ms")
    } else if ms < 10.0 {
        format!("{ms:.1} ms")
    } else if ms < 1_000.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.2} s", ms / 1e3)
    }
}

/// A rate for people: `600`, `42.5`, `1.25`.
pub fn format_rate(rate: f64) -> String {
    if rate >= 100.0 {
        format!("{rate:.0}")
    } else if rate >= 10.0 {
        format!("{rate:.1}")
    } else {
        format!("{rate:.2}")
    }
}

/// The error rate of a class: requests without a correct answer (wrong answers included) over
/// requests sent.
fn error_rate(op: &OperationMeasurement) -> f64 {
    let sent = op.counters.sent;
    if sent == 0 {
        0.0
    } else {
        op.counters.errors() as f64 / sent as f64
    }
}

/// The latency limits `op` breaks, as reasons.
fn latency_breaks(op: &OperationMeasurement, slo: &SloConfig) -> Vec<String> {
    slo.latency
        .iter()
        .filter_map(|limit| {
            let measured = op.latency.quantile(limit.quantile);
            (measured > limit.limit).then(|| {
                format!(
                    "`{}` {} {} > {}",
                    op.name,
                    quantile_label(limit.quantile),
                    format_latency(measured),
                    format_latency(limit.limit)
                )
            })
        })
        .collect()
}

/// The error-rate reason of `op`, when its rate is past the SLO's.
fn error_break(op: &OperationMeasurement, slo: &SloConfig) -> Option<String> {
    let rate = error_rate(op);
    (rate > slo.error_rate).then(|| {
        format!(
            "`{}` errors {:.1}% > {:.1}%",
            op.name,
            rate * 100.0,
            slo.error_rate * 100.0
        )
    })
}

/// Judges `m` against `slo`: every class with at least `slo.min_requests` requests sent must meet
/// each latency limit (latency from the intended send time) and the error rate (errors over sent,
/// wrong answers counted). Classes named in `errors_exempt` are failing from the first step:
/// their error rate is reported apart and not judged again, their latency still is.
///
/// Only the SLO is judged here; validity and aborts are the ramp's to add.
pub fn judge_step(
    m: &PhaseMeasurement,
    slo: &SloConfig,
    errors_exempt: &[String],
) -> StepJudgement {
    let mut reasons = Vec::new();
    let mut unjudged = Vec::new();
    for op in &m.operations {
        if op.counters.sent < slo.min_requests {
            unjudged.push(op.name.clone());
            continue;
        }
        reasons.extend(latency_breaks(op, slo));
        if !errors_exempt.contains(&op.name) {
            reasons.extend(error_break(op, slo));
        }
    }
    StepJudgement {
        holds: reasons.is_empty(),
        reasons,
        unjudged,
    }
}

/// The classes of the first step whose error rate is past the SLO's while their latency meets
/// every limit: errors at a load the service handles in time are a bug (wrong answers, a broken
/// route), not a capacity limit. A class that is slow as well may be overloaded, so it is left to
/// the ordinary judgement.
pub fn first_step_failures(m: &PhaseMeasurement, slo: &SloConfig) -> Vec<String> {
    m.operations
        .iter()
        .filter(|op| op.counters.sent >= slo.min_requests)
        .filter(|op| error_break(op, slo).is_some() && latency_breaks(op, slo).is_empty())
        .map(|op| op.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LatencyLimit;
    use crate::measure::{Outcome, PhaseRecorder};
    use test_case::test_case;

    const MS: Duration = Duration::from_millis(1);

    fn slo() -> SloConfig {
        SloConfig {
            latency: vec![
                LatencyLimit {
                    quantile: 0.5,
                    limit: 50 * MS,
                },
                LatencyLimit {
                    quantile: 0.99,
                    limit: 200 * MS,
                },
            ],
            error_rate: 0.01,
            min_requests: 100,
        }
    }

    /// A measurement of `login` with `n` requests at `latency_ms`, `wrong` of them wrong answers,
    /// and `home` with 10 requests at 900 ms (too few to judge).
    fn measurement(n: u64, latency_ms: u64, wrong: u64) -> PhaseMeasurement {
        let names = ["login".to_owned(), "home".to_owned()];
        let mut r = PhaseRecorder::new(&names, Duration::ZERO, 200 * MS, Duration::from_secs(1));
        for i in 0..n {
            let t = Duration::from_millis(i);
            r.sent(0, t, t);
            let outcome = if i < wrong {
                Outcome::WrongAnswer("expected status 200, got 401".into())
            } else {
                Outcome::Ok
            };
            r.completed(0, t, t, t + Duration::from_millis(latency_ms), &outcome);
        }
        for i in 0..10 {
            let t = Duration::from_millis(i);
            r.sent(1, t, t);
            r.completed(1, t, t, t + 900 * MS, &Outcome::Ok);
        }
        r.finish(crate::measure::FinishInfo {
            name: "ramp-25%".into(),
            seed: 1,
            sessions_per_sec: 10.0,
            arrivals_end: Duration::from_secs(2),
            end: Duration::from_secs(2),
            max_lag: 10 * MS,
            max_drop_rate: 0.01,
            generator_cpu: None,
            generator_core: None,
            stopped: None,
        })
    }

    #[test_case(0.5, "p50"; "median")]
    #[test_case(0.99, "p99"; "p99")]
    #[test_case(0.999, "p99.9"; "p999")]
    #[test_case(0.95, "p95"; "p95")]
    fn quantiles_are_labelled(q: f64, label: &str) {
        assert_eq!(quantile_label(q), label);
    }

    #[test_case(420, "0.42 ms"; "sub-millisecond")]
    #[test_case(4_200, "4.2 ms"; "milliseconds")]
    #[test_case(340_000, "340 ms"; "hundreds")]
    #[test_case(12_500_000, "12.50 s"; "seconds")]
    fn latencies_are_formatted(micros: u64, text: &str) {
        assert_eq!(format_latency(Duration::from_micros(micros)), text);
    }

    #[test]
    fn a_fast_correct_step_holds_and_small_classes_are_not_judged() {
        let j = judge_step(&measurement(200, 20, 0), &slo(), &[]);
        assert!(j.holds, "{j:?}");
        assert_eq!(j.unjudged, vec!["home".to_owned()]);
    }

    #[test]
    fn every_broken_limit_is_a_reason() {
        let j = judge_step(&measurement(200, 340, 10), &slo(), &[]);
        assert!(!j.holds);
        insta::assert_snapshot!(j.reasons.join("\n"), @r"
        `login` p50 340 ms > 50 ms
        `login` p99 340 ms > 200 ms
        `login` errors 5.0% > 1.0%
        ");
    }

    #[test]
    fn exempt_classes_are_judged_on_latency_only() {
        let m = measurement(200, 20, 60);
        assert_eq!(first_step_failures(&m, &slo()), vec!["login".to_owned()]);
        let j = judge_step(&m, &slo(), &["login".to_owned()]);
        assert!(j.holds, "{j:?}");
    }

    #[test]
    fn slow_failing_classes_are_overload_not_a_bug() {
        let m = measurement(200, 400, 60);
        assert!(first_step_failures(&m, &slo()).is_empty());
    }
}
