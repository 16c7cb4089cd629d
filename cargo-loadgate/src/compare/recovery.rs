//! The `[slo] recovery` rule: the time to stable SLO after a spike or a stress against its limit,
//! and how it settles the verdict. A failed check is a regression (exit 10) whatever the
//! comparison with the baseline found, like a failed `[slo] headroom`; docs/decisions.md says why
//! the time to stable SLO is checked against a limit and reported beside the baseline's rather
//! than compared by ratio.

use crate::plan::{Recovery, RecoveryCheck, RecoveryCheckOutcome, SpikeOutcome, StressOutcome};
use crate::result::{Comparison, RunResult, Verdict, VerdictOutcome};
use std::time::Duration;

/// The check of `spike`'s time to stable SLO against `limit`; `None` without a limit.
///
/// - **pass**: stable again (the required consecutive windows held) at most `limit` after the
///   spike's end;
/// - **fail**: stable only later, or not within the phase;
/// - **inconclusive**: the generator did not keep the phase's schedule, so the windows do not
///   show what the service did.
pub fn recovery_check(spike: &SpikeOutcome, limit: Option<Duration>) -> Option<RecoveryCheck> {
    event_check(
        "spike",
        (spike.valid, &spike.invalid_reasons),
        &spike.recovery,
        spike.recovery_windows,
        limit,
    )
}

/// The same check of the time to stable SLO after a stress's overload.
pub fn stress_recovery_check(
    stress: &StressOutcome,
    limit: Option<Duration>,
) -> Option<RecoveryCheck> {
    event_check(
        "stress",
        (stress.valid, &stress.invalid_reasons),
        &stress.recovery,
        stress.recovery_windows,
        limit,
    )
}

/// The same check of the time to stable SLO after a fault's removal; `None` without a limit or
/// without a time (a fault never applied, or its phase over before its removal: the fault is
/// then not verified, which settles the verdict on its own).
pub fn fault_recovery_check(
    fault: &crate::stub::fault::FaultRecord,
    phase: (bool, &[String]),
    limit: Option<Duration>,
) -> Option<RecoveryCheck> {
    event_check(
        &format!("fault `{}`", fault.name),
        phase,
        fault.recovery.as_ref()?,
        fault.recovery_windows,
        limit,
    )
}

/// The check of the time to stable SLO after the end of `event` (a spike, a stress).
fn event_check(
    event: &str,
    (valid, invalid_reasons): (bool, &[String]),
    recovery: &Recovery,
    recovery_windows: usize,
    limit: Option<Duration>,
) -> Option<RecoveryCheck> {
    let limit = limit?;
    let secs = |d: Duration| format!("{:.1} s", d.as_secs_f64());
    let (outcome, reason) = if !valid {
        (
            RecoveryCheckOutcome::Inconclusive,
            format!(
                "the {event} phase is invalid ({}): its windows do not show the service's recovery",
                invalid_reasons.join("; ")
            ),
        )
    } else {
        match recovery {
            Recovery::Recovered { after, .. } if *after <= limit => (
                RecoveryCheckOutcome::Pass,
                format!(
                    "stable SLO {} after the {event}, within {}",
                    secs(*after),
                    secs(limit)
                ),
            ),
            Recovery::Recovered { after, .. } => (
                RecoveryCheckOutcome::Fail,
                format!(
                    "time to stable SLO after the {event} {} > {}",
                    secs(*after),
                    secs(limit)
                ),
            ),
            Recovery::NotRecovered {
                observed,
                longest_run,
            } => (
                RecoveryCheckOutcome::Fail,
                format!(
                    "not stable within {} after the {event} ({} good windows in a row needed, longest run {longest_run}); the limit is {}",
                    secs(*observed),
                    recovery_windows,
                    secs(limit)
                ),
            ),
        }
    };
    Some(RecoveryCheck {
        limit,
        outcome,
        reason,
    })
}

