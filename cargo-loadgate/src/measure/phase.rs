//! What one phase measured: the recorder the engine feeds while the phase runs, and the
//! serializable [`PhaseMeasurement`] with its [`PhaseSummary`].

use super::counters::{OperationCounters, Outcome, PhaseCounters, TransportErrorKind};
use super::histogram::LatencyHistogram;
use super::window::{Window, WindowSeries, millis};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Histograms and counters of one operation over the measured part of a phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperationMeasurement {
    /// The operation's name.
    pub name: String,
    /// Latency from the intended send time to the end of the answer (no coordinated omission).
    /// Holds every answered request and every timeout; connect, reset and other transport errors
    /// have no meaningful latency and are only counted.
    pub latency: LatencyHistogram,
    /// Service time from the actual send to the end of the answer, for the same requests.
    pub service: LatencyHistogram,
    /// Counters.
    pub counters: OperationCounters,
}

impl OperationMeasurement {
    /// An empty measurement for operation `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            latency: LatencyHistogram::new(),
            service: LatencyHistogram::new(),
            counters: OperationCounters::default(),
        }
    }

    /// Adds the histograms and counters of `other` (of the same operation).
    pub fn merge(&mut self, other: &OperationMeasurement) {
        self.latency.merge(&other.latency);
        self.service.merge(&other.service);
        self.counters.merge(&other.counters);
    }
}

/// Why a phase's figures prove nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "reason")]
pub enum InvalidReason {
    /// The generator could not keep its schedule: the pacing lag's p99 was past the limit.
    Lag {
        /// The measured lag p99.
        #[serde(rename = "p99_ms", with = "millis")]
        p99: Duration,
        /// The limit (`generator.max-lag`).
        #[serde(rename = "limit_ms", with = "millis")]
        limit: Duration,
    },
    /// Too many arrivals were dropped because `max_in_flight` requests were outstanding.
    Drops {
        /// The dropped share of arrivals.
        rate: f64,
        /// The limit (`generator.max-drop-rate`).
        limit: f64,
    },
}

impl std::fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InvalidReason::Lag { p99, limit } => write!(
                f,
                "pacing lag p99 {:.3} ms exceeds the limit of {:.3} ms",
                p99.as_secs_f64() * 1e3,
                limit.as_secs_f64() * 1e3
            ),
            InvalidReason::Drops { rate, limit } => write!(
                f,
                "{:.2}% of arrivals were dropped at the in-flight cap, above the limit of {:.2}%",
                rate * 100.0,
                limit * 100.0
            ),
        }
    }
}

/// Whether a phase's figures can be trusted. An invalid phase is never a pass.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    /// Every reason the phase is invalid; empty when it is valid.
    pub reasons: Vec<InvalidReason>,
}

impl Validity {
    /// Whether no reason was found.
    pub fn is_valid(&self) -> bool {
        self.reasons.is_empty()
    }

    /// Judges the generator's own figures against its limits.
    pub fn judge(lag_p99: Duration, max_lag: Duration, drop_rate: f64, max_drop_rate: f64) -> Self {
        let mut reasons = Vec::new();
        if lag_p99 > max_lag {
            reasons.push(InvalidReason::Lag {
                p99: lag_p99,
                limit: max_lag,
            });
        }
        if drop_rate > max_drop_rate {
            reasons.push(InvalidReason::Drops {
                rate: drop_rate,
                limit: max_drop_rate,
            });
        }
        Self { reasons }
    }
}

