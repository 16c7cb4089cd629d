//! `[abort]`: the safety envelope, the limits past which a phase stops sending.

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::{Cx, positive_duration, positive_share};
use crate::config::types::AbortConfig;
use std::time::Duration;

/// `abort.error-rate`: a limit, not a change.
pub(crate) const ERROR_RATE: Key<f64> = Key::qualified(
    "error-rate",
    "stop when exceeded for two consecutive windows",
    |cx, v, what| positive_share(cx, v, what, Some(1.0)),
);
/// `abort.p99`: a duration, not a change.
pub(crate) const P99: Key<Duration> = Key::new(
    "p99",
    "stop when exceeded for two consecutive windows",
    positive_duration,
);
/// `abort.max-duration`.
pub(crate) const MAX_DURATION: Key<Duration> = Key::new(
    "max-duration",
    "stop a phase that runs longer",
    positive_duration,
);

/// `[abort]`.
pub(crate) const SECTION: Section = Section {
    name: "abort",
    keys: &[&ERROR_RATE, &P99, &MAX_DURATION],
    check_table: None,
};

/// Pass 2: `[abort]` of one profile.
pub(crate) fn build(cx: &Cx<'_>, look: &Look<'_>) -> Option<AbortConfig> {
    let s = &SECTION;
    Some(AbortConfig {
        error_rate_limit: look.need(cx, s, &ERROR_RATE)?,
        p99_limit: look.need(cx, s, &P99)?,
        max_duration: look.need(cx, s, &MAX_DURATION)?,
    })
}
