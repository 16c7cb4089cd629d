//! The post-run audits' judgement: an answer against the audit's expectation and checks, the
//! counts read from the run, and what a failed audit does to the verdict (a regression, whatever
//! the latency). Pure: the request is sent by the command line, which hands the answer here.

use crate::config::{AuditConfig, AuditOperand, CountKind, CountRef};
use crate::measure::OperationTally;
use crate::result::{
    AuditCheckOutcome, AuditOutcome, AuditStatus, Comparison, RunResult, Verdict, VerdictOutcome,
};
use std::collections::BTreeMap;

/// The answer of an audit's request, or why there was none.
pub type AuditAnswer = Result<(u16, Vec<u8>), String>;

/// The value of `count` in a run whose tallies are `tallies` (`result::run_tallies`); an
/// operation the run never sent counts zero.
pub fn count_value(count: &CountRef, tallies: &BTreeMap<String, OperationTally>) -> u64 {
    let t = tallies.get(&count.operation).cloned().unwrap_or_default();
    match count.kind {
        CountKind::Logical => t.logical,
        CountKind::Attempts => t.attempts,
        CountKind::Retries => t.attempts.saturating_sub(t.logical),
        CountKind::Acknowledged => t.acknowledged,
        CountKind::Unacknowledged => t.logical.saturating_sub(t.acknowledged),
    }
}

/// Judges one audit's `answer` against its expectation and checks, with the run's `tallies`.
///
/// No answer, or a check that reads a body that is not JSON, is [`AuditStatus::NotRun`] with
/// why; an answer that misses the expectation, or a check that does not hold (a missing or
/// non-numeric value included), is [`AuditStatus::Failed`]. Every check is evaluated and
/// reported either way, so the report shows each term.
pub fn judge_audit(
    audit: &AuditConfig,
    answer: &AuditAnswer,
    tallies: &BTreeMap<String, OperationTally>,
) -> AuditOutcome {
    let request = format!("{} {}", audit.request.method, audit.request.path);
    let operands: Vec<(String, f64)> = audit
        .checks
        .iter()
        .map(|c| match &c.operand {
            AuditOperand::Number(x) => (crate::config::format_number(*x), *x),
            AuditOperand::Count(count) => (count.to_string(), count_value(count, tallies) as f64),
        })
        .collect();
    let outcome = |status, reason: Option<String>, answers: Vec<Option<f64>>| {
        let checks = audit
            .checks
            .iter()
            .zip(&operands)
            .zip(answers)
            .map(|((check, (operand, expected)), answer)| AuditCheckOutcome {
                pointer: check.pointer.clone(),
                relation: check.relation.as_str().to_owned(),
                operand: operand.clone(),
                answer,
                expected: *expected,
                held: answer.is_some_and(|a| check.relation.holds(a, *expected)),
            })
            .collect();
        AuditOutcome {
            name: audit.name.clone(),
            request: request.clone(),
            status,
            reason,
            checks,
        }
    };
    let none = || vec![None; audit.checks.len()];
    let (status, body) = match answer {
        Ok(answer) => answer,
        Err(why) => return outcome(AuditStatus::NotRun, Some(why.clone()), none()),
    };
    if let Err(wrong) = crate::workload::check(&audit.expect, *status, body) {
        return outcome(
            AuditStatus::Failed,
            Some(format!("the answer is not the expected one: {wrong}")),
            none(),
        );
    }
    if audit.checks.is_empty() {
        return outcome(AuditStatus::Passed, None, Vec::new());
    }
    let json: serde_json::Value = match serde_json::from_slice(body) {
        Ok(json) => json,
        Err(e) => {
            return outcome(
                AuditStatus::NotRun,
                Some(format!(
                    "the answer is not JSON ({e}), so no check could read it"
                )),
                none(),
            );
        }
    };
    let answers: Vec<Option<f64>> = audit
        .checks
        .iter()
        .map(|c| json.pointer(&c.pointer).and_then(serde_json::Value::as_f64))
        .collect();
    let failed: Vec<String> = audit
        .checks
        .iter()
        .zip(&answers)
        .zip(&operands)
        .filter(|((check, answer), (_, expected))| {
            !answer.is_some_and(|a| check.relation.holds(a, *expected))
        })
        .map(|((check, answer), (operand, _))| match answer {
            None => format!("{} is not a number in the answer", check.pointer),
            Some(_) => format!(
                "{} {} {operand} does not hold",
                check.pointer,
                check.relation.as_str()
            ),
        })
        .collect();
    if failed.is_empty() {
        outcome(AuditStatus::Passed, None, answers)
    } else {
        outcome(AuditStatus::Failed, Some(failed.join("; ")), answers)
    }
}

