//! What one phase measured: the recorder the engine feeds while the phase runs, and the
//! serializable [`PhaseMeasurement`] with its [`PhaseSummary`].

use super::counters::{
    OperationCounters, OperationTally, Outcome, PhaseCounters, TransportErrorKind,
};
use super::histogram::LatencyHistogram;
use super::replica::{ReplicaCounts, merge_replicas, ms_from};
use super::window::{Window, WindowHistograms, WindowMerger, WindowSeries, millis};
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
    /// Logical operations, attempts and acknowledged ones over the whole phase, warm-up
    /// included, for the post-run audit. Absent in results written before it was recorded.
    #[serde(default, skip_serializing_if = "OperationTally::is_empty")]
    pub tally: OperationTally,
}

impl OperationMeasurement {
    /// An empty measurement for operation `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            latency: LatencyHistogram::new(),
            service: LatencyHistogram::new(),
            counters: OperationCounters::default(),
            tally: OperationTally::default(),
        }
    }

    /// Adds the histograms and counters of `other` (of the same operation).
    pub fn merge(&mut self, other: &OperationMeasurement) {
        self.latency.merge(&other.latency);
        self.service.merge(&other.service);
        self.counters.merge(&other.counters);
        self.tally.merge(&other.tally);
    }
}

/// A loop of the generator is **saturated** when, over a window, it used at least this share of
/// its core (its thread's CPU time over wall time) while it fell behind: its pacing lag past
/// `generator.max-lag`, or arrivals dropped at the in-flight cap. This is the one definition of
/// "the generator was the limit": it separates a generator that could not go faster from a
/// machine that did not run it (starved: late with an idle core) and from a slow service (drops
/// while the generator idles and the answers come late). docs/phases.md states it for users.
pub const GENERATOR_SATURATED: f64 = 0.9;

/// Why the generator fell behind its schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LagCause {
    /// Its loop used at least [`GENERATOR_SATURATED`] of its core while it lagged: it could not go
    /// faster on this machine.
    Saturated,
    /// It lagged while its loop used less than that: the machine did not run it in time (another
    /// process, the hypervisor, a stall of the host).
    Starved,
    /// Its CPU time was not measured (results written before it was), so the cause is unknown.
    #[default]
    Unattributed,
}

/// Why a phase's figures prove nothing. Only the generator's own failures make a phase invalid:
/// a service too slow for its load fails its requests and is judged on them.
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
        /// Why it lagged. Older results lack it.
        #[serde(default)]
        cause: LagCause,
        /// The largest share of its core the generator's loop used in a window where it lagged,
        /// when measured.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        busy: Option<f64>,
    },
    /// Too many arrivals were dropped because `max_in_flight` requests were outstanding, and the
    /// service was not the cause: the generator was saturated, or the service answered within the
    /// SLO and the cap was too low for the offered load.
    Drops {
        /// The dropped share of arrivals.
        rate: f64,
        /// The limit (`generator.max-drop-rate`).
        limit: f64,
        /// Why the drops are the generator's. Older results lack it.
        #[serde(default)]
        cause: DropCause,
        /// The largest share of its core the generator's loop used in a window with drops, when
        /// measured.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        busy: Option<f64>,
    },
}

/// Why drops at the in-flight cap are the generator's failure rather than the service's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DropCause {
    /// The generator's loop was saturated: it read answers too late, so requests stayed in flight.
    Saturated,
    /// The service answered within the SLO: the cap is too low for this rate (Little's law: rate ×
    /// latency requests are in flight).
    CapTooLow,
    /// Written before drops were attributed.
    #[default]
    Unattributed,
}

impl InvalidReason {
    /// Whether the generator itself reached its limit (its loop saturated): the load cannot go
    /// higher on this machine, and a ramp stops there with a lower bound.
    pub fn is_generator_limit(&self) -> bool {
        matches!(
            self,
            InvalidReason::Lag {
                cause: LagCause::Saturated,
                ..
            } | InvalidReason::Drops {
                cause: DropCause::Saturated | DropCause::CapTooLow,
                ..
            }
        )
    }
}

fn busy_note(busy: Option<f64>) -> String {
    busy.map(|b| format!("{:.0}%", b * 100.0))
        .unwrap_or_else(|| "an unmeasured share".to_owned())
}

