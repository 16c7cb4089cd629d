//! Baselines: the result format, the stores (git notes, a directory) and the git lookup.
//!
//! This release has the result format; the stores and the lookup come with the comparison.

mod result;

pub use result::{
    Environment, GitInfo, PhaseRecord, RESULT_FORMAT_VERSION, RunResult, RunStatus, ToolInfo,
    config_hash, hex_sha256, write_json_atomic,
};
