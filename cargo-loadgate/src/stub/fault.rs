//! `[[fault]]` on a stub (issue 15, seed 002's "resilience under a named fault"): a change to a
//! stub's answers, applied `at` into a phase's measured part and removed `for` later, then
//! verified from the stub's own figures (what it served while the fault held, and after), with
//! the time to stable SLO after the removal read from the phase's windows.
//!
//! The schedule is a task on the run's runtime (the generator runs on threads of its own), which
//! notes when it applied and removed the fault as it goes: a phase that ends first leaves the
//! fault applied, and [`ScheduledFault::finish`] removes it and says so.

use super::server::{Applied, StubController, StubFault};
use crate::plan::Recovery;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// When a fault was applied and removed: each the stub's state generation and the offset from the
/// start of the phase's measured part.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FaultTimes {
    /// The generation the fault was served under, and when it was applied.
    pub applied: Option<(u64, Duration)>,
    /// The generation after its removal, and when it was removed.
    pub removed: Option<(u64, Duration)>,
    /// Whether [`ScheduledFault::finish`] had to remove it (the phase ended first).
    pub cut_short: bool,
}

/// A fault whose schedule runs.
#[derive(Debug)]
pub struct ScheduledFault {
    controller: StubController,
    times: Arc<Mutex<FaultTimes>>,
    measured_from: Instant,
    task: tokio::task::JoinHandle<()>,
}

/// Starts `change`'s schedule on `controller`'s stub: applied `at` after `measured_from` (the start
/// of the phase's measured part), removed `duration` later. Needs a tokio runtime.
pub fn schedule(
    controller: StubController,
    change: StubFault,
    measured_from: Instant,
    at: Duration,
    duration: Duration,
) -> ScheduledFault {
    let times = Arc::new(Mutex::new(FaultTimes::default()));
    let task = {
        let controller = controller.clone();
        let times = Arc::clone(&times);
        let start = tokio::time::Instant::from_std(measured_from);
        tokio::spawn(async move {
            tokio::time::sleep_until(start + at).await;
            let generation = controller.apply(Some(change));
            let when = measured_from.elapsed();
            lock(&times).applied = Some((generation, when));
            tokio::time::sleep_until(start + at + duration).await;
            let generation = controller.apply(None);
            let when = measured_from.elapsed();
            lock(&times).removed = Some((generation, when));
        })
    };
    ScheduledFault {
        controller,
        times,
        measured_from,
        task,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ScheduledFault {
    /// Ends the schedule: a fault still applied is removed now (`cut_short`); returns the times.
    pub fn finish(self) -> FaultTimes {
        self.task.abort();
        let mut times = *lock(&self.times);
        if times.applied.is_some() && times.removed.is_none() {
            let generation = self.controller.apply(None);
            times.removed = Some((generation, self.measured_from.elapsed()));
            times.cut_short = true;
        }
        times
    }

    /// The stub's handle.
    pub fn controller(&self) -> &StubController {
        &self.controller
    }
}

/// What a fault did, as the result records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// Its name.
    pub name: String,
    /// The stub it changed; empty (and absent from the JSON) for a replica fault.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stub: String,
    /// What a replica fault did to its replica and what the generator saw of it; absent for a
    /// stub fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<ReplicaFaultRecord>,
    /// The phase it ran in.
    pub phase: String,
    /// What it did, e.g. `latency +180ms`.
    pub change: String,
    /// When it was due, from the start of the phase's measured part.
    #[serde(rename = "at_ms", with = "crate::measure::millis")]
    pub at: Duration,
    /// How long it was due to hold.
    #[serde(rename = "for_ms", with = "crate::measure::millis")]
    pub duration: Duration,
    /// When it was applied (from the start of the measured part), if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_at_ms: Option<f64>,
    /// When it was removed, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_at_ms: Option<f64>,
    /// What the stub served while it held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<Applied>,
    /// What the stub served after its removal, until the end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Applied>,
    /// Whether the stub's figures show it applied and removed.
    pub verified: bool,
    /// Why it is not verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The time to stable SLO after its removal, from the phase's windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// The good windows in a row that recovery needs (`[recovery] windows`).
    pub recovery_windows: usize,
    /// The `[slo] recovery` check of the time to stable SLO after its removal, when a limit is
    /// set (`compare::fault_recovery_check`): a failure is a regression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<crate::plan::RecoveryCheck>,
    /// Its `degraded` objective judged on the phase's windows while it held, when one is
    /// declared: a failure is a regression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<DegradedCheck>,
}

/// A fault's `degraded` objective, judged on the 1 s windows of its phase that lie wholly between
/// its application and its removal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DegradedCheck {
    /// The objective.
    pub objective: crate::config::DegradedObjective,
    /// The windows judged.
    pub windows: usize,
    /// Of those, the windows within every limit.
    pub held: usize,
    /// The worst window's p50, p99 and error rate.
    pub worst_p50_ms: Option<f64>,
    /// See `worst_p50_ms`.
    pub worst_p99_ms: Option<f64>,
    /// See `worst_p50_ms`.
    pub worst_error_rate: Option<f64>,
    /// Pass when every window held, fail when one did not, inconclusive without a window to read
    /// or in an invalid phase.
    pub outcome: crate::plan::RecoveryCheckOutcome,
    /// Why, with the numbers.
    pub reason: String,
}

