//! `cargo loadgate run` in paired mode (issue 13): the base is built (or taken from a store, or
//! named with `--base-binary`, `--base-image`, `--base-url`), base and head are booted side by
//! side with identical limits on the same cores, their ramps alternate step by step, then the
//! load alternates between them in blocks of the same schedule slice, and the per-pair
//! differences decide the verdict. Both targets and the base's worktree are removed on every
//! path.

use super::boot_log::BootReporter;
use super::progress::{self, OutputMode, RunDisplay};
use super::run::{GeneratorRunner, RunError, calibrate, kind_name, write_result};
use super::{ExitCode, RunOpts, gate};
use crate::baseline::{StoreSpec, find_build, short};
use crate::compare::{CompareOptions, PairedInputs, compare_paired};
use crate::config::{ComparisonMode, LoadgateConfig, TargetKind, TargetSource};
use crate::image::BuildMode;
use crate::plan::paired_run::{BlockEvent, BlockPlan, run_blocks, run_paired_ramps};
use crate::plan::pairing::{Side, order_letters, pairing_order};
use crate::plan::{PlanError, PlanEvent, PlanOutcome, RampOutcome};
use crate::result::{
    BaseSource, BlockRecord, ConfigHashes, GitInfo, MeasurementMode, PairedBase, PairedDesign,
    PairedRecord, PhaseRecord, RunResult, RunStatus, pair_records,
};
use crate::stats::sequential::SequentialDesign;
use crate::targets::base::{
    BaseLock, BaseLockOutcome, BaseWorktree, ResolvedBase, build_base, resolve_base,
};
use crate::targets::{BootRequest, RunningTarget};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The base of a paired run, ready to boot.
#[derive(Clone, Debug)]
pub(super) struct PreparedBase {
    /// How the base's boot request differs from the head's.
    pub what: BaseBoot,
    /// Where it came from.
    pub source: BaseSource,
    /// The merge-base, when the base is one.
    pub resolved: Option<ResolvedBase>,
}

/// How the base boots.
#[derive(Clone, Debug)]
pub(super) enum BaseBoot {
    /// The head's `bin` target, from this binary.
    Binary(PathBuf),
    /// This local image instead of the head's.
    Image(String),
    /// The service at this URL.
    Url(String),
    /// The head's own build or image, booted a second time.
    SameAsHead,
}

impl PreparedBase {
    /// For people: what is compared with what.
    pub fn statement(&self) -> String {
        match (&self.resolved, &self.what) {
            (Some(r), _) => format!("{} ({})", r.statement(), self.source.describe()),
            (None, BaseBoot::Binary(p)) => format!("base: {} (--base-binary)", p.display()),
            (None, BaseBoot::Image(i)) => format!("base: image {i} (--base-image)"),
            (None, BaseBoot::Url(u)) => format!("base: {u} (--base-url)"),
            (None, BaseBoot::SameAsHead) => {
                "base: the head's own build, booted again (--base-same-as-head: an A/A run)"
                    .to_owned()
            }
        }
    }
}

