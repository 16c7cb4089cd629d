//! `[generator]`: the open-loop generator's limits.

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::{Cx, duration, integer_in, positive_duration, share};
use crate::config::types::{GeneratorConfig, MAX_CONNECTIONS};
use std::time::Duration;

/// `generator.timeout`.
pub(crate) const TIMEOUT: Key<Duration> = Key::new(
    "timeout",
    "per request; later is a transport error",
    positive_duration,
);
/// `generator.max-in-flight`.
pub(crate) const MAX_IN_FLIGHT: Key<i64> = Key::new(
    "max-in-flight",
    "arrivals beyond it are dropped and count as failed requests",
    |cx, v, what| integer_in(cx, v, what, 1..=i64::MAX),
);
/// `generator.max-lag`.
pub(crate) const MAX_LAG: Key<Duration> = Key::new(
    "max-lag",
    "a phase whose pacing lag p99 exceeds this is invalid",
    |cx, v, _| duration(cx, v),
);
/// `generator.max-drop-rate`.
pub(crate) const MAX_DROP_RATE: Key<f64> = Key::new(
    "max-drop-rate",
    "drops past this share make a phase invalid unless the service was the cause (answers past the SLO): then they are its failures",
    |cx, v, what| share(cx, v, what, Some(1.0)),
);
/// `generator.connections`: 0 (on demand) up to [`MAX_CONNECTIONS`].
pub(crate) const CONNECTIONS: Key<i64> = Key::new(
    "connections",
    "a fixed pool of at most this many keep-alive connections, opened before each phase starts",
    |cx, v, what| integer_in(cx, v, what, 0..=MAX_CONNECTIONS as i64),
);

/// `[generator]`.
pub(crate) const SECTION: Section = Section {
    name: "generator",
    keys: &[
        &TIMEOUT,
        &MAX_IN_FLIGHT,
        &MAX_LAG,
        &MAX_DROP_RATE,
        &CONNECTIONS,
    ],
    check_table: None,
};

/// Pass 2: `[generator]` of one profile.
pub(crate) fn build(cx: &Cx<'_>, look: &Look<'_>) -> Option<GeneratorConfig> {
    let s = &SECTION;
    Some(GeneratorConfig {
        timeout: look.need(cx, s, &TIMEOUT)?,
        max_in_flight: look.need(cx, s, &MAX_IN_FLIGHT)? as usize,
        max_lag: look.need(cx, s, &MAX_LAG)?,
        max_drop_rate: look.need(cx, s, &MAX_DROP_RATE)?,
        connections: look.need(cx, s, &CONNECTIONS)? as usize,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::validate::testing::one_problem;
    use test_case::test_case;

    // Each case is one mistake in `[generator]`; exactly one problem must be reported, at the given place.
    #[test_case("[generator]\nmax-in-flight = 0\n", 7, 17, "`max-in-flight` must be at least 1, found 0", None; "zero in flight")]
    #[test_case("[generator]\nconnections = 300\n", 7, 15, "`connections` must be between 0 and 256, found 300", None; "connections past the cap")]
    fn one_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem(text, line, col, message, help);
    }
}
