//! `cargo loadgate run`: find the config, boot the target, drive the workload, sample resources,
//! write the result after every phase, tear the target down on every path.

use super::gate::{self, Baseline, GateOptions};
use super::progress::{self, OutputMode, PhaseBar, RunDisplay};
use super::{ExitCode, RunOpts, TargetKindArg, render::render_error, render::render_failure};
use crate::baseline::{BaselineError, short};
use crate::calibrate::Calibration;
use crate::config::{
    ConfigError, FaultTarget, GeneratorConfig, LoadgateConfig, ReplicaAction, TargetKind,
    TargetSource, WorkloadConfig,
};
use crate::engine::{CancellationSignal, EngineError, PhaseHooks, PhaseSpec, Placement};
use crate::measure::{PhaseMeasurement, Progress};
use crate::plan::{
    CapacitySource, OnWindow, PhaseRun, PhaseRunner, PlanError, PlanEvent, PlanOptions,
    PlanOutcome, format_rate, goodput_latency, run_plan,
};
use crate::report::{render_step_table, table};
use crate::result::{
    ConfigHashes, Environment, GitInfo, MeasurementMode, PhaseRecord, RESULT_FORMAT_VERSION,
    RunResult, RunStatus, ToolInfo, write_json_atomic,
};
use crate::targets::{BootRequest, ResourceSampler, TargetError};
use crate::workload::Schedule;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often the target's resources are sampled.
pub(super) const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// How long to wait for the Docker engine to answer before falling back to a process target.
const DOCKER_PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// What can stop a run before it measured anything worth keeping.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The configuration could not be loaded.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The target could not be booted, or failed.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// Options that contradict each other.
    #[error("{message}")]
    Usage {
        /// What is wrong, with a hint line.
        message: String,
    },
    /// The generator could not run a phase at all.
    #[error("the generator could not run phase `{phase}`")]
    Engine {
        /// The phase.
        phase: String,
        /// Why.
        #[source]
        source: EngineError,
    },
    /// The baseline could not be searched (with `--require-baseline`) or stored.
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    /// The base of a paired run could not be resolved or built.
    #[error(transparent)]
    Base(#[from] crate::targets::base::BaseError),
    /// The base of a paired run failed to boot or failed during the run.
    #[error("{message}")]
    BaseFailed {
        /// What failed.
        message: String,
        /// Why.
        #[source]
        source: Box<RunError>,
    },
    /// The result could not be written.
    #[error("failed to write the result to {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl RunError {
    /// The exit code this error ends the run with.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Config(_) | RunError::Usage { .. } => ExitCode::USAGE,
            RunError::Target(e) => ExitCode::for_target(e.kind()),
            RunError::Baseline(e) => ExitCode::for_baseline(e.kind()),
            RunError::Base(e) => ExitCode::for_base(e.kind()),
            // A base that fails is never a pass.
            RunError::BaseFailed { .. } => ExitCode::TARGET_FAILED,
            RunError::Engine {
                source: EngineError::InvalidUrl { .. },
                ..
            } => ExitCode::USAGE,
            RunError::Engine { .. } | RunError::Write { .. } => ExitCode::OTHER_ERROR,
        }
    }

    /// What to do about it, when the stage that failed knows.
    pub fn hint(&self) -> Option<String> {
        match self {
            RunError::Target(e) => e.hint(),
            RunError::Baseline(e) => e.hint(),
            RunError::Base(e) => e.hint(),
            RunError::BaseFailed { source, .. } => source.hint(),
            _ => None,
        }
    }
}

/// Runs `cargo loadgate run` and returns the exit code.
pub fn run(opts: &RunOpts) -> i32 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprint!("{}", render_error(&e));
            return ExitCode::OTHER_ERROR;
        }
    };
    exit_code(runtime.block_on(run_async(opts)))
}

/// The exit code of a gated command's outcome, rendering its error to stderr.
pub(super) fn exit_code(outcome: Result<i32, RunError>) -> i32 {
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprint!("{}", render_failure(&e, e.hint().as_deref()));
            e.exit_code()
        }
    }
}

/// The current directory and the configuration `opts` name, found from it.
pub(super) fn load_config(opts: &super::ConfigOpts) -> Result<(PathBuf, LoadgateConfig), RunError> {
    let cwd = std::env::current_dir().map_err(|e| RunError::Usage {
        message: format!("cannot read the current directory: {e}"),
    })?;
    let config = crate::config::load(&opts.load_opts(cwd.clone()))?;
    Ok((cwd, config))
}

/// The directory of the config file, where data steps run and their paths start.
fn config_dir(config: &LoadgateConfig, cwd: &Path) -> PathBuf {
    match config.source.path.parent() {
        Some(dir) if dir.is_absolute() => dir.to_path_buf(),
        Some(dir) => cwd.join(dir),
        None => cwd.to_path_buf(),
    }
}

/// What the `[data]` and `[teardown]` steps of `config` are filled in from.
fn data_context<'a>(
    config: &'a LoadgateConfig,
    dependencies: &'a crate::targets::RunningDependencies,
    target_url: Option<&'a str>,
    dir: &'a Path,
    log_dir: &'a Path,
) -> crate::targets::DataContext<'a> {
    crate::targets::DataContext {
        seed: config.workload.seed,
        tier: config.data.tier.as_deref(),
        vars: &config.data.vars,
        dependencies,
        target_url,
        dir,
        log_dir,
    }
}

/// One line for a `[data]` step that ran: its name, how long it took, and the last line it
/// printed (the demo's seed file prints the checksum of the rows it loaded).
fn announce_data_step(step: &crate::targets::DataStepRecord) {
    eprintln!(
        "        Data {} ({:.1} s){}",
        step.name,
        step.seconds,
        step.output
            .last()
            .map(|l| format!(": {l}"))
            .unwrap_or_default()
    );
}

/// Runs, then stops the dependencies (after the target, which every path of [`run_booted`] has
/// stopped or dropped by then) whatever the outcome.
async fn run_async(opts: &RunOpts) -> Result<i32, RunError> {
    let mut dependencies = None;
    let outcome = run_booted(opts, &mut dependencies).await;
    yield_to_a_signal().await;
    // `[teardown]` after the target, before the dependencies it may reach (none is registered
    // unless the dependencies were booted).
    for problem in crate::targets::data::run_teardown().await {
        eprintln!("     Warning {problem}");
    }
    yield_to_a_signal().await;
    if let Some(running) = dependencies {
        for problem in running.shutdown().await {
            eprintln!("     Warning {problem}");
        }
    }
    yield_to_a_signal().await;
    outcome
}

/// Whether a container target's port is published whatever the engine says: `network =
/// "published"`, or `auto` for an image loadgate did not build (see `targets::network::decide`).
fn published_by_config(target: &crate::config::TargetConfig) -> bool {
    match target.network {
        crate::config::NetworkChoice::Published => true,
        crate::config::NetworkChoice::Host => false,
        crate::config::NetworkChoice::Auto => {
            !matches!(target.source, crate::config::TargetSource::Bin { .. })
        }
    }
}