/// Decides the mode and prepares the base: `Ok(None)` runs the stored mode (with the reason
/// printed when `auto` chose it), `Ok(Some)` the paired one.
pub(super) async fn prepare(
    opts: &RunOpts,
    config: &LoadgateConfig,
    kind: TargetKind,
    repo: &Path,
    out_dir: &Path,
) -> Result<Option<PreparedBase>, RunError> {
    let mode = opts.comparison_mode(&config.paired);
    if mode == ComparisonMode::Stored {
        return Ok(None);
    }
    let paired = mode == ComparisonMode::Paired;
    if opts.base_same_as_head {
        if kind == TargetKind::Url && opts.base_url.is_none() {
            return Err(RunError::Usage {
                message: "--base-same-as-head cannot boot a url target a second time\nhint: \
                          start a second copy and give it with --base-url"
                    .to_owned(),
            });
        }
        return Ok(Some(PreparedBase {
            what: BaseBoot::SameAsHead,
            source: BaseSource::SameAsHead,
            resolved: None,
        }));
    }
    let stored = |why: String| -> Result<Option<PreparedBase>, RunError> {
        if paired {
            Err(RunError::Usage { message: why })
        } else {
            eprintln!(
                "        Mode stored (auto: {})",
                why.lines().next().unwrap_or("")
            );
            Ok(None)
        }
    };
    // A base flag that does not fit the target would silently pair with another base.
    let is_url =
        matches!(config.target.source, TargetSource::Url { .. }) || kind == TargetKind::Url;
    let is_image = matches!(
        config.target.source,
        TargetSource::Image { .. } | TargetSource::Dockerfile { .. }
    );
    let misfit = [
        (
            "--base-url",
            opts.base_url.is_some(),
            is_url,
            "a `url` target",
        ),
        (
            "--base-image",
            opts.base_image.is_some(),
            is_image && !is_url,
            "an `image` or `dockerfile` target",
        ),
        (
            "--base-binary",
            opts.base_binary.is_some(),
            !is_url && !is_image,
            "a `bin` target",
        ),
    ]
    .into_iter()
    .find(|(_, given, fits, _)| *given && !*fits);
    if let Some((flag, _, _, fits)) = misfit {
        return Err(RunError::Usage {
            message: format!(
                "{flag} names the base of {fits}, and this run's target is not one\nhint: give the \
                 base flag of the target's kind (--base-url, --base-image or --base-binary)"
            ),
        });
    }
    match (&config.target.source, kind) {
        (TargetSource::Url { .. }, _) | (_, TargetKind::Url) => match &opts.base_url {
            Some(url) => Ok(Some(PreparedBase {
                what: BaseBoot::Url(url.clone()),
                source: BaseSource::GivenUrl,
                resolved: None,
            })),
            None => stored(
                "a url target's base is another running service: no --base-url was given\nhint: \
                 give --base-url http://127.0.0.1:PORT, or --mode stored"
                    .to_owned(),
            ),
        },
        (TargetSource::Image { .. } | TargetSource::Dockerfile { .. }, _) => {
            match &opts.base_image {
                Some(image) => Ok(Some(PreparedBase {
                    what: BaseBoot::Image(image.clone()),
                    source: BaseSource::GivenImage,
                    resolved: None,
                })),
                None => stored(
                    "an image target's base is another image: no --base-image was given\nhint: \
                     give --base-image IMAGE (a local image of the base), or --mode stored"
                        .to_owned(),
                ),
            }
        }
        (TargetSource::Bin { name: bin }, _) => {
            if let Some(binary) = &opts.base_binary {
                return Ok(Some(PreparedBase {
                    what: BaseBoot::Binary(binary.clone()),
                    source: BaseSource::GivenBinary,
                    resolved: None,
                }));
            }
            let Some(package) = config.source.package.as_ref() else {
                return stored(
                    "the base of a `bin` target is built from its package, and the config is not \
                     in one\nhint: give --base-binary PATH, or --mode stored"
                        .to_owned(),
                );
            };
            if GitInfo::of(repo).is_none() {
                return stored(
                    "the base is built from the merge-base, and the package is not in a git \
                     repository with a commit\nhint: give --base-binary PATH, or --mode stored"
                        .to_owned(),
                );
            }
            let resolved = match resolve_base(repo, opts.base_ref.as_deref()) {
                Ok(resolved) => resolved,
                // `auto` with no base ref asked for and none to default to: nothing to pair with.
                Err(e @ crate::targets::base::BaseError::NoBaseRef { .. })
                    if !paired && opts.base_ref.is_none() =>
                {
                    return stored(e.to_string());
                }
                Err(e) => return Err(e.into()),
            };
            if !paired && resolved.commit == resolved.head && !resolved.head_dirty {
                return stored(format!(
                    "HEAD {} is its own merge-base with {}: nothing to pair it with",
                    short(&resolved.head),
                    resolved.base_ref
                ));
            }
            eprintln!("      Paired {}", resolved.statement());
            // A directory store may keep the base's build (`--save-baseline` with `dir:`).
            if let Ok(StoreSpec::Dir { path }) = StoreSpec::parse(&opts.baseline_store)
                && let Ok(Some(build)) = find_build(&path, &resolved.commit, bin)
            {
                eprintln!(
                    "        Base {} from the stored build in {}",
                    short(&resolved.commit),
                    path.display()
                );
                return Ok(Some(PreparedBase {
                    what: BaseBoot::Binary(build.path),
                    source: BaseSource::StoredBuild,
                    resolved: Some(resolved),
                }));
            }
            let mode = match kind {
                TargetKind::Container => BuildMode::Static {
                    triple: crate::image::host_triple().await?,
                },
                _ => BuildMode::Host,
            };
            let reporter = BootReporter::new(&out_dir.join("base"));
            let started = Instant::now();
            // Held until the worktree is removed: another run of this repository waits here,
            // and takes the base if that run built this very one meanwhile.
            let waiting = |path: &Path| {
                eprintln!(
                    "     Waiting for another run's base build to end (lock {})",
                    path.display()
                );
            };
            let lock = match BaseLock::acquire_for(
                &package.target_directory,
                &resolved.commit,
                &package.name,
                bin,
                &mode,
                waiting,
            )
            .await?
            {
                BaseLockOutcome::Build(lock) => lock,
                BaseLockOutcome::BuiltMeanwhile(binary) => {
                    // No build here: an earlier run's build log must not stand beside this result.
                    let _ =
                        std::fs::remove_file(out_dir.join("base").join(super::boot_log::BUILD_LOG));
                    eprintln!(
                        "        Base {} built by the run this one waited for: {}",
                        short(&resolved.commit),
                        binary.display()
                    );
                    return Ok(Some(PreparedBase {
                        what: BaseBoot::Binary(binary),
                        source: BaseSource::Built,
                        resolved: Some(resolved),
                    }));
                }
            };
            let worktree =
                BaseWorktree::checkout(repo, &package.target_directory, &resolved.commit)?;
            let built = build_base(&worktree, package, bin, &mode, &|e| reporter.event(e)).await;
            // The worktree is only needed for the build; the binary was copied out of it.
            let removed = worktree.remove();
            drop(lock);
            let build = built?;
            removed?;
            eprintln!(
                "        Base {} built in {:.0} s",
                short(&resolved.commit),
                started.elapsed().as_secs_f64()
            );
            Ok(Some(PreparedBase {
                what: BaseBoot::Binary(build.binary),
                source: BaseSource::Built,
                resolved: Some(resolved),
            }))
        }
    }
}