impl std::fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InvalidReason::Lag {
                p99,
                limit,
                cause,
                busy,
            } => {
                write!(
                    f,
                    "pacing lag p99 {:.3} ms exceeds the limit of {:.3} ms",
                    p99.as_secs_f64() * 1e3,
                    limit.as_secs_f64() * 1e3
                )?;
                match cause {
                    LagCause::Saturated => write!(
                        f,
                        ": the generator was saturated (its loop used {} of its core)",
                        busy_note(*busy)
                    ),
                    LagCause::Starved => write!(
                        f,
                        ": the generator was starved (its loop used only {} of its core while it \
                         fell behind: the machine did not run it in time)",
                        busy_note(*busy)
                    ),
                    LagCause::Unattributed => Ok(()),
                }
            }
            InvalidReason::Drops {
                rate,
                limit,
                cause,
                busy,
            } => {
                write!(
                    f,
                    "{:.2}% of arrivals were dropped at the in-flight cap, above the limit of {:.2}%",
                    rate * 100.0,
                    limit * 100.0
                )?;
                match cause {
                    DropCause::Saturated => write!(
                        f,
                        ": the generator was saturated (its loop used {} of its core)",
                        busy_note(*busy)
                    ),
                    DropCause::CapTooLow => write!(
                        f,
                        ": the service answered within the SLO, so generator.max-in-flight is too \
                         low for this rate"
                    ),
                    DropCause::Unattributed => Ok(()),
                }
            }
        }
    }
}

/// The generator's own health over a phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorHealth {
    /// The share of its core the generator's loop used over the whole phase (warm-up and drain
    /// included), when measured.
    pub busy: Option<f64>,
    /// The largest share in one window of the measured part, when measured.
    pub busy_max: Option<f64>,
    /// Whether the loop was saturated while it lagged past `generator.max-lag`
    /// ([`GENERATOR_SATURATED`]): the generator was the limit of this phase.
    pub saturated: bool,
}

/// Whether a phase's figures can be trusted, and whose failure its drops were. An invalid phase is
/// never a pass; it is invalid only for the metrics it gives.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    /// Every reason the phase is invalid; empty when it is valid.
    pub reasons: Vec<InvalidReason>,
    /// The generator's own health. Absent in results written before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<GeneratorHealth>,
    /// The share of arrivals dropped at the in-flight cap because the service was too slow (its
    /// answers past the SLO while the generator was not saturated). These drops count as failed
    /// requests and against goodput; the phase is judged on them, not made invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_drops: Option<f64>,
}

/// Whether the service was slow where arrivals were dropped: in a window with drops, nothing was
/// answered or the window's p99 was past the SLO's latency. Windows tell the stall that filled the
/// cap apart from a phase whose p99 stayed within the SLO; without windows with drops (results
/// written before they were counted), the phase's p99 decides.
fn service_was_slow(input: &ValidityInput<'_>) -> bool {
    let dropping: Vec<&Window> = input.windows.iter().filter(|w| w.dropped > 0).collect();
    if dropping.is_empty() {
        return input.latency_p99 > input.slo_latency;
    }
    dropping
        .iter()
        .any(|w| w.completed == 0 || w.p99 > input.slo_latency)
}

/// What [`Validity::judge`] reads.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidityInput<'a> {
    /// The measured windows, with their lag, drops and generator busy shares.
    pub windows: &'a [Window],
    /// The generator's busy share over the whole phase, when measured.
    pub busy: Option<f64>,
    /// The phase's lag p99.
    pub lag_p99: Duration,
    /// `generator.max-lag`.
    pub max_lag: Duration,
    /// The phase's dropped share of arrivals.
    pub drop_rate: f64,
    /// `generator.max-drop-rate`.
    pub max_drop_rate: f64,
    /// The latency within which an answer meets the SLO (goodput's).
    pub slo_latency: Duration,
    /// The phase's latency p99 over every operation, from the intended send time.
    pub latency_p99: Duration,
}

impl Validity {
    /// Whether no reason was found.
    pub fn is_valid(&self) -> bool {
        self.reasons.is_empty()
    }

    /// Whether the phase is invalid only because the generator reached its limit (saturated, or an
    /// in-flight cap too low for the rate): a ramp stops there with a lower bound.
    pub fn is_generator_limit(&self) -> bool {
        !self.reasons.is_empty() && self.reasons.iter().all(InvalidReason::is_generator_limit)
    }

