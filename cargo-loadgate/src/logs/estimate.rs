//! The user model from sessions (seed 000): entry weights, transition and exit probabilities with
//! 99% intervals, think times with their mean and a test of the exponential; the `[workload]` TOML
//! that states it; and the validation of a model against the log's mix.
//!
//! **Intervals.** Each entry weight, transition and exit probability is a binomial proportion of
//! its row (the sessions, or the departures from one operation). Its interval is Wilson's at the
//! Bonferroni level over every interval of the model, so that all of them hold together with
//! probability at least 99%: "every transition lies in its interval" is then a 99% statement.
//!
//! **Think times.** A think time is the time from one request of a session to its next, less the
//! first one's answer time when the log has it. The mean is over every gap; the exponential is
//! tested by Lilliefors' test (Kolmogorov–Smirnov with the mean estimated; Stephens' modified
//! statistic, critical value 1.308 at 1%) on a seeded reservoir sample of at most
//! [`THINK_RESERVOIR`] gaps, which keeps memory flat. When the test rejects, the quantiles are
//! given and a fixed (spread below 20% of the median) or uniform (by moments: mean ± √3·sd)
//! alternative is offered.

use super::sessions::{Session, SessionEnd, SessionSink};
use crate::config::{ThinkTime, WorkloadConfig};
use crate::stats::{
    ExponentialFit, Proportion, bonferroni_z, exponential_fit, sorted_quantile, wilson,
};
use crate::workload::{MIX_CONFIDENCE, MeanCheck, MixMoments, OperationMix, analyze, mean_think};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;

/// The family-wise confidence of the model's intervals.
pub const MODEL_CONFIDENCE: f64 = 0.99;

/// The most think times kept per transition for the test and the quantiles.
pub const THINK_RESERVOIR: usize = 4_000;

/// The most distinct paths counted per operation to pick a representative one.
const MAX_PATHS: usize = 32;

/// How the intervals are computed, as the output states it.
pub const INTERVAL_METHOD: &str = "Wilson score intervals, Bonferroni-adjusted over every interval of the model (family-wise 99%)";

/// The think-time test, as the output states it.
pub const THINK_TEST: &str = "Lilliefors (Kolmogorov-Smirnov with the mean estimated), Stephens' modified statistic, critical value 1.308 at 1%";

/// Counts from sessions, filled as they are formed.
#[derive(Debug)]
pub struct ModelCounts {
    n: usize,
    entries: Vec<u64>,
    transitions: Vec<u64>,
    exits: Vec<u64>,
    think: Vec<ThinkSample>,
    moments: MixMoments,
    /// Sessions the log's end cut that started earlier than the gap before it.
    pub censored: u64,
    /// Sessions that started within the gap of the log's end, left out.
    pub late: u64,
}

#[derive(Clone, Debug, Default)]
struct ThinkSample {
    count: u64,
    sum_s: f64,
    sum_s2: f64,
    reservoir: Vec<f64>,
    rng: u64,
}

impl ThinkSample {
    fn add(&mut self, seconds: f64) {
        self.count += 1;
        self.sum_s += seconds;
        self.sum_s2 += seconds * seconds;
        if self.reservoir.len() < THINK_RESERVOIR {
            self.reservoir.push(seconds);
        } else {
            // Algorithm R with a seeded splitmix64: the same log gives the same sample.
            self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.rng;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            let j = z % self.count;
            if (j as usize) < THINK_RESERVOIR {
                self.reservoir[j as usize] = seconds;
            }
        }
    }
}

impl ModelCounts {
    /// Empty counts over `operations` operations.
    pub fn new(operations: usize) -> Self {
        Self {
            n: operations,
            entries: vec![0; operations],
            transitions: vec![0; operations * operations],
            exits: vec![0; operations],
            think: vec![ThinkSample::default(); operations * operations],
            moments: MixMoments::new(operations),
            censored: 0,
            late: 0,
        }
    }

