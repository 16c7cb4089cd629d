//! `[stress]`: the soak's load, an overload at a share of capacity above 100%, then the soak's
//! load again inside the same phase; the stretch before the overload is compared with the last
//! stretch after it on the same boot (docs/phases.md).

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::{Cx, duration, positive_duration, positive_share};
use crate::config::types::{SoakConfig, StressConfig};
use crate::config::units::format_percent;
use crate::plan::MIN_STRETCH_WINDOWS;
use std::time::Duration;

/// `stress.to`.
pub(crate) const TO: Key<f64> = Key::qualified(
    "to",
    "the load during the overload, as a share of capacity (the soak's); above 100%",
    |cx, v, what| positive_share(cx, v, what, None),
);
/// `stress.for`.
pub(crate) const FOR: Key<Duration> = Key::new(
    "for",
    "how long the overload lasts; `\"0s\"` disables the stress",
    |cx, v, _| duration(cx, v),
);
/// `stress.before`.
pub(crate) const BEFORE: Key<Duration> = Key::new(
    "before",
    "measured at the soak's load before the overload: the level the end of `after` is compared with",
    positive_duration,
);
/// `stress.after`.
pub(crate) const AFTER: Key<Duration> = Key::new(
    "after",
    "measured at the soak's load after the overload; its last `before` is compared, so longer than `before`",
    positive_duration,
);

/// `[stress]`.
pub(crate) const SECTION: Section = Section {
    name: "stress",
    keys: &[&TO, &FOR, &BEFORE, &AFTER],
    check_table: None,
};

/// Pass 2: `[stress]` of one profile. A stress whose load is not above capacity does not
/// overload, reported at `to`; a `before` under the windows a comparison needs, at `before`; an
/// `after` not longer than `before` leaves the service no time to recover before the compared
/// stretch, at `after`; a soak that never runs, at `for` (each at the user's own key, else at
/// their `[stress]`).
pub(crate) fn build(
    cx: &Cx<'_>,
    look: &Look<'_>,
    profile: &str,
    soak: Option<&SoakConfig>,
) -> Option<StressConfig> {
    let s = &SECTION;
    let to = look.need(cx, s, &TO);
    let duration = look.need(cx, s, &FOR);
    let before = look.need(cx, s, &BEFORE);
    let after = look.need(cx, s, &AFTER);
    let stress = StressConfig {
        to: to?,
        duration: duration?,
        before: before?,
        after: after?,
    };
    if stress.is_disabled() {
        return Some(stress);
    }
    let mut ok = true;
    // Where a problem is shown: the user's own key when they wrote it, else their `[stress]`.
    let at = |key: &str| {
        look.get_where(&[s.name, key], |l| !l.defaults)
            .map(|v| (v.file, v.span()))
            .unwrap_or_else(|| look.section_anchor(s.name))
    };
    let mut error = |(file, span): (usize, std::ops::Range<usize>), message: String, help: &str| {
        cx.error(file, span, message, Some(help.to_owned()));
        ok = false;
    };
    if stress.to <= 1.0 {
        error(
            at(TO.name),
            format!(
                "in profile `{profile}`, {} ({}) does not overload: a stress runs above capacity",
                TO.what(s.name),
                format_percent(stress.to)
            ),
            "write a `to` above 100% of capacity, e.g. \"200%\"",
        );
    }
    let window = Duration::from_secs(MIN_STRETCH_WINDOWS as u64);
    if stress.before < window {
        error(
            at(BEFORE.name),
            format!(
                "in profile `{profile}`, `stress.before` ({}) holds fewer than \
                 {MIN_STRETCH_WINDOWS} one-second windows: nothing could be compared",
                crate::config::format_duration(stress.before)
            ),
            "write a `before` of several seconds, e.g. \"10s\"",
        );
    } else if stress.after <= stress.before {
        error(
            at(AFTER.name),
            format!(
                "in profile `{profile}`, `stress.after` ({}) is not longer than `stress.before` \
                 ({}): its last `before` is what is compared, and the service needs time to \
                 recover first",
                crate::config::format_duration(stress.after),
                crate::config::format_duration(stress.before)
            ),
            "make `after` longer than `before` by the time the service may take to recover, \
             e.g. before = \"10s\", after = \"30s\"",
        );
    }
    if soak.is_some_and(|soak| soak.duration.is_zero()) {
        error(
            at(FOR.name),
            format!(
                "in profile `{profile}`, the stress overloads from the soak's load, and \
                 `soak.duration` is 0s: it would never run"
            ),
            "give the soak a duration, or set `stress.for = \"0s\"` in this profile",
        );
    }
    ok.then_some(stress)
}