/// Everything one phase measured. Flat in memory: histograms, counters and windows only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseMeasurement {
    /// The phase's name.
    pub name: String,
    /// The seed of its schedule.
    pub seed: u64,
    /// The offered session arrival rate.
    pub sessions_per_sec: f64,
    /// The warm-up, excluded from every figure.
    #[serde(rename = "warmup_ms", with = "millis")]
    pub warmup: Duration,
    /// How long arrivals were measured after the warm-up (shorter than planned when stopped).
    #[serde(rename = "measured_ms", with = "millis")]
    pub measured: Duration,
    /// Per operation, in the workload's order.
    pub operations: Vec<OperationMeasurement>,
    /// Pacing lag: actual send minus intended send, of every measured request.
    pub lag: LatencyHistogram,
    /// Phase-level counters.
    pub counters: PhaseCounters,
    /// The 1 s series.
    pub windows: WindowSeries,
    /// Requests sent in the whole phase, warm-up included (the denominator of the CPU cost).
    pub requests_total: u64,
    /// CPU time of the generator thread over the whole phase, warm-up included.
    #[serde(rename = "generator_cpu_ms", with = "option_millis")]
    pub generator_cpu: Option<Duration>,
    /// The core the generator thread was pinned to, if any.
    pub generator_core: Option<usize>,
    /// Why the phase ended before its planned duration, if it did.
    pub stopped: Option<String>,
    /// Whether the generator kept its schedule.
    pub validity: Validity,
}

/// Serde helpers writing an optional `Duration` as fractional milliseconds.
mod option_millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_some(&(d.as_secs_f64() * 1e3)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        match Option::<f64>::deserialize(d)? {
            Some(ms) => Duration::try_from_secs_f64(ms / 1e3)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}

/// Percentiles and counts of one operation (or of all of them), for people and the CLI.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperationSummary {
    /// The operation's name, or `total`.
    pub name: String,
    /// Requests sent.
    pub requests: u64,
    /// Correct answers.
    pub ok: u64,
    /// Correct answers within the SLO latency.
    pub goodput: u64,
    /// Requests without a correct answer.
    pub errors: u64,
    /// Median latency from the intended send time.
    #[serde(rename = "p50_ms", with = "millis")]
    pub p50: Duration,
    /// 90th percentile latency from the intended send time.
    #[serde(rename = "p90_ms", with = "millis")]
    pub p90: Duration,
    /// 99th percentile latency from the intended send time.
    #[serde(rename = "p99_ms", with = "millis")]
    pub p99: Duration,
    /// 99.9th percentile latency from the intended send time.
    #[serde(rename = "p999_ms", with = "millis")]
    pub p999: Duration,
    /// Largest latency from the intended send time.
    #[serde(rename = "max_ms", with = "millis")]
    pub max: Duration,
    /// Median service time, from the actual send.
    #[serde(rename = "service_p50_ms", with = "millis")]
    pub service_p50: Duration,
    /// 99th percentile service time, from the actual send.
    #[serde(rename = "service_p99_ms", with = "millis")]
    pub service_p99: Duration,
}

impl OperationSummary {
    fn of(m: &OperationMeasurement) -> Self {
        Self {
            name: m.name.clone(),
            requests: m.counters.sent,
            ok: m.counters.ok,
            goodput: m.counters.goodput,
            errors: m.counters.errors(),
            p50: m.latency.quantile(0.5),
            p90: m.latency.quantile(0.9),
            p99: m.latency.quantile(0.99),
            p999: m.latency.quantile(0.999),
            max: m.latency.max(),
            service_p50: m.service.quantile(0.5),
            service_p99: m.service.quantile(0.99),
        }
    }
}

/// The figures a person reads first about a phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    /// The phase's name.
    pub name: String,
    /// Per operation.
    pub operations: Vec<OperationSummary>,
    /// All operations together.
    pub total: OperationSummary,
    /// The rate the target achieved: answers (HTTP responses of any outcome: correct, wrong or an
    /// HTTP error; not timeouts or other transport errors) to requests intended in the measured
    /// part, received before the measured part ended, per second of it. Past the target's capacity
    /// it falls below the offered rate; requests sent per second would not, in an open loop.
    pub achieved_rate_per_sec: f64,
    /// Pacing lag p99.
    #[serde(rename = "lag_p99_ms", with = "millis")]
    pub lag_p99: Duration,
    /// Largest pacing lag.
    #[serde(rename = "lag_max_ms", with = "millis")]
    pub lag_max: Duration,
    /// Arrivals dropped at the in-flight cap.
    pub dropped: u64,
    /// The dropped share of arrivals.
    pub drop_rate: f64,
    /// Transport errors by kind, all operations together.
    pub transport: super::counters::TransportErrors,
    /// Generator CPU time per request sent, in microseconds.
    pub cpu_us_per_request: Option<f64>,
    /// Whether the generator kept its schedule.
    pub valid: bool,
}

