//! What the charts read of a run result: the ramp's steps with their classes' percentiles and
//! states, the SLO's latency limits, and the soak's series and slopes. The three charts draw
//! these views and nothing else of the result.

use super::draw::Marker;
use crate::measure::LatencyHistogram;
use serde_json::Value;

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

/// How a step ended.
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
}

/// `3f2a91c` (with `, dirty`) of the result's commit, or `None` outside git.
pub(super) fn short_commit(result: &Value) -> Option<String> {
    let commit = result["git"]["commit"].as_str()?;
    let short: String = commit.chars().take(7).collect();
    Some(if result["git"]["dirty"].as_bool() == Some(true) {
        format!("{short}, dirty")
    } else {
        short
    })
}

/// `Head 3f2a91c, profile ci.`: the subtitle's line naming the measured run.
pub(super) fn run_line(name: &str, result: &Value) -> String {
    match result["profile"].as_str() {
        Some(profile) => format!("{name}, profile {profile}."),
        None => format!("{name}."),
    }
}

pub(super) fn run_name(role: &str, result: &Value) -> String {
    match short_commit(result) {
        Some(commit) => format!("{role} {commit}"),
        None => role.to_owned(),
    }
}

/// A finite, non-negative number.
pub(super) fn number(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite() && *x >= 0.0)
}