/// Judges `objective` on the `windows` of a fault's phase that start at or after `applied_ms`
/// and end by `removed_ms` (ms from the start of the measured part); `phase` says whether the
/// phase was valid, and why not.
pub fn degraded_check(
    objective: &crate::config::DegradedObjective,
    (applied_ms, removed_ms): (Option<f64>, Option<f64>),
    windows: &[crate::measure::Window],
    (valid, invalid_reasons): (bool, &[String]),
) -> DegradedCheck {
    use crate::plan::RecoveryCheckOutcome;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let inside: Vec<&crate::measure::Window> = match (applied_ms, removed_ms) {
        (Some(from), Some(to)) => windows
            .iter()
            .filter(|w| ms(w.start) >= from && ms(w.start + w.length) <= to)
            .collect(),
        _ => Vec::new(),
    };
    let rate = |w: &crate::measure::Window| {
        if w.completed == 0 {
            0.0
        } else {
            w.errors as f64 / w.completed as f64
        }
    };
    let holds = |w: &crate::measure::Window| {
        objective.p50.is_none_or(|l| w.p50 <= l)
            && objective.p99.is_none_or(|l| w.p99 <= l)
            && objective.error_rate.is_none_or(|l| rate(w) <= l)
    };
    let held = inside.iter().filter(|w| holds(w)).count();
    let worst = |f: &dyn Fn(&crate::measure::Window) -> f64| {
        inside.iter().map(|w| f(w)).max_by(f64::total_cmp)
    };
    let worst_p50_ms = worst(&|w| ms(w.p50));
    let worst_p99_ms = worst(&|w| ms(w.p99));
    let worst_error_rate = worst(&rate);
    let limits = describe_objective(objective);
    let (outcome, reason) = if !valid {
        (
            RecoveryCheckOutcome::Inconclusive,
            format!(
                "the phase is invalid ({}): its windows do not show the service during the fault",
                invalid_reasons.join("; ")
            ),
        )
    } else if inside.is_empty() {
        (
            RecoveryCheckOutcome::Inconclusive,
            "no whole window of the phase lies inside the fault".to_owned(),
        )
    } else {
        let worst = format!(
            "worst window p50 {:.0} ms, p99 {:.0} ms, errors {:.1}%",
            worst_p50_ms.unwrap_or_default(),
            worst_p99_ms.unwrap_or_default(),
            worst_error_rate.unwrap_or_default() * 100.0
        );
        let outcome = if held == inside.len() {
            RecoveryCheckOutcome::Pass
        } else {
            RecoveryCheckOutcome::Fail
        };
        (
            outcome,
            format!(
                "the degraded objective ({limits}) held in {held} of {} windows during the \
                 fault ({worst})",
                inside.len()
            ),
        )
    };
    DegradedCheck {
        objective: *objective,
        windows: inside.len(),
        held,
        worst_p50_ms,
        worst_p99_ms,
        worst_error_rate,
        outcome,
        reason,
    }
}

/// `p99 ≤ 1s, errors ≤ 5%`.
fn describe_objective(o: &crate::config::DegradedObjective) -> String {
    let mut parts = Vec::new();
    if let Some(p50) = o.p50 {
        parts.push(format!("p50 ≤ {}", crate::config::format_duration(p50)));
    }
    if let Some(p99) = o.p99 {
        parts.push(format!("p99 ≤ {}", crate::config::format_duration(p99)));
    }
    if let Some(rate) = o.error_rate {
        parts.push(format!("errors ≤ {}", crate::config::format_percent(rate)));
    }
    parts.join(", ")
}

