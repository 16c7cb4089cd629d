//! `[slo]`: the failure condition; a ramp step holds while all of it holds.

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::{Cx, integer_in, positive_duration, share};
use crate::config::types::{LatencyLimit, SloConfig};
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

/// `[slo]`.
pub(crate) const SECTION: Section = Section {
    name: "slo",
    keys: &[&P50, &P90, &P95, &P99, &P999, &ERROR_RATE, &MIN_REQUESTS],
    check_table: None,
};

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
    if !ok {
        return None;
    }
    Some(SloConfig {
        latency,
        error_rate: error_rate?,
        min_requests: min_requests? as u64,
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