    /// Attributes the generator's lag and drops, then judges them against its limits.
    ///
    /// - Lag past `max-lag` is always the generator's: saturated when its loop used at least
    ///   [`GENERATOR_SATURATED`] of its core in a window where it lagged (or over the phase, when no
    ///   window was measured), starved otherwise.
    /// - Drops past `max-drop-rate` are the generator's when its loop was saturated and late in a
    ///   window with drops, or when the service answered within the SLO in every window with drops
    ///   (the cap is too low for the rate); otherwise they are the service's: recorded in
    ///   `service_drops`, counted as errors, and the phase stays valid.
    pub fn judge(input: &ValidityInput<'_>) -> Self {
        let measured = input.windows.iter().any(|w| w.generator_busy.is_some());
        let busy_where = |falling_behind: &dyn Fn(&Window) -> bool| -> Option<f64> {
            if measured {
                input
                    .windows
                    .iter()
                    .filter(|w| falling_behind(w))
                    .filter_map(|w| w.generator_busy)
                    .max_by(f64::total_cmp)
                    .or(input.busy)
            } else {
                input.busy
            }
        };
        let lag_busy = busy_where(&|w: &Window| w.lag_p99 > input.max_lag);
        // Drops are the generator's own only where it also fell behind its schedule: a loop that
        // is busy but on time sends what is due, and what piles up then is the answers'.
        let drop_busy = busy_where(&|w: &Window| w.dropped > 0 && w.lag_p99 > input.max_lag);
        let saturated = |busy: Option<f64>| busy.is_some_and(|b| b >= GENERATOR_SATURATED);
        let lag_saturated = saturated(lag_busy) && input.lag_p99 > input.max_lag;
        let mut reasons = Vec::new();
        if input.lag_p99 > input.max_lag {
            reasons.push(InvalidReason::Lag {
                p99: input.lag_p99,
                limit: input.max_lag,
                cause: match lag_busy {
                    None => LagCause::Unattributed,
                    Some(_) if saturated(lag_busy) => LagCause::Saturated,
                    Some(_) => LagCause::Starved,
                },
                busy: lag_busy,
            });
        }
        let mut service_drops = None;
        if input.drop_rate > input.max_drop_rate {
            let cause = if lag_saturated && saturated(drop_busy) {
                Some(DropCause::Saturated)
            } else if !service_was_slow(input) {
                Some(DropCause::CapTooLow)
            } else {
                None
            };
            match cause {
                Some(cause) => reasons.push(InvalidReason::Drops {
                    rate: input.drop_rate,
                    limit: input.max_drop_rate,
                    cause,
                    busy: drop_busy,
                }),
                None => service_drops = Some(input.drop_rate),
            }
        }
        let generator = (input.busy.is_some() || measured).then(|| GeneratorHealth {
            busy: input.busy,
            busy_max: input
                .windows
                .iter()
                .filter_map(|w| w.generator_busy)
                .max_by(f64::total_cmp),
            saturated: lag_saturated,
        });
        Self {
            reasons,
            generator,
            service_drops,
        }
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
    /// The generator's event loops, one per core, when it ran more than one
    /// (`generator.threads`); empty (and absent from the JSON) for one loop. The figures above
    /// are then the loops' merged: `generator_cpu` their sum, `generator_core` the first loop's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loops: Vec<LoopMeasurement>,
    /// Whether the generator ran on cores the target was given too (the target was given every
    /// core, or the machine has one): its loops and the target then take time from each other,
    /// and latency includes that. Absent when false, and in results written before it was recorded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generator_shares_target_cores: bool,
    /// Each replica's figures, in replica order, when the target ran more than one
    /// (`[target] replicas`); empty (and absent from the JSON) for one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<ReplicaCounts>,
}

/// One event loop of a generator that ran several (`generator.threads`): its own thread, pinned
/// to its own core, sending the sessions `k ≡ loop (mod loops)` of the phase's schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopMeasurement {
    /// The core the loop's thread was pinned to, if any.
    pub core: Option<usize>,
    /// The loop thread's CPU time over the whole phase, warm-up included.
    #[serde(rename = "cpu_ms", with = "option_millis")]
    pub cpu: Option<Duration>,
    /// The share of its core the loop used over the whole phase, when measured.
    pub busy: Option<f64>,
    /// The largest share in one window of the measured part, when measured.
    pub busy_max: Option<f64>,
    /// Requests the loop sent in the whole phase, warm-up included.
    pub requests_total: u64,
    /// The loop's own pacing lag p99 over the measured part.
    #[serde(rename = "lag_p99_ms", with = "millis")]
    pub lag_p99: Duration,
}

impl LoopMeasurement {
    fn of(m: &PhaseMeasurement) -> Self {
        let health = m.validity.generator.as_ref();
        Self {
            core: m.generator_core,
            cpu: m.generator_cpu,
            busy: health.and_then(|g| g.busy),
            busy_max: health.and_then(|g| g.busy_max),
            requests_total: m.requests_total,
            lag_p99: m.lag.quantile(0.99),
        }
    }
}

/// The limits a phase's validity is judged against: the generator's (`max-lag`, `max-drop-rate`)
/// and the SLO's latency (whether drops were the service's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValidityLimits {
    /// `generator.max-lag`.
    pub max_lag: Duration,
    /// `generator.max-drop-rate`.
    pub max_drop_rate: f64,
    /// The latency within which an answer meets the SLO (goodput's).
    pub slo_latency: Duration,
}

impl PhaseMeasurement {
    /// Judges this measurement's validity from its own figures: the one place both a loop's
    /// [`PhaseRecorder::finish`] and the merge of several loops ([`PhaseMerge::finish`]) judge.
    /// `busy` is the generator's busy share over the whole phase (the busiest loop's).
    fn judge(&self, busy: Option<f64>, limits: &ValidityLimits) -> Validity {
        Validity::judge(&ValidityInput {
            windows: &self.windows.windows,
            busy,
            lag_p99: self.lag.quantile(0.99),
            max_lag: limits.max_lag,
            drop_rate: self.counters.drop_rate(),
            max_drop_rate: limits.max_drop_rate,
            slo_latency: limits.slo_latency,
            latency_p99: self.total().latency.quantile(0.99),
        })
    }
}