/// Settles `verdict` by the head's recovery checks (the spike's, then the stress's): a failure
/// makes it a regression (or adds its reason to one), an inconclusive check makes a pass
/// inconclusive.
pub fn settle_recovery(
    head: &RunResult,
    comparison: Option<&mut Comparison>,
    verdict: &mut Verdict,
) {
    let checks: Vec<&RecoveryCheck> = [
        head.spike.as_ref().and_then(|s| s.check.as_ref()),
        head.stress.as_ref().and_then(|s| s.check.as_ref()),
    ]
    .into_iter()
    .flatten()
    .chain(head.faults.iter().filter_map(|f| f.check.as_ref()))
    .collect();
    // A fault's degraded objective settles the verdict as a recovery check does.
    for degraded in head.faults.iter().filter_map(|f| f.degraded.as_ref()) {
        settle_one(
            "degraded objective",
            degraded.outcome,
            &degraded.reason,
            verdict,
        );
    }
    if checks.is_empty() {
        settle_unmade_recovery(head, comparison, verdict);
        return;
    }
    for check in checks {
        settle_one("recovery check", check.outcome, &check.reason, verdict);
    }
    if let Some(c) = comparison {
        c.verdict = verdict.clone();
    }
}

/// Settles `verdict` by one check's `outcome` and `reason` (a recovery check, or a fault's degraded
/// objective).
fn settle_one(what: &str, outcome: RecoveryCheckOutcome, reason: &str, verdict: &mut Verdict) {
    let decide = |verdict: &mut Verdict, decided: VerdictOutcome| {
        let before = std::mem::replace(
            &mut verdict.rule_fired,
            format!("{}: {reason}", decided.as_str()),
        );
        verdict
            .warnings
            .insert(0, format!("without the {what}: {before}"));
        verdict.outcome = decided;
        verdict.metrics.clear();
    };
    match (outcome, verdict.outcome) {
        (RecoveryCheckOutcome::Pass, _) => {}
        (RecoveryCheckOutcome::Fail, VerdictOutcome::Regression) => {
            verdict.rule_fired.push_str(&format!("; and {reason}"));
        }
        (RecoveryCheckOutcome::Fail, _) => decide(verdict, VerdictOutcome::Regression),
        (RecoveryCheckOutcome::Inconclusive, VerdictOutcome::Pass) => {
            decide(verdict, VerdictOutcome::Inconclusive);
        }
        (RecoveryCheckOutcome::Inconclusive, _) => verdict
            .warnings
            .push(format!("the {what} is inconclusive: {reason}")),
    }
}

