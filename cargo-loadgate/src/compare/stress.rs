//! The stress's rule: lasting harm after the overload is a regression (exit 10) whatever the
//! comparison with the baseline found, like a failed audit; the stress compares the service with
//! itself on one boot, so it needs no baseline. An inconclusive comparison, or a declared stress
//! that did not run, makes a pass inconclusive: a run never passes on a check nobody made.

use crate::plan::Harm;
use crate::result::{Comparison, RunResult, Verdict, VerdictOutcome};

/// Settles `verdict` by the head's stress: lasting harm makes it a regression (or adds its reason
/// to one); an inconclusive stress, or one declared and skipped, makes a pass inconclusive and
/// warns otherwise; a recovered service changes nothing.
pub fn settle_stress(head: &RunResult, comparison: Option<&mut Comparison>, verdict: &mut Verdict) {
    let (harm, reason) = match (&head.stress, &head.stress_skipped) {
        (Some(stress), _) => (stress.harm, stress.reason.clone()),
        (None, Some(why)) => (
            Harm::Inconclusive,
            format!("the stress was declared and did not run: {why}"),
        ),
        (None, None) => return,
    };
    let decide = |verdict: &mut Verdict, outcome: VerdictOutcome| {
        let before = std::mem::replace(
            &mut verdict.rule_fired,
            format!("{}: stress: {reason}", outcome.as_str()),
        );
        verdict
            .warnings
            .insert(0, format!("without the stress: {before}"));
        verdict.outcome = outcome;
        verdict.metrics.clear();
    };
    match (harm, verdict.outcome) {
        (Harm::Recovered, _) => return,
        (Harm::LastingHarm, VerdictOutcome::Regression) => {
            verdict
                .rule_fired
                .push_str(&format!("; and stress: {reason}"));
        }
        (Harm::LastingHarm, _) => decide(verdict, VerdictOutcome::Regression),
        (Harm::Inconclusive, VerdictOutcome::Pass) => decide(verdict, VerdictOutcome::Inconclusive),
        (Harm::Inconclusive, _) => verdict
            .warnings
            .push(format!("the stress is inconclusive: {reason}")),
    }
    if let Some(c) = comparison {
        c.verdict = verdict.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(outcome: VerdictOutcome) -> Verdict {
        Verdict {
            outcome,
            rule_fired: format!("{}: every metric within its threshold", outcome.as_str()),
            metrics: Vec::new(),
            warnings: Vec::new(),
            leak: None,
        }
    }

    fn head(harm: Option<Harm>, skipped: Option<&str>) -> RunResult {
        let mut head = crate::result::testing::before();
        head.stress = harm.map(|h| {
            let mut s = crate::plan::stress_testing::outcome();
            s.harm = h;
            s.reason = format!("{}: p99 +40.0%", h.label());
            s
        });
        head.stress_skipped = skipped.map(str::to_owned);
        head
    }

    #[test]
    fn lasting_harm_is_a_regression_whatever_the_comparison_said() {
        let mut v = verdict(VerdictOutcome::Pass);
        settle_stress(&head(Some(Harm::LastingHarm), None), None, &mut v);
        assert_eq!(v.outcome, VerdictOutcome::Regression);
        assert_eq!(v.rule_fired, "regression: stress: lasting harm: p99 +40.0%");
        assert!(
            v.warnings[0].starts_with("without the stress: pass: "),
            "{:?}",
            v.warnings
        );
        let mut v = verdict(VerdictOutcome::Regression);
        settle_stress(&head(Some(Harm::LastingHarm), None), None, &mut v);
        assert!(
            v.rule_fired
                .ends_with("; and stress: lasting harm: p99 +40.0%"),
            "{}",
            v.rule_fired
        );
    }

    #[test]
    fn an_inconclusive_or_skipped_stress_never_lets_a_run_pass() {
        let mut v = verdict(VerdictOutcome::Pass);
        settle_stress(&head(Some(Harm::Inconclusive), None), None, &mut v);
        assert_eq!(v.outcome, VerdictOutcome::Inconclusive);
        let mut v = verdict(VerdictOutcome::Pass);
        settle_stress(&head(None, Some("the soak did not run")), None, &mut v);
        assert_eq!(v.outcome, VerdictOutcome::Inconclusive);
        assert!(
            v.rule_fired.contains("did not run: the soak did not run"),
            "{}",
            v.rule_fired
        );
        // A regression stays one, with a warning.
        let mut v = verdict(VerdictOutcome::Regression);
        settle_stress(&head(Some(Harm::Inconclusive), None), None, &mut v);
        assert_eq!(v.outcome, VerdictOutcome::Regression);
        assert!(
            v.warnings
                .iter()
                .any(|w| w.starts_with("the stress is inconclusive"))
        );
    }

    #[test]
    fn a_recovered_service_or_no_stress_changes_nothing() {
        for head in [head(Some(Harm::Recovered), None), head(None, None)] {
            let mut v = verdict(VerdictOutcome::Pass);
            let before = v.clone();
            settle_stress(&head, None, &mut v);
            assert_eq!(v, before);
        }
    }
}