/// The merge of one phase that several loops ran, each on its shard of the schedule.
///
/// While the loops run, their closed windows are added ([`PhaseMerge::add_closed`]) and every
/// window all loops have closed comes out merged ([`PhaseMerge::complete`]), for the progress
/// display and the abort conditions. At the end [`PhaseMerge::finish`] adds the loops'
/// measurements: histograms added (lossless), counters summed, the windows merged by index, and
/// validity judged on the merged figures by the same rules as one loop's.
#[derive(Debug)]
pub struct PhaseMerge {
    merger: WindowMerger,
    windows: Vec<Window>,
}

impl PhaseMerge {
    /// A merge of `loops` loops, keeping the merged windows' histograms (for merging the result
    /// again: the shards of `run --shard i/N`).
    pub fn new(loops: usize) -> Self {
        Self {
            merger: WindowMerger::new(loops),
            windows: Vec::new(),
        }
    }

    /// Whether the merged windows' histograms stay in the measurement (`new` keeps them); a
    /// generator's loops keep them only where the phase asks ([`crate::engine::PhaseSpec`]).
    pub fn keeping_window_histograms(mut self, keep: bool) -> Self {
        self.merger = self.merger.keeping_histograms(keep);
        self
    }

    /// Adds a window one loop closed, with its histograms.
    pub fn add_closed(&mut self, window: &Window, histograms: WindowHistograms) {
        self.merger.add(window, histograms);
    }

    /// The windows that every loop has closed since the last call, merged, in order.
    pub fn complete(&mut self) -> Vec<Window> {
        let fresh = self.merger.complete();
        self.windows.extend(fresh.iter().cloned());
        fresh
    }

    /// The phase's measurement from the loops' own, in loop order (each finished by its
    /// [`PhaseRecorder`] with window histograms retained, holding those not yet added). `stopped`
    /// overrides the loops' reason to stop (the abort condition that stopped them all). `None`
    /// when `parts` is empty.
    pub fn finish(
        mut self,
        mut parts: Vec<PhaseMeasurement>,
        limits: &ValidityLimits,
        stopped: Option<String>,
    ) -> Option<PhaseMeasurement> {
        for part in &mut parts {
            for h in part.windows.release_histograms() {
                if let Some(w) = part.windows.windows.get(h.index) {
                    self.merger.add(w, h);
                }
            }
        }
        let (last, histograms) = self.merger.finish_with_histograms();
        self.windows.extend(last);
        let loops: Vec<LoopMeasurement> = parts.iter().map(LoopMeasurement::of).collect();
        let busy = loops.iter().filter_map(|l| l.busy).max_by(f64::total_cmp);
        let generator_cpu = loops.iter().map(|l| l.cpu).sum::<Option<Duration>>();
        let mut parts = parts.into_iter();
        let mut m = parts.next()?;
        m.windows.windows = std::mem::take(&mut self.windows);
        m.windows.histograms = histograms;
        for part in parts {
            for (op, other) in m.operations.iter_mut().zip(&part.operations) {
                op.merge(other);
            }
            m.lag.merge(&part.lag);
            m.counters.merge(&part.counters);
            m.requests_total += part.requests_total;
            m.measured = m.measured.max(part.measured);
            m.stopped = m.stopped.or(part.stopped);
            merge_replicas(&mut m.replicas, &part.replicas);
        }
        m.stopped = stopped.or(m.stopped);
        m.generator_cpu = generator_cpu;
        m.generator_core = loops[0].core;
        m.validity = m.judge(busy, limits);
        // One loop is recorded as it always was: by `generator_core` and `generator_cpu` alone.
        if loops.len() > 1 {
            m.loops = loops;
        }
        Some(m)
    }
}

