//! `[workload]`: the user model's section keys; its operations are read in `operation.rs`.

use super::key::{Key, Section};
use super::operation::{self, RawEntry, RawOp};
use super::profile::Look;
use crate::config::source::{Cx, integer_in, positive_number};
use crate::config::types::WorkloadConfig;

/// `workload.seed`.
pub(crate) const SEED: Key<i64> = Key::new(
    "seed",
    "the seed of every random draw (arrivals, paths, think times)",
    |cx, v, what| integer_in(cx, v, what, 0..=i64::MAX),
);
/// `workload.sessions-per-sec`.
pub(crate) const SESSIONS_PER_SEC: Key<f64> = Key::new(
    "sessions-per-sec",
    "session arrivals per second (Poisson); the request rate follows from the model",
    positive_number,
);
/// `workload.entry`.
pub(crate) const ENTRY: Key<Vec<RawEntry>> = Key::new(
    "entry",
    "where sessions start; weights (> 0, default 1) are normalized",
    |cx, v, _| operation::entries(cx, v),
);
/// `workload.operation`: operations with a name are kept even when other parts are wrong.
pub(crate) const OPERATION: Key<Vec<RawOp>> = Key::new(
    "operation",
    "the operations, written `[[workload.operation]]`",
    |cx, v, _| Some(operation::operations(cx, v, SECTION.name)),
);

/// `[workload]`.
pub(crate) const SECTION: Section = Section {
    name: "workload",
    keys: &[&SEED, &SESSIONS_PER_SEC, &ENTRY, &OPERATION],
    check_table: None,
};

/// Pass 2: `[workload]` of one profile, its graph resolved and checked.
pub(crate) fn build(cx: &Cx<'_>, look: &Look<'_>) -> Option<WorkloadConfig> {
    let s = &SECTION;
    let seed = look.need(cx, s, &SEED);
    let rate = look.need(cx, s, &SESSIONS_PER_SEC);
    let ops: Vec<RawOp> = look.read(cx, s, &OPERATION).flatten().unwrap_or_default();
    let entry: Option<Option<Vec<RawEntry>>> = look.read(cx, s, &ENTRY);
    let at = look.section_anchor(s.name);
    let resolved = match entry {
        Some(None) => None,
        Some(Some(entry)) => operation::resolve(cx, &ops, Some(entry), at),
        None => operation::resolve(cx, &ops, None, at),
    };
    let (entry, operations) = resolved?;
    Some(WorkloadConfig {
        seed: seed? as u64,
        sessions_per_sec: rate?,
        entry,
        operations,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::validate::testing::{one_problem, one_problem_in};
    use indoc::indoc;
    use test_case::test_case;

    // Each case is one mistake in `[workload]`; exactly one problem must be reported, at the given place.
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-secs = 10
    "#}, 2, 1, "unknown key `sessions-per-secs` in `[workload]`", Some("did you mean `sessions-per-sec`?"); "unknown key with suggestion")]
    fn one_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem(text, line, col, message, help);
    }

    // Mistakes in the workload: the file is written in full.
    #[test_case(indoc! {r#"
        [workload]
        seed = 1
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
    "#}, 1, 1, "`[workload]` has no `sessions-per-sec`", None; "missing rate")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
    "#}, 1, 1, "the workload has no operations", Some("add one, e.g.\n[[workload.operation]]\nname = \"home\"\nrequest = { path = \"/\" }"); "no operations")]
    fn one_problem_in_the_file_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem_in(text, line, col, message, help);
    }
}
