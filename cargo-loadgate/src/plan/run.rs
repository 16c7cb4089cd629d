//! The plan's driver: the ramp's steps, the bisection to the knee, then the soak sample, each
//! phase run through a [`PhaseRunner`] the shell provides (the engine on its generator thread and
//! the resource sampler in the CLI, a fake in tests).

use super::abort::abort_watch;
use super::judge::{first_step_failures, judge_step};
use super::ramp::{RampOutcome, StepKind, StepRecord, StepStatus};
use super::soak::{CapacitySource, SoakOutcome, soak_slopes};
use super::spike::{SpikeOutcome, spike_figures, spike_steps};
use super::stress::{StressJudge, StressOutcome, StressPhase, stress_figures, stress_steps};
use crate::config::LoadgateConfig;
use crate::engine::{PhaseSpec, WindowDecision};
use crate::measure::{PhaseMeasurement, Window};
use crate::stats::slope::BootstrapOptions;
use crate::targets::ResourceSample;
use crate::workload::{ModelError, Schedule, analyze};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::time::Duration;

/// When even the first step breaks and bisection has found nothing that holds, it goes on
/// halving the rate at most this many more times (down to 1/64 of where it stood) before
/// concluding that nothing holds.
pub const MAX_EXTRA_DOWNWARD: u32 = 6;

/// How many times a step is measured again at most: once to confirm a break (or a starved
/// measurement), and once more when the machine starved the re-measurement too.
pub const MAX_REMEASUREMENTS: u32 = 2;

/// The abort hook of one phase, to be installed as the engine's `PhaseHooks::on_window`. It is
/// `Send` so the shell can move it to the generator's thread.
pub type OnWindow = Box<dyn Fn(&Window) -> WindowDecision + Send + 'static>;

/// What the shell returns for one phase.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseRun {
    /// What the engine measured.
    pub measurement: PhaseMeasurement,
    /// The target's resource samples taken during the measured part of the phase (after its
    /// warm-up, until arrivals ended), in order; their time origin does not matter. Empty when the
    /// target is not sampled. Only the soak uses them.
    pub resources: Vec<ResourceSample>,
    /// When the measured part began and ended, in seconds on the resource sampler's clock (the
    /// probes' too), when the runner knows: the soak's probe slopes are fitted to it when the
    /// target has no resource samples (a `url` target).
    pub measured_s: Option<[f64; 2]>,
}

/// Runs one phase. The shell implements it with `run_phase_on_generator_thread` (installing
/// `on_window` as `PhaseHooks::on_window`) and the resource sampler; tests implement it with a
/// fake service.
pub trait PhaseRunner {
    /// Why a phase could not run at all (failures of single requests are measured, not errors).
    type Error: std::error::Error + 'static;

    /// Runs `spec` on `schedule` (built from it by the plan, once: the engine follows the very
    /// schedule whose hash the plan records), asking `on_window` after every closed window of the
    /// measured part whether to go on; a `Stop` ends arrivals and is recorded in the
    /// measurement's `stopped`.
    fn run(
        &mut self,
        spec: PhaseSpec,
        schedule: Schedule,
        on_window: OnWindow,
    ) -> impl Future<Output = Result<PhaseRun, Self::Error>>;
}

/// Choices of the run that are not in the config.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanOptions {
    /// Run every configured step even after one broke (`--keep-going`).
    pub keep_going: bool,
    /// The baseline's knee in sessions per second, when a baseline was found: the soak runs at
    /// `soak.at` of it, so head and base soak at the same offered load.
    pub baseline_knee_sessions_per_sec: Option<f64>,
    /// Skip the soak, for this reason (a paired run measures its blocks instead).
    pub skip_soak: Option<String>,
    /// A plan fixed before it runs, for the shards of `run --shard i/N`, which must send the same
    /// phases without seeing each other's answers: every configured step (as with `keep_going`),
    /// each measured once (no confirmation), no bisection, and the soak only at the baseline's
    /// knee (this run's knee is known only once the shards are merged).
    pub fixed: bool,
}

/// Why a fixed plan ([`PlanOptions::fixed`]) does not bisect, for the notes of a shard run.
pub const FIXED_PLAN_NO_BISECTION: &str = "shards run a fixed plan: every ramp step once, no confirmation and no bisection (`ramp.refine` is not used), since the shards would have to agree on the next step from answers only the merge sees; the merged knee is bracketed by the configured steps";

/// Why a fixed plan without a baseline knee does not soak.
pub const FIXED_PLAN_NO_SOAK: &str = "shards soak only at the baseline's knee: without a baseline, this run's knee is known only once the shards are merged";

/// What the phases found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanOutcome {
    /// The capacity ramp.
    pub ramp: RampOutcome,
    /// The soak sample, when it ran.
    pub soak: Option<SoakOutcome>,
    /// Why the soak did not run, when it did not.
    pub soak_skipped: Option<String>,
    /// The spike phase, when it ran.
    pub spike: Option<SpikeOutcome>,
    /// Why the declared spike did not run, when it did not (`None` when none was declared).
    pub spike_skipped: Option<String>,
    /// The stress phase, when it ran.
    pub stress: Option<StressOutcome>,
    /// Why the declared stress did not run, when it did not (`None` when none was declared).
    pub stress_skipped: Option<String>,
    /// Whether every phase that ran was valid, a step at the generator's limit and a re-measured
    /// transient aside. A run exits with `INVALID_RUN` only when no phase at all was valid.
    pub valid: bool,
}

/// What the plan reports as it goes, so the shell can write the result and print a line after
/// every phase.
#[derive(Debug)]
pub enum PlanEvent {
    /// A phase is about to run.
    PhaseStarting {
        /// The spec it runs with.
        spec: PhaseSpec,
        /// The offered request rate.
        offered_rate_per_sec: f64,
    },
    /// A step or bisection point was measured and judged.
    StepDone {
        /// Its record.
        record: Box<StepRecord>,
        /// What it measured, for the run result's phases.
        measurement: Box<PhaseMeasurement>,
        /// The hash of the schedule it followed (the planned one, also when it was stopped).
        schedule_hash: String,
        /// The ramp so far, concluded as the plan concludes it, for the result written meanwhile.
        ramp: Box<RampOutcome>,
    },
    /// The ramp and its bisection are over.
    RampDone {
        /// What they found.
        outcome: Box<RampOutcome>,
    },
    /// The soak sample was measured.
    SoakDone {
        /// What it found.
        outcome: Box<SoakOutcome>,
        /// What it measured, for the run result's phases.
        measurement: Box<PhaseMeasurement>,
        /// The hash of the schedule it followed (the planned one, also when it was stopped).
        schedule_hash: String,
    },
    /// The soak sample will not run.
    SoakSkipped {
        /// Why.
        reason: String,
    },
    /// The spike phase was measured.
    SpikeDone {
        /// What it found.
        outcome: Box<SpikeOutcome>,
        /// What it measured, for the run result's phases.
        measurement: Box<PhaseMeasurement>,
        /// The hash of the (stepped) schedule it followed.
        schedule_hash: String,
    },
    /// The declared spike will not run.
    SpikeSkipped {
        /// Why.
        reason: String,
    },
    /// The stress phase was measured.
    StressDone {
        /// What it found.
        outcome: Box<StressOutcome>,
        /// What it measured, for the run result's phases.
        measurement: Box<PhaseMeasurement>,
        /// The hash of the (stepped) schedule it followed.
        schedule_hash: String,
    },
    /// The declared stress will not run.
    StressSkipped {
        /// Why.
        reason: String,
    },
}

/// Why the plan could not go on.
#[derive(Debug, thiserror::Error)]
pub enum PlanError<E: std::error::Error + 'static> {
    /// The user model's request rate cannot be computed.
    #[error("cannot compute the request rate of the user model")]
    Model(#[source] ModelError),
    /// A phase could not run at all. What ran before it is kept in `partial`.
    #[error("phase `{phase}` could not run")]
    Phase {
        /// The phase.
        phase: String,
        /// The outcome of the phases before it.
        partial: Box<PlanOutcome>,
        /// The shell's error.
        #[source]
        source: E,
    },
}

/// The latency within which an answer counts as goodput when the SLO names no latency limit:
/// the default `slo.p99` of `defaults.toml`. Validation always leaves at least one limit, so only
/// a hand-built [`crate::config::SloConfig`] meets it.
pub const DEFAULT_GOODPUT_LATENCY: Duration = Duration::from_millis(200);

/// The latency within which an answer counts as goodput: the loosest of the SLO's latency limits
/// (an answer that meets every limit's quantile can be as slow as the loosest).
pub fn goodput_latency(slo: &crate::config::SloConfig) -> Duration {
    slo.latency
        .iter()
        .map(|l| l.limit)
        .max()
        .unwrap_or(DEFAULT_GOODPUT_LATENCY)
}

/// The seeded schedule `spec` follows: the one place the plan builds it, for the sessions it
/// numbers, for the hash recorded with the phase and for the engine, which runs this very one.
fn phase_schedule(workload: &crate::config::WorkloadConfig, spec: &PhaseSpec) -> Schedule {
    spec.schedule(workload)
}

