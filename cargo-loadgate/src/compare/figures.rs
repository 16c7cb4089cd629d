//! The figures of one run that the comparison reads, taken from a run result (typed, or JSON as
//! stored in a baseline): the phase measured at the comparison's load point, the knee bracket,
//! the soak's RSS series and the calibration figure.

use crate::measure::PhaseMeasurement;
use crate::result::RunResult;
use crate::stats::slope::{DEFAULT_CONFIDENCE, SlopeEstimate};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The phase names searched, in order, for the phase measured at the comparison's load point
/// when none is named: the soak, then the single steady phase of runs without a ramp.
pub const COMPARED_PHASES: [&str; 2] = ["soak", "steady"];

/// The confidence of the soak's stored slope intervals (the plan uses the slope defaults).
pub const RSS_SLOPE_CONFIDENCE: f64 = DEFAULT_CONFIDENCE;

/// The capacity found by the ramp: the knee lies between the last offered load that held the SLO
/// and the first that broke it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct KneeBracket {
    /// The highest session rate that held, per second; `None` when even the first step broke.
    pub last_held_sessions_per_sec: Option<f64>,
    /// The lowest session rate that broke, per second; `None` when every step held.
    pub first_broke_sessions_per_sec: Option<f64>,
}

/// What the comparison reads of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunFigures {
    /// The commit measured, when known.
    pub commit: Option<String>,
    /// The phase measured at the comparison's load point (the soak), when the run has one.
    pub phase: Option<PhaseMeasurement>,
    /// The knee bracket, when the run had a ramp.
    pub knee: Option<KneeBracket>,
    /// The target's RSS over the compared phase: (seconds, bytes), in time order. Used when
    /// `rss_slope` is absent.
    pub rss: Vec<(f64, f64)>,
    /// The soak's RSS slope in bytes per second with its interval at
    /// [`RSS_SLOPE_CONFIDENCE`], as the plan computed it over exactly the soak's samples.
    pub rss_slope: Option<SlopeEstimate>,
    /// The calibration figure (a fixed reference load's throughput on this machine), when measured.
    pub calibration: Option<f64>,
    /// How far the calibration moved during the run (`after / before − 1`), when both were measured.
    pub calibration_drift: Option<f64>,
}

