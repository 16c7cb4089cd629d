//! Measurement: histograms, counters, windowed series, resource samples and probe samples.
//!
//! The engine feeds a [`PhaseRecorder`] with timed events; what comes out is a
//! [`PhaseMeasurement`]: per-operation HdrHistograms (latency from the intended send time and
//! service time from the actual send), counters, the pacing lag, a 1 s series and the generator's
//! CPU time. Nothing is kept per request, so memory stays flat in the length of a run.

mod counters;
mod cpu;
pub mod exposition;
mod histogram;
mod phase;
pub mod probe;
mod replica;
mod window;

pub use counters::{
    OperationCounters, OperationTally, Outcome, PhaseCounters, TransportErrorKind, TransportErrors,
    WRONG_ANSWER_EXAMPLES,
};
pub use cpu::{CpuScope, cpu_time};
pub use histogram::{HistogramDecodeError, LatencyHistogram, to_micros};
pub use phase::option_millis;
pub use phase::{
    DropCause, FinishInfo, GENERATOR_SATURATED, GeneratorHealth, InvalidReason, LagCause,
    LoopMeasurement, OperationMeasurement, OperationSummary, PhaseMeasurement, PhaseMerge,
    PhaseRecorder, PhaseSummary, Progress, Validity, ValidityInput, ValidityLimits,
};
pub use replica::{ReplicaCounts, merge_replicas};
pub use window::{Window, WindowHistograms, WindowMerger, WindowSeries, millis};
