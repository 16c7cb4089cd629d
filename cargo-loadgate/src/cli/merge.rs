//! `cargo loadgate merge`: reads the results of the shards of one run (`run --shard i/N`),
//! checks that they are every shard exactly once, of one configuration, commit and schedule,
//! started together, and merges them exactly (`result::merge_shards`); then replays the fixed
//! plan the shards ran on the merged phases, so the ramp, the soak and the verdict come from the
//! same code as `run`'s, and writes the same documents with the same exit codes.

use super::MergeOpts;
use super::gate::{self, GateOptions};
use super::run::{
    Outputs, RunError, announce_baseline, decide_and_report, exit_code, exit_code_of, load_config,
    out_dir, output_path, record_plan_event, write_result,
};
use crate::config::LoadgateConfig;
use crate::engine::PhaseSpec;
use crate::measure::{PhaseMeasurement, ValidityLimits};
use crate::plan::{
    CapacitySource, OnWindow, PhaseRun, PhaseRunner, PlanError, PlanOptions, PlanOutcome,
    goodput_latency, run_plan,
};
use crate::result::{
    ConfigHashes, MeasurementMode, MergedRun, RunResult, RunStatus, ShardRecord, ToolInfo,
    merge_shards, read_result,
};
use crate::targets::ResourceSample;
use crate::workload::Schedule;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Runs `cargo loadgate merge` and returns the exit code.
pub fn run(opts: &MergeOpts) -> i32 {
    super::block_on_current_thread(async { exit_code(merge(opts).await) })
}

async fn merge(opts: &MergeOpts) -> Result<i32, RunError> {
    let (cwd, config) = load_config(&opts.config)?;
    let mut problems: Vec<String> = Vec::new();
    let mut shards: Vec<(PathBuf, RunResult)> = Vec::new();
    for path in &opts.results {
        match read_result(&cwd.join(path)) {
            Ok(result) => shards.push((path.clone(), result)),
            Err(e) => problems.push(e.to_string()),
        }
    }
    let hash = ConfigHashes::of(&config, MeasurementMode::Stored).current;
    for (path, result) in &shards {
        if result.config_hash != hash {
            problems.push(format!(
                "{} has config hash {}, but the configuration given to merge ({}) hashes to {}",
                path.display(),
                result.config_hash.get(..12).unwrap_or(&result.config_hash),
                config.source.path.display(),
                hash.get(..12).unwrap_or(&hash)
            ));
        }
    }
    let limits = ValidityLimits {
        max_lag: config.generator.max_lag,
        max_drop_rate: config.generator.max_drop_rate,
        slo_latency: goodput_latency(&config.slo),
    };
    let merged = match merge_shards(&shards, opts.max_skew, &limits) {
        Ok(merged) => Some(merged),
        Err(found) => {
            problems.extend(found.iter().map(ToString::to_string));
            None
        }
    };
    let merged = match merged {
        Some(merged) if problems.is_empty() => merged,
        _ => return Err(usage_problems(&problems)),
    };
    let owner = shards
        .iter()
        .map(|(_, r)| r)
        .find(|r| matches!(&r.shards, Some(ShardRecord::Shard(s)) if s.index == merged.owner))
        .cloned()
        .ok_or_else(|| usage_problems(&["no shard owns the target".to_owned()]))?;
    eprintln!(
        "      Merged {} shards (start skew {:.1} ms, resources from shard {})",
        merged.record.count, merged.record.skew_ms, merged.record.resources_from
    );

    let out_dir = out_dir(opts.out_dir.as_deref(), &config, &cwd, Some("merged"));
    std::fs::create_dir_all(&out_dir).map_err(|source| RunError::Write {
        path: out_dir.clone(),
        source,
    })?;
    let result_path = out_dir.join("result.json");
    let (mut result, outcome) = replay(&config, &owner, merged).await?;
    write_result(&result_path, &result)?;

    let git_dir = config
        .source
        .package
        .as_ref()
        .map(|p| p.workspace_root.clone())
        .unwrap_or_else(|| cwd.clone());
    let gate_options = GateOptions {
        store: opts.baseline_store.clone(),
        base_ref: opts.base_ref.clone(),
        allow_dirty: false,
        require_baseline: opts.require_baseline,
    };
    let baseline = gate::find_for_result(
        &result,
        &git_dir,
        &gate_options,
        &config,
        ConfigHashes::of(&config, MeasurementMode::Stored),
    )?;
    result.baseline = announce_baseline(&baseline);
    let outputs = Outputs {
        out_dir: &out_dir,
        result_path: &result_path,
        junit: output_path(opts.junit.as_deref(), "junit.xml", &cwd, &out_dir),
        markdown: output_path(opts.markdown.as_deref(), "summary.md", &cwd, &out_dir),
    };
    let verdict = decide_and_report(&mut result, &outcome, &baseline, &config, &outputs)?;
    Ok(exit_code_of(
        &result,
        &outcome.ramp,
        verdict.outcome,
        opts.fail_on_inconclusive,
        opts.require_baseline,
    ))
}

