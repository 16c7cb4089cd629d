//! The comparison of a run with its baseline and the verdict: the figures read from a typed
//! [`crate::result::RunResult`], and every judging rule. The types it fills in are the document's
//! ([`crate::result::Comparison`]); the statistics it uses are in [`crate::stats`].

mod figures;
mod verdict;

pub use figures::{COMPARED_PHASES, FiguresError, KneeBracket, RSS_SLOPE_CONFIDENCE, RunFigures};
pub use verdict::{
    CALIBRATION_TOLERANCE, CompareOptions, DEFAULT_ALPHA, DETECTION_POWER, LOAD_TOLERANCE,
    MIN_RSS_SAMPLES, MIN_TAIL_REQUESTS, MIN_WINDOWS, compare, compare_with, format_change,
    format_threshold, metric_name,
};
