//! The figures of one run that the comparison reads, taken from a typed run result: the phase
//! measured at the comparison's load point, the knee bracket, the soak's RSS series and the
//! calibration figure.

use crate::measure::PhaseMeasurement;
use crate::result::RunResult;
use crate::stats::slope::{DEFAULT_CONFIDENCE, SlopeEstimate};
use serde::{Deserialize, Serialize};

/// The phase names searched, in order, for the phase measured at the comparison's load point
/// when none is named: the soak, then the single steady phase of runs without a ramp.
pub const COMPARED_PHASES: [&str; 2] = ["soak", "steady"];

/// The confidence of the soak's stored slope intervals (the plan uses the slope defaults).
pub const RSS_SLOPE_CONFIDENCE: f64 = DEFAULT_CONFIDENCE;

/// The capacity found by the ramp: the knee lies between the last offered load that held the SLO
/// and the first that broke it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KneeBracket {
    /// The highest session rate that held, per second; `None` when even the first step broke.
    pub last_held_sessions_per_sec: Option<f64>,
    /// The lowest session rate that broke, per second; `None` when every step held.
    pub first_broke_sessions_per_sec: Option<f64>,
    /// The session rate at which the generator itself reached its limit before anything broke:
    /// the knee is then a lower bound.
    #[serde(default)]
    pub generator_limit_sessions_per_sec: Option<f64>,
    /// Why the ramp's bracket cannot be trusted (a step the generator could not keep for a reason
    /// other than its limit), when it cannot.
    #[serde(default)]
    pub invalid: Option<String>,
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
    /// The production load the headroom is taken against, in sessions per second: the run's
    /// recorded headroom's, else the workload's rate at 100% as its ramp steps imply it (a step's
    /// session rate over its fraction), for results written before the headroom was recorded.
    pub production_sessions_per_sec: Option<f64>,
    /// The calibration figure (a fixed reference load's throughput on this machine), when measured.
    pub calibration: Option<f64>,
    /// How far the calibration moved during the run (`after / before − 1`), when both were measured.
    pub calibration_drift: Option<f64>,
}

