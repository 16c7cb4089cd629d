//! The checks with absolute limits, settled on a verdict after the comparison: the headroom over
//! the production load (`[slo] headroom`), the recovery after a spike or a stress (`[slo]
//! recovery`), the stress's lasting harm (`[stress]`), the audits (`[[audit]]`) and the probes' limits (`[[probe]] limits`). Each reads the head alone
//! and can fail a run whatever its baseline says. [`settle_checks`] is the one place they are
//! applied, so the gate, `cargo loadgate compare` and a paired run judge them alike.

use crate::result::{Comparison, RunResult, Verdict};

/// Settles `verdict`, and the comparison's copy of it, by every absolute check the head recorded,
/// in this order: headroom, recovery, stress, audits, probe limits. A failed check makes the verdict a
/// regression (a regression's rule gains it); an inconclusive headroom or recovery check makes a
/// pass inconclusive; checks that held change nothing.
pub fn settle_checks(
    head: &RunResult,
    mut comparison: Option<&mut Comparison>,
    verdict: &mut Verdict,
) {
    super::settle_headroom(head, comparison.as_deref_mut(), verdict);
    super::settle_recovery(head, comparison.as_deref_mut(), verdict);
    super::settle_stress(head, comparison.as_deref_mut(), verdict);
    super::settle_audits(head, comparison.as_deref_mut(), verdict);
    super::settle_probe_checks(head, comparison.as_deref_mut(), verdict);
    crate::stub::fault::settle_faults(head, comparison, verdict);
}

#[cfg(test)]
mod tests {
    use super::super::testkit::gate;
    use crate::compare::{CompareOptions, compare_results, judge_audit};
    use crate::config::{AuditConfig, Expect, RequestTemplate};
    use crate::result::{ProbeCheck, VerdictOutcome};

    /// `cargo loadgate compare A B` judges what the head recorded as the gate does: a failed audit
    /// and a failed probe limit make the verdict a regression naming both, the rule they
    /// replaced is kept as the first warning, and the comparison's copy of the verdict agrees.
    #[test]
    fn a_comparison_applies_the_audits_and_probe_limits_the_head_recorded() {
        let base = crate::result::testing::before();
        let mut head = crate::result::testing::before();
        let (_, unchanged) = compare_results(&base, &head, &gate(), &CompareOptions::default());
        assert_ne!(unchanged.outcome, VerdictOutcome::Regression);
        let ledger = AuditConfig {
            name: "ledger".to_owned(),
            request: RequestTemplate {
                method: "GET".to_owned(),
                path: "/ledger/summary".to_owned(),
                headers: Vec::new(),
                body: None,
            },
            expect: Expect::default(),
            checks: Vec::new(),
            location: String::new(),
        };
        head.audits = vec![judge_audit(
            &ledger,
            &Err("connection refused".to_owned()),
            &Default::default(),
        )];
        head.probe_checks = vec![ProbeCheck {
            probe: "db".to_owned(),
            series: "deadlocks".to_owned(),
            limit: 0.0,
            value: Some(2.0),
            passed: false,
            message: "db.deadlocks rose by 2 during the run (limit 0)".to_owned(),
        }];
        let (comparison, verdict) =
            compare_results(&base, &head, &gate(), &CompareOptions::default());
        assert_eq!(verdict.outcome, VerdictOutcome::Regression);
        assert!(
            verdict.rule_fired.contains("audit `ledger`")
                && verdict.rule_fired.contains("db.deadlocks rose by 2"),
            "{}",
            verdict.rule_fired
        );
        assert!(
            verdict.warnings[0].starts_with("before the audit: "),
            "{:?}",
            verdict.warnings
        );
        assert_eq!(comparison.verdict, verdict);
    }
}
