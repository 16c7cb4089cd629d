//! The comparison of a run with its baseline and the verdict: the figures read from a typed
//! [`crate::result::RunResult`], and every judging rule. The types it fills in are the document's
//! ([`crate::result::Comparison`]); the statistics it uses are in [`crate::stats`].
//!
//! `options.rs` holds how a comparison is made, `estimate.rs` the per-metric drafts, `decide.rs`
//! Holm, the widening for the machine and the verdict, `format.rs` the figures for people, `leak.rs` the
//! one leak rule, `noise.rs` the run-to-run noise of a comparison with a stored baseline,
//! `accept.rs` the intended changes (`Loadgate-Accept`) that replace a metric's threshold,
//! `headroom.rs` the headroom against the production load and the `[slo] headroom` rule,
//! `recovery.rs`, `audit.rs` and `probe.rs` the other absolute checks, and `settle.rs` the one
//! place all four are applied to a verdict.
//! `history.rs` the figures and change points of a metric over commits (`cargo loadgate history`).

mod accept;
mod audit;
mod decide;
mod estimate;
mod figures;
mod format;
mod headroom;
mod history;
mod leak;
mod noise;
mod options;
mod paired;
mod probe;
mod recovery;
mod settle;
mod stress;
#[cfg(test)]
mod testkit;

pub use accept::{
    ACCEPT_TRAILER, Accept, AcceptScope, REASON_TRAILER, accepted_phrase, check_operation,
    format_amount, parse_accept, parse_change, parse_metric,
};
pub use audit::{AuditAnswer, count_value, judge_audit, settle_audits};
pub use decide::{compare, compare_results, compare_with};
pub use figures::{COMPARED_PHASES, KneeBracket, RSS_SLOPE_CONFIDENCE, RunFigures};
pub use format::{
    change_phrase, format_change, format_threshold, metric_label, metric_name, threshold_phrase,
};
pub use headroom::{ProductionLoad, headroom, settle_headroom};
pub use history::{
    CommitInput, HISTORY_METRICS, HistoryRequest, UnknownOperation, WalkHeader, history,
    parse_history_metric,
};
pub use leak::{head_leak, leak_finding, record_leak};
pub use noise::{
    DEFAULT_RUN_NOISE, DefaultNoise, MIN_NOISE_RUNS, NoiseModel, NoiseRuns, Reachable,
    detectable_change, noise_model,
};
pub use options::{
    CALIBRATION_TOLERANCE, CompareOptions, DEFAULT_ALPHA, DETECTION_POWER, LOAD_TOLERANCE,
    MIN_RSS_SAMPLES, MIN_TAIL_REQUESTS, MIN_WINDOWS,
};
pub use paired::{PairedInputs, compare_paired};
pub use probe::{probe_checks, settle_probe_checks};
pub use recovery::{fault_recovery_check, recovery_check, settle_recovery, stress_recovery_check};
pub use settle::settle_checks;
pub use stress::settle_stress;