    /// The sessions' per-operation sums, for validation.
    pub fn moments(&self) -> &MixMoments {
        &self.moments
    }
}

/// A late session ([`SessionEnd::Late`]) is left out whole; a cut one keeps its transitions
/// (each observed departure is a fair draw) but gives no exit and no mix sample.
impl SessionSink for ModelCounts {
    fn session(&mut self, s: &Session<'_>) {
        if s.end == SessionEnd::Late {
            self.late += 1;
            return;
        }
        self.entries[s.first] += 1;
        let mut from = s.first;
        for &(to, think_us) in s.steps {
            self.transitions[from * self.n + to] += 1;
            self.think[from * self.n + to].add(think_us as f64 / 1e6);
            from = to;
        }
        match s.end {
            SessionEnd::Ended => {
                self.exits[from] += 1;
                self.moments.add_session(s.counts);
            }
            SessionEnd::Cut | SessionEnd::Late => self.censored += 1,
        }
    }
}

/// What the lines of one operation looked like.
#[derive(Clone, Debug, Default)]
pub struct LineStats {
    /// Lines matched to it.
    pub lines: u64,
    paths: HashMap<Vec<u8>, u64>,
    statuses: Vec<(u16, u64)>,
    methods: Vec<(Vec<u8>, u64)>,
}

impl LineStats {
    /// Counts one line.
    pub fn add(&mut self, method: &[u8], path: &[u8], status: u16) {
        self.lines += 1;
        if let Some(n) = self.paths.get_mut(path) {
            *n += 1;
        } else if self.paths.len() < MAX_PATHS {
            self.paths.insert(path.to_vec(), 1);
        }
        if let Some((_, n)) = self.statuses.iter_mut().find(|(s, _)| *s == status) {
            *n += 1;
        } else if self.statuses.len() < 16 {
            self.statuses.push((status, 1));
        }
        if let Some((_, n)) = self.methods.iter_mut().find(|(m, _)| m == method) {
            *n += 1;
        } else if self.methods.len() < 8 {
            self.methods.push((method.to_vec(), 1));
        }
    }

    fn path(&self) -> String {
        most(self.paths.iter().map(|(p, n)| (p.as_slice(), *n))).map_or_else(
            || "/".to_owned(),
            |p| String::from_utf8_lossy(p).into_owned(),
        )
    }

    fn method(&self) -> String {
        most(self.methods.iter().map(|(m, n)| (m.as_slice(), *n))).map_or_else(
            || "GET".to_owned(),
            |m| String::from_utf8_lossy(m).into_owned(),
        )
    }

    fn status(&self) -> Option<u16> {
        most(self.statuses.iter().map(|(s, n)| (*s, *n)))
    }
}

/// The value with the highest count; ties go to the smallest value, so output is deterministic.
fn most<T: Ord + Copy>(items: impl Iterator<Item = (T, u64)>) -> Option<T> {
    items
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        .map(|(v, _)| v)
}

/// The estimated user model.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ModelEstimate {
    /// The family-wise confidence of the intervals ([`MODEL_CONFIDENCE`]).
    pub confidence: f64,
    /// How the intervals are computed ([`INTERVAL_METHOD`]).
    pub interval_method: String,
    /// How think times are tested ([`THINK_TEST`]).
    pub think_test: String,
    /// Sessions formed.
    pub sessions: u64,
    /// Their requests.
    pub requests: u64,
    /// Where sessions start, by operation.
    pub entry: Vec<EntryEstimate>,
    /// The operations seen, in the routes' order.
    pub operations: Vec<OperationEstimate>,
}

/// One entry weight.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EntryEstimate {
    /// The operation.
    pub operation: String,
    /// Sessions that started there.
    pub sessions: u64,
    /// The share of sessions, with its interval.
    pub p: Proportion,
}

