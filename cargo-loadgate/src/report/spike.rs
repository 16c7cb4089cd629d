//! The spike's sentences for the terminal and the Markdown summary, and the per-second burst
//! table: formatting only, from the recorded [`SpikeOutcome`] and the phase's windows.

use crate::measure::Window;
use crate::plan::{Recovery, RecoveryCheck, RecoveryCheckOutcome, SpikeOutcome, format_rate};

/// "spike to 300% of this run's capacity (60.0 → 300.0 sessions/s) for 10.0 s: rejected cheaply
/// (67% failed answers, 0% transport failures, goodput 60.0 → 100.0/s, p50 3 ms, p99 30 ms);
/// stable after 2.0 s (5 good windows confirmed at 7.0 s)".
pub fn spike_sentence(s: &SpikeOutcome) -> String {
    let a = &s.admission;
    let mut out = format!(
        "to {:.0}% of {} capacity ({} → {} sessions/s) for {:.1} s: {} ({:.0}% failed answers, {:.0}% transport failures, goodput {}/s before → {}/s during, p50 {} ms, p99 {} ms); {}",
        if s.capacity_sessions_per_sec > 0.0 {
            s.to_sessions_per_sec / s.capacity_sessions_per_sec * 100.0
        } else {
            0.0
        },
        match s.capacity_from {
            crate::plan::CapacitySource::Baseline => "the baseline's",
            crate::plan::CapacitySource::ThisRun => "this run's",
        },
        format_rate(s.from_sessions_per_sec),
        format_rate(s.to_sessions_per_sec),
        (s.ends - s.starts).as_secs_f64(),
        a.admission.label(),
        a.rejected_share * 100.0,
        a.transport_failure_share * 100.0,
        format_rate(a.goodput_before_per_sec),
        format_rate(a.goodput_during_per_sec),
        a.p50.as_millis(),
        a.p99.as_millis(),
        s.recovery.describe(s.recovery_windows),
    );
    if let Some(reason) = &s.aborted {
        out.push_str(&format!("; stopped: {reason}"));
    }
    if !s.valid {
        out.push_str(&format!("; INVALID: {}", s.invalid_reasons.join("; ")));
    }
    out
}

/// The `[slo] recovery` check's line, when there is one: "recovery check: FAIL: …".
pub fn recovery_check_line(s: &SpikeOutcome) -> Option<String> {
    s.check.as_ref().map(check_line)
}

/// "recovery check: PASS: …" for any event's `[slo] recovery` check (a spike's, a stress's).
pub fn check_line(check: &RecoveryCheck) -> String {
    let word = match check.outcome {
        RecoveryCheckOutcome::Pass => "PASS",
        RecoveryCheckOutcome::Fail => "FAIL",
        RecoveryCheckOutcome::Inconclusive => "INCONCLUSIVE",
    };
    format!("recovery check: {word}: {}", check.reason)
}

/// The burst second by second: each window's start relative to the spike's start, requests
/// sent, errors and p99, with the spike's and the recovery's windows marked.
pub fn burst_rows(s: &SpikeOutcome, windows: &[Window]) -> Vec<[String; 5]> {
    let stable_from = match &s.recovery {
        Recovery::Recovered { after, .. } => Some(s.ends + *after),
        Recovery::NotRecovered { .. } => None,
    };
    windows
        .iter()
        .map(|w| {
            let t = w.start.as_secs_f64() - s.starts.as_secs_f64();
            let mark = if w.start >= s.starts && w.start < s.ends {
                "spike"
            } else if stable_from.is_some_and(|from| w.start >= from) {
                "stable"
            } else if w.start >= s.ends {
                "recovering"
            } else {
                "before"
            };
            [
                format!("{t:+.0} s"),
                w.sent.to_string(),
                w.errors.to_string(),
                format!("{} ms", w.p99.as_millis()),
                mark.to_owned(),
            ]
        })
        .collect()
}
