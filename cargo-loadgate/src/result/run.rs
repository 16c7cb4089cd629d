//! The run result: what one `cargo loadgate run` measured, as a versioned JSON document.
//!
//! It is written to the out-dir after every phase (atomically), so an interrupted run keeps what it
//! measured. Its schema is checked in at `docs/schema/run-result-v1.json` and validated in tests.

use super::MeasurementMode;
use super::{Comparison, Verdict};
use crate::config::SloConfig;
use crate::measure::PhaseMeasurement;
use crate::plan::{RampOutcome, SoakOutcome, quantile_label};
use crate::targets::{ResourceSample, TargetExit, TargetInfo};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The version of the result format. Readers refuse versions newer than the one they know.
pub const RESULT_FORMAT_VERSION: u32 = 1;

/// What one run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// [`RESULT_FORMAT_VERSION`] when written.
    pub format_version: u32,
    /// The tool that wrote it.
    pub tool: ToolInfo,
    /// When the run started, in milliseconds since the Unix epoch.
    pub started_at_unix_ms: u64,
    /// How far the run got.
    pub status: RunStatus,
    /// The commit the service was built from, when it is in a git repository.
    pub git: Option<GitInfo>,
    /// The applied profile.
    pub profile: String,
    /// The config file that was read.
    pub config_path: PathBuf,
    /// The resolved `[slo]` the steps were judged against, so readers (the charts) need not guess
    /// it. `None` only for a result read back from one written before it was recorded.
    #[serde(default)]
    pub slo: Option<SloSummary>,
    /// sha256 of what in the resolved configuration changes the measurement (see
    /// [`config_hash`](super::config_hash)): runs with the same hash drove the same workload
    /// against the same target, SLO and limits. Results written before `[gate]` was left out hash
    /// the whole configuration ([`legacy_config_hash`](super::legacy_config_hash)).
    pub config_hash: String,
    /// Where the run happened.
    pub environment: Environment,
    /// The target as booted.
    pub target: Option<TargetInfo>,
    /// The replicas beyond the first (which is `target`), in order, when `[target] replicas` is
    /// above one; empty (and absent from the JSON) otherwise. Each phase's `replicas` has the
    /// figures of all of them, the first included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<TargetInfo>,
    /// How the target ended, once it has.
    pub target_exit: Option<TargetExit>,
    /// The capacity ramp: its steps so far while running, then its knee and sentence.
    #[serde(default)]
    pub ramp: Option<RampOutcome>,
    /// The headroom: the capacity the ramp found against the production load (the workload's
    /// rate at 100%), with the `[slo] headroom` check's outcome. `None` before the ramp ended
    /// (and in results written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headroom: Option<super::HeadroomSummary>,
    /// The soak sample with its slopes, once it ran.
    #[serde(default)]
    pub soak: Option<SoakOutcome>,
    /// Why the soak did not run, when it did not.
    #[serde(default)]
    pub soak_skipped: Option<String>,
    /// The spike phase: its admission behaviour and the time to stable SLO after it. Absent when
    /// no spike was declared (and in results written before spikes existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spike: Option<crate::plan::SpikeOutcome>,
    /// Why a declared spike did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spike_skipped: Option<String>,
    /// The stress phase: the overload, the comparison of the stretches before and after it on the
    /// same boot ("recovered" or "lasting harm"), and the time to stable SLO. Absent when no
    /// stress was declared (and in results written before it existed). Lasting harm makes the
    /// verdict a regression (`compare::settle_stress`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stress: Option<crate::plan::StressOutcome>,
    /// Why a declared stress did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stress_skipped: Option<String>,
    /// Whether every phase kept its schedule; `None` until the run is over.
    #[serde(default)]
    pub valid: Option<bool>,
    /// The stored run this one was compared with, when one matched.
    #[serde(default)]
    pub baseline: Option<BaselineRef>,
    /// The comparison with the baseline, metric by metric.
    #[serde(default)]
    pub comparison: Option<Comparison>,
    /// The decision: pass, regression, inconclusive or no baseline, with the rule that fired.
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// Every phase run so far, in order, with its full measurement.
    pub phases: Vec<PhaseRecord>,
    /// The target's resources, sampled once a second over the whole run.
    pub resources: Vec<ResourceSample>,
    /// The calibration figure measured before and after the phases; `None` when it could not be.
    #[serde(default)]
    pub calibration: Option<crate::calibrate::Calibration>,
    /// How head and base were compared: `stored` (the head alone, against a stored baseline) or
    /// `paired` (both side by side in this job). Results written before paired mode are `stored`.
    #[serde(default)]
    pub mode: MeasurementMode,
    /// A paired run's base, blocks and pairs; absent in a stored run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<super::paired::PairedRecord>,
    /// The shard of a sharded run this result holds (`run --shard i/N`), or the shards it merges
    /// (`cargo loadgate merge`); absent in a run of the whole schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<super::shard::ShardRecord>,
    /// The `[[dependency]]` companions booted (or, for `url`, used) beside the target, in boot
    /// order; absent when the config has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<crate::targets::DependencyInfo>,
    /// `[data]` as it ran: the tier, the seed and each step with the digest of its output;
    /// absent when the profile loads no data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<crate::targets::DataRecord>,
    /// The post-run audits (`[[audit]]`), in the order written; absent when the config has
    /// none (and in results written before audits existed). A failed audit, or one that could
    /// not run, makes the verdict a regression (`compare::settle_audits`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audits: Vec<super::AuditOutcome>,
    /// The `[[probe]]` series sampled of the dependencies once a second, on the clock of
    /// `resources`; a probe that could not connect is `missing`, with why. Absent without probes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<crate::measure::probe::ProbeRecord>,
    /// The probes' `limits`, judged (`compare::probe_checks`): each is a gate check with its own
    /// JUnit case. Absent without limits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe_checks: Vec<super::ProbeCheck>,
    /// What each `[[stub]]` served: its delays (the dependency's latency as the service met it),
    /// errors, timeouts, per route, per second and per state of its faults. Absent without stubs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stubs: Vec<crate::stub::StubRecord>,
    /// What each `[[fault]]` did: when it was applied and removed, what its stub served under it
    /// and after it, whether that verifies it, and the time to stable SLO after its removal.
    /// Absent without faults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<crate::stub::fault::FaultRecord>,
}