/// The schedule hash a baseline must have run for this config: the first ramp step's, which the
/// config alone fixes before anything runs. The soak's is not asked for: its rate is `soak.at` of
/// the baseline's knee (or this run's), so a matching baseline soaked at another rate.
pub fn comparable_schedule_hash(config: &LoadgateConfig) -> Option<String> {
    let fraction = config.ramp.steps.first()?;
    let spec = PhaseSpec {
        name: step_name(*fraction),
        sessions_per_sec: fraction * config.workload.sessions_per_sec,
        duration: config.ramp.hold,
        warmup: config.ramp.warmup,
        seed: config.workload.seed,
        first_session: 0,
        keep_window_histograms: false,
    };
    Some(phase_schedule(&config.workload, &spec).hash())
}

/// `ramp-25%`, `ramp-12.5%`.
fn step_name(fraction: f64) -> String {
    let percent = format!("{:.2}", fraction * 100.0);
    let trimmed = percent.trim_end_matches('0').trim_end_matches('.');
    format!("ramp-{trimmed}%")
}

struct Driver<'a, R: PhaseRunner> {
    config: &'a LoadgateConfig,
    runner: &'a mut R,
    observer: &'a mut dyn FnMut(PlanEvent),
    requests_per_session: f64,
    steps: Vec<StepRecord>,
    failing: Vec<String>,
    /// `{{session}}` of the next phase's first session: each phase numbers its sessions after the
    /// previous phases' ones, so no value built from it is sent twice in one run.
    next_session: u64,
    /// [`PlanOptions::fixed`].
    fixed: bool,
}

impl<R: PhaseRunner> Driver<'_, R> {
    fn spec(&self, name: String, sessions_per_sec: f64, duration: Duration) -> PhaseSpec {
        PhaseSpec {
            name,
            sessions_per_sec,
            duration,
            warmup: self.config.ramp.warmup,
            seed: self.config.workload.seed,
            first_session: self.next_session,
            // A shard's windows are merged with the other shards' from their histograms.
            keep_window_histograms: self.fixed,
        }
    }

    /// Runs `spec` on the schedule built here and returns what it measured with the hash of that
    /// schedule.
    async fn run(&mut self, spec: PhaseSpec) -> Result<(PhaseRun, String), (String, R::Error)> {
        let schedule = phase_schedule(&self.config.workload, &spec);
        self.run_schedule(spec, schedule).await
    }

    /// [`Driver::run`] on a schedule built from `spec` by the caller (a spike's, whose rate
    /// steps inside the phase).
    async fn run_schedule(
        &mut self,
        spec: PhaseSpec,
        schedule: Schedule,
    ) -> Result<(PhaseRun, String), (String, R::Error)> {
        // Every session the schedule holds, sent or not (a stopped phase sends fewer).
        self.next_session = self.next_session.saturating_add(schedule.session_count());
        (self.observer)(PlanEvent::PhaseStarting {
            offered_rate_per_sec: spec.sessions_per_sec * self.requests_per_session,
            spec: spec.clone(),
        });
        let watch = Box::new(abort_watch(&self.config.abort, spec.warmup));
        let name = spec.name.clone();
        // A clone shares the drawn model (`Arc`): the seed is not drawn from again.
        let run = self
            .runner
            .run(spec, schedule.clone(), watch)
            .await
            .map_err(|e| (name, e))?;
        Ok((run, schedule.hash()))
    }

    /// Runs and judges one step; returns its record (also kept and reported). A step that broke,
    /// or during which the generator was starved, is measured again at once
    /// ([`StepKind::Confirm`]): when the re-measurement holds, the first is a transient (neither
    /// held nor broke); either way the re-measurement's record is returned, so a break stands only
    /// when it is confirmed.
    async fn step(
        &mut self,
        kind: StepKind,
        name: String,
        sessions_per_sec: f64,
    ) -> Result<StepRecord, (String, R::Error)> {
        let first = self
            .measure_step(kind, name.clone(), sessions_per_sec, &[])
            .await?;
        if self.fixed || !first.needs_confirmation() {
            return Ok(first);
        }
        // The records measured at this rate so far, the first one first.
        let mut chain = vec![self.steps.len() - 1];
        let mut last = first;
        for attempt in 1..=MAX_REMEASUREMENTS {
            let suffix = match attempt {
                1 => "-confirm".to_owned(),
                n => format!("-confirm-{n}"),
            };
            last = self
                .measure_step(
                    StepKind::Confirm,
                    format!("{name}{suffix}"),
                    sessions_per_sec,
                    &chain,
                )
                .await?;
            chain.push(self.steps.len() - 1);
            let records: Vec<&StepRecord> = chain.iter().map(|&i| &self.steps[i]).collect();
            if settled(&records) {
                break;
            }
        }
        Ok(last)
    }

    /// Runs and judges one step; with `confirms`, the step re-measures the records at those
    /// indices (the first one first). When it is valid, each earlier record the machine starved
    /// becomes a transient, and so does a first record that broke when this one holds (marked
    /// before the step is reported, so the ramp written meanwhile is already right).
    async fn measure_step(
        &mut self,
        kind: StepKind,
        name: String,
        sessions_per_sec: f64,
        confirms: &[usize],
    ) -> Result<StepRecord, (String, R::Error)> {
        let spec = self.spec(name, sessions_per_sec, self.config.ramp.hold);
        let (run, schedule_hash) = self.run(spec).await?;
        let m = run.measurement;
        // The first step the generator kept (a starved one is measured again) finds the classes
        // failing from the first step.
        if m.validity.is_valid() && self.steps.iter().all(|s| !s.valid) {
            self.failing = first_step_failures(&m, &self.config.slo);
        }
        let judgement = judge_step(&m, &self.config.slo, &self.failing);
        let fraction = sessions_per_sec / self.config.workload.sessions_per_sec;
        let mut record = StepRecord::new(kind, fraction, self.requests_per_session, &m, judgement);
        if let Some(first) = confirms.first().and_then(|&i| self.steps.get(i)) {
            record.confirms = Some(first.phase.clone());
        }
        if record.status() != StepStatus::Invalid {
            for &i in confirms {
                if let Some(earlier) = self.steps.get_mut(i) {
                    let replaced = earlier.status() == StepStatus::Invalid
                        || (record.holds()
                            && matches!(
                                earlier.status(),
                                StepStatus::Broke
                                    | StepStatus::Aborted
                                    | StepStatus::GeneratorLimit
                            ));
                    if replaced && earlier.transient.is_none() {
                        earlier.transient = Some(transient_note(earlier));
                    }
                }
            }
        }
        self.steps.push(record.clone());
        let ramp = Box::new(self.ramp_outcome());
        (self.observer)(PlanEvent::StepDone {
            record: Box::new(record.clone()),
            measurement: Box::new(m),
            schedule_hash,
            ramp,
        });
        Ok(record)
    }

    fn ramp_outcome(&self) -> RampOutcome {
        RampOutcome::conclude(self.steps.clone(), self.failing.clone())
    }

    /// The configured steps, then bisection; stops at the first invalid phase.
    async fn ramp(&mut self, keep_going: bool) -> Result<(), (String, R::Error)> {
        let rate = self.config.workload.sessions_per_sec;
        let mut held: Option<f64> = None;
        let mut broke: Option<f64> = None;
        for &fraction in &self.config.ramp.steps {
            let record = self
                .step(StepKind::Step, step_name(fraction), fraction * rate)
                .await?;
            // A fixed plan goes on: each shard's validity is its own, the merged one is judged
            // once the shards are merged.
            if !record.valid && !self.fixed {
                return Ok(());
            }
            if record.holds() {
                if broke.is_none() {
                    held = Some(record.sessions_per_sec);
                }
            } else if record.broke() {
                // A step with too few requests to judge neither held nor broke: the next one has more.
                broke.get_or_insert(record.sessions_per_sec);
                if !keep_going && !self.fixed {
                    break;
                }
            }
        }
        let Some(mut hi) = broke else {
            return Ok(());
        };
        if self.fixed {
            return Ok(());
        }
        // Below this many sessions per second a step sends fewer requests than the SLO needs to
        // judge anything, so halving further proves nothing.
        let hold = self.config.ramp.hold.as_secs_f64();
        let min_rate = self.config.slo.min_requests as f64 / (hold * self.requests_per_session);
        let mut lo = held;
        let mut iteration = 0;
        loop {
            let budget = if lo.is_none() {
                self.config.ramp.refine + MAX_EXTRA_DOWNWARD
            } else {
                self.config.ramp.refine
            };
            if iteration >= budget {
                return Ok(());
            }
            let mid = (lo.unwrap_or(0.0) + hi) / 2.0;
            if lo.is_none() && mid < min_rate {
                return Ok(());
            }
            iteration += 1;
            let record = self
                .step(StepKind::Refine, format!("refine-{iteration}"), mid)
                .await?;
            // A point with too few requests to judge cannot say which way the knee lies.
            if !record.valid || record.unjudged() {
                return Ok(());
            }
            if record.holds() {
                lo = Some(mid);
            } else {
                hi = mid;
            }
        }
    }

    async fn soak(
        &mut self,
        ramp: &RampOutcome,
        baseline_knee: Option<f64>,
    ) -> Result<Result<(SoakOutcome, PhaseMeasurement, String), String>, (String, R::Error)> {
        let soak = &self.config.soak;
        if soak.duration.is_zero() {
            return Ok(Err("soak.duration is 0".to_owned()));
        }
        let (capacity, capacity_from) = match (baseline_knee, ramp.knee_sessions_per_sec) {
            (Some(k), _) if k > 0.0 && k.is_finite() => (k, CapacitySource::Baseline),
            _ if self.fixed => return Ok(Err(FIXED_PLAN_NO_SOAK.to_owned())),
            (_, Some(k)) if ramp.valid => (k, CapacitySource::ThisRun),
            (_, Some(_)) => {
                return Ok(Err(
                    "the ramp was invalid and no baseline knee was given: no capacity to soak at"
                        .to_owned(),
                ));
            }
            _ => {
                return Ok(Err(
                    "no capacity to soak at: nothing held and no baseline knee was given"
                        .to_owned(),
                ));
            }
        };
        let planned = soak.at * capacity;
        // Where the generator reached its limit below the planned load, the soak runs at `soak.at`
        // of the highest step that held: a load the generator kept, with the same margin a soak
        // keeps below a knee.
        let (at, lowered) = match (&ramp.generator_limit, ramp.knee_sessions_per_sec) {
            // A shard's generator limit is its own: the shards soak at the planned load.
            _ if self.fixed => (planned, None),
            (Some(limit), Some(kept)) if planned > kept => {
                let at = soak.at * kept;
                (
                    at,
                    Some(format!(
                        "lowered from {planned:.3} to {at:.3} sessions/s ({:.0}% of {kept:.3}, the \
                         highest step that held below the generator's limit at `{}`)",
                        soak.at * 100.0,
                        limit.phase
                    )),
                )
            }
            (Some(limit), None) => {
                return Ok(Err(format!(
                    "the generator reached its limit at `{}` before any step held: no load it can \
                     keep to soak at",
                    limit.phase
                )));
            }
            _ => (planned, None),
        };
        let spec = self.spec("soak".to_owned(), at, soak.duration);
        let (run, schedule_hash) = self.run(spec).await?;
        let m = run.measurement;
        let slopes = soak_slopes(
            &m.windows.windows,
            &run.resources,
            &BootstrapOptions::default(),
        );
        let outcome = SoakOutcome {
            phase: m.name.clone(),
            capacity_sessions_per_sec: capacity,
            capacity_from,
            at_sessions_per_sec: at,
            offered_rate_per_sec: if m.measured.is_zero() {
                0.0
            } else {
                m.counters.arrivals as f64 / m.measured.as_secs_f64()
            },
            model_rate_per_sec: at * self.requests_per_session,
            achieved_rate_per_sec: m.summary().achieved_rate_per_sec,
            leak: None,
            lowered,
            slopes,
            aborted: m.stopped.clone(),
            valid: m.validity.is_valid(),
            invalid_reasons: m.validity.reasons.iter().map(ToString::to_string).collect(),
            windows: m.windows.windows.iter().filter(|w| w.completed > 0).count(),
            samples: run.resources.len(),
            // The resource samples' span, else the measured part's on the same clock.
            sampled_s: run
                .resources
                .first()
                .zip(run.resources.last())
                .map(|(first, last)| [first.elapsed_s, last.elapsed_s])
                .or(run.measured_s),
        };
        Ok(Ok((outcome, m, schedule_hash)))
    }
}

