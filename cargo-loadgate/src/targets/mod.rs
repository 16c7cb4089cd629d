//! Targets: boot, readiness, resource and probe sampling, logs and teardown for `container`, `process` and `url`,
//! the `[[dependency]]` companions booted before them ([`boot_dependencies`]), and the base side of
//! a paired run ([`base`]: its worktree and its build).
//!
//! [`boot`] builds what is needed (through [`crate::image`]), starts the target, and waits for its
//! readiness check; the [`RunningTarget`] it returns gives the base URL, a [`ResourceSampler`], the
//! output's tail and [`RunningTarget::shutdown`]. Everything started is registered in
//! [`cleanup`] so that SIGINT, SIGTERM, a panic or a dropped handle still tear it down.

pub mod base;
mod boot;
pub mod cleanup;
mod container;
pub mod data;
mod dependency;
pub(crate) mod docker;
mod error;
mod event;
mod network;
mod probe;
mod process;
pub mod replicas;
pub(crate) mod ring;
mod sample;
mod sweep;
mod url;

#[cfg(test)]
pub(crate) use base::examples as base_error_examples;
pub use base::{
    BaseBuild, BaseError, BaseErrorKind, BaseWorktree, ResolvedBase, build_base, resolve_base,
};
pub use boot::{
    BootRequest, InstanceState, RunningTarget, TargetExit, TargetInfo, boot, innermost,
};
pub use cleanup::{StopSignal, install_cleanup_handlers};
pub use data::{DataContext, DataRecord, DataStepRecord};
pub use dependency::{
    DEPENDENCY_SHUTDOWN_GRACE, DependencyImage, DependencyInfo, RunningDependencies,
    boot_dependencies, resolve_kind,
};
pub use docker::{DockerInfo, detect_docker};
#[cfg(test)]
pub(crate) use error::examples as error_examples;
pub use error::{DataStepFailure, ERROR_LOG_LINES, TargetError, TargetErrorKind};
pub use event::BootEvent;
pub use network::{NetworkInfo, NetworkPath};
pub use probe::{PROBE_CONNECT_TIMEOUT, PostgresProbe, ProbeSampler};
pub use process::{free_loopback_port, parse_cpuset};
pub use replicas::{EndingReplicaFault, ReplicaFaultTimes, ReplicaSet, ScheduledReplicaFault};
pub use ring::{LogRing, OutputStream};
pub use sample::{
    ProcStat, ResourceSample, ResourceSampler, SampleSource, clock_ticks_per_sec, parse_proc_stat,
    parse_proc_status, procfs_readable, read_proc_sample,
};
pub use sweep::{SweepReport, SweepScope, SweptContainer, SweptImage, sweep};
pub use url::{check_target_url, is_loopback_host};