/// The `[data]` SQL files whose content at the base commit differs from the head's (the work
/// tree), as git names them. A paired run loads the one database both sides read with the head's
/// steps, so a base whose seed differs is measured on the head's data. Empty when nothing
/// differs, the base is no commit (`--base-binary`, `--base-same-as-head`, …) or git cannot tell.
pub(super) fn data_files_changed_since(
    config: &LoadgateConfig,
    repo: &Path,
    cwd: &Path,
    base: &PreparedBase,
) -> Vec<String> {
    let Some(resolved) = &base.resolved else {
        return Vec::new();
    };
    let files: Vec<String> = config
        .data
        .steps
        .iter()
        .flat_map(|step| match &step.action {
            crate::config::DataAction::Sql { files, .. } => files
                .iter()
                .map(|f| cwd.join(&f.path).to_string_lossy().into_owned())
                .collect(),
            crate::config::DataAction::Command { .. } => Vec::new(),
        })
        .collect();
    if files.is_empty() {
        return Vec::new();
    }
    let git = crate::baseline::Git::new(repo);
    let listed = |command: &[&str]| {
        let mut args = command.to_vec();
        args.push("--");
        args.extend(files.iter().map(String::as_str));
        git.run(&args)
            .map(|out| out.lines().map(str::to_owned).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    // Changed since the base, and not in git at all (a new seed file the base never had).
    let mut changed = listed(&["diff", "--name-only", resolved.commit.as_str()]);
    changed.extend(listed(&["ls-files", "--others", "--exclude-standard"]));
    changed
}

/// The base's boot request: the head's, with the base's binary, image or URL, and the common
/// `--env` only (`--head-env` is the head's alone).
fn base_request(
    head: &BootRequest,
    head_info: &crate::targets::TargetInfo,
    base: &PreparedBase,
    env: &[(String, String)],
) -> BootRequest {
    let mut req = head.clone();
    req.run_id = format!("{}-base", head.run_id);
    req.extra_env = env.to_vec();
    match &base.what {
        BaseBoot::SameAsHead => match (&head_info.image, &head_info.binary) {
            (_, Some(binary)) => req.prebuilt = Some(binary.clone()),
            (Some(image), None) => {
                req.config.source = TargetSource::Image {
                    reference: image.id.clone(),
                }
            }
            (None, None) => {}
        },
        BaseBoot::Binary(path) => req.prebuilt = Some(path.clone()),
        BaseBoot::Image(image) => {
            req.config.source = TargetSource::Image {
                reference: image.clone(),
            }
        }
        BaseBoot::Url(url) => {
            req.kind = TargetKind::Url;
            req.url = Some(url.clone());
        }
    }
    req
}

/// Everything the paired run needs from the solo run's setup.
pub(super) struct PairedSetup<'a> {
    /// The command line.
    pub opts: &'a RunOpts,
    /// The resolved configuration.
    pub config: &'a LoadgateConfig,
    /// Where relative output paths start.
    pub cwd: &'a Path,
    /// Where the documents go.
    pub out_dir: &'a Path,
    /// The head's boot request, which the base's is made from.
    pub request: BootRequest,
    /// The head's document as written so far.
    pub head_result: RunResult,
    /// The repository, when the package is in one with a commit (for `--save-baseline`).
    pub repo: Option<PathBuf>,
}

/// Runs the paired mode from the booted head on; returns the exit code.
pub(super) async fn run_paired(
    setup: PairedSetup<'_>,
    base: PreparedBase,
    head: RunningTarget,
) -> Result<i32, RunError> {
    let PairedSetup {
        opts,
        config,
        cwd,
        out_dir,
        request,
        head_result: mut result,
        repo,
    } = setup;
    let result_path = out_dir.join("result.json");
    let base_path = out_dir.join("base-result.json");
    let reporter = BootReporter::new(&out_dir.join("base"));
    // The head's extra env is `--env` then `--head-env`, each with the dependencies' `{{…}}`
    // filled in (run.rs); the base takes the first part, filled in alike.
    let common_env = &request.extra_env[..opts.env.len().min(request.extra_env.len())];
    let base_req = base_request(&request, &head.info(), &base, common_env);
    result.mode = MeasurementMode::Paired;
    let base_target = match crate::targets::boot(base_req, &|e| reporter.event(e)).await {
        Ok(t) => t,
        Err(e) => {
            if let Ok(exit) = head.shutdown().await {
                result.target_exit = Some(exit);
            }
            result.status = RunStatus::TargetFailed;
            write_result(&result_path, &result)?;
            return Err(RunError::BaseFailed {
                message: format!("the base ({}) could not be booted: {e}", base.statement()),
                source: Box::new(e.into()),
            });
        }
    };
    eprintln!(
        "        Base {} at {}{}",
        kind_name(base_target.info().kind),
        base_target.info().base_url,
        base_target
            .info()
            .pid
            .map(|p| format!(" (pid {p})"))
            .unwrap_or_default()
    );
    // The intended changes of the commits between the base and the head (issue 18), as in a
    // stored comparison: known before the blocks, so that an adaptive look judges with them too.
    // A base given as a binary, image or URL has no commit and accepts none.
    let accepts = paired_accepts(
        repo.as_deref(),
        base.resolved.as_ref().map(|r| r.commit.as_str()),
        result.git.as_ref().map(|g| g.commit.as_str()),
        &config.accept,
    );
    let outcome = run_both(
        opts,
        config,
        out_dir,
        &base,
        &head,
        &base_target,
        &mut result,
        &accepts.accepts,
    )
    .await;
    let base_alive = base_target.check_alive().await;
    let head_alive = head.check_alive().await;
    let base_exit = base_target.shutdown().await;
    let head_exit = head.shutdown().await;
    if let Ok(exit) = head_exit {
        result.target_exit = Some(exit);
    }
    let mut outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            // What ran is kept; the document says the run did not finish.
            if result.status == RunStatus::Running {
                result.status = RunStatus::TargetFailed;
            }
            write_result(&result_path, &result)?;
            return Err(e);
        }
    };
    if let Ok(exit) = base_exit {
        outcome.base_result.target_exit = Some(exit);
    }
    if let Err(crash) = head_alive {
        result.status = RunStatus::TargetFailed;
        write_result(&result_path, &result)?;
        return Err(crash.into());
    }
    if let Err(crash) = base_alive {
        outcome.base_result.status = RunStatus::TargetFailed;
        write_result(&base_path, &outcome.base_result)?;
        return Err(RunError::BaseFailed {
            message: format!("the base ({}) failed during the run", base.statement()),
            source: Box::new(crash.into()),
        });
    }
    finish(opts, config, cwd, out_dir, result, outcome, &repo, accepts)
}

