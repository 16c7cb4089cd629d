//! The ramp's step table for the terminal, printed at the end of `cargo loadgate run`: what each
//! step and bisection point of the plan's [`RampOutcome`] measured, and how it ended. Formatting
//! only: the status of a step is [`StepRecord::status`](crate::plan::StepRecord::status).

use super::table::Table;
use crate::plan::{RampOutcome, StepStatus, format_latency, format_rate};

/// The ramp as a table for the terminal: per step and operation, the offered and achieved
/// rates, latency percentiles from the intended send time, errors, pacing lag, drops and the
/// result.
pub fn render_step_table(outcome: &RampOutcome) -> String {
    let headers = [
        "phase",
        "offered",
        "achieved",
        "operation",
        "requests",
        "p50",
        "p95",
        "p99",
        "max",
        "errors",
        "lag p99",
        "dropped",
        "result",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for step in &outcome.steps {
        let result = match step.status() {
            StepStatus::Invalid => "invalid",
            StepStatus::GeneratorLimit => "generator limit",
            StepStatus::Transient => "transient",
            StepStatus::Aborted => "aborted",
            StepStatus::Held => "held",
            StepStatus::TooFewRequests => "too few",
            StepStatus::Broke => "broke",
        };
        for (i, op) in step.operations.iter().enumerate() {
            let first = i == 0;
            let step_cell = |text: String| if first { text } else { String::new() };
            rows.push(vec![
                step_cell(step.phase.clone()),
                step_cell(format_rate(step.offered_rate_per_sec)),
                step_cell(format_rate(step.achieved_rate_per_sec)),
                op.name.clone(),
                op.requests.to_string(),
                format_latency(op.p50),
                format_latency(op.p95),
                format_latency(op.p99),
                format_latency(op.max),
                op.errors.to_string(),
                step_cell(format_latency(step.lag_p99)),
                step_cell(step.dropped.to_string()),
                step_cell(result.to_owned()),
            ]);
        }
    }
    let mut out = String::from(
        "rates in req/s (achieved: answers received); latency from the intended send time\n",
    );
    // Text columns align left, figures right.
    out.push_str(&Table::new(&headers).left(&[3, 12]).rows(rows).terminal());
    for step in &outcome.steps {
        if let Some(note) = &step.held.note {
            out.push_str(&format!("{}: {note}\n", step.phase));
        }
    }
    out
}