impl RunFigures {
    /// Reads the figures of a typed run result.
    ///
    /// The compared phase is the one named `phase`, else the one the soak ran as, else the first
    /// of [`COMPARED_PHASES`] present, else the last phase. The knee bracket is the ramp's knee
    /// (last held) and its lowest break (first broke). The RSS slope is the soak's; the raw RSS
    /// series is the resource samples of the last `measured` seconds of the run when the compared
    /// phase is the run's last phase (samples carry no phase), and empty otherwise.
    pub fn from_result(result: &RunResult, phase: Option<&str>) -> Self {
        let phases = &result.phases;
        let named = |wanted: &str| phases.iter().position(|p| p.measurement.name == wanted);
        let index = match phase.or(result.soak.as_ref().map(|s| s.phase.as_str())) {
            Some(wanted) => named(wanted),
            None => COMPARED_PHASES
                .iter()
                .find_map(|c| named(c))
                .or_else(|| phases.len().checked_sub(1)),
        };
        let measurement = index.map(|i| phases[i].measurement.clone());
        let is_last = index.is_some_and(|i| i + 1 == phases.len());
        let mut rss: Vec<(f64, f64)> = result
            .resources
            .iter()
            .map(|s| (s.elapsed_s, s.rss_bytes as f64))
            .collect();
        match (&measurement, rss.last().copied()) {
            (Some(m), Some((end, _))) if is_last => {
                let from = end - m.measured.as_secs_f64();
                rss.retain(|(t, _)| *t >= from);
            }
            _ => rss.clear(),
        }
        let knee = result.ramp.as_ref().map(|ramp| KneeBracket {
            last_held_sessions_per_sec: ramp.knee_sessions_per_sec,
            first_broke_sessions_per_sec: ramp.lowest_break.as_ref().map(|b| b.sessions_per_sec),
            generator_limit_sessions_per_sec: ramp
                .generator_limit
                .as_ref()
                .map(|b| b.sessions_per_sec),
            invalid: (!ramp.valid).then(|| {
                ramp.sentence
                    .strip_prefix("invalid: ")
                    .unwrap_or(&ramp.sentence)
                    .to_owned()
            }),
        });
        let rss_slope = result
            .soak
            .as_ref()
            .and_then(|s| s.slopes.rss_bytes_per_sec);
        let calibration = result
            .calibration
            .as_ref()
            .map(|c| c.figure)
            .filter(|c| c.is_finite() && *c > 0.0);
        let calibration_drift = result
            .calibration
            .as_ref()
            .and_then(|c| c.drift)
            .filter(|d| d.is_finite());
        let production_sessions_per_sec = result
            .headroom
            .as_ref()
            .map(|h| h.production_sessions_per_sec)
            .or_else(|| {
                let ramp = result.ramp.as_ref()?;
                ramp.steps
                    .iter()
                    .find(|s| s.kind == crate::plan::StepKind::Step && s.fraction > 0.0)
                    .map(|s| s.sessions_per_sec / s.fraction)
            })
            .filter(|p| p.is_finite() && *p > 0.0);
        Self {
            commit: result.git.as_ref().map(|g| g.commit.clone()),
            phase: measurement,
            knee,
            rss,
            rss_slope,
            production_sessions_per_sec,
            calibration,
            calibration_drift,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::PhaseRecorder;
    use crate::result::{ReadError, result_from_value};
    use serde_json::Value;
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

    /// A real run's result in its JSON form, to change for a case.
    fn base() -> Value {
        serde_json::to_value(crate::result::testing::before()).unwrap()
    }

    #[test]
    fn the_soak_is_preferred_and_rss_is_cut_to_its_span() {
        let mut result = base();
        result["git"] = json!({"commit": "abc", "dirty": false});
        result["phases"] = json!([phase("ramp-1"), phase("soak")]);
        result["resources"] = (0..10)
            .map(|i| {
                json!({"elapsed_s": f64::from(i), "cpu_seconds": 0.0, "rss_bytes": 1000 * i,
                    "threads": 1, "fds": 1})
            })
            .collect();
        result["ramp"]["knee_sessions_per_sec"] = json!(40.0);
        result["ramp"]["lowest_break"] = json!({"phase": "ramp-150%", "sessions_per_sec": 50.0,
            "offered_rate_per_sec": 60.0, "reasons": []});
        result["soak"]["phase"] = json!("soak");
        result["soak"]["slopes"]["rss_bytes_per_sec"] =
            json!({"estimate": 1.0, "low": 0.5, "high": 1.5});
        result["calibration"]["figure"] = json!(1234.5);
        result["calibration"]["drift"] = json!(-0.02);
        let f = from_json(&result, None).unwrap();
        assert_eq!(f.phase.as_ref().unwrap().name, "soak");
        assert_eq!(f.commit.as_deref(), Some("abc"));
        // The soak measured 3 s and ended the run: samples from 6 s to 9 s.
        assert_eq!(f.rss.first(), Some(&(6.0, 6000.0)));
        assert_eq!(f.rss.len(), 4);
        assert_eq!(
            f.knee,
            Some(KneeBracket {
                last_held_sessions_per_sec: Some(40.0),
                first_broke_sessions_per_sec: Some(50.0),
                generator_limit_sessions_per_sec: None,
                invalid: None,
            })
        );
        assert_eq!(f.rss_slope.map(|s| s.high), Some(1.5));
        assert_eq!(f.calibration, Some(1234.5));
        assert_eq!(f.calibration_drift, Some(-0.02));
    }

    /// The figures of `result` read typed, as every reader of a stored result does.
    fn from_json(result: &Value, phase: Option<&str>) -> Result<RunFigures, ReadError> {
        Ok(RunFigures::from_result(&result_from_value(result)?, phase))
    }

    #[test]
    fn a_named_phase_that_is_not_last_has_no_rss_and_missing_parts_are_none() {
        let mut result = base();
        result["phases"] = json!([phase("steady"), phase("other")]);
        result["resources"] = json!([{"elapsed_s": 0.0, "cpu_seconds": 0.0, "rss_bytes": 1,
            "threads": 1, "fds": 1}]);
        for part in ["git", "ramp", "soak", "calibration"] {
            result[part] = Value::Null;
        }
        let f = from_json(&result, None).unwrap();
        assert_eq!(f.phase.as_ref().unwrap().name, "steady");
        assert!(f.rss.is_empty());
        assert_eq!((f.knee, f.calibration, f.commit), (None, None, None));
        assert_eq!(f.rss_slope, None);
        let none = from_json(&result, Some("soak")).unwrap();
        assert!(none.phase.is_none());
        result["phases"] = json!([{"name": "soak"}]);
        assert!(matches!(
            from_json(&result, None),
            Err(ReadError::Malformed { .. })
        ));
    }

    #[test]
    fn without_a_soak_or_a_steady_phase_the_last_phase_is_compared() {
        let mut result = crate::result::testing::before();
        result.soak = None;
        let f = RunFigures::from_result(&result, None);
        assert_eq!(f.phase.as_ref().map(|p| p.name.as_str()), Some("soak"));
        result.phases.pop();
        let f = RunFigures::from_result(&result, None);
        assert_eq!(f.phase.as_ref().map(|p| p.name.as_str()), Some("ramp-150%"));
    }
}
