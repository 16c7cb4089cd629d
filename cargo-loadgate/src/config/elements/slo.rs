//! `[slo]`: the failure condition; a ramp step holds while all of it holds.

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::{Cx, Val, integer_in, positive_duration, share, string};
use crate::config::types::{LatencyLimit, RampConfig, SloConfig};
use crate::config::units::{format_factor, format_percent, parse_factor};
use std::time::Duration;

const LATENCY_DOC: &str = "latency limits, measured from each request's intended send time";

/// `slo.p50`.
pub(crate) const P50: Key<Duration> = Key::new("p50", LATENCY_DOC, positive_duration);
/// `slo.p90`.
pub(crate) const P90: Key<Duration> = Key::new("p90", LATENCY_DOC, positive_duration);
/// `slo.p95`.
pub(crate) const P95: Key<Duration> = Key::new("p95", LATENCY_DOC, positive_duration);
/// `slo.p99`.
pub(crate) const P99: Key<Duration> = Key::new("p99", LATENCY_DOC, positive_duration);
/// `slo.p999`.
pub(crate) const P999: Key<Duration> = Key::new("p999", LATENCY_DOC, positive_duration);
/// The latency keys with their quantiles.
pub(crate) const LATENCY: [(&Key<Duration>, f64); 5] = [
    (&P50, 0.5),
    (&P90, 0.9),
    (&P95, 0.95),
    (&P99, 0.99),
    (&P999, 0.999),
];
/// `slo.error-rate`.
pub(crate) const ERROR_RATE: Key<f64> = Key::new(
    "error-rate",
    "the highest acceptable share of failed requests (wrong answers count)",
    |cx, v, what| share(cx, v, what, Some(1.0)),
);
/// `slo.min-requests`.
pub(crate) const MIN_REQUESTS: Key<i64> = Key::new(
    "min-requests",
    "a class needs this many requests in a step before its percentiles are judged",
    |cx, v, what| integer_in(cx, v, what, 0..=i64::MAX),
);

/// `slo.headroom`.
pub(crate) const HEADROOM: Key<f64> = Key::new(
    "headroom",
    "the least capacity / production load (the workload's rate at 100%) a run must show",
    |cx, v, _| factor(cx, v),
);

/// `slo.recovery`.
pub(crate) const RECOVERY: Key<Duration> = Key::new(
    "recovery",
    "the longest acceptable time to stable SLO after a spike, a stress or a fault (a gate check)",
    positive_duration,
);

/// `[slo]`.
pub(crate) const SECTION: Section = Section {
    name: "slo",
    keys: &[
        &P50,
        &P90,
        &P95,
        &P99,
        &P999,
        &ERROR_RATE,
        &MIN_REQUESTS,
        &HEADROOM,
        &RECOVERY,
    ],
    check_table: None,
};

/// A factor written `"1.5x"` or `"150%"` ([`parse_factor`]).
fn factor(cx: &Cx<'_>, v: Val<'_>) -> Option<f64> {
    let s = string(cx, v, "a factor like \"1.5x\" or \"150%\"")?;
    match parse_factor(s) {
        Ok(x) => Some(x),
        Err(e) => {
            let (message, help) = e.split_once("; ").unwrap_or((&e, ""));
            let help = (!help.is_empty()).then(|| help.to_owned());
            cx.error(v.file, v.span(), message, help);
            None
        }
    }
}

/// Pass 2, across sections: a headroom above the highest ramp step could never be shown (the
/// ramp cannot find a knee above its highest step, so the headroom's lower end is at most that
/// step), so the check could never pass. Reported at the `headroom` value, for `profile`.
pub(crate) fn check_headroom_reachable(
    cx: &Cx<'_>,
    look: &Look<'_>,
    profile: &str,
    slo: &SloConfig,
    ramp: &RampConfig,
) {
    let (Some(limit), Some(&top)) = (slo.headroom, ramp.steps.last()) else {
        return;
    };
    // A held top step shows a headroom of at least `top`: a limit equal to it can pass.
    if limit <= top * (1.0 + 1e-9) {
        return;
    }
    let Some(v) = look.get(&[SECTION.name, HEADROOM.name]) else {
        return;
    };
    cx.error(
        v.file,
        v.span(),
        format!(
            "in profile `{profile}`, {} ({}) is above the highest ramp step ({}): the check could never pass",
            HEADROOM.what(SECTION.name),
            format_factor(limit),
            format_percent(top)
        ),
        Some(format!(
            "the ramp finds no knee above its highest step; add a step of at least {} to this profile's `[ramp] steps`, or set a lower `headroom` in its `[slo]`",
            format_percent(limit)
        )),
    );
}