/// What both sides measured.
struct BothMeasured {
    /// The base's document.
    base_result: RunResult,
    /// The head's ramp, as the plan concluded it.
    head_ramp: PlanOutcome,
    /// What the comparison reads besides the documents.
    inputs: PairedInputs,
    /// The sequential design, with `[paired] adaptive`.
    adaptive: Option<SequentialDesign>,
}

/// Calibrates, runs both ramps in turn and then the blocks, writing both documents after every
/// phase; the targets are the caller's to stop.
#[expect(
    clippy::too_many_arguments,
    reason = "the paired run's parts, each its own; a struct would only rename them"
)]
async fn run_both(
    opts: &RunOpts,
    config: &LoadgateConfig,
    out_dir: &Path,
    base: &PreparedBase,
    head: &RunningTarget,
    base_target: &RunningTarget,
    result: &mut RunResult,
    accepts: &[crate::compare::Accept],
) -> Result<BothMeasured, RunError> {
    let result_path = out_dir.join("result.json");
    let base_path = out_dir.join("base-result.json");
    result.mode = MeasurementMode::Paired;
    let hashes = ConfigHashes::of(config, MeasurementMode::Paired);
    result.config_hash = hashes.current.clone();
    let mut base_result = result.clone();
    base_result.target = Some(base_target.info().clone());
    base_result.git = base.resolved.as_ref().map(|r| GitInfo {
        commit: r.commit.clone(),
        dirty: false,
    });
    base_result.paired = None;
    // The cores the head's run placed its generator and its target on (`[generator] threads`),
    // as recorded, so both sides calibrate where the solo run would.
    let generator_core = result.environment.generator_core;
    let target_cores = result
        .target
        .as_ref()
        .and_then(|t| t.cpuset.as_deref())
        .and_then(crate::targets::parse_cpuset);
    let server_core = super::run::calibration_server_core(target_cores.as_deref());
    result.calibration = calibrate(generator_core, server_core, None).await;
    base_result.calibration = result.calibration.clone();
    let statement = base.statement();
    result.paired = Some(PairedRecord {
        base: PairedBase {
            commit: base.resolved.as_ref().map(|r| r.commit.clone()),
            source: base.source,
            target: Some(base_target.info().clone()),
            statement: statement.clone(),
        },
        design: PairedDesign {
            pairs_planned: 0,
            block_s: config.paired.block.as_secs_f64(),
            warmup_s: config.paired.warmup.as_secs_f64(),
            sessions_per_sec: 0.0,
            at: config.paired.at,
            base_capacity_sessions_per_sec: 0.0,
            capacity_note: None,
            adaptive: config.paired.adaptive,
            looks: Vec::new(),
            stopped_early: None,
            order: String::new(),
        },
        base_ramp: None,
        blocks: Vec::new(),
        pairs: Vec::new(),
    });
    write_result(&result_path, result)?;

    let head_sampler = head.start_sampler(super::run::SAMPLE_EVERY);
    let base_sampler = base_target.start_sampler(super::run::SAMPLE_EVERY);
    let started = Instant::now();
    let display = RunDisplay::new(
        OutputMode::stderr(),
        2 * config.ramp.steps.len(),
        2 * config.ramp.refine,
    );
    let requests_per_session =
        crate::workload::analyze(&config.workload).map_or(1.0, |a| a.requests_per_session);
    let mut head_runner = GeneratorRunner {
        targets: vec![head.base_url().to_owned()],
        config,
        core: generator_core,
        sampler: &head_sampler,
        sampler_started: started,
        display: &display,
        announce: Some(requests_per_session),
        shard: None,
        replicas: None,
    };
    let mut base_runner = GeneratorRunner {
        targets: vec![base_target.base_url().to_owned()],
        config,
        core: generator_core,
        sampler: &base_sampler,
        sampler_started: started,
        display: &display,
        announce: Some(requests_per_session),
        shard: None,
        replicas: None,
    };
    let first = crate::plan::pairing::pairing_order(
        1,
        config.workload.seed,
        config.paired.warmup,
        config.paired.block,
    )
    .first()
    .map_or(Side::Base, |b| b.side);
    let mut write_error: Option<RunError> = None;
    let ramps = {
        let sides = RefCell::new((&mut base_result, &mut *result));
        let mut observe = |side: Side, event: PlanEvent| {
            let mut sides = sides.borrow_mut();
            let (b, h) = &mut *sides;
            let (r, path, name): (&mut RunResult, &Path, &str) = match side {
                Side::Base => (b, &base_path, "base"),
                Side::Head => (h, &result_path, "head"),
            };
            let mut announce = None;
            match event {
                // The runner announces it once its turn comes.
                PlanEvent::PhaseStarting { .. } => {}
                PlanEvent::StepDone {
                    record,
                    measurement,
                    schedule_hash,
                    ramp,
                } => {
                    announce = Some(format!(
                        "        {name} {}",
                        progress::step_line(&record, display.colour())
                    ));
                    r.ramp = Some(*ramp);
                    r.phases.push(PhaseRecord {
                        schedule_hash,
                        measurement: *measurement,
                    });
                }
                PlanEvent::RampDone { outcome } => {
                    announce = Some(format!("        Ramp ({name}) {}", outcome.sentence));
                    r.ramp = Some(*outcome);
                }
                PlanEvent::SoakDone { .. } => {}
                PlanEvent::SoakSkipped { reason } => r.soak_skipped = Some(reason),
                // A paired run's ramps do not soak, so they do not spike either.
                PlanEvent::SpikeDone { .. } => {}
                PlanEvent::SpikeSkipped { reason } => r.spike_skipped = Some(reason),
                // Nor do they stress (a paired run with a `[stress]` is refused before it boots).
                PlanEvent::StressDone { .. } => {}
                PlanEvent::StressSkipped { reason } => r.stress_skipped = Some(reason),
            }
            if let Err(e) = write_result(path, r) {
                write_error.get_or_insert(e);
            }
            if let Some(line) = announce {
                display.line(&line);
            }
        };
        run_paired_ramps(
            config,
            &mut base_runner,
            &mut head_runner,
            first,
            opts.keep_going,
            &mut observe,
        )
        .await
    };
    if let Some(e) = write_error.take() {
        return Err(e);
    }
    eprintln!("        Ramps ran in turns {}", ramps.order);
    let unusable = |e: crate::workload::ModelError| RunError::Usage {
        message: format!("the workload model is unusable: {e}"),
    };
    let base_ramp = match ramps.base {
        Ok(o) => o,
        Err(PlanError::Model(e)) => return Err(unusable(e)),
        Err(PlanError::Phase { source, .. }) => {
            return Err(RunError::BaseFailed {
                message: format!("the base ({statement}) could not run its ramp"),
                source: Box::new(source),
            });
        }
    };
    let head_ramp = match ramps.head {
        Ok(o) => o,
        Err(PlanError::Model(e)) => return Err(unusable(e)),
        Err(PlanError::Phase {
            partial, source, ..
        }) => {
            result.ramp = Some(partial.ramp);
            result.status = RunStatus::TargetFailed;
            write_result(&result_path, result)?;
            return Err(source);
        }
    };
    result.ramp = Some(head_ramp.ramp.clone());
    base_result.ramp = Some(base_ramp.ramp.clone());
    // Both sides ran the same workload: the same production load.
    let production = crate::compare::ProductionLoad::of(&config.workload);
    result.headroom = Some(crate::compare::headroom(
        &head_ramp.ramp,
        &production,
        config.slo.headroom,
    ));
    base_result.headroom = Some(crate::compare::headroom(
        &base_ramp.ramp,
        &production,
        config.slo.headroom,
    ));
    result.valid = Some(head_ramp.valid);
    base_result.valid = Some(base_ramp.valid);

    // The blocks' load: `[paired] at` of the base's capacity (of the highest step it held below
    // a generator limit).
    let (capacity, note) = blocks_capacity(&base_ramp.ramp);
    let paired_cfg = &config.paired;
    let one_pair = 2 * (paired_cfg.block + paired_cfg.warmup);
    let pairs = match paired_cfg.budget {
        Some(budget) => paired_cfg
            .pairs
            .min((budget.as_secs_f64() / one_pair.as_secs_f64()).floor() as usize),
        None => paired_cfg.pairs,
    };
    // Holm's first step tests a metric at α/m: with fewer pairs than the exact test needs for
    // that, no latency can be shown to regress, so the run says so before it spends the time.
    let family = super::gate::primary_family(config);
    let alpha_each = crate::compare::DEFAULT_ALPHA / family as f64;
    let needed = crate::stats::paired::min_pairs(alpha_each);
    if pairs < needed {
        eprintln!(
            "     Warning {pairs} pair(s) cannot show a regression of any of the {family} primary \
             metrics at α = {} (the exact test needs {needed}); raise [paired] pairs or budget",
            crate::compare::DEFAULT_ALPHA
        );
    }
    // The adaptive design: each primary metric's repeated intervals at its share α/m of α (a
    // Pocock boundary), looked at every few pairs from where the exact test can decide.
    let adaptive = if paired_cfg.adaptive {
        let every = (needed / 2).max(1);
        match SequentialDesign::new(every, pairs, alpha_each) {
            Ok(design) => Some(design),
            Err(e) => {
                eprintln!(
                    "     Warning [paired] adaptive: no sequential design for {pairs} pair(s) ({e}); \
                     the blocks run every pair"
                );
                None
            }
        }
    } else {
        None
    };
    let blocks = pairing_order(
        pairs,
        config.workload.seed,
        paired_cfg.warmup,
        paired_cfg.block,
    );
    {
        let record = result.paired.as_mut().expect("set above");
        record.base_ramp = Some(base_ramp.ramp.clone());
        record.design.pairs_planned = pairs;
        record.design.base_capacity_sessions_per_sec = capacity.unwrap_or(0.0);
        record.design.sessions_per_sec = capacity.map_or(0.0, |c| c * paired_cfg.at);
        record.design.capacity_note = note.clone();
        record.design.adaptive = adaptive.is_some();
        record.design.looks = adaptive
            .as_ref()
            .map(|d| d.looks().to_vec())
            .unwrap_or_default();
    }
    write_result(&result_path, result)?;
    let blocks_started = started.elapsed().as_secs_f64();
    let Some(capacity) = capacity else {
        let why = note.unwrap_or_else(|| "the base held no step".to_owned());
        result
            .paired
            .as_mut()
            .expect("set above")
            .design
            .stopped_early = Some(format!("no blocks: {why}"));
        display.line(&format!("        Blocks skipped: {why}"));
        return Ok(BothMeasured {
            base_result,
            head_ramp,
            inputs: PairedInputs {
                gated_operations: config.gated_operations(),
                ..PairedInputs::default()
            },
            adaptive,
        });
    };
    let rate = capacity * paired_cfg.at;
    display.line(&format!(
        "        Blocks {pairs} pairs of {} + {} warm-up at {rate:.3} sessions/s ({:.0}% of the base's capacity): {}",
        crate::config::format_duration(paired_cfg.block),
        crate::config::format_duration(paired_cfg.warmup),
        paired_cfg.at * 100.0,
        order_letters(&blocks)
    ));
    let plan = BlockPlan {
        blocks,
        sessions_per_sec: rate,
        // After every session either ramp numbered.
        first_session: 1 << 40,
    };
    let gated_ops = config.gated_operations();
    let mut write_error: Option<RunError> = None;
    let mut looked: Option<String> = None;
    let blocks = {
        let sides = RefCell::new((&mut base_result, &mut *result));
        let mut observe = |event: BlockEvent<'_>| match event {
            // The runner announces it.
            BlockEvent::Starting { .. } => {}
            BlockEvent::Done {
                record,
                measurement,
            } => {
                let mut sides = sides.borrow_mut();
                let (b, h) = &mut *sides;
                let phase = PhaseRecord {
                    schedule_hash: record.schedule_hash.clone(),
                    measurement: measurement.clone(),
                };
                match record.side {
                    Side::Base => b.phases.push(phase),
                    Side::Head => h.phases.push(phase),
                }
                let paired = h.paired.as_mut().expect("set above");
                paired.blocks.push(record.clone());
                paired.pairs = pair_records(&paired.blocks);
                display.line(&format!("        {}", block_line(record)));
                for (r, p) in [(&**b, &base_path), (&**h, &result_path)] {
                    if let Err(e) = write_result(p, r) {
                        write_error.get_or_insert(e);
                    }
                }
            }
        };
        let mut stop = |done: &[BlockRecord]| -> bool {
            let Some(design) = &adaptive else {
                return false;
            };
            let pairs_done = done.len() / 2;
            if !design.looks().contains(&pairs_done) {
                return false;
            }
            let sides = sides.borrow();
            let (b, h) = &*sides;
            let (_, verdict) = compare_paired(
                b,
                h,
                &config.gate,
                &PairedInputs {
                    gated_operations: gated_ops.clone(),
                    ..PairedInputs::default()
                },
                &CompareOptions {
                    alpha: design.nominal_alpha(),
                    accepts: accepts.to_vec(),
                    ..CompareOptions::default()
                },
            );
            let decided = matches!(
                verdict.outcome,
                crate::result::VerdictOutcome::Pass | crate::result::VerdictOutcome::Regression
            );
            if decided {
                looked = Some(format!(
                    "the verdict decided at the look after {pairs_done} pairs"
                ));
            }
            decided
        };
        run_blocks(
            config,
            &plan,
            &mut base_runner,
            &mut head_runner,
            &mut observe,
            &mut stop,
        )
        .await
    };
    display.clear();
    if let Some(e) = write_error {
        return Err(e);
    }
    let blocks_ended = started.elapsed().as_secs_f64();
    let rss_of = |samples: Vec<crate::targets::ResourceSample>| -> Vec<(f64, f64)> {
        samples
            .into_iter()
            .filter(|s| s.elapsed_s >= blocks_started && s.elapsed_s <= blocks_ended)
            .map(|s| (s.elapsed_s, s.rss_bytes as f64))
            .collect()
    };
    let head_samples = head_sampler.stop().await;
    let base_samples = base_sampler.stop().await;
    let inputs = PairedInputs {
        gated_operations: gated_ops,
        base_rss: rss_of(base_samples.clone()),
        head_rss: rss_of(head_samples.clone()),
    };
    result.resources = head_samples;
    base_result.resources = base_samples;
    match blocks {
        Ok(_) => {}
        Err(e) => {
            let failed_side = e.side;
            let source = e.source;
            return match failed_side {
                Side::Head => {
                    result.status = RunStatus::TargetFailed;
                    write_result(&result_path, result)?;
                    Err(source)
                }
                Side::Base => Err(RunError::BaseFailed {
                    message: format!("the base ({statement}) could not run block `{}`", e.phase),
                    source: Box::new(source),
                }),
            };
        }
    }
    if let Some(record) = result.paired.as_mut() {
        record.design.stopped_early = looked;
        // The blocks that ran: all of the plan's, or its first ones when the adaptive design
        // stopped early.
        let ran = record.blocks.len().min(plan.blocks.len());
        record.design.order = order_letters(&plan.blocks[..ran]);
    }
    result.calibration = calibrate(generator_core, server_core, result.calibration.take()).await;
    Ok(BothMeasured {
        base_result,
        head_ramp,
        inputs,
        adaptive,
    })
}