/// One operation of the estimated model.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OperationEstimate {
    /// Its name.
    pub name: String,
    /// Its most frequent method.
    pub method: String,
    /// Its most frequent path: the representative the TOML uses.
    pub path: String,
    /// Its most frequent status.
    pub status: Option<u16>,
    /// Requests of it in sessions.
    pub requests: u64,
    /// Sessions that ended after it.
    pub exits: u64,
    /// The probability a session ends after it, with its interval.
    pub exit: Proportion,
    /// Where sessions go from it, most taken first.
    pub transitions: Vec<TransitionEstimate>,
}

/// One transition.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TransitionEstimate {
    /// The operation it leads to.
    pub to: String,
    /// How often it was taken.
    pub count: u64,
    /// Its probability, with its interval.
    pub p: Proportion,
    /// The think times before it.
    pub think: ThinkEstimate,
}

/// The think times of one transition.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ThinkEstimate {
    /// Their mean, in seconds.
    pub mean_s: f64,
    /// Their standard deviation, in seconds.
    pub sd_s: f64,
    /// The 10th, 50th and 90th percentiles, in seconds (of the reservoir sample).
    pub quantiles_s: [f64; 3],
    /// The exponential's test; `None` with fewer than 5 gaps.
    pub exponential: Option<ExponentialFit>,
    /// The distribution the TOML writes: exponential when it fits (or cannot be tested), else the
    /// alternative.
    pub suggested: SuggestedThink,
}

/// A think time as the `[workload]` TOML can state it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SuggestedThink {
    /// Exponential with this mean.
    Exponential {
        /// Seconds.
        mean_s: f64,
    },
    /// Always this long.
    Fixed {
        /// Seconds.
        value_s: f64,
    },
    /// Uniform between the bounds.
    Uniform {
        /// Seconds.
        low_s: f64,
        /// Seconds.
        high_s: f64,
    },
}

impl SuggestedThink {
    /// The config's think time.
    pub fn think_time(self) -> ThinkTime {
        let d = |s: f64| Duration::from_secs_f64(s.max(0.0));
        match self {
            Self::Exponential { mean_s } => ThinkTime::Exponential(d(mean_s)),
            Self::Fixed { value_s } => ThinkTime::Fixed(d(value_s)),
            Self::Uniform { low_s, high_s } => ThinkTime::Uniform(d(low_s), d(high_s)),
        }
    }

    /// The TOML value.
    pub fn toml(self) -> String {
        match self {
            Self::Exponential { mean_s } => format!("\"{}\"", millis(mean_s)),
            Self::Fixed { value_s } => format!("{{ fixed = \"{}\" }}", millis(value_s)),
            Self::Uniform { low_s, high_s } => {
                format!(
                    "{{ uniform = [\"{}\", \"{}\"] }}",
                    millis(low_s),
                    millis(high_s)
                )
            }
        }
    }
}

/// Seconds as a millisecond duration the config reads (`"1234.5ms"`).
fn millis(s: f64) -> String {
    let ms = (s.max(0.0) * 1e4).round() / 10.0;
    format!("{ms}ms")
}

