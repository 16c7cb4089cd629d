//! Counters: per operation (sent, correct, wrong answers, HTTP errors, transport errors) and per
//! phase (arrivals, drops, sessions).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How many example messages of wrong answers are kept per operation.
pub const WRONG_ANSWER_EXAMPLES: usize = 3;

/// What became of one request that was sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// An answer that passed every check of the operation.
    Ok,
    /// An answer that failed a check of the operation; the message says which.
    WrongAnswer(String),
    /// An answer with a status the operation does not accept, 400 or above.
    HttpError(u16),
    /// No complete answer.
    Transport(TransportErrorKind),
}

impl Outcome {
    /// Whether the request counts as an error (anything but [`Outcome::Ok`]).
    pub fn is_error(&self) -> bool {
        !matches!(self, Outcome::Ok)
    }

    /// Whether an HTTP response came back, right or wrong (anything but a transport error).
    pub fn is_answer(&self) -> bool {
        !matches!(self, Outcome::Transport(_))
    }
}

/// Why no complete answer arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransportErrorKind {
    /// The TCP connection (or the HTTP handshake on it) could not be established.
    Connect,
    /// The connection was reset or closed before the answer was complete.
    Reset,
    /// No complete answer within the request timeout (or within the grace at the end of a phase).
    Timeout,
    /// Any other failure: a malformed answer, a protocol error.
    Other,
}

/// Transport errors by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransportErrors {
    /// Connection could not be established.
    pub connect: u64,
    /// Connection reset or closed mid-answer.
    pub reset: u64,
    /// Request timed out.
    pub timeout: u64,
    /// Anything else.
    pub other: u64,
}

impl TransportErrors {
    /// The sum over all kinds.
    pub fn total(&self) -> u64 {
        self.connect + self.reset + self.timeout + self.other
    }

    /// Adds one error of `kind`.
    pub fn add(&mut self, kind: TransportErrorKind) {
        match kind {
            TransportErrorKind::Connect => self.connect += 1,
            TransportErrorKind::Reset => self.reset += 1,
            TransportErrorKind::Timeout => self.timeout += 1,
            TransportErrorKind::Other => self.other += 1,
        }
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &TransportErrors) {
        self.connect += other.connect;
        self.reset += other.reset;
        self.timeout += other.timeout;
        self.other += other.other;
    }
}

