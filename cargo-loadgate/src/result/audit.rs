//! What the post-run audits (`[[audit]]`) found, as the result records it, and the run's counts
//! they compare with: every phase's whole-phase tally, summed per operation.

use super::RunResult;
use crate::measure::OperationTally;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What became of one audit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuditStatus {
    /// The answer met the expectation and every check held.
    Passed,
    /// The answer did not meet the expectation, or a check did not hold.
    Failed,
    /// No answer to judge (connection refused, a timeout, a body that is not JSON where a check
    /// reads it): never a pass.
    NotRun,
}

impl AuditStatus {
    /// The status for people: `passed`, `failed`, `could not run`.
    pub fn word(self) -> &'static str {
        match self {
            AuditStatus::Passed => "passed",
            AuditStatus::Failed => "failed",
            AuditStatus::NotRun => "could not run",
        }
    }
}

/// One audit's outcome: its request, its status with the reason, and every check's terms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditOutcome {
    /// The audit's name.
    pub name: String,
    /// The request as sent, e.g. `GET /ledger/summary`.
    pub request: String,
    /// Passed, failed or could not run.
    pub status: AuditStatus,
    /// Why it failed or could not run; `None` when it passed.
    pub reason: Option<String>,
    /// Each check with the numbers it compared, in the order written.
    pub checks: Vec<AuditCheckOutcome>,
}

impl AuditOutcome {
    /// Whether the audit passed (one that could not run did not).
    pub fn passed(&self) -> bool {
        self.status == AuditStatus::Passed
    }

    /// One line for people: `audit `ledger` (GET /ledger/summary) failed: …` followed by each
    /// check's terms.
    pub fn statement(&self) -> String {
        let mut line = format!(
            "audit `{}` ({}) {}",
            self.name,
            self.request,
            self.status.word()
        );
        if let Some(reason) = &self.reason {
            line.push_str(&format!(": {reason}"));
        }
        let terms: Vec<String> = self
            .checks
            .iter()
            .map(AuditCheckOutcome::statement)
            .collect();
        if !terms.is_empty() {
            line.push_str(&format!(" [{}]", terms.join("; ")));
        }
        line
    }
}

/// One check of an audit and the terms it compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditCheckOutcome {
    /// The JSON pointer read from the answer.
    pub pointer: String,
    /// `equals`, `at-most` or `at-least`.
    pub relation: String,
    /// The operand as written: a number, or a count such as `acknowledged.transfer`.
    pub operand: String,
    /// The number at the pointer; `None` when there was none (then the check failed).
    pub answer: Option<f64>,
    /// The operand's value: the number, or the count's value in this run.
    pub expected: f64,
    /// Whether it held.
    pub held: bool,
}

impl AuditCheckOutcome {
    /// `/effects = 1,234 at-most logical.transfer = 1,200 ✗`.
    pub fn statement(&self) -> String {
        let number = |x: f64| crate::config::format_number(x);
        let answer = self.answer.map_or_else(|| "missing".to_owned(), number);
        let operand = if self.operand == number(self.expected) {
            self.operand.clone()
        } else {
            format!("{} = {}", self.operand, number(self.expected))
        };
        format!(
            "{} = {answer} {} {operand}: {}",
            self.pointer,
            self.relation,
            if self.held { "holds" } else { "does not hold" }
        )
    }
}

/// Every operation's tally summed over the run's phases, by operation name: what the audits'
/// counts read. Phases are added whole, warm-ups included: the service saw those requests too.
pub fn run_tallies(result: &RunResult) -> BTreeMap<String, OperationTally> {
    let mut out: BTreeMap<String, OperationTally> = BTreeMap::new();
    for phase in &result.phases {
        for op in &phase.measurement.operations {
            out.entry(op.name.clone()).or_default().merge(&op.tally);
        }
    }
    out
}

/// One sentence per operation that was retried in the run (attempts beyond its logical
/// operations, every phase whole): how many logical operations took how many attempts, and the
/// extra load that was. Empty without retries.
pub fn retry_statements(result: &RunResult) -> Vec<String> {
    let number = |x: u64| crate::config::format_number(x as f64);
    run_tallies(result)
        .into_iter()
        .filter(|(_, t)| t.attempts > t.logical)
        .map(|(name, t)| {
            format!(
                "`{name}`: {} logical operations took {} attempts ({} retries, {:.2} attempts per logical operation)",
                number(t.logical),
                number(t.attempts),
                number(t.attempts - t.logical),
                t.attempts as f64 / t.logical.max(1) as f64
            )
        })
        .collect()
}