/// The key of a latency limit's quantile.
pub(crate) fn latency_key(quantile: f64) -> Option<&'static str> {
    LATENCY
        .iter()
        .find(|(_, q)| *q == quantile)
        .map(|(k, _)| k.name)
}

/// Pass 2: `[slo]` of one profile. The default p99 applies only when nothing above the defaults
/// names a latency limit.
pub(crate) fn build(cx: &Cx<'_>, look: &Look<'_>) -> Option<SloConfig> {
    let s = &SECTION;
    let user_given = LATENCY
        .iter()
        .any(|(k, _)| look.get_where(&[s.name, k.name], |l| !l.defaults).is_some());
    let mut latency = Vec::new();
    let mut ok = true;
    for (key, quantile) in LATENCY {
        let v = if user_given {
            look.get_where(&[s.name, key.name], |l| !l.defaults)
        } else {
            look.get(&[s.name, key.name])
        };
        if let Some(v) = v {
            match key.read(cx, v, s.name) {
                Some(limit) => latency.push(LatencyLimit { quantile, limit }),
                None => ok = false,
            }
        }
    }
    let error_rate = look.need(cx, s, &ERROR_RATE);
    let min_requests = look.need(cx, s, &MIN_REQUESTS);
    let headroom = look.read(cx, s, &HEADROOM);
    let recovery = look.read(cx, s, &RECOVERY);
    if !ok {
        return None;
    }
    Some(SloConfig {
        latency,
        error_rate: error_rate?,
        min_requests: min_requests? as u64,
        headroom: match headroom {
            Some(read) => Some(read?),
            None => None,
        },
        recovery: match recovery {
            Some(read) => Some(read?),
            None => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use crate::config::types::*;
    use crate::config::validate::testing::{WORKLOAD, one_problem, parse, with_workload};
    use std::time::Duration;
    use test_case::test_case;

    // Each case is one mistake in `[slo]`; exactly one problem must be reported, at the given place.
    #[test_case("[slo]\nerror-rate = 2.0\n", 7, 14, "`error-rate` must be at most 100%, found 200%", Some("a bare number is a fraction: 0.01 means 1%"); "error rate above one")]
    #[test_case("[slo]\nerror-rate = true\n", 7, 14, "expected a percentage like \"1%\" or a fraction like 0.01, found boolean true", None; "error rate as boolean")]
    #[test_case("[slo]\nheadroom = \"0x\"\n", 7, 12, "factor `0x` must be greater than zero", Some("write e.g. \"1.5x\" or \"150%\""); "zero headroom")]
    #[test_case("[slo]\nheadroom = \"-2x\"\n", 7, 12, "factor `-2x` must be greater than zero", Some("write e.g. \"1.5x\" or \"150%\""); "negative headroom")]
    #[test_case("[slo]\nheadroom = \"plenty\"\n", 7, 12, "`plenty` is not a factor", Some("write e.g. \"1.5x\" or \"150%\""); "garbage headroom")]
    #[test_case("[slo]\nheadroom = \"1.5\"\n", 7, 12, "`1.5` has no unit", Some("write e.g. \"1.5x\" or \"150%\""); "headroom without a unit")]
    #[test_case("[slo]\nheadroom = 1.5\n", 7, 12, "expected a factor like \"1.5x\" or \"150%\", found float 1.5", None; "headroom as a number")]
    fn one_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem(text, line, col, message, help);
    }

    #[test]
    fn the_headroom_is_read_as_a_factor_or_a_percentage_and_is_optional() {
        let cfg = parse(WORKLOAD, "default").unwrap();
        assert_eq!(cfg.slo.headroom, None);
        for (written, limit) in [("1.5x", 1.5), ("150%", 1.5), ("1x", 1.0)] {
            // The built-in `quick` profile's ramp stops at 100%: it needs a higher step.
            let text = with_workload(&format!(
                "[slo]\nheadroom = \"{written}\"\n[profile.quick.ramp]\nsteps = [\"50%\", \"150%\"]\n"
            ));
            let cfg = parse(&text, "default").unwrap();
            assert_eq!(cfg.slo.headroom, Some(limit), "{written}");
        }
    }

    /// The resolved listing writes the headroom back as a factor, and reads back as the same
    /// config; the config hash does not see it (it judges the knee without moving it).
    #[test]
    fn the_headroom_goes_round_the_listing_and_stays_out_of_the_config_hash() {
        let quick = "[profile.quick.ramp]\nsteps = [\"50%\", \"150%\"]\n";
        let text = with_workload(&format!("[slo]\nheadroom = \"125%\"\n{quick}"));
        let cfg = parse(&text, "default").unwrap();
        let listing = crate::config::render_resolved(&cfg);
        assert!(listing.contains("headroom = \"1.25x\"\n"), "{listing}");
        // The listing is one profile's; read back, every profile is resolved again, so the
        // built-in `quick` needs the same mending as the source had.
        assert_eq!(parse(&format!("{listing}{quick}"), "default").unwrap(), cfg);
        let without = parse(&with_workload(""), "default").unwrap();
        let mode = crate::result::MeasurementMode::Stored;
        assert_eq!(
            crate::result::config_hash(&cfg, mode),
            crate::result::config_hash(&without, mode)
        );
    }

    /// The built-in `quick` profile's ramp stops at 100%: a top-level headroom of 1.2x is a
    /// problem of that profile (and only of it), reported at the value with what to change.
    #[test]
    fn a_headroom_above_the_highest_ramp_step_is_a_config_error() {
        let text = with_workload("[slo]\nheadroom = \"1.2x\"\n");
        let err = parse(&text, "default").expect_err("quick's ramp stops at 100%");
        let diags = err.diagnostics();
        assert_eq!(diags.len(), 1, "{err}");
        let d = &diags[0];
        assert_eq!((d.line, d.col), (7, 12), "{err}");
        assert_eq!(
            d.message,
            "in profile `quick`, `headroom` (1.2x) is above the highest ramp step (100%): the check could never pass"
        );
        assert_eq!(
            d.help.as_deref(),
            Some(
                "the ramp finds no knee above its highest step; add a step of at least 120% to this profile's `[ramp] steps`, or set a lower `headroom` in its `[slo]`"
            )
        );
        // Mended either way, and a limit equal to the highest step can pass.
        for mend in [
            "[profile.quick.ramp]\nsteps = [\"50%\", \"100%\", \"150%\"]\n",
            "[profile.quick.slo]\nheadroom = \"100%\"\n",
        ] {
            let cfg = parse(&format!("{text}{mend}"), "default").unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(cfg.slo.headroom, Some(1.2));
        }
        // Every problem at once: the headroom's with the others.
        let text = with_workload("[slo]\nheadroom = \"2x\"\n[gate]\nrss-slope = \"2MiB\"\n");
        let err = parse(&text, "default").expect_err("invalid");
        let messages: Vec<&str> = err
            .diagnostics()
            .iter()
            .map(|d| d.message.as_str())
            .collect();
        assert!(messages.contains(&"`2MiB` is not a rate"), "{err}");
        assert!(
            messages
                .iter()
                .any(|m| m.starts_with("in profile `default`, `headroom` (2x)")),
            "{err}"
        );
    }

    #[test]
    fn the_default_p99_applies_only_when_no_latency_limit_is_given() {
        let cfg = parse(WORKLOAD, "default").unwrap();
        assert_eq!(
            cfg.slo.latency,
            vec![LatencyLimit {
                quantile: 0.99,
                limit: Duration::from_millis(200)
            }]
        );
        let cfg = parse(
            &with_workload("[slo]\np50 = \"20ms\"\np999 = \"1s\"\n"),
            "default",
        )
        .unwrap();
        assert_eq!(
            cfg.slo.latency,
            vec![
                LatencyLimit {
                    quantile: 0.5,
                    limit: Duration::from_millis(20)
                },
                LatencyLimit {
                    quantile: 0.999,
                    limit: Duration::from_secs(1)
                },
            ]
        );
    }
}