impl ModelEstimate {
    /// Estimates the model from `counts`; `names` and `lines` are by operation index. Operations
    /// without requests are left out.
    pub fn from_counts(counts: &ModelCounts, names: &[String], lines: &[LineStats]) -> Self {
        let n = counts.n;
        let sessions: u64 = counts.entries.iter().sum();
        let seen: Vec<usize> = (0..n)
            .filter(|&i| {
                counts.entries[i] > 0
                    || counts.exits[i] > 0
                    || (0..n).any(|j| counts.transitions[j * n + i] > 0)
            })
            .collect();
        // Every reported interval: entries, and per operation its transitions and its exit.
        let family = seen.iter().filter(|&&i| counts.entries[i] > 0).count()
            + seen
                .iter()
                .map(|&i| {
                    1 + (0..n)
                        .filter(|&j| counts.transitions[i * n + j] > 0)
                        .count()
                })
                .sum::<usize>();
        let z = bonferroni_z(MODEL_CONFIDENCE, family);
        let entry = seen
            .iter()
            .filter(|&&i| counts.entries[i] > 0)
            .map(|&i| EntryEstimate {
                operation: names[i].clone(),
                sessions: counts.entries[i],
                p: wilson(counts.entries[i], sessions, z),
            })
            .collect();
        let operations = seen
            .iter()
            .map(|&i| {
                let row: Vec<u64> = (0..n).map(|j| counts.transitions[i * n + j]).collect();
                let departures: u64 = row.iter().sum::<u64>() + counts.exits[i];
                let mut transitions: Vec<TransitionEstimate> = (0..n)
                    .filter(|&j| row[j] > 0)
                    .map(|j| TransitionEstimate {
                        to: names[j].clone(),
                        count: row[j],
                        p: wilson(row[j], departures, z),
                        think: think_estimate(&counts.think[i * n + j]),
                    })
                    .collect();
                transitions.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.to.cmp(&b.to)));
                let stats = lines.get(i).cloned().unwrap_or_default();
                OperationEstimate {
                    name: names[i].clone(),
                    method: stats.method(),
                    path: stats.path(),
                    status: stats.status(),
                    requests: counts.moments.requests_of(i),
                    exits: counts.exits[i],
                    exit: wilson(counts.exits[i], departures, z),
                    transitions,
                }
            })
            .collect();
        Self {
            confidence: MODEL_CONFIDENCE,
            interval_method: INTERVAL_METHOD.to_owned(),
            think_test: THINK_TEST.to_owned(),
            sessions,
            requests: counts.moments.requests(),
            entry,
            operations,
        }
    }

    /// The normal quantile of each interval (recomputed from the family size), for intervals on
    /// probabilities the estimate does not list (a config's transition never taken).
    pub fn interval_z(&self) -> f64 {
        let family = self.entry.len()
            + self
                .operations
                .iter()
                .map(|o| 1 + o.transitions.len())
                .sum::<usize>();
        bonferroni_z(self.confidence, family)
    }

    /// The `[workload]` TOML stating this model, with `sessions_per_sec` as its rate.
    ///
    /// Each operation has its most frequent method and path and expects its most frequent status;
    /// captures and checks are commented placeholders, since a log does not show bodies.
    pub fn to_toml(&self, sessions_per_sec: f64, rate_note: &str) -> String {
        let q = |s: &str| toml::Value::String(s.to_owned()).to_string();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# The user model estimated from {} sessions ({} requests) by `cargo loadgate model`.",
            self.sessions, self.requests
        );
        out.push_str(
            "# Paste it into loadgate.toml; fill in the captures and checks a log cannot show.\n",
        );
        out.push_str("[workload]\nseed = 42\n");
        let _ = writeln!(
            out,
            "sessions-per-sec = {}   # {rate_note}",
            round_rate(sessions_per_sec)
        );
        let entries: Vec<String> = self
            .entry
            .iter()
            .map(|e| format!("{{ to = {}, weight = {} }}", q(&e.operation), e.sessions))
            .collect();
        let _ = writeln!(out, "entry = [{}]", entries.join(", "));
        for op in &self.operations {
            out.push_str("\n[[workload.operation]]\n");
            let _ = writeln!(out, "name = {}", q(&op.name));
            let _ = writeln!(
                out,
                "request = {{ method = {}, path = {} }}   # the most frequent path; put {{{{variables}}}} where it varies",
                q(&op.method),
                q(&op.path)
            );
            match op.status {
                Some(s) => {
                    let _ = writeln!(
                        out,
                        "expect = {{ status = {s} }}   # add body-contains / json-pointer checks"
                    );
                }
                None => out.push_str("# expect = { status = 200 }\n"),
            }
            out.push_str("# capture = { token = \"/token\" }   # values later requests need\n");
            let _ = writeln!(out, "# exits after {}: p = {:.4}", op.name, op.exit.point);
            let next: Vec<String> = op
                .transitions
                .iter()
                .map(|t| {
                    format!(
                        "  {{ to = {}, p = {}, think = {} }},",
                        q(&t.to),
                        floor6(t.p.point),
                        t.think.suggested.toml()
                    )
                })
                .collect();
            if next.is_empty() {
                out.push_str("next = []\n");
            } else {
                let _ = writeln!(out, "next = [\n{}\n]", next.join("\n"));
            }
            for t in &op.transitions {
                if let Some(fit) = t.think.exponential
                    && !fit.fits
                {
                    let _ = writeln!(
                        out,
                        "# think before `{}` is not exponential (Lilliefors {:.3} > {:.3}); quantiles 10/50/90%: {} / {} / {}; exponential alternative: \"{}\"",
                        t.to,
                        fit.modified,
                        fit.critical,
                        millis(t.think.quantiles_s[0]),
                        millis(t.think.quantiles_s[1]),
                        millis(t.think.quantiles_s[2]),
                        millis(t.think.mean_s)
                    );
                }
            }
        }
        out
    }

    /// The workload this estimate states, read back from its TOML by the project's own config
    /// loader: what [`analyze`] sees is exactly what a user pastes.
    pub fn workload(&self) -> Result<WorkloadConfig, crate::config::ConfigError> {
        let text = self.to_toml(1.0, "");
        crate::config::parse_config_str(
            &text,
            std::path::Path::new("estimated-workload.toml"),
            None,
            "default",
        )
        .map(|c| c.workload)
    }
}