/// The warning for a container target on a published port beside dependencies on the host's
/// loopback: 127.0.0.1 in its own network namespace is not theirs, so it cannot reach them there.
fn published_beside_dependencies(
    published: bool,
    dependencies: &[crate::targets::DependencyInfo],
) -> Option<String> {
    let local: Vec<&str> = dependencies
        .iter()
        .filter(|d| d.kind != crate::config::DependencyKind::Url)
        .map(|d| d.name.as_str())
        .collect();
    (published && !local.is_empty()).then(|| {
        format!(
            "the target's port is published from its own network namespace, where 127.0.0.1 is \
             not the host's: it cannot reach {} there (set `[target] network = \"host\"` if the \
             service listens on `$PORT`)",
            local
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// Waits forever when a signal is being handled: its cleanup is removing what the run started
/// (the teardown steps not run yet among it) and ends the process with the signal's code;
/// going on would end it first, with whatever error the kill caused.
async fn yield_to_a_signal() {
    if crate::targets::cleanup::stopping() {
        std::future::pending::<()>().await;
    }
}

async fn run_booted(
    opts: &RunOpts,
    dependencies: &mut Option<crate::targets::RunningDependencies>,
) -> Result<i32, RunError> {
    let (cwd, config) = load_config(&opts.config)?;
    let kind = resolve_kind(opts, &config).await?;
    if kind == TargetKind::Url && !config.faults.is_empty() {
        return Err(RunError::Usage {
            message: "faults (`[[fault]]`) need the target booted by loadgate, which gives it the \
                      stubs' addresses; a url target is not\nhint: run it with `--target process` \
                      or `--target container`, or leave the faults out of this profile"
                .to_owned(),
        });
    }
    refuse_replicas_without_own_ports(opts, &config, kind)?;
    let shard = opts
        .shard
        .map(|shard| ShardState::new(shard, kind, opts.start_at, opts.max_skew))
        .transpose()?;
    let out_dir = out_dir(opts.out_dir.as_deref(), &config, &cwd, None);
    let result_path = out_dir.join("result.json");
    let run_id = std::env::var("LOADGATE_RUN_ID").unwrap_or_else(|_| new_run_id());

    crate::targets::install_cleanup_handlers(super::exit_on_signal)?;

    // One loop (the default): the generator on the first core, the target on the others.
    let placement = placement(&config.generator)?;
    let generator_core = placement.loops.first().copied().flatten();
    let target_cpuset = placement.target.as_deref().map(cpuset_string);
    if let Some(warning) = shared_cores_warning(&placement) {
        eprintln!("     Warning {warning}");
    }
    let engine_version = if kind == TargetKind::Container {
        crate::targets::detect_docker(DOCKER_PROBE_TIMEOUT)
            .await
            .ok()
            .map(|e| e.version)
    } else {
        None
    };

    let git_dir = config
        .source
        .package
        .as_ref()
        .map(|p| p.workspace_root.clone())
        .unwrap_or_else(|| cwd.clone());
    clear_stale_outputs(opts, &cwd, &out_dir);
    refuse_unjudged_checks(&config, false, opts.shard.is_some())?;
    let paired_base = super::paired::prepare(opts, &config, kind, &git_dir, &out_dir).await?;
    refuse_unjudged_checks(&config, paired_base.is_some(), opts.shard.is_some())?;

    // The dependencies first, in `depends-on` order; the target's env gets their addresses.
    let reporter = super::boot_log::BootReporter::new(&out_dir);
    let running = crate::targets::boot_dependencies(
        &config.dependencies,
        kind,
        &run_id,
        &out_dir,
        &|event| reporter.event(event),
    )
    .await?;
    for d in running.infos() {
        eprintln!(
            "  Dependency {} ({}{}) at {}:{}{}",
            d.name,
            d.kind.name(),
            d.version
                .or_else(|| d.image.map(|i| i.reference))
                .map(|v| format!(", {v}"))
                .unwrap_or_default(),
            d.host,
            d.port,
            d.pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
        );
    }
    let running: &crate::targets::RunningDependencies = dependencies.insert(running);
    // `[teardown]` is prepared and registered first, so a failing data step, an error or a
    // signal from here on runs it; then the `[data]` steps run against the dependencies.
    let config_dir = config_dir(&config, &cwd);
    let before_target = data_context(&config, running, None, &config_dir, &out_dir);
    crate::targets::data::register_teardown(&config.teardown, &before_target)?;
    let mut data_steps = crate::targets::data::run_data(
        &config.data,
        crate::config::DataStage::Dependencies,
        &before_target,
        &announce_data_step,
    )
    .await?;
    // Both sides of a paired run read the one database the head's steps loaded.
    if let Some(base) = &paired_base {
        let changed = super::paired::data_files_changed_since(&config, &git_dir, &cwd, base);
        if !changed.is_empty() {
            eprintln!(
                "     Warning both sides read the data the head's `[data]` steps loaded, and {} \
                 differ{} at the base: the comparison does not include the change of data",
                changed.join(", "),
                if changed.len() == 1 { "s" } else { "" }
            );
        }
    }
    // The stubs next (issue 15): the target's env gets their URLs. Each serves on a thread of its
    // own until the run ends; dropped on any path, it stops.
    let stubs = crate::stub::StubSet::start(&config.stubs, config.workload.seed)?;
    for line in stubs.lines() {
        eprintln!("        Stub {line}");
    }
    if kind == TargetKind::Url && !stubs.is_empty() {
        eprintln!(
            "     Warning a url target is not booted by loadgate, so it does not get the stubs' \
             environment: point it at the stubs yourself (give each a fixed `port`)"
        );
    }
    let mut target_config = config.target.clone();
    target_config.env = running.render_env(&target_config.env);
    target_config.env.extend(stubs.env());
    let request = BootRequest {
        kind,
        config: target_config,
        package: config.source.package.clone(),
        // `--env` first, then `--head-env`: a paired run's base takes the first part
        // (paired::run_paired).
        extra_env: opts
            .env
            .iter()
            .chain(&opts.head_env)
            .map(|(k, v)| (k.clone(), running.render(v)))
            .collect(),
        allow_remote: opts.allow_remote,
        url: opts.url.clone(),
        run_id: run_id.clone(),
        cpuset: target_cpuset.clone(),
        prebuilt: None,
    };
    // Said before the boot when the config decides it (the target may then fail its readiness
    // for want of its database), else once the boot has decided the path.
    let predicted = kind == TargetKind::Container && published_by_config(&config.target);
    let warning = |published: bool| {
        if let Some(warning) = published_beside_dependencies(published, &running.infos()) {
            eprintln!("     Warning {warning}");
        }
    };
    warning(predicted);
    let target = crate::targets::boot(request.clone(), &|event| reporter.event(event)).await?;
    // The other replicas: the same request, the binary the first one was built from; each gets a
    // free port of its own. A failure stops the ones already up (dropped) and the first.
    let mut replicas: Vec<crate::targets::RunningTarget> = Vec::new();
    for index in 1..config.target.replicas {
        let mut again = request.clone();
        again.prebuilt = target
            .info()
            .binary
            .filter(|_| matches!(config.target.source, TargetSource::Bin { .. }));
        match crate::targets::boot(again, &|event| reporter.event(event)).await {
            Ok(replica) => replicas.push(replica),
            Err(e) => {
                for replica in replicas {
                    let _ = replica.shutdown().await;
                }
                let _ = target.shutdown().await;
                eprintln!(
                    "       Error replica {index} of {} did not boot",
                    config.target.replicas
                );
                return Err(e.into());
            }
        }
    }
    // A killed replica comes back on its own port; a port the engine publishes would be another.
    let published_kill = config.faults.iter().find_map(|f| match &f.target {
        FaultTarget::Replica {
            replica,
            action: ReplicaAction::Kill,
        } => replicas
            .get(*replica as usize - 1)
            .filter(|r| {
                r.info()
                    .network
                    .is_some_and(|n| n.path == crate::targets::NetworkPath::Published)
            })
            .map(|_| f.name.clone()),
        _ => None,
    });
    if let Some(name) = published_kill {
        for replica in replicas {
            let _ = replica.shutdown().await;
        }
        let _ = target.shutdown().await;
        return Err(RunError::Usage {
            message: format!(
                "fault `{name}` kills a replica and boots it again on its port, and the replicas \
                 are reached by ports the engine publishes, which a new container would not keep\n\
                 hint: set `[target] network = \"host\"`, or run them with `--target process`"
            ),
        });
    }
    let info = target.info();
    let published = info
        .network
        .as_ref()
        .is_some_and(|n| n.path == crate::targets::NetworkPath::Published);
    warning(published && !predicted);
    if published && !stubs.is_empty() {
        eprintln!(
            "     Warning the target's container listens on a published port: it cannot reach \
             the stubs on the host's 127.0.0.1 (set `[target] network = \"host\"`)"
        );
    }
    eprintln!(
        "      Target {} at {}{}",
        kind_name(kind),
        info.base_url,
        info.pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
    );
    for (index, replica) in replicas.iter().enumerate() {
        let info = replica.info();
        eprintln!(
            "     Replica {} at {}{}",
            index + 1,
            info.base_url,
            info.pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
        );
    }
    // The `[data]` steps that reach the target's API, once it is ready.
    let after_target = crate::targets::data::run_data(
        &config.data,
        crate::config::DataStage::Target,
        &data_context(
            &config,
            running,
            Some(target.base_url()),
            &config_dir,
            &out_dir,
        ),
        &announce_data_step,
    )
    .await;
    match after_target {
        Ok(more) => data_steps.extend(more),
        Err(e) => {
            let _ = target.shutdown().await;
            return Err(e.into());
        }
    }

    let config_hashes = ConfigHashes::of(&config, MeasurementMode::Stored);
    let mut result = RunResult {
        format_version: RESULT_FORMAT_VERSION,
        tool: ToolInfo::current(),
        started_at_unix_ms: crate::result::unix_ms(),
        status: RunStatus::Running,
        git: GitInfo::of(&git_dir),
        profile: config.profile.clone(),
        config_path: config.source.path.clone(),
        slo: Some(crate::result::SloSummary::of(&config.slo)),
        config_hash: config_hashes.current.clone(),
        environment: Environment::detect(engine_version, generator_core, target_cpuset),
        target: Some(info),
        replicas: replicas.iter().map(|r| r.info()).collect(),
        target_exit: None,
        ramp: None,
        headroom: None,
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
        resources: Vec::new(),
        calibration: None,
        mode: MeasurementMode::Stored,
        paired: None,
        shards: None,
        dependencies: running.infos(),
        audits: Vec::new(),
        probes: Vec::new(),
        probe_checks: Vec::new(),
        stubs: Vec::new(),
        faults: Vec::new(),
        data: (!config.data.is_empty()).then(|| crate::targets::DataRecord {
            tier: config.data.tier.clone(),
            seed: config.workload.seed,
            vars: config.data.vars.clone(),
            steps: data_steps,
        }),
    };
    write_result(&result_path, &result)?;
    if let Some(base) = paired_base {
        let repo = result.git.as_ref().map(|_| git_dir.clone());
        let setup = super::paired::PairedSetup {
            opts,
            config: &config,
            cwd: &cwd,
            out_dir: &out_dir,
            request,
            head_result: result,
            repo,
        };
        return super::paired::run_paired(setup, base, target).await;
    }

    let gate_options = GateOptions {
        store: opts.baseline_store.clone(),
        base_ref: opts.base_ref.clone(),
        allow_dirty: opts.allow_dirty,
        require_baseline: opts.require_baseline,
    };
    let repo = result.git.as_ref().map(|_| git_dir.clone());
    let found = gate::find_for_result(&result, &git_dir, &gate_options, &config, config_hashes);
    let baseline = match found {
        Ok(b) => b,
        Err(e) => {
            let _ = target.shutdown().await;
            return Err(e.into());
        }
    };
    result.baseline = announce_baseline(&baseline);

    let server_core = calibration_server_core(placement.target.as_deref());
    result.calibration = calibrate(generator_core, server_core, None).await;
    write_result(&result_path, &result)?;

    let sampler = target.start_sampler(SAMPLE_EVERY);
    let sampler_started = Instant::now();
    // The probes sample on the same clock, on the runtime's tasks (not the generator's core).
    let probes = crate::targets::ProbeSampler::start(
        &config.probes,
        running,
        target.base_url(),
        sampler_started,
        SAMPLE_EVERY,
        &|warning| eprintln!("     Warning {warning}"),
    )
    .await;
    let display = RunDisplay::new(
        OutputMode::stderr(),
        config.ramp.steps.len(),
        config.ramp.refine,
    );
    let mut runner = GeneratorRunner {
        targets: std::iter::once(&target)
            .chain(&replicas)
            .map(|t| t.base_url().to_owned())
            .collect(),
        config: &config,
        core: generator_core,
        sampler: &sampler,
        sampler_started,
        display: &display,
        announce: None,
        shard,
        replicas: None,
    };
    // The replicas beyond the first, shared with the faults that kill or pause one of them.
    let replica_set = crate::targets::ReplicaSet::new(std::mem::take(&mut replicas), &request);
    runner.replicas = Some(replica_set.clone());
    let options = PlanOptions {
        keep_going: opts.keep_going,
        baseline_knee_sessions_per_sec: baseline.knee_sessions_per_sec(),
        skip_soak: None,
        fixed: runner.shard.is_some(),
    };
    if let Some(shard) = &runner.shard
        && let Err(e) = shard.wait_for_start(&display).await
    {
        sampler.stop().await;
        let _ = target.shutdown().await;
        return Err(e);
    }
    let mut write_error: Option<RunError> = None;
    let mut scheduled: Vec<ScheduledFault> = Vec::new();
    let mut finished: Vec<FinishedFault> = Vec::new();
    let mut replica_scheduled: Vec<ScheduledReplicaFault> = Vec::new();
    // Replica faults that hold through the whole ramp: applied before its first step, removed
    // when it ends.
    let mut ramp_scheduled: Vec<ScheduledReplicaFault> = Vec::new();
    let mut ramp_faults_started = false;
    let mut replica_finishing: Vec<FinishingReplicaFault> = Vec::new();
    let planned = {
        let mut observe = |event: PlanEvent| {
            let mut announce: Option<String> = None;
            match &event {
                PlanEvent::PhaseStarting {
                    spec,
                    offered_rate_per_sec,
                } => {
                    display.phase_starting(spec, *offered_rate_per_sec);
                    // A fault's phase is over when the next one starts.
                    finish_faults(&mut scheduled, &mut finished);
                    finish_replica_faults(&mut replica_scheduled, &mut replica_finishing);
                    let in_ramp = is_ramp_phase(&spec.name);
                    if !in_ramp {
                        finish_replica_faults(&mut ramp_scheduled, &mut replica_finishing);
                    } else if !ramp_faults_started {
                        ramp_faults_started = true;
                        for f in config.faults.iter().filter(|f| f.phase == "ramp") {
                            if let FaultTarget::Replica { replica, action } = &f.target {
                                ramp_scheduled.push((
                                    f.clone(),
                                    // Now, before the first step's warm-up; timed from the
                                    // start of its measured part, as its per-replica figures.
                                    crate::targets::replicas::schedule(
                                        &replica_set,
                                        *replica,
                                        *action,
                                        Instant::now() + spec.warmup,
                                        Instant::now(),
                                        None,
                                    ),
                                ));
                            }
                        }
                    }
                    // The phase's faults, timed from the start of its measured part.
                    let measured_from = Instant::now() + spec.warmup;
                    for f in config.faults.iter().filter(|f| f.phase == spec.name) {
                        match &f.target {
                            FaultTarget::Stub { stub, change } => {
                                if let Some(stub) = stubs.get(stub) {
                                    scheduled.push((
                                        f.clone(),
                                        crate::stub::fault::schedule(
                                            stub.controller(),
                                            *change,
                                            measured_from,
                                            f.at,
                                            f.duration,
                                        ),
                                    ));
                                }
                            }
                            FaultTarget::Replica { replica, action } => {
                                replica_scheduled.push((
                                    f.clone(),
                                    crate::targets::replicas::schedule(
                                        &replica_set,
                                        *replica,
                                        *action,
                                        measured_from,
                                        measured_from + f.at,
                                        Some(f.duration),
                                    ),
                                ));
                            }
                        }
                    }
                }
                PlanEvent::StepDone { record, .. } => {
                    announce = Some(format!(
                        "        {}",
                        progress::step_line(record, display.colour())
                    ));
                }
                PlanEvent::RampDone { outcome } => {
                    finish_replica_faults(&mut ramp_scheduled, &mut replica_finishing);
                    announce = Some(format!("        Ramp {}", outcome.sentence));
                }
                PlanEvent::SoakDone { .. } => {
                    finish_faults(&mut scheduled, &mut finished);
                    finish_replica_faults(&mut replica_scheduled, &mut replica_finishing);
                }
                PlanEvent::SoakSkipped { reason } => {
                    display.line(&format!("        Soak skipped: {reason}"));
                }
                PlanEvent::SpikeDone { outcome, .. } => {
                    announce = Some(format!("        Spike {}", progress::spike_line(outcome)));
                }
                PlanEvent::SpikeSkipped { reason } => {
                    display.line(&format!("        Spike skipped: {reason}"));
                }
                PlanEvent::StressDone { outcome, .. } => {
                    announce = Some(format!(
                        "        Stress {}",
                        crate::report::stress_sentence(outcome)
                    ));
                }
                PlanEvent::StressSkipped { reason } => {
                    display.line(&format!("        Stress skipped: {reason}"));
                }
            }
            record_plan_event(&mut result, event, &config.gate, config.slo.recovery);
            result.resources = sampler.snapshot();
            result.probes = probes.snapshot();
            if !stubs.is_empty() {
                result.stubs = stubs.records();
            }
            if let Err(e) = write_result(&result_path, &result) {
                write_error.get_or_insert(e);
            }
            // Printed only once the result on disk holds what the line reports.
            if let Some(line) = announce {
                display.line(&line);
            }
        };
        run_plan(&config, &mut runner, &options, &mut observe).await
    };
    display.clear();
    // Each fault: removed if its phase ended first, verified from its stub's figures, with the
    // time to stable SLO after it from its phase's windows. A fault whose phase never ran is
    // recorded as such (never verified).
    finish_faults(&mut scheduled, &mut finished);
    finish_replica_faults(&mut replica_scheduled, &mut replica_finishing);
    finish_replica_faults(&mut ramp_scheduled, &mut replica_finishing);
    let mut replica_finished = Vec::new();
    for (fault, finishing) in replica_finishing {
        match finishing.await {
            Ok(times) => replica_finished.push((fault, times)),
            // A panic in a schedule is a bug: the panic hook has stopped the target already.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => {}
        }
    }
    for (fault, times) in replica_finished {
        // A fault through the ramp is read from its first step, where it was applied.
        let phase = result.phases.iter().find(|p| {
            p.measurement.name == fault.phase
                || (fault.phase == "ramp" && is_ramp_phase(&p.measurement.name))
        });
        let mut record = crate::stub::fault::record_replica(
            &fault,
            times,
            phase.map(|p| &p.measurement),
            config.recovery.windows,
            &config.slo,
        );
        judge_fault(&mut record, &fault, phase, &config);
        display.line(&format!("       Fault {}", record.statement()));
        result.faults.push(record);
    }
    for f in &config.faults {
        if !finished.iter().any(|(done, _, _)| done.name == f.name)
            && !result.faults.iter().any(|done| done.name == f.name)
        {
            let record = crate::stub::fault::FaultRecord::not_run(f, config.recovery.windows);
            display.line(&format!("       Fault {}", record.statement()));
            result.faults.push(record);
        }
    }
    for (fault, controller, times) in finished {
        let phase = result
            .phases
            .iter()
            .find(|p| p.measurement.name == fault.phase);
        let windows = phase
            .map(|p| p.measurement.windows.windows.as_slice())
            .unwrap_or_default();
        let mut record = crate::stub::fault::record(
            &fault,
            &controller,
            times,
            windows,
            config.recovery.windows,
            &config.slo,
        );
        judge_fault(&mut record, &fault, phase, &config);
        display.line(&format!("       Fault {}", record.statement()));
        result.faults.push(record);
    }
    // The audits read the service the run drove, before it is torn down; a run that failed
    // has no counts to reconcile.
    if planned.is_ok() && !config.audit.is_empty() {
        result.audits = super::audit::run_audits(
            &config.audit,
            target.base_url(),
            config.generator.timeout,
            &result,
        )
        .await;
        for audit in &result.audits {
            display.line(&format!("       Audit {}", audit.statement()));
        }
    }
    result.shards = runner.shard.take().map(ShardState::record);
    result.resources = sampler.stop().await;
    result.probes = probes.stop().await;
    // Each probe's series over the soak's measured part, on the same clock: bootstrap fits of
    // every series, off the runtime's threads.
    if let Some([from, to]) = result.soak.as_ref().and_then(|s| s.sampled_s) {
        let mut fitted = std::mem::take(&mut result.probes);
        let fit = tokio::task::spawn_blocking(move || {
            for probe in &mut fitted {
                probe.fit_soak_slopes(from, to);
            }
            fitted
        });
        match fit.await {
            Ok(probes) => result.probes = probes,
            // A panic in the fit is a bug, and the panic hook has already stopped the target and
            // the dependencies: the run cannot go on as if it were a warning.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => eprintln!("     Warning the probes' soak slopes could not be fitted: {e}"),
        }
    }
    result.calibration = calibrate(generator_core, server_core, result.calibration.take()).await;
    let mut alive = target.check_alive().await;
    // A replica that did not come back after its last restart fails the run, with its output
    // (one that failed earlier stopped the plan at the next phase).
    if let Err((index, failed)) = replica_set.settled().await {
        eprintln!("       Error replica {index} did not come back after its restart");
        alive = alive.and(Err(failed));
    }
    if alive.is_ok()
        && let Err((index, crashed)) = replica_set.check_alive().await
    {
        eprintln!("       Error replica {index} is down");
        alive = Err(crashed);
    }
    let exit = target.shutdown().await;
    if let Ok(exit) = &exit {
        result.target_exit = Some(exit.clone());
    }
    replica_set.shutdown().await;
    // After the target: it no longer holds connections to them.
    result.stubs = stubs.stop();
    if let Some(e) = write_error {
        return Err(e);
    }

    let outcome = match planned {
        Ok(outcome) => outcome,
        Err(PlanError::Model(e)) => {
            write_result(&result_path, &result)?;
            return Err(RunError::Usage {
                message: format!("the workload model is unusable: {e}"),
            });
        }
        Err(PlanError::Phase {
            phase,
            partial,
            source,
        }) => {
            result.ramp = Some(partial.ramp);
            result.soak = partial.soak;
            result.status = RunStatus::TargetFailed;
            write_result(&result_path, &result)?;
            let _ = phase;
            return Err(source);
        }
    };
    result.valid = Some(outcome.valid);
    if let Err(crash) = alive {
        result.status = RunStatus::TargetFailed;
        write_result(&result_path, &result)?;
        return Err(crash.into());
    }
    // A shard saw a slice of the load: it is judged once merged (`cargo loadgate merge`).
    let judged_by = match &result.shards {
        Some(_) => Baseline::Missing {
            explanations: vec![SHARD_NOT_JUDGED.to_owned()],
        },
        None => baseline,
    };
    let outputs = Outputs {
        out_dir: &out_dir,
        result_path: &result_path,
        junit: junit_path(opts, &cwd, &out_dir),
        markdown: markdown_path(opts, &cwd, &out_dir),
    };
    let verdict = decide_and_report(&mut result, &outcome, &judged_by, &config, &outputs)?;
    // Each metric was judged on its own phases: a run is void (exit 21) only when no phase is valid.
    let any_valid = result
        .phases
        .iter()
        .any(|p| p.measurement.validity.is_valid());
    if opts.save_baseline {
        let unverified = result.faults.iter().find(|f| !f.verified);
        match (&repo, outcome.valid && any_valid) {
            (Some(_), true) if unverified.is_some() => eprintln!(
                "     Warning not saving this run as a baseline: fault `{}` could not be verified, \
                 so its soak is not the one the config declares",
                unverified.map_or("", |f| f.name.as_str())
            ),
            (Some(repo), true) => {
                let saved = gate::save(repo, &gate_options, &result)?;
                eprintln!("       Saved baseline in {saved}");
                // A directory store also keeps the binary, for paired runs whose base this is;
                // only an optimisation, so a failure warns.
                let binary = result.target.as_ref().and_then(|t| t.binary.as_deref());
                let store = crate::baseline::StoreSpec::parse(&gate_options.store)?;
                match crate::baseline::save_run_build(&store, result.git.as_ref(), binary) {
                    Ok(Some(build)) => eprintln!("       Saved build {} in {store}", build.bin),
                    Ok(None) => {}
                    Err(e) => eprintln!("     Warning the build was not kept in {store}: {e}"),
                }
            }
            (None, _) => {
                return Err(RunError::Usage {
                    message: "--save-baseline needs a git repository with a commit\nhint: commit the package first".to_owned(),
                });
            }
            (_, false) => eprintln!(
                "     Warning not saving this run as a baseline: a phase the comparison reads is invalid (a generator limit in the ramp is not one)"
            ),
        }
    }
    Ok(exit_code_of(
        &result,
        &outcome.ramp,
        verdict.outcome,
        opts.fail_on_inconclusive,
        opts.require_baseline && result.shards.is_none(),
    ))
}

/// Records what the plan reported in the result: the phases, the ramp so far, the soak (with the
/// leak finding of `gate`) or why it was skipped, the spike (with its `[slo] recovery` check
/// against `recovery_limit`) or why it was skipped.
pub(super) fn record_plan_event(
    result: &mut RunResult,
    event: PlanEvent,
    gate: &crate::config::GateConfig,
    recovery_limit: Option<std::time::Duration>,
) {
    match event {
        PlanEvent::PhaseStarting { .. } => {}
        PlanEvent::StepDone {
            measurement,
            schedule_hash,
            ramp,
            ..
        } => {
            result.ramp = Some(*ramp);
            result.phases.push(PhaseRecord {
                schedule_hash,
                measurement: *measurement,
            });
        }
        PlanEvent::RampDone { outcome } => result.ramp = Some(*outcome),
        PlanEvent::SoakDone {
            outcome,
            measurement,
            schedule_hash,
        } => {
            result.phases.push(PhaseRecord {
                schedule_hash,
                measurement: *measurement,
            });
            let mut soak = *outcome;
            soak.leak = crate::compare::leak_finding(&soak.slopes, gate);
            result.soak = Some(soak);
        }
        PlanEvent::SoakSkipped { reason } => result.soak_skipped = Some(reason),
        PlanEvent::SpikeDone {
            outcome,
            measurement,
            schedule_hash,
        } => {
            result.phases.push(PhaseRecord {
                schedule_hash,
                measurement: *measurement,
            });
            let mut spike = *outcome;
            spike.check = crate::compare::recovery_check(&spike, recovery_limit);
            result.spike = Some(spike);
        }
        PlanEvent::SpikeSkipped { reason } => result.spike_skipped = Some(reason),
        PlanEvent::StressDone {
            outcome,
            measurement,
            schedule_hash,
        } => {
            result.phases.push(PhaseRecord {
                schedule_hash,
                measurement: *measurement,
            });
            let mut stress = *outcome;
            stress.check = crate::compare::stress_recovery_check(&stress, recovery_limit);
            result.stress = Some(stress);
        }
        PlanEvent::StressSkipped { reason } => result.stress_skipped = Some(reason),
    }
}

/// Refuses, before anything boots, a run that could not judge a check its config asks for: a
/// check that cannot run must never let the run pass. Audits read one whole service (a paired run
/// boots two; a shard sends a slice of the load, and `merge` does not judge them); probe limits are
/// judged in stored runs only; `[slo] recovery` needs a `[spike]` or a `[stress]`, which a paired
/// run never runs; a `[stress]` compares one whole run's stretches (neither paired nor a shard).
/// A fault whose schedule runs: its config and the schedule.
type ScheduledFault = (
    crate::config::FaultConfig,
    crate::stub::fault::ScheduledFault,
);

/// A fault whose phase is over: its config, its stub's handle, when it was applied and removed.
type FinishedFault = (
    crate::config::FaultConfig,
    crate::stub::StubController,
    crate::stub::fault::FaultTimes,
);

/// A fault's checks, read from its phase (if it ran): the `[slo] recovery` check of the time to
/// stable SLO after it, and its `degraded` objective on the windows while it held.
fn judge_fault(
    record: &mut crate::stub::fault::FaultRecord,
    fault: &crate::config::FaultConfig,
    phase: Option<&crate::result::PhaseRecord>,
    config: &LoadgateConfig,
) {
    let valid = phase.is_some_and(|p| p.measurement.validity.is_valid());
    let reasons: Vec<String> = phase
        .map(|p| {
            p.measurement
                .validity
                .reasons
                .iter()
                .map(ToString::to_string)
                .collect()
        })
        .unwrap_or_default();
    record.check =
        crate::compare::fault_recovery_check(record, (valid, &reasons), config.slo.recovery);
    record.degraded = fault.degraded.as_ref().map(|objective| {
        let windows = phase
            .map(|p| p.measurement.windows.windows.as_slice())
            .unwrap_or_default();
        crate::stub::fault::degraded_check(
            objective,
            (record.applied_at_ms, record.removed_at_ms),
            windows,
            (valid, &reasons),
        )
    });
}

/// Whether a phase is one of the ramp's: its steps (`ramp-50%`, `ramp-100%-confirm`) and its
/// bisection (`refine-2`, `refine-2-confirm`).
fn is_ramp_phase(name: &str) -> bool {
    name.starts_with("ramp-") || name.starts_with("refine-")
}

/// A replica fault whose schedule runs: its config and the schedule.
type ScheduledReplicaFault = (
    crate::config::FaultConfig,
    crate::targets::ScheduledReplicaFault,
);

/// A replica fault being ended (its removal, a restart among them, may take a while): its config
/// and the task that ends it.
type FinishingReplicaFault = (
    crate::config::FaultConfig,
    tokio::task::JoinHandle<crate::targets::ReplicaFaultTimes>,
);

/// Ends every scheduled replica fault, each in a task of its own (the plan's observer cannot
/// wait): one still applied is removed, a removal under way runs to its end. The next phase
/// waits for them ([`crate::targets::ReplicaSet::settled`]); their records are read after the
/// plan.
fn finish_replica_faults(
    scheduled: &mut Vec<ScheduledReplicaFault>,
    finishing: &mut Vec<FinishingReplicaFault>,
) {
    for (config, schedule) in scheduled.drain(..) {
        finishing.push((config, tokio::spawn(schedule.end().wait())));
    }
}

/// Ends every scheduled fault (removing one still applied: its phase is over) into `finished`.
fn finish_faults(scheduled: &mut Vec<ScheduledFault>, finished: &mut Vec<FinishedFault>) {
    for (config, schedule) in scheduled.drain(..) {
        let controller = schedule.controller().clone();
        finished.push((config, controller, schedule.finish()));
    }
}

/// Replicas need the target booted by loadgate, each on a port of its own: a url target, or a
/// `PORT` fixed in the environment, cannot give them that.
fn refuse_replicas_without_own_ports(
    opts: &RunOpts,
    config: &crate::config::LoadgateConfig,
    kind: TargetKind,
) -> Result<(), RunError> {
    let n = config.target.replicas;
    if n < 2 {
        return Ok(());
    }
    if kind == TargetKind::Url {
        return Err(RunError::Usage {
            message: format!(
                "`[target] replicas = {n}` boots {n} instances of the service, and a url target \
                 is not booted by loadgate\nhint: run it with `--target process` or `--target \
                 container`, or leave `replicas` out of this profile"
            ),
        });
    }
    if !config.audit.is_empty() {
        return Err(RunError::Usage {
            message: format!(
                "`[target] replicas = {n}` boots {n} instances, each with its own state, and an \
                 audit (`[[audit]]`) reconciles one service's effects with the requests loadgate \
                 saw\nhint: leave the audits out of the profile that sets `replicas`"
            ),
        });
    }
    let fixed_port = opts.env.iter().any(|(k, _)| k == "PORT")
        || opts.head_env.iter().any(|(k, _)| k == "PORT")
        || config.target.env.contains_key("PORT");
    if fixed_port {
        return Err(RunError::Usage {
            message: format!(
                "`[target] replicas = {n}` gives each instance a free port of its own as `$PORT`, \
                 and `PORT` is fixed in the environment (`[target] env` or `--env`): they would all \
                 listen on it\nhint: leave `PORT` out of the environment"
            ),
        });
    }
    if config
        .data
        .steps
        .iter()
        .any(|s| s.after == crate::config::DataStage::Target)
    {
        eprintln!(
            "     Warning `[data]` steps run `after = \"target\"` reach replica 0 alone: a service \
             whose replicas keep their own state gets that data once"
        );
    }
    if !config.probes.is_empty() {
        eprintln!(
            "     Warning the probes read replica 0 (and its resources are the ones sampled), not \
             the other {}",
            n - 1
        );
    }
    Ok(())
}

fn refuse_unjudged_checks(
    config: &crate::config::LoadgateConfig,
    paired: bool,
    shard: bool,
) -> Result<(), RunError> {
    let probe_limits = config.probes.iter().any(|p| !p.limits.is_empty());
    let mut why = Vec::new();
    if config.slo.recovery.is_some()
        && config.spike.is_disabled()
        && config.stress.is_disabled()
        && config.faults.is_empty()
    {
        why.push(
            "`[slo] recovery` limits the time to stable SLO after a spike, a stress or a fault, \
             and this profile declares no `[spike]`, no `[stress]` and no `[[fault]]`",
        );
    }
    if paired {
        if !config.faults.is_empty() {
            why.push("faults (`[[fault]]`) run in the soak, and a paired run does not soak");
        }
        if config.target.replicas > 1 {
            why.push(
                "`[target] replicas` boots several instances of one service, and a paired run \
                 compares one base with one head",
            );
        }
        if !config.audit.is_empty() {
            why.push("audits (`[[audit]]`) read one service, and a paired run boots two");
        }
        if probe_limits {
            why.push("probe limits (`[[probe]] limits`) are judged in stored runs only");
        }
        if config.slo.recovery.is_some() {
            why.push(
                "`[slo] recovery` needs the spike after the soak, and a paired run has neither",
            );
        }
        if !config.stress.is_disabled() {
            why.push(
                "`[stress]` compares one service before and after an overload that follows the \
                 soak, and a paired run boots two and does not soak",
            );
        }
        if config
            .data
            .steps
            .iter()
            .any(|s| s.after == crate::config::DataStage::Target)
        {
            why.push(
                "`[data]` steps run `after = \"target\"` load one service's API, and a paired run \
                 boots two",
            );
        }
    }
    if shard {
        if !config.faults.is_empty() {
            why.push(
                "faults (`[[fault]]`) are verified on one run's soak, and a shard's is a slice \
                 (`merge` does not judge them)",
            );
        }
        if !config.audit.is_empty() {
            why.push(
                "audits (`[[audit]]`) read the whole service, and a shard sends a slice of the \
                 load (`merge` does not judge them)",
            );
        }
        if probe_limits {
            why.push("probe limits (`[[probe]] limits`) are not judged on shards or their merge");
        }
        if !config.stress.is_disabled() {
            why.push(
                "`[stress]` compares one run's stretches before and after the overload, and a \
                 shard's are a slice (`merge` does not judge a stress)",
            );
        }
        if !config.data.steps.is_empty() || !config.teardown.steps.is_empty() {
            why.push(
                "`[data]` and `[teardown]` steps would run once in every shard, against the one \
                 service all shards drive (seed it once, before the shards start)",
            );
        }
    }
    if why.is_empty() {
        return Ok(());
    }
    Err(RunError::Usage {
        message: format!(
            "this run could not judge every check its config asks for: {}\nhint: give `--mode \
             stored` (and no `--shard`), or leave those checks out of this profile",
            why.join("; ")
        ),
    })
}

/// Why a shard's own verdict is "no baseline".
const SHARD_NOT_JUDGED: &str = "a shard sent a slice of the load and is not judged alone: `cargo loadgate merge` judges the merged shards";

/// Where a gated command writes its documents.
pub(super) struct Outputs<'a> {
    /// The out-dir (charts go here).
    pub(super) out_dir: &'a Path,
    /// The result's path.
    pub(super) result_path: &'a Path,
    /// The JUnit report's path.
    pub(super) junit: PathBuf,
    /// The Markdown summary's path.
    pub(super) markdown: PathBuf,
}

/// Says which baseline was found, and returns its reference for the result.
pub(super) fn announce_baseline(baseline: &Baseline) -> Option<crate::result::BaselineRef> {
    match baseline {
        Baseline::Found { reference, .. } => {
            eprintln!(
                "    Baseline {} ({} step(s) from the merge-base, {})",
                short(&reference.commit),
                reference.distance,
                reference.store
            );
            Some(reference.clone())
        }
        Baseline::Missing { explanations } => {
            eprintln!(
                "    Baseline none: {}",
                explanations.first().map(String::as_str).unwrap_or("")
            );
            None
        }
    }
}

/// Completes the finished `result`: decides it against `baseline`, writes the result, JUnit,
/// the Markdown summary and the charts, and prints the summary and the verdict.
pub(super) fn decide_and_report(
    result: &mut RunResult,
    outcome: &PlanOutcome,
    baseline: &Baseline,
    config: &LoadgateConfig,
    outputs: &Outputs<'_>,
) -> Result<crate::result::Verdict, RunError> {
    result.status = RunStatus::Complete;
    // A shard's ramp saw a slice of the load: its headroom is the merged run's to state.
    if !matches!(result.shards, Some(crate::result::ShardRecord::Shard(_))) {
        result.headroom = Some(crate::compare::headroom(
            &outcome.ramp,
            &crate::compare::ProductionLoad::of(&config.workload),
            config.slo.headroom,
        ));
    }
    // A probe's limit is absolute, like the SLO: failing it is a regression whatever the baseline
    // (the verdict settles it with the other absolute checks). A shard and a merge of shards are
    // not judged on probes (their samples are not merged yet).
    if result.shards.is_none() {
        result.probe_checks = crate::compare::probe_checks(&config.probes, &result.probes);
    }
    let (comparison, verdict) =
        gate::decide_with(baseline, result, &config.gate, &config.gated_operations());
    result.comparison = comparison;
    result.verdict = Some(verdict.clone());
    write_result(outputs.result_path, result)?;

    crate::report::write_junit(&outputs.junit, result).map_err(|source| RunError::Write {
        path: outputs.junit.clone(),
        source,
    })?;
    write_markdown(&outputs.markdown, result)?;
    let charts = write_run_charts(outputs.out_dir, result, baseline);

    print!("{}", render_summary(result, outcome));
    print!("{}", crate::report::probe_lines(result));
    print!(
        "{}",
        progress::paint_verdict(
            &gate::render_verdict(
                &gate::baseline_lines(baseline),
                result.comparison.as_ref(),
                &verdict
            ),
            &verdict,
            OutputMode::stdout().colour
        )
    );
    println!("result: {}", outputs.result_path.display());
    println!("junit: {}", outputs.junit.display());
    println!("summary: {}", outputs.markdown.display());
    if charts {
        println!("charts: {}", outputs.out_dir.display());
    }
    Ok(verdict)
}

/// The exit code of a decided run: the verdict's, unless no phase at all kept its schedule
/// (`INVALID_RUN`); warns of the phases that did not.
pub(super) fn exit_code_of(
    result: &RunResult,
    ramp: &crate::plan::RampOutcome,
    outcome: crate::result::VerdictOutcome,
    fail_on_inconclusive: bool,
    require_baseline: bool,
) -> i32 {
    let any_valid = result
        .phases
        .iter()
        .any(|p| p.measurement.validity.is_valid());
    let reasons: Vec<String> = result
        .phases
        .iter()
        .filter(|p| !p.measurement.validity.is_valid())
        .filter(|p| !any_valid || !ramp.excuses(&p.measurement.name))
        .map(|p| {
            let why: Vec<String> = p
                .measurement
                .validity
                .reasons
                .iter()
                .map(ToString::to_string)
                .collect();
            format!("{}: {}", p.measurement.name, why.join(", "))
        })
        .collect();
    if any_valid {
        if !reasons.is_empty() {
            eprintln!(
                "     Warning the generator could not keep its schedule in {} ({}); only the metrics of those phases are inconclusive",
                if reasons.len() == 1 {
                    "one phase"
                } else {
                    "some phases"
                },
                reasons.join("; ")
            );
        }
        ExitCode::for_verdict(outcome, fail_on_inconclusive, require_baseline)
    } else {
        eprintln!(
            "error: invalid run: the generator could not keep its schedule in any phase ({})",
            reasons.join("; ")
        );
        eprintln!(
            "hint: lower the offered load, raise [generator] max-in-flight, or give the generator a core of its own"
        );
        ExitCode::INVALID_RUN
    }
}

/// Where the JUnit report goes: `--junit` (relative to `cwd`), else `junit.xml` in the out-dir.
pub(super) fn junit_path(opts: &RunOpts, cwd: &Path, out_dir: &Path) -> PathBuf {
    output_path(opts.junit.as_deref(), "junit.xml", cwd, out_dir)
}

/// Where the Markdown summary goes: `--markdown` (relative to `cwd`), else `summary.md` in the
/// out-dir.
pub(super) fn markdown_path(opts: &RunOpts, cwd: &Path, out_dir: &Path) -> PathBuf {
    output_path(opts.markdown.as_deref(), "summary.md", cwd, out_dir)
}

/// A document's path: the one given (relative to `cwd`), else `name` in the out-dir.
pub(super) fn output_path(given: Option<&Path>, name: &str, cwd: &Path, out_dir: &Path) -> PathBuf {
    given.map_or_else(|| out_dir.join(name), |p| cwd.join(p))
}

/// Removes the documents an earlier run left where this one writes its own, so that a run that
/// fails before it writes them (a base that does not build) cannot have an old verdict read as
/// its own. Missing files are fine; a file that cannot be removed is overwritten later or warned.
fn clear_stale_outputs(opts: &RunOpts, cwd: &Path, out_dir: &Path) {
    let stale = [
        out_dir.join("result.json"),
        out_dir.join("base-result.json"),
        junit_path(opts, cwd, out_dir),
        markdown_path(opts, cwd, out_dir),
    ];
    for path in stale {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => eprintln!(
                "     Warning could not remove {} from an earlier run: {e}",
                path.display()
            ),
        }
    }
}

/// Measures the calibration figure on the generator's and the target's cores: the first
/// measurement of the run when `started` is `None`, else the one after the phases. A failure is a
/// warning: the comparison then says that no calibration was measured.
pub(super) async fn calibrate(
    client_core: Option<usize>,
    server_core: Option<usize>,
    started: Option<Calibration>,
) -> Option<Calibration> {
    let when = if started.is_some() { "after" } else { "before" };
    let measured =
        tokio::task::spawn_blocking(move || crate::calibrate::measure(client_core, server_core))
            .await
            .map_err(std::io::Error::other)
            .and_then(|m| m);
    match (measured, started) {
        (Ok(m), None) => {
            eprintln!(
                "   Calibrate {:.0} round trips/s (reference load, {when} the phases)",
                m.round_trips_per_sec
            );
            Some(Calibration::started(m))
        }
        (Ok(m), Some(mut c)) => {
            c.finish(m);
            eprintln!(
                "   Calibrate {:.0} round trips/s {when} the phases (drift {:+.1}%)",
                c.after.as_ref().map_or(0.0, |a| a.round_trips_per_sec),
                c.drift.unwrap_or(0.0) * 100.0
            );
            Some(c)
        }
        (Err(e), started) => {
            eprintln!("     Warning the calibration {when} the phases failed: {e}");
            started
        }
    }
}

/// Writes the SVG charts into the out-dir, the baseline's stored result drawn dashed beside this
/// run's, and says whether any was written. A chart that fails is a warning, never a failed run:
/// the result, JUnit and the summary already hold what was measured.
pub(super) fn write_run_charts(out_dir: &Path, result: &RunResult, baseline: &Baseline) -> bool {
    let base = match baseline {
        Baseline::Found { entry, .. } => match entry.result.get() {
            Ok(base) => Some(base),
            Err(e) => {
                eprintln!("     Warning the baseline is not drawn in the charts: {e}");
                None
            }
        },
        Baseline::Missing { .. } => None,
    };
    let written = crate::report::write_charts(out_dir, result, base).map_err(|e| {
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        text
    });
    match written {
        Ok(paths) => !paths.is_empty(),
        Err(e) => {
            eprintln!("     Warning charts not written: {e}");
            false
        }
    }
}

/// Writes the Markdown summary, and appends it to `$GITHUB_STEP_SUMMARY` when that is set.
pub(super) fn write_markdown(path: &Path, result: &RunResult) -> Result<(), RunError> {
    let md = crate::report::markdown_summary(result);
    let write_error = |path: &Path| {
        let path = path.to_owned();
        move |source| RunError::Write { path, source }
    };
    std::fs::write(path, &md).map_err(write_error(path))?;
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|s| !s.is_empty()) {
        let summary = PathBuf::from(summary);
        use std::io::Write as _;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&summary)
            .and_then(|mut f| f.write_all(md.as_bytes()))
            .map_err(write_error(&summary))?;
    }
    Ok(())
}

