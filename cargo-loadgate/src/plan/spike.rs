//! The spike phase's record: the step from the soak's load to `spike.to` × capacity and back,
//! measured as one phase (no gap in which the service's queue could drain), with the admission
//! behaviour named from the spike's windows and the time to stable SLO after its end.

use super::recovery::{AdmissionFigures, Recovery, classify_admission, time_to_stable};
use super::soak::CapacitySource;
use crate::config::{SloConfig, SpikeConfig};
use crate::measure::Window;
use crate::workload::{RateStep, RateSteps, RateStepsError};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What the spike phase found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpikeOutcome {
    /// The phase's name in the run result (`spike`).
    pub phase: String,
    /// The capacity both loads were taken from, in sessions per second (the soak's).
    pub capacity_sessions_per_sec: f64,
    /// Whose capacity it was.
    pub capacity_from: CapacitySource,
    /// The session rate before and after the spike: the soak's.
    pub from_sessions_per_sec: f64,
    /// The session rate during the spike: `spike.to` × capacity.
    pub to_sessions_per_sec: f64,
    /// Where the spike begins, from the start of the phase's measured part (its windows' origin).
    #[serde(rename = "starts_ms", with = "crate::measure::millis")]
    pub starts: Duration,
    /// Where it ends: the event the time to stable SLO is measured from.
    #[serde(rename = "ends_ms", with = "crate::measure::millis")]
    pub ends: Duration,
    /// How the service met the spike, with the figures the rule read.
    pub admission: AdmissionFigures,
    /// The time to stable SLO after the spike's end.
    pub recovery: Recovery,
    /// `recovery.windows`: the consecutive windows that had to hold.
    pub recovery_windows: usize,
    /// The `[slo] recovery` check as `compare::recovery_check` decided it; `None` without a limit
    /// (the plan leaves it `None`; the run fills it in when it records the spike).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<RecoveryCheck>,
    /// Why the phase stopped early, if it did (an abort condition).
    pub aborted: Option<String>,
    /// Whether the generator kept its schedule.
    pub valid: bool,
    /// Why it did not, one reason per entry.
    pub invalid_reasons: Vec<String>,
}

/// The `[slo] recovery` gate check of a spike.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryCheck {
    /// `slo.recovery`: the longest acceptable time to stable SLO.
    #[serde(rename = "limit_ms", with = "crate::measure::millis")]
    pub limit: Duration,
    /// What the check concluded.
    pub outcome: RecoveryCheckOutcome,
    /// Why, with the numbers, for people.
    pub reason: String,
}

/// The outcome of the `[slo] recovery` check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecoveryCheckOutcome {
    /// Stable again within the limit.
    Pass,
    /// Stable only after the limit, or not within the phase: a regression (exit 10).
    Fail,
    /// The phase cannot be trusted (the generator did not keep its schedule).
    Inconclusive,
}

/// The rate steps of a spike phase whose arrivals start with `warmup`: ×`multiplier` from
/// `warmup + before` for `duration`, then ×1 again.
pub fn spike_steps(
    spike: &SpikeConfig,
    warmup: Duration,
    multiplier: f64,
) -> Result<RateSteps, RateStepsError> {
    let start = warmup + spike.before;
    RateSteps::new(&[
        RateStep {
            at: start,
            multiplier,
        },
        RateStep {
            at: start + spike.duration,
            multiplier: 1.0,
        },
    ])
}

/// Reads the spike's windows (origin: the measured part's start, `spike.before` before the spike):
/// the admission from the windows before it and during it, the recovery from its end.
pub fn spike_figures(
    windows: &[Window],
    spike: &SpikeConfig,
    slo: &SloConfig,
    required: usize,
) -> (AdmissionFigures, Recovery) {
    let starts = spike.before;
    let ends = spike.before + spike.duration;
    let before: Vec<Window> = windows
        .iter()
        .filter(|w| w.start + w.length <= starts)
        .cloned()
        .collect();
    let during: Vec<Window> = windows
        .iter()
        .filter(|w| w.start >= starts && w.start < ends)
        .cloned()
        .collect();
    (
        classify_admission(&before, &during, slo),
        time_to_stable(windows, ends, required, slo),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::recovery::Admission;
    use crate::plan::recovery::tests::{slo, window};

    fn spike() -> SpikeConfig {
        SpikeConfig {
            to: 3.0,
            duration: Duration::from_secs(3),
            before: Duration::from_secs(4),
            after: Duration::from_secs(10),
        }
    }

    /// A shedding service: fast 503s during 4..7 s, two slow windows after, then stable.
    #[test]
    fn a_shedding_spike_is_rejected_cheaply_and_recovers_after_its_slow_windows() {
        let mut windows: Vec<Window> = (0..4).map(|s| window(s, 100, 0, 0, 5, 40)).collect();
        windows.extend((4..7).map(|s| window(s, 300, 200, 0, 3, 30)));
        windows.extend((7..9).map(|s| window(s, 100, 0, 0, 80, 600)));
        windows.extend((9..17).map(|s| window(s, 100, 0, 0, 5, 40)));
        let (admission, recovery) = spike_figures(&windows, &spike(), &slo(), 5);
        assert_eq!(admission.admission, Admission::RejectedCheaply);
        assert_eq!(recovery.after(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn the_steps_go_up_at_the_spike_and_back_at_its_end() {
        let steps = spike_steps(&spike(), Duration::from_secs(1), 5.0).expect("valid");
        assert_eq!(steps.multiplier_at(4.9), 1.0);
        assert_eq!(steps.multiplier_at(5.0), 5.0);
        assert_eq!(steps.multiplier_at(7.9), 5.0);
        assert_eq!(steps.multiplier_at(8.0), 1.0);
    }
}