fn round_rate(r: f64) -> f64 {
    if r >= 10.0 {
        (r * 10.0).round() / 10.0
    } else {
        (r * 1000.0).round() / 1000.0
    }
}

/// Rounded down to 6 decimals, so a row's probabilities never sum above 1 by rounding.
pub(crate) fn floor6(p: f64) -> f64 {
    (p * 1e6).floor() / 1e6
}

fn think_estimate(t: &ThinkSample) -> ThinkEstimate {
    let n = t.count as f64;
    let mean = if n > 0.0 { t.sum_s / n } else { 0.0 };
    let sd = if n > 1.0 {
        ((t.sum_s2 - n * mean * mean) / (n - 1.0)).max(0.0).sqrt()
    } else {
        0.0
    };
    let mut sample = t.reservoir.clone();
    let exponential = exponential_fit(&mut sample);
    sample.sort_by(f64::total_cmp);
    let qs = [0.1, 0.5, 0.9].map(|q| sorted_quantile(&sample, q).unwrap_or(0.0));
    let suggested = match exponential {
        Some(fit) if !fit.fits => {
            if qs[1] > 0.0 && (qs[2] - qs[0]) < 0.2 * qs[1] {
                SuggestedThink::Fixed { value_s: mean }
            } else {
                let half = 3f64.sqrt() * sd;
                SuggestedThink::Uniform {
                    low_s: (mean - half).max(0.0),
                    high_s: mean + half,
                }
            }
        }
        _ => SuggestedThink::Exponential { mean_s: mean },
    };
    ThinkEstimate {
        mean_s: mean,
        sd_s: sd,
        quantiles_s: qs,
        exponential,
        suggested,
    }
}

/// A model's mix against the log's.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LogValidation {
    /// Which model: `estimated` or the config's path.
    pub model: String,
    /// The family-wise confidence ([`MIX_CONFIDENCE`]) over every operation and the requests per
    /// session.
    pub confidence: f64,
    /// The log's sessions.
    pub sessions: u64,
    /// Per operation (of the model), the log's share against the model's.
    pub operations: Vec<OperationMix>,
    /// The log's requests per session against the model's.
    pub requests_per_session: MeanCheck,
    /// Whether everything lies within its interval.
    pub within: bool,
}