/// Runs the plan's phases on the generator thread and hands each the target's resource samples of
/// its measured part.
pub(super) struct GeneratorRunner<'a> {
    /// The base URL of each replica of the target (one unless `[target] replicas` is above one).
    pub(super) targets: Vec<String>,
    pub(super) config: &'a LoadgateConfig,
    pub(super) core: Option<usize>,
    pub(super) sampler: &'a ResourceSampler,
    pub(super) sampler_started: Instant,
    pub(super) display: &'a RunDisplay,
    /// Announce each phase on `display` as it starts, with this many requests per session (a
    /// paired run, whose phases wait for their turn after the plan announced them); `None` when
    /// the plan's `PhaseStarting` announces them.
    pub(super) announce: Option<f64>,
    /// The shard this run sends (`--shard`), with what it records of each phase; `None` for the
    /// whole schedule.
    pub(super) shard: Option<ShardState>,
    /// The replicas beyond the first, when faults act on them: each phase starts once no fault's
    /// removal is under way, and not at all when a replica did not come back.
    pub(super) replicas: Option<crate::targets::ReplicaSet>,
}

/// The furthest ahead an agreed shard start may lie: time for every shard to be scheduled and to
/// boot, not a typo's years of sleep.
const MAX_START_AHEAD: Duration = Duration::from_secs(3600);

