//! The headroom's part of the run document: the capacity the ramp found against the production
//! load (the workload's rate at 100%, seed 000: "subtract your current production load to arrive
//! at how much head room you have"), the `[slo] headroom` check's outcome, and its comparison with
//! the baseline's. `compare/headroom.rs` computes and decides them; this module only holds what is
//! written and read back.

use super::MetricOutcome;
use serde::{Deserialize, Serialize};

/// How far the ramp pinned the capacity down, and so the headroom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeadroomBound {
    /// Between the last rate that held and the first that broke: `[low, high)`.
    Bracket,
    /// At least `low`: the ramp held its highest step, or the generator reached its limit first.
    AtLeast,
    /// Below `high`: even the lowest step broke.
    Below,
    /// Nothing held and nothing broke (or nothing was measured).
    Unknown,
}

/// The outcome of the `[slo] headroom` check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeadroomOutcome {
    /// The headroom's lower end is at or above the limit.
    Pass,
    /// The headroom's upper end is at or below the limit: the run fails (a regression).
    Fail,
    /// The headroom's bracket straddles the limit, it is a lower bound below the limit, or the
    /// ramp cannot be trusted.
    Inconclusive,
}

impl HeadroomOutcome {
    /// The outcome for people: `pass`, `fail`, `inconclusive`.
    pub fn word(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::Inconclusive => "inconclusive",
        }
    }
}

/// The headroom of a run: capacity / production load, with the knee's bracket kept, and
/// capacity − production load in requests per second.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeadroomSummary {
    /// The production load: the workload's session rate at the ramp's 100%
    /// (`[workload] sessions-per-sec`, which `cargo loadgate load` writes).
    pub production_sessions_per_sec: f64,
    /// The user model's expected requests per session (`workload::analyze`), when it could be
    /// computed.
    pub requests_per_session: Option<f64>,
    /// The request rate the production load implies in the model's steady state.
    pub production_rate_per_sec: Option<f64>,
    /// The capacity's lower end: the highest session rate that held; `None` when nothing held.
    pub capacity_low_sessions_per_sec: Option<f64>,
    /// The capacity's upper end (excluded): the lowest session rate that broke; `None` when
    /// nothing broke (a lower bound).
    pub capacity_high_sessions_per_sec: Option<f64>,
    /// Which of the ends are known.
    pub bound: HeadroomBound,
    /// The headroom's lower end, capacity low / production load (1.5 = 1.5×).
    pub low: Option<f64>,
    /// The headroom's upper end (excluded), capacity high / production load.
    pub high: Option<f64>,
    /// capacity low − production load, in requests per second at the model's rate.
    pub margin_low_rate_per_sec: Option<f64>,
    /// capacity high − production load, in requests per second at the model's rate.
    pub margin_high_rate_per_sec: Option<f64>,
    /// `[slo] headroom`: the least headroom a run must show; `None` when no check is configured.
    pub limit: Option<f64>,
    /// The check's outcome; `None` without a limit.
    pub outcome: Option<HeadroomOutcome>,
    /// The headroom in one sentence with its numbers, for people.
    pub statement: String,
    /// Why the check concluded what it did, for people; `None` without a limit.
    pub reason: Option<String>,
}

/// This run's headroom against the baseline's. With the same production load on both sides
/// (always so in the gate, whose baseline has this config's hash) the ratio is capacity's ratio,
/// so it is reported and not judged a second time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeadroomComparison {
    /// The baseline's production load in sessions per second.
    pub base_production_sessions_per_sec: f64,
    /// This run's production load in sessions per second.
    pub head_production_sessions_per_sec: f64,
    /// Whether both production loads are the same, so the ratio is capacity's.
    pub same_as_capacity: bool,
    /// The point estimate of head headroom / base headroom.
    pub estimate: Option<f64>,
    /// The interval's lower end; `None` when unknown.
    pub low: Option<f64>,
    /// The interval's upper end; `None` when unbounded.
    pub high: Option<f64>,
    /// The conclusion by capacity's rule (capacity's own when `same_as_capacity`).
    pub outcome: MetricOutcome,
    /// What it rests on, for people.
    pub note: String,
}