/// The resolved `[slo]` of a run, as the result records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SloSummary {
    /// The latency limits, measured from the intended send time. `[slo]` holds every operation
    /// class to the same limits.
    pub latency: Vec<SloLatencyLimit>,
    /// The highest acceptable share of requests without a correct answer, per class.
    pub error_rate: f64,
    /// A class needs at least this many requests in a step to be judged on its own; with fewer in
    /// every class the step is judged pooled, with fewer in all together not at all.
    pub min_requests: u64,
    /// The `[slo] recovery` limit, in milliseconds, when set: a run whose spike or stress did not
    /// run cannot pass on it (`compare::settle_recovery`). Absent in results written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_limit_ms: Option<f64>,
}

/// One latency limit of the SLO.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SloLatencyLimit {
    /// The quantile, in (0, 1), e.g. 0.99.
    pub quantile: f64,
    /// The quantile as people write it: `p99`, `p99.9`.
    pub label: String,
    /// The limit, in milliseconds.
    pub limit_ms: f64,
}

impl SloSummary {
    /// The record of `slo`.
    pub fn of(slo: &SloConfig) -> Self {
        Self {
            latency: slo
                .latency
                .iter()
                .map(|l| SloLatencyLimit {
                    quantile: l.quantile,
                    label: quantile_label(l.quantile),
                    limit_ms: l.limit.as_secs_f64() * 1e3,
                })
                .collect(),
            error_rate: slo.error_rate,
            min_requests: slo.min_requests,
            recovery_limit_ms: slo.recovery.map(|d| d.as_secs_f64() * 1e3),
        }
    }
}