/// The capacity the blocks' load is a share of: the base's knee, or the highest step it held
/// below its generator's limit; `None` with the reason when it held nothing.
fn blocks_capacity(ramp: &RampOutcome) -> (Option<f64>, Option<String>) {
    match (ramp.knee_sessions_per_sec, &ramp.generator_limit) {
        (Some(k), Some(limit)) => (
            Some(k),
            Some(format!(
                "the base's generator reached its limit at `{}`: the highest step it held below \
                 it ({k:.3} sessions/s) stands for its capacity",
                limit.phase
            )),
        ),
        (Some(k), None) => (Some(k), None),
        (None, _) => (
            None,
            Some("the base's ramp held no step: no load to pair at".to_owned()),
        ),
    }
}

/// One block's line: `pair-3-head   p50 1.02 ms  p99 3.10 ms  errors 0.00%`.
fn block_line(record: &BlockRecord) -> String {
    let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3} ms"));
    let mut line = format!(
        "{:<14} p50 {:>10}  p99 {:>10}  errors {:.2}%",
        record.phase,
        ms(record.total.p50_ms),
        ms(record.total.p99_ms),
        record.total.error_rate.unwrap_or(0.0) * 100.0
    );
    if !record.valid {
        line.push_str(&format!(
            "  (generator could not keep its schedule: {})",
            record.invalid_reasons.join("; ")
        ));
    }
    if let Some(stopped) = &record.stopped {
        line.push_str(&format!("  (stopped: {stopped})"));
    }
    line
}