impl PhaseMeasurement {
    /// All operations merged into one.
    pub fn total(&self) -> OperationMeasurement {
        let mut total = OperationMeasurement::new("total");
        for op in &self.operations {
            total.merge(op);
        }
        total
    }

    /// Percentiles in ms, rates, errors, lag and drops, per operation and in total.
    pub fn summary(&self) -> PhaseSummary {
        let total = self.total();
        let secs = self.measured.as_secs_f64();
        let cpu_us_per_request = match (self.generator_cpu, self.requests_total) {
            (Some(cpu), n) if n > 0 => Some(cpu.as_secs_f64() * 1e6 / n as f64),
            _ => None,
        };
        PhaseSummary {
            name: self.name.clone(),
            operations: self.operations.iter().map(OperationSummary::of).collect(),
            achieved_rate_per_sec: if secs > 0.0 {
                self.windows.answered_before(self.measured) / secs
            } else {
                0.0
            },
            transport: total.counters.transport.clone(),
            total: OperationSummary::of(&total),
            lag_p99: self.lag.quantile(0.99),
            lag_max: self.lag.max(),
            dropped: self.counters.dropped,
            drop_rate: self.counters.drop_rate(),
            cpu_us_per_request,
            valid: self.validity.is_valid(),
        }
    }
}

/// A live view of a running phase, given to the progress callback once per window.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// The phase's name.
    pub phase: String,
    /// Time since the phase started, warm-up included.
    pub elapsed: Duration,
    /// Whether the warm-up is still running.
    pub warming_up: bool,
    /// Requests sent so far, warm-up included.
    pub sent: u64,
    /// HTTP answers received so far (any outcome, not timeouts or transport errors), warm-up
    /// included.
    pub answered: u64,
    /// Requests outstanding now.
    pub in_flight: usize,
    /// Measured arrivals dropped so far.
    pub dropped: u64,
    /// The window that just closed, when the measured part has started.
    pub window: Option<Window>,
}

/// Feeds a phase's figures as the engine reports events. Times are offsets from the phase's
/// origin, read once per event from the engine's monotonic clock, and never go backwards.
#[derive(Debug)]
pub struct PhaseRecorder {
    warmup: Duration,
    slo_latency: Duration,
    operations: Vec<OperationMeasurement>,
    lag: LatencyHistogram,
    counters: PhaseCounters,
    windows: WindowSeries,
    /// Windows already returned by [`PhaseRecorder::roll_to`].
    reported: usize,
    requests_total: u64,
    answers_total: u64,
}

impl PhaseRecorder {
    /// A recorder for operations `names` (indexed as given), excluding requests intended before
    /// `warmup`, counting goodput within `slo_latency`, with windows of `window`.
    pub fn new(
        names: &[String],
        warmup: Duration,
        slo_latency: Duration,
        window: Duration,
    ) -> Self {
        Self {
            warmup,
            slo_latency,
            operations: names.iter().map(OperationMeasurement::new).collect(),
            lag: LatencyHistogram::new(),
            counters: PhaseCounters::default(),
            windows: WindowSeries::new(window),
            reported: 0,
            requests_total: 0,
            answers_total: 0,
        }
    }

    /// Whether a request intended at `intended` counts (it is past the warm-up).
    pub fn is_measured(&self, intended: Duration) -> bool {
        intended >= self.warmup
    }

    fn window_time(&self, at: Duration) -> Duration {
        at.saturating_sub(self.warmup)
    }

    /// A request came due at `intended`.
    pub fn arrival(&mut self, intended: Duration) {
        if self.is_measured(intended) {
            self.counters.arrivals += 1;
        }
    }

    /// A request due at `intended` was dropped at the in-flight cap.
    pub fn dropped(&mut self, intended: Duration) {
        if self.is_measured(intended) {
            self.counters.dropped += 1;
        }
    }

