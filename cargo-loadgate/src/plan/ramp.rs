//! The capacity ramp's records: one [`StepRecord`] per step or bisection point, and the
//! [`RampOutcome`] with the knee and the one-sentence conclusion.

use super::judge::{StepJudgement, format_rate};
use crate::measure::{PhaseMeasurement, millis};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Whether a record is a configured step or a bisection point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    /// One of `ramp.steps` (phase `ramp-50%`).
    Step,
    /// A bisection point between the last step that held and the first that broke (phase
    /// `refine-1`, …).
    Refine,
    /// A step or bisection point measured again because it broke, or because the generator was
    /// starved during it (phase `ramp-150%-confirm`, `refine-1-confirm`): a break becomes the
    /// knee's upper bound only when it is confirmed.
    Confirm,
}

/// The figures of one operation class in a step. Latencies are measured from the intended send
/// time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepOperation {
    /// The operation's name.
    pub name: String,
    /// Requests sent in the measured part.
    pub requests: u64,
    /// Requests without a correct answer (wrong answers, HTTP and transport errors).
    pub errors: u64,
    /// Of those, answers that failed a check.
    pub wrong_answers: u64,
    /// Median latency.
    #[serde(rename = "p50_ms", with = "millis")]
    pub p50: Duration,
    /// 95th percentile latency.
    #[serde(rename = "p95_ms", with = "millis")]
    pub p95: Duration,
    /// 99th percentile latency.
    #[serde(rename = "p99_ms", with = "millis")]
    pub p99: Duration,
    /// Largest latency.
    #[serde(rename = "max_ms", with = "millis")]
    pub max: Duration,
}

/// One step of the ramp or one bisection point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The phase's name in the run result, e.g. `ramp-50%` or `refine-1`.
    pub phase: String,
    /// A configured step or a bisection point.
    pub kind: StepKind,
    /// The offered load as a fraction of the workload's session rate.
    pub fraction: f64,
    /// The offered session arrival rate.
    pub sessions_per_sec: f64,
    /// The request rate actually offered in the measured part: requests that came due (sent or
    /// dropped) per second. Sessions accumulate over their length, so a short step offers less
    /// than the model's steady state; the knee is stated in this measured rate, never the model's.
    pub offered_rate_per_sec: f64,
    /// The steady-state request rate the session rate implies (the user model's requests per
    /// session × sessions per second).
    pub model_rate_per_sec: f64,
    /// Answers received per second of measured time (HTTP responses of any outcome to requests
    /// intended in the measured part, received before it ended; not timeouts or other transport
    /// errors). Falls below `offered_rate_per_sec` past the target's capacity.
    pub achieved_rate_per_sec: f64,
    /// The SLO's judgement; an invalid or aborted step never holds.
    pub held: StepJudgement,
    /// Whether the generator kept its schedule. An invalid step is neither held nor broken.
    pub valid: bool,
    /// Why the step is invalid, one reason per entry.
    pub invalid_reasons: Vec<String>,
    /// Why the step stopped early (an abort condition), if it did.
    pub aborted: Option<String>,
    /// Per operation class, in the workload's order.
    pub operations: Vec<StepOperation>,
    /// Pacing lag p99.
    #[serde(rename = "lag_p99_ms", with = "millis")]
    pub lag_p99: Duration,
    /// Arrivals dropped at the in-flight cap.
    pub dropped: u64,
    /// The phase a [`StepKind::Confirm`] record measures again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirms: Option<String>,
    /// Set when this step broke (or the generator was starved during it) and its re-measurement
    /// held: why it counts as neither held nor broke. A transient is not capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transient: Option<String>,
    /// Whether the step is invalid only because the generator reached its limit (its loop
    /// saturated, or an in-flight cap too low for the rate): the ramp stops there and the knee
    /// becomes a lower bound. False in results written before it was recorded.
    #[serde(default)]
    pub generator_limit: bool,
    /// The largest share of its core the generator's loop used in a window of the step, when
    /// measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_busy: Option<f64>,
}