/// The accepts of the commits reachable from `head` and not from `base` in `repo`
/// ([`gate::head_accepts`]); none without a repository or a base commit, and a warning when the
/// commits cannot be read.
fn paired_accepts(
    repo: Option<&Path>,
    base: Option<&str>,
    head: Option<&str>,
    entries: &[crate::config::AcceptConfig],
) -> gate::HeadAccepts {
    let (Some(repo), Some(base), Some(head)) = (repo, base, head) else {
        return gate::HeadAccepts::default();
    };
    gate::head_accepts(repo, base, head, entries).unwrap_or_else(|e| gate::HeadAccepts {
        accepts: Vec::new(),
        warnings: vec![format!(
            "the head's commits could not be read for `Loadgate-Accept` trailers: {e}; nothing \
             is accepted"
        )],
    })
}

/// The commit to store the base's side of a paired run under, when `--save-baseline` stores both
/// sides (issue 13: "both sides' results are stored per commit"): only a base measured from a
/// build of its own commit (built in a worktree, or that commit's stored build), and never the
/// head's own commit, whose entry the head's result already is. A given binary, image or URL is
/// not known to be the merge-base's code, so it is not stored as that commit's result.
fn base_commit_to_store<'a>(result: &RunResult, base_result: &'a RunResult) -> Option<&'a str> {
    let source = result.paired.as_ref()?.base.source;
    if !matches!(source, BaseSource::Built | BaseSource::StoredBuild) {
        return None;
    }
    let base = base_result.git.as_ref()?;
    let head = result.git.as_ref().map(|g| g.commit.as_str());
    (!base.commit.is_empty() && head != Some(base.commit.as_str())).then_some(base.commit.as_str())
}