/// What a replica fault did (`replica`, `action`) and what the generator saw of the replica over
/// the fault's phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplicaFaultRecord {
    /// The replica, from 1.
    pub replica: u32,
    /// `kill` or `pause`.
    pub action: String,
    /// When it was seen exited (kill) or stopped (pause), ms from the start of the measured part.
    pub confirmed_at_ms: Option<f64>,
    /// When it was seen back: ready again after its restart (kill), or running (pause).
    pub back_at_ms: Option<f64>,
    /// Its output when it did not come back after its restart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_tail: Vec<String>,
    /// Attempts it failed over the phase (transport errors).
    pub failed: u64,
    /// Attempts that failed on it (a transport error, or a 5xx when `failover.on` names it) and
    /// were sent again to another replica.
    pub failovers: u64,
    /// Logical operations that ended in an error on it over the phase.
    pub errors: u64,
    /// Its first and last logical error, ms from the start of the measured part.
    pub first_error_ms: Option<f64>,
    /// See `first_error_ms`.
    pub last_error_ms: Option<f64>,
    /// The failover window: from the fault's application to the last logical error on the
    /// replica (0 when every failed attempt was failed over); the time clients saw its failure.
    pub failover_window_ms: Option<f64>,
    /// Logical errors on the other replicas over the phase.
    pub errors_elsewhere: u64,
}

impl ReplicaFaultRecord {
    /// The record of a replica fault that did nothing: its phase never ran.
    fn untouched(replica: u32, action: crate::config::ReplicaAction) -> Self {
        Self {
            replica,
            action: action.as_str().to_owned(),
            confirmed_at_ms: None,
            back_at_ms: None,
            log_tail: Vec::new(),
            failed: 0,
            failovers: 0,
            errors: 0,
            first_error_ms: None,
            last_error_ms: None,
            failover_window_ms: None,
            errors_elsewhere: 0,
        }
    }
}

impl FaultRecord {
    /// The record of a fault whose phase never ran (skipped, or the plan stopped before it).
    pub fn not_run(config: &crate::config::FaultConfig, required: usize) -> Self {
        FaultRecord {
            name: config.name.clone(),
            stub: config.stub().unwrap_or_default().to_owned(),
            replica: match &config.target {
                crate::config::FaultTarget::Replica { replica, action } => {
                    Some(ReplicaFaultRecord::untouched(*replica, *action))
                }
                crate::config::FaultTarget::Stub { .. } => None,
            },
            phase: config.phase.clone(),
            change: config.describe(),
            at: config.at,
            duration: config.duration,
            applied_at_ms: None,
            removed_at_ms: None,
            during: None,
            after: None,
            verified: false,
            problem: Some(format!("its phase (`{}`) did not run", config.phase)),
            recovery: None,
            recovery_windows: required,
            check: None,
            degraded: None,
        }
    }

