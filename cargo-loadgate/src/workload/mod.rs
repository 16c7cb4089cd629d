//! The user model (a state machine of operations) and the seeded arrival schedule. Pure, no I/O.
//!
//! It sits between config and the engine: [`Schedule`] says which session arrives when and what
//! its user does; [`CompiledWorkload`] turns a step into a request; [`Response`] judges the answer
//! and captures session variables; [`analyze`] and [`validate_mix`] describe the model for
//! `cargo loadgate check`.

mod check;
mod model;
mod pointer;
mod schedule;
mod shard;
mod template;

pub use check::{
    CaptureError, CaptureErrorKind, EXCERPT_CHARS, Response, WrongAnswer, WrongAnswerKind, capture,
    check,
};
pub(crate) use model::mean_think;
pub use model::{
    MIX_CONFIDENCE, MeanCheck, MixMoments, MixValidation, ModelAnalysis, ModelError, OperationMix,
    OperationShare, analyze, render_check, validate_mix, validate_mix_against,
};
pub use pointer::PointerSet;
pub use schedule::{
    MAX_SESSION_STEPS, PlannedStep, RateStep, RateSteps, RateStepsError, Schedule, SessionPath,
    SessionPlan, Sessions,
};
pub use shard::{Shard, ShardParseError};
pub use template::{
    CompileError, CompiledOperation, CompiledWorkload, RenderError, RenderedRequest, SessionVars,
};