/// The baseline a run was compared with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineRef {
    /// The commit whose stored result is the baseline.
    pub commit: String,
    /// First-parent steps from the merge-base to it.
    pub distance: usize,
    /// Where it was found.
    pub store: String,
}

/// One phase of the run with the hash of the schedule it followed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseRecord {
    /// sha256 of the phase's seeded schedule: equal hashes mean the same offered load.
    pub schedule_hash: String,
    /// What the phase measured.
    #[serde(flatten)]
    pub measurement: PhaseMeasurement,
}

/// How far a run got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Still running: this file was written after a phase, and more were to come.
    Running,
    /// Every phase ran.
    Complete,
    /// The target failed during the run; the phases measured before are kept.
    TargetFailed,
}

impl RunStatus {
    /// The status as the result writes it: `running`, `complete`, `target-failed`.
    pub fn label(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::TargetFailed => "target-failed",
        }
    }
}

/// The tool that wrote a result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// `cargo-loadgate`.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl ToolInfo {
    /// This build of the tool.
    pub fn current() -> Self {
        Self {
            name: env!("CARGO_PKG_NAME").to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// The commit a run measured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitInfo {
    /// The full commit id of HEAD.
    pub commit: String,
    /// Whether the work tree had uncommitted changes.
    pub dirty: bool,
}

impl GitInfo {
    /// Reads HEAD and the dirty flag of the repository containing `dir`; `None` outside a repository.
    pub fn of(dir: &Path) -> Option<Self> {
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(dir)
                .stderr(std::process::Stdio::null())
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        };
        let commit = git(&["rev-parse", "--verify", "HEAD"])?;
        let dirty =
            git(&["status", "--porcelain", "--untracked-files=no"]).is_none_or(|s| !s.is_empty());
        Some(Self { commit, dirty })
    }
}

/// Where a run happened: what makes numbers from two runs comparable or not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// The CPU model (`model name` of /proc/cpuinfo).
    pub cpu_model: String,
    /// Cores available to this process.
    pub cores: usize,
    /// The kernel release.
    pub kernel: String,
    /// The Docker engine's version, for a container target.
    pub engine_version: Option<String>,
    /// The core the generator was pinned to.
    pub generator_core: Option<usize>,
    /// The cores the target was pinned to.
    pub target_cpuset: Option<String>,
}

impl Environment {
    /// Reads the machine's figures.
    pub fn detect(
        engine_version: Option<String>,
        generator_core: Option<usize>,
        target_cpuset: Option<String>,
    ) -> Self {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".to_owned());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".to_owned());
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            cpu_model,
            cores,
            kernel,
            engine_version,
            generator_core,
            target_cpuset,
        }
    }
}

/// Milliseconds since the Unix epoch, now (0 if the clock is before it).
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slo_is_recorded_with_labels_and_milliseconds() {
        let slo = SloConfig {
            latency: vec![
                crate::config::LatencyLimit {
                    quantile: 0.5,
                    limit: std::time::Duration::from_millis(50),
                },
                crate::config::LatencyLimit {
                    quantile: 0.999,
                    limit: std::time::Duration::from_micros(1_500),
                },
            ],
            error_rate: 0.01,
            min_requests: 100,
            headroom: None,
            recovery: None,
        };
        let value = serde_json::to_value(SloSummary::of(&slo)).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "latency": [
                    {"quantile": 0.5, "label": "p50", "limit_ms": 50.0},
                    {"quantile": 0.999, "label": "p99.9", "limit_ms": 1.5},
                ],
                "error_rate": 0.01,
                "min_requests": 100,
            })
        );
    }

    #[test]
    fn status_labels_are_the_written_names() {
        for status in [
            RunStatus::Running,
            RunStatus::Complete,
            RunStatus::TargetFailed,
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), status.label());
        }
    }

    #[test]
    fn git_info_is_none_outside_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(GitInfo::of(dir.path()), None);
    }
}
