//! The history document (`cargo loadgate history --json`, `history.json`): each walked commit's
//! figures with their intervals, where the series breaks, and each metric's change points.
//! `compare::history` fills it in; reporters read it. Its schema is checked in at
//! `docs/schema/history-v1.json`.
//!
//! Every interval uses the comparison's vocabulary ([`super::MetricComparison`]): `estimate`,
//! `low`, `high` and the two-sided `confidence`, on the metric's own scale.

use super::comparison::{Metric, Scale};
use serde::{Deserialize, Serialize};

/// The version of the history document. Readers refuse newer versions.
pub const HISTORY_FORMAT_VERSION: u32 = 1;

/// The history of the stored results along a branch's first parents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryResult {
    /// [`HISTORY_FORMAT_VERSION`] when written.
    pub format_version: u32,
    /// Where the results were read: `refs/notes/loadgate`, `dir:PATH`.
    pub store: String,
    /// The revision walked, as given.
    pub rev: String,
    /// The commit it names (full id).
    pub head: String,
    /// `--since` as given, when given.
    #[serde(default)]
    pub since: Option<String>,
    /// Whether the walk stopped at its limit before `--since` or the first commit.
    pub limited: bool,
    /// The series' key, when any commit has a result of the config.
    #[serde(default)]
    pub series: Option<SeriesKey>,
    /// Every commit walked, oldest first.
    pub commits: Vec<HistoryCommit>,
    /// Where the series breaks: each stretch of consecutive commits without a result of the
    /// series, by reason, oldest first.
    pub breaks: Vec<SeriesBreak>,
    /// One entry per metric and operation class asked for, with its points and change points.
    pub metrics: Vec<MetricHistory>,
    /// What a person should know: accepts that do not parse, an operation with no figure.
    pub warnings: Vec<String>,
}

/// What every result of a series shares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesKey {
    /// The config hash of the newest result of the config (the anchor).
    pub config_hash: String,
    /// Its environment fingerprint's key.
    pub fingerprint_key: String,
    /// The commit of the anchor.
    pub anchor: String,
}

/// Why a commit has no result in the series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BreakReason {
    /// Nothing is stored for the commit.
    NoResult,
    /// Results are stored, but of another config hash (or schedule).
    ConfigChanged,
    /// A result of the config is stored, but of another environment fingerprint.
    FingerprintChanged,
    /// The result cannot be read by this version (newer format, or malformed).
    Unreadable,
}

impl BreakReason {
    /// The reason for people.
    pub fn phrase(self) -> &'static str {
        match self {
            BreakReason::NoResult => "no result",
            BreakReason::ConfigChanged => "config changed",
            BreakReason::FingerprintChanged => "fingerprint changed",
            BreakReason::Unreadable => "unreadable result",
        }
    }
}

/// One commit walked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryCommit {
    /// The commit (full id).
    pub commit: String,
    /// Whether the commit is an accepted step: a well-formed `Loadgate-Accept` trailer, or an
    /// `[[accept]]` entry of the config naming it.
    pub accepted: bool,
    /// The accepts of the commit as written (`Loadgate-Accept: p99 +20%`, or the `[[accept]]`
    /// entry with its location).
    #[serde(default)]
    pub accepts: Vec<String>,
    /// Whether its result is in the series.
    pub in_series: bool,
    /// Why it is not, when it is not.
    #[serde(default)]
    pub reason: Option<BreakReason>,
    /// The lookup's explanation, when it is not (e.g. what differs in the environment).
    #[serde(default)]
    pub detail: Option<String>,
}

/// A stretch of consecutive commits without a result of the series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesBreak {
    /// The oldest commit of the stretch.
    pub first: String,
    /// The newest commit of the stretch.
    pub last: String,
    /// How many commits it spans.
    pub commits: u32,
    /// Why they have none.
    pub reason: BreakReason,
    /// The lookup's explanation for the newest of them.
    pub detail: String,
}

/// One metric (of one operation class) over the series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricHistory {
    /// The metric.
    pub metric: Metric,
    /// The operation class; `None` for all operations together.
    #[serde(default)]
    pub operation: Option<String>,
    /// The scale of the change points' estimates: a ratio after/before for latency and capacity,
    /// a difference for the error rate.
    pub scale: Scale,
    /// The unit of the points: `ms`, `sessions/s`, or `fraction`.
    pub unit: String,
    /// The value of each commit of the series that has one, oldest first.
    pub points: Vec<HistoryPoint>,
    /// The change points found, oldest first.
    pub change_points: Vec<HistoryChange>,
}

/// One commit's figure of a metric, with its interval (the run's own sampling error).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryPoint {
    /// The commit (full id).
    pub commit: String,
    /// The figure in the metric's unit.
    pub estimate: f64,
    /// The lower end of its interval.
    pub low: f64,
    /// The upper end of its interval.
    pub high: f64,
    /// The two-sided confidence of the interval.
    pub confidence: f64,
}

/// A change point of a metric: where, how large, and where else it could lie.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryChange {
    /// The first commit of the new level (full id).
    pub commit: String,
    /// The size: the ratio of the medians after/before (ratio scale) or their difference.
    pub estimate: f64,
    /// The lower end of the size's interval.
    pub low: f64,
    /// The upper end of the size's interval.
    pub high: f64,
    /// The two-sided confidence of both intervals.
    pub confidence: f64,
    /// The permutation test's p-value of the split.
    pub p_value: f64,
    /// The earliest commit the change could be at (the location interval).
    pub earliest: String,
    /// The latest commit it could be at.
    pub latest: String,
    /// Whether a commit of the location interval accepted a change of this metric.
    pub accepted: bool,
    /// The accepting commit and what it wrote, when accepted.
    #[serde(default)]
    pub accepted_by: Option<String>,
    /// The sentence people read.
    pub sentence: String,
}