impl StepRecord {
    /// The record of a measured step. `judgement` is the SLO's; an invalid or aborted step is
    /// marked as not holding here.
    pub fn new(
        kind: StepKind,
        fraction: f64,
        requests_per_session: f64,
        m: &PhaseMeasurement,
        mut judgement: StepJudgement,
    ) -> Self {
        let summary = m.summary();
        let valid = m.validity.is_valid();
        if !valid {
            judgement.holds = false;
        }
        if let Some(reason) = &m.stopped {
            judgement.holds = false;
            judgement.reasons.push(format!("aborted: {reason}"));
        }
        Self {
            phase: m.name.clone(),
            kind,
            fraction,
            sessions_per_sec: m.sessions_per_sec,
            offered_rate_per_sec: if m.measured.is_zero() {
                0.0
            } else {
                m.counters.arrivals as f64 / m.measured.as_secs_f64()
            },
            model_rate_per_sec: m.sessions_per_sec * requests_per_session,
            achieved_rate_per_sec: summary.achieved_rate_per_sec,
            held: judgement,
            valid,
            invalid_reasons: m.validity.reasons.iter().map(ToString::to_string).collect(),
            aborted: m.stopped.clone(),
            operations: m
                .operations
                .iter()
                .map(|op| StepOperation {
                    name: op.name.clone(),
                    requests: op.counters.requests(),
                    errors: op.counters.errors(),
                    wrong_answers: op.counters.wrong_answer,
                    p50: op.latency.quantile(0.5),
                    p95: op.latency.quantile(0.95),
                    p99: op.latency.quantile(0.99),
                    max: op.latency.max(),
                })
                .collect(),
            lag_p99: summary.lag_p99,
            dropped: summary.dropped,
            confirms: None,
            transient: None,
            generator_limit: m.validity.is_generator_limit(),
            generator_busy: m
                .validity
                .generator
                .as_ref()
                .and_then(|g| g.busy_max.or(g.busy)),
        }
    }

    /// How the step ended, for the readers (step table, progress line, charts).
    pub fn status(&self) -> StepStatus {
        if self.transient.is_some() {
            StepStatus::Transient
        } else if !self.valid && self.generator_limit {
            StepStatus::GeneratorLimit
        } else if !self.valid {
            StepStatus::Invalid
        } else if self.aborted.is_some() {
            StepStatus::Aborted
        } else if self.held.holds {
            StepStatus::Held
        } else if self.held.too_few_requests() {
            StepStatus::TooFewRequests
        } else {
            StepStatus::Broke
        }
    }

    /// Whether the step was valid and broke the SLO (or was aborted). A step with too few
    /// requests to judge did not break (unless an abort condition stopped it).
    pub fn broke(&self) -> bool {
        matches!(self.status(), StepStatus::Aborted | StepStatus::Broke)
    }

    /// Whether the step was valid, not aborted, and had too few requests (all classes together)
    /// for the SLO to judge: it neither held nor broke.
    pub fn unjudged(&self) -> bool {
        self.status() == StepStatus::TooFewRequests
    }

    /// Whether the step was valid and held.
    pub fn holds(&self) -> bool {
        self.valid && self.held.holds && self.transient.is_none()
    }

    /// Whether the step must be measured again before it counts: it broke (a break becomes the
    /// knee only when confirmed), the generator reached its limit (a limit bounds the knee only
    /// when confirmed too), or the generator was starved (the machine, not the load).
    pub fn needs_confirmation(&self) -> bool {
        self.kind != StepKind::Confirm
            && matches!(
                self.status(),
                StepStatus::Broke
                    | StepStatus::Aborted
                    | StepStatus::GeneratorLimit
                    | StepStatus::Invalid
            )
    }

    /// Whether the step broke as measured, before any re-measurement made it a transient.
    pub fn broke_as_measured(&self) -> bool {
        self.valid
            && (self.aborted.is_some() || (!self.held.holds && !self.held.too_few_requests()))
    }
}

