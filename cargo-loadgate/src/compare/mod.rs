//! Statistics and the verdict: comparing a run with its baseline.
//!
//! For now it holds the slope estimators the soak uses ([`slope`]): Theil–Sen with a
//! moving-block bootstrap interval, and Sen's classic interval for comparison.

pub mod slope;

pub use slope::{
    BootstrapOptions, SlopeEstimate, normal_quantile, sen_interval, theil_sen, theil_sen_bootstrap,
};