impl<R: PhaseRunner> Driver<'_, R> {
    /// The spike: one phase at the soak's rate with the rate stepped to `spike.to` × the soak's
    /// capacity for `spike.for` after `spike.before`, then `spike.after` at the soak's rate again.
    async fn spike(
        &mut self,
        soak: &SoakOutcome,
    ) -> Result<Result<(SpikeOutcome, PhaseMeasurement, String), String>, (String, R::Error)> {
        let spike = &self.config.spike;
        let from = soak.at_sessions_per_sec;
        let to = spike.to * soak.capacity_sessions_per_sec;
        if !(from > 0.0 && to.is_finite()) {
            return Ok(Err("the soak ran at no load to step up from".to_owned()));
        }
        let spec = self.spec(
            "spike".to_owned(),
            from,
            spike.before + spike.duration + spike.after,
        );
        let steps = match spike_steps(spike, spec.warmup, to / from) {
            Ok(steps) => steps,
            Err(e) => return Ok(Err(format!("the spike's rate steps are not usable: {e}"))),
        };
        let schedule = phase_schedule(&self.config.workload, &spec).with_rate_steps(steps);
        let (run, schedule_hash) = self.run_schedule(spec, schedule).await?;
        let m = run.measurement;
        let required = self.config.recovery.windows;
        let (admission, recovery) =
            spike_figures(&m.windows.windows, spike, &self.config.slo, required);
        let outcome = SpikeOutcome {
            phase: m.name.clone(),
            capacity_sessions_per_sec: soak.capacity_sessions_per_sec,
            capacity_from: soak.capacity_from,
            from_sessions_per_sec: from,
            to_sessions_per_sec: to,
            starts: spike.before,
            ends: spike.before + spike.duration,
            admission,
            recovery,
            recovery_windows: required,
            check: None,
            aborted: m.stopped.clone(),
            valid: m.validity.is_valid(),
            invalid_reasons: m.validity.reasons.iter().map(ToString::to_string).collect(),
        };
        Ok(Ok((outcome, m, schedule_hash)))
    }

    /// The stress: one phase at the soak's rate with the rate stepped to `stress.to` × the soak's
    /// capacity for `stress.for` after `stress.before`, then `stress.after` at the soak's rate
    /// again; the stretch before is compared with the last `stress.before` of the stretch after.
    async fn stress(
        &mut self,
        soak: &SoakOutcome,
    ) -> Result<Result<(StressOutcome, PhaseMeasurement, String), String>, (String, R::Error)> {
        let stress = &self.config.stress;
        let from = soak.at_sessions_per_sec;
        let to = stress.to * soak.capacity_sessions_per_sec;
        if !(from > 0.0 && to.is_finite()) {
            return Ok(Err("the soak ran at no load to overload from".to_owned()));
        }
        let mut spec = self.spec(
            "stress".to_owned(),
            from,
            stress.before + stress.duration + stress.after,
        );
        // Each stretch's p50 and p99 are read from all its requests: its windows' histograms.
        spec.keep_window_histograms = true;
        let steps = match stress_steps(stress, spec.warmup, to / from) {
            Ok(steps) => steps,
            Err(e) => return Ok(Err(format!("the stress's rate steps are not usable: {e}"))),
        };
        let schedule = phase_schedule(&self.config.workload, &spec).with_rate_steps(steps);
        let (run, schedule_hash) = self.run_schedule(spec, schedule).await?;
        let m = run.measurement;
        let required = self.config.recovery.windows;
        let invalid: Vec<String> = m.validity.reasons.iter().map(ToString::to_string).collect();
        let judge = StressJudge {
            stress,
            gate: &self.config.gate,
            slo: &self.config.slo,
            required,
            alpha: crate::compare::DEFAULT_ALPHA,
            max_lag: self.config.generator.max_lag,
        };
        let figures = stress_figures(
            &StressPhase {
                windows: &m.windows.windows,
                histograms: &m.windows.histograms,
                resources: &run.resources,
                measured_s: run.measured_s,
                valid: if m.validity.is_valid() {
                    Ok(())
                } else {
                    Err(invalid.as_slice())
                },
                stopped: m.stopped.as_deref(),
            },
            &judge,
        );
        let outcome = StressOutcome {
            phase: m.name.clone(),
            capacity_sessions_per_sec: soak.capacity_sessions_per_sec,
            capacity_from: soak.capacity_from,
            from_sessions_per_sec: from,
            to_sessions_per_sec: to,
            starts: stress.before,
            ends: stress.before + stress.duration,
            compared_from: figures.compared_from,
            before: figures.before,
            after: figures.after,
            changes: figures.changes,
            harm: figures.harm,
            reason: figures.reason,
            recovery: figures.recovery,
            recovery_windows: required,
            check: None,
            aborted: m.stopped.clone(),
            valid: m.validity.is_valid(),
            invalid_reasons: invalid,
        };
        Ok(Ok((outcome, m, schedule_hash)))
    }
}