/// How a step ended, in the order the checks apply: a step whose re-measurement replaced it is a
/// transient; a step the generator could not pace proves nothing (at its limit, or starved); an
/// aborted one was stopped; otherwise the SLO held, broke, or had too few requests to judge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepStatus {
    /// It broke (or the generator was starved) once and held when measured again.
    Transient,
    /// The generator itself reached its limit: the load cannot go higher on this machine.
    GeneratorLimit,
    /// The generator could not keep its schedule for another reason (starved by the machine).
    Invalid,
    /// An abort condition stopped it.
    Aborted,
    /// The SLO held.
    Held,
    /// Too few requests, even all classes pooled, to judge the SLO: neither held nor broke.
    TooFewRequests,
    /// The SLO broke.
    Broke,
}

/// A rate at which the SLO broke, with why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BreakPoint {
    /// The phase that broke.
    pub phase: String,
    /// Its offered session rate.
    pub sessions_per_sec: f64,
    /// Its offered request rate.
    pub offered_rate_per_sec: f64,
    /// Why it broke.
    pub reasons: Vec<String>,
}

impl BreakPoint {
    fn of(record: &StepRecord) -> Self {
        Self {
            phase: record.phase.clone(),
            sessions_per_sec: record.sessions_per_sec,
            offered_rate_per_sec: record.offered_rate_per_sec,
            reasons: if record.valid {
                record.held.reasons.clone()
            } else {
                record.invalid_reasons.clone()
            },
        }
    }
}

/// What the ramp found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RampOutcome {
    /// Every step and bisection point, in the order they ran.
    pub steps: Vec<StepRecord>,
    /// The knee: the highest offered request rate that held, below the first step that broke.
    pub knee_rate_per_sec: Option<f64>,
    /// The knee as a session rate (what the soak and the baseline's comparison use).
    pub knee_sessions_per_sec: Option<f64>,
    /// The first configured step that broke.
    pub first_break: Option<BreakPoint>,
    /// The lowest rate that broke above the knee (bisection included): the knee lies between
    /// `knee_rate_per_sec` and this.
    pub lowest_break: Option<BreakPoint>,
    /// The conclusion in one sentence with numbers.
    pub sentence: String,
    /// Operations whose error rate was past the SLO's at the first step while their latency held:
    /// a bug, not a capacity limit. Their error rate is not judged at later steps.
    pub failing_from_first_step: Vec<String>,
    /// Whether the ramp's bracket can be trusted: every step it ran was valid, except a step at
    /// the generator's limit (which bounds the knee from below) and a step whose re-measurement
    /// replaced it. An invalid step stops the ramp.
    pub valid: bool,
    /// The step at which the generator itself reached its limit before the service broke: the
    /// knee is then a lower bound, "capacity ≥ knee, the generator's limit on this machine".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_limit: Option<BreakPoint>,
}

impl RampOutcome {
    /// Whether the invalid phase `phase` is excused: a step of a valid ramp that the generator's
    /// limit stopped (it bounds the knee from below) or that was measured again (a transient).
    /// Its invalidity voids nothing; reporters say so instead of calling it an invalid run.
    pub fn excuses(&self, phase: &str) -> bool {
        self.valid
            && self.steps.iter().any(|s| {
                s.phase == phase
                    && matches!(
                        s.status(),
                        StepStatus::GeneratorLimit | StepStatus::Transient
                    )
            })
    }

