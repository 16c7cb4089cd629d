//! Synthetic runs for the comparison's tests: soaks of two operation classes drawn from a seed,
//! with a chosen scale, tail, drift and error share, and the gate and options the tests use.

use super::figures::RunFigures;
use super::options::CompareOptions;
use crate::config::GateConfig;
use crate::measure::{FinishInfo, Outcome as RequestOutcome, PhaseMeasurement, PhaseRecorder};
use crate::result::{Comparison, Metric, MetricOutcome};
use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// The gate of the tests: the defaults of `defaults.toml`.
pub(super) fn gate() -> GateConfig {
    GateConfig {
        p50_change: 0.05,
        p99_change: 0.10,
        capacity_loss: 0.10,
        error_rate_increase: 0.005,
        rss_slope_bytes_per_sec: 2.0 * 1024.0 * 1024.0 / 60.0,
        p50_floor: Duration::ZERO,
        p99_floor: Duration::ZERO,
        operations: Vec::new(),
    }
}

/// How a synthetic soak is drawn.
#[derive(Clone, Copy)]
pub(super) struct Shape {
    /// 1 s windows of the soak.
    pub(super) windows: u32,
    /// Requests per window.
    pub(super) per_window: u32,
    /// Every latency is multiplied by this.
    pub(super) scale: f64,
    /// The slow path (3% of requests, which makes p99) is multiplied by this too.
    pub(super) tail: f64,
    /// The body of the `slow` operation (a third of the requests) is multiplied by this too.
    pub(super) slow_op: f64,
    /// Standard deviation of the log of a window's slowdown (AR(1), φ = 0.7).
    pub(super) drift: f64,
    /// The share of requests answered wrongly.
    pub(super) errors: f64,
    /// The offered session rate the phase records.
    pub(super) sessions_per_sec: f64,
}

/// The usual soak: 40 windows of 150 requests, a little drift, no errors.
pub(super) const SHAPE: Shape = Shape {
    windows: 40,
    per_window: 150,
    scale: 1.0,
    tail: 1.0,
    slow_op: 1.0,
    drift: 0.02,
    errors: 0.0,
    sessions_per_sec: 50.0,
};

/// A standard normal draw (Box–Muller).
pub(super) fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A soak of two operation classes, `fast` and `slow`, drawn from `seed`.
pub(super) fn soak(seed: u64, s: Shape) -> PhaseMeasurement {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let names = ["fast".to_owned(), "slow".to_owned()];
    let mut r = PhaseRecorder::new(
        &names,
        Duration::ZERO,
        Duration::from_millis(500),
        Duration::from_secs(1),
    );
    let mut events = Vec::new();
    let mut level = 0.0;
    for w in 0..s.windows {
        level = 0.7 * level + (1.0f64 - 0.49).sqrt() * s.drift * normal(&mut rng);
        for j in 0..s.per_window {
            let intended =
                Duration::from_secs(u64::from(w)) + Duration::from_secs(1) * j / s.per_window;
            let op = usize::from(j % 3 == 0);
            let body = if op == 0 { 2.0 } else { 4.0 * s.slow_op } * (0.3 * normal(&mut rng)).exp();
            let slow = if rng.random::<f64>() < 0.03 {
                20.0 * (0.2 * normal(&mut rng)).exp() * s.tail
            } else {
                0.0
            };
            let ms = (body + slow) * s.scale * level.exp();
            let done = intended + Duration::from_secs_f64(ms / 1e3);
            let error = rng.random::<f64>() < s.errors;
            events.push((done, intended, op, error));
        }
    }
    events.sort_by_key(|e| e.0);
    for (done, intended, op, error) in events {
        r.arrival(intended);
        r.sent(op, intended, intended);
        let outcome = if error {
            RequestOutcome::HttpError(500)
        } else {
            RequestOutcome::Ok
        };
        r.completed(op, intended, intended, done, &outcome);
    }
    let end = Duration::from_secs(u64::from(s.windows));
    r.finish(FinishInfo {
        name: "soak".to_owned(),
        seed,
        sessions_per_sec: s.sessions_per_sec,
        arrivals_end: end,
        end,
        max_lag: Duration::from_secs(1),
        max_drop_rate: 0.01,
        generator_cpu: None,
        generator_core: None,
        stopped: None,
    })
}

/// The figures of a run that measured `phase` and nothing else.
pub(super) fn figures(phase: PhaseMeasurement) -> RunFigures {
    RunFigures {
        commit: None,
        phase: Some(phase),
        knee: None,
        rss: Vec::new(),
        rss_slope: None,
        production_sessions_per_sec: None,
        calibration: None,
        calibration_drift: None,
    }
}

/// The default options with fewer resamples, for speed.
pub(super) fn fast_options() -> CompareOptions {
    CompareOptions {
        resamples: 300,
        ..CompareOptions::default()
    }
}

/// The outcome of `metric` (of `operation`) in `c`.
pub(super) fn outcome_of(c: &Comparison, metric: Metric, operation: Option<&str>) -> MetricOutcome {
    c.metrics
        .iter()
        .find(|m| m.metric == metric && m.operation.as_deref() == operation)
        .unwrap_or_else(|| panic!("{metric:?} {operation:?} in {c:#?}"))
        .outcome
}
