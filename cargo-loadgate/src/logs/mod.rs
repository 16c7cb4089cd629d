//! Access logs to the user model and the production load (seed 000, issue 17).
//!
//! It sits before config in the flow: `cargo loadgate model` reads production logs and writes the
//! `[workload]` a config starts from; `cargo loadgate load` gives its `sessions-per-sec`. The
//! parts are pure cores with one shell: [`parse`] reads a line, [`routes`] names its operation,
//! [`sessions`] forms sessions, [`estimate`] estimates and validates the model, [`load`] computes
//! the production load, and [`reader`] with [`pipeline`] stream the files through them.

pub mod error;
pub mod estimate;
pub mod load;
pub mod parse;
pub mod pipeline;
pub mod reader;
pub mod routes;
pub mod sessions;

pub use error::{BadSample, LogError, LogErrorKind};
pub use estimate::{
    ConfigComparison, LogValidation, MODEL_CONFIDENCE, ModelEstimate, SuggestedThink,
};
pub use load::{IntervalLoad, LoadOptions, LoadReport, production_load, read_load, z_for};
pub use parse::{JsonFields, LogFormat};
pub use pipeline::{
    DEFAULT_SESSION_GAP, LOGS_FORMAT_VERSION, ModelReport, ScanOptions, read_model,
};
pub use reader::{MAX_BAD_SHARE, ScanSummary};
pub use routes::{Route, routes_from_workload};
pub use sessions::SessionKey;