/// Validates `model` against the log's sessions (seed 000's check of the model): each operation's
/// share of requests and the requests per session, each within its interval, family-wise 99%
/// (the session is the unit, as in [`crate::workload::validate_mix_against`]). `names` are the
/// log's operations by index; a model operation the log does not have expects its share there
/// and finds 0.
pub fn validate(
    label: &str,
    model: &WorkloadConfig,
    names: &[String],
    moments: &MixMoments,
) -> Result<LogValidation, crate::workload::ModelError> {
    let analysis = analyze(model)?;
    let expected: Vec<f64> = names
        .iter()
        .map(|n| {
            analysis
                .operations
                .iter()
                .find(|o| &o.name == n)
                .map_or(0.0, |o| o.share)
        })
        .collect();
    let family = names.len() + 1;
    let mut operations = moments.shares(names, &expected, family);
    // Operations of the model the log lacks: the log's share is 0.
    for o in &analysis.operations {
        if !names.contains(&o.name) && o.share > 0.0 {
            operations.push(OperationMix {
                name: o.name.clone(),
                expected_share: o.share,
                observed_share: 0.0,
                low: o.share,
                high: o.share,
                within: false,
            });
        }
    }
    operations.retain(|o| o.expected_share > 0.0 || o.observed_share > 0.0);
    let requests_per_session = moments.requests_per_session(analysis.requests_per_session, family);
    let within = operations.iter().all(|o| o.within) && requests_per_session.within;
    Ok(LogValidation {
        model: label.to_owned(),
        confidence: MIX_CONFIDENCE,
        sessions: moments.sessions(),
        operations,
        requests_per_session,
        within,
    })
}

impl std::fmt::Display for LogValidation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.within {
            return write!(
                f,
                "the log's mix of {} sessions lies within the 99% interval of the {} model",
                self.sessions, self.model
            );
        }
        let mut outside: Vec<String> = self
            .operations
            .iter()
            .filter(|o| !o.within)
            .map(|o| o.describe("has"))
            .collect();
        let r = &self.requests_per_session;
        if !r.within {
            outside.push(format!(
                "requests per session {:.3} (model {:.3}, interval {:.3}–{:.3})",
                r.observed, r.expected, r.low, r.high
            ));
        }
        write!(
            f,
            "the log's mix of {} sessions falls outside the 99% interval of the {} model: {}",
            self.sessions,
            self.model,
            outside.join("; ")
        )
    }
}

/// The estimate against a config's model, transition by transition (a round trip's check).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConfigComparison {
    /// Per probability of the config (entry weights, transitions, exits).
    pub probabilities: Vec<ProbabilityCheck>,
    /// Per transition of the config that the log took.
    pub think_times: Vec<ThinkCheck>,
    /// Whether every probability of the config lies in its interval.
    pub all_probabilities_within: bool,
    /// The largest relative error of a mean think time.
    pub max_think_error: f64,
}

/// One probability of the config against the estimate's interval.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProbabilityCheck {
    /// `entry → op`, `from → to` or `from → (end)`.
    pub what: String,
    /// The config's probability.
    pub config: f64,
    /// The estimate with its interval.
    pub estimate: Proportion,
    /// Whether the config's lies in the interval.
    pub within: bool,
}

/// One mean think time of the config against the estimate.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ThinkCheck {
    /// `from → to`.
    pub what: String,
    /// The config's mean, in seconds.
    pub config_mean_s: f64,
    /// The estimated mean, in seconds.
    pub estimate_mean_s: f64,
    /// The gaps it is estimated from.
    pub samples: u64,
    /// `|estimate − config| / config`.
    pub relative_error: f64,
}