/// Counters of one operation over the measured part of a phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OperationCounters {
    /// Requests sent.
    pub sent: u64,
    /// Correct answers (any latency).
    pub ok: u64,
    /// Correct answers within the SLO latency, measured from the intended send time.
    pub goodput: u64,
    /// Answers that failed a check.
    pub wrong_answer: u64,
    /// Up to three example messages of wrong answers, the first ones seen.
    pub wrong_answer_examples: Vec<String>,
    /// Unaccepted statuses of 400 and above, by status code.
    pub http_error: BTreeMap<u16, u64>,
    /// Requests without a complete answer, by kind.
    pub transport: TransportErrors,
    /// Requests that came due and were not sent because `generator.max-in-flight` requests were
    /// outstanding. They are failures: requests the user wanted answered and that got no answer
    /// (counted in [`OperationCounters::errors`] and [`OperationCounters::requests`], never in
    /// goodput). Whose failure they were is the phase's [`super::Validity`] attribution. Zero in
    /// results written before drops were counted per operation.
    #[serde(default)]
    pub dropped: u64,
    /// Attempts past the first (`generator.retry`): every other count here is of logical
    /// operations, so attempts sent are `sent + retries`. Absent when zero, and in results
    /// written before retries existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u64,
    /// Logical operations that were retried at least once (whatever their final outcome).
    /// Absent when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retried: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl OperationCounters {
    /// Attempts sent: the logical operations sent plus their retries.
    pub fn attempts(&self) -> u64 {
        self.sent + self.retries
    }

    /// The extra load retries caused: attempts per logical operation sent (1 without retries);
    /// `None` when nothing was sent.
    pub fn attempts_per_operation(&self) -> Option<f64> {
        (self.sent > 0).then(|| self.attempts() as f64 / self.sent as f64)
    }

    /// Counts the outcome of one sent request; `within_slo` says whether it answered in time.
    pub fn add(&mut self, outcome: &Outcome, within_slo: bool) {
        match outcome {
            Outcome::Ok => {
                self.ok += 1;
                if within_slo {
                    self.goodput += 1;
                }
            }
            Outcome::WrongAnswer(message) => {
                self.wrong_answer += 1;
                if self.wrong_answer_examples.len() < WRONG_ANSWER_EXAMPLES {
                    self.wrong_answer_examples.push(message.clone());
                }
            }
            Outcome::HttpError(status) => *self.http_error.entry(*status).or_default() += 1,
            Outcome::Transport(kind) => self.transport.add(*kind),
        }
    }

    /// Requests that got no correct answer: wrong answers, HTTP and transport errors, and the
    /// requests dropped at the in-flight cap.
    pub fn errors(&self) -> u64 {
        self.answered_errors() + self.dropped
    }

    /// Sent requests that got no correct answer (errors without the drops).
    fn answered_errors(&self) -> u64 {
        self.wrong_answer + self.http_error.values().sum::<u64>() + self.transport.total()
    }

    /// Requests that came due: sent, or dropped at the in-flight cap. The denominator of every
    /// error rate, so a service too slow to take its load cannot hide failures in drops.
    pub fn requests(&self) -> u64 {
        self.sent + self.dropped
    }

    /// The error rate: requests without a correct answer (drops included) over the requests that
    /// came due; `None` when none came due.
    pub fn error_rate(&self) -> Option<f64> {
        let due = self.requests();
        (due > 0).then(|| self.errors() as f64 / due as f64)
    }

    /// Sent requests with an outcome (sent ones may still be outstanding while a phase runs).
    pub fn completed(&self) -> u64 {
        self.ok + self.answered_errors()
    }

    /// Adds every count of `other`; examples are kept up to the limit.
    pub fn merge(&mut self, other: &OperationCounters) {
        self.sent += other.sent;
        self.ok += other.ok;
        self.goodput += other.goodput;
        self.wrong_answer += other.wrong_answer;
        for example in &other.wrong_answer_examples {
            if self.wrong_answer_examples.len() < WRONG_ANSWER_EXAMPLES {
                self.wrong_answer_examples.push(example.clone());
            }
        }
        for (status, n) in &other.http_error {
            *self.http_error.entry(*status).or_default() += n;
        }
        self.transport.merge(&other.transport);
        self.dropped += other.dropped;
        self.retries += other.retries;
        self.retried += other.retried;
    }
}

/// What one operation sent and had acknowledged over a whole phase, warm-up included: the counts
/// a post-run audit compares with the effects the service recorded (every request the service
/// saw, not only the measured ones).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationTally {
    /// Logical operations sent (each once, however many attempts it took).
    pub logical: u64,
    /// Attempts sent: logical operations plus their retries.
    pub attempts: u64,
    /// Logical operations whose final answer passed every check of the operation.
    pub acknowledged: u64,
}

impl OperationTally {
    /// Whether nothing was counted (old results, or an operation never sent).
    pub fn is_empty(&self) -> bool {
        *self == OperationTally::default()
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &OperationTally) {
        self.logical += other.logical;
        self.attempts += other.attempts;
        self.acknowledged += other.acknowledged;
    }
}

/// Phase-level counters over the measured part of a phase.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseCounters {
    /// Requests that came due: session starts and later steps whose intended time arrived.
    pub arrivals: u64,
    /// Arrivals not sent because `max_in_flight` requests were already outstanding.
    pub dropped: u64,
    /// Sessions whose first step was sent.
    pub sessions_started: u64,
    /// Sessions that ran every planned step.
    pub sessions_completed: u64,
    /// Sessions ended early: a failed capture, a missing variable, a transport error or a drop.
    pub sessions_abandoned: u64,
}