pub(super) fn array(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// The p90 in milliseconds of `class` in a phase record, from its stored histogram.
pub(super) fn histogram_p90(phase: Option<&Value>, class: &str) -> Option<f64> {
    let op = array(&phase?["operations"])
        .iter()
        .find(|o| o["name"].as_str() == Some(class))?;
    let histogram = LatencyHistogram::decode(op["latency"].as_str()?).ok()?;
    (!histogram.is_empty()).then(|| histogram.quantile(0.9).as_secs_f64() * 1e3)
}

/// Correct answers within the SLO latency per second of measured time, summed over the
/// operations of a phase record.
pub(super) fn goodput_rate(phase: Option<&Value>) -> Option<f64> {
    let phase = phase?;
    let secs = number(&phase["measured_ms"])? / 1e3;
    let counts: Vec<u64> = array(&phase["operations"])
        .iter()
        .filter_map(|op| op["counters"]["goodput"].as_u64())
        .collect();
    (secs > 0.0 && !counts.is_empty()).then(|| counts.iter().sum::<u64>() as f64 / secs)
}

pub(super) fn ramp_view(role: &str, result: &Value) -> RampView {
    let ramp = &result["ramp"];
    let mut steps: Vec<StepPoint> = array(&ramp["steps"])
        .iter()
        .filter_map(|step| {
            let offered = number(&step["offered_rate_per_sec"])
                .filter(|r| *r > 0.0)
                .or_else(|| number(&step["model_rate_per_sec"]))?;
            let phase = step["phase"].as_str();
            let record = array(&result["phases"])
                .iter()
                .find(|p| phase.is_some() && p["name"].as_str() == phase);
            let state = if step["valid"].as_bool() == Some(false) {
                StepState::Invalid
            } else if step["held"]["holds"].as_bool() == Some(true) {
                StepState::Held
            } else if step["aborted"].is_null()
                && step["held"]["basis"].as_str() == Some("too-few-requests")
            {
                StepState::TooFew
            } else {
                StepState::Broke
            };
            let unjudged = array(&step["held"]["unjudged"]);
            let classes = array(&step["operations"])
                .iter()
                .filter(|op| op["requests"].as_u64().is_some_and(|n| n > 0))
                .filter_map(|op| {
                    let name = op["name"].as_str()?.to_owned();
                    Some(ClassLatency {
                        p90: histogram_p90(record, &name),
                        p50: number(&op["p50_ms"])?,
                        p99: number(&op["p99_ms"])?,
                        max: number(&op["max_ms"])?,
                        judged: !unjudged.iter().any(|u| u.as_str() == Some(&name)),
                        name,
                    })
                })
                .collect();
            Some(StepPoint {
                offered,
                achieved: number(&step["achieved_rate_per_sec"]),
                goodput: goodput_rate(record),
                state,
                classes,
            })
        })
        .collect();
    steps.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    let slo = recorded_slo(result).unwrap_or_else(|| slo_from_reasons(ramp));
    RampView {
        name: run_name(role, result),
        steps,
        knee: number(&ramp["knee_rate_per_sec"]),
        broke: ramp["lowest_break"].is_object(),
        slo,
        achieved_is_answers: counts_answers(result),
    }
}

/// Whether `result` was written when a step's achieved rate counted answers: its windows record
/// `answered` (older results stored requests sent per second as the achieved rate).
pub(super) fn counts_answers(result: &Value) -> bool {
    array(&result["phases"])
        .iter()
        .flat_map(|p| array(&p["windows"]["windows"]))
        .any(|w| w.get("answered").is_some())
}

/// The latency limits of the `[slo]` the result records, `None` when it records none (results
/// written before the SLO was recorded).
pub(super) fn recorded_slo(result: &Value) -> Option<Vec<SloLimit>> {
    let latency = result["slo"]["latency"].as_array()?;
    Some(
        latency
            .iter()
            .filter_map(|limit| {
                Some(SloLimit {
                    label: limit["label"].as_str()?.to_owned(),
                    ms: number(&limit["limit_ms"]).filter(|ms| *ms > 0.0)?,
                })
            })
            .collect(),
    )
}

/// The latency limits named in the ramp's break reasons: the fallback for results written before
/// the SLO was recorded, where a limit is known only from a step that broke on it.
pub(super) fn slo_from_reasons(ramp: &Value) -> Vec<SloLimit> {
    let reasons = array(&ramp["steps"])
        .iter()
        .flat_map(|s| array(&s["held"]["reasons"]))
        .chain(array(&ramp["first_break"]["reasons"]))
        .chain(array(&ramp["lowest_break"]["reasons"]))
        .filter_map(Value::as_str);
    let mut slo: Vec<SloLimit> = Vec::new();
    for limit in reasons.filter_map(parse_slo_reason) {
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

/// The soak's slope with its interval, as stored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct StoredSlope {
    pub(super) estimate: f64,
    pub(super) low: f64,
    pub(super) high: f64,
}

pub(super) fn stored_slope(v: &Value) -> Option<StoredSlope> {
    let get = |key: &str| v[key].as_f64().filter(|x| x.is_finite());
    Some(StoredSlope {
        estimate: get("estimate")?,
        low: get("low")?,
        high: get("high")?,
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
    pub(super) rss_slope: Option<StoredSlope>,
    /// Seconds per second.
    pub(super) p99_slope: Option<StoredSlope>,
    pub(super) offered: Option<f64>,
    /// `soak.at` as a share of the capacity.
    pub(super) share: Option<f64>,
    /// Leak finding, abort and invalidity, for the subtitle.
    pub(super) notes: Vec<String>,
}

pub(super) const MIB: f64 = 1024.0 * 1024.0;

/// The soak of `result`, or `None` when it has none.
///
/// The p99 series is the soak phase's windows in which something completed (the series the
/// p99 slope was fitted to). Resource samples carry no phase; as in the comparison
/// (`compare::RunFigures`), the soak's are the samples of the run's last `measured` seconds when
/// the soak is the run's last phase, so the RSS series is aligned on the end of the soak.
pub(super) fn soak_view(result: &Value) -> Option<SoakView> {
    let soak = &result["soak"];
    if !soak.is_object() {
        return None;
    }
    let phases = array(&result["phases"]);
    let name = soak["phase"].as_str().unwrap_or("soak");
    let index = phases.iter().position(|p| p["name"].as_str() == Some(name));
    let phase = index.map(|i| &phases[i]);
    let p99 = phase
        .map(|p| array(&p["windows"]["windows"]))
        .unwrap_or_default()
        .iter()
        .filter(|w| w["completed"].as_u64().is_some_and(|n| n > 0))
        .filter_map(|w| {
            let middle = number(&w["start_ms"])? + number(&w["length_ms"])? / 2.0;
            Some((middle / 1e3, number(&w["p99_ms"])?))
        })
        .collect();
    let samples: Vec<(f64, f64)> = array(&result["resources"])
        .iter()
        .filter_map(|s| Some((number(&s["elapsed_s"])?, number(&s["rss_bytes"])?)))
        .collect();
    let measured = phase
        .and_then(|p| number(&p["measured_ms"]))
        .map(|ms| ms / 1e3);
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
    if let Some(leak) = soak["leak"].as_str() {
        notes.push(format!("leak: {leak}"));
    }
    if let Some(aborted) = soak["aborted"].as_str() {
        notes.push(format!("aborted: {aborted}"));
    }
    if soak["valid"].as_bool() == Some(false) {
        notes.push("invalid: the generator could not keep its schedule".to_owned());
    }
    let share = match (
        number(&soak["at_sessions_per_sec"]),
        number(&soak["capacity_sessions_per_sec"]),
    ) {
        (Some(at), Some(capacity)) if capacity > 0.0 => Some(at / capacity),
        _ => None,
    };
    Some(SoakView {
        rss,
        p99,
        rss_slope: stored_slope(&soak["slopes"]["rss_bytes_per_sec"]),
        p99_slope: stored_slope(&soak["slopes"]["p99_seconds_per_sec"]),
        offered: number(&soak["offered_rate_per_sec"]),
        share,
        notes,
    })
}

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
pub(super) fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

/// The Theil–Sen intercept of `points` for `slope`: the median of y − slope·x.
pub(super) fn theil_sen_intercept(points: &[(f64, f64)], slope: f64) -> Option<f64> {
    median(points.iter().map(|(x, y)| y - slope * x).collect())
}
