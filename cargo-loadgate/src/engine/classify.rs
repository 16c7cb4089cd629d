//! Classifying an answer for the engine: the workload's checks and captures, mapped onto the outcomes
//! the measurement counts.

use super::pool::Answer;
use crate::measure::Outcome;
use crate::workload::{CompiledWorkload, Response, SessionVars, WrongAnswerKind};

/// The outcome of one answer, and whether its session must end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AnswerClass {
    /// What the measurement counts.
    pub outcome: Outcome,
    /// The session cannot go on: a capture failed, or no answer came.
    pub abandon: bool,
}

/// Checks `answer` against operation `op`'s expectation and captures its variables into `vars`.
///
/// An unaccepted status of 400 or above is an HTTP error; any other failed expectation (a 2xx
/// where another status was expected, a missing text or JSON value) is a wrong answer. A failed
/// capture ends the session, and makes an otherwise correct answer a wrong one: the data the
/// next steps need is not there.
pub(crate) fn classify(
    workload: &CompiledWorkload,
    op: usize,
    answer: &Answer,
    vars: &mut SessionVars,
) -> AnswerClass {
    let Some(operation) = workload.operations().get(op) else {
        return AnswerClass {
            outcome: Outcome::WrongAnswer(format!("no operation number {op}")),
            abandon: true,
        };
    };
    let response = Response::with_pointers(answer.status, &answer.body, &operation.pointers);
    let mut outcome = match response.check(&operation.expect) {
        Ok(()) => Outcome::Ok,
        Err(wrong)
            if answer.status >= 400 && matches!(wrong.kind, WrongAnswerKind::Status { .. }) =>
        {
            Outcome::HttpError(answer.status)
        }
        Err(wrong) => Outcome::WrongAnswer(wrong.to_string()),
    };
    let abandon = match response.capture(&operation.captures, vars) {
        Ok(()) => false,
        Err(err) => {
            if outcome == Outcome::Ok {
                outcome = Outcome::WrongAnswer(err.to_string());
            }
            true
        }
    };
    AnswerClass { outcome, abandon }
}
