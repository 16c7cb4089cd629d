//! Whether a step holds: the SLO judged per operation class (or, when no class alone has
//! `slo.min-requests` requests, on every class's requests pooled), and the classes that fail from
//! the first step (a bug, not a capacity limit).

use crate::config::SloConfig;
use crate::measure::{OperationMeasurement, PhaseMeasurement};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What the SLO judged in a step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JudgementBasis {
    /// Each class with at least `slo.min-requests` requests, on its own.
    #[default]
    PerClass,
    /// No class alone had `slo.min-requests` requests, so the requests of all classes were
    /// judged together.
    Pooled,
    /// Even all classes together had fewer than `slo.min-requests` requests: nothing was judged,
    /// and the step neither held nor broke.
    TooFewRequests,
}

/// The SLO's judgement of one step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepJudgement {
    /// Whether every judged class met every limit (and the step was valid and not aborted). False
    /// when too few requests were sent to judge anything.
    pub holds: bool,
    /// Why it did not hold, one limit per entry, e.g. "`login` p99 340 ms > 200 ms".
    pub reasons: Vec<String>,
    /// Classes with fewer than `slo.min-requests` requests, whose own figures were not judged
    /// (with [`JudgementBasis::Pooled`] their requests were judged together with the others').
    pub unjudged: Vec<String>,
    /// What was judged. Results written before it was recorded judged per class.
    #[serde(default)]
    pub basis: JudgementBasis,
    /// What a reader needs to know about the basis, e.g. "judged pooled: no class had 100
    /// requests"; `None` when each class was judged on its own.
    #[serde(default)]
    pub note: Option<String>,
}

impl StepJudgement {
    /// Whether too few requests were sent to judge anything: such a step neither holds nor breaks.
    pub fn too_few_requests(&self) -> bool {
        self.basis == JudgementBasis::TooFewRequests
    }
}

/// The label of the pooled requests of every class in a reason.
const POOLED: &str = "all classes pooled";

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

/// The error rate of a class: requests without a correct answer (wrong answers and drops at the
/// in-flight cap included) over requests that came due.
fn error_rate(op: &OperationMeasurement) -> f64 {
    op.counters.error_rate().unwrap_or(0.0)
}

/// How a class is named in a reason: "`login`".
fn class_label(op: &OperationMeasurement) -> String {
    format!("`{}`", op.name)
}

/// The latency limits `op` breaks, as reasons naming it `label`.
fn latency_breaks(op: &OperationMeasurement, label: &str, slo: &SloConfig) -> Vec<String> {
    slo.latency
        .iter()
        .filter_map(|limit| {
            let measured = op.latency.quantile(limit.quantile);
            (measured > limit.limit).then(|| {
                format!(
                    "{label} {} {} > {}",
                    quantile_label(limit.quantile),
                    format_latency(measured),
                    format_latency(limit.limit)
                )
            })
        })
        .collect()
}