/// A shard run's part of the runner: which sessions it sends, the agreed start, and the record of
/// each phase it ran.
pub(super) struct ShardState {
    shard: crate::workload::Shard,
    start_at_unix_ms: u64,
    max_skew: Duration,
    phases: Vec<crate::result::ShardPhase>,
}

impl ShardState {
    /// Checks a shard run's target and start: a url target (each shard booting its own copy of the
    /// service would measure N services, not one), and an agreed start not already passed by
    /// more than `max_skew`.
    fn new(
        shard: crate::workload::Shard,
        kind: TargetKind,
        start_at: Option<u64>,
        max_skew: Duration,
    ) -> Result<Self, RunError> {
        if kind != TargetKind::Url {
            return Err(RunError::Usage {
                message: format!(
                    "--shard needs a url target, not a {} target: every shard must load the same running service\nhint: start the service once and give each shard --url (docs/decisions.md, \"Shards\")",
                    kind_name(kind)
                ),
            });
        }
        let Some(start_at_unix_ms) = start_at else {
            return Err(RunError::Usage {
                message: "--shard needs --start-at\nhint: give every shard the same instant, e.g. --start-at \"$(date -u -d '+2 min' +%Y-%m-%dT%H:%M:%SZ)\"".to_owned(),
            });
        };
        let state = Self {
            shard,
            start_at_unix_ms,
            max_skew,
            phases: Vec::new(),
        };
        state.check_not_late()?;
        Ok(state)
    }