    /// A session whose first step is intended at `start` sent that step.
    pub fn session_started(&mut self, start: Duration) {
        if self.is_measured(start) {
            self.counters.sessions_started += 1;
        }
    }

    /// A session that started at `start` ended: having run every step, or abandoned.
    pub fn session_ended(&mut self, start: Duration, completed: bool) {
        if self.is_measured(start) {
            if completed {
                self.counters.sessions_completed += 1;
            } else {
                self.counters.sessions_abandoned += 1;
            }
        }
    }

    /// Operation `op`'s request intended at `intended` was sent at `sent_at`.
    pub fn sent(&mut self, op: usize, intended: Duration, sent_at: Duration) {
        self.requests_total += 1;
        if !self.is_measured(intended) {
            return;
        }
        self.lag.record(sent_at.saturating_sub(intended));
        if let Some(m) = self.operations.get_mut(op) {
            m.counters.sent += 1;
        }
        let at = self.window_time(sent_at);
        self.windows.record_sent(at);
    }

    /// Operation `op`'s request got its `outcome` at `done`.
    pub fn completed(
        &mut self,
        op: usize,
        intended: Duration,
        sent_at: Duration,
        done: Duration,
        outcome: &Outcome,
    ) {
        if outcome.is_answer() {
            self.answers_total += 1;
        }
        if !self.is_measured(intended) {
            return;
        }
        let latency = done.saturating_sub(intended);
        let has_latency = !matches!(
            outcome,
            Outcome::Transport(
                TransportErrorKind::Connect | TransportErrorKind::Reset | TransportErrorKind::Other
            )
        );
        if let Some(m) = self.operations.get_mut(op) {
            m.counters.add(outcome, latency <= self.slo_latency);
            if has_latency {
                m.latency.record(latency);
                m.service.record(done.saturating_sub(sent_at));
            }
        }
        let at = self.window_time(done);
        self.windows
            .record_completed(at, latency, outcome.is_error(), outcome.is_answer());
    }

    /// Closes the windows that ended by `now` and returns, in order, every window closed since the
    /// last call — also those a recorded event closed in between (an answer arriving after a
    /// window's end closes it), so that no window escapes the abort conditions.
    pub fn roll_to(&mut self, now: Duration) -> Vec<Window> {
        if now <= self.warmup {
            return Vec::new();
        }
        let at = self.window_time(now);
        let windows = self.windows.roll_to(at);
        let fresh = windows.get(self.reported..).unwrap_or_default().to_vec();
        self.reported = windows.len();
        fresh
    }

    /// Requests sent so far, warm-up included.
    pub fn requests_total(&self) -> u64 {
        self.requests_total
    }

    /// HTTP answers received so far, warm-up included.
    pub fn answers_total(&self) -> u64 {
        self.answers_total
    }

    /// Measured arrivals dropped so far.
    pub fn dropped_so_far(&self) -> u64 {
        self.counters.dropped
    }

    /// The phase's figures. `end` is when the phase stopped (offset from its origin, grace included).
    pub fn finish(mut self, info: FinishInfo) -> PhaseMeasurement {
        self.windows.finish(self.window_time(info.end));
        let lag_p99 = self.lag.quantile(0.99);
        let validity = Validity::judge(
            lag_p99,
            info.max_lag,
            self.counters.drop_rate(),
            info.max_drop_rate,
        );
        PhaseMeasurement {
            name: info.name,
            seed: info.seed,
            sessions_per_sec: info.sessions_per_sec,
            warmup: self.warmup,
            measured: info.arrivals_end.saturating_sub(self.warmup),
            operations: self.operations,
            lag: self.lag,
            counters: self.counters,
            windows: self.windows,
            requests_total: self.requests_total,
            generator_cpu: info.generator_cpu,
            generator_core: info.generator_core,
            stopped: info.stopped,
            validity,
        }
    }
}