    /// One line: `fault slow-fraud (stub fraud: latency +180ms, soak 10.0 s to 20.0 s): verified,
    /// 212 requests served with 181–224 ms (mean 190 ms); stable after 1.0 s`.
    pub fn statement(&self) -> String {
        let required = self.recovery_windows;
        let when = match (self.applied_at_ms, self.removed_at_ms) {
            (Some(a), Some(r)) => format!("{} {:.1} s to {:.1} s", self.phase, a / 1e3, r / 1e3),
            (Some(a), None) => format!("{} from {:.1} s", self.phase, a / 1e3),
            _ => format!("{}, never applied", self.phase),
        };
        let served = self
            .during
            .as_ref()
            .map(|d| {
                format!(
                    "; {} requests served under it with {:.0}–{:.0} ms (mean {:.0} ms), {} errors",
                    d.requests, d.delay_min_ms, d.delay_max_ms, d.delay_mean_ms, d.errors
                )
            })
            .unwrap_or_default();
        let verified = match &self.problem {
            None => "verified".to_owned(),
            Some(why) => format!("NOT verified: {why}"),
        };
        let recovery = self
            .recovery
            .as_ref()
            .map(|r| format!("; after its removal {}", r.describe(required)))
            .unwrap_or_default();
        let on = match &self.replica {
            Some(_) => self.change.clone(),
            None => format!("stub {}: {}", self.stub, self.change),
        };
        let replica = self
            .replica
            .as_ref()
            .map(|r| {
                let applied = self.applied_at_ms.unwrap_or_default();
                let removed = self.removed_at_ms.unwrap_or_default();
                let seen = match (r.action.as_str(), r.confirmed_at_ms) {
                    ("kill", Some(at)) => format!("; exited {:.0} ms after SIGKILL", at - applied),
                    (_, Some(at)) => format!("; stopped {:.0} ms after SIGSTOP", at - applied),
                    _ => String::new(),
                };
                let back = match (r.action.as_str(), r.back_at_ms) {
                    ("kill", Some(at)) => {
                        format!(", ready again {:.0} ms after its restart", at - removed)
                    }
                    (_, Some(at)) => format!(", running {:.0} ms after SIGCONT", at - removed),
                    _ => String::new(),
                };
                let window = r
                    .failover_window_ms
                    .map(|w| format!(" (failover window {w:.0} ms)"))
                    .unwrap_or_default();
                format!(
                    "{seen}{back}; {} attempts failed on it, {} failed over, {} errors{window}, {} \
                     errors on the other replicas",
                    r.failed, r.failovers, r.errors, r.errors_elsewhere
                )
            })
            .unwrap_or_default();
        let degraded = self
            .degraded
            .as_ref()
            .map(|d| format!("; {}", d.reason))
            .unwrap_or_default();
        format!(
            "fault {} ({on}, {when}): {verified}{served}{replica}{degraded}{recovery}",
            self.name
        )
    }
}

/// Records what a fault did from its `times` ([`ScheduledFault::finish`]): what `controller`'s
/// stub served under it and after it, whether that verifies it, and the time to stable SLO after
/// its removal from `windows` (its phase's, `required` in a row).
pub fn record(
    config: &crate::config::FaultConfig,
    controller: &StubController,
    times: FaultTimes,
    windows: &[crate::measure::Window],
    required: usize,
    slo: &crate::config::SloConfig,
) -> FaultRecord {
    let during = times.applied.and_then(|(g, _)| controller.applied(g));
    let after = times.removed.and_then(|(g, _)| controller.applied(g));
    let (stub, change) = match &config.target {
        crate::config::FaultTarget::Stub { stub, change } => (stub.as_str(), *change),
        crate::config::FaultTarget::Replica { .. } => (
            "",
            StubFault {
                extra: Duration::ZERO,
                factor: 1.0,
                errors: None,
            },
        ),
    };
    let verdict = verify(&change, stub, &times, during.as_ref(), after.as_ref());
    // From the removal as scheduled: the timer fires a millisecond or so after it, and a window
    // that starts at the removal's second must count (`time_to_stable` reads no window that
    // starts before its event).
    let recovery =
        match times.removed {
            Some(_) if !times.cut_short && !windows.is_empty() => Some(
                crate::plan::time_to_stable(windows, config.at + config.duration, required, slo),
            ),
            _ => None,
        };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    FaultRecord {
        name: config.name.clone(),
        stub: stub.to_owned(),
        replica: None,
        phase: config.phase.clone(),
        change: config.describe(),
        at: config.at,
        duration: config.duration,
        applied_at_ms: times.applied.map(|(_, t)| ms(t)),
        removed_at_ms: times.removed.map(|(_, t)| ms(t)),
        during,
        after,
        verified: verdict.is_ok(),
        problem: verdict.err(),
        recovery,
        recovery_windows: required,
        check: None,
        degraded: None,
    }
}