/// Runs the phases: the ramp's steps (each `ramp.hold` after a `ramp.warmup` at `step ×
/// workload.sessions-per-sec`), stopping after the first that breaks unless `keep_going`; then
/// `ramp.refine` bisection points between the last step that held and the first that broke
/// (between zero and the first step when even it broke, halving further until something holds
/// or a step would be too small to judge); then the soak at `soak.at` × capacity (the baseline's
/// knee when given, else this run's). A step that breaks, reaches the generator's limit or is
/// starved is measured again before it counts (at most [`MAX_REMEASUREMENTS`] times). A step the
/// generator could not keep stops the ramp; the soak still runs when there is a load to soak at
/// (no higher than `soak.at` of the highest step that held below a generator limit).
///
/// Every phase gets the abort watch of `[abort]`. `observer` hears of every phase as it starts
/// and ends. A phase the runner cannot run ends the plan with [`PlanError::Phase`], carrying the
/// outcome of what ran before.
pub async fn run_plan<R: PhaseRunner>(
    config: &LoadgateConfig,
    runner: &mut R,
    options: &PlanOptions,
    observer: &mut dyn FnMut(PlanEvent),
) -> Result<PlanOutcome, PlanError<R::Error>> {
    let analysis = analyze(&config.workload).map_err(PlanError::Model)?;
    let mut driver = Driver {
        config,
        runner,
        observer,
        requests_per_session: analysis.requests_per_session,
        steps: Vec::new(),
        failing: Vec::new(),
        next_session: 0,
        fixed: options.fixed,
    };
    let failed = |driver: &Driver<'_, R>, phase: String, source: R::Error, soak_skipped: &str| {
        let ramp = driver.ramp_outcome();
        PlanError::Phase {
            phase,
            partial: Box::new(PlanOutcome {
                valid: false,
                ramp,
                soak: None,
                soak_skipped: Some(soak_skipped.to_owned()),
                spike: None,
                spike_skipped: None,
                stress: None,
                stress_skipped: None,
            }),
            source,
        }
    };
    if let Err((phase, source)) = driver.ramp(options.keep_going).await {
        return Err(failed(&driver, phase, source, "the ramp did not finish"));
    }
    let ramp = driver.ramp_outcome();
    (driver.observer)(PlanEvent::RampDone {
        outcome: Box::new(ramp.clone()),
    });
    let soak = match &options.skip_soak {
        Some(reason) => Ok(Err(reason.clone())),
        None => {
            driver
                .soak(&ramp, options.baseline_knee_sessions_per_sec)
                .await
        }
    };
    let soak = match soak {
        Ok(soak) => soak,
        Err((phase, source)) => {
            return Err(failed(&driver, phase, source, "the soak could not run"));
        }
    };
    let (soak, soak_skipped) = match soak {
        Ok((outcome, measurement, schedule_hash)) => {
            (driver.observer)(PlanEvent::SoakDone {
                outcome: Box::new(outcome.clone()),
                measurement: Box::new(measurement),
                schedule_hash,
            });
            (Some(outcome), None)
        }
        Err(reason) => {
            (driver.observer)(PlanEvent::SoakSkipped {
                reason: reason.clone(),
            });
            (None, Some(reason))
        }
    };
    let (spike, spike_skipped) = if config.spike.is_disabled() {
        (None, None)
    } else {
        let ran = match &soak {
            Some(soak) => driver.spike(soak).await,
            None => Ok(Err(format!(
                "the spike steps up from the soak's load, and the soak did not run: {}",
                soak_skipped.as_deref().unwrap_or("no soak")
            ))),
        };
        match ran {
            Err((phase, source)) => {
                let mut error = failed(&driver, phase, source, "");
                if let PlanError::Phase { partial, .. } = &mut error {
                    partial.soak = soak.clone();
                    partial.soak_skipped = soak_skipped.clone();
                    partial.spike_skipped = Some("the spike could not run".to_owned());
                }
                return Err(error);
            }
            Ok(Ok((outcome, measurement, schedule_hash))) => {
                (driver.observer)(PlanEvent::SpikeDone {
                    outcome: Box::new(outcome.clone()),
                    measurement: Box::new(measurement),
                    schedule_hash,
                });
                (Some(outcome), None)
            }
            Ok(Err(reason)) => {
                (driver.observer)(PlanEvent::SpikeSkipped {
                    reason: reason.clone(),
                });
                (None, Some(reason))
            }
        }
    };
    let (stress, stress_skipped) = if config.stress.is_disabled() {
        (None, None)
    } else {
        let ran = match &soak {
            Some(soak) => driver.stress(soak).await,
            None => Ok(Err(format!(
                "the stress overloads from the soak's load, and the soak did not run: {}",
                soak_skipped.as_deref().unwrap_or("no soak")
            ))),
        };
        match ran {
            Err((phase, source)) => {
                let mut error = failed(&driver, phase, source, "");
                if let PlanError::Phase { partial, .. } = &mut error {
                    partial.soak = soak.clone();
                    partial.soak_skipped = soak_skipped.clone();
                    partial.spike = spike.clone();
                    partial.spike_skipped = spike_skipped.clone();
                    partial.stress_skipped = Some("the stress could not run".to_owned());
                }
                return Err(error);
            }
            Ok(Ok((outcome, measurement, schedule_hash))) => {
                (driver.observer)(PlanEvent::StressDone {
                    outcome: Box::new(outcome.clone()),
                    measurement: Box::new(measurement),
                    schedule_hash,
                });
                (Some(outcome), None)
            }
            Ok(Err(reason)) => {
                (driver.observer)(PlanEvent::StressSkipped {
                    reason: reason.clone(),
                });
                (None, Some(reason))
            }
        }
    };
    Ok(PlanOutcome {
        // The stress is judged on its own stretches (an overload the generator could not keep up
        // with does not void them), never by the comparison with a baseline: it is left out.
        valid: ramp.valid
            && soak.as_ref().is_none_or(|s| s.valid)
            && spike.as_ref().is_none_or(|s| s.valid),
        ramp,
        soak,
        soak_skipped,
        spike,
        spike_skipped,
        stress,
        stress_skipped,
    })
}

/// Why a step measured again is neither held nor broke: it broke once and held when measured
/// again (a stall, not capacity), or the machine starved the generator during it (the
/// re-measurement counts instead).
fn transient_note(earlier: &StepRecord) -> String {
    if earlier.valid {
        format!(
            "broke once ({}) and held when measured again: a transient stall, not capacity",
            earlier.held.reasons.join("; ")
        )
    } else {
        format!(
            "was starved once ({}): measured again, the re-measurement counts",
            earlier.invalid_reasons.join("; ")
        )
    }
}

