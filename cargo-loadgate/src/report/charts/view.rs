//! What the charts read of a run result: the ramp's steps with their classes' percentiles and
//! states, the SLO's latency limits, and the soak's series and slopes. The three charts draw
//! these views and nothing else of the result.

use super::draw::Marker;
use crate::plan::{RampOutcome, StepStatus};
use crate::result::{PhaseRecord, RunResult};
use crate::stats::SlopeEstimate;

/// A latency percentile drawn per operation class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Percentile {
    P50,
    P90,
    P99,
    Max,
}

impl Percentile {
    pub(super) const ALL: [Percentile; 4] = [Self::P50, Self::P90, Self::P99, Self::Max];

    pub(super) fn label(self) -> &'static str {
        match self {
            Self::P50 => "p50",
            Self::P90 => "p90",
            Self::P99 => "p99",
            Self::Max => "max",
        }
    }

    pub(super) fn marker(self) -> Marker {
        match self {
            Self::P50 => Marker::Circle,
            Self::P90 => Marker::Triangle,
            Self::P99 => Marker::Square,
            Self::Max => Marker::Cross,
        }
    }

    /// The p99 is the SLO's percentile, so it is drawn heaviest; p90 and max lightest, to keep
    /// four lines per class apart.
    pub(super) fn stroke(self) -> u32 {
        match self {
            Self::P50 => 2,
            Self::P99 => 3,
            Self::P90 | Self::Max => 1,
        }
    }
}

/// One operation class at one step, in milliseconds from the intended send time.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ClassLatency {
    pub(super) name: String,
    pub(super) p50: f64,
    /// From the step's latency histogram; `None` when the phase or its histogram is missing.
    pub(super) p90: Option<f64>,
    pub(super) p99: f64,
    pub(super) max: f64,
    /// Whether the SLO judged it: a class with fewer than `slo.min-requests` requests in the
    /// step is listed in the step's `held.unjudged` and drawn hollow.
    pub(super) judged: bool,
}

impl ClassLatency {
    pub(super) fn get(&self, p: Percentile) -> Option<f64> {
        match p {
            Percentile::P50 => Some(self.p50),
            Percentile::P90 => self.p90,
            Percentile::P99 => Some(self.p99),
            Percentile::Max => Some(self.max),
        }
    }
}

/// How a step is drawn: [`StepStatus`] with an aborted step drawn as broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StepState {
    Held,
    Broke,
    /// Too few requests, even all classes pooled, to judge the SLO (`held.basis`).
    TooFew,
    Invalid,
}

/// One ramp step or bisection point.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct StepPoint {
    /// The offered request rate: measured when recorded, else the model's.
    pub(super) offered: f64,
    /// The stored achieved rate: answers per second of measured time (requests sent per second in
    /// results written before answers were counted, see [`RampView::achieved_is_answers`]).
    pub(super) achieved: Option<f64>,
    /// Correct answers within the SLO latency per second of measured time, from the phase's
    /// counters.
    pub(super) goodput: Option<f64>,
    pub(super) state: StepState,
    pub(super) classes: Vec<ClassLatency>,
}

/// A latency limit of the SLO: its percentile's label (`p99`) and the limit in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct SloLimit {
    pub(super) label: String,
    pub(super) ms: f64,
}

/// What the ramp charts read of one result.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct RampView {
    /// `head 3f2a91c`, `base 1b2c3d4`.
    pub(super) name: String,
    /// In offered order.
    pub(super) steps: Vec<StepPoint>,
    /// The highest offered request rate that held.
    pub(super) knee: Option<f64>,
    /// Whether a rate above the knee broke: without one the knee is only the highest step.
    pub(super) broke: bool,
    pub(super) slo: Vec<SloLimit>,
    /// Whether the steps' achieved rate counts answers. Results written before answers were
    /// counted (their windows lack `answered`) stored requests sent per second there instead.
    pub(super) achieved_is_answers: bool,
    /// The production load (`result.headroom`) on the chart's measured offered scale, with its
    /// label: placed so that knee / production on the chart is the recorded headroom.
    pub(super) production: Option<(f64, String)>,
}