/// Why a run result could not be read for comparison.
#[derive(Debug, thiserror::Error)]
pub enum FiguresError {
    /// A phase is not a readable measurement.
    #[error("phase {index} of the result is not readable")]
    Phase {
        /// Its index in `phases`.
        index: usize,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// The soak's RSS slope is present but not readable.
    #[error("the soak's RSS slope in the result is not readable")]
    Slope(#[source] serde_json::Error),
    /// The typed result could not be turned into JSON.
    #[error("the result could not be serialized")]
    Serialize(#[source] serde_json::Error),
}

impl RunFigures {
    /// Reads the figures of a typed run result; see [`RunFigures::from_json`].
    pub fn from_result(result: &RunResult, phase: Option<&str>) -> Result<Self, FiguresError> {
        let value = serde_json::to_value(result).map_err(FiguresError::Serialize)?;
        Self::from_json(&value, phase)
    }

    /// Reads the figures of a run result in its JSON form.
    ///
    /// The compared phase is the one named `phase`, else the one `soak.phase` names, else the
    /// first of [`COMPARED_PHASES`] present, else the last phase. The knee bracket is
    /// `ramp.knee_sessions_per_sec` (last held) and `ramp.lowest_break.sessions_per_sec` (first
    /// broke). The RSS slope is `soak.slopes.rss_bytes_per_sec`; the raw RSS series is the
    /// resource samples of the last `measured` seconds of the run when the compared phase is the
    /// run's last phase (samples carry no phase), and empty otherwise. The calibration is read
    /// from `calibration` (a number, or an object with a `figure`) when present.
    pub fn from_json(result: &Value, phase: Option<&str>) -> Result<Self, FiguresError> {
        let phases = result["phases"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let names: Vec<&str> = phases
            .iter()
            .map(|p| p["name"].as_str().unwrap_or(""))
            .collect();
        let soak_phase = result["soak"]["phase"].as_str();
        let index = match phase.or(soak_phase) {
            Some(wanted) => names.iter().position(|n| *n == wanted),
            None => COMPARED_PHASES
                .iter()
                .find_map(|c| names.iter().position(|n| n == c))
                .or_else(|| phases.len().checked_sub(1)),
        };
        let measurement = match index {
            Some(i) => Some(
                PhaseMeasurement::deserialize(&phases[i])
                    .map_err(|source| FiguresError::Phase { index: i, source })?,
            ),
            None => None,
        };
        let is_last = index.is_some_and(|i| i + 1 == phases.len());
        let mut rss: Vec<(f64, f64)> = result["resources"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .filter_map(|s| Some((s["elapsed_s"].as_f64()?, s["rss_bytes"].as_f64()?)))
            .collect();
        match (&measurement, rss.last().copied()) {
            (Some(m), Some((end, _))) if is_last => {
                let from = end - m.measured.as_secs_f64();
                rss.retain(|(t, _)| *t >= from);
            }
            _ => rss.clear(),
        }
        let ramp = &result["ramp"];
        let knee = (!ramp.is_null()).then(|| KneeBracket {
            last_held_sessions_per_sec: ramp["knee_sessions_per_sec"].as_f64(),
            first_broke_sessions_per_sec: ramp["lowest_break"]["sessions_per_sec"].as_f64(),
        });
        let rss_slope = match &result["soak"]["slopes"]["rss_bytes_per_sec"] {
            Value::Null => None,
            v => Some(SlopeEstimate::deserialize(v).map_err(FiguresError::Slope)?),
        };
        let calibration = result["calibration"]
            .as_f64()
            .or_else(|| result["calibration"]["figure"].as_f64())
            .filter(|c| c.is_finite() && *c > 0.0);
        let calibration_drift = result["calibration"]["drift"]
            .as_f64()
            .filter(|d| d.is_finite());
        Ok(Self {
            commit: result["git"]["commit"].as_str().map(str::to_owned),
            phase: measurement,
            knee,
            rss,
            rss_slope,
            calibration,
            calibration_drift,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::PhaseRecorder;
    use serde_json::json;
    use std::time::Duration;

    fn phase(name: &str) -> Value {
        let r = PhaseRecorder::new(
            &["a".to_owned()],
            Duration::ZERO,
            Duration::from_millis(100),
            Duration::from_secs(1),
        );
        let m = r.finish(crate::measure::FinishInfo {
            name: name.to_owned(),
            seed: 1,
            sessions_per_sec: 10.0,
            arrivals_end: Duration::from_secs(3),
            end: Duration::from_secs(3),
            max_lag: Duration::from_millis(5),
            max_drop_rate: 0.01,
            generator_cpu: None,
            generator_core: None,
            stopped: None,
        });
        let mut v = serde_json::to_value(m).unwrap();
        v["schedule_hash"] = "s".into();
        v
    }

    #[test]
    fn the_soak_is_preferred_and_rss_is_cut_to_its_span() {
        let result = json!({
            "git": {"commit": "abc", "dirty": false},
            "phases": [phase("ramp-1"), phase("soak")],
            "resources": (0..10).map(|i| json!({"elapsed_s": f64::from(i), "rss_bytes": 1000 * i}))
                .collect::<Vec<_>>(),
            "ramp": {"knee_sessions_per_sec": 40.0, "lowest_break": {"sessions_per_sec": 50.0}},
            "soak": {"phase": "soak", "slopes": {"rss_bytes_per_sec": {"estimate": 1.0, "low": 0.5, "high": 1.5}}},
            "calibration": {"figure": 1234.5, "drift": -0.02},
        });
        let f = RunFigures::from_json(&result, None).unwrap();
        assert_eq!(f.phase.as_ref().unwrap().name, "soak");
        assert_eq!(f.commit.as_deref(), Some("abc"));
        // The soak measured 3 s and ended the run: samples from 6 s to 9 s.
        assert_eq!(f.rss.first(), Some(&(6.0, 6000.0)));
        assert_eq!(f.rss.len(), 4);
        assert_eq!(
            f.knee,
            Some(KneeBracket {
                last_held_sessions_per_sec: Some(40.0),
                first_broke_sessions_per_sec: Some(50.0)
            })
        );
        assert_eq!(f.rss_slope.map(|s| s.high), Some(1.5));
        assert_eq!(f.calibration, Some(1234.5));
        assert_eq!(f.calibration_drift, Some(-0.02));
    }

    #[test]
    fn a_named_phase_that_is_not_last_has_no_rss_and_missing_parts_are_none() {
        let result = json!({
            "phases": [phase("steady"), phase("other")],
            "resources": [{"elapsed_s": 0.0, "rss_bytes": 1}],
        });
        let f = RunFigures::from_json(&result, None).unwrap();
        assert_eq!(f.phase.as_ref().unwrap().name, "steady");
        assert!(f.rss.is_empty());
        assert_eq!((f.knee, f.calibration, f.commit), (None, None, None));
        assert_eq!(f.rss_slope, None);
        let none = RunFigures::from_json(&result, Some("soak")).unwrap();
        assert!(none.phase.is_none());
        let bad = json!({"phases": [{"name": "soak"}]});
        assert!(matches!(
            RunFigures::from_json(&bad, None),
            Err(FiguresError::Phase { index: 0, .. })
        ));
    }
}