/// What the engine knows at the end of a phase, for [`PhaseRecorder::finish`].
#[derive(Clone, Debug, PartialEq)]
pub struct FinishInfo {
    /// The phase's name.
    pub name: String,
    /// The seed of its schedule.
    pub seed: u64,
    /// The offered session arrival rate.
    pub sessions_per_sec: f64,
    /// When arrivals stopped (the planned end, or the time of a stop), from the phase's origin.
    pub arrivals_end: Duration,
    /// When the last outstanding request ended (grace included), from the phase's origin.
    pub end: Duration,
    /// The lag p99 limit.
    pub max_lag: Duration,
    /// The dropped share limit.
    pub max_drop_rate: f64,
    /// The generator thread's CPU time over the phase.
    pub generator_cpu: Option<Duration>,
    /// The core the generator was pinned to.
    pub generator_core: Option<usize>,
    /// Why the phase stopped early.
    pub stopped: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn info(end_ms: u32) -> FinishInfo {
        FinishInfo {
            name: "p".into(),
            seed: 1,
            sessions_per_sec: 100.0,
            arrivals_end: end_ms * MS,
            end: end_ms * MS,
            max_lag: 5 * MS,
            max_drop_rate: 0.01,
            generator_cpu: Some(10 * MS),
            generator_core: None,
            stopped: None,
        }
    }

    fn recorder() -> PhaseRecorder {
        PhaseRecorder::new(
            &["a".to_owned(), "b".to_owned()],
            1_000 * MS,
            100 * MS,
            Duration::from_secs(1),
        )
    }

    #[test]
    fn warmup_is_excluded_from_figures_but_not_from_cpu_denominator() {
        let mut r = recorder();
        r.arrival(500 * MS);
        r.sent(0, 500 * MS, 501 * MS);
        r.completed(0, 500 * MS, 501 * MS, 510 * MS, &Outcome::Ok);
        r.arrival(1_500 * MS);
        r.sent(1, 1_500 * MS, 1_502 * MS);
        r.completed(1, 1_500 * MS, 1_502 * MS, 1_700 * MS, &Outcome::Ok);
        let m = r.finish(info(3_000));
        assert_eq!(m.requests_total, 2);
        assert_eq!(m.operations[0].counters.sent, 0);
        assert_eq!(m.operations[1].counters.sent, 1);
        assert_eq!(
            m.operations[1].counters.goodput, 0,
            "200 ms is past the 100 ms SLO"
        );
        assert_eq!(m.counters.arrivals, 1);
        assert_eq!(m.measured, 2_000 * MS);
        let s = m.summary();
        assert_eq!(s.total.requests, 1);
        assert!((s.achieved_rate_per_sec - 0.5).abs() < 1e-9);
        assert_eq!(s.cpu_us_per_request, Some(5_000.0));
        assert!(s.valid);
    }

    /// Regression: "achieved" counted requests sent, so in an open loop it always equalled the
    /// offered rate, even past the knee.
    #[test]
    fn achieved_counts_answers_received_in_the_measured_part_not_requests_sent() {
        let mut r = recorder();
        let mut late = Vec::new();
        for i in 0..100u32 {
            let t = (1_000 + 20 * i) * MS;
            r.arrival(t);
            r.sent(0, t, t);
            let outcome = match i % 10 {
                // Correct and wrong answers and HTTP errors are answers.
                0..=4 => Outcome::Ok,
                5 => Outcome::WrongAnswer("expected 200".into()),
                6 | 7 => Outcome::HttpError(503),
                // A connect error is none.
                8 => Outcome::Transport(TransportErrorKind::Connect),
                // An answer after the measured part ended (in the grace) is not counted either.
                _ => {
                    late.push(t);
                    continue;
                }
            };
            r.completed(0, t, t, t + MS, &outcome);
        }
        for t in late {
            r.completed(0, t, t, 3_500 * MS, &Outcome::Ok);
        }
        let mut end = info(3_000);
        end.end = 3_600 * MS;
        let s = r.finish(end).summary();
        assert_eq!(s.total.requests, 100);
        assert!(
            (s.achieved_rate_per_sec - 40.0).abs() < 1e-9,
            "{}",
            s.achieved_rate_per_sec
        );
    }