/// Records what a replica fault did from its `times` ([`crate::targets::ScheduledReplicaFault`]):
/// verified when the replica was seen exited or stopped after the signal and back (ready again,
/// or running) after the removal; what the generator saw of the replica over the phase (from
/// `measurement`'s per-replica figures: the failover window, the errors); and the time to stable
/// SLO after the removal from its windows (`required` in a row).
pub fn record_replica(
    config: &crate::config::FaultConfig,
    times: crate::targets::ReplicaFaultTimes,
    measurement: Option<&crate::measure::PhaseMeasurement>,
    required: usize,
    slo: &crate::config::SloConfig,
) -> FaultRecord {
    let (replica, action) = match &config.target {
        crate::config::FaultTarget::Replica { replica, action } => (*replica, *action),
        crate::config::FaultTarget::Stub { .. } => (0, crate::config::ReplicaAction::Kill),
    };
    let problem = if let Some(why) = &times.problem {
        Some(why.clone())
    } else if times.applied_at_ms.is_none() {
        Some("the phase ended before it was due".to_owned())
    } else if times.cut_short {
        Some("the phase ended before it was due to be removed".to_owned())
    } else if times.confirmed_at_ms.is_none() || times.back_at_ms.is_none() {
        Some("the replica's state was not seen to change".to_owned())
    } else {
        None
    };
    let windows = measurement
        .map(|m| m.windows.windows.as_slice())
        .unwrap_or_default();
    // A fault through the ramp is removed between phases: no phase's windows follow it.
    let recovery = match times.removed_at_ms {
        Some(_) if !times.cut_short && !windows.is_empty() && config.phase != "ramp" => Some(
            crate::plan::time_to_stable(windows, config.at + config.duration, required, slo),
        ),
        _ => None,
    };
    let counts = measurement.and_then(|m| m.replicas.get(replica as usize));
    let errors_elsewhere = measurement.map_or(0, |m| {
        m.replicas
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != replica as usize)
            .map(|(_, r)| r.errors)
            .sum()
    });
    let failover_window_ms = match (counts, times.applied_at_ms) {
        (Some(c), Some(applied)) if c.errors > 0 => {
            c.last_error_ms.map(|last| (last - applied).max(0.0))
        }
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    };
    FaultRecord {
        name: config.name.clone(),
        stub: String::new(),
        replica: Some(ReplicaFaultRecord {
            replica,
            action: action.as_str().to_owned(),
            confirmed_at_ms: times.confirmed_at_ms,
            back_at_ms: times.back_at_ms,
            log_tail: times.log_tail,
            failed: counts.map_or(0, |c| c.failed),
            failovers: counts.map_or(0, |c| c.failovers),
            errors: counts.map_or(0, |c| c.errors),
            first_error_ms: counts.and_then(|c| c.first_error_ms),
            last_error_ms: counts.and_then(|c| c.last_error_ms),
            failover_window_ms,
            errors_elsewhere,
        }),
        phase: config.phase.clone(),
        change: config.describe(),
        at: config.at,
        duration: config.duration,
        applied_at_ms: times.applied_at_ms,
        removed_at_ms: times.removed_at_ms,
        during: None,
        after: None,
        verified: problem.is_none(),
        problem,
        recovery,
        recovery_windows: required,
        check: None,
        degraded: None,
    }
}

/// A pass with a fault that could not be verified is inconclusive: the run did not perform the
/// experiment its config declares. Any other outcome stands, with the fault named among the
/// warnings. The comparison's copy of the verdict follows.
pub fn settle_faults(
    head: &crate::result::RunResult,
    comparison: Option<&mut crate::result::Comparison>,
    verdict: &mut crate::result::Verdict,
) {
    use crate::result::VerdictOutcome;
    let unverified: Vec<&FaultRecord> = head.faults.iter().filter(|f| !f.verified).collect();
    if unverified.is_empty() {
        return;
    }
    for fault in unverified {
        let why = format!(
            "fault `{}` could not be verified: {}",
            fault.name,
            fault.problem.as_deref().unwrap_or("no figures")
        );
        if verdict.outcome == VerdictOutcome::Pass {
            let replaced =
                std::mem::replace(&mut verdict.rule_fired, format!("inconclusive: {why}"));
            verdict
                .warnings
                .insert(0, format!("without the fault's verification: {replaced}"));
            verdict.outcome = VerdictOutcome::Inconclusive;
            verdict.metrics.clear();
        } else {
            verdict.warnings.push(why);
        }
    }
    if let Some(c) = comparison {
        c.verdict = verdict.clone();
    }
}

