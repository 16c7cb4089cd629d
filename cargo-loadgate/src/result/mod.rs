//! The run document: [`RunResult`] and its parts as written to `result.json` and stored as a
//! baseline, the one typed reader, the one atomic writer, and the hashes that decide which runs
//! are comparable.
//!
//! It sits after `measure` and `plan` in the flow (it holds what they produced) and before
//! `compare` and `report` (they read it). Its schema is checked in at
//! `docs/schema/run-result-v1.json`.

mod audit;
mod comparison;
mod hash;
mod headroom;
mod history;
mod paired;
mod read;
mod run;
mod shard;
mod write;

pub use audit::{AuditCheckOutcome, AuditOutcome, AuditStatus, retry_statements, run_tallies};
pub use comparison::{
    AcceptedChange, Comparison, LeakFinding, Metric, MetricComparison, MetricNoise, MetricOutcome,
    NoiseSource, NoiseSummary, ProbeCheck, Scale, SkippedAncestors, Verdict, VerdictOutcome,
    leak_statement,
};
pub use hash::{ConfigHashes, MeasurementMode, config_hash, hex, hex_sha256, legacy_config_hash};
pub use headroom::{HeadroomBound, HeadroomComparison, HeadroomOutcome, HeadroomSummary};
pub use history::{
    BreakReason, HISTORY_FORMAT_VERSION, HistoryChange, HistoryCommit, HistoryPoint, HistoryResult,
    MetricHistory, SeriesBreak, SeriesKey,
};
pub use paired::{
    BaseSource, BlockFigures, BlockRecord, PairRecord, PairedBase, PairedDesign, PairedRecord,
    pair_records,
};
pub use read::{ReadError, read_result, result_from_str, result_from_value};
pub use run::{
    BaselineRef, Environment, GitInfo, PhaseRecord, RESULT_FORMAT_VERSION, RunResult, RunStatus,
    SloLatencyLimit, SloSummary, ToolInfo, unix_ms,
};
pub use shard::{
    MergedRun, MergedShard, MergedShards, ShardPhase, ShardProblem, ShardRecord, ShardRun,
    merge_phase, merge_shards,
};
pub use write::{WRITTEN_FILE_MODE, write_file_atomic, write_json_atomic};

#[cfg(test)]
pub(crate) use read::testing;