impl StepState {
    /// How a step of `status` is drawn.
    fn of(status: StepStatus) -> Self {
        match status {
            StepStatus::Invalid | StepStatus::GeneratorLimit => Self::Invalid,
            StepStatus::Held => Self::Held,
            // Neither held nor broke: a transient was measured again, its re-measurement counts.
            StepStatus::TooFewRequests | StepStatus::Transient => Self::TooFew,
            StepStatus::Aborted | StepStatus::Broke => Self::Broke,
        }
    }
}

/// `3f2a91c` (with `, dirty`) of the result's commit, or `None` outside git.
pub(super) fn short_commit(result: &RunResult) -> Option<String> {
    let git = result.git.as_ref()?;
    let short: String = git.commit.chars().take(7).collect();
    Some(if git.dirty {
        format!("{short}, dirty")
    } else {
        short
    })
}

/// `Head 3f2a91c, profile ci.`: the subtitle's line naming the measured run.
pub(super) fn run_line(name: &str, result: &RunResult) -> String {
    if result.profile.is_empty() {
        format!("{name}.")
    } else {
        format!("{name}, profile {}.", result.profile)
    }
}

/// `head 3f2a91c`: the run's role with its short commit.
pub(super) fn run_name(role: &str, result: &RunResult) -> String {
    match short_commit(result) {
        Some(commit) => format!("{role} {commit}"),
        None => role.to_owned(),
    }
}

/// A finite, non-negative number.
fn number(x: f64) -> Option<f64> {
    Some(x).filter(|x| x.is_finite() && *x >= 0.0)
}

/// A duration in milliseconds.
fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The phase record named `name`.
fn phase<'a>(result: &'a RunResult, name: &str) -> Option<&'a PhaseRecord> {
    result.phases.iter().find(|p| p.measurement.name == name)
}

/// The p90 in milliseconds of `class` in a phase record, from its stored histogram.
pub(super) fn histogram_p90(phase: Option<&PhaseRecord>, class: &str) -> Option<f64> {
    let op = phase?
        .measurement
        .operations
        .iter()
        .find(|o| o.name == class)?;
    (!op.latency.is_empty()).then(|| ms(op.latency.quantile(0.9)))
}

/// Correct answers within the SLO latency per second of measured time, summed over the
/// operations of a phase record.
pub(super) fn goodput_rate(phase: Option<&PhaseRecord>) -> Option<f64> {
    let m = &phase?.measurement;
    let secs = m.measured.as_secs_f64();
    let goodput: u64 = m.operations.iter().map(|op| op.counters.goodput).sum();
    (secs > 0.0 && !m.operations.is_empty()).then(|| goodput as f64 / secs)
}

/// The ramp of `result` as the latency and throughput charts draw it, named `role` (`head`,
/// `base`); no steps when it has no ramp.
pub(super) fn ramp_view(role: &str, result: &RunResult) -> RampView {
    let ramp = result.ramp.as_ref();
    let mut steps: Vec<StepPoint> = ramp
        .map_or(&[][..], |r| &r.steps)
        .iter()
        .filter_map(|step| {
            let offered = number(step.offered_rate_per_sec)
                .filter(|r| *r > 0.0)
                .or_else(|| number(step.model_rate_per_sec))?;
            let record = phase(result, &step.phase);
            let classes = step
                .operations
                .iter()
                .filter(|op| op.requests > 0)
                .filter_map(|op| {
                    Some(ClassLatency {
                        p90: histogram_p90(record, &op.name),
                        p50: number(ms(op.p50))?,
                        p99: number(ms(op.p99))?,
                        max: number(ms(op.max))?,
                        judged: !step.held.unjudged.contains(&op.name),
                        name: op.name.clone(),
                    })
                })
                .collect();
            Some(StepPoint {
                offered,
                achieved: number(step.achieved_rate_per_sec),
                goodput: goodput_rate(record),
                state: StepState::of(step.status()),
                classes,
            })
        })
        .collect();
    steps.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    let slo =
        recorded_slo(result).unwrap_or_else(|| ramp.map(slo_from_reasons).unwrap_or_default());
    RampView {
        name: run_name(role, result),
        steps,
        knee: ramp.and_then(|r| r.knee_rate_per_sec).and_then(number),
        broke: ramp.is_some_and(|r| r.lowest_break.is_some()),
        slo,
        achieved_is_answers: counts_answers(result),
        production: production_point(result),
    }
}

