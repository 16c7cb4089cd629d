//! `[soak]`: the long sample at a share of capacity whose slopes find leaks.

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::{Cx, duration, positive_duration, positive_share};
use crate::config::types::SoakConfig;
use std::time::Duration;

/// `soak.duration`.
pub(crate) const DURATION: Key<Duration> = Key::new(
    "duration",
    "how long the soak runs; `\"0s\"` disables it",
    |cx, v, _| duration(cx, v),
);
/// `soak.at`.
pub(crate) const AT: Key<f64> = Key::qualified(
    "at",
    "offered load, as a share of capacity (the baseline's when there is one)",
    |cx, v, what| positive_share(cx, v, what, None),
);
/// `soak.window`.
pub(crate) const WINDOW: Key<Duration> = Key::new(
    "window",
    "the window of the series slopes are fitted to",
    positive_duration,
);

/// `[soak]`.
pub(crate) const SECTION: Section = Section {
    name: "soak",
    keys: &[&DURATION, &AT, &WINDOW],
    check_table: None,
};

/// Pass 2: `[soak]` of one profile.
pub(crate) fn build(cx: &Cx<'_>, look: &Look<'_>) -> Option<SoakConfig> {
    let s = &SECTION;
    Some(SoakConfig {
        duration: look.need(cx, s, &DURATION)?,
        at: look.need(cx, s, &AT)?,
        window: look.need(cx, s, &WINDOW)?,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::validate::testing::one_problem;
    use test_case::test_case;

    // Each case is one mistake in `[soak]`; exactly one problem must be reported, at the given place.
    #[test_case("[soak]\nat = \"0%\"\n", 7, 6, "`soak.at` must be more than 0%", None; "soak at zero")]
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
