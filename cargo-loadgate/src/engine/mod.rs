//! The open-loop generator: connections, pacing, timing, checks and captures.
//!
//! [`run_phase`] drives one phase of a workload against a base URL on the calling thread and
//! returns a [`crate::measure::PhaseMeasurement`]; [`run_phase_on_loops`] drives it on several
//! loops, each a thread pinned to a core of its own, and merges what they measured. Requests go
//! out as bytes encoded once ([`WireRequest`]) on keep-alive HTTP/1.1 connections ([`Pool`],
//! answers parsed with `httparse`), paced by a timerfd-backed
//! [`PreciseTimer`]; latency is measured from each request's intended send time. The engine
//! measures; it never judges SLOs. It retries only when the config says so (`generator.retry`,
//! an operation's `retry`): a retry re-sends the same bytes as an attempt of the same logical
//! operation, and without a policy the hot path pays one branch per request for it.

mod affinity;
mod classify;
mod clock;
mod http1;
mod loops;
mod phase;
mod pool;
mod realtime;
mod sessions;
mod signal;
#[cfg(test)]
pub(crate) mod test_server;
mod timer;

pub use affinity::{
    Placement, TooManyThreads, allowed_cores, generator_core, pin_current_thread, pinned_core,
    place, resolve_threads, target_cores,
};
pub use clock::{Clock, monotonic_now};
pub use http1::WireRequest;
pub use loops::{Shard, run_phase_on_loops, share};
pub use phase::{
    EngineError, PhaseHooks, PhaseSpec, TargetAddr, WINDOW, WindowDecision, run_phase,
};
pub use pool::{Answer, Pool};
pub use realtime::{RT_CPU_LIMIT, RT_PRIORITY, RealtimeError, enter_realtime, is_realtime};
pub use signal::CancellationSignal;
pub use timer::{PreciseSleep, PreciseTimer};