#[cfg(test)]
mod tests {
    use crate::config::validate::testing::{one_problem, parse, with_workload};
    use std::time::Duration;
    use test_case::test_case;

    // Each case is one mistake in `[stress]`; exactly one problem must be reported, at the given place.
    #[test_case("[stress]\nto = \"0%\"\n", 7, 6, "`stress.to` must be more than 0%", None; "stress to zero")]
    #[test_case("[stress]\nfor = \"ten\"\n", 7, 7, "`ten` is not a duration", Some("write e.g. \"30s\", \"250ms\" or \"2m\""); "stress for garbage")]
    #[test_case("[stress]\nafter = \"0s\"\n", 7, 9, "`after` must be longer than zero", None; "stress after zero")]
    fn one_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem(text, line, col, message, help);
    }

    /// A stress that does not overload, and one whose `after` is shorter than its `before`, are
    /// reported at their keys, together.
    #[test]
    fn a_stress_below_capacity_and_a_short_after_are_reported_at_their_keys() {
        let err = parse(
            &with_workload(
                "[stress]\nfor = \"5s\"\nto = \"90%\"\nbefore = \"10s\"\nafter = \"5s\"\n",
            ),
            "default",
        )
        .expect_err("invalid");
        let diags = err.diagnostics();
        let messages: Vec<&str> = diags.iter().map(|d| d.message.as_str()).collect();
        assert!(
            messages.contains(
                &"in profile `default`, `stress.to` (90%) does not overload: a stress runs above capacity"
            ),
            "{messages:?}"
        );
        assert!(
            messages.iter().any(|m| m.starts_with(
                "in profile `default`, `stress.after` (5s) is not longer than `stress.before` (10s)"
            )),
            "{messages:?}"
        );
        let to = diags
            .iter()
            .find(|d| d.message.contains("does not overload"))
            .expect("reported");
        assert_eq!((to.line, to.col), (8, 6));
        let after = diags
            .iter()
            .find(|d| d.message.contains("is not longer than"))
            .expect("reported");
        assert_eq!((after.line, after.col), (10, 9));
    }

    /// A `before` too short to compare, an `after` no longer than `before` (no time to recover),
    /// and a soak that never runs; an `after` the user did not write is reported at their
    /// `[stress]`, not in the built-in defaults.
    #[test]
    fn stretches_too_short_to_compare_and_a_stress_without_a_soak_are_reported() {
        let problems = |text: &str| {
            let err = parse(&with_workload(text), "default").expect_err("invalid");
            err.diagnostics()
                .iter()
                .filter(|d| d.message.starts_with("in profile `default`"))
                .map(|d| (d.message.clone(), d.line, d.col))
                .collect::<Vec<_>>()
        };
        let short = problems("[stress]\nfor = \"5s\"\nbefore = \"2s\"\n");
        assert_eq!(short.len(), 1, "{short:?}");
        assert!(
            short[0]
                .0
                .contains("`stress.before` (2s) holds fewer than 3"),
            "{short:?}"
        );
        assert_eq!((short[0].1, short[0].2), (8, 10));
        let equal = problems("[stress]\nfor = \"5s\"\nbefore = \"10s\"\nafter = \"10s\"\n");
        assert_eq!(equal.len(), 1, "{equal:?}");
        assert!(equal[0].0.contains("is not longer than"), "{equal:?}");
        // The built-in `after` (30s) under a user's `before` of 40s: shown at their `[stress]`.
        let unwritten = problems("[stress]\nfor = \"5s\"\nbefore = \"40s\"\n");
        assert_eq!(unwritten.len(), 1, "{unwritten:?}");
        assert_eq!(unwritten[0].1, 6, "{unwritten:?}");
        let no_soak = problems("[soak]\nduration = \"0s\"\n[stress]\nfor = \"5s\"\n");
        assert_eq!(no_soak.len(), 1, "{no_soak:?}");
        assert!(
            no_soak[0].0.contains("`soak.duration` is 0s"),
            "{no_soak:?}"
        );
        assert_eq!((no_soak[0].1, no_soak[0].2), (9, 7));
    }

    #[test]
    fn a_stress_is_off_by_default_and_read_when_declared() {
        let cfg = parse(&with_workload(""), "default").expect("valid");
        assert!(cfg.stress.is_disabled());
        let cfg = parse(
            &with_workload(
                "[stress]\nto = \"250%\"\nfor = \"10s\"\nbefore = \"8s\"\nafter = \"30s\"\n",
            ),
            "default",
        )
        .expect("valid");
        assert_eq!(cfg.stress.to, 2.5);
        assert_eq!(cfg.stress.duration, Duration::from_secs(10));
        assert_eq!(cfg.stress.before, Duration::from_secs(8));
        assert_eq!(cfg.stress.after, Duration::from_secs(30));
    }
}