/// Whether the measurements of one rate (the first one first) settle it: the last held (the others
/// were transients), or a break or a generator limit was measured twice. A starved measurement
/// settles nothing.
fn settled(records: &[&StepRecord]) -> bool {
    let Some(last) = records.last() else {
        return false;
    };
    let outcome = |r: &StepRecord| (r.valid, r.generator_limit, r.broke_as_measured());
    match last.status() {
        StepStatus::Held | StepStatus::TooFewRequests => true,
        StepStatus::Invalid => false,
        _ => {
            records
                .iter()
                .filter(|r| outcome(r) == outcome(last))
                .count()
                >= 2
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::config::parse_config_str;
    use crate::measure::{FinishInfo, Outcome, PhaseRecorder};
    use crate::plan::JudgementBasis;
    use indoc::indoc;
    use std::path::Path;

    const MS: Duration = Duration::from_millis(1);

    /// Two classes; a session sends `home`, then `login` with probability 0.5: 1.5 requests per
    /// session, so 100 sessions/s offer 150 req/s.
    pub(in crate::plan) const CONFIG: &str = indoc! {r#"
        [target]
        url = "http://127.0.0.1:9"

        [slo]
        p99 = "200ms"
        error-rate = "1%"
        min-requests = 20

        [workload]
        seed = 7
        sessions-per-sec = 100

        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "login", p = 0.5, think = "1s" }]

        [[workload.operation]]
        name = "login"
        request = { method = "POST", path = "/login" }

        [ramp]
        steps = ["25%", "50%", "100%", "150%"]
        hold = "4s"
        warmup = "1s"
        refine = 3

        [soak]
        duration = "20s"
        at = "60%"
    "#};

    pub(in crate::plan) fn config(extra: &str) -> LoadgateConfig {
        parse_config_str(
            &format!("{CONFIG}{extra}"),
            Path::new("loadgate.toml"),
            None,
            "default",
        )
        .expect("the test config is valid")
    }

    /// A service with capacity `capacity` req/s: below it every request takes 20 ms, above it p99
    /// explodes (a queue that grows for the whole step).
    pub(in crate::plan) struct FakeService {
        capacity: f64,
        /// Steps offering more than this many req/s cannot be kept by the generator.
        invalid_above: f64,
        /// Every this many `login` answers, one is wrong, at any load.
        login_wrong_every: Option<u64>,
        /// RSS growth in bytes per second during a soak.
        leak_bytes_per_sec: f64,
        /// The error returned instead of running a phase with this name.
        fail_phase: Option<String>,
        /// The share of its core the generator's loop uses in the steps above `invalid_above`
        /// (the lagging ones); `None`: not measured.
        lagging_busy: Option<f64>,
        /// The phase of this name (not its re-measurement) lags once, with the loop idle: the
        /// machine starved the generator.
        starve_once: Option<String>,
        /// The phase of this name (not its re-measurement) stalls for one window: every answer due
        /// in its second measured second comes 800 ms late.
        stall_once: Option<String>,
        pub(in crate::plan) specs: Vec<PhaseSpec>,
        /// The schedule handed over with each of `specs`.
        pub(in crate::plan) schedules: Vec<Schedule>,
        /// Added to every answer's latency (a slower build at the same load).
        pub(in crate::plan) extra: Duration,
        /// No resource samples (a `url` target): the runner reports the measured part's span
        /// instead, from 100 s on the sampler's clock.
        unsampled: bool,
    }

    impl FakeService {
        pub(in crate::plan) fn new(capacity: f64) -> Self {
            Self {
                capacity,
                invalid_above: f64::INFINITY,
                login_wrong_every: None,
                leak_bytes_per_sec: 0.0,
                fail_phase: None,
                lagging_busy: None,
                starve_once: None,
                stall_once: None,
                specs: Vec::new(),
                schedules: Vec::new(),
                extra: Duration::ZERO,
                unsampled: false,
            }
        }

        fn latency(&self, rate: f64, i: u64) -> Duration {
            let jitter = Duration::from_micros(i % 10 * 1_000) + self.extra;
            if rate <= self.capacity {
                15 * MS + jitter
            } else {
                let over = rate / self.capacity - 1.0;
                Duration::from_secs_f64(0.25 + 4.0 * over) + jitter
            }
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("the fake refused phase `{0}`")]
    pub(in crate::plan) struct FakeError(String);

    impl PhaseRunner for FakeService {
        type Error = FakeError;

        async fn run(
            &mut self,
            spec: PhaseSpec,
            schedule: Schedule,
            on_window: OnWindow,
        ) -> Result<PhaseRun, FakeError> {
            self.specs.push(spec.clone());
            self.schedules.push(schedule);
            if self.fail_phase.as_deref() == Some(spec.name.as_str()) {
                return Err(FakeError(spec.name));
            }
            let rate = spec.sessions_per_sec * 1.5;
            let names = ["home".to_owned(), "login".to_owned()];
            let mut r = PhaseRecorder::new(&names, spec.warmup, 200 * MS, Duration::from_secs(1));
            let total = spec.warmup + spec.duration;
            let gap = Duration::from_secs_f64(1.0 / rate);
            // Every request's send and answer, fed to the recorder in time order as the engine does.
            enum Event {
                Sent(usize, Duration, Duration),
                Done(usize, Duration, Duration, Outcome),
            }
            let mut events: Vec<(Duration, Event)> = Vec::new();
            let mut t = Duration::ZERO;
            let mut i = 0u64;
            let starved = self.starve_once.as_deref() == Some(spec.name.as_str());
            let stalled = self.stall_once.as_deref() == Some(spec.name.as_str());
            let lagging = rate > self.invalid_above || starved;
            let busy = if starved {
                Some(0.2)
            } else {
                self.lagging_busy
            };
            let stall =
                (spec.warmup + Duration::from_secs(1))..(spec.warmup + Duration::from_secs(2));
            while t < total {
                // Two of three requests are `home`, one is `login`.
                let op = usize::from(i % 3 == 2);
                let lag = if lagging { 50 * MS } else { Duration::ZERO };
                let wrong = op == 1
                    && self
                        .login_wrong_every
                        .is_some_and(|n| (i / 3).is_multiple_of(n));
                let outcome = if wrong {
                    Outcome::WrongAnswer("expected status 200, got 401".into())
                } else {
                    Outcome::Ok
                };
                let stalled_for = if stalled && stall.contains(&t) {
                    800 * MS
                } else {
                    Duration::ZERO
                };
                let done = t + lag + self.latency(rate, i) + stalled_for;
                events.push((t + lag, Event::Sent(op, t, t + lag)));
                events.push((done, Event::Done(op, t, t + lag, outcome)));
                t += gap;
                i += 1;
            }
            events.sort_by_key(|(at, _)| *at);
            let mut stopped = None;
            let mut arrivals_end = total;
            let mut next_tick = Duration::from_secs(1);
            let mut end = Duration::ZERO;
            for (at, event) in events {
                // The engine asks the hook while arrivals run, once a second.
                if stopped.is_none() && at >= next_tick && at < total {
                    let closed = r.roll_to(at);
                    if let (true, Some(busy)) = (lagging, busy) {
                        r.generator_busy(busy);
                    }
                    for w in closed {
                        if let WindowDecision::Stop(reason) = on_window(&w) {
                            stopped = Some(reason);
                            arrivals_end = at;
                            break;
                        }
                    }
                    // On the whole-second grid, as the engine ticks.
                    while next_tick <= at {
                        next_tick += Duration::from_secs(1);
                    }
                }
                match event {
                    Event::Sent(op, intended, sent) if intended < arrivals_end => {
                        r.arrival(intended);
                        r.sent(op, intended, sent);
                    }
                    Event::Done(op, intended, sent, outcome) if intended < arrivals_end => {
                        r.completed(op, intended, sent, at, &outcome);
                    }
                    _ => continue,
                }
                end = at;
            }
            let measurement = r.finish(FinishInfo {
                name: spec.name.clone(),
                seed: spec.seed,
                sessions_per_sec: spec.sessions_per_sec,
                arrivals_end,
                end,
                max_lag: 10 * MS,
                max_drop_rate: 0.01,
                generator_cpu: busy
                    .filter(|_| lagging)
                    .map(|b| Duration::from_secs_f64(b * end.as_secs_f64())),
                generator_core: None,
                stopped,
            });
            let resources = (0..spec.duration.as_secs())
                .map(|s| ResourceSample {
                    elapsed_s: 30.0 + s as f64,
                    cpu_seconds: s as f64 * 0.2,
                    rss_bytes: (40 << 20)
                        + (self.leak_bytes_per_sec * s as f64) as u64
                        + (s % 3) * 8192,
                    threads: 4,
                    fds: 9,
                })
                .collect();
            let (resources, measured_s) = if self.unsampled {
                (
                    Vec::new(),
                    Some([100.0, 100.0 + spec.duration.as_secs_f64()]),
                )
            } else {
                (resources, None)
            };
            Ok(PhaseRun {
                measurement,
                resources,
                measured_s,
            })
        }
    }

    fn plan(
        config: &LoadgateConfig,
        fake: &mut FakeService,
        options: &PlanOptions,
    ) -> (Result<PlanOutcome, PlanError<FakeError>>, Vec<String>) {
        let mut events = Vec::new();
        let mut observer = |e: PlanEvent| {
            events.push(match e {
                PlanEvent::PhaseStarting { spec, .. } => format!("start {}", spec.name),
                PlanEvent::StepDone { record, .. } => format!("step {}", record.phase),
                PlanEvent::RampDone { .. } => "ramp done".to_owned(),
                PlanEvent::SoakDone { .. } => "soak done".to_owned(),
                PlanEvent::SoakSkipped { reason } => format!("soak skipped: {reason}"),
                PlanEvent::SpikeDone { outcome, .. } => {
                    format!("spike done: {}", outcome.admission.admission.label())
                }
                PlanEvent::SpikeSkipped { reason } => format!("spike skipped: {reason}"),
                PlanEvent::StressDone { outcome, .. } => {
                    format!("stress done: {}", outcome.harm.label())
                }
                PlanEvent::StressSkipped { reason } => format!("stress skipped: {reason}"),
            })
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let outcome = rt.block_on(run_plan(config, fake, options, &mut observer));
        (outcome, events)
    }

    fn knee_of(capacity: f64) -> (PlanOutcome, Vec<String>) {
        let mut fake = FakeService::new(capacity);
        let (outcome, events) = plan(&config(""), &mut fake, &PlanOptions::default());
        (outcome.expect("the fake runs every phase"), events)
    }

    #[test]
    fn knee_lands_within_refine_resolution_of_capacity() {
        // 100% = 150 req/s holds, 150% = 225 breaks; 3 bisections leave a bracket of 75/8 req/s.
        let (outcome, events) = knee_of(200.0);
        let ramp = &outcome.ramp;
        let knee = ramp.knee_rate_per_sec.expect("a knee");
        let upper = ramp
            .lowest_break
            .as_ref()
            .expect("a break")
            .offered_rate_per_sec;
        assert!(knee <= 200.0 && upper > 200.0, "{knee} .. {upper}");
        assert!(upper - knee <= 75.0 / 8.0 + 1e-9, "{knee} .. {upper}");
        assert!(ramp.valid && outcome.valid);
        let phases: Vec<&str> = ramp.steps.iter().map(|s| s.phase.as_str()).collect();
        assert_eq!(
            phases,
            [
                "ramp-25%",
                "ramp-50%",
                "ramp-100%",
                "ramp-150%",
                "ramp-150%-confirm",
                "refine-1",
                "refine-2",
                "refine-2-confirm",
                "refine-3"
            ]
        );
        assert!(ramp.steps.iter().all(|s| s.transient.is_none()));
        assert_eq!(events.first().map(String::as_str), Some("start ramp-25%"));
        assert_eq!(events.last().map(String::as_str), Some("soak done"));
        assert!(events.contains(&"ramp done".to_owned()));
    }

    #[test]
    fn halving_capacity_halves_the_knee() {
        let (full, _) = knee_of(200.0);
        let (half, _) = knee_of(100.0);
        let ratio =
            half.ramp.knee_rate_per_sec.expect("knee") / full.ramp.knee_rate_per_sec.expect("knee");
        assert!((0.4..=0.6).contains(&ratio), "{ratio}");
    }

    #[test]
    fn first_step_breaking_bisects_downward_to_a_knee() {
        // 25% = 37.5 req/s already breaks a 20 req/s service.
        let (outcome, _) = knee_of(20.0);
        let ramp = &outcome.ramp;
        assert_eq!(
            ramp.first_break.as_ref().map(|b| b.phase.as_str()),
            Some("ramp-25%")
        );
        let knee = ramp.knee_rate_per_sec.expect("a knee below the first step");
        assert!((10.0..=20.0).contains(&knee), "{knee}");
        assert!(ramp.steps.iter().all(|s| {
            matches!(s.kind, StepKind::Refine | StepKind::Confirm) || s.phase == "ramp-25%"
        }));
        assert_eq!(
            ramp.steps[1].phase, "ramp-25%-confirm",
            "a break is confirmed"
        );
    }

    #[test]
    fn nothing_holding_says_so_and_skips_the_soak() {
        // A service that breaks at any rate a step can judge (20 requests in 4 s = 5 req/s).
        let (outcome, events) = knee_of(0.5);
        let ramp = &outcome.ramp;
        assert_eq!(ramp.knee_rate_per_sec, None);
        assert!(
            ramp.sentence.starts_with("nothing held: even "),
            "{}",
            ramp.sentence
        );
        let lowest = ramp
            .steps
            .iter()
            .map(|s| s.offered_rate_per_sec)
            .fold(f64::INFINITY, f64::min);
        assert!(
            lowest >= 5.0,
            "halving stops where a step can still be judged: {lowest}"
        );
        assert!(outcome.soak.is_none());
        assert_eq!(
            events.last().map(String::as_str),
            Some(
                "soak skipped: no capacity to soak at: nothing held and no baseline knee was given"
            )
        );
    }

    #[test]
    fn a_step_the_generator_could_not_keep_twice_stops_the_ramp_and_the_run_is_invalid() {
        // Lag without a measured CPU share: not the generator's limit, so measured again first.
        let mut fake = FakeService::new(1_000.0);
        fake.invalid_above = 100.0;
        let (outcome, _) = plan(&config(""), &mut fake, &PlanOptions::default());
        let outcome = outcome.expect("runs");
        let ramp = &outcome.ramp;
        assert!(!ramp.valid && !outcome.valid);
        let phases: Vec<&str> = ramp.steps.iter().map(|s| s.phase.as_str()).collect();
        assert_eq!(
            phases,
            [
                "ramp-25%",
                "ramp-50%",
                "ramp-100%",
                "ramp-100%-confirm",
                "ramp-100%-confirm-2"
            ],
            "measured again twice while the generator could not keep it"
        );
        assert!(!ramp.steps[2].valid && !ramp.steps[2].held.holds);
        assert_eq!(ramp.first_break, None, "an invalid step is not a break");
        assert_eq!(ramp.generator_limit, None, "nor the generator's limit");
        assert_eq!(ramp.knee_rate_per_sec, Some(75.0));
        assert_eq!(
            outcome.soak_skipped.as_deref(),
            Some("the ramp was invalid and no baseline knee was given: no capacity to soak at")
        );
        insta::assert_snapshot!(ramp.sentence, @"invalid: the ramp stopped at `ramp-100%` (150 req/s offered) because the generator could not keep its schedule (pacing lag p99 50.015 ms exceeds the limit of 10.000 ms); held through 75.0 req/s before it");
        // With a baseline's knee the soak still runs: its metrics do not depend on the ramp.
        let mut fake = FakeService::new(1_000.0);
        fake.invalid_above = 100.0;
        let options = PlanOptions {
            baseline_knee_sessions_per_sec: Some(50.0),
            ..PlanOptions::default()
        };
        let soak = plan(&config(""), &mut fake, &options).0.expect("runs").soak;
        assert_eq!(soak.map(|s| s.at_sessions_per_sec), Some(30.0));
    }

    #[test]
    fn a_generator_bound_ramp_stops_at_a_lower_bound_and_still_soaks_and_judges_the_leak() {
        // The service never breaks; the generator saturates above 200 req/s (ramp-150% offers
        // 225): capacity is "≥ 150 req/s", the soak runs where the generator kept up.
        let fake = || {
            let mut fake = FakeService::new(1_000.0);
            fake.invalid_above = 200.0;
            fake.lagging_busy = Some(0.97);
            fake.leak_bytes_per_sec = 2_000.0 * 150.0 * 0.6;
            fake
        };
        let mut this_run = fake();
        let (outcome, events) = plan(&config(""), &mut this_run, &PlanOptions::default());
        let outcome = outcome.expect("runs");
        let ramp = &outcome.ramp;
        assert!(ramp.valid && outcome.valid, "{}", ramp.sentence);
        let phases: Vec<&str> = ramp.steps.iter().map(|s| s.phase.as_str()).collect();
        assert_eq!(
            phases,
            [
                "ramp-25%",
                "ramp-50%",
                "ramp-100%",
                "ramp-150%",
                "ramp-150%-confirm"
            ],
            "the generator's limit is confirmed like a break"
        );
        for step in &ramp.steps[3..] {
            assert_eq!(step.status(), super::super::StepStatus::GeneratorLimit);
        }
        assert_eq!(
            ramp.generator_limit.as_ref().map(|b| b.phase.as_str()),
            Some("ramp-150%")
        );
        assert_eq!(
            (ramp.knee_rate_per_sec, ramp.lowest_break.as_ref()),
            (Some(150.0), None)
        );
        insta::assert_snapshot!(ramp.sentence, @"held through 150 req/s, where the generator reached its limit: capacity ≥ 150 req/s (at 225 req/s: pacing lag p99 50.015 ms exceeds the limit of 10.000 ms: the generator was saturated (its loop used 97% of its core))");
        let soak = outcome.soak.as_ref().expect("the soak runs");
        assert!(soak.valid && soak.lowered.is_none());
        assert_eq!(soak.at_sessions_per_sec, 60.0);
        assert!(events.contains(&"soak done".to_owned()));
        // The leak (2 KiB per request at the soak's rate) is judged from the soak.
        let gate = config("").gate;
        assert!(
            crate::compare::leak_finding(&soak.slopes, &gate).is_some(),
            "{:?}",
            soak.slopes.rss_bytes_per_sec
        );
        // A baseline's knee above what the generator kept: the soak stays below the limit.
        let mut against_base = fake();
        let options = PlanOptions {
            baseline_knee_sessions_per_sec: Some(200.0),
            ..PlanOptions::default()
        };
        let soak = plan(&config(""), &mut against_base, &options)
            .0
            .expect("runs")
            .soak
            .expect("the soak runs");
        assert_eq!(soak.at_sessions_per_sec, 60.0);
        insta::assert_snapshot!(soak.lowered.unwrap_or_default(), @"lowered from 120.000 to 60.000 sessions/s (60% of 100.000, the highest step that held below the generator's limit at `ramp-150%`)");
    }

    #[test]
    fn a_stall_in_one_step_is_measured_again_and_is_not_the_knee() {
        // ramp-50% (75 req/s, far below the 200 req/s capacity) stalls for one window once.
        let mut stalled = FakeService::new(200.0);
        stalled.stall_once = Some("ramp-50%".to_owned());
        let (outcome, _) = plan(&config(""), &mut stalled, &PlanOptions::default());
        let ramp = outcome.expect("runs").ramp;
        let (clean, _) = knee_of(200.0);
        assert_eq!(ramp.knee_rate_per_sec, clean.ramp.knee_rate_per_sec);
        let first = &ramp.steps[1];
        assert_eq!(first.phase, "ramp-50%");
        assert_eq!(first.status(), super::super::StepStatus::Transient);
        assert_eq!(ramp.steps[2].phase, "ramp-50%-confirm");
        assert!(ramp.steps[2].holds());
        assert_eq!(ramp.steps[2].confirms.as_deref(), Some("ramp-50%"));
        assert!(ramp.valid);
        assert!(
            ramp.sentence.contains("`ramp-50%` broke once (`home` p99 "),
            "{}",
            ramp.sentence
        );
        assert!(
            ramp.sentence
                .ends_with("and held when measured again: a transient stall, not capacity"),
            "{}",
            ramp.sentence
        );
    }

    #[test]
    fn a_break_whose_re_measurement_was_starved_is_measured_once_more() {
        let mut starved = FakeService::new(200.0);
        starved.starve_once = Some("ramp-150%-confirm".to_owned());
        let (outcome, _) = plan(&config(""), &mut starved, &PlanOptions::default());
        let ramp = outcome.expect("runs").ramp;
        let (clean, _) = knee_of(200.0);
        assert_eq!(ramp.knee_rate_per_sec, clean.ramp.knee_rate_per_sec);
        assert!(ramp.valid, "{}", ramp.sentence);
        let at = |phase: &str| ramp.steps.iter().find(|s| s.phase == phase).unwrap();
        assert!(at("ramp-150%").broke(), "the first break stands, confirmed");
        assert_eq!(
            at("ramp-150%-confirm").status(),
            super::super::StepStatus::Transient
        );
        assert!(at("ramp-150%-confirm-2").broke());
        assert_eq!(
            at("ramp-150%-confirm-2").confirms.as_deref(),
            Some("ramp-150%")
        );
    }

    /// Regression (review): a starved step whose re-measurement broke took that single break as
    /// the knee's upper bound; a break counts only when measured twice.
    #[test]
    fn a_starved_step_that_then_breaks_is_measured_until_the_break_is_confirmed() {
        let mut starved = FakeService::new(200.0);
        starved.starve_once = Some("ramp-150%".to_owned());
        let (outcome, _) = plan(&config(""), &mut starved, &PlanOptions::default());
        let ramp = outcome.expect("runs").ramp;
        let phases: Vec<&str> = ramp.steps.iter().map(|s| s.phase.as_str()).collect();
        assert_eq!(
            &phases[3..6],
            ["ramp-150%", "ramp-150%-confirm", "ramp-150%-confirm-2"]
        );
        assert_eq!(
            ramp.first_break.as_ref().map(|b| b.phase.as_str()),
            Some("ramp-150%-confirm"),
            "a re-measurement of a configured step is that step's break"
        );
        let (clean, _) = knee_of(200.0);
        assert_eq!(ramp.knee_rate_per_sec, clean.ramp.knee_rate_per_sec);
        assert!(ramp.valid);
    }

    #[test]
    fn a_starved_step_is_measured_again_and_the_ramp_goes_on() {
        let mut starved = FakeService::new(200.0);
        starved.starve_once = Some("ramp-100%".to_owned());
        let (outcome, _) = plan(&config(""), &mut starved, &PlanOptions::default());
        let outcome = outcome.expect("runs");
        let ramp = &outcome.ramp;
        let (clean, _) = knee_of(200.0);
        assert_eq!(ramp.knee_rate_per_sec, clean.ramp.knee_rate_per_sec);
        assert!(ramp.valid && outcome.valid);
        let first = ramp.steps.iter().find(|s| s.phase == "ramp-100%").unwrap();
        assert!(!first.valid && first.transient.is_some());
        assert!(
            first.invalid_reasons[0].contains("the generator was starved"),
            "{:?}",
            first.invalid_reasons
        );
    }

    #[test]
    fn errors_at_the_first_step_are_failing_from_the_first_step() {
        let mut fake = FakeService::new(200.0);
        fake.login_wrong_every = Some(4);
        let (outcome, _) = plan(&config(""), &mut fake, &PlanOptions::default());
        let ramp = outcome.expect("runs").ramp;
        assert_eq!(ramp.failing_from_first_step, vec!["login".to_owned()]);
        let knee = ramp
            .knee_rate_per_sec
            .expect("a bug does not hide the capacity");
        assert!(knee > 150.0 && knee <= 200.0, "{knee}");
        let first = &ramp.steps[0].operations[1];
        assert!(
            (0.2..0.3).contains(&(first.errors as f64 / first.requests as f64)),
            "{first:?}"
        );
        assert!(
            ramp.sentence
                .contains("; failing from the first step: `login` (2")
                && ramp.sentence.ends_with("% errors at 37.5 req/s)"),
            "{}",
            ramp.sentence
        );
    }

    #[test]
    fn keep_going_runs_every_step() {
        let mut fake = FakeService::new(100.0);
        let options = PlanOptions {
            keep_going: true,
            ..PlanOptions::default()
        };
        let (outcome, _) = plan(&config(""), &mut fake, &options);
        let ramp = outcome.expect("runs").ramp;
        let steps: Vec<&str> = ramp
            .steps
            .iter()
            .filter(|s| s.kind == StepKind::Step)
            .map(|s| s.phase.as_str())
            .collect();
        assert_eq!(steps, ["ramp-25%", "ramp-50%", "ramp-100%", "ramp-150%"]);
        assert_eq!(
            ramp.first_break.as_ref().map(|b| b.phase.as_str()),
            Some("ramp-100%")
        );
        let knee = ramp.knee_rate_per_sec.expect("knee");
        assert!(knee > 75.0 && knee <= 100.0, "{knee}");
    }

    /// The shards of `run --shard i/N` must send the same phases without seeing each other's
    /// answers: a break is neither confirmed nor bisected, and without a baseline's knee there is
    /// no soak.
    #[test]
    fn a_fixed_plan_runs_every_step_once_and_soaks_only_at_a_baseline_knee() {
        let mut fake = FakeService::new(100.0);
        let options = PlanOptions {
            fixed: true,
            ..PlanOptions::default()
        };
        let (outcome, _) = plan(&config(""), &mut fake, &options);
        let outcome = outcome.expect("runs");
        let phases: Vec<&str> = outcome
            .ramp
            .steps
            .iter()
            .map(|s| s.phase.as_str())
            .collect();
        assert_eq!(phases, ["ramp-25%", "ramp-50%", "ramp-100%", "ramp-150%"]);
        assert_eq!(outcome.soak_skipped.as_deref(), Some(FIXED_PLAN_NO_SOAK));
        let mut fake = FakeService::new(100.0);
        let options = PlanOptions {
            fixed: true,
            baseline_knee_sessions_per_sec: Some(50.0),
            ..PlanOptions::default()
        };
        let soak = plan(&config(""), &mut fake, &options).0.expect("runs").soak;
        assert_eq!(soak.map(|s| s.at_sessions_per_sec), Some(30.0));
    }

    #[test]
    fn a_ramp_that_never_breaks_has_its_last_step_as_knee() {
        let (outcome, _) = knee_of(10_000.0);
        let ramp = &outcome.ramp;
        assert_eq!(ramp.knee_rate_per_sec, Some(225.0));
        assert_eq!(ramp.steps.len(), 4, "nothing to bisect");
        insta::assert_snapshot!(ramp.sentence, @"held through 225 req/s, the highest step; nothing broke, so the knee lies above it");
    }

    #[test]
    fn the_soak_runs_at_the_baseline_knee_when_given() {
        let mut fake = FakeService::new(200.0);
        fake.leak_bytes_per_sec = 64.0 * 1024.0;
        let options = PlanOptions {
            baseline_knee_sessions_per_sec: Some(50.0),
            ..PlanOptions::default()
        };
        let (outcome, _) = plan(&config(""), &mut fake, &options);
        let soak = outcome.expect("runs").soak.expect("soak ran");
        assert_eq!(soak.capacity_from, CapacitySource::Baseline);
        assert_eq!(soak.at_sessions_per_sec, 30.0);
        assert_eq!(soak.offered_rate_per_sec, 45.0);
        let spec = fake.specs.last().expect("soak spec");
        assert_eq!(
            (spec.name.as_str(), spec.duration),
            ("soak", Duration::from_secs(20))
        );
        let rss = soak.slopes.rss_bytes_per_sec.expect("samples");
        assert!(
            rss.low > 0.0 && (rss.estimate / (64.0 * 1024.0) - 1.0).abs() < 0.25,
            "{rss:?}"
        );
        // The plan measures the slopes; the leak rule that reads them is compare's.
        assert_eq!(soak.leak, None);
        let gate = config("").gate;
        assert!(
            crate::compare::leak_finding(&soak.slopes, &gate).is_some(),
            "64 KiB/s is past 2 MiB/min"
        );
        let p99 = soak.slopes.p99_seconds_per_sec.expect("windows");
        assert!(p99.contains(0.0), "{p99:?}");
    }

    /// A target without resource samples (a `url` target) still gets the soak's span on the
    /// sampler's clock, which the probes' slopes are fitted to; one with samples gets theirs.
    #[test]
    fn the_soak_span_falls_back_to_the_measured_part_without_samples() {
        let mut fake = FakeService::new(200.0);
        let (outcome, _) = plan(&config(""), &mut fake, &PlanOptions::default());
        let soak = outcome.expect("runs").soak.expect("soak ran");
        assert_eq!(soak.sampled_s, Some([30.0, 49.0]), "the samples' span");
        let mut unsampled = FakeService::new(200.0);
        unsampled.unsampled = true;
        let (outcome, _) = plan(&config(""), &mut unsampled, &PlanOptions::default());
        let soak = outcome.expect("runs").soak.expect("soak ran");
        assert_eq!(soak.samples, 0);
        assert_eq!(
            soak.sampled_s,
            Some([100.0, 120.0]),
            "the measured part's span"
        );
        assert_eq!(soak.slopes.rss_bytes_per_sec, None);
    }

    #[test]
    fn each_phase_numbers_its_sessions_after_the_previous_ones() {
        let mut fake = FakeService::new(200.0);
        let cfg = config("");
        let _ = plan(&cfg, &mut fake, &PlanOptions::default());
        assert!(fake.specs.len() > 2, "{:?}", fake.specs);
        let mut next = 0;
        for spec in &fake.specs {
            assert_eq!(spec.first_session, next, "{}", spec.name);
            let schedule = Schedule::new(
                &cfg.workload,
                spec.sessions_per_sec,
                spec.warmup + spec.duration,
                spec.seed,
            );
            let count = schedule.sessions().count() as u64;
            assert!(count > 0, "{}", spec.name);
            next += count;
        }
    }

    /// The engine must follow the schedule whose hash the result records (it built its own
    /// before, from the same inputs: two builds that could drift apart).
    #[test]
    fn each_phase_runs_on_the_schedule_whose_hash_the_plan_records() {
        let cfg = config("");
        let mut fake = FakeService::new(200.0);
        let mut recorded = Vec::new();
        let mut observer = |e: PlanEvent| match e {
            PlanEvent::StepDone { schedule_hash, .. }
            | PlanEvent::SoakDone { schedule_hash, .. } => recorded.push(schedule_hash),
            _ => {}
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(run_plan(
            &cfg,
            &mut fake,
            &PlanOptions::default(),
            &mut observer,
        ))
        .expect("runs");
        assert!(recorded.len() > 2, "{recorded:?}");
        assert_eq!(fake.schedules.len(), fake.specs.len());
        let handed: Vec<String> = fake.schedules.iter().map(Schedule::hash).collect();
        assert_eq!(handed, recorded);
        for (spec, schedule) in fake.specs.iter().zip(&fake.schedules) {
            assert_eq!(schedule.sessions_per_sec(), spec.sessions_per_sec);
            assert_eq!(schedule.duration(), spec.warmup + spec.duration);
        }
    }

    /// The lookup asks for the first ramp step's schedule hash: the plan records that very hash
    /// for the first step whatever the baseline's knee, while the soak's hash moves with it (so
    /// asking for it would reject baselines that match).
    #[test]
    fn the_comparable_schedule_hash_is_the_first_steps_and_not_the_soaks() {
        let cfg = config("");
        let hashes = |knee: Option<f64>| {
            let mut hashes = Vec::new();
            let mut observer = |e: PlanEvent| match e {
                PlanEvent::StepDone { schedule_hash, .. }
                | PlanEvent::SoakDone { schedule_hash, .. } => hashes.push(schedule_hash),
                _ => {}
            };
            let options = PlanOptions {
                baseline_knee_sessions_per_sec: knee,
                ..PlanOptions::default()
            };
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime");
            rt.block_on(run_plan(
                &cfg,
                &mut FakeService::new(200.0),
                &options,
                &mut observer,
            ))
            .expect("runs");
            hashes
        };
        let (own, based) = (hashes(None), hashes(Some(50.0)));
        let wanted = comparable_schedule_hash(&cfg).expect("steps");
        assert_eq!(own[0], wanted);
        assert_eq!(based[0], wanted);
        assert_ne!(own.last(), based.last(), "the soaks ran at other rates");
    }

    #[test]
    fn the_steps_ramp_so_far_is_the_plans() {
        let cfg = config("");
        let mut ramps = Vec::new();
        let mut observer = |e: PlanEvent| {
            if let PlanEvent::StepDone { ramp, .. } = e {
                ramps.push(*ramp);
            }
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let outcome = rt
            .block_on(run_plan(
                &cfg,
                &mut FakeService::new(200.0),
                &PlanOptions::default(),
                &mut observer,
            ))
            .expect("runs");
        assert_eq!(ramps.len(), outcome.ramp.steps.len());
        assert_eq!(ramps.last(), Some(&outcome.ramp));
    }

    #[test]
    fn goodput_is_counted_within_the_loosest_limit() {
        let mut slo = config("").slo;
        assert_eq!(goodput_latency(&slo), Duration::from_millis(200));
        slo.latency.clear();
        assert_eq!(goodput_latency(&slo), DEFAULT_GOODPUT_LATENCY);
    }

    #[test]
    fn the_soak_uses_this_runs_knee_without_a_baseline() {
        let (outcome, _) = knee_of(200.0);
        let soak = outcome.soak.expect("soak ran");
        assert_eq!(soak.capacity_from, CapacitySource::ThisRun);
        let knee = outcome.ramp.knee_sessions_per_sec.expect("knee");
        assert!((soak.at_sessions_per_sec - 0.6 * knee).abs() < 1e-9);
        assert_eq!(
            crate::compare::leak_finding(&soak.slopes, &config("").gate),
            None
        );
    }

    #[test]
    fn an_overloaded_step_is_aborted_and_kept() {
        // A tight envelope: p99 above 500 ms for two windows stops the phase; 75 req/s against
        // a capacity of 70 takes about 540 ms.
        let cfg = config("[abort]\np99 = \"500ms\"\n");
        let mut fake = FakeService::new(70.0);
        let (outcome, _) = plan(&cfg, &mut fake, &PlanOptions::default());
        let ramp = outcome.expect("runs").ramp;
        let broke = ramp
            .steps
            .iter()
            .find(|s| s.phase == "ramp-50%")
            .expect("ran");
        let reason = broke.aborted.as_deref().expect("aborted");
        assert!(
            reason.ends_with("in 2 consecutive windows (abort limits)"),
            "{reason}"
        );
        assert!(broke.broke() && broke.operations[0].requests > 0);
    }

    #[test]
    fn a_phase_that_cannot_run_keeps_what_ran_before() {
        let mut fake = FakeService::new(200.0);
        fake.fail_phase = Some("ramp-100%".into());
        let (outcome, _) = plan(&config(""), &mut fake, &PlanOptions::default());
        match outcome {
            Err(PlanError::Phase { phase, partial, .. }) => {
                assert_eq!(phase, "ramp-100%");
                assert_eq!(partial.ramp.steps.len(), 2);
                assert!(!partial.valid);
            }
            other => panic!("expected a phase error, got {other:?}"),
        }
    }

    /// Regression: a step where no class had `slo.min-requests` requests "held" (nothing was
    /// judged). Now its classes are judged pooled, and with too few even pooled the step neither
    /// holds nor breaks: the ramp goes on to the next step.
    #[test]
    fn a_step_with_too_few_requests_neither_holds_nor_breaks() {
        // 25% sends 100 `home` and 50 `login`; 50% sends 200 and 100.
        let (outcome, _) = plan(
            &config("[profile.default.slo]\nmin-requests = 200\n"),
            &mut FakeService::new(200.0),
            &PlanOptions::default(),
        );
        let ramp = outcome.expect("runs").ramp;
        let first = &ramp.steps[0];
        assert_eq!(first.phase, "ramp-25%");
        assert!(
            first.unjudged() && !first.holds() && !first.broke(),
            "{first:?}"
        );
        assert_eq!(ramp.steps[1].held.basis, JudgementBasis::PerClass);
        assert!(ramp.steps[1].holds());
        let knee = ramp
            .knee_rate_per_sec
            .expect("a knee above the unjudged step");
        assert!(knee > 150.0, "{knee}");
        assert!(
            ramp.sentence.ends_with("; `ramp-25%` had too few requests to judge (fewer than slo.min-requests in all classes together) and counted as neither held nor broke"),
            "{}",
            ramp.sentence
        );
        let table = render_step_table_for_test(&ramp);
        assert!(table.contains("too few\n"), "{table}");
        assert!(table.contains("ramp-25%: too few requests to judge: 150 in all classes together, fewer than slo.min-requests (200); neither held nor broke"), "{table}");
    }

    #[test]
    fn a_step_where_no_class_has_enough_requests_is_judged_pooled() {
        // 25% sends 100 `home` and 50 `login`: no class has 120, together they have 150.
        let (outcome, _) = plan(
            &config("[profile.default.slo]\nmin-requests = 120\n"),
            &mut FakeService::new(200.0),
            &PlanOptions::default(),
        );
        let first = outcome.expect("runs").ramp.steps.remove(0);
        assert_eq!(first.held.basis, JudgementBasis::Pooled);
        assert!(first.holds(), "{first:?}");
        assert_eq!(
            first.held.note.as_deref(),
            Some("judged pooled: no class had 120 requests")
        );
    }

    #[test]
    fn sentence_and_step_table_read_well() {
        let (outcome, _) = knee_of(200.0);
        let ramp = &outcome.ramp;
        insta::assert_snapshot!(ramp.sentence, @"held through 197 req/s; broke at 206 req/s: `home` p99 384 ms > 200 ms; `login` p99 384 ms > 200 ms");
        insta::assert_snapshot!(render_step_table_for_test(ramp));
    }

    fn render_step_table_for_test(ramp: &RampOutcome) -> String {
        // The table is the report's; the ramp it shows is the plan's.
        crate::report::render_step_table(ramp)
    }

    #[test]
    fn step_names_trim_their_percentages() {
        assert_eq!(step_name(0.25), "ramp-25%");
        assert_eq!(step_name(0.125), "ramp-12.5%");
        assert_eq!(step_name(1.5), "ramp-150%");
    }

    #[test]
    fn outcome_round_trips_through_json() {
        let (outcome, _) = knee_of(200.0);
        let json = serde_json::to_string(&outcome).expect("serializes");
        let back: PlanOutcome = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back.ramp.knee_rate_per_sec, outcome.ramp.knee_rate_per_sec);
        assert_eq!(back.ramp.steps.len(), outcome.ramp.steps.len());
        assert_eq!(back.soak.map(|s| s.slopes), outcome.soak.map(|s| s.slopes));
    }
}
