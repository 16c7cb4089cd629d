//! The stress's sentences for the terminal and the Markdown summary, and its table of the
//! stretches before and after the overload: formatting only, from the recorded [`StressOutcome`].

use crate::plan::{ChangeOutcome, Harm, StressMetric, StressOutcome, format_rate};

/// "stress to 200% of this run's capacity (108 → 360 sessions/s) for 5.0 s, the last 10.0 s of
/// the 30.0 s after it against the 10.0 s before: recovered: p50 +1.2% (…); stable after 4.0 s
/// (5 good windows confirmed at 9.0 s)".
pub fn stress_sentence(s: &StressOutcome) -> String {
    let secs = |d: std::time::Duration| format!("{:.1} s", d.as_secs_f64());
    let end = s.compared_from + s.starts;
    let mut out = format!(
        "to {:.0}% of {} capacity ({} → {} sessions/s) for {}, the last {} of the {} after it \
         against the {} before: {}; {}",
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
        secs(s.ends - s.starts),
        secs(end - s.compared_from),
        secs(end - s.ends),
        secs(s.starts),
        s.reason,
        s.recovery.describe(s.recovery_windows),
    );
    if let Some(reason) = &s.aborted {
        out.push_str(&format!("; stopped: {reason}"));
    }
    if !s.valid && s.harm != Harm::Inconclusive {
        out.push_str(&format!("; INVALID: {}", s.invalid_reasons.join("; ")));
    }
    out
}

/// "stress: RECOVERED" / "LASTING HARM" / "INCONCLUSIVE", the word a verdict line leads with.
pub fn stress_word(s: &StressOutcome) -> &'static str {
    match s.harm {
        Harm::Recovered => "RECOVERED",
        Harm::LastingHarm => "LASTING HARM",
        Harm::Inconclusive => "INCONCLUSIVE",
    }
}

/// The stretches side by side: metric, before, after, change, interval, threshold, outcome; RSS
/// last, reported and not judged.
pub fn stress_rows(s: &StressOutcome) -> Vec<[String; 7]> {
    let ms = |x: Option<f64>| x.map_or("–".to_owned(), |v| format!("{v:.2} ms"));
    let pct = |x: Option<f64>| x.map_or("–".to_owned(), |v| format!("{:.2}%", v * 100.0));
    let mut rows: Vec<[String; 7]> = s
        .changes
        .iter()
        .map(|c| {
            let ratio = c.metric != StressMetric::ErrorRate;
            let show = |x: f64| {
                if ratio {
                    format!("{:+.1}%", (x - 1.0) * 100.0)
                } else {
                    format!("{:+.2} pp", x * 100.0)
                }
            };
            let (before, after) = match c.metric {
                StressMetric::P50 => (ms(s.before.p50_ms), ms(s.after.p50_ms)),
                StressMetric::P99 => (ms(s.before.p99_ms), ms(s.after.p99_ms)),
                StressMetric::ErrorRate => (pct(s.before.error_rate), pct(s.after.error_rate)),
            };
            [
                c.metric.label().to_owned(),
                before,
                after,
                c.estimate.map_or("–".to_owned(), show),
                match (c.low, c.high) {
                    (Some(l), Some(h)) => format!("{} … {}", show(l), show(h)),
                    _ => "–".to_owned(),
                },
                show(c.threshold),
                match c.outcome {
                    ChangeOutcome::Within => "within",
                    ChangeOutcome::Harm => "harm",
                    ChangeOutcome::Inconclusive => "inconclusive",
                }
                .to_owned(),
            ]
        })
        .collect();
    if let (Some(b), Some(a)) = (s.before.rss_bytes, s.after.rss_bytes) {
        let mib = |x: f64| format!("{:.1} MiB", x / f64::from(1u32 << 20));
        rows.push([
            "RSS".to_owned(),
            mib(b as f64),
            mib(a as f64),
            format!("{:+.1} MiB", (a as f64 - b as f64) / f64::from(1u32 << 20)),
            "–".to_owned(),
            "–".to_owned(),
            "reported".to_owned(),
        ]);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(harm: Harm) -> StressOutcome {
        let mut s = crate::plan::stress_testing::outcome();
        s.harm = harm;
        s
    }

    #[test]
    fn the_sentence_states_the_overload_the_stretches_and_the_conclusion() {
        let s = stress_sentence(&outcome(Harm::LastingHarm));
        assert_eq!(
            s,
            "to 200% of this run's capacity (60.0 → 200 sessions/s) for 5.0 s, the last 10.0 s of \
             the 30.0 s after it against the 10.0 s before: lasting harm: p99 +40.0% (interval \
             +25.0% … +58.0%, threshold +10.0%) after the stress; stable after 4.0 s (5 good \
             windows confirmed at 9.0 s)"
        );
    }

    #[test]
    fn the_rows_show_each_metric_and_the_rss_reported() {
        let rows = stress_rows(&outcome(Harm::LastingHarm));
        assert_eq!(
            rows[0],
            [
                "p99",
                "40.00 ms",
                "56.00 ms",
                "+40.0%",
                "+25.0% … +58.0%",
                "+10.0%",
                "harm"
            ]
            .map(str::to_owned)
        );
        assert_eq!(rows[1][0], "RSS");
        assert_eq!(rows[1][3], "+2.0 MiB");
        assert_eq!(rows[1][6], "reported");
    }
}