/// Where the production load of `result.headroom` lies on the offered axis, with its label. The
/// axis is the offered rate as measured, which in short steps falls below the model's
/// steady-state rate (sessions accumulate), so the line is put at the knee's offered rate over
/// the headroom (the knee's session rate over the production load's); without a knee, at the
/// first step's offered rate over its fraction of the workload rate.
fn production_point(result: &RunResult) -> Option<(f64, String)> {
    let h = result.headroom.as_ref()?;
    let ramp = result.ramp.as_ref()?;
    let p = h.production_sessions_per_sec;
    let x = match (ramp.knee_rate_per_sec, ramp.knee_sessions_per_sec) {
        (Some(rate), Some(sessions)) if sessions > 0.0 => rate * p / sessions,
        _ => {
            let step = ramp
                .steps
                .iter()
                .find(|s| s.kind == crate::plan::StepKind::Step && s.fraction > 0.0)?;
            step.offered_rate_per_sec / step.fraction
        }
    };
    let label = format!("production load {} sessions/s", crate::plan::format_rate(p));
    number(x).filter(|x| *x > 0.0).map(|x| (x, label))
}

/// Whether `result` was written when a step's achieved rate counted answers: its windows record
/// `answered`, zero included (older results lack the key, and stored requests sent per second as
/// the achieved rate).
pub(super) fn counts_answers(result: &RunResult) -> bool {
    result
        .phases
        .iter()
        .flat_map(|p| &p.measurement.windows.windows)
        .any(|w| w.answered.is_some())
}

/// The latency limits of the `[slo]` the result records, `None` when it records none (results
/// written before the SLO was recorded).
pub(super) fn recorded_slo(result: &RunResult) -> Option<Vec<SloLimit>> {
    let slo = result.slo.as_ref()?;
    Some(
        slo.latency
            .iter()
            .filter_map(|limit| {
                Some(SloLimit {
                    label: limit.label.clone(),
                    ms: number(limit.limit_ms).filter(|ms| *ms > 0.0)?,
                })
            })
            .collect(),
    )
}

/// The latency limits named in the ramp's break reasons: the fallback for results written before
/// the SLO was recorded, where a limit is known only from a step that broke on it. The step and
/// break records keep their reasons only as text, so the limit is read back from it.
pub(super) fn slo_from_reasons(ramp: &RampOutcome) -> Vec<SloLimit> {
    let reasons = ramp
        .steps
        .iter()
        .flat_map(|s| &s.held.reasons)
        .chain(ramp.first_break.iter().flat_map(|b| &b.reasons))
        .chain(ramp.lowest_break.iter().flat_map(|b| &b.reasons));
    let mut slo: Vec<SloLimit> = Vec::new();
    for limit in reasons.filter_map(|r| parse_slo_reason(r)) {
        if !slo.iter().any(|s| s.label == limit.label) {
            slo.push(limit);
        }
    }
    slo
}

/// The SLO limit in a step's break reason, e.g. "`login` p99 340 ms > 200 ms" (or "all classes
/// pooled p99 340 ms > 200 ms") → p99, 200 ms. The plan writes these reasons with
/// `format_latency`, which this reads back.
pub(super) fn parse_slo_reason(reason: &str) -> Option<SloLimit> {
    let rest = match reason.strip_prefix('`') {
        Some(quoted) => quoted.split_once("` ")?.1,
        None => reason.strip_prefix("all classes pooled ")?,
    };
    let mut words = rest.split_whitespace();
    let label = words.next()?;
    let is_percentile = label
        .strip_prefix('p')
        .is_some_and(|q| q.parse::<f64>().is_ok());
    if !is_percentile {
        return None;
    }
    let (_measured, _unit, gt) = (words.next()?, words.next()?, words.next()?);
    if gt != ">" {
        return None;
    }
    let value: f64 = words.next()?.parse().ok()?;
    let ms = match words.next()? {
        "ms" => value,
        "s" => value * 1e3,
        _ => return None,
    };
    (ms.is_finite() && ms > 0.0).then(|| SloLimit {
        label: label.to_owned(),
        ms,
    })
}

