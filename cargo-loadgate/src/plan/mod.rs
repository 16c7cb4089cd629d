//! The phases: the capacity ramp with bisection to the knee, the soak sample with its slopes, the
//! abort conditions that keep every phase inside a safety envelope, and the balanced order of a
//! paired run's base and head blocks (`pairing`).
//!
//! It sits between config and engine in the flow: [`run_plan`] decides which phase runs next at
//! which rate, a [`PhaseRunner`] from the shell runs it (the engine on its generator thread plus the
//! resource sampler), and the plan judges what came back against the SLO. The judging and the
//! records are pure; docs/phases.md describes the rules.

mod abort;
mod judge;
pub mod paired_run;
pub mod pairing;
mod ramp;
pub(crate) mod recovery;
mod run;
mod soak;
mod spike;
mod stress;

pub use abort::{ABORT_LIMITS, AbortWatch, CONSECUTIVE_BAD_WINDOWS, abort_watch};
pub use judge::{
    JudgementBasis, StepJudgement, first_step_failures, format_latency, format_rate, judge_step,
    quantile_label,
};
pub use ramp::{
    BreakPoint, RampOutcome, StepKind, StepOperation, StepRecord, StepStatus, sentence,
};
pub use recovery::{
    Admission, AdmissionFigures, GOODPUT_NOISE_SDS, Recovery, classify_admission, time_to_stable,
    window_check,
};
pub use run::{
    DEFAULT_GOODPUT_LATENCY, FIXED_PLAN_NO_BISECTION, FIXED_PLAN_NO_SOAK, MAX_EXTRA_DOWNWARD,
    OnWindow, PhaseRun, PhaseRunner, PlanError, PlanEvent, PlanOptions, PlanOutcome,
    comparable_schedule_hash, goodput_latency, run_plan,
};
pub use soak::{CapacitySource, Slopes, SoakOutcome, format_bytes_per_sec, soak_slopes};
pub use spike::{RecoveryCheck, RecoveryCheckOutcome, SpikeOutcome, spike_figures, spike_steps};
#[cfg(test)]
pub(crate) use stress::testing as stress_testing;
pub use stress::{
    ChangeOutcome, Harm, MIN_STRETCH_WINDOWS, StressChange, StressJudge, StressMetric,
    StressOutcome, StressPhase, StretchFigures, stress_figures, stress_steps,
};