/// Serde helpers writing an optional `Duration` as fractional milliseconds.
pub mod option_millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// Writes `value` as fractional milliseconds, or null.
    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_some(&(d.as_secs_f64() * 1e3)),
            None => s.serialize_none(),
        }
    }

    /// Reads fractional milliseconds or null.
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
    /// Requests that came due: sent, or dropped at the in-flight cap.
    pub requests: u64,
    /// Of those, the ones dropped at the in-flight cap (counted in `errors` too). Zero in results
    /// written before drops were counted per operation.
    #[serde(default)]
    pub dropped: u64,
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
            requests: m.counters.requests(),
            dropped: m.counters.dropped,
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
    /// Windows that already carry the generator's busy share.
    busy_marked: usize,
    requests_total: u64,
    answers_total: u64,
    /// Per replica, when the target has more than one ([`PhaseRecorder::track_replicas`]).
    replicas: Vec<ReplicaCounts>,
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
            busy_marked: 0,
            requests_total: 0,
            answers_total: 0,
            replicas: Vec::new(),
        }
    }

    /// Keeps figures for each of `n` replicas (none for one: a target of one replica records
    /// nothing of the kind).
    pub fn track_replicas(&mut self, n: usize) {
        if n > 1 {
            self.replicas = vec![ReplicaCounts::default(); n];
        }
    }

    /// An attempt sent to `replica` ended at `at`, `failed` when with a transport error.
    pub fn replica_attempt(&mut self, replica: usize, failed: bool, at: Duration) {
        let ms = ms_from(at, self.warmup);
        if let Some(r) = self.replicas.get_mut(replica) {
            r.attempt(failed, ms);
        }
    }

    /// An attempt that failed on `from` is sent again to another replica.
    pub fn replica_failover(&mut self, from: usize) {
        if let Some(r) = self.replicas.get_mut(from) {
            r.failovers += 1;
        }
    }

    /// `replica` was ejected.
    pub fn replica_ejected(&mut self, replica: usize) {
        if let Some(r) = self.replicas.get_mut(replica) {
            r.ejections += 1;
        }
    }

    /// A request of a session that stuck to `from` went elsewhere because `from` was ejected.
    pub fn replica_moved(&mut self, from: usize) {
        if let Some(r) = self.replicas.get_mut(from) {
            r.moved += 1;
        }
    }

    /// A logical operation whose last attempt went to `replica` ended in an error at `at`.
    pub fn replica_error(&mut self, replica: usize, at: Duration) {
        let ms = ms_from(at, self.warmup);
        if let Some(r) = self.replicas.get_mut(replica) {
            r.error(ms);
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

    /// Operation `op`'s request due at `intended` was dropped at the in-flight cap.
    pub fn dropped(&mut self, op: usize, intended: Duration) {
        if self.is_measured(intended) {
            self.counters.dropped += 1;
            if let Some(m) = self.operations.get_mut(op) {
                m.counters.dropped += 1;
            }
            let at = self.window_time(intended);
            self.windows.record_dropped(at);
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
        if let Some(m) = self.operations.get_mut(op) {
            m.tally.logical += 1;
            m.tally.attempts += 1;
        }
        if !self.is_measured(intended) {
            return;
        }
        let lag = sent_at.saturating_sub(intended);
        self.lag.record(lag);
        if let Some(m) = self.operations.get_mut(op) {
            m.counters.sent += 1;
        }
        let at = self.window_time(sent_at);
        self.windows.record_sent(at, lag);
    }

    /// Operation `op`'s logical operation intended at `intended` sent retry number `retry` (1
    /// for its first retry). It stays one logical operation: only attempts grow.
    pub fn retried(&mut self, op: usize, intended: Duration, retry: u32) {
        self.requests_total += 1;
        let measured = self.is_measured(intended);
        if let Some(m) = self.operations.get_mut(op) {
            m.tally.attempts += 1;
            if measured {
                m.counters.retries += 1;
                if retry == 1 {
                    m.counters.retried += 1;
                }
            }
        }
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
        if *outcome == Outcome::Ok
            && let Some(m) = self.operations.get_mut(op)
        {
            m.tally.acknowledged += 1;
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

    /// Records the share of its core the generator's loop used since it was last recorded, on the
    /// windows closed since then (the engine reads its CPU time once per tick, right after
    /// [`PhaseRecorder::roll_to`]).
    pub fn generator_busy(&mut self, busy: f64) {
        self.windows.set_generator_busy(self.busy_marked, busy);
        self.busy_marked = self.windows.windows.len();
    }

    /// Keeps the histograms of the windows that close from now on, for the merge of a phase run
    /// on several loops ([`PhaseRecorder::take_closed`] hands them over; what is left at the end
    /// stays in the finished measurement for [`PhaseMerge::finish`]).
    pub fn retain_window_histograms(&mut self) {
        self.windows.retain_histograms();
    }

    /// Keeps every closed window's histograms in the finished measurement (`windows.histograms`),
    /// for `cargo loadgate merge` ([`WindowSeries::keep_histograms`]).
    pub fn keep_window_histograms(&mut self) {
        self.windows.keep_histograms();
    }

    /// The windows closed since the last call, with their histograms and the generator's busy
    /// share recorded so far (call it after [`PhaseRecorder::generator_busy`]); none unless
    /// [`PhaseRecorder::retain_window_histograms`] was called.
    pub fn take_closed(&mut self) -> Vec<(Window, WindowHistograms)> {
        let histograms = self.windows.take_histograms();
        histograms
            .into_iter()
            .filter_map(|h| self.windows.windows.get(h.index).cloned().map(|w| (w, h)))
            .collect()
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
        let busy = match info.generator_cpu {
            Some(cpu) if !info.end.is_zero() => Some(cpu.as_secs_f64() / info.end.as_secs_f64()),
            _ => None,
        };
        let limits = ValidityLimits {
            max_lag: info.max_lag,
            max_drop_rate: info.max_drop_rate,
            slo_latency: self.slo_latency,
        };
        let mut m = PhaseMeasurement {
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
            validity: Validity::default(),
            loops: Vec::new(),
            generator_shares_target_cores: false,
            replicas: self.replicas,
        };
        m.validity = m.judge(busy, &limits);
        m
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

    /// 100 arrivals in the measured part, two dropped, the rest answered `latency` after their
    /// intended time; the generator's loop `busy` over the window they fall in.
    fn with_drops(latency: Duration, busy: Option<f64>, lag: Duration) -> PhaseMeasurement {
        let mut r = recorder();
        for i in 0..100u32 {
            let t = (1_000 + 5 * i) * MS;
            r.arrival(t);
            if i == 50 || i == 51 {
                r.dropped(1, t);
                continue;
            }
            r.sent(0, t, t + lag);
            r.completed(0, t, t + lag, t + latency, &Outcome::Ok);
        }
        r.roll_to(2_000 * MS);
        if let Some(busy) = busy {
            r.generator_busy(busy);
        }
        r.finish(info(3_000))
    }

    #[test]
    fn drops_while_the_service_is_slow_are_its_failures_not_an_invalid_phase() {
        // 300 ms answers against a 100 ms SLO, the generator idle: the service is the cause.
        let m = with_drops(300 * MS, Some(0.2), Duration::ZERO);
        assert!(m.validity.is_valid(), "{:?}", m.validity);
        assert_eq!(m.validity.service_drops, Some(0.02));
        assert_eq!(m.counters.dropped, 2);
        let b = &m.operations[1].counters;
        assert_eq!((b.dropped, b.requests(), b.errors()), (2, 2, 2));
        let s = m.summary();
        assert_eq!(
            (s.total.requests, s.total.errors, s.total.dropped),
            (100, 2, 2)
        );
        assert_eq!(m.windows.windows[0].failure_rate(), Some(0.02));
    }

    #[test]
    fn drops_while_the_generator_is_saturated_make_the_phase_invalid() {
        // Saturated and late: its own lag and its drops are the generator's.
        let m = with_drops(300 * MS, Some(0.95), 20 * MS);
        assert!(matches!(
            m.validity.reasons[0],
            InvalidReason::Lag {
                cause: LagCause::Saturated,
                ..
            }
        ));
        assert_eq!(
            m.validity.reasons[1],
            InvalidReason::Drops {
                rate: 0.02,
                limit: 0.01,
                cause: DropCause::Saturated,
                busy: Some(0.95),
            }
        );
        assert!(m.validity.is_generator_limit());
        assert!(m.validity.generator.as_ref().is_some_and(|g| g.saturated));
        insta::assert_snapshot!(m.validity.reasons[1].to_string(), @"2.00% of arrivals were dropped at the in-flight cap, above the limit of 1.00%: the generator was saturated (its loop used 95% of its core)");
        // Busy but on time: the answers piled up, the service was slow.
        let m = with_drops(300 * MS, Some(0.95), Duration::ZERO);
        assert!(m.validity.is_valid(), "{:?}", m.validity);
        assert_eq!(m.validity.service_drops, Some(0.02));
    }

    /// A stall that fills the cap shows in the windows with drops even when the phase's p99 stays
    /// within the SLO: the drops are the service's, not a cap too low.
    #[test]
    fn a_stall_that_fills_the_cap_is_the_services_even_with_a_good_phase_p99() {
        let mut r = recorder();
        for i in 0..400u32 {
            let t = (1_000 + 5 * i) * MS;
            r.arrival(t);
            // Window 1.0-2.0 s: a stall; its two drops and 150 ms answers against a 100 ms SLO.
            let stalled = (1_300..1_320).contains(&(t.as_millis() as u32));
            if stalled && i % 5 == 0 {
                r.dropped(0, t);
                continue;
            }
            let latency = if stalled { 150 * MS } else { 5 * MS };
            r.sent(0, t, t);
            r.completed(0, t, t, t + latency, &Outcome::Ok);
        }
        let m = r.finish(info(3_000));
        assert!(
            m.total().latency.quantile(0.99) <= 100 * MS,
            "phase p99 within the SLO"
        );
        let v = Validity::judge(&ValidityInput {
            windows: &m.windows.windows,
            busy: Some(0.2),
            lag_p99: Duration::ZERO,
            max_lag: 5 * MS,
            drop_rate: 0.02,
            max_drop_rate: 0.01,
            slo_latency: 100 * MS,
            latency_p99: m.total().latency.quantile(0.99),
        });
        assert!(v.is_valid(), "{v:?}");
        assert_eq!(v.service_drops, Some(0.02));
    }

    #[test]
    fn drops_while_the_service_answers_in_time_mean_the_cap_is_too_low() {
        let m = with_drops(5 * MS, Some(0.3), Duration::ZERO);
        assert!(matches!(
            m.validity.reasons[..],
            [InvalidReason::Drops {
                cause: DropCause::CapTooLow,
                ..
            }]
        ));
        assert!(m.validity.is_generator_limit());
        assert_eq!(m.validity.service_drops, None);
    }

    #[test]
    fn lag_is_saturation_with_a_busy_loop_and_starvation_with_an_idle_one() {
        let lagging = |busy: Option<f64>| {
            let mut r = recorder();
            for i in 0..100u32 {
                let t = (1_000 + 5 * i) * MS;
                r.arrival(t);
                r.sent(0, t, t + 20 * MS);
                r.completed(0, t, t + 20 * MS, t + 25 * MS, &Outcome::Ok);
            }
            r.roll_to(2_000 * MS);
            if let Some(busy) = busy {
                r.generator_busy(busy);
            }
            let mut end = info(3_000);
            end.generator_cpu = None;
            r.finish(end)
        };
        let cause = |m: &PhaseMeasurement| match &m.validity.reasons[..] {
            [InvalidReason::Lag { cause, .. }] => *cause,
            other => panic!("{other:?}"),
        };
        let saturated = lagging(Some(0.97));
        assert_eq!(cause(&saturated), LagCause::Saturated);
        assert!(saturated.validity.is_generator_limit());
        let starved = lagging(Some(0.25));
        assert_eq!(cause(&starved), LagCause::Starved);
        assert!(!starved.validity.is_generator_limit());
        insta::assert_snapshot!(starved.validity.reasons[0].to_string(), @"pacing lag p99 20.015 ms exceeds the limit of 5.000 ms: the generator was starved (its loop used only 25% of its core while it fell behind: the machine did not run it in time)");
        assert_eq!(cause(&lagging(None)), LagCause::Unattributed);
    }

    #[test]
    fn results_written_before_attribution_still_load() {
        let json = r#"{"reasons":[{"reason":"lag","p99_ms":12.0,"limit_ms":10.0},
            {"reason":"drops","rate":0.05,"limit":0.01}]}"#;
        let v: Validity = serde_json::from_str(json).expect("deserializes");
        assert!(matches!(
            v.reasons[..],
            [
                InvalidReason::Lag {
                    cause: LagCause::Unattributed,
                    busy: None,
                    ..
                },
                InvalidReason::Drops {
                    cause: DropCause::Unattributed,
                    ..
                }
            ]
        ));
        assert!(!v.is_generator_limit());
        assert_eq!((v.generator, v.service_drops), (None, None));
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

    /// What one loop of several hands over: its finished measurement, and the windows it closed
    /// while running (with their histograms), which the coordinator merges as they come.
    type LoopPart = (PhaseMeasurement, Vec<(Window, WindowHistograms)>);

    /// One loop's part of a phase: requests every 10 ms from 1.0 s to 3.0 s (the measured part),
    /// each sent `lag` late and answered `latency` after its intended time, on a loop `busy` of
    /// its core; window histograms retained as a loop of several keeps them.
    fn loop_part(offset_ms: u32, lag: Duration, latency: Duration, busy: f64) -> LoopPart {
        let mut r = recorder();
        r.retain_window_histograms();
        // (time, answered, intended), in the order a loop records them.
        let mut events: Vec<(Duration, bool, Duration)> = (0..200u32)
            .flat_map(|i| {
                let t = (1_000 + offset_ms + 10 * i) * MS;
                [(t + lag, false, t), (t + latency, true, t)]
            })
            .collect();
        events.sort_by_key(|&(at, answered, _)| (at, answered));
        let mut streamed = None;
        for (at, answered, t) in events {
            if streamed.is_none() && at >= 2_000 * MS {
                // The loop's tick at 2.0 s: window 0 closes and goes to the coordinator.
                r.roll_to(2_000 * MS);
                r.generator_busy(busy);
                streamed = Some(r.take_closed());
                assert!(r.take_closed().is_empty(), "handed over once");
            }
            if answered {
                r.completed(0, t, t + lag, at, &Outcome::Ok);
            } else {
                r.arrival(t);
                r.sent(0, t, at);
            }
        }
        let streamed = streamed.expect("ticked");
        assert_eq!(streamed.len(), 1, "window 0 closed at 2.0 s");
        assert_eq!(streamed[0].0.generator_busy, Some(busy));
        (r.finish(info(3_000)), streamed)
    }

    fn merge(parts: Vec<LoopPart>, stopped: Option<String>) -> PhaseMeasurement {
        let mut merge = PhaseMerge::new(parts.len());
        let mut measurements = Vec::new();
        for (m, streamed) in parts {
            for (w, h) in streamed {
                merge.add_closed(&w, h);
            }
            measurements.push(m);
        }
        // The window every loop closed while running comes out merged before the end.
        assert_eq!(merge.complete().len(), 1);
        assert!(merge.complete().is_empty());
        let limits = ValidityLimits {
            max_lag: 5 * MS,
            max_drop_rate: 0.01,
            slo_latency: 100 * MS,
        };
        merge.finish(measurements, &limits, stopped).expect("parts")
    }

    #[test]
    fn merging_loops_adds_histograms_sums_counters_and_merges_windows_by_index() {
        let a = loop_part(0, Duration::ZERO, 2 * MS, 0.3);
        let b = loop_part(5, Duration::ZERO, 40 * MS, 0.4);
        let (la, lb) = (
            a.0.operations[0].latency.clone(),
            b.0.operations[0].latency.clone(),
        );
        let (wa, wb) = (a.0.windows.windows.clone(), b.0.windows.windows.clone());
        // B's answers 40 ms late spill into a third window; A's do not.
        assert_eq!((wa.len(), wb.len()), (2, 3));
        let m = merge(vec![a, b], None);
        let op = &m.operations[0];
        assert_eq!(op.latency.count(), la.count() + lb.count());
        let mut both = la.clone();
        both.merge(&lb);
        assert_eq!(op.latency, both, "lossless: the histograms added");
        assert_eq!(op.counters.sent, 400);
        assert_eq!(m.counters.arrivals, 400);
        assert_eq!(m.requests_total, 400);
        assert_eq!(m.generator_cpu, Some(20 * MS), "the loops' CPU summed");
        assert_eq!(m.windows.windows.len(), 3);
        let count = |ws: &[Window], i: usize, f: fn(&Window) -> u64| ws.get(i).map_or(0, f);
        for (i, w) in m.windows.windows.iter().enumerate() {
            assert_eq!(
                w.sent,
                count(&wa, i, |w| w.sent) + count(&wb, i, |w| w.sent)
            );
            assert_eq!(
                w.completed,
                count(&wa, i, |w| w.completed) + count(&wb, i, |w| w.completed),
                "window {i}"
            );
            assert_eq!(w.start, wb[i].start);
        }
        // Half of each window's answers took 40 ms: the merged p99 is one of them, the merged
        // p50 between the two loops' (read from the added histograms, not averaged).
        let w0 = &m.windows.windows[0];
        assert!(w0.p99 >= 39 * MS && w0.p99 <= 41 * MS, "{w0:?}");
        assert_eq!(w0.generator_busy, Some(0.4), "the busiest loop's share");
        assert_eq!(m.loops.len(), 2);
        assert_eq!(m.loops[1].requests_total, 200);
        assert!(m.validity.is_valid(), "{:?}", m.validity);
        // The summary reads the merged figures.
        assert_eq!(m.summary().total.requests, 400);
        let json = serde_json::to_value(&m).expect("serializes");
        assert_eq!(json["loops"].as_array().map(Vec::len), Some(2));
        let back: PhaseMeasurement = serde_json::from_value(json).expect("reads back");
        assert_eq!(back.loops, m.loops);
    }

    #[test]
    fn one_lagging_loop_makes_the_merged_phase_invalid() {
        // Loop A keeps its schedule; loop B sends everything 20 ms late on a saturated core.
        let a = loop_part(0, Duration::ZERO, 2 * MS, 0.3);
        let b = loop_part(5, 20 * MS, 25 * MS, 0.97);
        assert!(a.0.validity.is_valid());
        assert!(!b.0.validity.is_valid());
        let m = merge(vec![a, b], None);
        // Half the requests were 20 ms late: the merged lag p99 is past the 5 ms limit, and the
        // busiest loop was saturated while the merged windows lagged.
        assert!(
            m.lag.quantile(0.99) >= 19 * MS,
            "{:?}",
            m.lag.quantile(0.99)
        );
        assert!(
            matches!(
                m.validity.reasons.as_slice(),
                [InvalidReason::Lag {
                    cause: LagCause::Saturated,
                    ..
                }]
            ),
            "{:?}",
            m.validity
        );
        assert_eq!(m.loops[1].busy_max, Some(0.97));
        assert!(m.loops[1].lag_p99 >= 19 * MS);
    }

    #[test]
    fn the_merged_phase_records_why_it_stopped_and_its_longest_measured_part() {
        let a = loop_part(0, Duration::ZERO, 2 * MS, 0.3);
        let mut b = loop_part(5, Duration::ZERO, 2 * MS, 0.3);
        b.0.measured = 2_100 * MS;
        b.0.stopped = Some("stopped".to_owned());
        let m = merge(vec![a, b], Some("abort: p99".to_owned()));
        assert_eq!(m.stopped.as_deref(), Some("abort: p99"));
        assert_eq!(m.measured, 2_100 * MS);
        let a = loop_part(0, Duration::ZERO, 2 * MS, 0.3);
        let mut b = loop_part(5, Duration::ZERO, 2 * MS, 0.3);
        b.0.stopped = Some("stopped".to_owned());
        assert_eq!(merge(vec![a, b], None).stopped.as_deref(), Some("stopped"));
        assert!(
            PhaseMerge::new(1)
                .finish(
                    Vec::new(),
                    &ValidityLimits {
                        max_lag: MS,
                        max_drop_rate: 0.0,
                        slo_latency: MS,
                    },
                    None
                )
                .is_none()
        );
    }

    #[test]
    fn a_measurement_of_one_loop_serializes_as_before() {
        let (m, _) = loop_part(0, Duration::ZERO, 2 * MS, 0.3);
        let json = serde_json::to_value(&m).expect("serializes");
        assert!(json.get("loops").is_none(), "{json}");
        assert!(json.get("generator_shares_target_cores").is_none());
    }
}
