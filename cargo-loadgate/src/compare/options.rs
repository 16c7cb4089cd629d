//! How a comparison is made: [`CompareOptions`] and the documented constants behind it (the
//! family's α, the power of the smallest detectable change, the tolerances of the preconditions
//! and the least data a metric needs). Read by the estimates and the decisions.

use super::accept::Accept;
use super::noise::NoiseModel;
use crate::stats::bootstrap::DEFAULT_RESAMPLES;

/// The family-wise error rate of false regressions over the primary metrics.
pub const DEFAULT_ALPHA: f64 = 0.01;
/// The power at which the smallest detectable change is reported.
pub const DETECTION_POWER: f64 = 0.8;
/// The largest relative difference of the calibration figures before the machines are considered
/// not comparable. `STATISTICS.md` §9 says "a few percent"; measured on a quiet shared 2-core VM,
/// the figure moved by 5–14% between runs (and 6–11% within one) while the service's p50 and p99
/// under the same load stayed within ±3%, so 5% only hid regressions (docs/statistics.md).
pub const CALIBRATION_TOLERANCE: f64 = 0.20;
/// The largest relative difference of the compared phases' offered loads.
pub const LOAD_TOLERANCE: f64 = 0.01;
/// The fewest windows with answers a side needs for the window-based estimates.
pub const MIN_WINDOWS: usize = 5;
/// A quantile q needs n · min(q, 1 − q) of at least this on each side before it is compared.
pub const MIN_TAIL_REQUESTS: f64 = 5.0;
/// The fewest RSS samples a side needs for a slope.
pub const MIN_RSS_SAMPLES: usize = 10;

/// How the comparison is made; the defaults are the documented design.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareOptions {
    /// The family-wise α over the primary metrics.
    pub alpha: f64,
    /// The seed of every bootstrap.
    pub seed: u64,
    /// Bootstrap resamples per estimate.
    pub resamples: usize,
    /// See [`CALIBRATION_TOLERANCE`].
    pub calibration_tolerance: f64,
    /// See [`LOAD_TOLERANCE`].
    pub load_tolerance: f64,
    /// The run-to-run noise of a comparison with a stored baseline (`compare::noise_model`);
    /// `None` compares the two runs' own intervals only.
    pub noise: Option<NoiseModel>,
    /// The operations whose p50 and p99 are primary metrics (`gate = true` in
    /// `[[workload.operation]]`, [`crate::config::WorkloadConfig::gated_operations`]): they join
    /// Holm's family and decide the verdict; every other operation's latencies only warn.
    pub gated_operations: Vec<String>,
    /// The intended changes of the head's commits (`Loadgate-Accept` trailers and the config's
    /// `[[accept]]` entries, `compare::accept`): each replaces the threshold of the metrics it
    /// covers with its amount.
    pub accepts: Vec<Accept>,
}

impl Default for CompareOptions {
    fn default() -> Self {
        Self {
            alpha: DEFAULT_ALPHA,
            seed: crate::stats::DEFAULT_BOOTSTRAP_SEED,
            resamples: DEFAULT_RESAMPLES,
            calibration_tolerance: CALIBRATION_TOLERANCE,
            load_tolerance: LOAD_TOLERANCE,
            noise: None,
            gated_operations: Vec::new(),
            accepts: Vec::new(),
        }
    }
}
