//! Pure statistics: Wilson intervals and the exponential's goodness of fit, slopes (Theil–Sen with a moving-block bootstrap), bootstrap standard errors,
//! Holm's procedure, the normal and Student's t distributions, the median, change points, and the
//! paired comparison of interleaved base/head blocks (Hodges–Lehmann with the exact Wilcoxon
//! interval) with its sequential design.
//!
//! Nothing here knows a config, a phase or a verdict: every function is a pure function of its
//! inputs (bootstraps are seeded), so `compare/` and `plan/` call them and the tests can state
//! their laws. It sits beside the flow, used by the stages that estimate.

pub mod bootstrap;
pub mod change_point;
pub mod fit;
pub mod holm;
pub mod median;
pub mod paired;
pub mod sequential;
pub mod slope;
pub mod student;

pub use bootstrap::{
    autocorrelation_time, block_bootstrap_sd, block_len, derive_seed, quantile_log_se,
};
pub use change_point::{
    ChangeEstimate, ChangeIntervalOptions, ChangePoint, ChangePointOptions, change_point,
    change_points, describe_changes, first_segment_len,
};
pub use fit::{
    EXPONENTIAL_KS_CRITICAL_1PCT, ExponentialFit, Proportion, bonferroni_z, exponential_fit,
    sorted_quantile, wilson,
};
pub use holm::{HolmStep, holm, normal_cdf};
pub use median::{median, median_in_place};
pub use slope::{
    BootstrapOptions, DEFAULT_BOOTSTRAP_SEED, DEFAULT_CONFIDENCE, SlopeEstimate, normal_quantile,
    sen_interval, theil_sen, theil_sen_bootstrap, theil_sen_intercept,
};
pub use student::{t_cdf, t_quantile};
