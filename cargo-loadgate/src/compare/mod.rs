//! Statistics and the verdict: comparing a run with its baseline.
//!
//! For now it holds the slope estimators the soak uses ([`slope`]): Theil–Sen with a
//! moving-block bootstrap interval, and Sen's classic interval for comparison.

pub mod bootstrap;
mod figures;
pub mod holm;
pub mod slope;
mod verdict;

pub use figures::{COMPARED_PHASES, FiguresError, KneeBracket, RSS_SLOPE_CONFIDENCE, RunFigures};
pub use verdict::{
    CALIBRATION_TOLERANCE, CompareOptions, Comparison, DEFAULT_ALPHA, DETECTION_POWER,
    LOAD_TOLERANCE, MIN_RSS_SAMPLES, MIN_TAIL_REQUESTS, MIN_WINDOWS, Metric, MetricComparison,
    Outcome, Scale, Verdict, VerdictOutcome, compare, compare_with, format_change,
    format_threshold, metric_name,
};

pub use slope::{
    BootstrapOptions, SlopeEstimate, normal_quantile, sen_interval, theil_sen, theil_sen_bootstrap,
};