/// Compares the estimate with the config's model that (perhaps) generated the log.
pub fn compare_with_config(est: &ModelEstimate, w: &WorkloadConfig) -> ConfigComparison {
    let z = est.interval_z();
    let mut probabilities = Vec::new();
    for e in &w.entry {
        let name = &w.operations[e.operation].name;
        let k = est
            .entry
            .iter()
            .find(|x| &x.operation == name)
            .map_or(0, |x| x.sessions);
        probabilities.push(check(
            format!("entry → {name}"),
            e.p,
            wilson(k, est.sessions, z),
        ));
    }
    let mut think_times = Vec::new();
    for op in &w.operations {
        let Some(o) = est.operations.iter().find(|o| o.name == op.name) else {
            continue;
        };
        let departures = o.exits + o.transitions.iter().map(|t| t.count).sum::<u64>();
        let mut total = 0.0;
        for t in &op.next {
            let to = &w.operations[t.to].name;
            total += t.p;
            let seen = o.transitions.iter().find(|x| &x.to == to);
            let k = seen.map_or(0, |x| x.count);
            probabilities.push(check(
                format!("{} → {to}", op.name),
                t.p,
                wilson(k, departures, z),
            ));
            if let Some(x) = seen {
                let config_mean_s = mean_think(t.think);
                think_times.push(ThinkCheck {
                    what: format!("{} → {to}", op.name),
                    config_mean_s,
                    estimate_mean_s: x.think.mean_s,
                    samples: x.count,
                    relative_error: if config_mean_s > 0.0 {
                        (x.think.mean_s - config_mean_s).abs() / config_mean_s
                    } else {
                        x.think.mean_s
                    },
                });
            }
        }
        probabilities.push(check(
            format!("{} → (end)", op.name),
            (1.0 - total).max(0.0),
            wilson(o.exits, departures, z),
        ));
    }
    ConfigComparison {
        all_probabilities_within: probabilities.iter().all(|p| p.within),
        max_think_error: think_times
            .iter()
            .map(|t| t.relative_error)
            .fold(0.0, f64::max),
        probabilities,
        think_times,
    }
}

fn check(what: String, config: f64, estimate: Proportion) -> ProbabilityCheck {
    ProbabilityCheck {
        what,
        config,
        within: estimate.covers(config),
        estimate,
    }
}

impl std::fmt::Display for ModelEstimate {
    /// The terminal table: entries, then each operation's transitions with their intervals and
    /// think times.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} sessions, {} requests; intervals: {}",
            self.sessions, self.requests, self.interval_method
        )?;
        writeln!(f, "entry:")?;
        for e in &self.entry {
            writeln!(f, "  {:<24} {}", e.operation, pct(e.p))?;
        }
        for o in &self.operations {
            writeln!(
                f,
                "{} ({} {}, {} requests):",
                o.name, o.method, o.path, o.requests
            )?;
            for t in &o.transitions {
                let fit = match t.think.exponential {
                    Some(x) if x.fits => {
                        format!("exponential fits ({:.3} ≤ {:.3})", x.modified, x.critical)
                    }
                    Some(x) => format!(
                        "NOT exponential ({:.3} > {:.3}); 10/50/90%: {} / {} / {}; try {}",
                        x.modified,
                        x.critical,
                        millis(t.think.quantiles_s[0]),
                        millis(t.think.quantiles_s[1]),
                        millis(t.think.quantiles_s[2]),
                        t.think.suggested.toml()
                    ),
                    None => "too few gaps to test".to_owned(),
                };
                writeln!(
                    f,
                    "  → {:<22} {}  think mean {} ({})",
                    t.to,
                    pct(t.p),
                    millis(t.think.mean_s),
                    fit
                )?;
            }
            writeln!(f, "  → {:<22} {}", "(end)", pct(o.exit))?;
        }
        Ok(())
    }
}

fn pct(p: Proportion) -> String {
    format!(
        "{:>6.2}%  [{:.2}%, {:.2}%]",
        p.point * 100.0,
        p.low * 100.0,
        p.high * 100.0
    )
}