/// What the soak chart reads of one result.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct SoakView {
    /// (seconds into the soak's measured part, MiB).
    pub(super) rss: Vec<(f64, f64)>,
    /// (middle of the window in seconds into the measured part, p99 in ms).
    pub(super) p99: Vec<(f64, f64)>,
    /// Bytes per second.
    pub(super) rss_slope: Option<SlopeEstimate>,
    /// Seconds per second.
    pub(super) p99_slope: Option<SlopeEstimate>,
    pub(super) offered: Option<f64>,
    /// `soak.at` as a share of the capacity.
    pub(super) share: Option<f64>,
    /// Leak finding, abort and invalidity, for the subtitle.
    pub(super) notes: Vec<String>,
}

pub(super) const MIB: f64 = 1024.0 * 1024.0;

/// A stored slope whose figures are all finite.
fn stored_slope(slope: Option<&SlopeEstimate>) -> Option<SlopeEstimate> {
    slope
        .filter(|s| s.estimate.is_finite() && s.low.is_finite() && s.high.is_finite())
        .copied()
}

/// The soak of `result`, or `None` when it has none.
///
/// The p99 series is the soak phase's windows in which something completed (the series the
/// p99 slope was fitted to). Resource samples carry no phase; as in the comparison
/// (`compare::RunFigures`), the soak's are the samples of the run's last `measured` seconds when
/// the soak is the run's last phase, so the RSS series is aligned on the end of the soak.
pub(super) fn soak_view(result: &RunResult) -> Option<SoakView> {
    let soak = result.soak.as_ref()?;
    let phases = &result.phases;
    let index = phases.iter().position(|p| p.measurement.name == soak.phase);
    let phase = index.map(|i| &phases[i].measurement);
    let p99 = phase
        .map_or(&[][..], |p| &p.windows.windows)
        .iter()
        .filter(|w| w.completed > 0)
        .filter_map(|w| {
            let middle = number(ms(w.start))? + number(ms(w.length))? / 2.0;
            Some((middle / 1e3, number(ms(w.p99))?))
        })
        .collect();
    let samples: Vec<(f64, f64)> = result
        .resources
        .iter()
        .filter_map(|s| Some((number(s.elapsed_s)?, s.rss_bytes as f64)))
        .collect();
    let measured = phase.map(|p| p.measured.as_secs_f64());
    let is_last = index.is_some_and(|i| i + 1 == phases.len());
    let rss = match (measured, samples.last()) {
        (Some(measured), Some(&(end, _))) if is_last => {
            let from = end - measured;
            samples
                .iter()
                .filter(|(t, _)| *t >= from)
                .map(|(t, b)| (t - from, b / MIB))
                .collect()
        }
        _ => Vec::new(),
    };
    let mut notes = Vec::new();
    if let Some(leak) = &soak.leak {
        notes.push(format!("leak: {leak}"));
    }
    if let Some(aborted) = &soak.aborted {
        notes.push(format!("aborted: {aborted}"));
    }
    if !soak.valid {
        notes.push("invalid: the generator could not keep its schedule".to_owned());
    }
    let share = match (
        number(soak.at_sessions_per_sec),
        number(soak.capacity_sessions_per_sec),
    ) {
        (Some(at), Some(capacity)) if capacity > 0.0 => Some(at / capacity),
        _ => None,
    };
    Some(SoakView {
        rss,
        p99,
        rss_slope: stored_slope(soak.slopes.rss_bytes_per_sec.as_ref()),
        p99_slope: stored_slope(soak.slopes.p99_seconds_per_sec.as_ref()),
        offered: number(soak.offered_rate_per_sec),
        share,
        notes,
    })
}