/// The error-rate reason of `op`, naming it `label`, when its rate is past the SLO's.
fn error_break(op: &OperationMeasurement, label: &str, slo: &SloConfig) -> Option<String> {
    let rate = error_rate(op);
    (rate > slo.error_rate).then(|| {
        let dropped = match op.counters.dropped {
            0 => String::new(),
            n => format!(
                " ({:.1}% dropped at the in-flight cap)",
                n as f64 * 100.0 / op.counters.requests() as f64
            ),
        };
        format!(
            "{label} errors {:.1}% > {:.1}%{dropped}",
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
/// When no class alone has `slo.min_requests` requests, the requests of all classes are pooled
/// (histograms and counters merged) and the pool is judged against the same limits: the SLO's
/// limits apply to every class alike, so they are the strictest any class is held to. The pooled
/// error rate leaves out the exempt classes. When even the pool has fewer than
/// `slo.min_requests` requests nothing is judged: the step does not hold, and
/// [`JudgementBasis::TooFewRequests`] tells the ramp it did not break either.
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
        if op.counters.requests() < slo.min_requests {
            unjudged.push(op.name.clone());
            continue;
        }
        let label = class_label(op);
        reasons.extend(latency_breaks(op, &label, slo));
        if !errors_exempt.contains(&op.name) {
            reasons.extend(error_break(op, &label, slo));
        }
    }
    let judged_any = unjudged.len() < m.operations.len();
    if judged_any {
        return StepJudgement {
            holds: reasons.is_empty(),
            reasons,
            unjudged,
            basis: JudgementBasis::PerClass,
            note: None,
        };
    }
    let pooled = m.total();
    if pooled.counters.requests() < slo.min_requests {
        return StepJudgement {
            holds: false,
            reasons,
            note: Some(format!(
                "too few requests to judge: {} in all classes together, fewer than slo.min-requests ({}); neither held nor broke",
                pooled.counters.requests(),
                slo.min_requests
            )),
            unjudged,
            basis: JudgementBasis::TooFewRequests,
        };
    }
    reasons.extend(latency_breaks(&pooled, POOLED, slo));
    let mut judged_errors = OperationMeasurement::new(POOLED);
    for op in m
        .operations
        .iter()
        .filter(|op| !errors_exempt.contains(&op.name))
    {
        judged_errors.counters.merge(&op.counters);
    }
    reasons.extend(error_break(&judged_errors, POOLED, slo));
    StepJudgement {
        holds: reasons.is_empty(),
        reasons,
        unjudged,
        basis: JudgementBasis::Pooled,
        note: Some(format!(
            "judged pooled: no class had {} requests",
            slo.min_requests
        )),
    }
}

/// The classes of the first step whose error rate is past the SLO's while their latency meets
/// every limit: errors at a load the service handles in time are a bug (wrong answers, a broken
/// route), not a capacity limit. A class that is slow as well may be overloaded, so it is left to
/// the ordinary judgement.
pub fn first_step_failures(m: &PhaseMeasurement, slo: &SloConfig) -> Vec<String> {
    m.operations
        .iter()
        .filter(|op| op.counters.requests() >= slo.min_requests)
        .filter(|op| {
            let label = class_label(op);
            error_break(op, &label, slo).is_some() && latency_breaks(op, &label, slo).is_empty()
        })
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
            headroom: None,
            recovery: None,
        }
    }

    /// A measurement of `login` with `n` requests at `latency_ms`, `wrong` of them wrong answers,
    /// and `home` with 10 requests at 900 ms (too few to judge).
    fn measurement(n: u64, latency_ms: u64, wrong: u64) -> PhaseMeasurement {
        classes(&[(n, latency_ms, wrong), (10, 900, 0)])
    }

    /// A measurement of classes `login`, `home`, `search` (as many as given), each with
    /// `(requests, latency_ms, wrong answers)`.
    fn classes(spec: &[(u64, u64, u64)]) -> PhaseMeasurement {
        let names: Vec<String> = ["login", "home", "search"]
            .iter()
            .take(spec.len())
            .map(|n| (*n).to_owned())
            .collect();
        let mut r = PhaseRecorder::new(&names, Duration::ZERO, 200 * MS, Duration::from_secs(1));
        for (op, &(n, latency_ms, wrong)) in spec.iter().enumerate() {
            for i in 0..n {
                let t = Duration::from_millis(i);
                r.sent(op, t, t);
                let outcome = if i < wrong {
                    Outcome::WrongAnswer("expected status 200, got 401".into())
                } else {
                    Outcome::Ok
                };
                r.completed(op, t, t, t + Duration::from_millis(latency_ms), &outcome);
            }
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
    fn a_class_with_enough_requests_is_judged_alone_and_says_nothing_of_pooling() {
        let j = judge_step(&measurement(200, 20, 0), &slo(), &[]);
        assert_eq!((j.basis, j.note), (JudgementBasis::PerClass, None));
    }

    /// Regression: a step "held" when every class was below `slo.min-requests`, because no class
    /// was judged at all. Two classes of 60 requests at 340 ms now break the SLO together.
    #[test]
    fn when_no_class_has_enough_requests_they_are_judged_pooled() {
        let j = judge_step(&classes(&[(60, 340, 0), (60, 340, 3)]), &slo(), &[]);
        assert!(!j.holds, "{j:?}");
        assert_eq!(j.basis, JudgementBasis::Pooled);
        assert_eq!(j.unjudged, ["login", "home"]);
        insta::assert_snapshot!(j.note.unwrap_or_default(), @"judged pooled: no class had 100 requests");
        insta::assert_snapshot!(j.reasons.join("\n"), @r"
        all classes pooled p50 340 ms > 50 ms
        all classes pooled p99 340 ms > 200 ms
        all classes pooled errors 2.5% > 1.0%
        ");
    }

    #[test]
    fn pooled_classes_that_meet_the_slo_hold() {
        let j = judge_step(
            &classes(&[(60, 20, 0), (50, 20, 0), (5, 20, 0)]),
            &slo(),
            &[],
        );
        assert!(j.holds, "{j:?}");
        assert_eq!(j.basis, JudgementBasis::Pooled);
    }

    #[test]
    fn the_pooled_error_rate_leaves_out_exempt_classes() {
        let m = classes(&[(60, 20, 30), (60, 20, 0)]);
        assert!(!judge_step(&m, &slo(), &[]).holds);
        let j = judge_step(&m, &slo(), &["login".to_owned()]);
        assert!(j.holds, "{j:?}");
    }

    #[test]
    fn too_few_requests_even_pooled_neither_hold_nor_judge() {
        let j = judge_step(&classes(&[(40, 900, 0), (40, 900, 0)]), &slo(), &[]);
        assert!(!j.holds);
        assert!(j.too_few_requests());
        assert!(j.reasons.is_empty(), "nothing was judged: {j:?}");
        insta::assert_snapshot!(j.note.unwrap_or_default(), @"too few requests to judge: 80 in all classes together, fewer than slo.min-requests (100); neither held nor broke");
    }

    #[test]
    fn judgements_written_before_the_basis_was_recorded_still_load() {
        let j: StepJudgement =
            serde_json::from_str(r#"{"holds":true,"reasons":[],"unjudged":["home"]}"#)
                .expect("deserializes");
        assert_eq!((j.basis, j.note), (JudgementBasis::PerClass, None));
    }

    #[test]
    fn slow_failing_classes_are_overload_not_a_bug() {
        let m = measurement(200, 400, 60);
        assert!(first_step_failures(&m, &slo()).is_empty());
    }
}