/// A `[slo] recovery` limit whose check was never made, because the spike did not run (the ramp
/// found no capacity to scale it by, or the run stopped before it): the run cannot pass on a
/// limit nobody measured, so a pass becomes inconclusive, naming why; other verdicts gain a
/// warning.
fn settle_unmade_recovery(
    head: &RunResult,
    comparison: Option<&mut Comparison>,
    verdict: &mut Verdict,
) {
    // A spike that ran records its check whenever a limit is set; only a missing spike is
    // settled here.
    if head.spike.is_some() || head.stress.is_some() {
        return;
    }
    let Some(limit_ms) = head.slo.as_ref().and_then(|s| s.recovery_limit_ms) else {
        return;
    };
    let unmeasured_fault = head.faults.iter().find(|f| f.recovery.is_none()).map(|f| {
        format!(
            "fault `{}`: {}",
            f.name,
            f.problem
                .as_deref()
                .unwrap_or("no time to stable SLO was read")
        )
    });
    let why = head
        .spike_skipped
        .as_deref()
        .or(head.stress_skipped.as_deref())
        .or(unmeasured_fault.as_deref())
        .unwrap_or("the run has no spike phase");
    let reason = format!(
        "the recovery check ([slo] recovery = {:.1} s) was not made: {why}",
        limit_ms / 1e3
    );
    if verdict.outcome == VerdictOutcome::Pass {
        let before = std::mem::replace(
            &mut verdict.rule_fired,
            format!("{}: {reason}", VerdictOutcome::Inconclusive.as_str()),
        );
        verdict
            .warnings
            .insert(0, format!("without the recovery check: {before}"));
        verdict.outcome = VerdictOutcome::Inconclusive;
        verdict.metrics.clear();
    } else {
        verdict.warnings.push(reason);
    }
    if let Some(c) = comparison {
        c.verdict = verdict.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Admission, AdmissionFigures, CapacitySource};

    fn spike(recovery: Recovery, valid: bool) -> SpikeOutcome {
        SpikeOutcome {
            phase: "spike".to_owned(),
            capacity_sessions_per_sec: 100.0,
            capacity_from: CapacitySource::ThisRun,
            from_sessions_per_sec: 60.0,
            to_sessions_per_sec: 300.0,
            starts: Duration::from_secs(5),
            ends: Duration::from_secs(15),
            admission: AdmissionFigures {
                admission: Admission::Queued,
                goodput_before_per_sec: 60.0,
                goodput_during_per_sec: 100.0,
                rejected_share: 0.0,
                transport_failure_share: 0.0,
                p50: Duration::from_millis(50),
                p99: Duration::from_millis(900),
            },
            recovery,
            recovery_windows: 5,
            check: None,
            aborted: None,
            valid,
            invalid_reasons: if valid {
                Vec::new()
            } else {
                vec!["pacing lag".to_owned()]
            },
        }
    }

    fn recovered(secs: u64) -> Recovery {
        Recovery::Recovered {
            after: Duration::from_secs(secs),
            confirmed_after: Duration::from_secs(secs + 5),
        }
    }

    fn verdict(outcome: VerdictOutcome) -> Verdict {
        Verdict {
            outcome,
            rule_fired: "pass: every metric within its threshold".to_owned(),
            metrics: Vec::new(),
            warnings: Vec::new(),
            leak: None,
        }
    }

    #[test]
    fn the_check_passes_within_the_limit_and_fails_after_it_or_without_recovery() {
        let limit = Some(Duration::from_secs(10));
        let outcome = |s: &SpikeOutcome| recovery_check(s, limit).map(|c| c.outcome);
        assert_eq!(
            outcome(&spike(recovered(10), true)),
            Some(RecoveryCheckOutcome::Pass)
        );
        assert_eq!(
            outcome(&spike(recovered(11), true)),
            Some(RecoveryCheckOutcome::Fail)
        );
        let never = Recovery::NotRecovered {
            observed: Duration::from_secs(20),
            longest_run: 3,
        };
        let check = recovery_check(&spike(never, true), limit).expect("a limit");
        assert_eq!(check.outcome, RecoveryCheckOutcome::Fail);
        assert_eq!(
            check.reason,
            "not stable within 20.0 s after the spike (5 good windows in a row needed, longest run 3); the limit is 10.0 s"
        );
        assert_eq!(
            outcome(&spike(recovered(1), false)),
            Some(RecoveryCheckOutcome::Inconclusive)
        );
        assert_eq!(recovery_check(&spike(recovered(1), true), None), None);
    }

    #[test]
    fn a_recovery_limit_whose_spike_did_not_run_cannot_pass() {
        let mut head = crate::result::testing::before();
        head.spike = None;
        // No limit: nothing to settle.
        let mut v = verdict(VerdictOutcome::Pass);
        settle_recovery(&head, None, &mut v);
        assert_eq!(v, verdict(VerdictOutcome::Pass));
        let slo = head.slo.clone().unwrap_or(crate::result::SloSummary {
            latency: Vec::new(),
            error_rate: 0.01,
            min_requests: 100,
            recovery_limit_ms: None,
        });
        head.slo = Some(crate::result::SloSummary {
            recovery_limit_ms: Some(10_000.0),
            ..slo
        });
        head.spike_skipped = Some("the ramp found no capacity to scale the spike by".to_owned());
        settle_recovery(&head, None, &mut v);
        assert_eq!(v.outcome, VerdictOutcome::Inconclusive);
        assert_eq!(
            v.rule_fired,
            "inconclusive: the recovery check ([slo] recovery = 10.0 s) was not made: the ramp \
             found no capacity to scale the spike by"
        );
        assert_eq!(
            v.warnings[0],
            "without the recovery check: pass: every metric within its threshold"
        );
        // A regression stays one, with a warning.
        let mut r = verdict(VerdictOutcome::Regression);
        settle_recovery(&head, None, &mut r);
        assert_eq!(r.outcome, VerdictOutcome::Regression);
        assert!(r.warnings[0].contains("was not made"), "{:?}", r.warnings);
    }

    #[test]
    fn a_failed_check_makes_a_pass_or_no_baseline_a_regression() {
        let mut head = crate::result::testing::before();
        let mut s = spike(recovered(30), true);
        s.check = recovery_check(&s, Some(Duration::from_secs(10)));
        head.spike = Some(s);
        for before in [VerdictOutcome::Pass, VerdictOutcome::NoBaseline] {
            let mut v = verdict(before);
            settle_recovery(&head, None, &mut v);
            assert_eq!(v.outcome, VerdictOutcome::Regression);
            assert_eq!(
                v.rule_fired,
                "regression: time to stable SLO after the spike 30.0 s > 10.0 s"
            );
        }
        // A passing check leaves the verdict alone.
        let mut s = spike(recovered(3), true);
        s.check = recovery_check(&s, Some(Duration::from_secs(10)));
        head.spike = Some(s);
        let mut v = verdict(VerdictOutcome::Pass);
        settle_recovery(&head, None, &mut v);
        assert_eq!(v.outcome, VerdictOutcome::Pass);
    }

    /// The stress's time to stable SLO is checked as the spike's, and both checks settle the
    /// verdict: a stress that recovered too late fails a run whose spike recovered in time, and a
    /// stress alone satisfies a limit (no "check not made").
    #[test]
    fn the_stress_is_checked_too_and_both_checks_settle_the_verdict() {
        let limit = Some(Duration::from_secs(10));
        let mut stress = crate::plan::stress_testing::outcome();
        stress.recovery = recovered(12);
        let check = stress_recovery_check(&stress, limit).expect("a limit");
        assert_eq!(check.outcome, RecoveryCheckOutcome::Fail);
        assert_eq!(
            check.reason,
            "time to stable SLO after the stress 12.0 s > 10.0 s"
        );
        assert_eq!(stress_recovery_check(&stress, None), None);
        stress.check = Some(check);
        let mut head = crate::result::testing::before();
        let mut s = spike(recovered(3), true);
        s.check = recovery_check(&s, limit);
        head.spike = Some(s);
        head.stress = Some(stress.clone());
        let mut v = verdict(VerdictOutcome::Pass);
        settle_recovery(&head, None, &mut v);
        assert_eq!(v.outcome, VerdictOutcome::Regression);
        assert_eq!(
            v.rule_fired,
            "regression: time to stable SLO after the stress 12.0 s > 10.0 s"
        );
        // A stress alone, recovered in time: the limit was checked, the run passes.
        head.spike = None;
        stress.recovery = recovered(4);
        stress.check = stress_recovery_check(&stress, limit);
        head.stress = Some(stress);
        if let Some(slo) = head.slo.as_mut() {
            slo.recovery_limit_ms = Some(10_000.0);
        }
        let mut v = verdict(VerdictOutcome::Pass);
        settle_recovery(&head, None, &mut v);
        assert_eq!(v.outcome, VerdictOutcome::Pass, "{}", v.rule_fired);
    }
}