impl PhaseCounters {
    /// The dropped share of arrivals, zero when nothing arrived.
    pub fn drop_rate(&self) -> f64 {
        if self.arrivals == 0 {
            0.0
        } else {
            self.dropped as f64 / self.arrivals as f64
        }
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &PhaseCounters) {
        self.arrivals += other.arrivals;
        self.dropped += other.dropped;
        self.sessions_started += other.sessions_started;
        self.sessions_completed += other.sessions_completed;
        self.sessions_abandoned += other.sessions_abandoned;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test_case(Outcome::Ok, true, 1, 1, 0 ; "ok in time is goodput")]
    #[test_case(Outcome::Ok, false, 1, 0, 0 ; "ok too late is not goodput")]
    #[test_case(Outcome::WrongAnswer("x".into()), true, 0, 0, 1 ; "wrong answer is an error even when fast")]
    #[test_case(Outcome::HttpError(503), true, 0, 0, 1 ; "http error")]
    #[test_case(Outcome::Transport(TransportErrorKind::Timeout), false, 0, 0, 1 ; "timeout")]
    fn add_classifies(outcome: Outcome, within_slo: bool, ok: u64, goodput: u64, errors: u64) {
        let mut c = OperationCounters::default();
        c.add(&outcome, within_slo);
        assert_eq!((c.ok, c.goodput, c.errors()), (ok, goodput, errors));
        assert_eq!(c.completed(), 1);
    }

    #[test]
    fn wrong_answer_examples_are_capped() {
        let mut c = OperationCounters::default();
        for i in 0..5 {
            c.add(&Outcome::WrongAnswer(format!("answer {i}")), true);
        }
        assert_eq!(c.wrong_answer, 5);
        assert_eq!(
            c.wrong_answer_examples,
            ["answer 0", "answer 1", "answer 2"]
        );
    }

    #[test]
    fn merge_sums_everything() {
        let mut a = OperationCounters::default();
        a.add(&Outcome::HttpError(500), true);
        a.add(&Outcome::Transport(TransportErrorKind::Connect), true);
        a.sent = 2;
        let mut b = OperationCounters::default();
        b.add(&Outcome::HttpError(500), true);
        b.add(&Outcome::HttpError(404), true);
        b.add(&Outcome::WrongAnswer("y".into()), true);
        b.sent = 3;
        a.merge(&b);
        assert_eq!(a.sent, 5);
        assert_eq!(a.http_error.get(&500), Some(&2));
        assert_eq!(a.http_error.get(&404), Some(&1));
        assert_eq!(a.transport.connect, 1);
        assert_eq!(a.errors(), 5);
        assert_eq!(a.wrong_answer_examples, ["y"]);
    }

    #[test]
    fn drops_are_errors_and_requests_but_not_completed() {
        let mut a = OperationCounters {
            sent: 3,
            dropped: 2,
            ..OperationCounters::default()
        };
        a.add(&Outcome::Ok, true);
        a.add(&Outcome::HttpError(503), true);
        let mut b = a.clone();
        b.merge(&a);
        assert_eq!((a.requests(), a.errors(), a.completed()), (5, 3, 2));
        assert_eq!((b.dropped, b.requests(), b.errors()), (4, 10, 6));
    }

    #[test_case(0, 0, 0.0 ; "nothing arrived")]
    #[test_case(1000, 10, 0.01 ; "one percent")]
    fn drop_rate(arrivals: u64, dropped: u64, expected: f64) {
        let c = PhaseCounters {
            arrivals,
            dropped,
            ..PhaseCounters::default()
        };
        assert!((c.drop_rate() - expected).abs() < 1e-12);
    }
}
