//! `[recovery]`: what "stable again" means after a declared event (a spike's end): the number of
//! consecutive 1 s windows in which every required indicator holds (docs/phases.md).

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::{Cx, integer_in};
use crate::config::types::RecoveryConfig;

/// `recovery.windows`.
pub(crate) const WINDOWS: Key<i64> = Key::new(
    "windows",
    "consecutive windows in which every indicator holds before the service counts as recovered",
    |cx, v, what| integer_in(cx, v, what, 1..=3600),
);

/// `[recovery]`.
pub(crate) const SECTION: Section = Section {
    name: "recovery",
    keys: &[&WINDOWS],
    check_table: None,
};

/// Pass 2: `[recovery]` of one profile.
pub(crate) fn build(cx: &Cx<'_>, look: &Look<'_>) -> Option<RecoveryConfig> {
    Some(RecoveryConfig {
        windows: look.need(cx, &SECTION, &WINDOWS)? as usize,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::validate::testing::one_problem;
    use test_case::test_case;

    #[test_case("[recovery]\nwindows = 0\n", 7, 11, "`windows` must be between 1 and 3600, found 0", None; "zero windows")]
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