    /// This machine's wall clock minus the agreed start, in milliseconds (positive: late).
    fn offset_ms(&self) -> f64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64()
            * 1e3;
        now - self.start_at_unix_ms as f64
    }

    fn check_not_late(&self) -> Result<(), RunError> {
        let late = self.offset_ms();
        // A start in microseconds, or in another year, would sleep for ever: refused.
        if -late > MAX_START_AHEAD.as_secs_f64() * 1e3 {
            return Err(RunError::Usage {
                message: format!(
                    "the agreed start (--start-at {}) is {:.0} s ahead, more than {} s: the shards would wait that long\nhint: --start-at takes milliseconds since the Unix epoch (`date +%s%3N`) or an RFC 3339 time, e.g. a few minutes from now",
                    self.start_at_unix_ms,
                    -late / 1e3,
                    MAX_START_AHEAD.as_secs()
                ),
            });
        }
        if late > self.max_skew.as_secs_f64() * 1e3 {
            return Err(RunError::Usage {
                message: format!(
                    "the agreed start (--start-at {}) passed {:.3} s ago, more than --max-skew {} ms allows: the shards would not send their slices together\nhint: agree on a later instant, leaving time for every shard to boot",
                    self.start_at_unix_ms,
                    late / 1e3,
                    crate::config::format_millis(self.max_skew)
                ),
            });
        }
        Ok(())
    }

    /// Waits until the agreed start; a usage error when it passed by more than the allowed skew
    /// while the target booted.
    async fn wait_for_start(&self, display: &RunDisplay) -> Result<(), RunError> {
        self.check_not_late()?;
        let wait = -self.offset_ms();
        display.line(&format!(
            "       Shard {} of {}: sessions k ≡ {} (mod {}), starting in {:.1} s",
            self.shard.index,
            self.shard.count,
            self.shard.index,
            self.shard.count,
            wait.max(0.0) / 1e3
        ));
        display.line(&format!(
            "        Note {}",
            crate::plan::FIXED_PLAN_NO_BISECTION
        ));
        if wait > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(wait / 1e3)).await;
        }
        Ok(())
    }

    /// The result's record of this shard.
    fn record(self) -> crate::result::ShardRecord {
        crate::result::ShardRecord::Shard(crate::result::ShardRun {
            index: self.shard.index,
            count: self.shard.count,
            start_at_unix_ms: self.start_at_unix_ms,
            start_offset_ms: self.phases.first().map_or(0.0, |p| p.start_offset_ms),
            // Shard 0 owns the target's resource samples (docs/decisions.md, "Shards").
            owns_target: self.shard.index == 0,
            phases: self.phases,
        })
    }
}