/// Whether `stub`'s figures show `change` applied while it held (`during`) and removed after it
/// (`after`); `Err` says why not.
pub fn verify(
    change: &StubFault,
    stub: &str,
    times: &FaultTimes,
    during: Option<&Applied>,
    after: Option<&Applied>,
) -> Result<(), String> {
    if times.applied.is_none() {
        return Err("the phase ended before it was due".to_owned());
    }
    let Some(during) = during.filter(|d| d.requests > 0) else {
        return Err(format!(
            "stub `{stub}` served no request while it held: nothing shows it applied"
        ));
    };
    let extra_ms = change.extra.as_secs_f64() * 1e3;
    if extra_ms > 0.0 && during.delay_min_ms + 1e-6 < extra_ms {
        return Err(format!(
            "stub `{stub}` served a request with {:.1} ms while it held, less than the +{extra_ms:.1} \
             ms it adds",
            during.delay_min_ms
        ));
    }
    if let Some(share) = change.errors
        && share >= 1.0
        && during.errors + during.timeouts < during.requests
    {
        return Err(format!(
            "stub `{stub}` answered {} of {} requests without an error while it held every one",
            during.requests - during.errors - during.timeouts,
            during.requests
        ));
    }
    if times.cut_short {
        return Err("the phase ended before it was due to be removed".to_owned());
    }
    let Some(after) = after.filter(|a| a.requests > 0) else {
        return Err(format!(
            "stub `{stub}` served no request after its removal: nothing shows it removed"
        ));
    };
    if extra_ms > 0.0 && after.delay_min_ms + 1e-6 >= during.delay_min_ms.max(extra_ms) {
        return Err(format!(
            "stub `{stub}` still served every request after its removal with at least {:.1} ms",
            after.delay_min_ms
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    /// The degraded objective reads the windows wholly inside the fault, and only those.
    #[test]
    fn a_degraded_objective_is_judged_on_the_windows_inside_the_fault() {
        use crate::config::DegradedObjective;
        use crate::plan::RecoveryCheckOutcome;
        use crate::plan::recovery::tests::window;
        let objective = DegradedObjective {
            p50: None,
            p99: Some(Duration::from_millis(500)),
            error_rate: Some(0.05),
        };
        // Seconds 0-2 before, 3-5 inside (applied at 2.5 s: second 2 is cut), 6 after.
        let windows = vec![
            window(0, 100, 50, 0, 5, 2_000),
            window(1, 100, 0, 0, 5, 40),
            window(2, 100, 0, 0, 5, 900),
            window(3, 100, 2, 0, 50, 400),
            window(4, 100, 4, 0, 60, 450),
            window(5, 100, 1, 0, 50, 300),
            window(6, 100, 90, 0, 5, 5_000),
        ];
        let inside = (Some(2_500.0), Some(6_000.0));
        let c = degraded_check(&objective, inside, &windows, (true, &[]));
        assert_eq!(
            (c.windows, c.held, c.outcome),
            (3, 3, RecoveryCheckOutcome::Pass),
            "{c:?}"
        );
        assert_eq!(c.worst_p99_ms, Some(450.0));
        assert!(
            c.reason.contains("p99 ≤ 500ms, errors ≤ 5%"),
            "{}",
            c.reason
        );
        assert!(c.reason.contains("held in 3 of 3 windows"), "{}", c.reason);
        // A window past a limit fails it: an error rate of 6%, then a p99 of 600 ms.
        let mut worse = windows.clone();
        worse[4] = window(4, 100, 6, 0, 60, 450);
        let c = degraded_check(&objective, inside, &worse, (true, &[]));
        assert_eq!(
            (c.held, c.outcome),
            (2, RecoveryCheckOutcome::Fail),
            "{c:?}"
        );
        worse[4] = window(4, 100, 0, 0, 60, 600);
        let c = degraded_check(&objective, inside, &worse, (true, &[]));
        assert_eq!(c.outcome, RecoveryCheckOutcome::Fail);
        // No whole window inside, never applied, or an invalid phase: nothing to judge by.
        let short = degraded_check(
            &objective,
            (Some(3_200.0), Some(3_900.0)),
            &windows,
            (true, &[]),
        );
        assert_eq!(short.outcome, RecoveryCheckOutcome::Inconclusive);
        let never = degraded_check(&objective, (None, None), &windows, (true, &[]));
        assert_eq!(
            (never.windows, never.outcome),
            (0, RecoveryCheckOutcome::Inconclusive)
        );
        let invalid = degraded_check(&objective, inside, &windows, (false, &["lag".to_owned()]));
        assert_eq!(invalid.outcome, RecoveryCheckOutcome::Inconclusive);
        assert!(
            invalid.reason.contains("invalid (lag)"),
            "{}",
            invalid.reason
        );
    }
    use super::*;

    fn applied(requests: u64, errors: u64, min: f64, max: f64) -> Applied {
        Applied {
            generation: 1,
            requests,
            errors,
            timeouts: 0,
            delay_min_ms: min,
            delay_mean_ms: (min + max) / 2.0,
            delay_max_ms: max,
            ..Applied::default()
        }
    }

    fn slower() -> StubFault {
        StubFault {
            extra: Duration::from_millis(180),
            factor: 1.0,
            errors: None,
        }
    }

    fn times() -> FaultTimes {
        FaultTimes {
            applied: Some((1, Duration::from_secs(10))),
            removed: Some((2, Duration::from_secs(20))),
            cut_short: false,
        }
    }

    #[test]
    fn a_fault_is_verified_from_what_the_stub_served_during_and_after() {
        let during = applied(200, 0, 181.0, 240.0);
        let after = applied(180, 0, 1.5, 60.0);
        assert_eq!(
            verify(&slower(), "fraud", &times(), Some(&during), Some(&after)),
            Ok(())
        );
    }

    #[test]
    fn nothing_served_or_the_wrong_delays_are_not_verified() {
        let during = applied(200, 0, 181.0, 240.0);
        let after = applied(180, 0, 1.5, 60.0);
        let why = |t: &FaultTimes, d: Option<&Applied>, a: Option<&Applied>| {
            verify(&slower(), "fraud", t, d, a).expect_err("not verified")
        };
        assert!(why(&times(), None, Some(&after)).contains("served no request while it held"));
        let short = applied(10, 0, 20.0, 200.0);
        assert!(why(&times(), Some(&short), Some(&after)).contains("less than the +180.0 ms"));
        assert!(why(&times(), Some(&during), None).contains("after its removal"));
        let stuck = applied(10, 0, 185.0, 200.0);
        assert!(why(&times(), Some(&during), Some(&stuck)).contains("still served"));
        let never = FaultTimes::default();
        assert!(why(&never, None, None).contains("before it was due"));
        let cut = FaultTimes {
            cut_short: true,
            ..times()
        };
        assert!(why(&cut, Some(&during), Some(&after)).contains("due to be removed"));
    }

    #[test]
    fn an_error_burst_of_every_request_is_checked() {
        let burst = StubFault {
            extra: Duration::ZERO,
            factor: 1.0,
            errors: Some(1.0),
        };
        let after = applied(5, 0, 1.0, 2.0);
        let all = applied(50, 50, 1.0, 9.0);
        assert_eq!(
            verify(&burst, "s", &times(), Some(&all), Some(&after)),
            Ok(())
        );
        let some = applied(50, 49, 1.0, 9.0);
        assert!(
            verify(&burst, "s", &times(), Some(&some), Some(&after))
                .expect_err("one answered")
                .contains("1 of 50 requests without an error")
        );
    }

    /// A stub with no route, for the schedule's own tests.
    fn idle_stub() -> super::super::RunningStub {
        super::super::RunningStub::start(super::super::StubSpec {
            name: "s".to_owned(),
            port: 0,
            routes: Vec::new(),
            latency: super::super::Latency::NONE,
            errors: 0.0,
            error_status: 503,
            timeouts: 0.0,
            seed: 1,
        })
        .expect("start")
    }

    #[tokio::test(start_paused = true)]
    async fn the_schedule_applies_then_removes_at_its_offsets() {
        let stub = idle_stub();
        let scheduled = schedule(
            stub.controller(),
            slower(),
            Instant::now(),
            Duration::from_secs(10),
            Duration::from_secs(10),
        );
        tokio::time::sleep(Duration::from_secs(15)).await;
        assert_eq!(lock(&scheduled.times).applied.map(|a| a.0), Some(1));
        assert_eq!(lock(&scheduled.times).removed, None);
        tokio::time::sleep(Duration::from_secs(10)).await;
        let times = scheduled.finish();
        assert_eq!(times.removed.map(|r| r.0), Some(2));
        assert!(!times.cut_short);
    }

    #[tokio::test(start_paused = true)]
    async fn a_phase_that_ends_first_removes_the_fault_and_says_so() {
        let stub = idle_stub();
        let scheduled = schedule(
            stub.controller(),
            slower(),
            Instant::now(),
            Duration::from_secs(1),
            Duration::from_secs(10),
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        let times = scheduled.finish();
        assert!(times.cut_short);
        assert_eq!(times.applied.map(|a| a.0), Some(1));
        assert_eq!(times.removed.map(|r| r.0), Some(2));
    }
}