    /// The outcome of `steps` (in the order they ran): the knee, the breaks, the sentence.
    pub fn conclude(steps: Vec<StepRecord>, failing_from_first_step: Vec<String>) -> Self {
        let valid = steps.iter().all(|s| s.status() != StepStatus::Invalid);
        // A re-measurement of a configured step counts as that step.
        let origin = |s: &StepRecord| match (&s.kind, &s.confirms) {
            (StepKind::Confirm, Some(phase)) => steps
                .iter()
                .find(|o| &o.phase == phase)
                .map_or(s.kind, |o| o.kind),
            _ => s.kind,
        };
        let first_break = steps
            .iter()
            .find(|s| origin(s) == StepKind::Step && s.broke())
            .map(BreakPoint::of);
        let generator_limit = steps
            .iter()
            .find(|s| s.status() == StepStatus::GeneratorLimit)
            .map(BreakPoint::of);
        // Past the first break (with keep-going) a step that holds is noise: the knee stays below.
        // Nothing at or past the generator's limit counts either.
        let ceiling = first_break
            .iter()
            .chain(&generator_limit)
            .map(|b| b.sessions_per_sec)
            .fold(f64::INFINITY, f64::min);
        let knee = steps
            .iter()
            .filter(|s| s.holds() && s.sessions_per_sec < ceiling)
            .max_by(|a, b| a.sessions_per_sec.total_cmp(&b.sessions_per_sec));
        let floor = knee.map_or(f64::NEG_INFINITY, |k| k.sessions_per_sec);
        let lowest_break = steps
            .iter()
            .filter(|s| s.broke() && s.sessions_per_sec > floor)
            .min_by(|a, b| a.sessions_per_sec.total_cmp(&b.sessions_per_sec))
            .map(BreakPoint::of);
        let mut outcome = Self {
            knee_rate_per_sec: knee.map(|k| k.offered_rate_per_sec),
            knee_sessions_per_sec: knee.map(|k| k.sessions_per_sec),
            first_break,
            lowest_break,
            sentence: String::new(),
            failing_from_first_step,
            valid,
            generator_limit,
            steps,
        };
        outcome.sentence = sentence(&outcome);
        outcome
    }
}

/// `<rate> req/s`.
fn req_s(rate: f64) -> String {
    format!("{} req/s", format_rate(rate))
}

