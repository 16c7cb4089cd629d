//! `[stress]`: the soak's load, an overload at a share of capacity above 100%, then the soak's
//! load again inside the same phase; the stretch before the overload is compared with the last
//! stretch after it on the same boot (docs/phases.md).

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::{Cx, duration, positive_duration, positive_share};
use crate::config::types::StressConfig;
use crate::config::units::format_percent;
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
    "measured at the soak's load after the overload; its last `before` is compared, so at least `before`",
    positive_duration,
);

/// `[stress]`.
pub(crate) const SECTION: Section = Section {
    name: "stress",
    keys: &[&TO, &FOR, &BEFORE, &AFTER],
    check_table: None,
};

/// Pass 2: `[stress]` of one profile. A stress whose load is not above capacity does not
/// overload, reported at `to`; an `after` shorter than `before` leaves no stretch as long as
/// `before` to compare, reported at `after`.
pub(crate) fn build(cx: &Cx<'_>, look: &Look<'_>, profile: &str) -> Option<StressConfig> {
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
    if stress.to <= 1.0
        && let Some(v) = look.get(&[s.name, TO.name])
    {
        cx.error(
            v.file,
            v.span(),
            format!(
                "in profile `{profile}`, {} ({}) does not overload: a stress runs above capacity",
                TO.what(s.name),
                format_percent(stress.to)
            ),
            Some("write a `to` above 100% of capacity, e.g. \"200%\"".to_owned()),
        );
        ok = false;
    }
    if stress.after < stress.before
        && let Some(v) = look.get(&[s.name, AFTER.name])
    {
        cx.error(
            v.file,
            v.span(),
            format!(
                "in profile `{profile}`, `stress.after` ({}) is shorter than `stress.before` ({}): \
                 its last `before` is what is compared",
                crate::config::format_duration(stress.after),
                crate::config::format_duration(stress.before)
            ),
            Some(
                "make `after` longer than `before` by the time the service may take to recover, \
                 e.g. before = \"10s\", after = \"30s\""
                    .to_owned(),
            ),
        );
        ok = false;
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
                "in profile `default`, `stress.after` (5s) is shorter than `stress.before` (10s)"
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
            .find(|d| d.message.contains("is shorter than"))
            .expect("reported");
        assert_eq!((after.line, after.col), (10, 9));
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
