//! The headroom for people: the terminal's lines (the Markdown's are in `markdown.rs`, the
//! JUnit case in `junit.rs`). Formatting only: the statement, the check's outcome and its reason
//! come from the result (`compare::headroom` decided them).

use crate::result::{HeadroomComparison, HeadroomSummary};

/// The terminal's headroom lines: the statement, then the `[slo] headroom` check's outcome and
/// reason when one is configured.
pub fn headroom_lines(h: &HeadroomSummary) -> String {
    let mut out = format!("{}\n", h.statement);
    if let (Some(outcome), Some(reason)) = (h.outcome, &h.reason) {
        out.push_str(&format!(
            "headroom check: {}: {reason}\n",
            outcome.word().to_uppercase()
        ));
    }
    out
}

/// The line about this run's headroom against the baseline's, for the terminal and the
/// Markdown: the outcome, then what it rests on.
pub fn headroom_comparison_line(c: &HeadroomComparison) -> String {
    format!(
        "headroom against the baseline: {}: {}",
        c.outcome.word(),
        c.note
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{ProductionLoad, headroom};
    use crate::plan::{BreakPoint, RampOutcome};

    fn ramp(held: Option<f64>, broke: Option<f64>) -> RampOutcome {
        let mut r = RampOutcome::conclude(Vec::new(), Vec::new());
        r.knee_sessions_per_sec = held;
        r.lowest_break = broke.map(|b| BreakPoint {
            phase: "refine-1".to_owned(),
            sessions_per_sec: b,
            offered_rate_per_sec: b * 3.0,
            reasons: vec!["p99 340 ms > 200 ms".to_owned()],
        });
        r
    }

    #[test]
    fn the_terminal_states_the_headroom_then_the_check() {
        let production = ProductionLoad {
            sessions_per_sec: 20.0,
            requests_per_session: Some(3.0),
        };
        let failed = headroom(&ramp(Some(15.0), Some(17.5)), &production, Some(1.2));
        insta::assert_snapshot!(headroom_lines(&failed), @r"
        headroom 0.75x to 0.88x: capacity 15.0 to 17.5 sessions/s over a production load of 20.0 sessions/s (the workload's rate at 100%); capacity − production load -15.0 to -7.5 req/s, at the model's 3.00 requests per session (60.0 req/s of production load)
        headroom check: FAIL: headroom 0.75x to 0.88x is below slo.headroom 1.2x: the capacity broke below the limit
        ");
        let bound = headroom(&ramp(Some(30.0), None), &production, None);
        insta::assert_snapshot!(headroom_lines(&bound), @"headroom ≥ 1.50x: capacity ≥ 30.0 sessions/s over a production load of 20.0 sessions/s (the workload's rate at 100%), a lower bound: the ramp held its highest step; capacity − production load ≥ +30.0 req/s, at the model's 3.00 requests per session (60.0 req/s of production load)");
    }
}