impl PhaseRunner for GeneratorRunner<'_> {
    type Error = RunError;

    async fn run(
        &mut self,
        spec: PhaseSpec,
        schedule: Schedule,
        on_window: OnWindow,
    ) -> Result<PhaseRun, RunError> {
        if let Some(set) = &self.replicas
            && let Err((index, down)) = set.settled().await
        {
            self.display.line(&format!(
                "       Error replica {index} did not come back after its restart"
            ));
            return Err(down.into());
        }
        if let Some(requests_per_session) = self.announce {
            self.display
                .phase_starting(&spec, spec.sessions_per_sec * requests_per_session);
        }
        let from = self.sampler_started.elapsed().as_secs_f64() + spec.warmup.as_secs_f64();
        let slo_latency = goodput_latency(&self.config.slo);
        // A shard sends its slice of the very schedule the plan hashed.
        let (schedule, started) = match &self.shard {
            Some(state) => (schedule.sharded(state.shard), state.offset_ms()),
            None => (schedule, 0.0),
        };
        let phase = spec.name.clone();
        let sent = schedule.clone();
        let measurement = run_phase_with_progress(
            self.targets.clone(),
            self.config.workload.clone(),
            self.config.generator.clone(),
            slo_latency,
            spec,
            schedule,
            self.core,
            on_window,
            self.display.phase_bar(),
        )
        .await?;
        let to = self.sampler_started.elapsed().as_secs_f64();
        let resources = self
            .sampler
            .snapshot()
            .into_iter()
            .filter(|s| s.elapsed_s >= from && s.elapsed_s <= to)
            .collect();
        if let Some(state) = &mut self.shard {
            state.phases.push(crate::result::ShardPhase {
                phase,
                shard_schedule_hash: sent.hash(),
                start_offset_ms: started,
                measured_from_s: from,
                measured_to_s: to,
            });
        }
        Ok(PhaseRun {
            measurement,
            resources,
            measured_s: Some([from, to]),
        })
    }
}