/// Every problem found, as one usage error (exit 2).
fn usage_problems(problems: &[String]) -> RunError {
    let mut message = format!(
        "the shards cannot be merged ({} problem{}):",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    for problem in problems {
        message.push_str(&format!("\n  - {problem}"));
    }
    message.push_str(
        "\nhint: give every shard's result.json of one run (`run --shard i/N` with the same config, commit and --start-at), each once",
    );
    RunError::Usage { message }
}

/// The merged result: the owner's document (target, environment, calibration, resource samples)
/// with the merged phases, the ramp, the soak and validity as the shards' fixed plan concludes
/// them from the merged phases.
async fn replay(
    config: &LoadgateConfig,
    owner: &RunResult,
    merged: MergedRun,
) -> Result<(RunResult, PlanOutcome), RunError> {
    // The soak ran at the baseline's knee the shards found (a fixed plan soaks at nothing else).
    let baseline_knee = owner
        .soak
        .as_ref()
        .filter(|s| s.capacity_from == CapacitySource::Baseline)
        .map(|s| s.capacity_sessions_per_sec);
    let mut replay = Replay {
        phases: merged
            .phases
            .into_iter()
            .map(|p| (p.measurement.name.clone(), (p.schedule_hash, p.measurement)))
            .collect(),
        resources: merged.phase_resources,
    };
    let mut result = RunResult {
        tool: ToolInfo::current(),
        status: RunStatus::Running,
        ramp: None,
        soak: None,
        soak_skipped: None,
        spike: None,
        spike_skipped: None,
        stress: None,
        stress_skipped: None,
        valid: None,
        baseline: None,
        comparison: None,
        verdict: None,
        phases: Vec::new(),
        shards: Some(ShardRecord::Merged(merged.record)),
        audits: Vec::new(),
        ..owner.clone()
    };
    let options = PlanOptions {
        keep_going: true,
        baseline_knee_sessions_per_sec: baseline_knee,
        skip_soak: None,
        fixed: true,
    };
    let planned = {
        let mut observe =
            |event| record_plan_event(&mut result, event, &config.gate, config.slo.recovery);
        run_plan(config, &mut replay, &options, &mut observe).await
    };
    let outcome = match planned {
        Ok(outcome) => outcome,
        Err(PlanError::Model(e)) => {
            return Err(RunError::Usage {
                message: format!("the workload model is unusable: {e}"),
            });
        }
        Err(PlanError::Phase { source, .. }) => {
            return Err(usage_problems(&[source.to_string()]));
        }
    };
    result.valid = Some(outcome.valid);
    Ok((result, outcome))
}

/// The shards' merged phases, handed to the plan as if it ran them.
struct Replay {
    /// By phase name: the whole schedule's hash and the merged measurement.
    phases: BTreeMap<String, (String, PhaseMeasurement)>,
    resources: BTreeMap<String, Vec<ResourceSample>>,
}

/// A phase the plan asks for that the shards did not run as planned.
#[derive(Debug, thiserror::Error)]
enum ReplayError {
    /// The shards have no such phase.
    #[error("the configuration's plan runs phase `{phase}`, which the shards did not run")]
    Missing { phase: String },
    /// The shards ran it on another schedule.
    #[error(
        "phase `{phase}` of the configuration has schedule {planned}, but the shards ran {ran}"
    )]
    Schedule {
        phase: String,
        planned: String,
        ran: String,
    },
}

impl PhaseRunner for Replay {
    type Error = ReplayError;

    async fn run(
        &mut self,
        spec: PhaseSpec,
        schedule: Schedule,
        _on_window: OnWindow,
    ) -> Result<PhaseRun, ReplayError> {
        let Some((hash, measurement)) = self.phases.remove(&spec.name) else {
            return Err(ReplayError::Missing { phase: spec.name });
        };
        let planned = schedule.hash();
        if planned != hash {
            return Err(ReplayError::Schedule {
                phase: spec.name,
                planned: planned.get(..12).unwrap_or(&planned).to_owned(),
                ran: hash.get(..12).unwrap_or(&hash).to_owned(),
            });
        }
        Ok(PhaseRun {
            resources: self.resources.remove(&spec.name).unwrap_or_default(),
            measurement,
            measured_s: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::ExitCode;

    #[test]
    fn every_problem_is_listed_in_one_usage_error() {
        let err = usage_problems(&[
            "shard 1/4 is missing".to_owned(),
            "shard 2 is given twice".to_owned(),
        ]);
        assert_eq!(err.exit_code(), ExitCode::USAGE);
        insta::assert_snapshot!(err.to_string(), @r"
        the shards cannot be merged (2 problems):
          - shard 1/4 is missing
          - shard 2 is given twice
        hint: give every shard's result.json of one run (`run --shard i/N` with the same config, commit and --start-at), each once
        ");
    }
}