    #[test]
    fn latency_counts_from_intended_and_service_from_sent() {
        let mut r = recorder();
        r.sent(0, 2_000 * MS, 2_300 * MS);
        r.completed(0, 2_000 * MS, 2_300 * MS, 2_310 * MS, &Outcome::Ok);
        let m = r.finish(info(3_000));
        let op = &m.operations[0];
        assert_eq!(op.latency.max().as_millis(), 310);
        assert_eq!(op.service.max().as_millis(), 10);
        assert_eq!(m.lag.max().as_millis(), 300);
        // 300 ms lag against a 5 ms limit.
        assert!(!m.validity.is_valid());
        assert!(matches!(m.validity.reasons[0], InvalidReason::Lag { .. }));
    }

    #[test]
    fn connect_errors_have_no_latency_but_timeouts_do() {
        let mut r = recorder();
        let t = 2_000 * MS;
        r.completed(
            0,
            t,
            t,
            t + MS,
            &Outcome::Transport(TransportErrorKind::Connect),
        );
        r.completed(
            0,
            t,
            t,
            t + 50 * MS,
            &Outcome::Transport(TransportErrorKind::Timeout),
        );
        let m = r.finish(info(3_000));
        assert_eq!(m.operations[0].latency.count(), 1);
        assert_eq!(m.operations[0].counters.transport.total(), 2);
        assert_eq!(m.windows.windows[1].errors, 2);
    }

    #[test]
    fn drops_past_the_limit_make_the_phase_invalid() {
        let mut r = recorder();
        for i in 0..100 {
            r.arrival((1_000 + i) * MS);
        }
        r.dropped(1_050 * MS);
        r.dropped(1_051 * MS);
        let m = r.finish(info(3_000));
        assert_eq!(m.counters.dropped, 2);
        assert_eq!(
            m.validity.reasons,
            vec![InvalidReason::Drops {
                rate: 0.02,
                limit: 0.01
            }]
        );
        insta::assert_snapshot!(m.validity.reasons[0].to_string(), @"2.00% of arrivals were dropped at the in-flight cap, above the limit of 1.00%");
    }

    #[test]
    fn roll_to_reports_closed_windows_after_warmup_only() {
        let mut r = recorder();
        assert_eq!(r.roll_to(900 * MS), vec![]);
        r.sent(0, 1_100 * MS, 1_100 * MS);
        assert_eq!(r.roll_to(1_900 * MS), vec![]);
        let w = r.roll_to(2_000 * MS);
        assert_eq!(w.len(), 1, "window 0 closed");
        assert_eq!(w[0].sent, 1);
        assert_eq!(r.roll_to(2_100 * MS), vec![], "reported once");
    }

    #[test]
    fn roll_to_reports_windows_that_events_closed() {
        let mut r = recorder();
        r.sent(0, 1_100 * MS, 1_100 * MS);
        // An answer 2.5 s in closes windows 0 and 1 (1.0–2.0 s and 2.0–3.0 s is still open)
        // before the engine's next tick.
        r.completed(0, 1_100 * MS, 1_100 * MS, 3_500 * MS, &Outcome::Ok);
        let w = r.roll_to(3_600 * MS);
        assert_eq!(w.len(), 2, "{w:?}");
        assert_eq!((w[0].sent, w[1].sent), (1, 0));
        assert_eq!(r.roll_to(4_000 * MS).len(), 1);
    }

    #[test]
    fn measurement_round_trips_through_json() {
        let mut r = recorder();
        r.arrival(1_200 * MS);
        r.sent(0, 1_200 * MS, 1_201 * MS);
        r.completed(
            0,
            1_200 * MS,
            1_201 * MS,
            1_230 * MS,
            &Outcome::HttpError(503),
        );
        let m = r.finish(info(2_500));
        let json = serde_json::to_string(&m).expect("serializes");
        let back: PhaseMeasurement = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back.operations, m.operations);
        assert_eq!(back.summary(), m.summary());
    }
}