/// Runs one phase on a thread of its own with a current-thread runtime, pinned to the generator's
/// core when there is one: the engine's future is not `Send`, and the generator must not share a
/// core with the target or with the sampler. With `generator.threads` above one, that thread
/// coordinates the loops, each on a thread of its own pinned to its own core
/// ([`crate::engine::run_phase_on_loops`]), and `core` is the first loop's. It shows no progress
/// while it runs. `schedule` is `spec`'s ([`PhaseSpec::schedule`]), built by the caller.
#[expect(
    clippy::too_many_arguments,
    reason = "the phase's inputs and the generator's core; a struct would only rename them"
)]
pub async fn run_phase_on_generator_thread(
    base_url: String,
    workload: WorkloadConfig,
    generator: GeneratorConfig,
    slo_latency: Duration,
    spec: PhaseSpec,
    schedule: Schedule,
    core: Option<usize>,
    on_window: OnWindow,
) -> Result<PhaseMeasurement, RunError> {
    run_phase_with_progress(
        vec![base_url],
        workload,
        generator,
        slo_latency,
        spec,
        schedule,
        core,
        on_window,
        PhaseBar::none(),
    )
    .await
}

/// Where the generator's loops and the target run on this machine, for `generator.threads`: a
/// usage error when this process may run on fewer cores than the loops asked for (validation
/// checked the same cores, so only a changed affinity gets here).
fn placement(generator: &GeneratorConfig) -> Result<Placement, RunError> {
    let threads = crate::engine::resolve_threads(generator.threads);
    crate::engine::place(&crate::engine::allowed_cores(), threads).map_err(|e| RunError::Usage {
        message: format!("{e}\nhint: lower [generator] threads, or write \"auto\""),
    })
}

/// The core the calibration's reference server runs on: the target's first, where the target is
/// pinned (`target_cores`, the cores the placement gave it), else the first core the generator
/// does not take by default.
pub(super) fn calibration_server_core(target_cores: Option<&[usize]>) -> Option<usize> {
    match target_cores {
        Some(cores) => cores.first().copied(),
        None => crate::engine::target_cores().first().copied(),
    }
}

/// The warning of a generator that runs on the target's cores, recorded in each phase as
/// `generator_shares_target_cores`; `None` when the target has cores of its own.
fn shared_cores_warning(placement: &Placement) -> Option<String> {
    if !placement.shared {
        return None;
    }
    let pinned: Vec<String> = placement
        .loops
        .iter()
        .flatten()
        .map(ToString::to_string)
        .collect();
    Some(if placement.loops.len() > 1 {
        format!(
            "the generator shares the target's cores ({} loops on cores {}, and the target is given every core): each takes time from the other, and the latencies include it; lower [generator] threads to leave the target a core of its own",
            placement.loops.len(),
            if pinned.is_empty() {
                "not pinned".to_owned()
            } else {
                pinned.join(", ")
            }
        )
    } else {
        "the generator shares the target's cores (this process may run on one core): each takes time from the other, and the latencies include it".to_owned()
    })
}

/// [`run_phase_on_generator_thread`], updating `bar` from the generator thread once a second.
#[expect(
    clippy::too_many_arguments,
    reason = "the phase's inputs and its one view; a struct would only rename them"
)]
async fn run_phase_with_progress(
    targets: Vec<String>,
    workload: WorkloadConfig,
    generator: GeneratorConfig,
    slo_latency: Duration,
    spec: PhaseSpec,
    schedule: Schedule,
    core: Option<usize>,
    on_window: OnWindow,
    bar: PhaseBar,
) -> Result<PhaseMeasurement, RunError> {
    let placement = placement(&generator)?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let phase = spec.name.clone();
    let spawned = std::thread::Builder::new()
        .name("loadgate-generator".to_owned())
        .spawn(move || {
            // One loop runs on this thread; several are coordinated from it, next to the first
            // loop (the coordinator wakes once a window per loop).
            if let Some(core) = core.or(placement.loops.first().copied().flatten()) {
                // Unpinned is slower but still measures honestly (lag is recorded), so go on.
                let _ = crate::engine::pin_current_thread(core);
            }
            let progress = |p: &Progress| bar.update(p);
            let hooks = PhaseHooks {
                progress: &progress,
                on_window: &*on_window,
            };
            // One loop runs on this thread (already pinned above, so no core is passed down);
            // several are coordinated from it.
            let loops = if placement.loops.len() > 1 {
                &placement.loops[..]
            } else {
                &[]
            };
            let outcome = crate::engine::run_phase_on_loops(
                &targets,
                &workload,
                &generator,
                slo_latency,
                &spec,
                &schedule,
                loops,
                hooks,
                CancellationSignal::new(),
            );
            let outcome = outcome.map(|mut m| {
                m.generator_shares_target_cores = placement.shared;
                m
            });
            let _ = tx.send(outcome);
        });
    if let Err(e) = spawned {
        return Err(RunError::Engine {
            phase,
            source: EngineError::Timer(e),
        });
    }
    match rx.await {
        Ok(Ok(m)) => Ok(m),
        Ok(Err(source)) => Err(RunError::Engine { phase, source }),
        Err(_) => Err(RunError::Engine {
            phase,
            source: EngineError::Timer(std::io::Error::other("the generator thread panicked")),
        }),
    }
}

async fn resolve_kind(opts: &RunOpts, config: &LoadgateConfig) -> Result<TargetKind, RunError> {
    let asked = opts.target.map(|k| match k {
        TargetKindArg::Container => TargetKind::Container,
        TargetKindArg::Process => TargetKind::Process,
        TargetKindArg::Url => TargetKind::Url,
    });
    let config_is_url = matches!(config.target.source, TargetSource::Url { .. });
    match (asked, opts.url.is_some()) {
        (Some(kind), true) if kind != TargetKind::Url => Err(RunError::Usage {
            message: format!(
                "--url and --target {} do not go together\nhint: --url implies --target url",
                kind_name(kind)
            ),
        }),
        (_, true) => Ok(TargetKind::Url),
        (Some(TargetKind::Url), false) if !config_is_url => Err(RunError::Usage {
            message: "--target url needs a URL\nhint: give --url http://127.0.0.1:PORT or set `url` in [target]".to_owned(),
        }),
        (Some(kind), false) => Ok(kind),
        (None, false) if config_is_url => Ok(TargetKind::Url),
        (None, false) => match crate::targets::detect_docker(DOCKER_PROBE_TIMEOUT).await {
            Ok(_) => Ok(TargetKind::Container),
            Err(e) => {
                let first_line = e.to_string().lines().next().unwrap_or_default().to_owned();
                eprintln!(
                    "        Note no Docker engine answers ({first_line}); running the target as a local process (--target process)"
                );
                Ok(TargetKind::Process)
            }
        },
    }
}

/// `--out-dir` (relative to `cwd`), else `loadgate` in the package's target directory, else
/// `target/loadgate` under `cwd`; `sub` is appended to the default (not to `--out-dir`).
pub(crate) fn out_dir(
    given: Option<&Path>,
    config: &LoadgateConfig,
    cwd: &Path,
    sub: Option<&str>,
) -> PathBuf {
    let default = match &config.source.package {
        Some(package) => package.target_directory.join("loadgate"),
        None => cwd.join("target/loadgate"),
    };
    match (given, sub) {
        (Some(dir), _) => cwd.join(dir),
        (None, Some(sub)) => default.join(sub),
        (None, None) => default,
    }
}

pub(super) fn write_result(path: &Path, result: &RunResult) -> Result<(), RunError> {
    write_json_atomic(path, result).map_err(|source| RunError::Write {
        path: path.to_owned(),
        source,
    })
}