/// A failed audit, or one that could not run, makes the verdict a regression whatever the
/// latency: the rule names the audits, and the rule it replaces goes first among the warnings.
/// A passed audit changes nothing.
pub fn settle_audits(head: &RunResult, comparison: Option<&mut Comparison>, verdict: &mut Verdict) {
    let failed: Vec<String> = head
        .audits
        .iter()
        .filter(|a| !a.passed())
        .map(AuditOutcome::statement)
        .collect();
    if failed.is_empty() {
        return;
    }
    let rule = format!("regression: {}", failed.join("; "));
    if verdict.outcome == VerdictOutcome::Regression {
        verdict
            .rule_fired
            .push_str(&format!("; and {}", failed.join("; ")));
    } else {
        let before = std::mem::replace(&mut verdict.rule_fired, rule);
        verdict
            .warnings
            .insert(0, format!("before the audit: {before}"));
        verdict.outcome = VerdictOutcome::Regression;
        verdict.metrics.clear();
    }
    if let Some(c) = comparison {
        c.verdict = verdict.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AuditCheck, AuditRelation, Expect, RequestTemplate};

    fn ledger_audit() -> AuditConfig {
        let count = |kind| {
            AuditOperand::Count(CountRef {
                kind,
                operation: "transfer".to_owned(),
            })
        };
        AuditConfig {
            name: "ledger".to_owned(),
            request: RequestTemplate {
                method: "GET".to_owned(),
                path: "/ledger/summary".to_owned(),
                headers: Vec::new(),
                body: None,
            },
            expect: Expect {
                status: vec![200],
                ..Expect::default()
            },
            checks: vec![
                AuditCheck {
                    pointer: "/duplicates".to_owned(),
                    relation: AuditRelation::Equals,
                    operand: AuditOperand::Number(0.0),
                },
                AuditCheck {
                    pointer: "/effects".to_owned(),
                    relation: AuditRelation::AtLeast,
                    operand: count(CountKind::Acknowledged),
                },
                AuditCheck {
                    pointer: "/effects".to_owned(),
                    relation: AuditRelation::AtMost,
                    operand: count(CountKind::Logical),
                },
            ],
            location: "loadgate.toml:1:1".to_owned(),
        }
    }

    fn tallies(logical: u64, attempts: u64, acknowledged: u64) -> BTreeMap<String, OperationTally> {
        BTreeMap::from([(
            "transfer".to_owned(),
            OperationTally {
                logical,
                attempts,
                acknowledged,
            },
        )])
    }

    fn answer(body: &str) -> AuditAnswer {
        Ok((200, body.as_bytes().to_vec()))
    }

    // Seed 002's conservation: every logical write is one durable effect or none; an
    // acknowledged one is never lost; no key books twice.
    #[test_case::test_case(r#"{"effects": 100, "duplicates": 0}"#, AuditStatus::Passed, None ; "conserved")]
    #[test_case::test_case(r#"{"effects": 97, "duplicates": 0}"#, AuditStatus::Passed, None ; "some writes never booked and never acknowledged")]
    #[test_case::test_case(r#"{"effects": 112, "duplicates": 12}"#, AuditStatus::Failed, Some("/duplicates equals 0 does not hold; /effects at-most logical.transfer does not hold") ; "duplicated effects")]
    #[test_case::test_case(r#"{"effects": 90, "duplicates": 0}"#, AuditStatus::Failed, Some("/effects at-least acknowledged.transfer does not hold") ; "lost acknowledged writes")]
    #[test_case::test_case(r#"{"effects": 100}"#, AuditStatus::Failed, Some("/duplicates is not a number in the answer") ; "a term missing")]
    #[test_case::test_case("not json", AuditStatus::NotRun, Some("the answer is not JSON (expected ident at line 1 column 2), so no check could read it") ; "not json")]
    fn the_ledger_is_judged_against_the_run_s_counts(
        body: &str,
        status: AuditStatus,
        reason: Option<&str>,
    ) {
        let outcome = judge_audit(&ledger_audit(), &answer(body), &tallies(100, 130, 95));
        assert_eq!(outcome.status, status, "{outcome:?}");
        assert_eq!(outcome.reason.as_deref(), reason);
        assert_eq!(outcome.checks.len(), 3);
        // Each term is reported, whatever the outcome.
        let expected: Vec<f64> = outcome.checks.iter().map(|c| c.expected).collect();
        assert_eq!(expected, [0.0, 95.0, 100.0]);
    }

    #[test]
    fn the_statement_reports_each_term() {
        let outcome = judge_audit(
            &ledger_audit(),
            &answer(r#"{"effects": 112, "duplicates": 12}"#),
            &tallies(100, 130, 95),
        );
        insta::assert_snapshot!(outcome.statement(), @"audit `ledger` (GET /ledger/summary) failed: /duplicates equals 0 does not hold; /effects at-most logical.transfer does not hold [/duplicates = 12 equals 0: does not hold; /effects = 112 at-least acknowledged.transfer = 95: holds; /effects = 112 at-most logical.transfer = 100: does not hold]");
    }

    #[test_case::test_case(Err("connection refused".to_owned()), AuditStatus::NotRun ; "no answer")]
    #[test_case::test_case(Ok((503, b"{}".to_vec())), AuditStatus::Failed ; "an unexpected status")]
    fn an_audit_without_a_good_answer_never_passes(answer: AuditAnswer, status: AuditStatus) {
        let outcome = judge_audit(&ledger_audit(), &answer, &tallies(1, 1, 1));
        assert_eq!(outcome.status, status);
        assert!(outcome.reason.is_some());
        assert!(outcome.checks.iter().all(|c| !c.held && c.answer.is_none()));
    }

    #[test]
    fn counts_read_the_tally() {
        let t = tallies(100, 130, 95);
        let value = |kind| {
            count_value(
                &CountRef {
                    kind,
                    operation: "transfer".to_owned(),
                },
                &t,
            )
        };
        assert_eq!(
            [
                CountKind::Logical,
                CountKind::Attempts,
                CountKind::Retries,
                CountKind::Acknowledged,
                CountKind::Unacknowledged
            ]
            .map(value),
            [100, 130, 30, 95, 5]
        );
        let never = CountRef {
            kind: CountKind::Logical,
            operation: "other".to_owned(),
        };
        assert_eq!(count_value(&never, &t), 0);
    }

    #[test]
    fn a_failed_audit_makes_a_pass_a_regression_and_a_passed_one_changes_nothing() {
        let mut head = crate::result::testing::before();
        let pass = Verdict {
            outcome: VerdictOutcome::Pass,
            rule_fired: "every metric within its threshold".to_owned(),
            metrics: vec![0],
            warnings: Vec::new(),
            leak: None,
        };
        head.audits = vec![judge_audit(
            &ledger_audit(),
            &answer(r#"{"effects": 100, "duplicates": 0}"#),
            &tallies(100, 100, 100),
        )];
        let mut verdict = pass.clone();
        settle_audits(&head, None, &mut verdict);
        assert_eq!(verdict, pass);
        head.audits.push(judge_audit(
            &AuditConfig {
                name: "again".to_owned(),
                ..ledger_audit()
            },
            &Err("connection refused".to_owned()),
            &tallies(100, 100, 100),
        ));
        settle_audits(&head, None, &mut verdict);
        assert_eq!(verdict.outcome, VerdictOutcome::Regression);
        assert!(
            verdict.rule_fired.starts_with(
                "regression: audit `again` (GET /ledger/summary) could not run: connection refused"
            ),
            "{}",
            verdict.rule_fired
        );
        assert_eq!(
            verdict.warnings,
            ["before the audit: every metric within its threshold"]
        );
        assert!(verdict.metrics.is_empty());
    }
}