/// Decides, writes the documents and prints the verdict.
#[expect(
    clippy::too_many_arguments,
    reason = "the paired run's parts, each its own; a struct would only rename them"
)]
fn finish(
    opts: &RunOpts,
    config: &LoadgateConfig,
    cwd: &Path,
    out_dir: &Path,
    mut result: RunResult,
    both: BothMeasured,
    repo: &Option<PathBuf>,
    accepts: gate::HeadAccepts,
) -> Result<i32, RunError> {
    let BothMeasured {
        mut base_result,
        head_ramp,
        inputs,
        adaptive,
    } = both;
    let result_path = out_dir.join("result.json");
    let base_path = out_dir.join("base-result.json");
    // With the adaptive design each primary metric was looked at repeatedly at its share α/m,
    // whose Pocock boundary gives the nominal level α′ of every look (docs/statistics.md). The
    // final comparison draws every interval at α′ and Holm divides it again: conservative.
    let options = CompareOptions {
        alpha: adaptive.as_ref().map_or(
            crate::compare::DEFAULT_ALPHA,
            SequentialDesign::nominal_alpha,
        ),
        accepts: accepts.accepts,
        ..CompareOptions::default()
    };
    let (mut comparison, mut verdict) =
        compare_paired(&base_result, &result, &config.gate, &inputs, &options);
    crate::compare::settle_checks(&result, Some(&mut comparison), &mut verdict);
    comparison
        .verdict
        .warnings
        .extend(accepts.warnings.iter().cloned());
    verdict.warnings.extend(accepts.warnings);
    let used = result.paired.as_ref().map_or(0, |p| p.used_pairs().count());
    verdict.rule_fired = format!(
        "{} [paired: {used} pair(s) of base and head in this job]",
        verdict.rule_fired
    );
    result.status = RunStatus::Complete;
    base_result.status = RunStatus::Complete;
    result.comparison = Some(comparison);
    result.verdict = Some(verdict.clone());
    write_result(&base_path, &base_result)?;
    write_result(&result_path, &result)?;

    let junit_path = super::run::junit_path(opts, cwd, out_dir);
    crate::report::write_junit(&junit_path, &result).map_err(|source| RunError::Write {
        path: junit_path.clone(),
        source,
    })?;
    let markdown_path = super::run::markdown_path(opts, cwd, out_dir);
    super::run::write_markdown(&markdown_path, &result)?;
    let charts = super::run::write_run_charts(
        out_dir,
        &result,
        &gate::Baseline::Missing {
            explanations: Vec::new(),
        },
    );
    print!("{}", super::run::render_summary(&result, &head_ramp));
    let base_line = result
        .paired
        .as_ref()
        .map(|p| [format!("paired: {}", p.base.statement), p.describe()])
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    print!(
        "{}",
        progress::paint_verdict(
            &gate::render_verdict(&base_line, result.comparison.as_ref(), &verdict),
            &verdict,
            OutputMode::stdout().colour
        )
    );
    println!("result: {}", result_path.display());
    println!("base result: {}", base_path.display());
    println!("junit: {}", junit_path.display());
    println!("summary: {}", markdown_path.display());
    if charts {
        println!("charts: {}", out_dir.display());
    }
    let blocks_ran = result.paired.as_ref().is_some_and(|p| !p.blocks.is_empty());
    let used_any = result
        .paired
        .as_ref()
        .is_some_and(|p| p.used_pairs().next().is_some());
    // Void when nothing the comparison reads was kept: every block lost its schedule, or no
    // block ran and the head's ramp is invalid too.
    let void = (blocks_ran && !used_any) || (!blocks_ran && !result.valid.unwrap_or(false));
    if opts.save_baseline {
        match repo {
            Some(_) if void => eprintln!(
                "     Warning not saving this run as a baseline: no pair of blocks kept its schedule"
            ),
            Some(repo) => {
                let gate_options = gate::GateOptions {
                    store: opts.baseline_store.clone(),
                    base_ref: opts.base_ref.clone(),
                    allow_dirty: opts.allow_dirty,
                    require_baseline: false,
                };
                let saved = gate::save(repo, &gate_options, &result)?;
                eprintln!("       Saved the paired result in {saved}");
                if let Some(commit) = base_commit_to_store(&result, &base_result) {
                    let saved = gate::save(repo, &gate_options, &base_result)?;
                    eprintln!(
                        "       Saved the base's side ({}) in {saved}",
                        short(commit)
                    );
                }
            }
            None => {
                return Err(RunError::Usage {
                    message: "--save-baseline needs a git repository with a commit\nhint: commit \
                              the package first"
                        .to_owned(),
                });
            }
        }
    }
    if void {
        eprintln!(
            "error: invalid run: the generator could not keep its schedule in any pair of blocks{}",
            if blocks_ran {
                ""
            } else {
                " (none ran) nor in the head's ramp"
            }
        );
        eprintln!(
            "hint: lower [paired] at, raise [generator] max-in-flight, or give the generator a core of its own"
        );
        return Ok(ExitCode::INVALID_RUN);
    }
    Ok(ExitCode::for_verdict(
        verdict.outcome,
        opts.fail_on_inconclusive,
        false,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    fn sides(source: BaseSource, head: &str, base: &str) -> (RunResult, RunResult) {
        let mut result = crate::result::testing::paired();
        result.paired.as_mut().unwrap().base.source = source;
        result.git = Some(GitInfo {
            commit: head.to_owned(),
            dirty: false,
        });
        let mut base_result = result.clone();
        base_result.paired = None;
        base_result.git = Some(GitInfo {
            commit: base.to_owned(),
            dirty: false,
        });
        (result, base_result)
    }

    #[test_case(BaseSource::Built, Some("b"); "built from the merge-base")]
    #[test_case(BaseSource::StoredBuild, Some("b"); "the merge-base's stored build")]
    #[test_case(BaseSource::GivenBinary, None; "a given binary is not known to be the base's code")]
    #[test_case(BaseSource::GivenImage, None; "a given image")]
    #[test_case(BaseSource::GivenUrl, None; "a given url")]
    #[test_case(BaseSource::SameAsHead, None; "an a-a run")]
    fn the_base_side_is_stored_only_when_it_was_built_from_its_commit(
        source: BaseSource,
        expected: Option<&str>,
    ) {
        let (result, base_result) = sides(source, "h", "b");
        assert_eq!(base_commit_to_store(&result, &base_result), expected);
    }

    /// Both sides read what the head's steps loaded: an SQL file changed since the base is named.
    #[test]
    fn the_data_files_changed_since_the_base_are_named() {
        use crate::baseline::git_testing::{commit, git, init};
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        init(p);
        std::fs::write(p.join("seed.sql"), "SELECT 1;\n").unwrap();
        std::fs::write(p.join("other.sql"), "SELECT 2;\n").unwrap();
        git(p, &["add", "."]);
        let base_commit = commit(p, "seed");
        let config = crate::config::parse_config_str(
            &format!(
                "{}\n[[dependency]]\nname = \"db\"\npreset = \"postgres\"\n[data]\nsteps = [{{ \
                 name = \"seed\", sql = [\"seed.sql\"], dependency = \"db\" }}]\n",
                crate::config::MINIMAL_CONFIG
            ),
            &p.join("loadgate.toml"),
            None,
            "default",
        )
        .expect("config");
        let base = |resolved: bool| PreparedBase {
            what: BaseBoot::SameAsHead,
            source: BaseSource::Built,
            resolved: resolved.then(|| ResolvedBase {
                head: base_commit.clone(),
                head_dirty: true,
                base_ref: "main".into(),
                commit: base_commit.clone(),
            }),
        };
        assert!(data_files_changed_since(&config, p, p, &base(true)).is_empty());
        // A file no step runs changes nothing; the seed's own change is named.
        std::fs::write(p.join("other.sql"), "SELECT 3;\n").unwrap();
        assert!(data_files_changed_since(&config, p, p, &base(true)).is_empty());
        std::fs::write(p.join("seed.sql"), "SELECT 4;\n").unwrap();
        assert_eq!(
            data_files_changed_since(&config, p, p, &base(true)),
            ["seed.sql"]
        );
        // A seed file git does not know yet is named too.
        std::fs::write(p.join("new.sql"), "SELECT 5;\n").unwrap();
        let config = crate::config::parse_config_str(
            &format!(
                "{}\n[[dependency]]\nname = \"db\"\npreset = \"postgres\"\n[data]\nsteps = [{{ \
                 name = \"seed\", sql = [\"seed.sql\", \"new.sql\"], dependency = \"db\" }}]\n",
                crate::config::MINIMAL_CONFIG
            ),
            &p.join("loadgate.toml"),
            None,
            "default",
        )
        .expect("config");
        assert_eq!(
            data_files_changed_since(&config, p, p, &base(true)),
            ["seed.sql", "new.sql"]
        );
        // A base that is no commit has nothing to compare with.
        assert!(data_files_changed_since(&config, p, p, &base(false)).is_empty());
    }

    #[test]
    fn a_base_at_the_heads_own_commit_is_not_stored_over_the_heads_result() {
        // A dirty tree is measured against its own HEAD: both sides carry that commit.
        let (result, base_result) = sides(BaseSource::Built, "same", "same");
        assert_eq!(base_commit_to_store(&result, &base_result), None);
    }
}