/// The summary printed at the end of a run: the ramp's step table and sentence, the soak's
/// percentiles per operation (from the intended send time) and its slopes, and the generator's health.
pub fn render_summary(result: &RunResult, outcome: &PlanOutcome) -> String {
    let ms = crate::config::format_millis;
    let mut out = String::new();
    out.push('\n');
    out.push_str(&render_step_table(&outcome.ramp));
    out.push_str(&format!("ramp: {}\n", outcome.ramp.sentence));
    if let Some(h) = &result.headroom {
        out.push_str(&crate::report::headroom_lines(h));
    }
    if let Some(spike) = result.spike.as_ref().or(outcome.spike.as_ref()) {
        out.push_str(&format!(
            "\nspike {}\n",
            crate::report::spike_sentence(spike)
        ));
        if let Some(line) = crate::report::recovery_check_line(spike) {
            out.push_str(&format!("{line}\n"));
        }
    } else if let Some(reason) = result.spike_skipped.as_ref() {
        out.push_str(&format!("\nspike skipped: {reason}\n"));
    }
    if let Some(stress) = result.stress.as_ref().or(outcome.stress.as_ref()) {
        out.push_str(&format!(
            "\nstress {}: {}\n",
            crate::report::stress_word(stress),
            crate::report::stress_sentence(stress)
        ));
        let table = crate::report::Table::new(&[
            "metric",
            "before",
            "after",
            "change",
            "interval",
            "threshold",
            "outcome",
        ])
        .rows(crate::report::stress_rows(stress));
        out.push_str(&table.terminal());
        if let Some(check) = &stress.check {
            out.push_str(&format!("{}\n", crate::report::check_line(check)));
        }
    } else if let Some(reason) = result.stress_skipped.as_ref() {
        out.push_str(&format!("\nstress skipped: {reason}\n"));
    }
    // The recorded soak, which carries the leak finding (the plan's outcome leaves it to compare).
    if let Some(soak) = result.soak.as_ref().or(outcome.soak.as_ref()) {
        out.push_str(&format!(
            "\nsoak at {:.0}% of {} capacity: offered {} req/s, achieved {} req/s over {} windows\n",
            soak.percent_of_capacity(),
            match soak.capacity_from {
                CapacitySource::Baseline => "the baseline's",
                CapacitySource::ThisRun => "this run's",
            },
            format_rate(soak.offered_rate_per_sec),
            format_rate(soak.achieved_rate_per_sec),
            soak.windows
        ));
        if let Some(lowered) = &soak.lowered {
            out.push_str(&format!("soak load {lowered}\n"));
        }
        if let Some(phase) = result
            .phases
            .iter()
            .find(|p| p.measurement.name == soak.phase)
        {
            let summary = phase.measurement.summary();
            let rows: Vec<Vec<String>> = summary
                .operations
                .iter()
                .chain(std::iter::once(&summary.total))
                .map(|op| {
                    vec![
                        op.name.clone(),
                        op.requests.to_string(),
                        op.errors.to_string(),
                        ms(op.p50),
                        ms(op.p90),
                        ms(op.p99),
                        ms(op.p999),
                        ms(op.max),
                    ]
                })
                .collect();
            out.push_str(&table(
                &[
                    "operation",
                    "requests",
                    "errors",
                    "p50 ms",
                    "p90 ms",
                    "p99 ms",
                    "p99.9 ms",
                    "max ms",
                ],
                &rows,
            ));
            out.push_str(&format!(
                "goodput {} of {}; pacing lag p99 {} ms, max {} ms; dropped {} ({:.2}%){}\n",
                summary.total.goodput,
                summary.total.requests,
                ms(summary.lag_p99),
                ms(summary.lag_max),
                summary.dropped,
                summary.drop_rate * 100.0,
                summary
                    .cpu_us_per_request
                    .map(|us| format!("; generator {us:.1} µs CPU per request"))
                    .unwrap_or_default()
            ));
        }
        out.push_str("slopes over the soak:\n");
        for (name, value, fmt) in soak.slopes.named() {
            out.push_str(&match value {
                Some(v) => format!(
                    "  {name:<8} {} per s (95% interval {} to {})\n",
                    fmt(v.estimate),
                    fmt(v.low),
                    fmt(v.high)
                ),
                None => format!("  {name:<8} too few points for a slope\n"),
            });
        }
        out.push_str(&gate::render_leak(
            result.verdict.as_ref(),
            soak.leak.as_deref(),
        ));
    } else if let Some(reason) = &outcome.soak_skipped {
        out.push_str(&format!("soak skipped: {reason}\n"));
    }
    for line in crate::result::retry_statements(result) {
        out.push_str(&format!("retries: {line}\n"));
    }
    for audit in &result.audits {
        out.push_str(&format!("{}\n", audit.statement()));
    }
    for stub in &result.stubs {
        out.push_str(&format!("{}\n", crate::report::stub_line(stub)));
    }
    for line in crate::report::replica_lines(result) {
        out.push_str(&format!("{line}\n"));
    }
    for fault in &result.faults {
        out.push_str(&format!("{}\n", fault.statement()));
    }
    out
}

pub(super) fn kind_name(kind: TargetKind) -> &'static str {
    kind.name()
}

fn cpuset_string(cores: &[usize]) -> String {
    cores
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn new_run_id() -> String {
    format!("{:x}-{:x}", crate::result::unix_ms(), std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &str) -> crate::config::LoadgateConfig {
        crate::config::parse_config_str(
            &format!("{}\n{extra}", crate::config::MINIMAL_CONFIG),
            Path::new("l.toml"),
            None,
            "default",
        )
        .expect("config")
    }

    /// A container target that the config publishes (or that `auto` publishes, an image loadgate
    /// did not build) is warned of before it boots beside dependencies on the host's loopback; a
    /// `url` dependency, or none, is no reason to warn.
    #[test]
    fn a_published_target_beside_local_dependencies_is_warned_of() {
        let target = |extra: &str| config(&format!("[target]\n{extra}\n")).target;
        assert!(!published_by_config(&target("bin = \"app\"")));
        assert!(published_by_config(&target("image = \"app:1\"")));
        assert!(!published_by_config(&target(
            "image = \"app:1\"\nnetwork = \"host\""
        )));
        assert!(published_by_config(&target(
            "bin = \"app\"\nnetwork = \"published\""
        )));
        let dependency = |kind| crate::targets::DependencyInfo::at("db", kind, "127.0.0.1", 5432);
        use crate::config::DependencyKind;
        let warning = published_beside_dependencies(true, &[dependency(DependencyKind::Container)])
            .expect("a warning");
        assert!(
            warning.contains("cannot reach `db`") && warning.contains("network = \"host\""),
            "{warning}"
        );
        assert_eq!(
            published_beside_dependencies(false, &[dependency(DependencyKind::Process)]),
            None
        );
        assert_eq!(
            published_beside_dependencies(true, &[dependency(DependencyKind::Url)]),
            None
        );
        assert_eq!(published_beside_dependencies(true, &[]), None);
    }

    /// A check a run could not judge is refused before anything boots, never left to pass.
    #[test]
    fn checks_a_run_could_not_judge_are_refused_before_it_boots() {
        let refused = |extra: &str, paired: bool, shard: bool| match refuse_unjudged_checks(
            &config(extra),
            paired,
            shard,
        ) {
            Err(RunError::Usage { message }) => Some(message),
            Err(other) => panic!("not a usage error: {other:?}"),
            Ok(()) => None,
        };
        // The config asks for stored runs; `--mode paired` on the command line still pairs.
        let audit = "[paired]\nmode = \"stored\"\n[[audit]]\nname = \"ledger\"\n\
                     request = { path = \"/ledger\" }\n\
                     check = [{ pointer = \"/duplicates\", equals = 0 }]\n";
        let recovery = "[slo]\np99 = \"200ms\"\nrecovery = \"10s\"\n";
        let spike = "[spike]\nto = \"300%\"\nfor = \"5s\"\n";

        // Nothing to refuse: no such check, or a stored run that judges them.
        assert_eq!(refused("", true, true), None);
        assert_eq!(refused(audit, false, false), None);
        assert_eq!(refused(&format!("{recovery}{spike}"), false, false), None);

        let message = refused(audit, true, false).expect("paired audit");
        assert!(message.contains("a paired run boots two"), "{message}");
        assert!(
            message.contains("\nhint: give `--mode stored`"),
            "{message}"
        );
        let message = refused(audit, false, true).expect("sharded audit");
        assert!(message.contains("a shard sends a slice"), "{message}");
        let message = refused(recovery, false, false).expect("recovery without a spike");
        assert!(message.contains("declares no `[spike]`"), "{message}");
        let message = refused(&format!("{recovery}{spike}"), true, false).expect("paired");
        assert!(message.contains("a paired run has neither"), "{message}");
        // A stress is judged in a stored run of the whole load only; it is an event `[slo]
        // recovery` can follow.
        let stress = "[stress]\nto = \"200%\"\nfor = \"5s\"\n";
        assert_eq!(refused(stress, false, false), None);
        assert_eq!(refused(&format!("{recovery}{stress}"), false, false), None);
        let message = refused(stress, true, false).expect("paired stress");
        assert!(message.contains("a paired run boots two"), "{message}");
        let message = refused(stress, false, true).expect("sharded stress");
        assert!(message.contains("a shard's are a slice"), "{message}");
        // Every reason at once.
        let message = refused(&format!("{audit}{recovery}"), true, true).expect("all");
        assert_eq!(message.matches("; ").count(), 3, "{message}");
        // Data and teardown steps would run once per shard against the one service.
        let data = "[data]\nsteps = [{ name = \"s\", command = \"true\" }]\n";
        let teardown = "[teardown]\nsteps = [{ name = \"t\", command = \"true\" }]\n";
        assert_eq!(refused(data, false, false), None);
        assert_eq!(refused(data, true, false), None);
        for extra in [data, teardown] {
            let message = refused(extra, false, true).expect("sharded data");
            assert!(message.contains("once in every shard"), "{message}");
        }
    }

    #[test]
    fn cpusets_are_comma_lists() {
        assert_eq!(cpuset_string(&[1]), "1");
        assert_eq!(cpuset_string(&[1, 2, 3]), "1,2,3");
    }

    #[test]
    fn a_generator_on_the_targets_cores_is_warned_of() {
        let two_loops = crate::engine::place(&[0, 1], 2).expect("fits");
        insta::assert_snapshot!(
            shared_cores_warning(&two_loops).expect("shared"),
            @"the generator shares the target's cores (2 loops on cores 0, 1, and the target is given every core): each takes time from the other, and the latencies include it; lower [generator] threads to leave the target a core of its own"
        );
        let one_core = crate::engine::place(&[0], 1).expect("fits");
        assert!(shared_cores_warning(&one_core).is_some());
        let own_core = crate::engine::place(&[0, 1], 1).expect("fits");
        assert_eq!(shared_cores_warning(&own_core), None);
    }
}