/// The ramp's conclusion in one sentence, e.g. "held through 400 req/s; broke at 600 req/s:
/// `login` p99 340 ms > 200 ms".
pub fn sentence(outcome: &RampOutcome) -> String {
    let held = outcome
        .knee_rate_per_sec
        .map(|k| format!("held through {}", req_s(k)));
    let mut text = if let Some(invalid) = outcome
        .steps
        .iter()
        .find(|s| s.status() == StepStatus::Invalid)
    {
        let before = held.map_or_else(
            || "nothing held before it".to_owned(),
            |h| format!("{h} before it"),
        );
        format!(
            "invalid: the ramp stopped at `{}` ({} offered) because the generator could not keep its schedule ({}); {before}",
            invalid.phase,
            req_s(invalid.offered_rate_per_sec),
            invalid.invalid_reasons.join("; ")
        )
    } else {
        match (held, &outcome.lowest_break, &outcome.generator_limit) {
            (Some(held), Some(b), _) => format!(
                "{held}; broke at {}: {}",
                req_s(b.offered_rate_per_sec),
                b.reasons.join("; ")
            ),
            (Some(held), None, Some(limit)) => format!(
                "{held}, where the generator reached its limit: capacity ≥ {} (at {}: {})",
                req_s(outcome.knee_rate_per_sec.unwrap_or_default()),
                req_s(limit.offered_rate_per_sec),
                limit.reasons.join("; ")
            ),
            (Some(held), None, None) => {
                format!("{held}, the highest step; nothing broke, so the knee lies above it")
            }
            (None, Some(b), _) => format!(
                "nothing held: even {} broke: {}",
                req_s(b.offered_rate_per_sec),
                b.reasons.join("; ")
            ),
            (None, None, Some(limit)) => format!(
                "the generator reached its limit before any step held, at {}: {}",
                req_s(limit.offered_rate_per_sec),
                limit.reasons.join("; ")
            ),
            (None, None, None) if outcome.steps.is_empty() => "nothing was measured".to_owned(),
            (None, None, None) => "nothing held and nothing broke".to_owned(),
        }
    };
    let transients: Vec<String> = outcome
        .steps
        .iter()
        .filter_map(|s| {
            s.transient
                .as_ref()
                .map(|why| format!("`{}` {why}", s.phase))
        })
        .collect();
    if !transients.is_empty() {
        text.push_str(&format!("; {}", transients.join("; ")));
    }
    let unjudged: Vec<String> = outcome
        .steps
        .iter()
        .filter(|s| s.unjudged())
        .map(|s| format!("`{}`", s.phase))
        .collect();
    if !unjudged.is_empty() {
        text.push_str(&format!(
            "; {} had too few requests to judge (fewer than slo.min-requests in all classes together) and counted as neither held nor broke",
            unjudged.join(", ")
        ));
    }
    if !outcome.failing_from_first_step.is_empty() {
        let first = outcome.steps.first();
        let described: Vec<String> = outcome
            .failing_from_first_step
            .iter()
            .map(|name| {
                let op = first.and_then(|s| s.operations.iter().find(|op| &op.name == name));
                match (op, first) {
                    (Some(op), Some(step)) if op.requests > 0 => format!(
                        "`{name}` ({:.1}% errors at {})",
                        op.errors as f64 * 100.0 / op.requests as f64,
                        req_s(step.offered_rate_per_sec)
                    ),
                    _ => format!("`{name}`"),
                }
            })
            .collect();
        text.push_str(&format!(
            "; failing from the first step: {}",
            described.join(", ")
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::JudgementBasis;

    fn step(phase: &str, sessions_per_sec: f64, held: StepJudgement) -> StepRecord {
        StepRecord {
            phase: phase.to_owned(),
            kind: StepKind::Step,
            fraction: sessions_per_sec / 100.0,
            sessions_per_sec,
            offered_rate_per_sec: sessions_per_sec * 2.0,
            model_rate_per_sec: sessions_per_sec * 2.0,
            achieved_rate_per_sec: sessions_per_sec * 2.0,
            held,
            valid: true,
            invalid_reasons: Vec::new(),
            aborted: None,
            operations: Vec::new(),
            lag_p99: Duration::ZERO,
            dropped: 0,
            confirms: None,
            transient: None,
            generator_limit: false,
            generator_busy: None,
        }
    }

    fn holds() -> StepJudgement {
        StepJudgement {
            holds: true,
            ..StepJudgement::default()
        }
    }

    fn breaks() -> StepJudgement {
        StepJudgement {
            holds: false,
            reasons: vec!["`home` p99 340 ms > 200 ms".to_owned()],
            ..StepJudgement::default()
        }
    }

    fn too_few() -> StepJudgement {
        StepJudgement {
            holds: false,
            basis: JudgementBasis::TooFewRequests,
            note: Some("too few requests to judge".to_owned()),
            ..StepJudgement::default()
        }
    }

    #[test]
    fn a_step_with_too_few_requests_is_neither_the_knee_nor_a_break() {
        let outcome = RampOutcome::conclude(
            vec![
                step("ramp-10%", 10.0, too_few()),
                step("ramp-50%", 50.0, holds()),
                step("ramp-100%", 100.0, breaks()),
            ],
            Vec::new(),
        );
        assert_eq!(outcome.knee_sessions_per_sec, Some(50.0));
        assert_eq!(
            outcome.first_break.map(|b| b.phase).as_deref(),
            Some("ramp-100%")
        );
        insta::assert_snapshot!(outcome.sentence, @"held through 100 req/s; broke at 200 req/s: `home` p99 340 ms > 200 ms; `ramp-10%` had too few requests to judge (fewer than slo.min-requests in all classes together) and counted as neither held nor broke");
    }

    #[test]
    fn a_ramp_of_unjudged_steps_says_nothing_held_or_broke() {
        let outcome = RampOutcome::conclude(vec![step("ramp-10%", 10.0, too_few())], Vec::new());
        assert_eq!(
            (outcome.knee_sessions_per_sec, outcome.first_break),
            (None, None)
        );
        assert!(
            outcome
                .sentence
                .starts_with("nothing held and nothing broke; `ramp-10%` had too few requests"),
            "{}",
            outcome.sentence
        );
    }

    #[test]
    fn an_aborted_step_breaks_even_with_too_few_requests() {
        let mut aborted = step("ramp-10%", 10.0, too_few());
        aborted.aborted = Some("p99 past 5 s".to_owned());
        assert!(aborted.broke() && !aborted.unjudged());
        assert!(!step("ramp-10%", 10.0, too_few()).broke());
    }
}
